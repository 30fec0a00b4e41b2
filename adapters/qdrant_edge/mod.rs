//! Adapter for Qdrant Edge (`qdrant-edge` crate): Qdrant's engine running inside the
//! ragdbeval process, one [`EdgeShard`] in the run's work directory.
//!
//! Qdrant Edge builds no index in the background: points land in a plain, appendable segment,
//! and only [`EdgeShard::optimize`] turns segments into HNSW-indexed ones. This adapter calls it
//! in [`VectorEngine::wait_until_ready`], so the build phase is "load, then optimize".
//!
//! Two Qdrant thresholds decide whether the HNSW index is really used, and their defaults
//! (10 000 KB of vectors each) defeat benchmarks on small datasets:
//!
//! * `indexing_threshold` (KB): a segment whose vectors take less space is never indexed.
//!   `0` means *indexing disabled* in Qdrant (`get_indexing_threshold_kb` maps it to
//!   `usize::MAX`), not "index everything".
//! * `full_scan_threshold` (KB, HNSW config): an indexed segment holding fewer vectors than
//!   this many kilobytes' worth is searched by brute force (`available_vector_count <
//!   full_scan_threshold` in the HNSW search dispatch), so recall is exactly 1.0 at every
//!   `hnsw_ef`.
//!
//! Unless the user sets them, both are derived from the expected dataset size by the rule
//! shared with the `qdrant` server adapter
//! ([`crate::adapters::qdrant_settings::derived_thresholds`]), and
//! [`VectorEngine::wait_until_ready`] reports whether any segment may still be answered by a
//! full scan. All parameters are parsed and recorded by [`crate::adapters::qdrant_settings`];
//! this adapter only translates the parsed settings into the edge crate's config types.
//!
//! Files: `shard` (the shard's configuration from the shared settings), `points` (opening
//! the shard, writes, query requests), `segments` (what the
//! segments say on disk); the trait impl is here. Parameters are parsed by
//! [`crate::adapters::qdrant_settings`], the same module the `qdrant` adapter uses.

use std::fs;
use std::path::{Path, PathBuf};

use qdrant_edge::{
    BinaryQuantizationConfig, CompressionRatio, CreateIndex, Distance as QdrantDistance,
    EdgeConfig, FieldIndexOperations, Filter, Payload,
    EdgeOptimizersConfig, EdgeShard, EdgeVectorParams, HnswIndexConfig, Memory, NamedQuery,
    PointId as QdrantPointId, PointInsertOperations, PointOperations, PointStructPersisted,
    ProductQuantizationConfig, QuantizationConfig, QuantizationSearchParams, QueryBatchRequest,
    QueryEnum, QueryRequest, QueryRequestBuilder, ScalarQuantizationConfig, ScalarType,
    ScoredPoint, ScoringQuery, SearchParams, UpdateOperation, VectorInternal,
    VectorStorageDatatype, VectorStructPersisted,
};
use serde_json::{Map, Value, json};

use crate::adapters::qdrant_settings::filter as qfilter;
use crate::adapters::qdrant_settings::{
    BuildSettings, PqCompression, Quantization, SearchSettings, SettingsError, Target,
};
use crate::filter::{Attributes, Predicate};
use crate::adapters::support::filter;
use crate::distance::Distance;
use crate::engine::{Batch, CollectionSpec, ConcurrentWrites, ConnectOptions, EngineError, EngineResult, Footprint, IndexProgress, IndexReport, Neighbor, PointId, Query, VectorEngine};
use crate::params::ParamMap;
use crate::types::ElementType;

/// Sparse and hybrid runs (`bench --retrieval sparse|hybrid`).
pub mod hybrid;
mod points;
mod segments;

mod shard;
#[cfg(test)]
mod tests;

use segments::{SegmentDetail, segment_details, settings_details};
use shard::{bad_param, collect_neighbors, edge_config, search_params};

/// Registry name of the engine.
const ENGINE: &str = crate::adapters::meta::qdrant_edge::NAME;

/// The crate exposes no version constant; this must follow the `qdrant-edge` requirement in
/// Cargo.toml.
const VERSION: &str = "qdrant-edge 0.9.0";

