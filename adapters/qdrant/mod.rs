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

use std::collections::HashSet;
use std::fs;
use std::future::Future;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use qdrant_client::qdrant::point_id::PointIdOptions;
use qdrant_client::qdrant::{
    BinaryQuantizationBuilder, CollectionInfo, CollectionStatus, CompressionRatio,
    CreateCollectionBuilder, DeleteCollectionBuilder, DeletePointsBuilder, Distance as QDistance,
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

use crate::adapters::qdrant_settings::{
    BuildSettings, PqCompression, Quantization, SearchSettings, SettingsError, Target,
};
use crate::distance::Distance;
use crate::engine::{
    CollectionSpec, ConnectOptions, EngineError, EngineResult, Footprint, IndexReport, Neighbor,
    PointId, VectorEngine,
};
use crate::params::ParamMap;

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

/// Scheme, host and port of the server URL (for TLS, messages and PID lookup).
#[derive(Debug, Clone, PartialEq)]
struct Endpoint {
    https: bool,
    host: String,
    port: u16,
}

impl Endpoint {
    /// Parses `http(s)://host[:port][/...]`. A missing port is what the gRPC transport would
    /// use (80/443), not 6334: the URL is passed to the client unchanged.
    fn parse(url: &str) -> Result<Endpoint, String> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| "expected http://HOST:PORT or https://HOST:PORT".to_string())?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "http" => false,
            "https" => true,
            other => return Err(format!("unsupported scheme `{other}`: use http or https")),
        };
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let authority = authority.rsplit_once('@').map_or(authority, |(_, a)| a);
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6
                .split_once(']')
                .ok_or_else(|| "unclosed `[` in IPv6 address".to_string())?;
            (host, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err("no host".to_string());
        }
        let port = match port {
            Some(p) => p.parse::<u16>().map_err(|_| format!("bad port `{p}`"))?,
            None if https => 443,
            None => 80,
        };
        Ok(Endpoint {
            https,
            host: host.to_string(),
            port,
        })
    }

    /// True when the server runs on this machine, so its PID can be looked up.
    fn is_local(&self) -> bool {
        let h = self.host.to_ascii_lowercase();
        h == "localhost" || h == "::1" || h == "0.0.0.0" || h.starts_with("127.")
    }
}

/// The URL without any `user:password@` part, for messages and result files.
fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    match authority.rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://***@{host}{tail}"),
        None => url.to_string(),
    }
}

/// A parameter rejected by [`crate::adapters::qdrant_settings`], as this engine reports it.
fn bad_param(err: SettingsError) -> EngineError {
    err.into_engine(Target::Server)
}

/// The client's ratio for a product-quantization compression.
fn compression_ratio(compression: PqCompression) -> CompressionRatio {
    match compression {
        PqCompression::X4 => CompressionRatio::X4,
        PqCompression::X8 => CompressionRatio::X8,
        PqCompression::X16 => CompressionRatio::X16,
        PqCompression::X32 => CompressionRatio::X32,
        PqCompression::X64 => CompressionRatio::X64,
    }
}

/// The create request for the parsed settings: a translation, no decisions. The deprecated
/// `on_disk` / `always_ram` flags are used rather than the newer `memory` placement because
/// servers before 1.19 ignore `memory` silently.
pub(crate) fn create_request(
    settings: &BuildSettings,
    name: &str,
    distance: Distance,
    timeout: u64,
) -> CreateCollectionBuilder {
    let distance = match distance {
        Distance::Euclidean => QDistance::Euclid,
        Distance::Angular => QDistance::Cosine,
        Distance::Dot => QDistance::Dot,
    };
    let mut vectors = VectorParamsBuilder::new(settings.dim as u64, distance);
    if let Some(on_disk) = settings.on_disk {
        vectors = vectors.on_disk(on_disk);
    }
    // m and ef_construct are sent even at their defaults, so the record is what the server
    // was told rather than what it is assumed to default to.
    let mut hnsw = HnswConfigDiffBuilder::default()
        .m(settings.m as u64)
        .ef_construct(settings.ef_construct as u64)
        .full_scan_threshold(settings.full_scan_threshold.kb);
    if let Some(on_disk) = settings.hnsw_on_disk {
        hnsw = hnsw.on_disk(on_disk);
    }
    let optimizers =
        OptimizersConfigDiffBuilder::default().indexing_threshold(settings.indexing_threshold.kb);
    let mut request = CreateCollectionBuilder::new(name)
        .vectors_config(vectors)
        .hnsw_config(hnsw)
        .optimizers_config(optimizers)
        .timeout(timeout);
    let quantization: Option<quantization_config::Quantization> = match settings.quantization {
        Quantization::None => None,
        Quantization::Int8 => {
            let mut q = ScalarQuantizationBuilder::default();
            if let Some(ram) = settings.quantization_always_ram {
                q = q.always_ram(ram);
            }
            Some(q.into())
        }
        Quantization::Binary => {
            let mut q = BinaryQuantizationBuilder::default();
            if let Some(ram) = settings.quantization_always_ram {
                q = q.always_ram(ram);
            }
            Some(q.into())
        }
        Quantization::Product(compression) => {
            let mut q = ProductQuantizationBuilder::new(compression_ratio(compression).into());
            if let Some(ram) = settings.quantization_always_ram {
                q = q.always_ram(ram);
            }
            Some(q.into())
        }
    };
    if let Some(q) = quantization {
        request = request.quantization_config(q);
    }
    if let Some(n) = settings.shard_number {
        request = request.shard_number(n);
    }
    if let Some(n) = settings.replication_factor {
        request = request.replication_factor(n);
    }
    if let Some(n) = settings.write_consistency_factor {
        request = request.write_consistency_factor(n);
    }
    request
}

