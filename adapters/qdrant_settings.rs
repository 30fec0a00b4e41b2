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

use serde_json::{Map, Value, json};

use crate::engine::EngineError;
use crate::params::{ParamError, ParamMap, ParamMapExt, ParamValue};

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

/// The derived indexing threshold is this fraction (1/N) of the dataset's vector bytes.
pub const INDEXING_THRESHOLD_FRACTION: u64 = 100;

/// The threshold rule in words, recorded with the settings.
pub const THRESHOLD_RULE: &str = "unless set: indexing_threshold = 1/100 of the dataset's vector \
     KB, full_scan_threshold = 1/2 of the indexing threshold; each at least 1 KB and at most \
     Qdrant's default of 10000 KB";

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
/// Both are at least 1 KB and at most Qdrant's defaults.
pub fn derived_thresholds(expected_points: usize, dim: usize) -> (u64, u64) {
    let indexing = derived_indexing_threshold(expected_points, dim);
    (indexing, derived_full_scan_threshold(indexing))
}

fn derived_indexing_threshold(expected_points: usize, dim: usize) -> u64 {
    let data_kb = (expected_points as u64)
        .saturating_mul(dim as u64)
        .saturating_mul(4)
        / 1024;
    (data_kb / INDEXING_THRESHOLD_FRACTION).clamp(1, QDRANT_DEFAULT_INDEXING_THRESHOLD_KB)
}

/// Half the indexing threshold in force (see [`derived_thresholds`]).
fn derived_full_scan_threshold(indexing_kb: u64) -> u64 {
    (indexing_kb / 2).clamp(1, QDRANT_DEFAULT_FULL_SCAN_THRESHOLD_KB)
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

/// Where a threshold came from, for the result file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Set by the user (config set or command line).
    User,
    /// Derived from the dataset size by [`derived_thresholds`].
    Derived,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::User => "user",
            Origin::Derived => "derived from dataset size",
        }
    }
}

/// A threshold in KB of vectors and its origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Threshold {
    pub kb: u64,
    pub origin: Origin,
}

/// Compression ratio of product quantization. The adapters map it onto their own enums with
/// an exhaustive match, so a ratio added here must be handled by both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PqCompression {
    X4,
    X8,
    X16,
    X32,
    X64,
}

impl PqCompression {
    pub const ALL: [PqCompression; 5] = [
        PqCompression::X4,
        PqCompression::X8,
        PqCompression::X16,
        PqCompression::X32,
        PqCompression::X64,
    ];

    /// The ratio as a number (16 for x16).
    pub fn ratio(self) -> u64 {
        match self {
            PqCompression::X4 => 4,
            PqCompression::X8 => 8,
            PqCompression::X16 => 16,
            PqCompression::X32 => 32,
            PqCompression::X64 => 64,
        }
    }

    /// `x16`: Qdrant's own spelling.
    pub fn name(self) -> String {
        format!("x{}", self.ratio())
    }

    /// Accepts the number (`16`, what `--build-param pq_compression=16` gives) and Qdrant's
    /// name (`"x16"`, any case), which are the two spellings users write.
    fn parse(value: &ParamValue) -> Result<PqCompression, SettingsError> {
        let number = match value {
            ParamValue::Int(n) => u64::try_from(*n).ok(),
            ParamValue::Str(s) => {
                let s = s.trim();
                s.strip_prefix(['x', 'X']).unwrap_or(s).parse::<u64>().ok()
            }
            ParamValue::Bool(_) | ParamValue::Float(_) => None,
        };
        PqCompression::ALL
            .into_iter()
            .find(|c| Some(c.ratio()) == number)
            .ok_or_else(|| {
                SettingsError::new(
                    "pq_compression",
                    format!("must be 4, 8, 16, 32 or 64 (or x4 … x64), got `{value}`"),
                )
            })
    }
}

