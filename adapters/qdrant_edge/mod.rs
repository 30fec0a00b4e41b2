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
//! Unless the user sets them, both are derived from the expected dataset size (see
//! [`derived_thresholds`]), and [`VectorEngine::wait_until_ready`] reports whether any
//! segment may still be answered by a full scan.

use std::fs;
use std::path::{Path, PathBuf};

use qdrant_edge::{
    BinaryQuantizationConfig, CompressionRatio, Distance as QdrantDistance, EdgeConfig,
    EdgeOptimizersConfig, EdgeShard, EdgeVectorParams, HnswIndexConfig, Memory, NamedQuery,
    PointId as QdrantPointId, PointInsertOperations, PointOperations, PointStructPersisted,
    ProductQuantizationConfig, QuantizationConfig, QuantizationSearchParams, QueryBatchRequest,
    QueryEnum, QueryRequest, QueryRequestBuilder, ScalarQuantizationConfig, ScalarType,
    ScoredPoint, ScoringQuery, SearchParams, UpdateOperation, VectorInternal,
    VectorStructPersisted,
};
use serde_json::{Map, Value, json};

use crate::distance::Distance;
use crate::engine::{
    CollectionSpec, ConnectOptions, EngineError, EngineResult, IndexReport, Neighbor, PointId,
    SourcedBytes, VectorEngine,
};
use crate::params::{ParamMap, ParamMapExt};

/// The engine's named parameter sets and sweeps.
pub const CONFIG: &str = include_str!("config.toml");

/// Registry name of the engine.
const ENGINE: &str = "qdrant-edge";

/// The crate exposes no version constant; this must follow the `qdrant-edge` requirement in
/// Cargo.toml.
const VERSION: &str = "qdrant-edge 0.9.0";

/// Build parameters this adapter understands.
const BUILD_PARAMS: &[&str] = &[
    "m",
    "ef_construct",
    "full_scan_threshold",
    "indexing_threshold",
    "on_disk",
    "hnsw_on_disk",
    "quantization",
    "pq_compression",
    "quantization_always_ram",
    "wal",
];

/// Search parameters this adapter understands.
const SEARCH_PARAMS: &[&str] = &["hnsw_ef", "exact", "rescore", "oversampling"];

/// Qdrant's defaults (`DEFAULT_INDEXING_THRESHOLD_KB`, `DEFAULT_FULL_SCAN_THRESHOLD`), used as
/// upper bounds of the derived thresholds: on large datasets Qdrant's own values already work.
const QDRANT_DEFAULT_INDEXING_THRESHOLD_KB: u64 = 10_000;
const QDRANT_DEFAULT_FULL_SCAN_THRESHOLD_KB: u64 = 10_000;

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

/// Where a threshold value came from, for the result file.
#[derive(Debug, Clone, Copy)]
enum Origin {
    /// Set by the user (config set or command line).
    User,
    /// Derived by this adapter from the dataset size.
    Derived,
}

impl Origin {
    fn as_str(self) -> &'static str {
        match self {
            Origin::User => "user",
            Origin::Derived => "derived from dataset size",
        }
    }
}

/// Quantization requested by the `quantization` build parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Quantization {
    None,
    Int8,
    Binary,
    Product(CompressionRatio),
}

impl Quantization {
    fn label(self) -> String {
        match self {
            Quantization::None => "none".into(),
            Quantization::Int8 => "int8".into(),
            Quantization::Binary => "binary".into(),
            Quantization::Product(ratio) => format!("product-{}", compression_name(ratio)),
        }
    }
}

/// The resolved build parameters of a shard.
#[derive(Debug, Clone)]
struct BuildSettings {
    m: usize,
    ef_construct: usize,
    indexing_threshold_kb: u64,
    indexing_origin: Origin,
    full_scan_threshold_kb: u64,
    full_scan_origin: Origin,
    on_disk: Option<bool>,
    hnsw_on_disk: Option<bool>,
    quantization: Quantization,
    quantization_always_ram: Option<bool>,
    wal: bool,
}

/// An open shard and what it was built with.
struct Shard {
    shard: EdgeShard,
    path: PathBuf,
    dim: usize,
    distance: Distance,
    expected_points: usize,
    settings: BuildSettings,
}

