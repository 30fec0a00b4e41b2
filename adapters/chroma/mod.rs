//! `chroma`: a Chroma server driven over its HTTP API v2 (blocking `ureq`).
//!
//! Facts about the engine that shape this adapter (checked against chromadb 1.5.9, whose
//! single-node server is the Rust frontend behind `chroma run`):
//!
//! - Index settings live in the collection `configuration.hnsw` (`space`, `max_neighbors`,
//!   `ef_construction`, `ef_search`, `batch_size`, `sync_threshold`, `num_threads`), fixed at
//!   creation. The legacy `hnsw:*` metadata keys are not used.
//! - `ef_search` can be *stored* after creation (`PUT .../collections/{id}` with
//!   `new_configuration`) but the running server keeps searching with the value its cached
//!   HNSW index was loaded with, until it restarts. Changing it between searches would
//!   silently measure the old value, so `ef_search` is a build parameter here and a search
//!   parameter only when it equals the collection's value; anything else is
//!   [`EngineError::Unsupported`].
//! - New writes first go to a brute-force buffer of up to `batch_size` vectors (default
//!   100) that is searched exactly next to the graph, then into HNSW; the graph is persisted
//!   every `sync_threshold` (default 1000) writes. Writes are applied before the HTTP call
//!   returns, so `count` is exact right away.
//! - Ids are strings: a [`PointId`] travels as its decimal form and is parsed back.
//! - Distances are Chroma's own: squared L2 for `l2`, `1 - cos` for `cosine`, `1 - dot`
//!   for `ip`. They order like ragdbeval's metrics, which is all the harness relies on.
//!
//! Without `--url` the adapter runs `scripts/servers/chroma.sh start` (idempotent) and uses
//! the URL it prints, so `ragdbeval bench --db chroma` needs no manual setup. The server is
//! left running for the next run; `scripts/servers/chroma.sh stop` stops it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::distance::Distance;
use crate::engine::{
    CollectionSpec, ConnectOptions, EngineError, EngineResult, Footprint, IndexReport, Neighbor,
    PointId, SourcedBytes, VectorEngine,
};
use crate::params::{ParamMap, ParamMapExt};

/// The engine's `config.toml`: named parameter sets and sweeps.
pub const CONFIG: &str = include_str!("config.toml");

const ENGINE: &str = "chroma";

/// Collections of the default tenant and database (what the Python client uses).
const COLLECTIONS: &str = "/api/v2/tenants/default_tenant/databases/default_database/collections";

/// Build parameters, mapped onto `configuration.hnsw` at creation.
const BUILD_PARAMS: &[&str] = &[
    "m",
    "ef_construction",
    "ef_search",
    "batch_size",
    "sync_threshold",
    "num_threads",
];

/// Search parameters. `ef_search` only restates the value fixed at creation (module doc).
const SEARCH_PARAMS: &[&str] = &["ef_search"];

/// Chroma's own default `ef_search`, used when neither the build nor the search set names one.
const DEFAULT_EF_SEARCH: u64 = 100;

/// The server script, found through the crate root so that it works from any directory.
const START_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/servers/chroma.sh");

/// Largest response body accepted: a batch query of thousands of queries at large k returns
/// tens of megabytes, well past ureq's 10 MB default.
const MAX_RESPONSE_BYTES: u64 = 1 << 30;

/// Connects to the Chroma server at `opts.url`, or starts the project's local one when no URL
/// is given, and checks that it answers, so that a wrong address fails here rather than in
/// the middle of a timed phase.
pub fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(ChromaEngine::connect(opts)?))
}

/// Thin blocking HTTP client: one pooled agent (shared by all search threads) and the base URL.
struct Http {
    agent: ureq::Agent,
    base: String,
    api_key: Option<String>,
}

/// How a request failed, before it is turned into an [`EngineError`].
enum CallError {
    /// No HTTP exchange happened or it broke off (refused, reset, timed out while connecting).
    Transport(String),
    /// The request was too slow.
    Timeout(String),
    /// The server answered with an error status; `message` is its own text.
    Status { code: u16, message: String },
    /// Anything else (an unparsable answer, ...).
    Other(String),
}

/// Chroma's error body: `{"error": "NotFoundError", "message": "..."}`.
#[derive(Deserialize)]
struct ErrorBody {
    #[serde(default)]
    error: String,
    #[serde(default)]
    message: String,
}

impl Http {
    /// Sends one request and returns the body of a 2xx answer.
    fn send(&self, method: &str, path: &str, body: Option<Vec<u8>>) -> Result<Vec<u8>, CallError> {
        let url = format!("{}{path}", self.base);
        let result = match (method, body) {
            ("GET", _) => self.with_key_nobody(self.agent.get(&url)).call(),
            ("DELETE", _) => self.with_key_nobody(self.agent.delete(&url)).call(),
            ("PUT", body) => self
                .with_key_body(self.agent.put(&url))
                .send(body.unwrap_or_default()),
            (_, body) => self
                .with_key_body(self.agent.post(&url))
                .send(body.unwrap_or_default()),
        };
        let mut response = result.map_err(map_transport)?;
        let code = response.status().as_u16();
        let bytes = response
            .body_mut()
            .with_config()
            .limit(MAX_RESPONSE_BYTES)
            .read_to_vec()
            .map_err(map_transport)?;
        if (200..300).contains(&code) {
            return Ok(bytes);
        }
        let message = match serde_json::from_slice::<ErrorBody>(&bytes) {
            Ok(e) if !e.message.is_empty() => {
                if e.error.is_empty() {
                    e.message
                } else {
                    format!("{}: {}", e.error, e.message)
                }
            }
            _ => String::from_utf8_lossy(&bytes).trim().to_string(),
        };
        Err(CallError::Status { code, message })
    }