/// The request's search parameters for the parsed settings; `None` (send nothing) when
/// nothing is set, so the server's defaults apply.
pub(crate) fn search_request_params(search: &SearchSettings) -> Option<SearchParams> {
    if search.is_default() {
        return None;
    }
    let mut builder = SearchParamsBuilder::default();
    if let Some(ef) = search.hnsw_ef {
        builder = builder.hnsw_ef(ef as u64);
    }
    if let Some(exact) = search.exact {
        builder = builder.exact(exact);
    }
    if let Some(indexed_only) = search.indexed_only {
        builder = builder.indexed_only(indexed_only);
    }
    if search.has_quantization_params() {
        let mut q = QuantizationSearchParamsBuilder::default();
        if let Some(rescore) = search.rescore {
            q = q.rescore(rescore);
        }
        if let Some(o) = search.oversampling {
            q = q.oversampling(o);
        }
        builder = builder.quantization(q);
    }
    Some(builder.build())
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
}

/// A Qdrant server reached over gRPC.
pub struct QdrantEngine {
    /// Private runtime: every trait call blocks on it (the trait is synchronous).
    rt: Runtime,
    client: Qdrant,
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
    fn connect(opts: &ConnectOptions) -> EngineResult<QdrantEngine> {
        let raw_url = opts
            .url
            .as_deref()
            .unwrap_or(DEFAULT_URL)
            .trim()
            .to_string();
        let url = redact_url(&raw_url);
        let endpoint = Endpoint::parse(&raw_url).map_err(|e| {
            EngineError::bad_param(ENGINE, "url", format!("`{url}` is not a server URL: {e}"))
        })?;
        let request_timeout = if opts.timeout.is_zero() {
            DEFAULT_REQUEST_TIMEOUT
        } else {
            opts.timeout
        };
        let connect_timeout = request_timeout.min(MAX_CONNECT_TIMEOUT);
        let workers = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .clamp(2, 16);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name("qdrant-client")
            .enable_all()
            .build()
            .map_err(|e| EngineError::op(ENGINE, "connect", format!("cannot start tokio: {e}")))?;

        // The client's own compatibility check is skipped: it prints to stdout and runs on a
        // throwaway runtime. The health check below does the same job and reports the version.
        let mut config = Qdrant::from_url(&raw_url)
            .api_key(opts.api_key.clone())
            .timeout(request_timeout)
            .connect_timeout(connect_timeout)
            .skip_compatibility_check();
        // Several connections so that parallel uploads and client threads do not all queue
        // on one HTTP/2 connection.
        config.set_pool_size(opts.upload_parallel.clamp(4, 32));
        let client = config.build().map_err(|e| {
            EngineError::bad_param(ENGINE, "url", format!("`{url}` is not usable: {e}"))
        })?;

        let health = rt.block_on(async {
            tokio::time::timeout(connect_timeout * 3, client.health_check()).await
        });
        let reply = match health {
            Err(_) => {
                return Err(EngineError::Unreachable {
                    engine: ENGINE.into(),
                    target: url.clone(),
                    message: format!(
                        "no answer within {}s. {}",
                        (connect_timeout * 3).as_secs(),
                        start_hint(&endpoint)
                    ),
                });
            }
            Ok(Err(e)) => return Err(open_error(&url, &endpoint, e)),
            Ok(Ok(reply)) => reply,
        };
        // The health check needs no key, so probe a call that does: a wrong or missing key
        // must fail here, not after the dataset has been loaded.
        rt.block_on(client.list_collections())
            .map_err(|e| open_error(&url, &endpoint, e))?;

        Ok(QdrantEngine {
            rt,
            client,
            url,
            endpoint,
            api_key_set: opts.api_key.is_some(),
            server_version: reply.version,
            server_commit: reply.commit,
            recreate: opts.recreate,
            batch_size: opts.batch_size.max(1),
            upload_parallel: opts.upload_parallel.max(1),
            request_timeout,
            server_pid: opts.server_pid,
            server_storage: opts.server_storage.clone(),
            discovered_pid: OnceLock::new(),
            collection: None,
            search_params: None,
            search: SearchSettings::default(),
        })
    }

