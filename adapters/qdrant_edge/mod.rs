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

use crate::adapters::qdrant_settings::{
    BuildSettings, PqCompression, Quantization, SearchSettings, SettingsError, Target,
};
use crate::distance::Distance;
use crate::engine::{
    CollectionSpec, ConnectOptions, EngineError, EngineResult, Footprint, IndexReport, Neighbor,
    PointId, VectorEngine,
};
use crate::params::ParamMap;

/// The engine's named parameter sets and sweeps.
pub const CONFIG: &str = include_str!("config.toml");

/// Registry name of the engine.
const ENGINE: &str = "qdrant-edge";

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
            search: SearchSettings::default(),
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
        let settings = BuildSettings::parse(
            &spec.build_params,
            Target::Edge,
            spec.expected_points,
            spec.dim,
        )
        .map_err(bad_param)?;
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
        self.shard = Some(Shard {
            shard,
            path,
            dim: spec.dim,
            distance: spec.distance,
            settings,
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
        let quantized = self.shard.as_ref().map(|s| s.settings.quantized());
        let search = SearchSettings::parse(params, quantized).map_err(bad_param)?;
        self.search_params = search_params(&search);
        self.search = search;
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
        Ok(Footprint::new(index, Ok(total)))
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

/// A parameter rejected by [`crate::adapters::qdrant_settings`], as this engine reports it.
fn bad_param(err: SettingsError) -> EngineError {
    err.into_engine(Target::Edge)
}

/// The edge crate's ratio for a product-quantization compression.
fn compression_ratio(compression: PqCompression) -> CompressionRatio {
    match compression {
        PqCompression::X4 => CompressionRatio::X4,
        PqCompression::X8 => CompressionRatio::X8,
        PqCompression::X16 => CompressionRatio::X16,
        PqCompression::X32 => CompressionRatio::X32,
        PqCompression::X64 => CompressionRatio::X64,
    }
}

/// The shard configuration for the parsed settings: a translation, no decisions.
pub(crate) fn edge_config(settings: &BuildSettings, distance: Distance) -> EdgeConfig {
    let hnsw = HnswIndexConfig {
        m: settings.m,
        ef_construct: settings.ef_construct,
        full_scan_threshold: to_usize(settings.full_scan_threshold.kb),
        // `memory` overrides the deprecated `on_disk` flag of the default config.
        memory: settings.hnsw_on_disk.map(Memory::from_on_disk),
        ..HnswIndexConfig::default()
    };
    let mut vector =
        EdgeVectorParams::builder(settings.dim, qdrant_distance(distance)).hnsw_config(hnsw);
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
            indexing_threshold: Some(to_usize(settings.indexing_threshold.kb)),
            ..EdgeOptimizersConfig::default()
        })
        // Unset: on, as in Qdrant.
        .wal_enabled(settings.wal.unwrap_or(true))
        .build()
}

/// KB thresholds are u64 in the shared settings; beyond `usize` (32-bit hosts only) the
/// largest value has the same effect.
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
                compression: compression_ratio(compression),
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