/// Qdrant Edge under test.
pub struct QdrantEdge {
    recreate: bool,
    batch_size: usize,
    shard: Option<Shard>,
    /// Search parameters for the following searches; `None` leaves Qdrant's defaults
    /// (`hnsw_ef` = `ef_construct`).
    search_params: Option<SearchParams>,
    /// The parameters as the user gave them, for `describe`.
    search_label: ParamMap,
}

impl QdrantEdge {
    /// The adapter as a concrete type (`open` boxes it); benchmarks use it to reach
    /// [`QdrantEdge::native_query_loop`].
    pub fn new(opts: &ConnectOptions) -> QdrantEdge {
        QdrantEdge {
            recreate: opts.recreate,
            batch_size: if opts.batch_size > 0 {
                opts.batch_size
            } else {
                DEFAULT_BATCH
            },
            shard: None,
            search_params: None,
            search_label: ParamMap::new(),
        }
    }

    /// The engine's own query loop, with no adapter and no harness around it: one
    /// `EdgeShard::query` per row of `queries`, results dropped. `benches/overhead.rs` compares
    /// ragdbeval's single-client loop with it.
    pub fn native_query_loop(&self, queries: &[f32], k: usize) -> EngineResult<usize> {
        let shard = self.open_shard("search")?;
        let mut returned = 0;
        for q in queries.chunks_exact(shard.dim) {
            let points = shard
                .shard
                .query(self.request(q, k))
                .map_err(|e| EngineError::op(ENGINE, "search", e))?;
            returned += points.len();
        }
        Ok(returned)
    }

    fn open_shard(&self, operation: &str) -> EngineResult<&Shard> {
        self.shard.as_ref().ok_or_else(|| {
            EngineError::op(ENGINE, operation, "no collection: create() was not called")
        })
    }

    /// Upserts `ids`/`vectors` in batches of `batch_size` points.
    fn upsert(&self, operation: &str, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let shard = self.open_shard(operation)?;
        let dim = shard.dim;
        if vectors.len() != ids.len() * dim {
            return Err(EngineError::op(
                ENGINE,
                operation,
                format!(
                    "{} floats for {} ids of dimension {dim}",
                    vectors.len(),
                    ids.len()
                ),
            ));
        }
        let step = self.batch_size.max(1);
        for (id_chunk, vector_chunk) in ids.chunks(step).zip(vectors.chunks(step * dim)) {
            let points = id_chunk
                .iter()
                .zip(vector_chunk.chunks_exact(dim))
                .map(|(&id, vector)| PointStructPersisted {
                    id: QdrantPointId::NumId(id),
                    vector: VectorStructPersisted::Single(vector.to_vec()),
                    payload: None,
                })
                .collect();
            shard
                .shard
                .update(UpdateOperation::PointOperation(
                    PointOperations::UpsertPoints(PointInsertOperations::PointsList(points)),
                ))
                .map_err(|e| EngineError::op(ENGINE, operation, e))?;
        }
        Ok(())
    }

    /// One nearest-neighbour request with the current search parameters.
    fn request(&self, query: &[f32], k: usize) -> QueryRequest {
        let builder = QueryRequestBuilder::new(k).query(ScoringQuery::Vector(QueryEnum::Nearest(
            NamedQuery {
                query: VectorInternal::Dense(query.to_vec()),
                // The shard has one unnamed vector.
                using: None,
            },
        )));
        let builder = match &self.search_params {
            Some(params) => builder.params(params.clone()),
            None => builder,
        };
        builder.build()
    }
}

impl VectorEngine for QdrantEdge {
    fn name(&self) -> &str {
        ENGINE
    }

    fn version(&self) -> String {
        VERSION.to_string()
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        if spec.dim == 0 {
            return Err(EngineError::op(
                ENGINE,
                "create",
                "dimension must be positive",
            ));
        }
        let settings = build_settings(&spec.build_params, spec.expected_points, spec.dim)?;
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
        let config = edge_config(&settings, spec.dim, spec.distance);
        let shard =
            EdgeShard::new(&path, config).map_err(|e| EngineError::op(ENGINE, "create", e))?;
        self.shard = Some(Shard {
            shard,
            path,
            dim: spec.dim,
            distance: spec.distance,
            expected_points: spec.expected_points,
            settings,
        });
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

    fn upsert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.upsert("upsert", ids, vectors)
    }

