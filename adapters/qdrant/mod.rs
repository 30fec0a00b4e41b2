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
//! 10-20 MB, so a 100k × 32 dataset would never touch HNSW. Unless the user sets them, the
//! adapter derives both from the dataset size (see [`auto_threshold_kb`]) and
//! [`VectorEngine::wait_until_ready`] reports whenever some searches may still be full scans.

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

use crate::distance::Distance;
use crate::engine::{
    CollectionSpec, ConnectOptions, EngineError, EngineResult, IndexReport, Neighbor, PointId,
    SourcedBytes, VectorEngine,
};
use crate::params::{ParamError, ParamMap, ParamMapExt};

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
/// Qdrant's default `full_scan_threshold` (KB); auto thresholds never exceed it, so large
/// datasets keep Qdrant's usual behaviour.
const QDRANT_DEFAULT_THRESHOLD_KB: u64 = 10_000;
/// Auto thresholds are this fraction (1/N) of the whole dataset. Qdrant spreads points over
/// 2-8 segments per shard, so 1/100 stays well below any segment's share: every segment is
/// indexed and searched through its graph, and at most ~1% of the points can remain in an
/// unindexed appendable tail.
const AUTO_THRESHOLD_FRACTION: u64 = 100;

/// Build parameters accepted by [`VectorEngine::create`].
const BUILD_PARAMS: &[&str] = &[
    "m",
    "ef_construct",
    "full_scan_threshold",
    "indexing_threshold",
    "on_disk",
    "hnsw_on_disk",
    "quantization",
    "quantization_always_ram",
    "pq_compression",
    "shard_number",
    "replication_factor",
    "write_consistency_factor",
];

/// Search parameters accepted by [`VectorEngine::set_search_params`].
const SEARCH_PARAMS: &[&str] = &[
    "hnsw_ef",
    "exact",
    "rescore",
    "oversampling",
    "indexed_only",
];

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

/// Quantization of the stored vectors.
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
            Quantization::Product(r) => format!("product-{}", r.as_str_name().to_lowercase()),
        }
    }
}

/// A threshold in KB and whether the user set it or the adapter derived it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Threshold {
    kb: u64,
    auto: bool,
}

impl Threshold {
    fn to_json(self) -> Value {
        json!({ "kb": self.kb, "source": if self.auto { "auto (from dataset size)" } else { "user" } })
    }
}

/// Validated build parameters.
#[derive(Debug, Clone, PartialEq)]
struct BuildSettings {
    m: Option<u64>,
    ef_construct: Option<u64>,
    full_scan_threshold: Threshold,
    indexing_threshold: Threshold,
    on_disk: Option<bool>,
    hnsw_on_disk: Option<bool>,
    quantization: Quantization,
    quantization_always_ram: Option<bool>,
    shard_number: Option<u32>,
    replication_factor: Option<u32>,
    write_consistency_factor: Option<u32>,
}

/// Default for `indexing_threshold` and `full_scan_threshold` (both in KB) when the user left
/// them unset: 1/[`AUTO_THRESHOLD_FRACTION`] of the dataset's vector bytes, capped at Qdrant's
/// default. Never 0: `indexing_threshold = 0` disables indexing altogether.
fn auto_threshold_kb(expected_points: usize, dim: usize) -> u64 {
    let bytes = (expected_points as u64).saturating_mul(dim as u64 * 4);
    (bytes.div_ceil(1024) / AUTO_THRESHOLD_FRACTION).clamp(1, QDRANT_DEFAULT_THRESHOLD_KB)
}

fn param_error(err: ParamError) -> EngineError {
    let param = match &err {
        ParamError::WrongType { name, .. } | ParamError::Unknown { name, .. } => name.clone(),
        _ => "?".to_string(),
    };
    EngineError::bad_param(ENGINE, &param, err)
}

/// A positive integer that must fit the u32 fields of Qdrant's cluster settings.
fn get_u32_min1(params: &ParamMap, name: &str) -> EngineResult<Option<u32>> {
    match params.get_u64(name).map_err(param_error)? {
        None => Ok(None),
        Some(v) if v >= 1 && v <= u64::from(u32::MAX) => Ok(Some(v as u32)),
        Some(v) => Err(EngineError::bad_param(
            ENGINE,
            name,
            format!("must be between 1 and {}, got {v}", u32::MAX),
        )),
    }
}