/// Quantization of the stored vectors (the `quantization` build parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantization {
    None,
    /// Scalar quantization to int8 (`int8` or `scalar`).
    Int8,
    Binary,
    /// Product quantization (`product` or `pq`) with `pq_compression`, default x16.
    Product(PqCompression),
}

impl Quantization {
    /// The label recorded in results: `none`, `int8`, `binary`, `product-x16`.
    pub fn label(self) -> String {
        match self {
            Quantization::None => "none".into(),
            Quantization::Int8 => "int8".into(),
            Quantization::Binary => "binary".into(),
            Quantization::Product(c) => format!("product-{}", c.name()),
        }
    }
}

/// Validated build parameters, with every default resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildSettings {
    pub target: Target,
    /// The dataset the thresholds were derived for.
    pub dim: usize,
    pub expected_points: usize,
    pub m: usize,
    pub ef_construct: usize,
    pub indexing_threshold: Threshold,
    pub full_scan_threshold: Threshold,
    /// `None`: the engine's default placement.
    pub on_disk: Option<bool>,
    pub hnsw_on_disk: Option<bool>,
    pub quantization: Quantization,
    pub quantization_always_ram: Option<bool>,
    /// Server only (always `None` for the edge target).
    pub shard_number: Option<u32>,
    pub replication_factor: Option<u32>,
    pub write_consistency_factor: Option<u32>,
    /// Edge only (always `None` for the server target); unset means on, as in Qdrant.
    pub wal: Option<bool>,
}

impl BuildSettings {
    /// Parses and validates the build parameters of a collection of `expected_points`
    /// vectors of `dim` dimensions.
    pub fn parse(
        params: &ParamMap,
        target: Target,
        expected_points: usize,
        dim: usize,
    ) -> Result<BuildSettings, SettingsError> {
        check_build_names(params, target)?;
        let get_usize = |name: &str| -> Result<Option<usize>, SettingsError> {
            params
                .get_u64(name)?
                .map(|v| usize::try_from(v).map_err(|_| SettingsError::new(name, "too large")))
                .transpose()
        };

        let m = get_usize("m")?.unwrap_or(DEFAULT_M);
        let ef_construct = get_usize("ef_construct")?.unwrap_or(DEFAULT_EF_CONSTRUCT);
        // A Qdrant server refuses ef_construct < 4; the edge builder would take anything.
        if ef_construct < 4 {
            return Err(SettingsError::new("ef_construct", "must be at least 4"));
        }

        let indexing_threshold = match params.get_u64("indexing_threshold")? {
            Some(kb) => Threshold {
                kb,
                origin: Origin::User,
            },
            None => Threshold {
                kb: derived_indexing_threshold(expected_points, dim),
                origin: Origin::Derived,
            },
        };
        let full_scan_threshold = match params.get_u64("full_scan_threshold")? {
            Some(kb) => Threshold {
                kb,
                origin: Origin::User,
            },
            None => Threshold {
                kb: derived_full_scan_threshold(indexing_threshold.kb),
                origin: Origin::Derived,
            },
        };

        let quantization = match params
            .get_str("quantization")?
            .unwrap_or("none")
            .to_ascii_lowercase()
            .as_str()
        {
            "none" => Quantization::None,
            "int8" | "scalar" => Quantization::Int8,
            "binary" => Quantization::Binary,
            "product" | "pq" => Quantization::Product(match params.get("pq_compression") {
                Some(value) => PqCompression::parse(value)?,
                None => PqCompression::X16,
            }),
            other => {
                return Err(SettingsError::new(
                    "quantization",
                    format!(
                        "must be none, int8 (or scalar), binary or product (or pq), got `{other}`"
                    ),
                ));
            }
        };
        // A setting that would have no effect is refused rather than recorded as if it had.
        if params.contains_key("pq_compression")
            && !matches!(quantization, Quantization::Product(_))
        {
            return Err(SettingsError::new(
                "pq_compression",
                "only applies with quantization = product",
            ));
        }
        let quantization_always_ram = params.get_bool("quantization_always_ram")?;
        if quantization_always_ram.is_some() && quantization == Quantization::None {
            return Err(SettingsError::new(
                "quantization_always_ram",
                "only applies with quantization = int8, binary or product",
            ));
        }

        Ok(BuildSettings {
            target,
            dim,
            expected_points,
            m,
            ef_construct,
            indexing_threshold,
            full_scan_threshold,
            on_disk: params.get_bool("on_disk")?,
            hnsw_on_disk: params.get_bool("hnsw_on_disk")?,
            quantization,
            quantization_always_ram,
            shard_number: get_u32_min1(params, "shard_number")?,
            replication_factor: get_u32_min1(params, "replication_factor")?,
            write_consistency_factor: get_u32_min1(params, "write_consistency_factor")?,
            wal: params.get_bool("wal")?,
        })
    }