    /// Runs one client call on the runtime and maps its error.
    fn run<T>(
        &self,
        operation: &str,
        fut: impl Future<Output = Result<T, QdrantError>>,
    ) -> EngineResult<T> {
        self.rt
            .block_on(fut)
            .map_err(|e| classify(&self.url, operation, e))
    }

    fn collection(&self, operation: &str) -> EngineResult<&Collection> {
        self.collection.as_ref().ok_or_else(|| {
            EngineError::op(ENGINE, operation, "no collection: create() was not called")
        })
    }

    fn timeout_secs(&self) -> u64 {
        self.request_timeout.as_secs().max(1)
    }

    /// Upserts with `wait=true`, split into requests of `batch_size` points of which up to
    /// `upload_parallel` are in flight at once (spawned, so they encode on worker threads).
    fn upload(&self, operation: &str, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let col = self.collection(operation)?;
        check_rows(operation, col.dim, ids.len(), vectors.len())?;
        let wave = self.batch_size * self.upload_parallel;
        let mut start = 0;
        while start < ids.len() {
            let end = (start + wave).min(ids.len());
            let mut requests = Vec::with_capacity(self.upload_parallel);
            let mut chunk_start = start;
            while chunk_start < end {
                let chunk_end = (chunk_start + self.batch_size).min(end);
                let points: Vec<PointStruct> = ids[chunk_start..chunk_end]
                    .iter()
                    .zip(vectors[chunk_start * col.dim..chunk_end * col.dim].chunks_exact(col.dim))
                    .map(|(&id, v)| PointStruct::new(id, v, Payload::new()))
                    .collect();
                requests.push(
                    UpsertPointsBuilder::new(col.name.clone(), points)
                        .wait(true)
                        .timeout(self.timeout_secs()),
                );
                chunk_start = chunk_end;
            }
            let client = self.client.clone();
            let results = self.rt.block_on(async move {
                let mut set = JoinSet::new();
                for request in requests {
                    let client = client.clone();
                    set.spawn(async move { client.upsert_points(request).await });
                }
                // Join every request before reporting, so none is left running behind an error.
                let mut results = Vec::new();
                while let Some(joined) = set.join_next().await {
                    results.push(joined);
                }
                results
            });
            for joined in results {
                let response = joined.map_err(|e| {
                    EngineError::op(ENGINE, operation, format!("upload task failed: {e}"))
                })?;
                let response = response.map_err(|e| classify(&self.url, operation, e))?;
                check_update(operation, &response)?;
            }
            start = end;
        }
        Ok(())
    }

    /// One query-API request for `query` with the current search parameters.
    fn query_request(&self, name: &str, query: &[f32], k: usize) -> QueryPoints {
        let mut request = QueryPointsBuilder::new(name)
            .query(query.to_vec())
            .limit(k as u64)
            .with_payload(false)
            .with_vectors(false);
        if let Some(params) = &self.search_params {
            request = request.params(params.clone());
        }
        request.build()
    }

    fn info(&self, operation: &str, name: &str) -> EngineResult<CollectionInfo> {
        let response = self.run(operation, self.client.collection_info(name))?;
        response
            .result
            .ok_or_else(|| EngineError::op(ENGINE, operation, "server returned no collection info"))
    }

    fn describe_collection(&self, col: &Collection, out: &mut Map<String, Value>) {
        out.insert("collection".into(), json!(col.name));
        out.insert("build_settings".into(), col.settings.to_json());
        match self.info("describe", &col.name) {
            Ok(info) => {
                out.insert("collection_info".into(), info_json(&info));
            }
            Err(e) => {
                out.insert("collection_info_error".into(), json!(e.to_string()));
            }
        }
    }
}

/// What to do when no server answers at the URL.
fn start_hint(endpoint: &Endpoint) -> String {
    let mut hint = String::from(
        "Start a Qdrant server (e.g. `docker run -p 6333:6333 -p 6334:6334 qdrant/qdrant`) \
         or check --url: it must be the gRPC port (default http://localhost:6334)",
    );
    if endpoint.port == 6333 {
        hint.push_str("; 6333 is Qdrant's REST port, gRPC listens on 6334");
    }
    if endpoint.https {
        hint.push_str("; for https, check that the server has TLS enabled");
    }
    hint
}

/// Maps an error from `open` (health check, credential probe): transport failures become
/// `Unreachable` with the start/--url advice.
fn open_error(url: &str, endpoint: &Endpoint, err: QdrantError) -> EngineError {
    match classify(url, "connect", err) {
        EngineError::Unreachable {
            engine,
            target,
            message,
        } => EngineError::Unreachable {
            engine,
            target,
            message: format!("{message}. {}", start_hint(endpoint)),
        },
        other => other,
    }
}