impl BuildSettings {
    fn from_params(params: &ParamMap, expected_points: usize, dim: usize) -> EngineResult<Self> {
        params.reject_unknown(BUILD_PARAMS).map_err(param_error)?;
        let auto = auto_threshold_kb(expected_points, dim);
        let threshold = |name: &str| -> EngineResult<Threshold> {
            Ok(match params.get_u64(name).map_err(param_error)? {
                Some(kb) => Threshold { kb, auto: false },
                None => Threshold {
                    kb: auto,
                    auto: true,
                },
            })
        };
        let quantization = match params
            .get_str("quantization")
            .map_err(param_error)?
            .unwrap_or("none")
            .to_ascii_lowercase()
            .as_str()
        {
            "none" => Quantization::None,
            "int8" | "scalar" => Quantization::Int8,
            "binary" => Quantization::Binary,
            "product" | "pq" => {
                let ratio = match params.get("pq_compression") {
                    None => CompressionRatio::X16,
                    Some(v) => match v.to_string().trim_start_matches(['x', 'X']) {
                        "4" => CompressionRatio::X4,
                        "8" => CompressionRatio::X8,
                        "16" => CompressionRatio::X16,
                        "32" => CompressionRatio::X32,
                        "64" => CompressionRatio::X64,
                        other => {
                            return Err(EngineError::bad_param(
                                ENGINE,
                                "pq_compression",
                                format!("must be 4, 8, 16, 32 or 64, got `{other}`"),
                            ));
                        }
                    },
                };
                Quantization::Product(ratio)
            }
            other => {
                return Err(EngineError::bad_param(
                    ENGINE,
                    "quantization",
                    format!("must be none, int8, binary or product, got `{other}`"),
                ));
            }
        };
        let quantization_always_ram = params
            .get_bool("quantization_always_ram")
            .map_err(param_error)?;
        // Silently ignoring these would record a setting that had no effect.
        if quantization == Quantization::None && quantization_always_ram.is_some() {
            return Err(EngineError::bad_param(
                ENGINE,
                "quantization_always_ram",
                "only applies with quantization=int8, binary or product",
            ));
        }
        if params.contains_key("pq_compression")
            && !matches!(quantization, Quantization::Product(_))
        {
            return Err(EngineError::bad_param(
                ENGINE,
                "pq_compression",
                "only applies with quantization=product",
            ));
        }
        Ok(BuildSettings {
            m: params.get_u64("m").map_err(param_error)?,
            ef_construct: params.get_u64("ef_construct").map_err(param_error)?,
            full_scan_threshold: threshold("full_scan_threshold")?,
            indexing_threshold: threshold("indexing_threshold")?,
            on_disk: params.get_bool("on_disk").map_err(param_error)?,
            hnsw_on_disk: params.get_bool("hnsw_on_disk").map_err(param_error)?,
            quantization,
            quantization_always_ram,
            shard_number: get_u32_min1(params, "shard_number")?,
            replication_factor: get_u32_min1(params, "replication_factor")?,
            write_consistency_factor: get_u32_min1(params, "write_consistency_factor")?,
        })
    }