    /// True when the vectors are quantized, so `rescore` and `oversampling` have an effect.
    pub fn quantized(&self) -> bool {
        self.quantization != Quantization::None
    }

    /// The settings as recorded in results (`build_settings` of the engine details and of the
    /// build's index report), identical for both targets except `engine_only`.
    pub fn to_json(&self) -> Value {
        let vector_bytes = (self.dim as u64).saturating_mul(4).max(1);
        let indexing = self.indexing_threshold;
        let full_scan = self.full_scan_threshold;
        let engine_only = match self.target {
            Target::Server => json!({
                "shard_number": self.shard_number,
                "replication_factor": self.replication_factor,
                "write_consistency_factor": self.write_consistency_factor,
            }),
            Target::Edge => json!({ "wal": self.wal.unwrap_or(true) }),
        };
        json!({
            "dim": self.dim,
            "expected_points": self.expected_points,
            "m": self.m,
            "ef_construct": self.ef_construct,
            "indexing_threshold_kb": {
                "kb": indexing.kb,
                "origin": indexing.origin.as_str(),
                // Qdrant reads 0 as "never index".
                "indexing_disabled": indexing.kb == 0,
                "min_points_to_index": indexing.kb.saturating_mul(1024).div_ceil(vector_bytes),
            },
            "full_scan_threshold_kb": {
                "kb": full_scan.kb,
                "origin": full_scan.origin.as_str(),
                // Qdrant scans a segment with fewer available vectors than this.
                "min_points_for_hnsw_search": full_scan.kb.saturating_mul(1024) / vector_bytes,
            },
            "threshold_rule": THRESHOLD_RULE,
            "on_disk": self.on_disk,
            "hnsw_on_disk": self.hnsw_on_disk,
            "quantization": self.quantization.label(),
            "quantization_always_ram": self.quantization_always_ram,
            "engine_only": engine_only,
        })
    }
}

/// Rejects names that are unknown or belong to the other target, with one message for both.
fn check_build_names(params: &ParamMap, target: Target) -> Result<(), SettingsError> {
    for name in params.keys() {
        let name = name.as_str();
        if COMMON_BUILD_PARAMS.contains(&name) || target.own_params().contains(&name) {
            continue;
        }
        let message = if SERVER_BUILD_PARAMS.contains(&name) {
            "is a cluster setting of a Qdrant server (engine qdrant); qdrant-edge is one local \
             shard"
                .to_string()
        } else if EDGE_BUILD_PARAMS.contains(&name) {
            "applies to qdrant-edge only; a Qdrant server (engine qdrant) always keeps its \
             write-ahead log"
                .to_string()
        } else {
            format!(
                "unknown build parameter; Qdrant takes {}; a server also {}; qdrant-edge also {}",
                COMMON_BUILD_PARAMS.join(", "),
                SERVER_BUILD_PARAMS.join(", "),
                EDGE_BUILD_PARAMS.join(", ")
            )
        };
        return Err(SettingsError::new(name, message));
    }
    Ok(())
}