/// True for a status that means the transport failed rather than the server refusing.
fn is_transport_failure(code: i32, message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    // qdrant-client reports a failed (re)connect as INTERNAL "Failed to connect to ...".
    code == grpc_code::UNAVAILABLE
        || m.contains("failed to connect")
        || ((code == grpc_code::INTERNAL
            || code == grpc_code::UNKNOWN
            || code == grpc_code::CANCELLED)
            && (m.contains("transport error")
                || m.contains("connection")
                || m.contains("broken pipe")
                || m.contains("h2 protocol error")))
}

/// Maps a client error to an [`EngineError`], keeping the server's own message.
fn classify(url: &str, operation: &str, err: QdrantError) -> EngineError {
    let status = match &err {
        QdrantError::ResponseError { status } => status,
        QdrantError::ResourceExhaustedError {
            status,
            retry_after_seconds,
        } => {
            return EngineError::op(
                ENGINE,
                operation,
                format!(
                    "server is rate limiting ({}); retry after {retry_after_seconds}s",
                    status.message()
                ),
            );
        }
        QdrantError::InvalidUri(e) => {
            return EngineError::bad_param(ENGINE, "url", format!("`{url}` is not a URL: {e}"));
        }
        QdrantError::Io(e) => {
            return EngineError::Unreachable {
                engine: ENGINE.into(),
                target: url.into(),
                message: format!("I/O error during {operation}: {e}"),
            };
        }
        other => return EngineError::op(ENGINE, operation, other),
    };
    let code = status.code() as i32;
    let message = status.message();
    if is_transport_failure(code, message) {
        let message = if operation == "connect" {
            message.to_string()
        } else {
            format!(
                "lost the connection during {operation} ({message}); the server may have \
                 stopped, restarted or run out of memory: check its log"
            )
        };
        return EngineError::Unreachable {
            engine: ENGINE.into(),
            target: url.into(),
            message,
        };
    }
    let message = match code {
        grpc_code::UNAUTHENTICATED | grpc_code::PERMISSION_DENIED => {
            format!("authentication failed: {message}; check QDRANT_API_KEY / --api-key-env")
        }
        grpc_code::DEADLINE_EXCEEDED => {
            format!("request timed out ({message}); raise --timeout if the server is just slow")
        }
        grpc_code::INVALID_ARGUMENT => format!("server rejected the request: {message}"),
        grpc_code::NOT_FOUND => format!("not found: {message}"),
        grpc_code::ALREADY_EXISTS => format!("{message}; pass --recreate to replace it"),
        _ => format!("{message} (gRPC status {:?})", status.code()),
    };
    EngineError::op(ENGINE, operation, message)
}

/// Checks that `floats` holds exactly `rows` vectors of `dim`.
fn check_rows(operation: &str, dim: usize, rows: usize, floats: usize) -> EngineResult<()> {
    if rows.checked_mul(dim) != Some(floats) {
        return Err(EngineError::op(
            ENGINE,
            operation,
            format!(
                "dimension mismatch: {floats} floats for {rows} vectors, but the collection \
                 has dimension {dim}"
            ),
        ));
    }
    Ok(())
}

/// With `wait=true` an update must come back completed; anything else means the points may
/// not be searchable yet.
fn check_update(operation: &str, response: &PointsOperationResponse) -> EngineResult<()> {
    let status = response.result.as_ref().map(|r| r.status);
    if status == Some(UpdateStatus::Completed as i32) {
        return Ok(());
    }
    let name = status
        .and_then(|s| UpdateStatus::try_from(s).ok())
        .map_or("missing", |s| s.as_str_name());
    Err(EngineError::op(
        ENGINE,
        operation,
        format!("update not completed (status {name}) although wait=true was requested"),
    ))
}

/// Converts scored points into neighbours, best first as the server ordered them.
fn to_neighbors(points: Vec<ScoredPoint>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
    out.reserve(points.len());
    for p in points {
        match p.id.and_then(|id| id.point_id_options) {
            Some(PointIdOptions::Num(id)) => out.push(Neighbor { id, score: p.score }),
            Some(PointIdOptions::Uuid(u)) => {
                return Err(EngineError::op(
                    ENGINE,
                    "search",
                    format!("point {u} has a UUID id; ragdbeval only writes numeric ids"),
                ));
            }
            None => {
                return Err(EngineError::op(
                    ENGINE,
                    "search",
                    "server returned a point without id",
                ));
            }
        }
    }
    Ok(())
}

fn status_name(status: i32) -> &'static str {
    match CollectionStatus::try_from(status) {
        Ok(CollectionStatus::Green) => "green",
        Ok(CollectionStatus::Yellow) => "yellow",
        Ok(CollectionStatus::Grey) => "grey",
        Ok(CollectionStatus::Red) => "red",
        _ => "unknown",
    }
}

fn optimizer_json(info: &CollectionInfo) -> Value {
    match &info.optimizer_status {
        Some(s) if s.ok => json!("ok"),
        Some(s) => json!(format!("error: {}", s.error)),
        None => Value::Null,
    }
}