    /// The create request. The deprecated `on_disk` / `always_ram` flags are used rather than
    /// the newer `memory` placement because servers before 1.19 ignore `memory` silently.
    fn request(
        &self,
        name: &str,
        dim: usize,
        distance: Distance,
        timeout: u64,
    ) -> CreateCollectionBuilder {
        let distance = match distance {
            Distance::Euclidean => QDistance::Euclid,
            Distance::Angular => QDistance::Cosine,
            Distance::Dot => QDistance::Dot,
        };
        let mut vectors = VectorParamsBuilder::new(dim as u64, distance);
        if let Some(on_disk) = self.on_disk {
            vectors = vectors.on_disk(on_disk);
        }
        let mut hnsw =
            HnswConfigDiffBuilder::default().full_scan_threshold(self.full_scan_threshold.kb);
        if let Some(m) = self.m {
            hnsw = hnsw.m(m);
        }
        if let Some(ef) = self.ef_construct {
            hnsw = hnsw.ef_construct(ef);
        }
        if let Some(on_disk) = self.hnsw_on_disk {
            hnsw = hnsw.on_disk(on_disk);
        }
        let optimizers =
            OptimizersConfigDiffBuilder::default().indexing_threshold(self.indexing_threshold.kb);
        let mut request = CreateCollectionBuilder::new(name)
            .vectors_config(vectors)
            .hnsw_config(hnsw)
            .optimizers_config(optimizers)
            .timeout(timeout);
        let quantization: Option<quantization_config::Quantization> = match self.quantization {
            Quantization::None => None,
            Quantization::Int8 => {
                let mut q = ScalarQuantizationBuilder::default();
                if let Some(ram) = self.quantization_always_ram {
                    q = q.always_ram(ram);
                }
                Some(q.into())
            }
            Quantization::Binary => {
                let mut q = BinaryQuantizationBuilder::default();
                if let Some(ram) = self.quantization_always_ram {
                    q = q.always_ram(ram);
                }
                Some(q.into())
            }
            Quantization::Product(ratio) => {
                let mut q = ProductQuantizationBuilder::new(ratio.into());
                if let Some(ram) = self.quantization_always_ram {
                    q = q.always_ram(ram);
                }
                Some(q.into())
            }
        };
        if let Some(q) = quantization {
            request = request.quantization_config(q);
        }
        if let Some(n) = self.shard_number {
            request = request.shard_number(n);
        }
        if let Some(n) = self.replication_factor {
            request = request.replication_factor(n);
        }
        if let Some(n) = self.write_consistency_factor {
            request = request.write_consistency_factor(n);
        }
        request
    }

    fn to_json(&self) -> Value {
        json!({
            "m": self.m,
            "ef_construct": self.ef_construct,
            "full_scan_threshold": self.full_scan_threshold.to_json(),
            "indexing_threshold": self.indexing_threshold.to_json(),
            "on_disk": self.on_disk,
            "hnsw_on_disk": self.hnsw_on_disk,
            "quantization": self.quantization.label(),
            "quantization_always_ram": self.quantization_always_ram,
            "shard_number": self.shard_number,
            "replication_factor": self.replication_factor,
            "write_consistency_factor": self.write_consistency_factor,
        })
    }
}

/// The collection this adapter created.
#[derive(Debug)]
struct Collection {
    name: String,
    dim: usize,
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
    search_label: String,
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
            search_label: "-".into(),
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
        let settings =
            BuildSettings::from_params(&spec.build_params, spec.expected_points, spec.dim)?;
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
        let request = settings.request(&name, spec.dim, spec.distance, self.timeout_secs());
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
        self.search_label = "-".into();
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
        let m = hnsw.and_then(|h| h.m).or(col.settings.m);
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
        details.insert(
            "thresholds_source".into(),
            json!({
                "indexing_threshold": col.settings.indexing_threshold.to_json(),
                "full_scan_threshold": col.settings.full_scan_threshold.to_json(),
            }),
        );
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
        params.reject_unknown(SEARCH_PARAMS).map_err(param_error)?;
        let hnsw_ef = params.get_u64("hnsw_ef").map_err(param_error)?;
        let exact = params.get_bool("exact").map_err(param_error)?;
        let rescore = params.get_bool("rescore").map_err(param_error)?;
        let oversampling = params.get_f64("oversampling").map_err(param_error)?;
        let indexed_only = params.get_bool("indexed_only").map_err(param_error)?;
        if hnsw_ef == Some(0) {
            return Err(EngineError::bad_param(
                ENGINE,
                "hnsw_ef",
                "must be at least 1",
            ));
        }
        if let Some(o) = oversampling
            && !(o.is_finite() && o >= 1.0)
        {
            return Err(EngineError::bad_param(
                ENGINE,
                "oversampling",
                format!("must be a number >= 1.0, got {o}"),
            ));
        }
        if params.is_empty() {
            self.search_params = None;
            self.search_label = "-".into();
            return Ok(());
        }
        let mut builder = SearchParamsBuilder::default();
        if let Some(ef) = hnsw_ef {
            builder = builder.hnsw_ef(ef);
        }
        if let Some(exact) = exact {
            builder = builder.exact(exact);
        }
        if let Some(indexed_only) = indexed_only {
            builder = builder.indexed_only(indexed_only);
        }
        if rescore.is_some() || oversampling.is_some() {
            let mut q = QuantizationSearchParamsBuilder::default();
            if let Some(rescore) = rescore {
                q = q.rescore(rescore);
            }
            if let Some(o) = oversampling {
                q = q.oversampling(o);
            }
            builder = builder.quantization(q);
        }
        self.search_params = Some(builder.build());
        self.search_label = params.label();
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