/// A positive integer that must fit the u32 fields of Qdrant's cluster settings.
fn get_u32_min1(params: &ParamMap, name: &str) -> Result<Option<u32>, SettingsError> {
    match params.get_u64(name)? {
        None => Ok(None),
        Some(v) => match u32::try_from(v) {
            Ok(n) if n >= 1 => Ok(Some(n)),
            _ => Err(SettingsError::new(
                name,
                format!("must be between 1 and {}, got {v}", u32::MAX),
            )),
        },
    }
}

/// Validated search parameters. `None` fields leave the engine's default.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SearchSettings {
    pub hnsw_ef: Option<usize>,
    pub exact: Option<bool>,
    pub rescore: Option<bool>,
    pub oversampling: Option<f64>,
    pub indexed_only: Option<bool>,
}

impl SearchSettings {
    /// Parses search parameters. `quantized` is whether the collection was built with
    /// quantization, or `None` before it exists; `rescore` and `oversampling` on a collection
    /// without quantization would have no effect and are refused.
    pub fn parse(
        params: &ParamMap,
        quantized: Option<bool>,
    ) -> Result<SearchSettings, SettingsError> {
        params.reject_unknown(SEARCH_PARAMS)?;
        let hnsw_ef = match params.get_u64("hnsw_ef")? {
            None => None,
            Some(0) => return Err(SettingsError::new("hnsw_ef", "must be at least 1")),
            Some(ef) => {
                Some(usize::try_from(ef).map_err(|_| SettingsError::new("hnsw_ef", "too large"))?)
            }
        };
        let oversampling = params.get_f64("oversampling")?;
        if let Some(x) = oversampling
            && !(x.is_finite() && x >= 1.0)
        {
            return Err(SettingsError::new(
                "oversampling",
                format!("must be a number >= 1.0, got {x}"),
            ));
        }
        let settings = SearchSettings {
            hnsw_ef,
            exact: params.get_bool("exact")?,
            rescore: params.get_bool("rescore")?,
            oversampling,
            indexed_only: params.get_bool("indexed_only")?,
        };
        if quantized == Some(false) && settings.has_quantization_params() {
            let name = if settings.rescore.is_some() {
                "rescore"
            } else {
                "oversampling"
            };
            return Err(SettingsError::new(
                name,
                "has no effect: the collection was built without quantization",
            ));
        }
        Ok(settings)
    }

    /// True when nothing is set: the adapter sends no search parameters at all.
    pub fn is_default(&self) -> bool {
        *self == SearchSettings::default()
    }

    /// True when `rescore` or `oversampling` is set (sent as quantization search params).
    pub fn has_quantization_params(&self) -> bool {
        self.rescore.is_some() || self.oversampling.is_some()
    }