    fn delete_batch(&mut self, ids: &[PointId]) -> EngineResult<()> {
        let shard = self.open_shard("delete")?;
        for chunk in ids.chunks(self.batch_size.max(1)) {
            let ids = chunk.iter().map(|&id| QdrantPointId::NumId(id)).collect();
            shard
                .shard
                .update(UpdateOperation::PointOperation(
                    PointOperations::DeletePoints { ids },
                ))
                .map_err(|e| EngineError::op(ENGINE, "delete", e))?;
        }
        Ok(())
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        let quantized = self
            .shard
            .as_ref()
            .map(|s| s.settings.quantization != Quantization::None);
        self.search_params = search_params(params, quantized)?;
        self.search_label = params.clone();
        Ok(())
    }

    fn search(&self, query: &[f32], k: usize, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        out.clear();
        let shard = self.open_shard("search")?;
        check_query_dim(shard.dim, query.len())?;
        let points = shard
            .shard
            .query(self.request(query, k))
            .map_err(|e| EngineError::op(ENGINE, "search", e))?;
        collect_neighbors(&points, out)
    }

    fn batch_search(
        &self,
        queries: &[f32],
        dim: usize,
        k: usize,
    ) -> EngineResult<Vec<Vec<Neighbor>>> {
        let shard = self.open_shard("batch search")?;
        check_query_dim(shard.dim, dim)?;
        if !queries.len().is_multiple_of(dim) {
            return Err(EngineError::op(
                ENGINE,
                "batch search",
                format!("{} floats are not whole rows of {dim}", queries.len()),
            ));
        }
        let requests = queries
            .chunks_exact(dim)
            .map(|q| self.request(q, k))
            .collect();
        // One planned batch: Qdrant pushes the queries down to each segment together.
        let results = shard
            .shard
            .query_batch(QueryBatchRequest::new(requests))
            .map_err(|e| EngineError::op(ENGINE, "batch search", e))?;
        results
            .iter()
            .map(|points| {
                let mut out = Vec::with_capacity(points.len());
                collect_neighbors(points, &mut out).map(|()| out)
            })
            .collect()
    }

    fn index_size(&self) -> EngineResult<Option<SourcedBytes>> {
        let shard = self.open_shard("index size")?;
        // Write out pending changes first so the files hold everything the shard holds.
        shard
            .shard
            .flush()
            .map_err(|e| EngineError::op(ENGINE, "flush", e))?;
        crate::storage::index_size(ENGINE, &shard.path, "shard directory").map(Some)
    }

