//! Qdrant server over gRPC, through the official `qdrant-client` crate.
//!
//! The [`VectorEngine`] trait is synchronous while `qdrant-client` is async, so the adapter
//! owns a private multi-thread tokio runtime and blocks on it for every call. Searches take
//! `&self` and may run from many client threads at once: `Runtime::block_on` and the client's
//! channel pool are both shareable.
//!
//! Qdrant's defaults are tuned for big production collections and trap small benchmarks:
//! a segment is only indexed once it holds `indexing_threshold` KB of vectors, and a segment
//! below `full_scan_threshold` KB is answered by a brute-force scan. Both default to about
//! 10-20 MB, so a 100k × 32 dataset would never touch HNSW. Unless the user sets them, both
//! are derived from the dataset size by the rule shared with the `qdrant-edge` adapter
//! ([`crate::adapters::qdrant_settings::derived_thresholds`]), and
//! [`VectorEngine::wait_until_ready`] reports whenever some searches may still be full scans.
//! All parameters are parsed and recorded by [`crate::adapters::qdrant_settings`]; this
//! adapter only translates the parsed settings into gRPC builders.
//!
//! Files: `endpoint` (the `--url`), `errors` (gRPC failure classes), `requests` (requests from the
//! shared settings), `client` (connecting, uploads), `info` and `report` (what the result file
//! records); the trait impl is here. Parameters are parsed by [`crate::adapters::qdrant_settings`].

use std::future::Future;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use qdrant_client::qdrant::point_id::PointIdOptions;
use qdrant_client::qdrant::{
    BinaryQuantizationBuilder, CollectionInfo, CollectionStatus, CompressionRatio,
    CreateCollectionBuilder, CreateFieldIndexCollectionBuilder, FieldType, Filter, DeleteCollectionBuilder, DeletePointsBuilder, Distance as QDistance,
    HnswConfigDiffBuilder, OptimizersConfigDiffBuilder, PointStruct, PointsOperationResponse,
    ProductQuantizationBuilder, QuantizationSearchParamsBuilder, QueryBatchPointsBuilder,
    QueryPoints, QueryPointsBuilder, ScalarQuantizationBuilder, ScoredPoint, SearchParams,
    SearchParamsBuilder, UpdateCollectionBuilder, UpdateStatus, UpsertPointsBuilder,
    VectorParamsBuilder, quantization_config,
};
use qdrant_client::{Payload, Qdrant, QdrantError};
use serde_json::{Map, Value, json};
use tokio::runtime::Runtime;
use tokio::task::JoinSet;

use crate::adapters::qdrant_settings::filter as qfilter;
use crate::adapters::qdrant_settings::{
    BuildSettings, PqCompression, Quantization, SearchSettings, SettingsError, Target,
};
use crate::distance::Distance;
use crate::filter::{Attributes, Predicate};
use crate::engine::{
    CollectionSpec, ConcurrentWrites, ConnectOptions, EngineError, EngineResult, Footprint,
    IndexProgress, IndexReport, Neighbor, PointId, VectorEngine,
};
use crate::params::ParamMap;
use crate::types::ElementType;

mod client;
mod endpoint;
mod errors;
mod info;
mod local;
mod report;
mod requests;
#[cfg(test)]
mod tests;

use crate::adapters::support::process::listener_pid;
use crate::adapters::support::rows;
use endpoint::Endpoint;
use info::{optimizer_json, status_name};
use requests::{
    bad_param, check_update, create_request, grpc_filter, range_is_exact, search_request_params,
    to_neighbors,
};

/// What this engine declares about itself (summary, server, conformance settings).
pub mod meta;

/// Named parameter sets and sweeps of this engine (`[sets.NAME]` tables).
pub const CONFIG: &str = include_str!("config.toml");

