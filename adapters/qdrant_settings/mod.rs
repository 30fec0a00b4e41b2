//! The build and search parameters of Qdrant, parsed once for both Qdrant adapters: `qdrant`
//! (a server over gRPC, `qdrant-client`) and `qdrant-edge` (the engine in-process).
//!
//! Both adapters drive the same engine, so a parameter must mean the same thing in both and be
//! recorded the same way in the result. They used to carry a parser each, and the two drifted
//! (`pq_compression = 16` was accepted by one only; the thresholds derived from the dataset
//! size were 1/100 of the data in one and 1/10 and 1/20 in the other). This module owns the
//! parameter names, the validation and its error messages, the defaults, the quantization
//! choices, the threshold rule and the JSON description written to results. The adapters only
//! translate a parsed [`BuildSettings`] / [`SearchSettings`] into their own client types
//! (gRPC builders vs the edge crate's config structs).
//!
//! Only a few parameters belong to one target: the cluster settings `shard_number`,
//! `replication_factor` and `write_consistency_factor` (a Qdrant server; qdrant-edge is one
//! local shard) and `wal` (qdrant-edge; a server always keeps its write-ahead log). The other
//! target rejects them with an error that says so, the same from both adapters.
//!
//! Files: `build` (build settings), `search` (search settings); targets, names, thresholds and
//! errors are here.

use serde_json::{Map, Value, json};

use crate::engine::EngineError;
use crate::params::{ParamError, ParamMap, ParamMapExt, ParamValue};

mod build;
pub mod filter;
mod search;
#[cfg(test)]
mod tests;

pub use build::{BuildSettings, Origin, PqCompression, Quantization, Threshold, default_datatype};
pub use search::SearchSettings;

/// Which adapter the settings are parsed for. It only decides which of the target-only
/// parameters are allowed; everything else is parsed identically.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A Qdrant server over gRPC (the `qdrant` adapter).
    Server,
    /// Qdrant's engine in-process (the `qdrant-edge` adapter).
    Edge,
}

impl Target {
    /// Registry name of the adapter, for error messages.
    pub fn engine(self) -> &'static str {
        match self {
            Target::Server => "qdrant",
            Target::Edge => "qdrant-edge",
        }
    }

    /// The build parameters only this target takes.
    fn own_params(self) -> &'static [&'static str] {
        match self {
            Target::Server => SERVER_BUILD_PARAMS,
            Target::Edge => EDGE_BUILD_PARAMS,
        }
    }
}

/// Build parameters both adapters take, with the same meaning.
pub const COMMON_BUILD_PARAMS: &[&str] = &[
    "m",
    "ef_construct",
    "full_scan_threshold",
    "indexing_threshold",
    "on_disk",
    "hnsw_on_disk",
    "quantization",
    "pq_compression",
    "quantization_always_ram",
    "datatype",
];

/// Build parameters of a Qdrant server only: cluster settings of the collection.
pub const SERVER_BUILD_PARAMS: &[&str] = &[
    "shard_number",
    "replication_factor",
    "write_consistency_factor",
];

/// Build parameters of qdrant-edge only.
pub const EDGE_BUILD_PARAMS: &[&str] = &["wal"];

/// Search parameters, the same for both targets.
pub const SEARCH_PARAMS: &[&str] = &[
    "hnsw_ef",
    "exact",
    "rescore",
    "oversampling",
    "indexed_only",
];

/// Qdrant's HNSW defaults (`HnswConfig::default()` in the engine, the server's collection
/// defaults). Both adapters send the resolved value, so the result records what was used.
pub const DEFAULT_M: usize = 16;
pub const DEFAULT_EF_CONSTRUCT: usize = 100;

/// Qdrant's defaults (`DEFAULT_INDEXING_THRESHOLD_KB`, `DEFAULT_FULL_SCAN_THRESHOLD`), the
/// upper bounds of the derived thresholds: on large datasets Qdrant's own values already work.
pub const QDRANT_DEFAULT_INDEXING_THRESHOLD_KB: u64 = 10_000;
pub const QDRANT_DEFAULT_FULL_SCAN_THRESHOLD_KB: u64 = 10_000;

/// The smallest full-scan threshold a Qdrant server accepts (its collection-creation
/// validation: `full_scan_threshold` must be 10 or larger).
pub const QDRANT_SERVER_MIN_FULL_SCAN_THRESHOLD_KB: u64 = 10;

/// The derived indexing threshold is this fraction (1/N) of the dataset's vector bytes.
pub const INDEXING_THRESHOLD_FRACTION: u64 = 100;