/// The server's view of the collection, for `describe` and the index report.
fn info_json(info: &CollectionInfo) -> Value {
    let config = info.config.as_ref();
    let params = config.and_then(|c| c.params.as_ref());
    let hnsw = config.and_then(|c| c.hnsw_config.as_ref());
    let optimizers = config.and_then(|c| c.optimizer_config.as_ref());
    json!({
        "status": status_name(info.status),
        "optimizer_status": optimizer_json(info),
        "points": info.points_count,
        "indexed_vectors": info.indexed_vectors_count,
        "segments": info.segments_count,
        "update_queue_length": info.update_queue.as_ref().map(|q| q.length),
        "warnings": info.warnings.iter().map(|w| w.message.clone()).collect::<Vec<_>>(),
        "cluster": {
            "shard_number": params.map(|p| p.shard_number),
            "replication_factor": params.and_then(|p| p.replication_factor),
            "write_consistency_factor": params.and_then(|p| p.write_consistency_factor),
        },
        "hnsw": {
            "m": hnsw.and_then(|h| h.m),
            "ef_construct": hnsw.and_then(|h| h.ef_construct),
            "full_scan_threshold_kb": hnsw.and_then(|h| h.full_scan_threshold),
        },
        "indexing_threshold_kb": optimizers.and_then(|o| o.indexing_threshold),
        "quantization": config
            .and_then(|c| c.quantization_config.as_ref())
            .and_then(|q| q.quantization.as_ref())
            .map(|q| match q {
                quantization_config::Quantization::Scalar(_) => "int8",
                quantization_config::Quantization::Product(_) => "product",
                quantization_config::Quantization::Binary(_) => "binary",
                quantization_config::Quantization::Turboquant(_) => "turbo",
            }),
    })
}

/// Socket inodes of TCP listeners on `port`, from /proc/net/tcp and tcp6 (Linux).
fn listening_inodes(port: u16) -> HashSet<u64> {
    let mut inodes = HashSet::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.len() < 10 || fields[3] != "0A" {
                continue; // 0A = TCP_LISTEN
            }
            let local_port = fields[1]
                .rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok());
            if local_port != Some(port) {
                continue;
            }
            if let Ok(inode) = fields[9].parse::<u64>()
                && inode != 0
            {
                inodes.insert(inode);
            }
        }
    }
    inodes
}

/// PID of the process listening on TCP `port` on this host, if /proc lets us see it.
/// A `docker-proxy` listener is not the server, so it yields `None` rather than a PID whose
/// memory would be reported as Qdrant's.
fn find_listener_pid(port: u16) -> Option<u32> {
    let inodes = listening_inodes(port);
    if inodes.is_empty() {
        return None;
    }
    for entry in fs::read_dir("/proc").ok()?.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = fs::read_dir(entry.path().join("fd")) else {
            continue; // not ours to inspect, or gone
        };
        for fd in fds.flatten() {
            let Ok(target) = fs::read_link(fd.path()) else {
                continue;
            };
            let inode = target
                .to_str()
                .and_then(|t| t.strip_prefix("socket:["))
                .and_then(|t| t.strip_suffix(']'))
                .and_then(|t| t.parse::<u64>().ok());
            if inode.is_some_and(|i| inodes.contains(&i)) {
                let comm = fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
                if comm.trim() == "docker-proxy" {
                    return None;
                }
                return Some(pid);
            }
        }
    }
    None
}

impl VectorEngine for QdrantEngine {
    fn name(&self) -> &str {
        ENGINE
    }