    fn with_key_nobody(
        &self,
        req: ureq::RequestBuilder<ureq::typestate::WithoutBody>,
    ) -> ureq::RequestBuilder<ureq::typestate::WithoutBody> {
        match &self.api_key {
            Some(key) => req.header("x-chroma-token", key),
            None => req,
        }
    }

    fn with_key_body(
        &self,
        req: ureq::RequestBuilder<ureq::typestate::WithBody>,
    ) -> ureq::RequestBuilder<ureq::typestate::WithBody> {
        let req = req.header("content-type", "application/json");
        match &self.api_key {
            Some(key) => req.header("x-chroma-token", key),
            None => req,
        }
    }

    /// A request whose JSON answer is parsed into `T`.
    fn json<T: DeserializeOwned>(
        &self,
        method: &str,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> Result<T, CallError> {
        let body = match body {
            Some(b) => Some(serde_json::to_vec(b).map_err(|e| CallError::Other(e.to_string()))?),
            None => None,
        };
        let bytes = self.send(method, path, body)?;
        serde_json::from_slice(&bytes).map_err(|e| {
            CallError::Other(format!(
                "unexpected answer ({e}): {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(300)])
            ))
        })
    }
}

/// Sorts ureq's errors into "the server is gone" and the rest.
fn map_transport(err: ureq::Error) -> CallError {
    match err {
        ureq::Error::Timeout(ureq::Timeout::Connect)
        | ureq::Error::Timeout(ureq::Timeout::Resolve) => {
            CallError::Transport(format!("connection timed out ({err})"))
        }
        ureq::Error::Timeout(_) => CallError::Timeout(err.to_string()),
        ureq::Error::Io(_)
        | ureq::Error::ConnectionFailed
        | ureq::Error::HostNotFound
        | ureq::Error::Protocol(_) => CallError::Transport(err.to_string()),
        ureq::Error::StatusCode(code) => CallError::Status {
            code,
            message: format!("HTTP {code}"),
        },
        other => CallError::Other(other.to_string()),
    }
}

/// What to do when no server answers.
fn start_hint() -> String {
    "start it with `scripts/servers/chroma.sh start` (it prints the URL) or pass --url \
     http://HOST:PORT of a running Chroma server"
        .to_string()
}

/// Turns a failed call into an [`EngineError`] that keeps the server's message.
fn engine_error(url: &str, operation: &str, err: CallError) -> EngineError {
    match err {
        CallError::Transport(message) => EngineError::Unreachable {
            engine: ENGINE.into(),
            target: url.into(),
            message: if operation == "connect" {
                format!("{message}; {}", start_hint())
            } else {
                format!(
                    "lost the connection during {operation} ({message}); the server may have \
                     stopped, restarted or run out of memory: check its log \
                     ($RAGDBEVAL_SERVER_DIR/chroma/log for the script's server), or {}",
                    start_hint()
                )
            },
        },
        CallError::Timeout(message) => EngineError::op(
            ENGINE,
            operation,
            format!("request timed out ({message}); raise --timeout if the server is just slow"),
        ),
        CallError::Status { code, message } => {
            let message = match code {
                401 | 403 => {
                    format!("authentication failed (HTTP {code}): {message}; check --api-key-env")
                }
                404 => format!("not found (HTTP 404): {message}"),
                409 => format!("{message} (HTTP 409); pass --recreate to replace it"),
                _ => format!("{message} (HTTP {code})"),
            };
            EngineError::op(ENGINE, operation, message)
        }
        CallError::Other(message) => EngineError::op(ENGINE, operation, message),
    }
}

/// Where the project's server script keeps the state of its Chroma server.
fn script_state_dir() -> PathBuf {
    let base = std::env::var_os("RAGDBEVAL_SERVER_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/ragdbeval-servers"));
    base.join("chroma")
}

/// `url` without trailing slashes, for comparisons and joining paths.
fn normalize_url(url: &str) -> String {
    url.trim().trim_end_matches('/').to_string()
}

/// Runs `scripts/servers/chroma.sh start` and returns the URL it prints. Its stderr (pip's
/// progress on a first install) goes to the user's terminal.
fn start_local_server() -> EngineResult<String> {
    let unreachable = |message: String| EngineError::Unreachable {
        engine: ENGINE.into(),
        target: format!("{START_SCRIPT} start"),
        message,
    };
    if !Path::new(START_SCRIPT).is_file() {
        return Err(unreachable(
            "no --url given and the server script is missing; pass --url http://HOST:PORT of a \
             running Chroma server"
                .to_string(),
        ));
    }
    let output = Command::new("bash")
        .arg(START_SCRIPT)
        .arg("start")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| unreachable(format!("cannot run the script: {e}; pass --url instead")))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        return Err(unreachable(format!(
            "the script failed ({}); see its messages above and \
             $RAGDBEVAL_SERVER_DIR/chroma/log, or pass --url of a running server",
            output.status
        )));
    }
    stdout
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with("http://") || l.starts_with("https://"))
        .map(normalize_url)
        .ok_or_else(|| {
            unreachable(format!(
                "the script printed no URL (stdout: {:?}); pass --url instead",
                stdout.trim()
            ))
        })
}