const ENGINE: &str = "qdrant";
/// Qdrant's gRPC port; 6333 is its REST port, which this client cannot talk to.
const DEFAULT_URL: &str = "http://localhost:6334";
/// Used when the runner passes no per-request timeout (`ConnectOptions::default()`).
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Connecting is quick or hopeless; a short cap makes `open` fail fast on a dead address.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Upper bound for `wait_until_ready`: HNSW builds of large sets take long, but not forever.
const READY_TIMEOUT: Duration = Duration::from_secs(3600);
/// Consecutive green polls required before the collection counts as ready. The optimizer
/// is scheduled asynchronously after an update, so one green reading may only mean that it
/// has not started yet.
const GREEN_CONFIRMATIONS: u32 = 3;
const POLL_FIRST: Duration = Duration::from_millis(100);
const POLL_MAX: Duration = Duration::from_secs(2);
/// How often a long index wait prints a line, so that it does not look like a hang.
const PROGRESS_EVERY: Duration = Duration::from_secs(60);
/// Queries per `query_batch` request: bounds the message size and the server's work per call.
const BATCH_QUERY_CHUNK: usize = 256;
/// Ids per delete request (ids are small; this only keeps messages bounded).
const DELETE_CHUNK: usize = 10_000;
/// gRPC status codes (`tonic::Code` discriminants; tonic is not a direct dependency).
mod grpc_code {
    pub const CANCELLED: i32 = 1;
    pub const UNKNOWN: i32 = 2;
    pub const INVALID_ARGUMENT: i32 = 3;
    pub const DEADLINE_EXCEEDED: i32 = 4;
    pub const NOT_FOUND: i32 = 5;
    pub const ALREADY_EXISTS: i32 = 6;
    pub const PERMISSION_DENIED: i32 = 7;
    pub const INTERNAL: i32 = 13;
    pub const UNAVAILABLE: i32 = 14;
    pub const UNAUTHENTICATED: i32 = 16;
}

/// Connects to the Qdrant server named by `opts.url` (default `http://localhost:6334`) and
/// checks that it answers and accepts the credentials, so that a wrong address or key fails
/// here rather than in the middle of a timed phase.
pub fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(QdrantEngine::connect(opts)?))
}

/// The collection this adapter created.
#[derive(Debug)]
struct Collection {
    name: String,
    dim: usize,
    /// Parsed by [`crate::adapters::qdrant_settings`], like the edge adapter's.
    settings: BuildSettings,
    /// Points sent through `insert_batch` (ids are stable row numbers, so no double counting).
    loaded: u64,
    /// The points' attributes (sent as payloads), when the run searches with filters.
    attributes: Option<std::sync::Arc<Attributes>>,
    /// The payload indexes created: (field, schema).
    payload_indexes: Vec<(String, &'static str)>,
}

/// A Qdrant server reached over gRPC.
pub struct QdrantEngine {
    /// Private runtime: every trait call blocks on it (the trait is synchronous).
    rt: Runtime,
    client: Qdrant,
    /// The client's settings, for the per-thread search clients (`local.rs`).
    client_config: qdrant_client::config::QdrantConfig,
    /// This engine's number among the per-thread search clients.
    owner: u64,
    /// The URL without credentials, for messages and `describe`.
    url: String,
    endpoint: Endpoint,
    api_key_set: bool,
    server_version: String,
    server_commit: Option<String>,
    recreate: bool,
    batch_size: usize,
    upload_parallel: usize,
    request_timeout: Duration,
    server_pid: Option<u32>,
    server_storage: Option<PathBuf>,
    /// PID found through /proc, looked up once on first use.
    discovered_pid: OnceLock<Option<u32>>,
    collection: Option<Collection>,
    search_params: Option<SearchParams>,
    /// The parsed search settings, for `describe`.
    search: SearchSettings,
}

impl QdrantEngine {
    /// Deletes `ids` (`wait=true`) in requests of `DELETE_CHUNK`.
    fn delete_points(&self, ids: &[PointId]) -> EngineResult<()> {
        let col = self.collection("delete")?;
        for chunk in ids.chunks(DELETE_CHUNK) {
            let request = DeletePointsBuilder::new(col.name.as_str())
                .points(chunk.to_vec())
                .wait(true)
                .timeout(self.timeout_secs());
            let response = self.run("delete", self.client.delete_points(request))?;
            check_update("delete", &response)?;
        }
        Ok(())
    }
}

impl ConcurrentWrites for QdrantEngine {
    fn upsert(&self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.upload("upsert", ids, vectors)
    }