/// Optimize rounds before `wait_until_ready` gives up. `optimize()` itself loops until no
/// optimizer has a plan, so a second round only confirms; more means the engine is stuck.
const MAX_OPTIMIZE_ROUNDS: usize = 4;

/// Points per update operation when the runner gave no batch size. Each operation is one WAL
/// record, so a bounded batch keeps records well below the WAL's 32 MiB segments.
const DEFAULT_BATCH: usize = 1_000;

/// Subdirectory of the work directory that holds the shard.
const SHARD_DIR: &str = "qdrant-edge-shard";

// `search(&self)` is called from several threads at once. `EdgeShard::query`, `query_batch`,
// `update` and `optimize` all take `&self` and the shard guards its segments with its own
// locks, so the shard is shared as is, without a mutex around it. This check keeps that
// assumption honest if a future qdrant-edge changes it.
const _: fn() = || {
    fn shared_between_threads<T: Send + Sync>() {}
    shared_between_threads::<EdgeShard>();
};

/// Opens the adapter. The engine runs in-process, so there is nothing to connect to: `url`
/// and `api_key` do not apply; `recreate` and `batch_size` are honoured.
pub fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(QdrantEdge::new(opts)))
}

/// An open shard and what it was built with.
struct Shard {
    shard: EdgeShard,
    path: PathBuf,
    dim: usize,
    distance: Distance,
    /// Parsed by [`crate::adapters::qdrant_settings`], like the server adapter's.
    settings: BuildSettings,
    /// The points' attributes (payloads), when the run searches with filters.
    attributes: Option<std::sync::Arc<Attributes>>,
    /// The payload indexes created: (field, schema).
    payload_indexes: Vec<(String, &'static str)>,
}

/// Qdrant Edge under test.
pub struct QdrantEdge {
    recreate: bool,
    batch_size: usize,
    shard: Option<Shard>,
    /// Search parameters for the following searches; `None` leaves Qdrant's defaults
    /// (`hnsw_ef` = `ef_construct`).
    search_params: Option<SearchParams>,
    /// The parsed search settings, for `describe`.
    search: SearchSettings,
}

impl VectorEngine for QdrantEdge {
    fn native_query_loop(&self, queries: &[f32], k: usize) -> Option<EngineResult<usize>> {
        Some(self.library_search_loop(queries, k))
    }

    fn name(&self) -> &str {
        ENGINE
    }

    fn version(&self) -> String {
        VERSION.to_string()
    }