    fn in_process(&self) -> bool {
        true
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
        // The disk breakdown shows how much of the index size is the WAL.
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
        out.insert(
            "search_params".into(),
            serde_json::to_value(&self.search_label).unwrap_or(Value::Null),
        );
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

/// Maps a build-parameter error to the engine error type.
fn bad(param: &str, message: impl std::fmt::Display) -> EngineError {
    EngineError::bad_param(ENGINE, param, message)
}

fn param_err(err: crate::params::ParamError) -> EngineError {
    let param = match &err {
        crate::params::ParamError::WrongType { name, .. }
        | crate::params::ParamError::Unknown { name, .. } => name.clone(),
        _ => String::new(),
    };
    EngineError::bad_param(ENGINE, &param, err)
}

/// Thresholds (KB) that make Qdrant index the dataset and search the index.
///
/// Returns `(indexing_threshold_kb, full_scan_threshold_kb)`. The dataset's raw vectors take
/// `points × dim × 4` bytes. The indexing threshold is a tenth of that, so the segment that
/// receives the bulk load is indexed, while leftovers much smaller than the dataset stay plain
/// as Qdrant intends. The full-scan threshold is a twentieth, below any indexed segment (which
/// is at least a tenth), so indexed segments are searched through the graph. It is not set
/// lower because the graph builder keeps `points / threshold × 10` entry points. Both are at
/// least 1 KB (0 would mean "disabled" for indexing) and at most Qdrant's defaults, which
/// already work on large datasets.
pub fn derived_thresholds(expected_points: usize, dim: usize) -> (u64, u64) {
    let data_kb = (expected_points as u64)
        .saturating_mul(dim as u64)
        .saturating_mul(4)
        / 1024;
    (
        (data_kb / 10).clamp(1, QDRANT_DEFAULT_INDEXING_THRESHOLD_KB),
        (data_kb / 20).clamp(1, QDRANT_DEFAULT_FULL_SCAN_THRESHOLD_KB),
    )
}

fn build_settings(
    params: &ParamMap,
    expected_points: usize,
    dim: usize,
) -> EngineResult<BuildSettings> {
    params.reject_unknown(BUILD_PARAMS).map_err(param_err)?;
    let get_usize = |name: &str| -> EngineResult<Option<usize>> {
        params
            .get_u64(name)
            .map_err(param_err)?
            .map(|v| usize::try_from(v).map_err(|_| bad(name, "value too large")))
            .transpose()
    };
    let get_bool = |name: &str| params.get_bool(name).map_err(param_err);

    let hnsw_default = HnswIndexConfig::default();
    let m = get_usize("m")?.unwrap_or(hnsw_default.m);
    let ef_construct = get_usize("ef_construct")?.unwrap_or(hnsw_default.ef_construct);
    // Qdrant validates ef_construct >= 4 on its API; the edge builder would take anything.
    if ef_construct < 4 {
        return Err(bad("ef_construct", "must be at least 4"));
    }

    let (derived_indexing, derived_full_scan) = derived_thresholds(expected_points, dim);
    let (indexing_threshold_kb, indexing_origin) =
        match params.get_u64("indexing_threshold").map_err(param_err)? {
            Some(kb) => (kb, Origin::User),
            None => (derived_indexing, Origin::Derived),
        };
    let (full_scan_threshold_kb, full_scan_origin) =
        match params.get_u64("full_scan_threshold").map_err(param_err)? {
            Some(kb) => (kb, Origin::User),
            None => (derived_full_scan, Origin::Derived),
        };

    let quantization = match params
        .get_str("quantization")
        .map_err(param_err)?
        .unwrap_or("none")
    {
        "none" => Quantization::None,
        "int8" | "scalar" => Quantization::Int8,
        "binary" => Quantization::Binary,
        "product" | "pq" => {
            let ratio = params
                .get_str("pq_compression")
                .map_err(param_err)?
                .unwrap_or("x16");
            Quantization::Product(parse_compression(ratio)?)
        }
        other => {
            return Err(bad(
                "quantization",
                format!("`{other}`: expected none, int8, binary or product"),
            ));
        }
    };
    // Reject settings that would be silently ignored.
    if params.contains_key("pq_compression") && !matches!(quantization, Quantization::Product(_)) {
        return Err(bad(
            "pq_compression",
            "only applies to quantization = \"product\"",
        ));
    }
    let quantization_always_ram = get_bool("quantization_always_ram")?;
    if quantization_always_ram.is_some() && quantization == Quantization::None {
        return Err(bad(
            "quantization_always_ram",
            "only applies when quantization is not \"none\"",
        ));
    }

    Ok(BuildSettings {
        m,
        ef_construct,
        indexing_threshold_kb,
        indexing_origin,
        full_scan_threshold_kb,
        full_scan_origin,
        on_disk: get_bool("on_disk")?,
        hnsw_on_disk: get_bool("hnsw_on_disk")?,
        quantization,
        quantization_always_ram,
        wal: get_bool("wal")?.unwrap_or(true),
    })
}

fn parse_compression(text: &str) -> EngineResult<CompressionRatio> {
    match text.to_ascii_lowercase().as_str() {
        "x4" => Ok(CompressionRatio::X4),
        "x8" => Ok(CompressionRatio::X8),
        "x16" => Ok(CompressionRatio::X16),
        "x32" => Ok(CompressionRatio::X32),
        "x64" => Ok(CompressionRatio::X64),
        _ => Err(bad(
            "pq_compression",
            format!("`{text}`: expected x4, x8, x16, x32 or x64"),
        )),
    }
}

fn compression_name(ratio: CompressionRatio) -> &'static str {
    match ratio {
        CompressionRatio::X4 => "x4",
        CompressionRatio::X8 => "x8",
        CompressionRatio::X16 => "x16",
        CompressionRatio::X32 => "x32",
        CompressionRatio::X64 => "x64",
    }
}

/// The shard configuration for the resolved settings.
fn edge_config(settings: &BuildSettings, dim: usize, distance: Distance) -> EdgeConfig {
    let hnsw = HnswIndexConfig {
        m: settings.m,
        ef_construct: settings.ef_construct,
        full_scan_threshold: to_usize(settings.full_scan_threshold_kb),
        // `memory` overrides the deprecated `on_disk` flag of the default config.
        memory: settings.hnsw_on_disk.map(Memory::from_on_disk),
        ..HnswIndexConfig::default()
    };
    let mut vector = EdgeVectorParams::builder(dim, qdrant_distance(distance)).hnsw_config(hnsw);
    if let Some(on_disk) = settings.on_disk {
        vector = vector.memory(Memory::from_on_disk(on_disk));
    }
    if let Some(quantization) = quantization_config(settings) {
        vector = vector.quantization_config(quantization);
    }
    EdgeConfig::builder()
        // The empty name is Qdrant's default (unnamed) vector, queried with `using: None`.
        .vector("", vector.build())
        .hnsw_config(hnsw)
        .optimizers(EdgeOptimizersConfig {
            indexing_threshold: Some(to_usize(settings.indexing_threshold_kb)),
            ..EdgeOptimizersConfig::default()
        })
        .wal_enabled(settings.wal)
        .build()
}

fn to_usize(v: u64) -> usize {
    usize::try_from(v).unwrap_or(usize::MAX)
}

/// Builds the quantization config. The structs still carry the deprecated `always_ram` field,
/// which a struct literal must name; it stays `None` and the placement goes through `memory`.
#[allow(deprecated)]
fn quantization_config(settings: &BuildSettings) -> Option<QuantizationConfig> {
    let memory = settings
        .quantization_always_ram
        .map(|ram| if ram { Memory::Pinned } else { Memory::Cold });
    match settings.quantization {
        Quantization::None => None,
        Quantization::Int8 => Some(
            ScalarQuantizationConfig {
                r#type: ScalarType::Int8,
                quantile: None,
                always_ram: None,
                memory,
            }
            .into(),
        ),
        Quantization::Binary => Some(
            BinaryQuantizationConfig {
                always_ram: None,
                memory,
                encoding: None,
                query_encoding: None,
            }
            .into(),
        ),
        Quantization::Product(compression) => Some(
            ProductQuantizationConfig {
                compression,
                always_ram: None,
                memory,
            }
            .into(),
        ),
    }
}

fn qdrant_distance(distance: Distance) -> QdrantDistance {
    match distance {
        Distance::Euclidean => QdrantDistance::Euclid,
        // Qdrant normalises vectors for cosine; its score is the similarity, 1 - distance.
        Distance::Angular => QdrantDistance::Cosine,
        Distance::Dot => QdrantDistance::Dot,
    }
}

/// Validates search parameters. `quantized` is `None` before `create`, when it is unknown
/// whether `rescore`/`oversampling` would have any effect.
fn search_params(params: &ParamMap, quantized: Option<bool>) -> EngineResult<Option<SearchParams>> {
    params.reject_unknown(SEARCH_PARAMS).map_err(param_err)?;
    if params.is_empty() {
        return Ok(None);
    }
    let hnsw_ef = params
        .get_u64("hnsw_ef")
        .map_err(param_err)?
        .map(|ef| {
            if ef == 0 {
                Err(bad("hnsw_ef", "must be at least 1"))
            } else {
                Ok(to_usize(ef))
            }
        })
        .transpose()?;
    let exact = params
        .get_bool("exact")
        .map_err(param_err)?
        .unwrap_or(false);
    let rescore = params.get_bool("rescore").map_err(param_err)?;
    let oversampling = params.get_f64("oversampling").map_err(param_err)?;
    if let Some(x) = oversampling
        && (x.is_nan() || x < 1.0 || x.is_infinite())
    {
        return Err(bad("oversampling", "must be a number >= 1.0"));
    }
    let wants_quantization = rescore.is_some() || oversampling.is_some();
    if wants_quantization && quantized == Some(false) {
        let name = if rescore.is_some() {
            "rescore"
        } else {
            "oversampling"
        };
        return Err(bad(
            name,
            "has no effect: the collection was built without quantization",
        ));
    }
    Ok(Some(SearchParams {
        hnsw_ef,
        exact,
        quantization: wants_quantization.then_some(QuantizationSearchParams {
            ignore: false,
            rescore,
            oversampling,
        }),
        ..SearchParams::default()
    }))
}

fn check_query_dim(expected: usize, got: usize) -> EngineResult<()> {
    if expected == got {
        Ok(())
    } else {
        Err(EngineError::op(
            ENGINE,
            "search",
            format!("query has {got} dimensions, the collection {expected}"),
        ))
    }
}

fn collect_neighbors(points: &[ScoredPoint], out: &mut Vec<Neighbor>) -> EngineResult<()> {
    out.reserve(points.len());
    for point in points {
        let id = match point.id {
            QdrantPointId::NumId(id) => id,
            // This adapter only ever writes numeric ids.
            QdrantPointId::Uuid(uuid) => {
                return Err(EngineError::op(
                    ENGINE,
                    "search",
                    format!("unexpected UUID point id {uuid}"),
                ));
            }
        };
        // Euclid scores are plain L2 distances, cosine and dot are similarities: the engine's
        // own numbers, passed through.
        out.push(Neighbor {
            id,
            score: point.score,
        });
    }
    Ok(())
}

/// The build settings and thresholds, for `describe` and the index report.
fn settings_details(shard: &Shard) -> Map<String, Value> {
    let s = &shard.settings;
    let vector_bytes = (shard.dim as u64) * 4;
    let mut out = Map::new();
    out.insert("shard_path".into(), json!(shard.path.display().to_string()));
    out.insert("dim".into(), json!(shard.dim));
    out.insert("distance".into(), json!(shard.distance.as_str()));
    out.insert("expected_points".into(), json!(shard.expected_points));
    out.insert("m".into(), json!(s.m));
    out.insert("ef_construct".into(), json!(s.ef_construct));
    out.insert(
        "indexing_threshold_kb".into(),
        json!({
            "value": s.indexing_threshold_kb,
            "origin": s.indexing_origin.as_str(),
            // Qdrant reads 0 as "never index".
            "indexing_disabled": s.indexing_threshold_kb == 0,
            "min_points_to_index": (s.indexing_threshold_kb * 1024).div_ceil(vector_bytes),
        }),
    );
    out.insert(
        "full_scan_threshold_kb".into(),
        json!({
            "value": s.full_scan_threshold_kb,
            "origin": s.full_scan_origin.as_str(),
            "min_points_for_hnsw_search": s.full_scan_threshold_kb * 1024 / vector_bytes,
        }),
    );
    out.insert("on_disk".into(), json!(s.on_disk));
    out.insert("hnsw_on_disk".into(), json!(s.hnsw_on_disk));
    out.insert("quantization".into(), json!(s.quantization.label()));
    out.insert(
        "quantization_always_ram".into(),
        json!(s.quantization_always_ram),
    );
    out.insert("wal".into(), json!(s.wal));
    out
}

/// What the files of one segment say about its index.
#[derive(Debug, Default)]
struct SegmentDetail {
    id: String,
    /// `plain`, `hnsw`, or `unknown` when the segment state could not be read.
    index: String,
    appendable: Option<bool>,
    /// From the graph's `hnsw_config.json`: vectors in the graph, and the full-scan
    /// threshold converted to a number of vectors.
    indexed_vectors: Option<u64>,
    full_scan_threshold_vectors: Option<u64>,
    m: Option<u64>,
    ef_construct: Option<u64>,
}

impl SegmentDetail {
    /// True when searches of this (indexed) segment go to a brute-force scan.
    fn full_scan(&self) -> bool {
        match (self.indexed_vectors, self.full_scan_threshold_vectors) {
            (Some(n), Some(threshold)) => n < threshold || self.m == Some(0),
            _ => false,
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "index": self.index,
            "appendable": self.appendable,
            "indexed_vectors": self.indexed_vectors,
            "full_scan_threshold_vectors": self.full_scan_threshold_vectors,
            "m": self.m,
            "ef_construct": self.ef_construct,
            "full_scan": self.full_scan(),
        })
    }
}