    fn delete(&self, ids: &[PointId]) -> EngineResult<()> {
        self.delete_points(ids)
    }
}

impl VectorEngine for QdrantEngine {
    fn name(&self) -> &str {
        ENGINE
    }

    fn version(&self) -> String {
        self.server_version.clone()
    }

    fn check_build_params(&self, spec: &CollectionSpec) -> EngineResult<()> {
        BuildSettings::for_collection(spec, Target::Server).map(|_| ())
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        let settings = BuildSettings::for_collection(spec, Target::Server)?;
        let name = spec.name.clone();
        if self.run("create", self.client.collection_exists(name.as_str()))? {
            if !self.recreate {
                return Err(EngineError::op(
                    ENGINE,
                    "create",
                    format!(
                        "collection `{name}` already exists on {}; pass --recreate to drop it \
                         first, or use another collection name",
                        self.url
                    ),
                ));
            }
            self.run(
                "create",
                self.client.delete_collection(
                    DeleteCollectionBuilder::new(name.as_str()).timeout(self.timeout_secs()),
                ),
            )?;
        }
        let request = create_request(&settings, &name, spec.distance, self.timeout_secs());
        let response = self.run("create", self.client.create_collection(request))?;
        if !response.result {
            return Err(EngineError::op(
                ENGINE,
                "create",
                format!("server did not confirm the creation of `{name}`"),
            ));
        }
        let payload_indexes = self.create_payload_indexes(&name, spec.attributes.as_deref())?;
        self.collection = Some(Collection {
            name,
            dim: spec.dim,
            settings,
            loaded: 0,
            attributes: spec.attributes.clone(),
            payload_indexes,
        });
        self.search_params = None;
        self.search = SearchSettings::default();
        Ok(())
    }

    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.upload("insert", ids, vectors)?;
        if let Some(col) = self.collection.as_mut() {
            col.loaded += ids.len() as u64;
        }
        Ok(())
    }

    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        let col = self.collection("wait_until_ready")?;
        let started = Instant::now();
        let mut last_progress = started;
        let mut poll = POLL_FIRST;
        let mut green_streak = 0u32;
        let mut last_counts = None;
        let mut polls = 0u64;
        let mut triggered = false;
        let info = loop {
            let info = self.info("wait_until_ready", &col.name)?;
            polls += 1;
            if let Some(s) = &info.optimizer_status
                && !s.ok
            {
                return Err(EngineError::op(
                    ENGINE,
                    "wait_until_ready",
                    format!("optimizer error: {}", s.error),
                ));
            }
            let status = CollectionStatus::try_from(info.status).ok();
            if status == Some(CollectionStatus::Red) {
                return Err(EngineError::op(
                    ENGINE,
                    "wait_until_ready",
                    "collection status is red: an operation failed on the server; check its log",
                ));
            }
            // Grey: optimizations are pending but were never started (after a restart).
            // An update of the optimizer config, even an empty one, starts them.
            if status == Some(CollectionStatus::Grey) && !triggered {
                self.run(
                    "wait_until_ready",
                    self.client.update_collection(
                        UpdateCollectionBuilder::new(col.name.as_str())
                            .optimizers_config(OptimizersConfigDiffBuilder::default()),
                    ),
                )?;
                triggered = true;
            }
            let points = info.points_count.unwrap_or(0);
            let indexed = info.indexed_vectors_count.unwrap_or(0);
            let queue_empty = info.update_queue.as_ref().is_none_or(|q| q.length == 0);
            let counts = (points, indexed, info.segments_count);
            if status == Some(CollectionStatus::Green) && queue_empty {
                green_streak = if last_counts == Some(counts) {
                    green_streak + 1
                } else {
                    1
                };
            } else {
                green_streak = 0;
            }
            last_counts = Some(counts);
            // Green means the optimizer has nothing left to do. If some points are still
            // unindexed they sit in a segment below the indexing threshold and will stay so:
            // waiting longer would not help, the report flags them instead.
            if green_streak >= GREEN_CONFIRMATIONS {
                break info;
            }
            if started.elapsed() > READY_TIMEOUT {
                return Err(EngineError::op(
                    ENGINE,
                    "wait_until_ready",
                    format!(
                        "index not ready after {}s: status {}, {indexed} of {points} vectors \
                         indexed; check the server log or use a smaller dataset",
                        READY_TIMEOUT.as_secs(),
                        status_name(info.status)
                    ),
                ));
            }
            if last_progress.elapsed() >= PROGRESS_EVERY {
                eprintln!(
                    "qdrant: waiting for the index: status {}, {indexed}/{points} vectors \
                     indexed, {} segments, {:.0}s",
                    status_name(info.status),
                    info.segments_count,
                    started.elapsed().as_secs_f64()
                );
                last_progress = Instant::now();
            }
            std::thread::sleep(poll);
            poll = (poll * 2).min(POLL_MAX);
        };