    /// With `--server-storage`, the size of `<storage>/collections/<name>`. Otherwise `None`:
    /// the gRPC API reports no sizes (telemetry is REST-only and not wrapped by the client).
    fn index_size(&self) -> EngineResult<Option<SourcedBytes>> {
        let Some(storage) = &self.server_storage else {
            return Ok(None);
        };
        let col = self.collection("index size")?;
        let dir = storage.join("collections").join(&col.name);
        if !dir.is_dir() {
            return Err(EngineError::op(
                ENGINE,
                "index size",
                format!(
                    "{} does not exist: --server-storage must be the server's storage directory \
                     (the one holding `collections/`), on this machine",
                    dir.display()
                ),
            ));
        }
        crate::storage::index_size(ENGINE, &dir, "server storage dir").map(Some)
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
        out.insert("search_params".into(), json!(self.search_label));
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

    #[test]
    fn auto_thresholds_scale_with_data_and_never_disable_indexing() {
        // 5000 × 32 floats = 625 KB → 6 KB.
        assert_eq!(auto_threshold_kb(5000, 32), 6);
        assert_eq!(auto_threshold_kb(10, 2), 1);
        assert_eq!(auto_threshold_kb(0, 128), 1);
        assert_eq!(
            auto_threshold_kb(100_000_000, 768),
            QDRANT_DEFAULT_THRESHOLD_KB
        );
    }

    fn map(pairs: &[(&str, ParamValue)]) -> ParamMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn build_settings_validate() {
        let s = BuildSettings::from_params(
            &map(&[
                ("m", ParamValue::Int(16)),
                ("quantization", ParamValue::Str("int8".into())),
            ]),
            5000,
            32,
        )
        .unwrap();
        assert_eq!(s.m, Some(16));
        assert_eq!(s.quantization, Quantization::Int8);
        assert!(s.indexing_threshold.auto && s.full_scan_threshold.auto);
        let s = BuildSettings::from_params(
            &map(&[("indexing_threshold", ParamValue::Int(20000))]),
            5000,
            32,
        )
        .unwrap();
        assert_eq!(
            s.indexing_threshold,
            Threshold {
                kb: 20000,
                auto: false
            }
        );
        let s = BuildSettings::from_params(
            &map(&[
                ("quantization", ParamValue::Str("product".into())),
                ("pq_compression", ParamValue::Int(8)),
            ]),
            1,
            8,
        )
        .unwrap();
        assert_eq!(s.quantization, Quantization::Product(CompressionRatio::X8));
        for bad in [
            map(&[("bogus", ParamValue::Int(1))]),
            map(&[("quantization", ParamValue::Str("fp4".into()))]),
            map(&[("quantization_always_ram", ParamValue::Bool(true))]),
            map(&[("shard_number", ParamValue::Int(0))]),
            map(&[("m", ParamValue::Str("x".into()))]),
            map(&[("pq_compression", ParamValue::Int(8))]),
        ] {
            let err = BuildSettings::from_params(&bad, 10, 4).unwrap_err();
            assert!(matches!(err, EngineError::BadParameter { .. }), "{err}");
        }
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
                BuildSettings::from_params(&build, 1000, 16).unwrap();
            }
        }
    }
}