/// Reads each segment's state file and HNSW graph config from the shard directory. The edge
/// API only reports shard-wide totals, and the per-segment graph configs hold the one number
/// that decides between graph and scan: the full-scan threshold in vectors.
fn segment_details(shard_path: &Path) -> Vec<SegmentDetail> {
    let Ok(entries) = fs::read_dir(shard_path.join("segments")) else {
        return Vec::new();
    };
    let mut out: Vec<SegmentDetail> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| !n.starts_with('.'))
        })
        .map(|dir| read_segment_detail(&dir))
        .collect();
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

fn read_segment_detail(dir: &Path) -> SegmentDetail {
    let mut detail = SegmentDetail {
        id: dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        index: "unknown".into(),
        ..SegmentDetail::default()
    };
    if let Some(state) = read_json(&dir.join("segment.json")) {
        let vector = state
            .pointer("/config/vector_data")
            .and_then(Value::as_object)
            .and_then(|m| m.values().next());
        if let Some(vector) = vector {
            let index_type = vector.pointer("/index/type").and_then(Value::as_str);
            detail.index = index_type.unwrap_or("unknown").to_string();
            // Mirrors `VectorDataConfig::is_appendable`: a plain index over a storage type
            // that can grow.
            detail.appendable = vector
                .get("storage_type")
                .and_then(Value::as_str)
                .map(|storage| {
                    index_type == Some("plain")
                        && matches!(storage, "Memory" | "ChunkedMmap" | "InRamChunkedMmap")
                });
        }
    }
    if let Some(graph) = find_file(dir, "hnsw_config.json").and_then(|p| read_json(&p)) {
        detail.indexed_vectors = graph.get("indexed_vector_count").and_then(Value::as_u64);
        detail.full_scan_threshold_vectors =
            graph.get("full_scan_threshold").and_then(Value::as_u64);
        detail.m = graph.get("m").and_then(Value::as_u64);
        detail.ef_construct = graph.get("ef_construct").and_then(Value::as_u64);
    }
    detail
}