    fn check_build_params(&self, spec: &CollectionSpec) -> EngineResult<()> {
        BuildSettings::for_collection(spec, Target::Edge).map(|_| ())
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        let settings = BuildSettings::for_collection(spec, Target::Edge)?;
        let path = spec.work_dir.join(SHARD_DIR);
        if path.exists() {
            if !self.recreate {
                return Err(EngineError::op(
                    ENGINE,
                    "create",
                    format!(
                        "{} already exists; use --recreate to replace it",
                        path.display()
                    ),
                ));
            }
            // Close a shard of our own that lives there before deleting its files.
            self.shard = None;
            fs::remove_dir_all(&path).map_err(|e| {
                EngineError::op(
                    ENGINE,
                    "create",
                    format!("removing {}: {e}", path.display()),
                )
            })?;
        }
        let config = edge_config(&settings, spec.distance);
        let shard =
            EdgeShard::new(&path, config).map_err(|e| EngineError::op(ENGINE, "create", e))?;
        // One payload index per attribute, before the points arrive: Qdrant indexes payloads
        // as they are written, so the index's cost is in the build's load time.
        let mut payload_indexes = Vec::new();
        for field in spec.attributes.iter().flat_map(|a| a.fields()) {
            let schema = qfilter::index_schema(field.kind);
            let create: CreateIndex = serde_json::from_value(
                json!({ "field_name": field.name, "field_schema": schema }),
            )
            .map_err(|e| EngineError::op(ENGINE, "create payload index", e))?;
            shard
                .update(UpdateOperation::FieldIndexOperation(
                    FieldIndexOperations::CreateIndex(create),
                ))
                .map_err(|e| EngineError::op(ENGINE, "create payload index", e))?;
            payload_indexes.push((field.name.clone(), schema));
        }
        self.shard = Some(Shard {
            shard,
            path,
            dim: spec.dim,
            distance: spec.distance,
            settings,
            attributes: spec.attributes.clone(),
            payload_indexes,
        });
        // Search settings checked against another collection's quantization do not carry over.
        self.search_params = None;
        self.search = SearchSettings::default();
        Ok(())
    }

    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.upsert("insert", ids, vectors)
    }

    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        let shard = self.open_shard("optimize")?;
        let mut rounds = 0;
        let mut optimized_any = false;
        loop {
            rounds += 1;
            let changed = shard
                .shard
                .optimize()
                .map_err(|e| EngineError::op(ENGINE, "optimize", e))?;
            optimized_any |= changed;
            let info = shard
                .shard
                .info()
                .map_err(|e| EngineError::op(ENGINE, "optimize", e))?;
            // Stop once the index covers every point, or when the optimizers have nothing
            // left to do (for example indexing disabled by the user): calling again would
            // not change anything.
            if info.indexed_vectors_count >= info.points_count
                || !changed
                || rounds >= MAX_OPTIMIZE_ROUNDS
            {
                break;
            }
        }
        // Persist what the optimizers built, so the segment files read below (and the index
        // size measured later) are those a restart would find.
        shard
            .shard
            .flush()
            .map_err(|e| EngineError::op(ENGINE, "flush", e))?;
        let info = shard
            .shard
            .info()
            .map_err(|e| EngineError::op(ENGINE, "info", e))?;
        let segments = segment_details(&shard.path);