/// The engine's search parameters for the parsed settings; `None` (send nothing) when nothing
/// is set, so Qdrant's own defaults apply.
pub(crate) fn search_params(search: &SearchSettings) -> Option<SearchParams> {
    if search.is_default() {
        return None;
    }
    Some(SearchParams {
        hnsw_ef: search.hnsw_ef,
        exact: search.exact.unwrap_or(false),
        indexed_only: search.indexed_only.unwrap_or(false),
        quantization: search
            .has_quantization_params()
            .then_some(QuantizationSearchParams {
                ignore: false,
                rescore: search.rescore,
                oversampling: search.oversampling,
            }),
        ..SearchParams::default()
    })
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

/// The build settings and thresholds, for `describe` and the index report. `build_settings`
/// is [`BuildSettings::to_json`], the record the server adapter writes too.
fn settings_details(shard: &Shard) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("shard_path".into(), json!(shard.path.display().to_string()));
    out.insert("distance".into(), json!(shard.distance.as_str()));
    out.insert("build_settings".into(), shard.settings.to_json());
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

    fn map(pairs: &[(&str, ParamValue)]) -> ParamMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    fn spec(
        dir: &tempfile::TempDir,
        n: usize,
        dim: usize,
        build_params: ParamMap,
    ) -> CollectionSpec {
        CollectionSpec {
            name: "t".into(),
            dim,
            distance: Distance::Euclidean,
            expected_points: n,
            build_params,
            work_dir: dir.path().to_path_buf(),
        }
    }

    /// The real engine records exactly what the shared parser produced, in `describe` and in
    /// the index report, and the shard it created carries those values.
    #[test]
    fn describe_and_report_record_the_shared_settings() {
        let s = |t: &str| ParamValue::Str(t.into());
        for (n, dim, params) in [
            (20_000, 64, ParamMap::new()),
            (
                5_000,
                32,
                map(&[
                    ("m", ParamValue::Int(8)),
                    ("ef_construct", ParamValue::Int(64)),
                ]),
            ),
            (
                1_000,
                16,
                map(&[
                    ("quantization", s("product")),
                    ("pq_compression", ParamValue::Int(16)),
                ]),
            ),
            (
                50_000,
                50,
                map(&[
                    ("quantization", s("int8")),
                    ("indexing_threshold", ParamValue::Int(0)),
                ]),
            ),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let mut engine = QdrantEdge::new(&ConnectOptions::default());
            engine.create(&spec(&dir, n, dim, params.clone())).unwrap();
            let want = BuildSettings::parse(&params, Target::Edge, n, dim).unwrap();
            assert_eq!(
                engine.describe()["build_settings"],
                want.to_json(),
                "{params:?}"
            );
            let report = engine.wait_until_ready().unwrap();
            assert_eq!(
                report.details["build_settings"],
                want.to_json(),
                "{params:?}"
            );

            // What the engine was configured with is the parsed settings.
            let config = edge_config(&want, Distance::Euclidean);
            let hnsw = config.hnsw_config.unwrap();
            assert_eq!((hnsw.m, hnsw.ef_construct), (want.m, want.ef_construct));
            assert_eq!(hnsw.full_scan_threshold as u64, want.full_scan_threshold.kb);
            let optimizers = config.optimizers.unwrap();
            assert_eq!(
                optimizers.indexing_threshold,
                Some(want.indexing_threshold.kb as usize)
            );
            let quantization = config.vectors[""].quantization_config.clone();
            match want.quantization {
                Quantization::None => assert!(quantization.is_none()),
                Quantization::Int8 => {
                    assert!(matches!(quantization, Some(QuantizationConfig::Scalar(_))))
                }
                Quantization::Binary => {
                    assert!(matches!(quantization, Some(QuantizationConfig::Binary(_))))
                }
                Quantization::Product(c) => match quantization {
                    Some(QuantizationConfig::Product(p)) => {
                        assert_eq!(p.product.compression, compression_ratio(c))
                    }
                    other => panic!("{other:?}"),
                },
            }
            engine.close().unwrap();
        }
    }

    #[test]
    fn pq_compression_16_builds_a_product_x16_shard() {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = QdrantEdge::new(&ConnectOptions::default());
        let params = map(&[
            ("quantization", ParamValue::Str("product".into())),
            ("pq_compression", ParamValue::Int(16)),
        ]);
        engine.create(&spec(&dir, 1_000, 16, params)).unwrap();
        assert_eq!(
            engine.describe()["build_settings"]["quantization"],
            "product-x16"
        );
    }

    #[test]
    fn search_settings_are_the_shared_ones() {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = QdrantEdge::new(&ConnectOptions::default());
        engine.create(&spec(&dir, 100, 8, ParamMap::new())).unwrap();
        let params = map(&[
            ("hnsw_ef", ParamValue::Int(32)),
            ("indexed_only", ParamValue::Bool(true)),
        ]);
        engine.set_search_params(&params).unwrap();
        let want = SearchSettings::parse(&params, Some(false)).unwrap();
        assert_eq!(engine.describe()["search_params"], want.to_json());
        let sent = engine.search_params.clone().unwrap();
        assert_eq!(
            (sent.hnsw_ef, sent.indexed_only, sent.exact),
            (Some(32), true, false)
        );
        // rescore on a collection without quantization has no effect: refused.
        let err = engine
            .set_search_params(&map(&[("rescore", ParamValue::Bool(true))]))
            .unwrap_err();
        assert!(matches!(err, EngineError::BadParameter { .. }), "{err}");
        engine.set_search_params(&ParamMap::new()).unwrap();
        assert!(engine.search_params.is_none());
    }

    #[test]
    fn unknown_and_ignored_parameters_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = QdrantEdge::new(&ConnectOptions::default());
        for bad in [
            map(&[("ef", ParamValue::Int(4))]),
            map(&[("pq_compression", ParamValue::Str("x8".into()))]),
            map(&[("shard_number", ParamValue::Int(1))]),
        ] {
            let err = engine.create(&spec(&dir, 100, 8, bad)).unwrap_err();
            match err {
                EngineError::BadParameter { engine, .. } => assert_eq!(engine, "qdrant-edge"),
                other => panic!("{other}"),
            }
        }
    }
}
