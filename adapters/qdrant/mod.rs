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
use crate::engine::{Batch, Query, CollectionSpec, ConcurrentWrites, ConnectOptions, EngineError, EngineResult, Footprint, IndexProgress, IndexReport, Neighbor, PointId, VectorEngine};
use crate::params::ParamMap;
use crate::types::ElementType;

mod client;
mod endpoint;
mod errors;
mod info;
mod local;
mod ready;
mod report;
mod requests;
#[cfg(test)]
mod tests;

use crate::adapters::support::process::listener_pid;
use endpoint::Endpoint;
use info::{optimizer_json, status_name};
use requests::{
    bad_param, check_update, create_request, grpc_filter, range_is_exact, search_request_params,
    to_neighbors,
};

const ENGINE: &str = crate::adapters::meta::qdrant::NAME;
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
        self.wait_for_index()
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

    fn search(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        out.clear();
        let op = query.operation();
        let col = self.collection(op)?;
        query.check(ENGINE, col.dim)?;
        if query.k == 0 {
            return Ok(());
        }
        let filter = query.filter.map(grpc_filter);
        let request = self.query_request(&col.name, query.vector, query.k, filter);
        let response = self.run_query(op, request)?;
        to_neighbors(response.result, out)
    }

    fn batch_search(&self, batch: Batch<'_>) -> EngineResult<Vec<Vec<Neighbor>>> {
        let op = batch.operation();
        batch.check(ENGINE, self.collection(op)?.dim)?;
        self.query_batches(op, batch)
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
        crate::adapters::support::per_thread::forget(self.owner);
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