/// Parameters fixed when the collection is created.
#[derive(Debug, Clone, Serialize)]
struct BuildSettings {
    space: &'static str,
    max_neighbors: Option<u64>,
    ef_construction: Option<u64>,
    ef_search: u64,
    batch_size: Option<u64>,
    sync_threshold: Option<u64>,
    num_threads: Option<u64>,
}

impl BuildSettings {
    /// The `configuration.hnsw` object sent at creation: unset values are left to the server.
    fn hnsw_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("space".into(), json!(self.space));
        m.insert("ef_search".into(), json!(self.ef_search));
        let optional = [
            ("max_neighbors", self.max_neighbors),
            ("ef_construction", self.ef_construction),
            ("batch_size", self.batch_size),
            ("sync_threshold", self.sync_threshold),
            ("num_threads", self.num_threads),
        ];
        for (key, value) in optional {
            if let Some(v) = value {
                m.insert(key.into(), json!(v));
            }
        }
        Value::Object(m)
    }
}

/// The collection under test.
struct Collection {
    name: String,
    id: String,
    dim: usize,
    settings: BuildSettings,
    /// Points the collection must hold after the bulk load; `None` once upserts or deletes
    /// make it unknowable without tracking every id.
    expected_points: Option<u64>,
}

/// Chroma's collection model (the fields used here).
#[derive(Deserialize)]
struct CollectionModel {
    id: String,
    #[serde(default)]
    configuration_json: Value,
    #[serde(default)]
    schema: Value,
}

/// `/api/v2/pre-flight-checks`.
#[derive(Deserialize)]
struct PreFlight {
    max_batch_size: Option<usize>,
    #[serde(default)]
    supports_base64_encoding: bool,
}

/// `add` / `upsert` body. Embeddings go as base64 of little-endian f32 when the server
/// supports it, like the official client: less to encode and parse than decimal text.
#[derive(Serialize)]
struct RecordsBody {
    ids: Vec<String>,
    embeddings: Embeddings,
}

#[derive(Serialize)]
#[serde(untagged)]
enum Embeddings {
    Base64(Vec<String>),
    Floats(Vec<Vec<f32>>),
}

#[derive(Serialize)]
struct DeleteBody {
    ids: Vec<String>,
}

#[derive(Serialize)]
struct QueryBody<'a> {
    query_embeddings: Vec<&'a [f32]>,
    n_results: usize,
    include: [&'static str; 1],
}

#[derive(Deserialize)]
struct QueryAnswer {
    ids: Vec<Vec<String>>,
    #[serde(default)]
    distances: Option<Vec<Vec<Option<f32>>>>,
}

/// A Chroma server and the collection under test.
pub struct ChromaEngine {
    http: Http,
    url: String,
    /// What `/api/v2/version` says (the API version, 1.0.0 on chromadb 1.5).
    api_version: String,
    /// The chromadb release, when the server is the script's (it records it).
    release: Option<String>,
    max_batch_size: Option<usize>,
    base64: bool,
    recreate: bool,
    batch_size: usize,
    upload_parallel: usize,
    server_pid: Option<u32>,
    server_storage: Option<PathBuf>,
    /// State dir of the script's server when `url` is that server's.
    script_state: Option<PathBuf>,
    started_by_adapter: bool,
    /// `ef_search` named by the search parameters checked before `create`.
    pending_ef_search: Option<u64>,
    search_label: String,
    collection: Option<Collection>,
}

impl ChromaEngine {
    fn connect(opts: &ConnectOptions) -> EngineResult<ChromaEngine> {
        let (url, started_by_adapter) = match &opts.url {
            Some(url) => (normalize_url(url), false),
            None => (start_local_server()?, true),
        };
        let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
        if !scheme_ok || url.len() <= "https://".len() {
            return Err(EngineError::bad_param(
                ENGINE,
                "url",
                format!("`{url}` is not a URL: expected http://HOST:PORT"),
            ));
        }
        let timeout = if opts.timeout.is_zero() {
            Duration::from_secs(60)
        } else {
            opts.timeout
        };
        let config = ureq::Agent::config_builder()
            // Error statuses are read like any answer so that their JSON message is kept.
            .http_status_as_error(false)
            .timeout_global(Some(timeout))
            .timeout_connect(Some(timeout.min(Duration::from_secs(5))))
            // Many client threads search at once: keep their connections instead of opening
            // (and leaving in TIME_WAIT) a new one per request.
            .max_idle_connections(256)
            .max_idle_connections_per_host(256)
            .build();
        let http = Http {
            agent: config.new_agent(),
            base: url.clone(),
            api_key: opts.api_key.clone(),
        };

        let _: Value = http
            .json("GET", "/api/v2/heartbeat", None::<&()>)
            .map_err(|e| engine_error(&url, "connect", e))?;
        let api_version: String = http
            .json("GET", "/api/v2/version", None::<&()>)
            .map_err(|e| engine_error(&url, "connect", e))?;
        // Older servers may lack the pre-flight endpoint: then no cap and plain floats.
        let preflight: Option<PreFlight> = http
            .json("GET", "/api/v2/pre-flight-checks", None::<&()>)
            .ok();
        // The credentials are checked by a call that needs them (the heartbeat does not).
        let _: Value = http
            .json(
                "GET",
                "/api/v2/tenants/default_tenant/databases/default_database/collections_count",
                None::<&()>,
            )
            .map_err(|e| engine_error(&url, "connect", e))?;

        let state = script_state_dir();
        let script_url = fs::read_to_string(state.join("url"))
            .ok()
            .map(|u| normalize_url(&u));
        let script_state = (script_url.as_deref() == Some(url.as_str())).then_some(state);
        let release = script_state
            .as_ref()
            .and_then(|s| fs::read_to_string(s.join("version")).ok())
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty());