        let unindexed_points = info.points_count > info.indexed_vectors_count;
        let scanned_segments = segments.iter().filter(|s| s.full_scan()).count();
        let mut details = settings_details(shard);
        details.insert("optimize_rounds".into(), json!(rounds));
        details.insert("optimized".into(), json!(optimized_any));
        details.insert("segments_count".into(), json!(info.segments_count));
        details.insert(
            "segments".into(),
            Value::Array(segments.iter().map(SegmentDetail::to_json).collect()),
        );
        details.insert(
            "full_scan_reason".into(),
            match (unindexed_points, scanned_segments) {
                (false, 0) => Value::Null,
                (true, 0) => json!("some points are in segments without an HNSW index"),
                (false, n) => json!(format!(
                    "{n} indexed segment(s) below the full-scan threshold"
                )),
                (true, n) => json!(format!(
                    "some points are in segments without an HNSW index, and {n} indexed \
                     segment(s) are below the full-scan threshold"
                )),
            },
        );
        Ok(IndexReport {
            indexed_vectors: Some(info.indexed_vectors_count as u64),
            points: Some(info.points_count as u64),
            may_full_scan: unindexed_points || scanned_segments > 0,
            details,
        })
    }

    /// The shard takes updates through `&self` (it locks its segments inside), so the writer
    /// and the searchers share it.
    fn concurrent_writes(&self) -> Option<&dyn ConcurrentWrites> {
        Some(self)
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        let quantized = self.shard.as_ref().map(|s| s.settings.quantized());
        let search = SearchSettings::parse(params, quantized).map_err(bad_param)?;
        self.search_params = search_params(&search);
        self.search = search;
        Ok(())
    }

    fn search(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        out.clear();
        let op = query.operation();
        let shard = self.open_shard(op)?;
        query.check(ENGINE, shard.dim)?;
        let points = shard
            .shard
            .query(self.request_filtered(query)?)
            .map_err(|e| EngineError::op(ENGINE, op, e))?;
        collect_neighbors(&points, out)
    }

    /// Qdrant expresses keyword equality and integer ranges natively (`match`, `range`).
    fn check_filter(&self, attributes: &Attributes, predicate: &Predicate) -> EngineResult<()> {
        filter::check(ENGINE, attributes, predicate)
    }

    /// One planned batch: Qdrant pushes the queries down to each segment together.
    fn batch_search(&self, batch: Batch<'_>) -> EngineResult<Vec<Vec<Neighbor>>> {
        let op = batch.operation();
        let shard = self.open_shard(op)?;
        batch.check(ENGINE, shard.dim)?;
        let requests = batch
            .queries()
            .map(|q| self.request_filtered(q))
            .collect::<EngineResult<Vec<_>>>()?;
        let results = shard
            .shard
            .query_batch(QueryBatchRequest::new(requests))
            .map_err(|e| EngineError::op(ENGINE, op, e))?;
        results
            .iter()
            .map(|points| {
                let mut out = Vec::with_capacity(points.len());
                collect_neighbors(points, &mut out).map(|()| out)
            })
            .collect()
    }

    /// Index: the `vector_index*` directories of the segments (HNSW graph and links; plain
    /// segments hold next to nothing there). Total: the shard directory, WAL included.
    fn footprint(&self) -> EngineResult<Footprint> {
        let shard = self.open_shard("footprint")?;
        // Write out pending changes first so the files hold everything the shard holds.
        shard
            .shard
            .flush()
            .map_err(|e| EngineError::op(ENGINE, "flush", e))?;
        let index = crate::storage::dirs_bytes(
            ENGINE,
            &shard.path.join("segments"),
            |name| name.starts_with("vector_index"),
            "segments/*/vector_index* (HNSW graph files)",
        )?
        .ok_or_else(|| "no segment has a vector_index directory".to_string());
        let total = crate::storage::dir_bytes(
            ENGINE,
            &shard.path,
            "shard directory: segments (vectors, index, payload) + WAL",
        )?;
        Ok(Footprint::new(index, Ok(total)).holding(crate::engine::IndexHolds::GraphOnly))
    }

    fn stored_element_type(&self) -> ElementType {
        self.shard
            .as_ref()
            .map_or(ElementType::Float32, |s| s.settings.datatype)
    }

    /// The embedded shard has no background optimizer: points written after the build stay
    /// in plain segments (searched by brute force) until the next optimize, and the lag grows
    /// with every write of a stream.
    fn index_progress(&self) -> Option<IndexProgress> {
        let info = self.shard.as_ref()?.shard.info().ok()?;
        Some(IndexProgress {
            points: info.points_count as u64,
            indexed_vectors: info.indexed_vectors_count as u64,
        })
    }

    fn describe(&self) -> Map<String, Value> {
        let Some(shard) = &self.shard else {
            return Map::new();
        };
        let mut out = settings_details(shard);
        match shard.shard.info() {
            Ok(info) => {
                out.insert("points".into(), json!(info.points_count));
                out.insert("indexed_vectors".into(), json!(info.indexed_vectors_count));
                out.insert("segments_count".into(), json!(info.segments_count));
            }
            Err(e) => {
                out.insert("info_error".into(), json!(e.to_string()));
            }
        }
        out.insert(
            "segments".into(),
            Value::Array(
                segment_details(&shard.path)
                    .iter()
                    .map(SegmentDetail::to_json)
                    .collect(),
            ),
        );
        // The disk breakdown shows how much of the total footprint is the WAL.
        for (key, dir) in [
            ("disk_segments", shard.path.join("segments")),
            ("disk_wal", shard.path.join("wal")),
        ] {
            if let Ok(usage) = crate::storage::disk_usage(&dir) {
                out.insert(
                    key.into(),
                    json!({ "allocated_bytes": usage.allocated, "apparent_bytes": usage.apparent }),
                );
            }
        }
        out.insert("search_params".into(), self.search.to_json());
        if shard.attributes.is_some() {
            out.insert(
                "filter_strategy".into(),
                qfilter::strategy(
                    shard.settings.full_scan_threshold.kb,
                    shard.dim,
                    &shard
                        .payload_indexes
                        .iter()
                        .map(|(f, s)| (f.clone(), *s))
                        .collect::<Vec<_>>(),
                ),
            );
        }
        out
    }

    fn close(&mut self) -> EngineResult<()> {
        if let Some(shard) = self.shard.take() {
            shard
                .shard
                .flush()
                .map_err(|e| EngineError::op(ENGINE, "close", e))?;
        }
        Ok(())
    }
}