/// The threshold rule in words, recorded with the settings.
pub const THRESHOLD_RULE: &str = "unless set: indexing_threshold = 1/100 of the dataset's vector \
     KB as stored (dimension × bytes of the datatype), full_scan_threshold = 1/2 of the indexing threshold; the indexing threshold at least 1 KB, \
     the full-scan threshold at least 10 KB (a Qdrant server's minimum), each at most Qdrant's \
     default of 10000 KB";

/// Thresholds (KB) that make Qdrant index the dataset and search that index, from the number
/// of vectors the build loads. Returns `(indexing_threshold_kb, full_scan_threshold_kb)`.
///
/// * `indexing_threshold`: a segment whose vectors take fewer KB is never indexed, and its
///   points are answered by a brute-force scan. It is 1/100 of the dataset because a Qdrant
///   server spreads a shard's points over 2–8 segments (`default_segment_number`, by CPU
///   count) and a collection over `shard_number` shards, so one segment may hold 1/16 of the
///   data or less: a tenth (the edge adapter's old rule) would leave such segments unindexed
///   and their recall exact. 1/100 also indexes the segments that insert and update steps of
///   a few percent of the data create. Never 0: Qdrant reads 0 as "indexing disabled".
/// * `full_scan_threshold`: an indexed segment with fewer available vectors than this is
///   searched by brute force instead of its graph. Half of the indexing threshold (the user's
///   when set), so every segment big enough to be indexed is searched through its graph,
///   even after up to half of its points are deleted (Qdrant compares the *available* count).
///   Equal thresholds (the server adapter's old rule) had no such margin. The graph builder
///   keeps `points / threshold × 10` extra entry points, at most ~2 000 here: negligible.
///
/// The indexing threshold is at least 1 KB, the full-scan threshold at least
/// [`QDRANT_SERVER_MIN_FULL_SCAN_THRESHOLD_KB`] (so on datasets under ~2 MB of vectors a
/// segment under 10 KB is indexed yet scanned), both at most Qdrant's defaults.
pub fn derived_thresholds(expected_points: usize, dim: usize) -> (u64, u64) {
    let indexing = derived_indexing_threshold(expected_points, dim);
    (indexing, derived_full_scan_threshold(indexing))
}

fn derived_indexing_threshold(expected_points: usize, dim: usize) -> u64 {
    derived_indexing_threshold_bytes(expected_points, dim, 4)
}

/// The indexing threshold for components of `bytes` bytes each: Qdrant compares the bytes its
/// storage holds (`uint8` vectors take a quarter of `float32` ones), so the rule follows the
/// stored datatype.
pub(crate) fn derived_indexing_threshold_bytes(
    expected_points: usize,
    dim: usize,
    bytes: usize,
) -> u64 {
    let data_kb = (expected_points as u64)
        .saturating_mul(dim as u64)
        .saturating_mul(bytes as u64)
        / 1024;
    (data_kb / INDEXING_THRESHOLD_FRACTION).clamp(1, QDRANT_DEFAULT_INDEXING_THRESHOLD_KB)
}

/// Half the indexing threshold in force (see [`derived_thresholds`]), at least a server's
/// minimum.
pub(crate) fn derived_full_scan_threshold(indexing_kb: u64) -> u64 {
    (indexing_kb / 2).clamp(
        QDRANT_SERVER_MIN_FULL_SCAN_THRESHOLD_KB,
        QDRANT_DEFAULT_FULL_SCAN_THRESHOLD_KB,
    )
}

/// A rejected parameter: its name and why. The adapters turn it into
/// [`EngineError::BadParameter`] with their engine name, so both report the same message.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("parameter `{param}`: {message}")]
pub struct SettingsError {
    pub param: String,
    pub message: String,
}

impl SettingsError {
    fn new(param: &str, message: impl std::fmt::Display) -> SettingsError {
        SettingsError {
            param: param.to_string(),
            message: message.to_string(),
        }
    }

    /// The error as the adapter of `target` reports it.
    pub fn into_engine(self, target: Target) -> EngineError {
        EngineError::bad_param(target.engine(), &self.param, self.message)
    }
}

impl From<ParamError> for SettingsError {
    fn from(err: ParamError) -> SettingsError {
        let param = match &err {
            ParamError::WrongType { name, .. } | ParamError::Unknown { name, .. } => name.clone(),
            _ => String::new(),
        };
        SettingsError::new(&param, err)
    }
}