        let max_batch_size = preflight.as_ref().and_then(|p| p.max_batch_size);
        let mut batch_size = opts.batch_size.max(1);
        if let Some(max) = max_batch_size {
            batch_size = batch_size.min(max.max(1));
        }
        Ok(ChromaEngine {
            http,
            url,
            api_version,
            release,
            max_batch_size,
            base64: preflight.is_some_and(|p| p.supports_base64_encoding),
            recreate: opts.recreate,
            batch_size,
            upload_parallel: opts.upload_parallel.max(1),
            server_pid: opts.server_pid,
            server_storage: opts.server_storage.clone(),
            script_state,
            started_by_adapter,
            pending_ef_search: None,
            search_label: "-".into(),
            collection: None,
        })
    }

    fn call<T: DeserializeOwned>(
        &self,
        operation: &str,
        method: &str,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> EngineResult<T> {
        self.http
            .json(method, path, body)
            .map_err(|e| engine_error(&self.url, operation, e))
    }

    fn collection(&self, operation: &str) -> EngineResult<&Collection> {
        self.collection
            .as_ref()
            .ok_or_else(|| EngineError::op(ENGINE, operation, "no collection: call create first"))
    }

    /// The collection named `name`, or `None` when it does not exist.
    fn lookup(&self, operation: &str, name: &str) -> EngineResult<Option<CollectionModel>> {
        match self.http.json::<CollectionModel>(
            "GET",
            &format!("{COLLECTIONS}/{name}"),
            None::<&()>,
        ) {
            Ok(model) => Ok(Some(model)),
            Err(CallError::Status { code: 404, .. }) => Ok(None),
            Err(e) => Err(engine_error(&self.url, operation, e)),
        }
    }

    /// Drops the collection `name`; a missing one is not an error.
    fn drop_collection(&self, operation: &str, name: &str) -> EngineResult<()> {
        match self
            .http
            .send("DELETE", &format!("{COLLECTIONS}/{name}"), None)
        {
            Ok(_) | Err(CallError::Status { code: 404, .. }) => Ok(()),
            Err(e) => Err(engine_error(&self.url, operation, e)),
        }
    }

    fn count(&self, operation: &str, id: &str) -> EngineResult<u64> {
        self.call(
            operation,
            "GET",
            &format!("{COLLECTIONS}/{id}/count"),
            None::<&()>,
        )
    }

    fn check_rows(
        &self,
        col: &Collection,
        op: &str,
        ids: usize,
        floats: usize,
    ) -> EngineResult<()> {
        if floats != ids * col.dim {
            return Err(EngineError::op(
                ENGINE,
                op,
                format!(
                    "expected {ids} vectors of dimension {} ({} floats), got {floats} floats",
                    col.dim,
                    ids * col.dim
                ),
            ));
        }
        Ok(())
    }

    fn records_body(&self, dim: usize, ids: &[PointId], vectors: &[f32]) -> RecordsBody {
        let embeddings = if self.base64 {
            Embeddings::Base64(
                vectors
                    .chunks_exact(dim)
                    .map(|v| {
                        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                        base64::engine::general_purpose::STANDARD.encode(bytes)
                    })
                    .collect(),
            )
        } else {
            Embeddings::Floats(vectors.chunks_exact(dim).map(<[f32]>::to_vec).collect())
        };
        RecordsBody {
            ids: ids.iter().map(u64::to_string).collect(),
            embeddings,
        }
    }

    /// Sends `add` or `upsert` requests of `batch_size` points, `upload_parallel` at a time.
    fn write_records(
        &self,
        operation: &str,
        endpoint: &str,
        ids: &[PointId],
        vectors: &[f32],
    ) -> EngineResult<()> {
        let col = self.collection(operation)?;
        self.check_rows(col, operation, ids.len(), vectors.len())?;
        if ids.is_empty() {
            return Ok(());
        }
        let dim = col.dim;
        let path = format!("{COLLECTIONS}/{}/{endpoint}", col.id);
        let chunks: Vec<(&[PointId], &[f32])> = ids
            .chunks(self.batch_size)
            .zip(vectors.chunks(self.batch_size * dim))
            .collect();
        let send = |(chunk_ids, chunk): &(&[PointId], &[f32])| -> EngineResult<()> {
            let body = self.records_body(dim, chunk_ids, chunk);
            self.call::<Value>(operation, "POST", &path, Some(&body))
                .map(|_| ())
        };
        let workers = self.upload_parallel.min(chunks.len());
        if workers <= 1 {
            return chunks.iter().try_for_each(send);
        }
        let next = AtomicUsize::new(0);
        let first_error: Mutex<Option<EngineError>> = Mutex::new(None);
        std::thread::scope(|s| {
            for _ in 0..workers {
                s.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(chunk) = chunks.get(i) else { break };
                        if let Err(e) = send(chunk) {
                            // Stop handing out work; keep the first error for the caller.
                            next.store(chunks.len(), Ordering::Relaxed);
                            if let Ok(mut slot) = first_error.lock() {
                                slot.get_or_insert(e);
                            }
                            break;
                        }
                    }
                });
            }
        });
        match first_error.into_inner() {
            Ok(None) => Ok(()),
            Ok(Some(e)) => Err(e),
            Err(_) => Err(EngineError::op(
                ENGINE,
                operation,
                "an upload thread panicked",
            )),
        }
    }

    /// One `query` call for all rows of `queries`.
    fn query(
        &self,
        queries: &[f32],
        k: usize,
        operation: &str,
    ) -> EngineResult<Vec<Vec<Neighbor>>> {
        let col = self.collection(operation)?;
        if !queries.len().is_multiple_of(col.dim) {
            return Err(EngineError::op(
                ENGINE,
                operation,
                format!(
                    "query has {} floats, not a multiple of the collection dimension {}",
                    queries.len(),
                    col.dim
                ),
            ));
        }
        let rows = queries.len() / col.dim;
        if k == 0 || rows == 0 {
            return Ok(vec![Vec::new(); rows]);
        }
        let body = QueryBody {
            query_embeddings: queries.chunks_exact(col.dim).collect(),
            n_results: k,
            include: ["distances"],
        };
        let answer: QueryAnswer = self.call(
            operation,
            "POST",
            &format!("{COLLECTIONS}/{}/query", col.id),
            Some(&body),
        )?;
        if answer.ids.len() != rows {
            return Err(EngineError::op(
                ENGINE,
                operation,
                format!(
                    "asked {rows} queries, got {} result lists",
                    answer.ids.len()
                ),
            ));
        }
        let distances = answer.distances.unwrap_or_default();
        answer
            .ids
            .into_iter()
            .enumerate()
            .map(|(q, ids)| {
                let scores = distances.get(q);
                ids.iter()
                    .enumerate()
                    .map(|(i, id)| {
                        let id = id.parse::<PointId>().map_err(|_| {
                            EngineError::op(
                                ENGINE,
                                operation,
                                format!(
                                    "id `{id}` is not a ragdbeval point id: collection `{}` \
                                     holds points ragdbeval did not write",
                                    col.name
                                ),
                            )
                        })?;
                        let score = scores
                            .and_then(|s| s.get(i).copied().flatten())
                            .unwrap_or(f32::NAN);
                        Ok(Neighbor { id, score })
                    })
                    .collect()
            })
            .collect()
    }

    /// The persist directory to measure and where that knowledge came from.
    fn storage_dir(&self) -> Option<PathBuf> {
        self.server_storage
            .clone()
            .or_else(|| self.script_state.as_ref().map(|s| s.join("data")))
    }

    /// The live server process of the script's state dir, if any.
    fn script_pid(&self) -> Option<u32> {
        let state = self.script_state.as_ref()?;
        let pid: u32 = fs::read_to_string(state.join("pid"))
            .ok()?
            .trim()
            .parse()
            .ok()?;
        Path::new(&format!("/proc/{pid}")).exists().then_some(pid)
    }

    fn unsupported_ef_change(&self, current: u64, wanted: u64) -> EngineError {
        EngineError::Unsupported {
            engine: ENGINE.into(),
            what: format!(
                "changing ef_search after the collection is created (it was created with \
                 ef_search={current}, asked for {wanted}): chroma stores a new value but the \
                 running server keeps searching with the one its HNSW index was loaded with. \
                 Sweep it as a build parameter instead (`--build ef_search=16,32,...`, one \
                 collection each; see the `ef-sweep` set)"
            ),
        }
    }
}