    fn version(&self) -> String {
        self.server_version.clone()
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        if spec.dim == 0 {
            return Err(EngineError::op(
                ENGINE,
                "create",
                "dimension must be at least 1",
            ));
        }
        let settings = BuildSettings::parse(
            &spec.build_params,
            Target::Server,
            spec.expected_points,
            spec.dim,
        )
        .map_err(bad_param)?;
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
        self.collection = Some(Collection {
            name,
            dim: spec.dim,
            settings,
            loaded: 0,
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
        check_rows("search", col.dim, 1, query.len())?;
        if k == 0 {
            return Ok(());
        }
        let request = self.query_request(&col.name, query, k);
        let response = self.run("search", self.client.query(request))?;
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
        check_rows("batch search", col.dim, rows, queries.len())?;
        let mut results = Vec::with_capacity(rows);
        if k == 0 {
            results.resize_with(rows, Vec::new);
            return Ok(results);
        }
        for chunk in queries.chunks(col.dim * BATCH_QUERY_CHUNK) {
            let requests: Vec<QueryPoints> = chunk
                .chunks_exact(col.dim)
                .map(|q| self.query_request(&col.name, q, k))
                .collect();
            let sent = requests.len();
            let response = self.run(
                "batch search",
                self.client
                    .query_batch(QueryBatchPointsBuilder::new(col.name.as_str(), requests)),
            )?;
            if response.result.len() != sent {
                return Err(EngineError::op(
                    ENGINE,
                    "batch search",
                    format!("sent {sent} queries, got {} results", response.result.len()),
                ));
            }
            for batch in response.result {
                let mut out = Vec::with_capacity(k);
                to_neighbors(batch.result, &mut out)?;
                results.push(out);
            }
        }
        Ok(results)
    }

    /// With `--server-storage`, from `<storage>/collections/<name>`: index = the segments'
    /// `vector_index*` directories (HNSW graph files), total = the whole collection directory
    /// (segments of every shard + WAL). Without it neither is measurable: the gRPC API reports
    /// no sizes (telemetry is REST-only and not wrapped by the client).
    fn footprint(&self) -> EngineResult<Footprint> {
        let Some(storage) = &self.server_storage else {
            return Ok(Footprint::unmeasured(
                "needs --server-storage (the server's storage directory on this machine); the \
                 gRPC API reports no sizes",
            ));
        };
        let col = self.collection("footprint")?;
        let dir = storage.join("collections").join(&col.name);
        if !dir.is_dir() {
            return Err(EngineError::op(
                ENGINE,
                "footprint",
                format!(
                    "{} does not exist: --server-storage must be the server's storage directory \
                     (the one holding `collections/`), on this machine",
                    dir.display()
                ),
            ));
        }
        let index = crate::storage::dirs_bytes(
            ENGINE,
            &dir,
            |name| name.starts_with("vector_index"),
            "collections/<name>/**/segments/*/vector_index* (HNSW graph files)",
        )?
        .ok_or_else(|| "no segment has a vector_index directory".to_string());
        let total = crate::storage::dir_bytes(
            ENGINE,
            &dir,
            "collections/<name> directory: segments (vectors, index, payload) + WAL",
        )?;
        Ok(Footprint::new(index, Ok(total)))
    }

    fn server_pid(&self) -> Option<u32> {
        if self.server_pid.is_some() {
            return self.server_pid;
        }
        *self.discovered_pid.get_or_init(|| {
            if self.endpoint.is_local() {
                find_listener_pid(self.endpoint.port)
            } else {
                None
            }
        })
    }

    fn in_process(&self) -> bool {
        false
    }

    fn describe(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("server_version".into(), json!(self.server_version));
        out.insert("server_commit".into(), json!(self.server_commit));
        out.insert("url".into(), json!(self.url));
        out.insert("transport".into(), json!("gRPC (qdrant-client)"));
        out.insert("tls".into(), json!(self.endpoint.https));
        out.insert(
            "api_key".into(),
            json!(if self.api_key_set { "set" } else { "none" }),
        );
        out.insert("batch_size".into(), json!(self.batch_size));
        out.insert("upload_parallel".into(), json!(self.upload_parallel));
        out.insert("search_params".into(), self.search.to_json());
        if let Some(col) = &self.collection {
            self.describe_collection(col, &mut out);
        }
        if let Some(dir) = &self.server_storage {
            out.insert("server_storage".into(), json!(dir.display().to_string()));
        }
        out.insert(
            "memory".into(),
            json!({
                "source": "none",
                "note": "qdrant-client's gRPC API exposes no telemetry; server memory comes from \
                         sampling the server process (--server-pid or a local listener)",
            }),
        );
        out
    }

    fn close(&mut self) -> EngineResult<()> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;

    #[test]
    fn endpoints_parse() {
        let e = Endpoint::parse("http://localhost:6334").unwrap();
        assert_eq!(
            (e.https, e.host.as_str(), e.port),
            (false, "localhost", 6334)
        );
        assert!(e.is_local());
        let e = Endpoint::parse("https://user:pw@xyz.cloud.qdrant.io/path").unwrap();
        assert_eq!(
            (e.https, e.host.as_str(), e.port),
            (true, "xyz.cloud.qdrant.io", 443)
        );
        assert!(!e.is_local());
        let e = Endpoint::parse("http://[::1]:7000").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("::1", 7000));
        assert!(e.is_local());
        assert!(Endpoint::parse("localhost:6334").is_err());
        assert!(Endpoint::parse("ftp://x:1").is_err());
        assert!(Endpoint::parse("http://x:notaport").is_err());
        assert_eq!(redact_url("https://u:secret@h:1/p"), "https://***@h:1/p");
        assert_eq!(redact_url("http://h:1"), "http://h:1");
    }

    fn map(pairs: &[(&str, ParamValue)]) -> ParamMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    /// An adapter whose client points at a port that refuses connections: enough for
    /// everything that must not need a server (parsing, recording, request translation).
    fn offline_engine() -> QdrantEngine {
        let url = "http://127.0.0.1:1";
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        // The client's channels are created on the runtime.
        let client = {
            let _guard = rt.enter();
            Qdrant::from_url(url)
                .timeout(Duration::from_secs(5))
                .connect_timeout(Duration::from_secs(2))
                .skip_compatibility_check()
                .build()
                .unwrap()
        };
        QdrantEngine {
            rt,
            client,
            url: url.into(),
            endpoint: Endpoint::parse(url).unwrap(),
            api_key_set: false,
            server_version: "none".into(),
            server_commit: None,
            recreate: false,
            batch_size: 100,
            upload_parallel: 1,
            request_timeout: Duration::from_secs(5),
            server_pid: None,
            server_storage: None,
            discovered_pid: OnceLock::new(),
            collection: None,
            search_params: None,
            search: SearchSettings::default(),
        }
    }

    fn collection_spec(
        dir: &std::path::Path,
        n: usize,
        dim: usize,
        build_params: ParamMap,
    ) -> CollectionSpec {
        CollectionSpec {
            name: "c1".into(),
            dim,
            distance: Distance::Euclidean,
            expected_points: n,
            build_params,
            work_dir: dir.to_path_buf(),
        }
    }

    fn without_engine_only(mut v: Value) -> Value {
        if let Some(obj) = v.as_object_mut() {
            obj.remove("engine_only");
        }
        v
    }

    /// The two Qdrant adapters record the same settings for the same parameters and dataset
    /// (the real qdrant-edge engine on one side), and reject the same parameters with the same
    /// message. Before the shared parser, the edge recorded thresholds of 1/10 and 1/20 of the
    /// data and the server 1/100 for both, and the edge refused `pq_compression = 16`.
    #[test]
    fn edge_and_server_record_the_same_settings() {
        let s = |t: &str| ParamValue::Str(t.into());
        let grid = [
            ParamMap::new(),
            map(&[
                ("m", ParamValue::Int(32)),
                ("ef_construct", ParamValue::Int(256)),
            ]),
            map(&[
                ("quantization", s("product")),
                ("pq_compression", ParamValue::Int(16)),
            ]),
            map(&[("quantization", s("product")), ("pq_compression", s("x16"))]),
            map(&[
                ("quantization", s("binary")),
                ("quantization_always_ram", ParamValue::Bool(true)),
            ]),
            map(&[
                ("indexing_threshold", ParamValue::Int(10_000)),
                ("full_scan_threshold", ParamValue::Int(10_000)),
            ]),
            // Rejected by both:
            map(&[("pq_compression", ParamValue::Int(16))]),
            map(&[
                ("quantization", s("product")),
                ("pq_compression", ParamValue::Int(12)),
            ]),
            map(&[("ef_construct", ParamValue::Int(2))]),
            map(&[("ef_construction", ParamValue::Int(100))]),
        ];
        let mut server = offline_engine();
        for (n, dim) in [(5_000usize, 32usize), (20_000, 64), (50_000, 50)] {
            for params in &grid {
                let dir = tempfile::tempdir().unwrap();
                let mut edge =
                    crate::adapters::qdrant_edge::open(&ConnectOptions::default()).unwrap();
                let edge_created =
                    edge.create(&collection_spec(dir.path(), n, dim, params.clone()));
                // The server adapter parses before it talks to the server: a parameter error
                // comes back as such, valid settings get as far as the (missing) server.
                let server_created =
                    server.create(&collection_spec(dir.path(), n, dim, params.clone()));
                match (edge_created, server_created) {
                    (Ok(()), Err(EngineError::Unreachable { .. })) => {
                        let settings =
                            BuildSettings::parse(params, Target::Server, n, dim).unwrap();
                        server.collection = Some(Collection {
                            name: "c1".into(),
                            dim,
                            settings,
                            loaded: 0,
                        });
                        let recorded_edge = edge.describe()["build_settings"].clone();
                        let recorded_server = server.describe()["build_settings"].clone();
                        assert_eq!(
                            without_engine_only(recorded_edge),
                            without_engine_only(recorded_server),
                            "{params:?} {n}x{dim}"
                        );
                    }
                    (
                        Err(EngineError::BadParameter {
                            engine: e1,
                            param: p1,
                            message: m1,
                        }),
                        Err(EngineError::BadParameter {
                            engine: e2,
                            param: p2,
                            message: m2,
                        }),
                    ) => {
                        assert_eq!((e1.as_str(), e2.as_str()), ("qdrant-edge", "qdrant"));
                        assert_eq!((p1, m1), (p2, m2), "{params:?}");
                    }
                    (edge, server) => {
                        panic!("{params:?} {n}x{dim}: edge {edge:?}, server {server:?}")
                    }
                }
            }
        }
    }

    /// The create request carries exactly the parsed settings, pq_compression = 16 included.
    #[test]
    fn create_request_translates_the_shared_settings() {
        let s = |t: &str| ParamValue::Str(t.into());
        for (params, compression) in [
            (ParamMap::new(), None),
            (
                map(&[
                    ("quantization", s("product")),
                    ("pq_compression", ParamValue::Int(16)),
                ]),
                Some(CompressionRatio::X16),
            ),
            (
                map(&[("quantization", s("pq")), ("pq_compression", s("x4"))]),
                Some(CompressionRatio::X4),
            ),
            (
                map(&[
                    ("quantization", s("int8")),
                    ("m", ParamValue::Int(0)),
                    ("shard_number", ParamValue::Int(2)),
                ]),
                None,
            ),
        ] {
            let settings = BuildSettings::parse(&params, Target::Server, 20_000, 64).unwrap();
            let request = create_request(&settings, "c", Distance::Angular, 30).build();
            let hnsw = request.hnsw_config.unwrap();
            assert_eq!(hnsw.m, Some(settings.m as u64));
            assert_eq!(hnsw.ef_construct, Some(settings.ef_construct as u64));
            assert_eq!(
                hnsw.full_scan_threshold,
                Some(settings.full_scan_threshold.kb)
            );
            assert_eq!(
                request.optimizers_config.unwrap().indexing_threshold,
                Some(settings.indexing_threshold.kb)
            );
            assert_eq!(request.shard_number, settings.shard_number);
            let quantization = request.quantization_config.and_then(|q| q.quantization);
            match (settings.quantization, quantization) {
                (Quantization::None, None) => {}
                (Quantization::Int8, Some(quantization_config::Quantization::Scalar(_))) => {}
                (Quantization::Product(_), Some(quantization_config::Quantization::Product(p))) => {
                    assert_eq!(Some(p.compression), compression.map(|c| c as i32));
                }
                (want, got) => panic!("{want:?} sent as {got:?}"),
            }
            match request.vectors_config.and_then(|v| v.config) {
                Some(qdrant_client::qdrant::vectors_config::Config::Params(p)) => {
                    assert_eq!(p.size, 64);
                    assert_eq!(p.distance, QDistance::Cosine as i32);
                }
                other => panic!("{other:?}"),
            }
        }
    }

    /// Search settings go through the shared parser offline, and `describe` records them.
    #[test]
    fn search_settings_are_the_shared_ones() {
        let mut engine = offline_engine();
        let params = map(&[
            ("hnsw_ef", ParamValue::Int(64)),
            ("indexed_only", ParamValue::Bool(true)),
        ]);
        engine.set_search_params(&params).unwrap();
        let sent = engine.search_params.clone().unwrap();
        assert_eq!(
            (sent.hnsw_ef, sent.indexed_only, sent.exact),
            (Some(64), Some(true), None)
        );
        assert_eq!(
            engine.describe()["search_params"],
            SearchSettings::parse(&params, None).unwrap().to_json()
        );
        // On a collection without quantization, rescore is refused as on qdrant-edge.
        engine.collection = Some(Collection {
            name: "c".into(),
            dim: 8,
            settings: BuildSettings::parse(&ParamMap::new(), Target::Server, 100, 8).unwrap(),
            loaded: 0,
        });
        let err = engine
            .set_search_params(&map(&[("rescore", ParamValue::Bool(true))]))
            .unwrap_err();
        assert!(matches!(err, EngineError::BadParameter { .. }), "{err}");
        engine.set_search_params(&ParamMap::new()).unwrap();
        assert!(engine.search_params.is_none());
    }

    #[test]
    fn row_checks_catch_dimension_mismatch() {
        assert!(check_rows("x", 4, 2, 8).is_ok());
        let err = check_rows("x", 4, 2, 7).unwrap_err().to_string();
        assert!(err.contains("dimension mismatch"), "{err}");
    }

    #[test]
    fn transport_failures_are_recognised() {
        assert!(is_transport_failure(
            grpc_code::INTERNAL,
            "Failed to connect to http://127.0.0.1:1/: tonic::transport::Error(Transport, ...)"
        ));
        assert!(is_transport_failure(grpc_code::UNAVAILABLE, "anything"));
        assert!(!is_transport_failure(
            grpc_code::INVALID_ARGUMENT,
            "Wrong input: Vector dimension error: expected dim: 32, got 16"
        ));
    }

    #[test]
    fn finds_own_listener_pid() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        if std::path::Path::new("/proc/net/tcp").exists() {
            assert_eq!(find_listener_pid(port), Some(std::process::id()));
        }
        drop(listener);
        assert_eq!(find_listener_pid(port), None);
    }

    #[test]
    fn config_parses() {
        let cfg = crate::params::EngineConfig::parse(CONFIG).unwrap();
        for set in ["default", "ef-sweep", "exact"] {
            assert!(cfg.set(set).is_ok(), "{set}");
        }
        for (name, set) in &cfg.sets {
            assert!(set.description.is_some(), "{name} has no description");
            for build in crate::params::expand(&set.build) {
                BuildSettings::parse(&build, Target::Server, 1000, 16).unwrap();
            }
        }
    }
}