    /// The settings as recorded in results (`search_params` of the engine details).
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("hnsw_ef".into(), json!(self.hnsw_ef));
        out.insert("exact".into(), json!(self.exact));
        out.insert("rescore".into(), json!(self.rescore));
        out.insert("oversampling".into(), json!(self.oversampling));
        out.insert("indexed_only".into(), json!(self.indexed_only));
        Value::Object(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, ParamValue)]) -> ParamMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    fn s(text: &str) -> ParamValue {
        ParamValue::Str(text.into())
    }

    /// The recorded settings without the target-only part.
    fn shared_part(settings: &BuildSettings) -> Value {
        let mut v = settings.to_json();
        if let Some(obj) = v.as_object_mut() {
            obj.remove("engine_only");
        }
        v
    }

    /// Build parameter maps covering every shared parameter, valid and invalid values.
    fn build_grid() -> Vec<ParamMap> {
        use ParamValue::{Bool, Float, Int};
        let mut grid = vec![
            ParamMap::new(),
            map(&[("m", Int(16)), ("ef_construct", Int(128))]),
            map(&[("m", Int(0))]),
            map(&[("m", Int(-1))]),
            map(&[("m", s("x"))]),
            map(&[("ef_construct", Int(3))]),
            map(&[("ef_construct", Int(4))]),
            map(&[("indexing_threshold", Int(0))]),
            map(&[("indexing_threshold", Int(20_000))]),
            map(&[("indexing_threshold", Int(5))]),
            map(&[("full_scan_threshold", Int(10_000))]),
            map(&[
                ("indexing_threshold", Int(10_000)),
                ("full_scan_threshold", Int(10_000)),
            ]),
            map(&[("full_scan_threshold", Float(1.5))]),
            map(&[("on_disk", Bool(true)), ("hnsw_on_disk", Bool(false))]),
            map(&[("on_disk", Int(1))]),
            map(&[("quantization", s("int8"))]),
            map(&[
                ("quantization", s("Scalar")),
                ("quantization_always_ram", Bool(true)),
            ]),
            map(&[
                ("quantization", s("binary")),
                ("quantization_always_ram", Bool(false)),
            ]),
            map(&[("quantization", s("product"))]),
            map(&[("quantization", s("pq")), ("pq_compression", Int(64))]),
            map(&[("quantization", s("fp4"))]),
            map(&[("quantization", Int(8))]),
            map(&[("quantization_always_ram", Bool(true))]),
            map(&[("pq_compression", Int(16))]),
            map(&[("quantization", s("int8")), ("pq_compression", s("x16"))]),
            map(&[("bogus", Int(1))]),
            map(&[("ef_construction", Int(100))]),
        ];
        for value in [
            Int(4),
            Int(8),
            Int(16),
            Int(32),
            Int(64),
            s("x16"),
            s("X32"),
            s("16"),
            Int(12),
            Int(0),
            Int(-16),
            s("x"),
            s("x17"),
            Float(16.0),
            Bool(true),
        ] {
            grid.push(map(&[
                ("quantization", s("product")),
                ("pq_compression", value),
            ]));
        }
        grid
    }

    const DATASETS: &[(usize, usize)] = &[
        (0, 8),
        (1, 1),
        (100, 8),
        (5_000, 32),
        (18_000, 64),
        (20_000, 64),
        (50_000, 50),
        (1_000_000, 128),
        (100_000_000, 768),
        (usize::MAX, usize::MAX),
    ];

    /// Both targets go through one function: for every parameter map and dataset the settings
    /// they record are identical (apart from the target-only part), or both reject the map
    /// with the same parameter and message.
    #[test]
    fn both_targets_parse_and_record_the_grid_identically() {
        let mut accepted = 0;
        let mut rejected = 0;
        for params in build_grid() {
            for &(n, dim) in DATASETS {
                let server = BuildSettings::parse(&params, Target::Server, n, dim);
                let edge = BuildSettings::parse(&params, Target::Edge, n, dim);
                match (&server, &edge) {
                    (Ok(a), Ok(b)) => {
                        assert_eq!(shared_part(a), shared_part(b), "{params:?} {n}x{dim}");
                        accepted += 1;
                    }
                    (Err(a), Err(b)) => {
                        assert_eq!(a, b, "{params:?} {n}x{dim}");
                        rejected += 1;
                    }
                    _ => panic!("{params:?} {n}x{dim}: server {server:?}, edge {edge:?}"),
                }
            }
        }
        // The grid exercises both outcomes.
        assert!(accepted > 100 && rejected > 100, "{accepted} {rejected}");
    }

    #[test]
    fn pq_compression_16_is_product_x16_for_both_targets() {
        for value in [ParamValue::Int(16), s("x16"), s("X16"), s("16")] {
            let params = map(&[
                ("quantization", s("product")),
                ("pq_compression", value.clone()),
            ]);
            for target in [Target::Server, Target::Edge] {
                let settings = BuildSettings::parse(&params, target, 1_000, 16)
                    .unwrap_or_else(|e| panic!("{target:?} {value:?}: {e}"));
                assert_eq!(
                    settings.quantization,
                    Quantization::Product(PqCompression::X16)
                );
                assert_eq!(settings.to_json()["quantization"], "product-x16");
            }
        }
        // Unset, product quantization compresses x16 (Qdrant's usual choice).
        let params = map(&[("quantization", s("pq"))]);
        let settings = BuildSettings::parse(&params, Target::Edge, 1_000, 16).unwrap();
        assert_eq!(
            settings.quantization,
            Quantization::Product(PqCompression::X16)
        );
    }

    #[test]
    fn threshold_rule() {
        // 50k x 50 floats = 9765 KB: indexing 97 KB, full scan 48 KB.
        assert_eq!(derived_thresholds(50_000, 50), (97, 48));
        // 18k x 64 (the demo build) = 4500 KB.
        assert_eq!(derived_thresholds(18_000, 64), (45, 22));
        assert_eq!(derived_thresholds(0, 8), (1, 1));
        assert_eq!(derived_thresholds(10, 2), (1, 1));
        assert_eq!(derived_thresholds(10_000_000, 128), (10_000, 5_000));
        assert_eq!(derived_thresholds(usize::MAX, usize::MAX), (10_000, 5_000));
        for &(n, dim) in DATASETS {
            let (indexing, full_scan) = derived_thresholds(n, dim);
            // 0 would disable indexing.
            assert!(indexing >= 1 && full_scan >= 1, "{n}x{dim}");
            // A segment big enough to be indexed is never below the full-scan threshold.
            assert!(full_scan <= indexing, "{n}x{dim}");
            assert!(indexing <= QDRANT_DEFAULT_INDEXING_THRESHOLD_KB);
            assert!(full_scan <= QDRANT_DEFAULT_FULL_SCAN_THRESHOLD_KB);
        }
        // A user's indexing threshold moves the derived full-scan threshold with it.
        let params = map(&[("indexing_threshold", ParamValue::Int(40))]);
        let settings = BuildSettings::parse(&params, Target::Edge, 1_000_000, 128).unwrap();
        assert_eq!(settings.full_scan_threshold.kb, 20);
        assert_eq!(settings.full_scan_threshold.origin, Origin::Derived);
        assert_eq!(settings.indexing_threshold.origin, Origin::User);
    }

    #[test]
    fn recorded_thresholds_state_origin_and_points() {
        let settings = BuildSettings::parse(&ParamMap::new(), Target::Server, 18_000, 64).unwrap();
        let v = settings.to_json();
        assert_eq!(v["indexing_threshold_kb"]["kb"], 45);
        assert_eq!(
            v["indexing_threshold_kb"]["origin"],
            "derived from dataset size"
        );
        // 45 KB of 256-byte vectors.
        assert_eq!(v["indexing_threshold_kb"]["min_points_to_index"], 180);
        assert_eq!(
            v["full_scan_threshold_kb"]["min_points_for_hnsw_search"],
            88
        );
        assert_eq!(v["m"], 16);
        assert_eq!(v["ef_construct"], 100);
        let params = map(&[("indexing_threshold", ParamValue::Int(0))]);
        let v = BuildSettings::parse(&params, Target::Edge, 18_000, 64)
            .unwrap()
            .to_json();
        assert_eq!(v["indexing_threshold_kb"]["indexing_disabled"], true);
        assert_eq!(v["engine_only"]["wal"], true);
    }

    #[test]
    fn target_only_parameters_are_refused_by_the_other_target_with_one_message() {
        let cluster = map(&[("shard_number", ParamValue::Int(2))]);
        let s = BuildSettings::parse(&cluster, Target::Server, 100, 8).unwrap();
        assert_eq!(s.shard_number, Some(2));
        assert_eq!(s.to_json()["engine_only"]["shard_number"], 2);
        let err = BuildSettings::parse(&cluster, Target::Edge, 100, 8).unwrap_err();
        assert_eq!(err.param, "shard_number");
        assert!(err.message.contains("cluster setting"), "{err}");

        let wal = map(&[("wal", ParamValue::Bool(false))]);
        let s = BuildSettings::parse(&wal, Target::Edge, 100, 8).unwrap();
        assert_eq!(s.wal, Some(false));
        let err = BuildSettings::parse(&wal, Target::Server, 100, 8).unwrap_err();
        assert_eq!(err.param, "wal");

        let zero = map(&[("replication_factor", ParamValue::Int(0))]);
        assert!(BuildSettings::parse(&zero, Target::Server, 100, 8).is_err());
        // The error as each adapter reports it: same parameter and message.
        let bogus = map(&[("bogus", ParamValue::Int(1))]);
        let a = BuildSettings::parse(&bogus, Target::Server, 1, 1).unwrap_err();
        let b = BuildSettings::parse(&bogus, Target::Edge, 1, 1).unwrap_err();
        assert_eq!(a, b);
        match a.into_engine(Target::Server) {
            EngineError::BadParameter { engine, param, .. } => {
                assert_eq!((engine.as_str(), param.as_str()), ("qdrant", "bogus"));
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn search_settings() {
        use ParamValue::{Bool, Float, Int};
        assert!(
            SearchSettings::parse(&ParamMap::new(), None)
                .unwrap()
                .is_default()
        );
        let p = map(&[("hnsw_ef", Int(64)), ("indexed_only", Bool(true))]);
        let parsed = SearchSettings::parse(&p, Some(false)).unwrap();
        assert_eq!(
            (parsed.hnsw_ef, parsed.indexed_only),
            (Some(64), Some(true))
        );
        assert_eq!(parsed.to_json()["hnsw_ef"], 64);
        for bad in [
            map(&[("hnsw_ef", Int(0))]),
            map(&[("hnsw_ef", s("big"))]),
            map(&[("ef", Int(64))]),
            map(&[("oversampling", Float(0.5))]),
            map(&[("oversampling", Float(f64::NAN))]),
            map(&[("oversampling", Float(f64::INFINITY))]),
        ] {
            assert!(SearchSettings::parse(&bad, None).is_err(), "{bad:?}");
        }
        let rescore = map(&[("rescore", Bool(true)), ("oversampling", Float(2.0))]);
        assert!(SearchSettings::parse(&rescore, Some(false)).is_err());
        assert!(SearchSettings::parse(&rescore, Some(true)).is_ok());
        assert!(SearchSettings::parse(&rescore, None).is_ok());
    }

    /// Every named set of either adapter's config.toml parses for its own target, and a set
    /// without target-only parameters means the same to the other target.
    #[test]
    fn config_sets_parse_for_both_targets() {
        for (config, own, other) in [
            (
                crate::adapters::qdrant::CONFIG,
                Target::Server,
                Target::Edge,
            ),
            (
                crate::adapters::qdrant_edge::CONFIG,
                Target::Edge,
                Target::Server,
            ),
        ] {
            let cfg = crate::params::EngineConfig::parse(config).unwrap();
            for (name, set) in &cfg.sets {
                for build in crate::params::expand(&set.build) {
                    let mine = BuildSettings::parse(&build, own, 20_000, 64)
                        .unwrap_or_else(|e| panic!("{name}: {e}"));
                    let quantized = Some(mine.quantized());
                    for search in crate::params::expand(&set.search) {
                        SearchSettings::parse(&search, quantized)
                            .unwrap_or_else(|e| panic!("{name}: {e}"));
                    }
                    if build.keys().any(|k| own.own_params().contains(&k.as_str())) {
                        continue;
                    }
                    let theirs = BuildSettings::parse(&build, other, 20_000, 64)
                        .unwrap_or_else(|e| panic!("{name} for {other:?}: {e}"));
                    assert_eq!(shared_part(&mine), shared_part(&theirs), "{name}");
                }
            }
        }
    }
}