/// Chroma's name for a metric.
fn space_of(distance: Distance) -> &'static str {
    match distance {
        Distance::Euclidean => "l2",
        Distance::Angular => "cosine",
        Distance::Dot => "ip",
    }
}

/// The effective HNSW settings the server reports: the schema holds all of them (with
/// `batch_size` and `num_threads`), `configuration_json` the older subset.
fn effective_hnsw(model: &CollectionModel) -> Value {
    let from_schema = model
        .schema
        .pointer("/keys/#embedding/float_list/vector_index/config/hnsw")
        .cloned();
    from_schema
        .or_else(|| model.configuration_json.get("hnsw").cloned())
        .unwrap_or(Value::Null)
}

impl VectorEngine for ChromaEngine {
    fn name(&self) -> &str {
        ENGINE
    }

    fn version(&self) -> String {
        match &self.release {
            Some(release) => format!("{release} (API {})", self.api_version),
            None => format!("API {}", self.api_version),
        }
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        let p = &spec.build_params;
        p.reject_unknown(BUILD_PARAMS)
            .map_err(|e| EngineError::bad_param(ENGINE, "build", e))?;
        let get = |name: &str| {
            p.get_u64(name)
                .map_err(|e| EngineError::bad_param(ENGINE, name, e))
        };
        let build_ef = get("ef_search")?;
        let ef_search = match (build_ef, self.pending_ef_search) {
            (Some(b), Some(s)) if b != s => {
                return Err(EngineError::bad_param(
                    ENGINE,
                    "ef_search",
                    format!(
                        "build ef_search={b} and search ef_search={s} differ; chroma fixes \
                         ef_search at creation, give one value"
                    ),
                ));
            }
            (Some(v), _) | (None, Some(v)) => v,
            (None, None) => DEFAULT_EF_SEARCH,
        };
        let settings = BuildSettings {
            space: space_of(spec.distance),
            max_neighbors: get("m")?,
            ef_construction: get("ef_construction")?,
            ef_search,
            batch_size: get("batch_size")?,
            sync_threshold: get("sync_threshold")?,
            num_threads: get("num_threads")?,
        };
        if spec.dim == 0 {
            return Err(EngineError::bad_param(
                ENGINE,
                "dim",
                "dimension must be at least 1",
            ));
        }

        if self.lookup("create", &spec.name)?.is_some() {
            if !self.recreate {
                return Err(EngineError::op(
                    ENGINE,
                    "create",
                    format!(
                        "collection `{}` already exists at {}; pass --recreate to drop it",
                        spec.name, self.url
                    ),
                ));
            }
            self.drop_collection("create", &spec.name)?;
        }
        let body = json!({
            "name": spec.name,
            "configuration": { "hnsw": settings.hnsw_json() },
            "get_or_create": false,
        });
        let model: CollectionModel = self.call("create", "POST", COLLECTIONS, Some(&body))?;
        self.collection = Some(Collection {
            name: spec.name.clone(),
            id: model.id,
            dim: spec.dim,
            settings,
            expected_points: Some(0),
        });
        self.search_label = format!("ef_search={ef_search}");
        Ok(())
    }

    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.write_records("insert", "add", ids, vectors)?;
        if let Some(col) = self.collection.as_mut() {
            col.expected_points = col.expected_points.map(|n| n + ids.len() as u64);
        }
        Ok(())
    }

    /// Polls `count` until it equals the points loaded (Chroma applies writes before the
    /// call returns, so this normally succeeds at once); after upserts or deletes, whose
    /// effect on the count is not tracked, it reports the count as it is.
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        let col = self.collection("wait for index")?;
        let limit = Duration::from_secs(120);
        let started = Instant::now();
        let points = loop {
            let n = self.count("wait for index", &col.id)?;
            match col.expected_points {
                Some(expected) if n != expected => {
                    if started.elapsed() > limit {
                        return Err(EngineError::op(
                            ENGINE,
                            "wait for index",
                            format!(
                                "collection `{}` holds {n} points after {}s, {expected} were \
                                 loaded: chroma ignores `add` of an id it already holds, so \
                                 duplicate ids (or writes lost by the server) explain it",
                                col.name,
                                limit.as_secs()
                            ),
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                _ => break n,
            }
        };
        let mut details = Map::new();
        details.insert("collection".into(), json!(col.name));
        details.insert("requested_hnsw".into(), json!(col.settings));
        match self.lookup("wait for index", &col.name)? {
            Some(model) => {
                details.insert("server_hnsw".into(), effective_hnsw(&model));
            }
            None => {
                return Err(EngineError::op(
                    ENGINE,
                    "wait for index",
                    format!("collection `{}` disappeared from the server", col.name),
                ));
            }
        }
        details.insert(
            "brute_force_buffer".into(),
            json!(
                "new writes sit in a brute-force buffer of up to hnsw batch_size vectors \
                 (searched exactly next to the graph) before they enter HNSW; the graph is \
                 persisted every sync_threshold writes"
            ),
        );
        Ok(IndexReport {
            // Chroma does not say how many vectors are in the graph rather than the buffer
            // (indexing_status is not implemented by the single-node server).
            indexed_vectors: None,
            points: Some(points),
            // At most batch_size recent writes are scanned; the rest goes through HNSW.
            may_full_scan: false,
            details,
        })
    }

    fn upsert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.write_records("upsert", "upsert", ids, vectors)?;
        if let Some(col) = self.collection.as_mut() {
            col.expected_points = None;
        }
        Ok(())
    }

    fn delete_batch(&mut self, ids: &[PointId]) -> EngineResult<()> {
        let col = self.collection("delete")?;
        let path = format!("{COLLECTIONS}/{}/delete", col.id);
        for chunk in ids.chunks(self.batch_size) {
            let body = DeleteBody {
                ids: chunk.iter().map(u64::to_string).collect(),
            };
            self.call::<Value>("delete", "POST", &path, Some(&body))?;
        }
        if let Some(col) = self.collection.as_mut() {
            col.expected_points = None;
        }
        Ok(())
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        params
            .reject_unknown(SEARCH_PARAMS)
            .map_err(|e| EngineError::bad_param(ENGINE, "search", e))?;
        let wanted = params
            .get_u64("ef_search")
            .map_err(|e| EngineError::bad_param(ENGINE, "ef_search", e))?;
        if wanted == Some(0) {
            return Err(EngineError::bad_param(
                ENGINE,
                "ef_search",
                "must be at least 1",
            ));
        }
        match (&self.collection, wanted) {
            (Some(col), Some(w)) if w != col.settings.ef_search => {
                Err(self.unsupported_ef_change(col.settings.ef_search, w))
            }
            (Some(col), _) => {
                self.search_label = format!("ef_search={}", col.settings.ef_search);
                Ok(())
            }
            // Before create: remember the value for the collection, and refuse a second,
            // different one now rather than after a long build.
            (None, Some(w)) => match self.pending_ef_search {
                Some(p) if p != w => Err(self.unsupported_ef_change(p, w)),
                _ => {
                    self.pending_ef_search = Some(w);
                    Ok(())
                }
            },
            (None, None) => Ok(()),
        }
    }

    fn search(&self, query: &[f32], k: usize, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        let col = self.collection("search")?;
        if query.len() != col.dim {
            return Err(EngineError::op(
                ENGINE,
                "search",
                format!(
                    "query has dimension {}, collection {}",
                    query.len(),
                    col.dim
                ),
            ));
        }
        out.clear();
        let mut results = self.query(query, k, "search")?;
        if let Some(first) = results.pop() {
            out.extend(first);
        }
        Ok(())
    }

    /// One `query` call carrying many query embeddings (split only past the server's
    /// maximum batch size).
    fn batch_search(
        &self,
        queries: &[f32],
        dim: usize,
        k: usize,
    ) -> EngineResult<Vec<Vec<Neighbor>>> {
        let col = self.collection("batch search")?;
        if dim != col.dim {
            return Err(EngineError::op(
                ENGINE,
                "batch search",
                format!("queries have dimension {dim}, collection {}", col.dim),
            ));
        }
        let per_call = self.max_batch_size.unwrap_or(usize::MAX).max(1);
        let mut all = Vec::with_capacity(queries.len() / dim.max(1));
        for chunk in queries.chunks(per_call.saturating_mul(dim)) {
            all.extend(self.query(chunk, k, "batch search")?);
        }
        Ok(all)
    }

    /// From the server's persist directory (`--server-storage`, or the script's
    /// `$RAGDBEVAL_SERVER_DIR/chroma/data` when the URL is the script's server), which every
    /// collection shares: only this collection's part is counted. Index = its vector
    /// segment's directory (`<persist>/<segment id>/`, found in `chroma.sqlite3`'s `segments`
    /// table): the HNSW files, where vectors and graph are one structure. Total = that
    /// directory + the bytes of this collection's rows in `chroma.sqlite3` (see
    /// [`collection_sqlite_bytes`]).
    fn footprint(&self) -> EngineResult<Footprint> {
        let Some(dir) = self.storage_dir() else {
            return Ok(Footprint::unmeasured(
                "needs --server-storage (the persist directory, on this machine)",
            ));
        };
        let Some(col) = &self.collection else {
            return Ok(Footprint::unmeasured("no collection created"));
        };
        let db = dir.join("chroma.sqlite3");
        if !db.is_file() {
            return Err(EngineError::op(
                ENGINE,
                "footprint",
                format!(
                    "{} does not exist: --server-storage must be the directory the server was \
                     started with (`chroma run --path DIR`), on this machine",
                    db.display()
                ),
            ));
        }
        let rows = match collection_sqlite_bytes(&db, &col.id) {
            Ok(rows) => rows,
            // No sqlite3 command here: say so rather than guess which directory is ours.
            Err(SqliteError::NoCli(why)) => return Ok(Footprint::unmeasured(why)),
            Err(SqliteError::Failed(why)) => {
                return Err(EngineError::op(ENGINE, "footprint", why));
            }
        };
        let Some(segment) = rows.vector_segment else {
            return Err(EngineError::op(
                ENGINE,
                "footprint",
                format!(
                    "chroma.sqlite3 has no VECTOR segment for collection {}",
                    col.id
                ),
            ));
        };
        let seg_dir = dir.join(&segment);
        if !seg_dir.is_dir() {
            // Chroma writes the HNSW files only every `sync_threshold` writes; until then the
            // vectors are in the log (counted in the SQLite rows).
            let why = format!("vector segment {segment} not yet written to disk");
            return Ok(Footprint::new(
                Err(why.clone()),
                Err(format!("{why}: the vectors are still in the SQLite log")),
            ));
        }
        let index = crate::storage::dir_bytes(
            ENGINE,
            &seg_dir,
            "this collection's vector segment directory (HNSW: vectors + graph)",
        )?;
        let total = SourcedBytes {
            bytes: index.bytes + rows.bytes,
            source: format!(
                "vector segment directory ({} B, allocated blocks) + this collection's rows in \
                 chroma.sqlite3 ({} B of stored values: ids, metadata, log; SQLite page and \
                 index overhead excluded)",
                index.bytes, rows.bytes
            ),
        };
        Ok(Footprint::new(Ok(index), Ok(total)))
    }

    fn server_pid(&self) -> Option<u32> {
        self.server_pid.or_else(|| self.script_pid())
    }

    fn in_process(&self) -> bool {
        false
    }

    fn describe(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("server_api_version".into(), json!(self.api_version));
        out.insert("server_version".into(), json!(self.version()));
        if let Some(release) = &self.release {
            out.insert("chromadb_release".into(), json!(release));
        }
        out.insert("url".into(), json!(self.url));
        out.insert("transport".into(), json!("HTTP API v2 (ureq)"));
        out.insert("started_by_adapter".into(), json!(self.started_by_adapter));
        out.insert(
            "api_key".into(),
            json!(if self.http.api_key.is_some() {
                "set"
            } else {
                "none"
            }),
        );
        out.insert("batch_size".into(), json!(self.batch_size));
        out.insert("server_max_batch_size".into(), json!(self.max_batch_size));
        out.insert("upload_parallel".into(), json!(self.upload_parallel));
        out.insert(
            "embedding_encoding".into(),
            json!(if self.base64 {
                "base64 f32le"
            } else {
                "json floats"
            }),
        );
        out.insert("search_params".into(), json!(self.search_label));
        match self.call::<Value>(
            "describe",
            "GET",
            "/api/v2/tenants/default_tenant/databases/default_database/collections_count",
            None::<&()>,
        ) {
            Ok(n) => out.insert("collections_in_database".into(), n),
            Err(e) => out.insert("collections_in_database_error".into(), json!(e.to_string())),
        };
        if let Some(col) = &self.collection {
            out.insert("collection".into(), json!(col.name));
            out.insert("collection_id".into(), json!(col.id));
            out.insert("requested_hnsw".into(), json!(col.settings));
            match self.count("describe", &col.id) {
                Ok(n) => out.insert("points".into(), json!(n)),
                Err(e) => out.insert("points_error".into(), json!(e.to_string())),
            };
            match self.lookup("describe", &col.name) {
                Ok(Some(model)) => {
                    out.insert("configuration".into(), model.configuration_json.clone());
                    out.insert("server_hnsw".into(), effective_hnsw(&model));
                }
                Ok(None) => {
                    out.insert("configuration_error".into(), json!("collection not found"));
                }
                Err(e) => {
                    out.insert("configuration_error".into(), json!(e.to_string()));
                }
            }
        }
        if let Some(dir) = self.storage_dir() {
            out.insert("persist_directory".into(), json!(dir.display().to_string()));
            out.insert(
                "footprint_note".into(),
                json!(
                    "the persist directory is the whole server's; the footprint counts only this \
                     collection's vector segment directory and SQLite rows; the HNSW files are \
                     rewritten every sync_threshold writes"
                ),
            );
        }
        out.insert(
            "ef_search_note".into(),
            json!(
                "ef_search is fixed at collection creation: the server applies a changed value \
                 only after a restart"
            ),
        );
        out
    }

    /// Deletes the collection (the server keeps running).
    fn close(&mut self) -> EngineResult<()> {
        if let Some(col) = self.collection.take() {
            self.drop_collection("close", &col.name)?;
        }
        Ok(())
    }
}

/// This collection's part of `chroma.sqlite3`.
#[derive(Debug, PartialEq, Eq)]
struct SqliteRows {
    /// Id of its VECTOR segment, which names its HNSW directory in the persist directory.
    vector_segment: Option<String>,
    /// Summed byte lengths of the values in its rows of `embeddings`, `embedding_metadata`
    /// and the `embeddings_queue` log.
    bytes: u64,
}

#[derive(Debug)]
enum SqliteError {
    /// The `sqlite3` command is missing: the figures cannot be measured here.
    NoCli(String),
    Failed(String),
}

/// Reads this collection's segment id and row bytes from `chroma.sqlite3` with the `sqlite3`
/// command, read-only (ragdbeval has no SQLite library, and the server keeps writing the file:
/// SQLite's own locking makes the read consistent). `collection_id` comes from the server and
/// is checked to be a UUID before it goes into the SQL.
fn collection_sqlite_bytes(db: &Path, collection_id: &str) -> Result<SqliteRows, SqliteError> {
    if collection_id.is_empty()
        || !collection_id
            .chars()
            .all(|c| c.is_ascii_hexdigit() || c == '-')
    {
        return Err(SqliteError::Failed(format!(
            "collection id {collection_id:?} is not a UUID"
        )));
    }
    let cid = collection_id;
    // `length(CAST(x AS BLOB))` is the stored byte length of any value (NULL counts 0).
    let b = |x: &str| format!("coalesce(length(CAST({x} AS BLOB)), 0)");
    let sql = format!(
        "SELECT (SELECT id FROM segments WHERE collection = '{cid}' AND scope = 'VECTOR'), \
         (SELECT coalesce(sum({e}), 0) FROM embeddings e JOIN segments s ON e.segment_id = s.id \
          WHERE s.collection = '{cid}') + \
         (SELECT coalesce(sum({m}), 0) FROM embedding_metadata m \
          JOIN embeddings e ON m.id = e.id JOIN segments s ON e.segment_id = s.id \
          WHERE s.collection = '{cid}') + \
         (SELECT coalesce(sum({q}), 0) FROM embeddings_queue q \
          WHERE q.topic LIKE '%/{cid}');",
        e = [
            b("e.id"),
            b("e.segment_id"),
            b("e.embedding_id"),
            b("e.seq_id"),
            b("e.created_at"),
        ]
        .join(" + "),
        m = [
            b("m.id"),
            b("m.key"),
            b("m.string_value"),
            b("m.int_value"),
            b("m.float_value"),
            b("m.bool_value"),
        ]
        .join(" + "),
        q = [
            b("q.seq_id"),
            b("q.created_at"),
            b("q.operation"),
            b("q.topic"),
            b("q.id"),
            b("q.vector"),
            b("q.encoding"),
            b("q.metadata"),
        ]
        .join(" + "),
    );
    let output = Command::new("sqlite3")
        .args(["-readonly", "-batch", "-noheader", "-separator", "|"])
        .args(["-cmd", ".timeout 10000"])
        .arg(db)
        .arg(&sql)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => SqliteError::NoCli(
                "the sqlite3 command is needed to find this collection's segment in \
                 chroma.sqlite3 and is not installed"
                    .into(),
            ),
            _ => SqliteError::Failed(format!("running sqlite3: {e}")),
        })?;
    if !output.status.success() {
        return Err(SqliteError::Failed(format!(
            "sqlite3 {}: {}",
            db.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        )));
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.trim();
    let (segment, bytes) = line
        .split_once('|')
        .ok_or_else(|| SqliteError::Failed(format!("unexpected sqlite3 output {line:?}")))?;
    let bytes = bytes.parse().map_err(|e| {
        SqliteError::Failed(format!("unexpected sqlite3 byte count {bytes:?}: {e}"))
    })?;
    Ok(SqliteRows {
        vector_segment: (!segment.is_empty()).then(|| segment.to_string()),
        bytes,
    })
}