fn read_json(path: &Path) -> Option<Value> {
    let text = fs::read(path).ok()?;
    serde_json::from_slice(&text).ok()
}

/// Depth-first search for a file name under `dir`.
fn find_file(dir: &Path, name: &str) -> Option<PathBuf> {
    let entries = fs::read_dir(dir).ok()?;
    let mut subdirs = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            subdirs.push(path);
        } else if entry.file_name() == name {
            return Some(path);
        }
    }
    subdirs.into_iter().find_map(|d| find_file(&d, name))
}


#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;

    #[test]
    fn thresholds_scale_with_the_dataset_and_never_reach_zero() {
        // 50k x 50 floats = 9765 KB, below Qdrant's 10 000 KB defaults.
        let (indexing, full_scan) = derived_thresholds(50_000, 50);
        assert_eq!((indexing, full_scan), (976, 488));
        assert_eq!(derived_thresholds(0, 8), (1, 1));
        assert_eq!(derived_thresholds(10_000_000, 128), (10_000, 10_000));
    }

    #[test]
    fn unknown_and_ignored_parameters_are_rejected() {
        let mut p = ParamMap::new();
        p.insert("ef".into(), ParamValue::Int(4));
        assert!(build_settings(&p, 100, 8).is_err());
        assert!(search_params(&p, None).is_err());

        let mut p = ParamMap::new();
        p.insert("pq_compression".into(), ParamValue::Str("x8".into()));
        assert!(build_settings(&p, 100, 8).is_err());

        let mut p = ParamMap::new();
        p.insert("rescore".into(), ParamValue::Bool(true));
        assert!(search_params(&p, Some(false)).is_err());
        assert!(search_params(&p, Some(true)).is_ok());
    }
}