        let points = info.points_count.unwrap_or(0);
        let indexed = info.indexed_vectors_count.unwrap_or(0);
        let config = info.config.as_ref();
        let hnsw = config.and_then(|c| c.hnsw_config.as_ref());
        let fst_kb = hnsw
            .and_then(|h| h.full_scan_threshold)
            .unwrap_or(col.settings.full_scan_threshold.kb);
        let indexing_kb = config
            .and_then(|c| c.optimizer_config.as_ref())
            .and_then(|o| o.indexing_threshold)
            .unwrap_or(col.settings.indexing_threshold.kb);
        let m = hnsw.and_then(|h| h.m).or(Some(col.settings.m as u64));
        // Qdrant converts the KB threshold into vectors with the stored vector size.
        let fst_vectors = fst_kb.saturating_mul(1024) / (col.dim as u64 * 4).max(1);
        let mut reasons = Vec::new();
        if indexed < points {
            reasons.push(format!(
                "{} of {points} points are not in an HNSW segment",
                points - indexed
            ));
        }
        if indexing_kb == 0 {
            reasons.push("indexing is disabled (indexing_threshold = 0)".to_string());
        }
        if m == Some(0) {
            reasons.push("m = 0: no HNSW graph".to_string());
        }
        if info.segments_count > 0 && points / info.segments_count <= fst_vectors {
            reasons.push(format!(
                "average segment ({} points) is within full_scan_threshold ({fst_vectors} vectors)",
                points / info.segments_count
            ));
        }
        let mut details = Map::new();
        details.insert("segments_count".into(), json!(info.segments_count));
        details.insert("status".into(), json!(status_name(info.status)));
        details.insert("optimizer_status".into(), optimizer_json(&info));
        details.insert("indexing_threshold_kb".into(), json!(indexing_kb));
        details.insert("full_scan_threshold_kb".into(), json!(fst_kb));
        details.insert("full_scan_threshold_vectors".into(), json!(fst_vectors));
        // The settings as parsed (thresholds with their origin), the record the edge adapter
        // writes too; the figures above are what the server reports it applied.
        details.insert("build_settings".into(), col.settings.to_json());
        details.insert("points_sent".into(), json!(col.loaded));
        details.insert("status_polls".into(), json!(polls));
        details.insert("optimizers_triggered".into(), json!(triggered));
        details.insert("full_scan_reasons".into(), json!(reasons));
        Ok(IndexReport {
            indexed_vectors: info.indexed_vectors_count,
            points: info.points_count,
            may_full_scan: !reasons.is_empty(),
            details,
        })
    }

    fn upsert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.upload("upsert", ids, vectors)
    }

    fn delete_batch(&mut self, ids: &[PointId]) -> EngineResult<()> {
        self.delete_points(ids)
    }

    /// The gRPC client is shared by every thread (each call its own request), and writes
    /// wait for Qdrant's acknowledgement (`wait=true`).
    fn concurrent_writes(&self) -> Option<&dyn ConcurrentWrites> {
        Some(self)
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        let quantized = self.collection.as_ref().map(|c| c.settings.quantized());
        let search = SearchSettings::parse(params, quantized).map_err(bad_param)?;
        self.search_params = search_request_params(&search);
        self.search = search;
        Ok(())
    }

    fn search(&self, query: &[f32], k: usize, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        out.clear();
        let col = self.collection("search")?;
        rows::check(ENGINE, "search", col.dim, 1, query.len())?;
        if k == 0 {
            return Ok(());
        }
        let request = self.query_request(&col.name, query, k, None);
        let response = self.run_query("search", request)?;
        to_neighbors(response.result, out)
    }

    fn batch_search(
        &self,
        queries: &[f32],
        dim: usize,
        k: usize,
    ) -> EngineResult<Vec<Vec<Neighbor>>> {
        let col = self.collection("batch search")?;
        let rows = queries.len() / dim.max(1);
        rows::check(ENGINE, "batch search", col.dim, rows, queries.len())?;
        self.query_batches("batch search", queries, k, None)
    }

    /// Qdrant expresses keyword equality and integer ranges natively (`match`, `range`). Its
    /// gRPC ranges are doubles, so a bound beyond ±2^53 (not exactly representable) is refused.
    fn check_filter(&self, attributes: &Attributes, predicate: &Predicate) -> EngineResult<()> {
        predicate
            .compile(attributes)
            .map_err(|e| EngineError::bad_param(ENGINE, "filter", e))?;
        if !range_is_exact(predicate) {
            return Err(EngineError::bad_param(
                ENGINE,
                "filter",
                format!(
                    "`{predicate}`: a range bound beyond ±2^53 is not exact in Qdrant's gRPC \
                     range (a double)"
                ),
            ));
        }
        Ok(())
    }

    fn search_filtered(
        &self,
        query: &[f32],
        k: usize,
        filter: &Predicate,
        out: &mut Vec<Neighbor>,
    ) -> EngineResult<()> {
        out.clear();
        let col = self.collection("filtered search")?;
        rows::check(ENGINE, "filtered search", col.dim, 1, query.len())?;
        if k == 0 {
            return Ok(());
        }
        let request = self.query_request(&col.name, query, k, Some(grpc_filter(filter)));
        let response = self.run_query("filtered search", request)?;
        to_neighbors(response.result, out)
    }

    fn batch_search_filtered(
        &self,
        queries: &[f32],
        dim: usize,
        k: usize,
        filters: &[Predicate],
    ) -> EngineResult<Vec<Vec<Neighbor>>> {
        let col = self.collection("filtered batch search")?;
        if dim != col.dim || queries.len() != filters.len() * dim {
            return Err(rows::mismatch(
                ENGINE,
                "filtered batch search",
                col.dim,
                filters.len(),
                queries.len(),
            ));
        }
        self.query_batches("filtered batch search", queries, k, Some(filters))
    }

    /// With `--server-storage`, from `<storage>/collections/<name>`: index = the segments'
    /// `vector_index*` directories (HNSW graph files), total = the whole collection directory
    /// (segments of every shard + WAL). Without it neither is measurable: the gRPC API reports
    /// no sizes (telemetry is REST-only and not wrapped by the client).
    fn footprint(&self) -> EngineResult<Footprint> {
        self.measure_footprint()
    }

    fn server_pid(&self) -> Option<u32> {
        if self.server_pid.is_some() {
            return self.server_pid;
        }
        *self.discovered_pid.get_or_init(|| {
            if self.endpoint.is_local() {
                listener_pid(self.endpoint.port)
            } else {
                None
            }
        })
    }

    fn in_process(&self) -> bool {
        false
    }

    fn stored_element_type(&self) -> ElementType {
        self.collection
            .as_ref()
            .map_or(ElementType::Float32, |c| c.settings.datatype)
    }

    fn describe(&self) -> Map<String, Value> {
        self.describe_engine()
    }

    /// The server indexes in the background: `indexed_vectors_count` trails `points_count`
    /// while its optimizers catch up with writes.
    fn index_progress(&self) -> Option<IndexProgress> {
        let col = self.collection.as_ref()?;
        let info = self.info("index progress", &col.name).ok()?;
        Some(IndexProgress {
            points: info.points_count?,
            indexed_vectors: info.indexed_vectors_count?,
        })
    }

    fn close(&mut self) -> EngineResult<()> {
        local::forget(self.owner);
        if let Some(col) = self.collection.take() {
            // `result == false` means it was already gone, which is the goal anyway.
            self.run(
                "close",
                self.client.delete_collection(
                    DeleteCollectionBuilder::new(col.name.as_str()).timeout(self.timeout_secs()),
                ),
            )?;
        }
        Ok(())
    }
}
