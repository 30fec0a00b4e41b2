//! `pgvector`: PostgreSQL with the pgvector extension, driven as a real server over the wire.
//!
//! One table per collection, `(id bigint PRIMARY KEY, embedding vector(dim))` (or
//! `halfvec(dim)`). The build phase loads it with binary `COPY`, the fastest path PostgreSQL
//! has, and only then runs `CREATE INDEX` (HNSW or IVFFlat) in
//! [`VectorEngine::wait_until_ready`], which is how pgvector recommends loading: building the
//! graph once over all rows is much faster than maintaining it row by row, and an IVFFlat
//! index needs the data to train its lists.
//!
//! PostgreSQL's planner decides per query whether to use the index at all. A sequential scan
//! returns exact results, so a benchmark that silently fell back to one would report perfect
//! recall at scan speed. After every index wait the adapter therefore runs `EXPLAIN` of the
//! search query once per search-parameter set and reports `may_full_scan` (which marks the
//! run) when a plan does not use the index. Its cost model prefers a scan on small tables and at
//! large `ef_search`; the search parameter `seqscan = false` (`SET enable_seqscan = off`) makes
//! it use the index, which the sets that chart an index curve do.
//!
//! Searches take `&self` and run from many client threads at once, each on its own
//! connection taken from a small pool; a session gets the current search settings (`SET
//! hnsw.ef_search`, ...) and its prepared search statement when it is first used after the
//! parameters changed.
//!
//! Without `--url`, [`open`] starts a local server with `scripts/servers/pgvector.sh start` and
//! leaves it running for later runs (stop it with `scripts/servers/pgvector.sh stop`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::ops::Range;
use std::path::Path;
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use pgvector::Vector;
use postgres::config::Host;
use postgres::{Client, Config, NoTls, Statement};
use serde_json::{Map, Value, json};

use crate::distance::Distance;
use crate::engine::{
    CollectionSpec, ConnectOptions, EngineError, EngineResult, Footprint, IndexReport, Neighbor,
    PointId, SourcedBytes, VectorEngine,
};
use crate::params::{ParamMap, ParamMapExt};

/// Named parameter sets and sweeps of this engine (`[sets.NAME]` tables).
pub const CONFIG: &str = include_str!("config.toml");

const ENGINE: &str = "pgvector";
/// The script that starts a local server when no `--url` is given.
const SERVER_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/servers/pgvector.sh");
/// What to tell a user whose server cannot be reached.
const START_HINT: &str = "start the server with `scripts/servers/pgvector.sh start` or pass --url postgres://USER@HOST:PORT/DB";
/// Used when the runner passes no timeout (`ConnectOptions::default()`).
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Connecting is quick or hopeless; a dead address should fail fast even with a long
/// per-request timeout.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Points per request when the runner passes no batch size.
const DEFAULT_BATCH: usize = 1000;
/// Idle connections kept for reuse; more concurrent callers than this still work, their
/// surplus connections are closed when returned.
const MAX_IDLE_CONNECTIONS: usize = 64;
/// Encoded COPY data is sent in slices of this size (one CopyData message each).
const COPY_SLICE: usize = 256 * 1024;
/// `k` of the query whose plan `EXPLAIN` checks (the runner's `k` is not known here; the plan
/// of an ANN query does not depend on it as long as it is small).
const EXPLAIN_K: i64 = 10;
/// pgvector's limits (its documented ranges), checked before any work is done.
const HNSW_M: Range<u64> = 2..101;
const HNSW_EF_CONSTRUCTION: Range<u64> = 4..1001;
const HNSW_EF_SEARCH: Range<u64> = 1..1001;
const IVFFLAT_LISTS: Range<u64> = 1..32769;
/// Largest dimension a `vector` / `halfvec` column can hold.
const MAX_DIM: usize = 16_000;

/// Build parameters accepted by [`VectorEngine::create`].
const BUILD_PARAMS: &[&str] = &[
    "index",
    "m",
    "ef_construction",
    "lists",
    "type",
    "quantization",
    "maintenance_work_mem",
    "parallel_workers",
];

/// Search parameters accepted by [`VectorEngine::set_search_params`].
const SEARCH_PARAMS: &[&str] = &["ef_search", "probes", "iterative_scan", "rerank", "seqscan"];

/// Connects to the PostgreSQL server named by `opts.url`, or, without one, starts a local
/// server with `scripts/servers/pgvector.sh start` and connects to it. Makes sure the `vector`
/// extension exists in the database, so that a wrong address or a server without pgvector
/// fails here rather than in the middle of a timed phase.
pub fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    let given = opts.url.as_deref().map(str::trim).filter(|u| !u.is_empty());
    let (url, auto_started) = match given {
        Some(u) => (u.to_string(), false),
        None => (start_local_server()?, true),
    };
    let mut config = Config::from_str(&url).map_err(|e| {
        EngineError::bad_param(
            ENGINE,
            "url",
            format!("not a PostgreSQL URL ({e}); expected postgres://USER@HOST:PORT/DATABASE"),
        )
    })?;
    // The API key option doubles as the password, so that it never has to appear in a URL.
    if config.get_password().is_none()
        && let Some(key) = &opts.api_key
    {
        config.password(key.as_str());
    }
    let connect_timeout = if opts.timeout.is_zero() {
        DEFAULT_CONNECT_TIMEOUT
    } else {
        opts.timeout.min(MAX_CONNECT_TIMEOUT)
    };
    config
        .connect_timeout(connect_timeout)
        .application_name("ragdbeval");
    let target = describe_target(&config);

    let mut client = config
        .connect(NoTls)
        .map_err(|e| EngineError::Unreachable {
            engine: ENGINE.into(),
            target: target.clone(),
            message: format!("{}; {START_HINT}", pg_message(&e)),
        })?;
    client
        .batch_execute("CREATE EXTENSION IF NOT EXISTS vector")
        .map_err(|e| {
            EngineError::op(
                ENGINE,
                "open",
                format!(
                    "the pgvector extension is not available in this database ({}); \
                     install pgvector or use scripts/servers/pgvector.sh start",
                    pg_message(&e)
                ),
            )
        })?;
    let row = client
        .query_one(
            "SELECT current_setting('server_version'), \
             (SELECT extversion FROM pg_extension WHERE extname = 'vector')",
            &[],
        )
        .map_err(|e| EngineError::op(ENGINE, "open", pg_message(&e)))?;
    let server_version: String = row.try_get(0).unwrap_or_default();
    let vector_version: Option<String> = row.try_get(1).unwrap_or_default();
    let version = format!(
        "PostgreSQL {server_version}, pgvector {}",
        vector_version.as_deref().unwrap_or("?")
    );
    let server_pid = opts
        .server_pid
        .or_else(|| detect_server_pid(&mut client, &config));
    if auto_started {
        eprintln!(
            "pgvector: using {target} ({version}); it keeps running after the benchmark: \
             stop it with scripts/servers/pgvector.sh stop"
        );
    }

    let engine = PgVector {
        config,
        target,
        statement_timeout: (!opts.timeout.is_zero()).then_some(opts.timeout),
        recreate: opts.recreate,
        batch_size: if opts.batch_size == 0 {
            DEFAULT_BATCH
        } else {
            opts.batch_size
        },
        upload_parallel: opts.upload_parallel.max(1),
        pool: Mutex::new(Vec::new()),
        version,
        server_pid,
        auto_started,
        collection: None,
        search: SearchParams::default(),
        checked: Vec::new(),
        generation: 0,
    };
    // The connection that proved the server works is the first one of the pool.
    let conn = engine
        .init_session(client)
        .map_err(|e| engine.fail("open", e))?;
    engine.put_conn(conn);
    Ok(Box::new(engine))
}

/// Runs `scripts/servers/pgvector.sh start` and returns the URL it prints.
fn start_local_server() -> EngineResult<String> {
    eprintln!("pgvector: no --url given; starting a local server with {SERVER_SCRIPT} start");
    let failed = |message: String| EngineError::Unreachable {
        engine: ENGINE.into(),
        target: "a local server (scripts/servers/pgvector.sh)".into(),
        message,
    };
    let out = Command::new("bash")
        .arg(SERVER_SCRIPT)
        .arg("start")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            failed(format!(
                "could not run {SERVER_SCRIPT}: {e}; pass --url instead"
            ))
        })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let url = stdout
        .lines()
        .map(str::trim)
        .rfind(|l| l.starts_with("postgres://") || l.starts_with("postgresql://"));
    match url {
        Some(url) if out.status.success() => Ok(url.to_string()),
        _ => {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(15).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            Err(failed(format!(
                "`{SERVER_SCRIPT} start` failed ({}): {}; start a PostgreSQL server with \
                 pgvector yourself and pass --url postgres://USER@HOST:PORT/DB",
                out.status,
                tail.join(" | ")
            )))
        }
    }
}

/// `user@host:port/db` of a config, without the password (for messages and results).
fn describe_target(config: &Config) -> String {
    let host = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) => name.clone(),
            #[cfg(unix)]
            Host::Unix(path) => path.display().to_string(),
        })
        .collect::<Vec<_>>()
        .join(",");
    let port = config
        .get_ports()
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let port = if port.is_empty() { "5432".into() } else { port };
    format!(
        "postgres://{}@{host}:{port}/{}",
        config.get_user().unwrap_or(""),
        config.get_dbname().unwrap_or("")
    )
}

/// True when every host of the config is this machine (loopback or a unix socket).
fn is_local(config: &Config) -> bool {
    let hosts = config.get_hosts();
    !hosts.is_empty()
        && hosts.iter().all(|h| match h {
            Host::Tcp(name) => matches!(name.as_str(), "localhost" | "127.0.0.1" | "::1"),
            #[cfg(unix)]
            Host::Unix(_) => true,
        })
}

/// The postmaster's PID when the server runs on this host, for RSS/CPU sampling of its
/// process tree: the first line of `postmaster.pid` in the data directory, or else the parent
/// of this session's backend process.
fn detect_server_pid(client: &mut Client, config: &Config) -> Option<u32> {
    if !is_local(config) {
        return None;
    }
    // Reading `data_directory` needs superuser or pg_read_all_settings; failing is fine.
    let dir: Option<String> = client
        .query_one("SELECT current_setting('data_directory')", &[])
        .ok()
        .and_then(|row| row.try_get(0).ok());
    if let Some(dir) = dir
        && let Ok(text) = std::fs::read_to_string(Path::new(&dir).join("postmaster.pid"))
        && let Some(pid) = text.lines().next().and_then(|l| l.trim().parse().ok())
        && is_postgres_process(pid)
    {
        return Some(pid);
    }
    let backend: i32 = client
        .query_one("SELECT pg_backend_pid()", &[])
        .ok()?
        .try_get(0)
        .ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{backend}/stat")).ok()?;
    // `pid (comm) state ppid ...`: the command name may contain spaces, so split after ')'.
    let ppid: u32 = stat
        .rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    is_postgres_process(ppid).then_some(ppid)
}

/// Guards against a PID from another PID namespace (a server in a container) that happens to
/// name some unrelated local process.
fn is_postgres_process(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim().starts_with("postgres"))
        .unwrap_or(false)
}

/// A server error's own words (message, detail, hint), or the client error.
fn pg_message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut msg = db.message().to_string();
            if let Some(detail) = db.detail() {
                let _ = write!(msg, " ({detail})");
            }
            if let Some(hint) = db.hint() {
                let _ = write!(msg, "; hint: {hint}");
            }
            msg
        }
        None => e.to_string(),
    }
}

/// True when a client error means the connection is gone (server stopped or crashed), as
/// opposed to a statement the server rejected.
fn is_connection_lost(e: &postgres::Error) -> bool {
    if let Some(db) = e.as_db_error() {
        // Class 57P: admin_shutdown, crash_shutdown, cannot_connect_now.
        return db.code().code().starts_with("57P");
    }
    e.is_closed()
        || std::error::Error::source(e)
            .is_some_and(|s| s.downcast_ref::<std::io::Error>().is_some())
}

/// Locks a mutex even if a thread panicked while holding it: the pool holds plain
/// connections, which stay usable (or are detected as closed on use).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `"name"` with embedded quotes doubled: table names come from dataset names.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `'text'` with embedded quotes doubled.
fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// 32-bit FNV-1a: a short stable suffix that keeps derived names unique.
fn fnv1a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// The index name of a table. PostgreSQL truncates identifiers to 63 bytes, so `TABLE_idx`
/// of a long table name could collide with the table itself; a hash suffix keeps it unique.
fn index_name(table: &str) -> String {
    let mut cut = table.len().min(40);
    while !table.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}_{:08x}_idx", &table[..cut], fnv1a(table))
}

fn pg_id(id: PointId) -> EngineResult<i64> {
    i64::try_from(id).map_err(|_| {
        EngineError::op(
            ENGINE,
            "write",
            format!("point id {id} does not fit the table's bigint id column"),
        )
    })
}

/// f32 to IEEE half precision (round to nearest, ties to even). `None` when the value is not
/// finite or overflows half precision (±65504), which pgvector rejects too.
fn f32_to_f16(value: f32) -> Option<u16> {
    let x = value.to_bits();
    let sign = (x & 0x8000_0000) >> 16;
    let exp = x & 0x7F80_0000;
    let man = x & 0x007F_FFFF;
    if exp == 0x7F80_0000 {
        return None;
    }
    let half_exp = ((exp >> 23) as i32) - 127 + 15;
    if half_exp >= 0x1F {
        return None;
    }
    let half = if half_exp <= 0 {
        // Subnormal half (or zero): shift the mantissa with its implicit bit.
        if 14 - half_exp > 24 {
            sign
        } else {
            let man = man | 0x0080_0000;
            let shift = (14 - half_exp) as u32;
            let mut half_man = man >> shift;
            let round_bit = 1u32 << (shift - 1);
            if man & round_bit != 0 && man & (3 * round_bit - 1) != 0 {
                half_man += 1;
            }
            sign | half_man
        }
    } else {
        let bits = sign | ((half_exp as u32) << 10) | (man >> 13);
        let round_bit = 0x0000_1000;
        // Rounding up may carry into the exponent, which is the correct result.
        if man & round_bit != 0 && man & (3 * round_bit - 1) != 0 {
            bits + 1
        } else {
            bits
        }
    };
    let half = half as u16;
    (half & 0x7C00 != 0x7C00).then_some(half)
}

/// Which ANN index `CREATE INDEX` builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IndexKind {
    Hnsw,
    IvfFlat,
}

impl IndexKind {
    fn method(self) -> &'static str {
        match self {
            IndexKind::Hnsw => "hnsw",
            IndexKind::IvfFlat => "ivfflat",
        }
    }
}

/// Column type of the embeddings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum VecType {
    /// 32-bit floats.
    Vector,
    /// 16-bit floats: half the storage, indexable up to 4,000 dimensions.
    HalfVec,
}

impl VecType {
    fn name(self) -> &'static str {
        match self {
            VecType::Vector => "vector",
            VecType::HalfVec => "halfvec",
        }
    }

    /// Bytes per element in pgvector's binary format.
    fn elem_bytes(self) -> usize {
        match self {
            VecType::Vector => 4,
            VecType::HalfVec => 2,
        }
    }
}

/// pgvector's operator for a metric: each returns the harness's own distance convention
/// (L2 norm, `1 - cos`, negated inner product), so smaller is always closer.
fn distance_operator(distance: Distance) -> &'static str {
    match distance {
        Distance::Euclidean => "<->",
        Distance::Angular => "<=>",
        Distance::Dot => "<#>",
    }
}

fn operator_class(ty: VecType, distance: Distance) -> String {
    let metric = match distance {
        Distance::Euclidean => "l2",
        Distance::Angular => "cosine",
        Distance::Dot => "ip",
    };
    format!("{}_{metric}_ops", ty.name())
}

/// Parsed build parameters.
#[derive(Debug, Clone)]
struct BuildParams {
    index: IndexKind,
    m: u64,
    ef_construction: u64,
    /// IVFFlat lists; `None` picks pgvector's recommendation from the row count.
    lists: Option<u64>,
    vec_type: VecType,
    /// Index `binary_quantize(embedding)::bit(dim)` and re-rank candidates exactly.
    binary: bool,
    maintenance_work_mem: Option<String>,
    parallel_workers: Option<u64>,
}

fn bad_param(param: &str, message: impl std::fmt::Display) -> EngineError {
    EngineError::bad_param(ENGINE, param, message)
}

impl BuildParams {
    fn parse(params: &ParamMap) -> EngineResult<BuildParams> {
        params
            .reject_unknown(BUILD_PARAMS)
            .map_err(|e| bad_param("build", e))?;
        let get_u64 = |name: &str| params.get_u64(name).map_err(|e| bad_param(name, e));
        let get_str = |name: &str| params.get_str(name).map_err(|e| bad_param(name, e));
        let index = match get_str("index")?.unwrap_or("hnsw") {
            "hnsw" => IndexKind::Hnsw,
            "ivfflat" => IndexKind::IvfFlat,
            other => {
                return Err(bad_param(
                    "index",
                    format!("`{other}`: expected hnsw or ivfflat"),
                ));
            }
        };
        let m = get_u64("m")?;
        let ef_construction = get_u64("ef_construction")?;
        let lists = get_u64("lists")?;
        match index {
            IndexKind::Hnsw if lists.is_some() => {
                return Err(bad_param("lists", "applies to index = \"ivfflat\" only"));
            }
            IndexKind::IvfFlat if m.is_some() || ef_construction.is_some() => {
                let name = if m.is_some() { "m" } else { "ef_construction" };
                return Err(bad_param(name, "applies to index = \"hnsw\" only"));
            }
            _ => {}
        }
        // pgvector's defaults.
        let m = m.unwrap_or(16);
        let ef_construction = ef_construction.unwrap_or(64);
        if index == IndexKind::Hnsw {
            if !HNSW_M.contains(&m) {
                return Err(bad_param(
                    "m",
                    format!("{m} is outside pgvector's range 2..=100"),
                ));
            }
            if !HNSW_EF_CONSTRUCTION.contains(&ef_construction) {
                return Err(bad_param(
                    "ef_construction",
                    format!("{ef_construction} is outside pgvector's range 4..=1000"),
                ));
            }
            if ef_construction < 2 * m {
                return Err(bad_param(
                    "ef_construction",
                    format!(
                        "pgvector needs ef_construction >= 2 * m ({ef_construction} < {})",
                        2 * m
                    ),
                ));
            }
        }
        if let Some(l) = lists
            && !IVFFLAT_LISTS.contains(&l)
        {
            return Err(bad_param(
                "lists",
                format!("{l} is outside pgvector's range 1..=32768"),
            ));
        }
        let vec_type = match get_str("type")?.unwrap_or("vector") {
            "vector" => VecType::Vector,
            "halfvec" => VecType::HalfVec,
            other => {
                return Err(bad_param(
                    "type",
                    format!("`{other}`: expected vector or halfvec"),
                ));
            }
        };
        let binary = match get_str("quantization")?.unwrap_or("none") {
            "none" => false,
            "binary" => true,
            other => {
                return Err(bad_param(
                    "quantization",
                    format!("`{other}`: expected none or binary"),
                ));
            }
        };
        let maintenance_work_mem = match params.get("maintenance_work_mem") {
            None => None,
            Some(crate::params::ParamValue::Str(s)) => Some(s.clone()),
            Some(other) => {
                return Err(bad_param(
                    "maintenance_work_mem",
                    format!("`{other}`: write a size with its unit, e.g. \"1GB\" or \"512MB\""),
                ));
            }
        };
        let parallel_workers = get_u64("parallel_workers")?;
        if let Some(w) = parallel_workers
            && w > 1024
        {
            return Err(bad_param(
                "parallel_workers",
                format!("{w} is more than 1024"),
            ));
        }
        Ok(BuildParams {
            index,
            m,
            ef_construction,
            lists,
            vec_type,
            binary,
            maintenance_work_mem,
            parallel_workers,
        })
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("index".into(), self.index.method().into());
        match self.index {
            IndexKind::Hnsw => {
                m.insert("m".into(), self.m.into());
                m.insert("ef_construction".into(), self.ef_construction.into());
            }
            IndexKind::IvfFlat => {
                m.insert(
                    "lists".into(),
                    self.lists.map_or(Value::from("auto"), Value::from),
                );
            }
        }
        m.insert("type".into(), self.vec_type.name().into());
        m.insert(
            "quantization".into(),
            if self.binary { "binary" } else { "none" }.into(),
        );
        Value::Object(m)
    }
}

/// Parsed search parameters; `None` leaves the server's setting at its default.
#[derive(Debug, Clone, Default, PartialEq)]
struct SearchParams {
    ef_search: Option<u64>,
    probes: Option<u64>,
    iterative_scan: Option<String>,
    /// Candidates fetched by the binary index before exact re-ranking (default 4 × k).
    rerank: Option<u64>,
    /// `enable_seqscan`: `false` makes the planner use the index even where it estimates a
    /// scan to be cheaper (small tables, large `ef_search`).
    seqscan: Option<bool>,
}

impl SearchParams {
    fn parse(params: &ParamMap) -> EngineResult<SearchParams> {
        params
            .reject_unknown(SEARCH_PARAMS)
            .map_err(|e| bad_param("search", e))?;
        let get_u64 = |name: &str| params.get_u64(name).map_err(|e| bad_param(name, e));
        let ef_search = get_u64("ef_search")?;
        if let Some(ef) = ef_search
            && !HNSW_EF_SEARCH.contains(&ef)
        {
            return Err(bad_param(
                "ef_search",
                format!("{ef} is outside pgvector's range 1..=1000"),
            ));
        }
        let probes = get_u64("probes")?;
        if let Some(p) = probes
            && !IVFFLAT_LISTS.contains(&p)
        {
            return Err(bad_param(
                "probes",
                format!("{p} is outside pgvector's range 1..=32768"),
            ));
        }
        let iterative_scan = params
            .get_str("iterative_scan")
            .map_err(|e| bad_param("iterative_scan", e))?;
        if let Some(mode) = iterative_scan
            && !matches!(mode, "off" | "relaxed_order" | "strict_order")
        {
            return Err(bad_param(
                "iterative_scan",
                format!("`{mode}`: expected off, relaxed_order or strict_order"),
            ));
        }
        let rerank = get_u64("rerank")?;
        if rerank == Some(0) {
            return Err(bad_param("rerank", "must be at least 1"));
        }
        let seqscan = params
            .get_bool("seqscan")
            .map_err(|e| bad_param("seqscan", e))?;
        Ok(SearchParams {
            ef_search,
            probes,
            iterative_scan: iterative_scan.map(str::to_string),
            rerank,
            seqscan,
        })
    }

    /// Checks what only makes sense once the index kind is known.
    fn check_against(&self, index: IndexKind) -> EngineResult<()> {
        if index == IndexKind::IvfFlat && self.iterative_scan.as_deref() == Some("strict_order") {
            return Err(bad_param(
                "iterative_scan",
                "IVFFlat supports off and relaxed_order only (strict_order is HNSW-only)",
            ));
        }
        Ok(())
    }

    /// Session settings for these parameters. Unset ones are reset, so a value of an earlier
    /// parameter set never lingers on a pooled connection.
    fn settings_sql(&self, index: IndexKind) -> String {
        let mut sql = String::new();
        match self.ef_search {
            Some(ef) => {
                let _ = write!(sql, "SET hnsw.ef_search = {ef};");
            }
            None => sql.push_str("RESET hnsw.ef_search;"),
        }
        match self.probes {
            Some(p) => {
                let _ = write!(sql, "SET ivfflat.probes = {p};");
            }
            None => sql.push_str("RESET ivfflat.probes;"),
        }
        let (this, other) = match index {
            IndexKind::Hnsw => ("hnsw.iterative_scan", "ivfflat.iterative_scan"),
            IndexKind::IvfFlat => ("ivfflat.iterative_scan", "hnsw.iterative_scan"),
        };
        match &self.iterative_scan {
            Some(mode) => {
                let _ = write!(sql, "SET {this} = {};", quote_literal(mode));
            }
            None => {
                let _ = write!(sql, "RESET {this};");
            }
        }
        let _ = write!(sql, "RESET {other};");
        match self.seqscan {
            Some(on) => {
                let _ = write!(
                    sql,
                    "SET enable_seqscan = {};",
                    if on { "on" } else { "off" }
                );
            }
            None => sql.push_str("RESET enable_seqscan;"),
        }
        sql
    }

    fn to_json(&self) -> Value {
        json!({
            "ef_search": self.ef_search,
            "probes": self.probes,
            "iterative_scan": self.iterative_scan,
            "rerank": self.rerank,
            "seqscan": self.seqscan,
        })
    }
}

/// Facts about the built index, kept for `describe`.
#[derive(Debug, Clone)]
struct IndexInfo {
    definition: String,
    build_s: f64,
    lists: Option<u64>,
    maintenance_work_mem: String,
    max_parallel_maintenance_workers: String,
    notices: Vec<String>,
}

/// The table under test.
#[derive(Debug, Clone)]
struct Collection {
    name: String,
    table: String,
    index_name: String,
    dim: usize,
    distance: Distance,
    build: BuildParams,
    index: Option<IndexInfo>,
    /// A stored vector, used as the query of `EXPLAIN`.
    probe: Option<Vec<f32>>,
    /// The last plan check, for `describe`.
    plans: Map<String, Value>,
}

impl Collection {
    /// The query vector as a `$1` expression of the column's type. The parameter itself is
    /// always sent as `vector` (pgvector's Rust type); the server casts it for `halfvec`.
    fn query_expr(&self) -> String {
        match self.build.vec_type {
            VecType::Vector => "$1::vector".into(),
            VecType::HalfVec => format!("$1::vector::halfvec({})", self.dim),
        }
    }

    /// `$1` query, `$2` k, and with binary quantization `$3` the candidates to re-rank.
    fn search_sql(&self) -> String {
        let op = distance_operator(self.distance);
        let q = self.query_expr();
        let t = &self.table;
        if self.build.binary {
            // The inner ORDER BY matches the index expression, so the bit index serves it;
            // the outer query re-ranks those candidates by the exact distance.
            format!(
                "SELECT id, dist FROM (SELECT id, embedding {op} {q} AS dist FROM {t} \
                 ORDER BY binary_quantize(embedding)::bit({dim}) <~> binary_quantize($1::vector) \
                 LIMIT $3) AS candidates ORDER BY dist, id LIMIT $2",
                dim = self.dim
            )
        } else {
            format!(
                "SELECT id, embedding {op} {q} AS dist FROM {t} ORDER BY embedding {op} {q} LIMIT $2"
            )
        }
    }

    fn index_sql(&self, lists: Option<u64>) -> String {
        let (expr, opclass) = if self.build.binary {
            (
                format!("(binary_quantize(embedding)::bit({}))", self.dim),
                "bit_hamming_ops".to_string(),
            )
        } else {
            (
                "embedding".to_string(),
                operator_class(self.build.vec_type, self.distance),
            )
        };
        let with = match self.build.index {
            IndexKind::Hnsw => format!(
                "m = {}, ef_construction = {}",
                self.build.m, self.build.ef_construction
            ),
            IndexKind::IvfFlat => format!("lists = {}", lists.unwrap_or(100)),
        };
        format!(
            "CREATE INDEX {} ON {} USING {} ({expr} {opclass}) WITH ({with})",
            quote_ident(&self.index_name),
            self.table,
            self.build.index.method()
        )
    }

    fn rerank(&self, params: &SearchParams, k: usize) -> i64 {
        let r = params.rerank.map_or(4 * k as u64, |r| r.max(k as u64));
        i64::try_from(r).unwrap_or(i64::MAX)
    }
}

/// pgvector's IVFFlat recommendation: rows / 1000 up to a million rows, sqrt(rows) above.
fn recommended_lists(rows: u64) -> u64 {
    let lists = if rows <= 1_000_000 {
        rows / 1000
    } else {
        (rows as f64).sqrt() as u64
    };
    lists.clamp(IVFFLAT_LISTS.start, IVFFLAT_LISTS.end - 1)
}

/// A pooled session and what it has been set up for.
struct Conn {
    client: Client,
    /// The engine generation its settings and prepared statement belong to.
    generation: u64,
    search: Option<Statement>,
}

/// Error inside a connection closure: the client's, or one the adapter raises itself.
enum Fail {
    Pg(postgres::Error),
    Io(std::io::Error),
    Engine(EngineError),
}

impl From<postgres::Error> for Fail {
    fn from(e: postgres::Error) -> Self {
        Fail::Pg(e)
    }
}

impl From<EngineError> for Fail {
    fn from(e: EngineError) -> Self {
        Fail::Engine(e)
    }
}

/// The engine: a connection configuration, a pool of sessions and the table under test.
pub struct PgVector {
    config: Config,
    target: String,
    statement_timeout: Option<Duration>,
    recreate: bool,
    batch_size: usize,
    upload_parallel: usize,
    pool: Mutex<Vec<Conn>>,
    version: String,
    server_pid: Option<u32>,
    auto_started: bool,
    collection: Option<Collection>,
    search: SearchParams,
    /// Every search-parameter set validated so far (the runner checks all of them before the
    /// build): `EXPLAIN` checks the plan of each.
    checked: Vec<(String, SearchParams)>,
    /// Bumped whenever the table or the search parameters change; a pooled session whose
    /// generation differs re-applies its settings and re-prepares its statement.
    generation: u64,
}

impl PgVector {
    fn unreachable(&self, message: String) -> EngineError {
        EngineError::Unreachable {
            engine: ENGINE.into(),
            target: self.target.clone(),
            message,
        }
    }

    /// Maps a failure to an [`EngineError`]: a lost connection becomes `Unreachable` with a
    /// hint, a rejected statement keeps the server's message.
    fn fail(&self, operation: &str, fail: Fail) -> EngineError {
        match fail {
            Fail::Engine(e) => e,
            Fail::Io(e) => self.unreachable(format!(
                "{operation}: connection lost ({e}); is the server still running? {START_HINT}"
            )),
            Fail::Pg(e) if is_connection_lost(&e) => self.unreachable(format!(
                "{operation}: connection lost ({}); is the server still running? {START_HINT}",
                pg_message(&e)
            )),
            Fail::Pg(e) => EngineError::op(ENGINE, operation, pg_message(&e)),
        }
    }

    fn collection(&self, operation: &str) -> EngineResult<&Collection> {
        self.collection
            .as_ref()
            .ok_or_else(|| EngineError::op(ENGINE, operation, "no table: create() was not called"))
    }

    /// Settings every session gets once.
    fn init_session(&self, mut client: Client) -> Result<Conn, Fail> {
        let mut sql = String::new();
        if let Some(t) = self.statement_timeout {
            let _ = write!(sql, "SET statement_timeout = {};", t.as_millis());
        }
        // Plan every execution with its actual values, as `EXPLAIN` does: a generic plan of
        // `ORDER BY ... LIMIT $2` does not know the limit and may pick a scan the checked plan
        // never showed.
        sql.push_str("SET plan_cache_mode = force_custom_plan;");
        // Using a vector loads pgvector's library, so that its settings (`hnsw.ef_search`, ...)
        // are validated when set instead of kept as unchecked placeholders.
        sql.push_str("SELECT '[1]'::vector;");
        client.batch_execute(&sql)?;
        Ok(Conn {
            client,
            generation: u64::MAX,
            search: None,
        })
    }

    fn connect(&self, operation: &str) -> EngineResult<Conn> {
        let client = self.config.connect(NoTls).map_err(|e| {
            self.unreachable(format!("{operation}: {}; {START_HINT}", pg_message(&e)))
        })?;
        self.init_session(client)
            .map_err(|f| self.fail(operation, f))
    }

    fn take_conn(&self, operation: &str) -> EngineResult<Conn> {
        loop {
            let pooled = lock(&self.pool).pop();
            match pooled {
                Some(conn) if !conn.client.is_closed() => return Ok(conn),
                // A closed session (server restarted) is dropped; try the next one.
                Some(_) => continue,
                None => return self.connect(operation),
            }
        }
    }

    fn put_conn(&self, conn: Conn) {
        let mut pool = lock(&self.pool);
        if pool.len() < MAX_IDLE_CONNECTIONS {
            pool.push(conn);
        }
    }

    /// Runs `f` on a pooled session. The session goes back to the pool unless the call
    /// failed in a way that may have left it broken.
    fn with_conn<T>(
        &self,
        operation: &str,
        f: impl FnOnce(&mut Conn) -> Result<T, Fail>,
    ) -> EngineResult<T> {
        let mut conn = self.take_conn(operation)?;
        match f(&mut conn) {
            Ok(v) => {
                self.put_conn(conn);
                Ok(v)
            }
            Err(fail) => {
                let reusable = matches!(&fail, Fail::Pg(e) if e.as_db_error().is_some())
                    && !conn.client.is_closed();
                if reusable {
                    self.put_conn(conn);
                }
                Err(self.fail(operation, fail))
            }
        }
    }

    /// Brings a session up to the current generation and returns its search statement.
    fn ready_for_search(&self, conn: &mut Conn, col: &Collection) -> Result<Statement, Fail> {
        if conn.generation != self.generation || conn.search.is_none() {
            conn.client
                .batch_execute(&self.search.settings_sql(col.build.index))?;
            conn.search = Some(conn.client.prepare(&col.search_sql())?);
            conn.generation = self.generation;
        }
        conn.search
            .clone()
            .ok_or_else(|| Fail::Engine(EngineError::op(ENGINE, "search", "no prepared statement")))
    }

    /// Splits `0..n` into up to `upload_parallel` ranges of at least `batch_size` and runs
    /// `f` on them concurrently (each call takes its own session).
    fn parallel_ranges(
        &self,
        n: usize,
        operation: &str,
        f: impl Fn(Range<usize>) -> EngineResult<()> + Sync,
    ) -> EngineResult<()> {
        let parts = self.upload_parallel.min(n.div_ceil(self.batch_size)).max(1);
        if parts == 1 {
            return f(0..n);
        }
        let per = n.div_ceil(parts);
        std::thread::scope(|s| {
            let f = &f;
            let handles: Vec<_> = (0..parts)
                .map(|p| {
                    let range = p * per..((p + 1) * per).min(n);
                    s.spawn(move || f(range))
                })
                .collect();
            let mut first: Option<EngineError> = None;
            for h in handles {
                let result = h.join().unwrap_or_else(|_| {
                    Err(EngineError::op(
                        ENGINE,
                        operation,
                        "an upload thread panicked",
                    ))
                });
                if let Err(e) = result
                    && first.is_none()
                {
                    first = Some(e);
                }
            }
            first.map_or(Ok(()), Err)
        })
    }

    fn check_rows(
        &self,
        col: &Collection,
        ids: usize,
        floats: usize,
        op: &str,
    ) -> EngineResult<()> {
        if floats != ids * col.dim {
            return Err(EngineError::op(
                ENGINE,
                op,
                format!(
                    "expected {ids} vectors of dimension {}, got {floats} floats",
                    col.dim
                ),
            ));
        }
        Ok(())
    }

    /// Builds the index on a dedicated session: its maintenance settings stay off the search
    /// sessions, it has no statement timeout, and it collects the server's notices (pgvector
    /// says there when the graph outgrows `maintenance_work_mem`).
    fn build_index(&self, col: &Collection) -> EngineResult<IndexInfo> {
        let operation = "create index";
        let notices = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = Arc::clone(&notices);
        let mut config = self.config.clone();
        config.notice_callback(move |n| lock(&sink).push(n.message().to_string()));
        let mut client = config.connect(NoTls).map_err(|e| {
            self.unreachable(format!("{operation}: {}; {START_HINT}", pg_message(&e)))
        })?;
        let fail = |e: postgres::Error| self.fail(operation, Fail::Pg(e));

        let mut setup = String::from("SET statement_timeout = 0;");
        if let Some(mem) = &col.build.maintenance_work_mem {
            let _ = write!(setup, "SET maintenance_work_mem = {};", quote_literal(mem));
        }
        if let Some(w) = col.build.parallel_workers {
            let _ = write!(setup, "SET max_parallel_maintenance_workers = {w};");
        }
        client.batch_execute(&setup).map_err(fail)?;
        let settings = client
            .query_one(
                "SELECT current_setting('maintenance_work_mem'), \
                 current_setting('max_parallel_maintenance_workers')",
                &[],
            )
            .map_err(fail)?;
        let maintenance_work_mem: String = settings.try_get(0).map_err(fail)?;
        let max_parallel_maintenance_workers: String = settings.try_get(1).map_err(fail)?;

        let lists = match col.build.index {
            IndexKind::Hnsw => None,
            IndexKind::IvfFlat => match col.build.lists {
                Some(l) => Some(l),
                None => {
                    let rows: i64 = client
                        .query_one(&format!("SELECT count(*) FROM {}", col.table), &[])
                        .and_then(|r| r.try_get(0))
                        .map_err(fail)?;
                    Some(recommended_lists(rows.max(0) as u64))
                }
            },
        };
        let definition = col.index_sql(lists);
        let t = Instant::now();
        client.batch_execute(&definition).map_err(fail)?;
        let build_s = t.elapsed().as_secs_f64();
        // Fresh statistics, so that the planner costs the index against the real row count.
        client
            .batch_execute(&format!("ANALYZE {}", col.table))
            .map_err(fail)?;
        let notices = lock(&notices).clone();
        Ok(IndexInfo {
            definition,
            build_s,
            lists,
            maintenance_work_mem,
            max_parallel_maintenance_workers,
            notices,
        })
    }

    /// `EXPLAIN`s the search query under each search-parameter set: label → (uses index,
    /// plan text).
    fn explain_all(&self, col: &Collection) -> EngineResult<Vec<(String, bool, String)>> {
        let sets = if self.checked.is_empty() {
            vec![("default".to_string(), self.search.clone())]
        } else {
            self.checked.clone()
        };
        let probe = Vector::from(col.probe.clone().unwrap_or_else(|| vec![0.0; col.dim]));
        let sql = format!("EXPLAIN {}", col.search_sql());
        self.with_conn("explain search", |conn| {
            // This session's settings are changed below; make it set up again before reuse.
            conn.generation = u64::MAX;
            let mut out = Vec::with_capacity(sets.len());
            for (label, params) in &sets {
                conn.client
                    .batch_execute(&params.settings_sql(col.build.index))?;
                let rerank = col.rerank(params, EXPLAIN_K as usize);
                let rows = if col.build.binary {
                    conn.client.query(&sql, &[&probe, &EXPLAIN_K, &rerank])?
                } else {
                    conn.client.query(&sql, &[&probe, &EXPLAIN_K])?
                };
                let mut plan = String::new();
                for row in rows {
                    let line: String = row.try_get(0)?;
                    plan.push_str(&abbreviate_vectors(&line));
                    plan.push('\n');
                }
                let uses_index = plan.contains(&col.index_name);
                out.push((label.clone(), uses_index, plan));
            }
            Ok(out)
        })
    }

    fn count_rows(&self, col: &Collection) -> EngineResult<u64> {
        let sql = format!("SELECT count(*) FROM {}", col.table);
        self.with_conn("count rows", |conn| {
            let n: i64 = conn.client.query_one(&sql, &[])?.try_get(0)?;
            Ok(n.max(0) as u64)
        })
    }

    fn relation_size(&self, function: &str, relation: &str) -> EngineResult<Option<u64>> {
        let sql = format!("SELECT {function}(to_regclass($1))");
        let name = relation.to_string();
        self.with_conn("relation size", |conn| {
            let bytes: Option<i64> = conn.client.query_one(&sql, &[&name])?.try_get(0)?;
            Ok(bytes.map(|b| b.max(0) as u64))
        })
    }
}

impl VectorEngine for PgVector {
    fn name(&self) -> &str {
        ENGINE
    }

    fn version(&self) -> String {
        self.version.clone()
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        let build = BuildParams::parse(&spec.build_params)?;
        for (_, params) in &self.checked {
            params.check_against(build.index)?;
        }
        if spec.dim == 0 || spec.dim > MAX_DIM {
            return Err(EngineError::op(
                ENGINE,
                "create",
                format!(
                    "dimension {} is outside pgvector's range 1..={MAX_DIM}",
                    spec.dim
                ),
            ));
        }
        if let Some(mem) = &build.maintenance_work_mem {
            // The server parses sizes; asking it now fails before a long load, not after.
            let sql = format!(
                "SET maintenance_work_mem = {}; RESET maintenance_work_mem",
                quote_literal(mem)
            );
            self.with_conn("check maintenance_work_mem", |conn| {
                Ok(conn.client.batch_execute(&sql)?)
            })
            .map_err(|e| match e {
                EngineError::Operation { message, .. } => {
                    bad_param("maintenance_work_mem", message)
                }
                other => other,
            })?;
        }
        let table = quote_ident(&spec.name);
        let name = spec.name.clone();
        let exists = self.with_conn("create", |conn| {
            let found: bool = conn
                .client
                .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])?
                .try_get(0)?;
            Ok(found)
        })?;
        if exists && !self.recreate {
            return Err(EngineError::op(
                ENGINE,
                "create",
                format!(
                    "table `{name}` already exists in {}; pass --recreate to drop it",
                    self.target
                ),
            ));
        }
        let ddl = format!(
            "DROP TABLE IF EXISTS {table}; \
             CREATE TABLE {table} (id bigint PRIMARY KEY, embedding {}({}) NOT NULL)",
            build.vec_type.name(),
            spec.dim
        );
        self.with_conn("create", |conn| Ok(conn.client.batch_execute(&ddl)?))?;
        self.collection = Some(Collection {
            index_name: index_name(&spec.name),
            name,
            table,
            dim: spec.dim,
            distance: spec.distance,
            build,
            index: None,
            probe: None,
            plans: Map::new(),
        });
        self.generation += 1;
        Ok(())
    }

    /// Binary `COPY`, split into up to `upload_parallel` concurrent streams.
    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let col = self.collection("bulk insert")?;
        self.check_rows(col, ids.len(), vectors.len(), "bulk insert")?;
        if ids.is_empty() {
            return Ok(());
        }
        let (dim, ty) = (col.dim, col.build.vec_type);
        let sql = format!(
            "COPY {} (id, embedding) FROM STDIN (FORMAT BINARY)",
            col.table
        );
        self.parallel_ranges(ids.len(), "bulk insert", |range| {
            let data = encode_copy(
                &ids[range.clone()],
                &vectors[range.start * dim..range.end * dim],
                dim,
                ty,
            )?;
            self.with_conn("bulk insert (COPY)", |conn| {
                let mut writer = conn.client.copy_in(&sql)?;
                for slice in data.chunks(COPY_SLICE) {
                    writer.write_all(slice).map_err(Fail::Io)?;
                }
                writer.finish()?;
                Ok(())
            })
        })?;
        if let Some(col) = self.collection.as_mut()
            && col.probe.is_none()
        {
            col.probe = Some(vectors[..dim].to_vec());
        }
        Ok(())
    }

    /// Builds the index after the bulk load (`CREATE INDEX`, then `ANALYZE`); later calls
    /// (after mutations) find it maintained already. Either way it checks the search plans.
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        let col = self.collection("wait for index")?.clone();
        if col.index.is_none() {
            let info = self.build_index(&col)?;
            if let Some(c) = self.collection.as_mut() {
                c.index = Some(info);
            }
        }
        let points = self.count_rows(&col)?;
        let plans = self.explain_all(&col)?;
        let mut details = Map::new();
        let mut plan_map = Map::new();
        let mut scans = Vec::new();
        for (label, uses_index, plan) in &plans {
            if !uses_index {
                scans.push(label.clone());
            }
            plan_map.insert(
                label.clone(),
                json!({ "uses_index": uses_index, "plan": plan }),
            );
        }
        let may_full_scan = !scans.is_empty();
        if may_full_scan {
            details.insert(
                "full_scan_reason".into(),
                format!(
                    "PostgreSQL plans a scan without the {} index (exact results at scan speed) \
                     for search parameters: {}. Its cost estimate prefers a scan on small tables \
                     and at large ef_search/probes; search parameter seqscan=false makes it \
                     use the index",
                    col.build.index.method(),
                    scans.join("; ")
                )
                .into(),
            );
        }
        details.insert("index".into(), col.index_name.clone().into());
        details.insert("plans".into(), Value::Object(plan_map.clone()));
        details.insert("explain_k".into(), EXPLAIN_K.into());
        if let Some(c) = self.collection.as_mut() {
            c.plans = plan_map;
            if let Some(info) = &c.index {
                details.insert("index_build_s".into(), info.build_s.into());
                details.insert("notices".into(), json!(info.notices));
            }
        }
        Ok(IndexReport {
            // CREATE INDEX covers every row, and PostgreSQL maintains the index on each write.
            indexed_vectors: Some(points),
            points: Some(points),
            may_full_scan,
            details,
        })
    }

    /// `INSERT ... ON CONFLICT (id) DO UPDATE` from two arrays (ids, vectors).
    fn upsert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let col = self.collection("upsert")?;
        self.check_rows(col, ids.len(), vectors.len(), "upsert")?;
        if ids.is_empty() {
            return Ok(());
        }
        let dim = col.dim;
        // One statement cannot update a row twice: keep the last vector of a repeated id.
        let mut last: HashMap<PointId, usize> = HashMap::with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            last.insert(*id, i);
        }
        let mut rows: Vec<usize> = last.into_values().collect();
        rows.sort_unstable();
        let cast = match col.build.vec_type {
            VecType::Vector => String::new(),
            VecType::HalfVec => format!("::halfvec({dim})"),
        };
        let sql = format!(
            "INSERT INTO {} (id, embedding) SELECT u.id, u.e{cast} \
             FROM unnest($1::int8[], $2::vector[]) AS u(id, e) \
             ON CONFLICT (id) DO UPDATE SET embedding = EXCLUDED.embedding",
            col.table
        );
        self.parallel_ranges(rows.len(), "upsert", |range| {
            let part = &rows[range];
            let pg_ids = part
                .iter()
                .map(|&i| pg_id(ids[i]))
                .collect::<EngineResult<Vec<i64>>>()?;
            let vecs: Vec<Vector> = part
                .iter()
                .map(|&i| Vector::from(vectors[i * dim..(i + 1) * dim].to_vec()))
                .collect();
            self.with_conn("upsert", |conn| {
                conn.client.execute(&sql, &[&pg_ids, &vecs])?;
                Ok(())
            })
        })
    }

    /// `DELETE ... WHERE id = ANY($1)`.
    fn delete_batch(&mut self, ids: &[PointId]) -> EngineResult<()> {
        let col = self.collection("delete")?;
        if ids.is_empty() {
            return Ok(());
        }
        let pg_ids = ids
            .iter()
            .map(|&id| pg_id(id))
            .collect::<EngineResult<Vec<i64>>>()?;
        let sql = format!("DELETE FROM {} WHERE id = ANY($1::int8[])", col.table);
        self.with_conn("delete", |conn| {
            conn.client.execute(&sql, &[&pg_ids])?;
            Ok(())
        })
    }

    /// Validates and stores; sessions pick the values up (`SET`) on their next search.
    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        let parsed = SearchParams::parse(params)?;
        if let Some(col) = &self.collection {
            parsed.check_against(col.build.index)?;
        }
        let label = if params.is_empty() {
            "default".to_string()
        } else {
            params.label()
        };
        if !self.checked.iter().any(|(l, _)| *l == label) {
            self.checked.push((label, parsed.clone()));
        }
        self.search = parsed;
        self.generation += 1;
        Ok(())
    }

    fn search(&self, query: &[f32], k: usize, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        out.clear();
        let col = self.collection("search")?;
        if query.len() != col.dim {
            return Err(EngineError::op(
                ENGINE,
                "search",
                format!("query has dimension {}, table {}", query.len(), col.dim),
            ));
        }
        if k == 0 {
            return Ok(());
        }
        let limit = i64::try_from(k).unwrap_or(i64::MAX);
        let rerank = col.rerank(&self.search, k);
        let vector = Vector::from(query.to_vec());
        let rows = self.with_conn("search", |conn| {
            let stmt = self.ready_for_search(conn, col)?;
            let rows = if col.build.binary {
                conn.client.query(&stmt, &[&vector, &limit, &rerank])?
            } else {
                conn.client.query(&stmt, &[&vector, &limit])?
            };
            Ok(rows)
        })?;
        out.reserve(rows.len());
        for row in rows {
            let id: i64 = row
                .try_get(0)
                .map_err(|e| EngineError::op(ENGINE, "search", e))?;
            let dist: Option<f64> = row
                .try_get(1)
                .map_err(|e| EngineError::op(ENGINE, "search", e))?;
            out.push(Neighbor {
                id: id as PointId,
                score: dist.map_or(f32::NAN, |d| d as f32),
            });
        }
        Ok(())
    }

    /// Index: `pg_relation_size` of the ANN index. Total: `pg_total_relation_size` of the
    /// table, which holds every vector: heap + TOAST + all its indexes (ANN and primary key).
    /// The server's WAL is shared by every table and is not counted.
    fn footprint(&self) -> EngineResult<Footprint> {
        let Some(col) = &self.collection else {
            return Ok(Footprint::unmeasured("no collection created"));
        };
        let gone = |what: &str| format!("{what} not found in the catalog");
        let index = if col.index.is_some() {
            let name = quote_ident(&col.index_name);
            self.relation_size("pg_relation_size", &name)?
                .map(|bytes| SourcedBytes {
                    bytes,
                    source: "pg_relation_size(ANN index)".into(),
                })
                .ok_or_else(|| gone("the index"))
        } else {
            Err("no ANN index: every search is a sequential scan".into())
        };
        let total = self
            .relation_size("pg_total_relation_size", &col.table)?
            .map(|bytes| SourcedBytes {
                bytes,
                source: "pg_total_relation_size(table): heap + TOAST + indexes (WAL excluded)"
                    .into(),
            })
            .ok_or_else(|| gone("the table"));
        Ok(Footprint::new(index, total))
    }

    fn server_pid(&self) -> Option<u32> {
        self.server_pid
    }

    fn in_process(&self) -> bool {
        false
    }

    fn describe(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("server".into(), self.version.clone().into());
        m.insert("url".into(), self.target.clone().into());
        m.insert("auto_started".into(), self.auto_started.into());
        m.insert("search".into(), self.search.to_json());
        let Some(col) = &self.collection else {
            return m;
        };
        m.insert("table".into(), col.name.clone().into());
        m.insert(
            "column".into(),
            format!("{}({})", col.build.vec_type.name(), col.dim).into(),
        );
        m.insert(
            "distance_operator".into(),
            distance_operator(col.distance).into(),
        );
        m.insert("build".into(), col.build.to_json());
        if let Some(info) = &col.index {
            m.insert("index".into(), col.index_name.clone().into());
            m.insert("index_definition".into(), info.definition.clone().into());
            m.insert("index_build_s".into(), info.build_s.into());
            if let Some(lists) = info.lists {
                m.insert("lists".into(), lists.into());
            }
            m.insert(
                "maintenance_work_mem".into(),
                info.maintenance_work_mem.clone().into(),
            );
            m.insert(
                "max_parallel_maintenance_workers".into(),
                info.max_parallel_maintenance_workers.clone().into(),
            );
            m.insert("index_notices".into(), json!(info.notices));
        }
        if !col.plans.is_empty() {
            m.insert("plans".into(), Value::Object(col.plans.clone()));
        }
        match self.relation_size("pg_total_relation_size", &col.table) {
            Ok(bytes) => {
                m.insert("table_bytes".into(), json!(bytes));
            }
            Err(e) => {
                m.insert("table_bytes_error".into(), e.to_string().into());
            }
        }
        if col.index.is_some() {
            match self.relation_size("pg_relation_size", &quote_ident(&col.index_name)) {
                Ok(bytes) => {
                    m.insert("index_bytes".into(), json!(bytes));
                }
                Err(e) => {
                    m.insert("index_bytes_error".into(), e.to_string().into());
                }
            }
        }
        m
    }

    /// Drops the table and closes every session.
    fn close(&mut self) -> EngineResult<()> {
        let result = match self.collection.take() {
            Some(col) => {
                let sql = format!("DROP TABLE IF EXISTS {}", col.table);
                self.with_conn("close", |conn| Ok(conn.client.batch_execute(&sql)?))
            }
            None => Ok(()),
        };
        lock(&self.pool).clear();
        result
    }
}

/// Replaces vector literals (`'[0.1,0.2,...]'`) in a plan line by `'[...]'`: the probe
/// vector is noise in a result file, and large with hundreds of dimensions.
fn abbreviate_vectors(line: &str) -> String {
    let mut out = String::with_capacity(line.len().min(256));
    let mut rest = line;
    while let Some(start) = rest.find("'[") {
        out.push_str(&rest[..start]);
        match rest[start..].find("]'") {
            Some(len) => {
                out.push_str("'[...]'");
                rest = &rest[start + len + 2..];
            }
            None => {
                rest = &rest[start..];
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Rows in PostgreSQL's binary `COPY` format: a header, then per row the field count, the
/// `bigint` id and the vector in pgvector's binary form (`int16` dim, `int16` unused, then
/// big-endian `float4` or half-precision elements), then the trailer.
fn encode_copy(ids: &[PointId], vectors: &[f32], dim: usize, ty: VecType) -> EngineResult<Vec<u8>> {
    let dim16 = u16::try_from(dim).map_err(|_| {
        EngineError::op(ENGINE, "bulk insert", format!("dimension {dim} too large"))
    })?;
    let field_len = 4 + dim * ty.elem_bytes();
    let field_len32 = i32::try_from(field_len)
        .map_err(|_| EngineError::op(ENGINE, "bulk insert", "vector too large"))?;
    let mut buf = Vec::with_capacity(19 + ids.len() * (2 + 4 + 8 + 4 + field_len) + 2);
    buf.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
    buf.extend_from_slice(&0i32.to_be_bytes()); // flags
    buf.extend_from_slice(&0i32.to_be_bytes()); // header extension length
    for (id, v) in ids.iter().zip(vectors.chunks_exact(dim)) {
        buf.extend_from_slice(&2i16.to_be_bytes());
        buf.extend_from_slice(&8i32.to_be_bytes());
        buf.extend_from_slice(&pg_id(*id)?.to_be_bytes());
        buf.extend_from_slice(&field_len32.to_be_bytes());
        buf.extend_from_slice(&dim16.to_be_bytes());
        buf.extend_from_slice(&0u16.to_be_bytes());
        match ty {
            VecType::Vector => {
                for x in v {
                    buf.extend_from_slice(&x.to_be_bytes());
                }
            }
            VecType::HalfVec => {
                for x in v {
                    let h = f32_to_f16(*x).ok_or_else(|| {
                        EngineError::op(
                            ENGINE,
                            "bulk insert",
                            format!("point {id}: value {x} is out of range for halfvec"),
                        )
                    })?;
                    buf.extend_from_slice(&h.to_be_bytes());
                }
            }
        }
    }
    buf.extend_from_slice(&(-1i16).to_be_bytes());
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;

    fn params(pairs: &[(&str, ParamValue)]) -> ParamMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    }

    #[test]
    fn half_precision_conversion() {
        assert_eq!(f32_to_f16(0.0), Some(0));
        assert_eq!(f32_to_f16(-0.0), Some(0x8000));
        assert_eq!(f32_to_f16(1.0), Some(0x3C00));
        assert_eq!(f32_to_f16(-2.0), Some(0xC000));
        assert_eq!(f32_to_f16(0.5), Some(0x3800));
        assert_eq!(f32_to_f16(65504.0), Some(0x7BFF));
        assert_eq!(f32_to_f16(65520.0), None);
        assert_eq!(f32_to_f16(f32::INFINITY), None);
        assert_eq!(f32_to_f16(f32::NAN), None);
        // Smallest subnormal half, and a value that rounds to zero.
        assert_eq!(f32_to_f16(5.960_464_5e-8), Some(1));
        assert_eq!(f32_to_f16(1e-9), Some(0));
        // 1 + 2^-11 is a tie between 1.0 and the next half: rounds to even (1.0).
        assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), Some(0x3C00));
        assert_eq!(f32_to_f16(1.0 + 3.0 / 2048.0), Some(0x3C02));
    }

    #[test]
    fn copy_encoding_layout() {
        let data = encode_copy(&[7], &[1.0, 2.0], 2, VecType::Vector).unwrap();
        assert_eq!(&data[..11], b"PGCOPY\n\xff\r\n\0");
        // header 19 + (2 + 4 + 8 + 4 + 4 + 8) + trailer 2
        assert_eq!(data.len(), 19 + 30 + 2);
        assert_eq!(&data[19..21], &2i16.to_be_bytes());
        assert_eq!(&data[25..33], &7i64.to_be_bytes());
        assert_eq!(&data[33..37], &12i32.to_be_bytes());
        assert_eq!(&data[37..39], &2u16.to_be_bytes());
        assert_eq!(&data[41..45], &1.0f32.to_be_bytes());
        assert_eq!(&data[data.len() - 2..], &(-1i16).to_be_bytes());
        let half = encode_copy(&[1], &[1.0, 2.0], 2, VecType::HalfVec).unwrap();
        assert_eq!(half.len(), 19 + 26 + 2);
        assert!(encode_copy(&[1], &[1e6, 0.0], 2, VecType::HalfVec).is_err());
    }

    #[test]
    fn build_params_are_checked() {
        let p = BuildParams::parse(&params(&[])).unwrap();
        assert_eq!((p.index, p.m, p.ef_construction), (IndexKind::Hnsw, 16, 64));
        assert!(BuildParams::parse(&params(&[("ef_construct", ParamValue::Int(64))])).is_err());
        assert!(BuildParams::parse(&params(&[("lists", ParamValue::Int(10))])).is_err());
        assert!(
            BuildParams::parse(&params(&[
                ("index", ParamValue::Str("ivfflat".into())),
                ("m", ParamValue::Int(8)),
            ]))
            .is_err()
        );
        assert!(
            BuildParams::parse(&params(&[
                ("m", ParamValue::Int(32)),
                ("ef_construction", ParamValue::Int(40)),
            ]))
            .is_err()
        );
        assert!(BuildParams::parse(&params(&[("type", ParamValue::Str("int8".into()))])).is_err());
        assert!(
            BuildParams::parse(&params(&[("maintenance_work_mem", ParamValue::Int(1))])).is_err()
        );
    }

    #[test]
    fn search_params_and_settings() {
        assert!(SearchParams::parse(&params(&[("hnsw_ef", ParamValue::Int(10))])).is_err());
        assert!(SearchParams::parse(&params(&[("ef_search", ParamValue::Int(0))])).is_err());
        let p = SearchParams::parse(&params(&[
            ("ef_search", ParamValue::Int(80)),
            ("iterative_scan", ParamValue::Str("strict_order".into())),
        ]))
        .unwrap();
        assert!(p.check_against(IndexKind::IvfFlat).is_err());
        let sql = p.settings_sql(IndexKind::Hnsw);
        assert!(sql.contains("SET hnsw.ef_search = 80;"), "{sql}");
        assert!(sql.contains("RESET ivfflat.probes;"), "{sql}");
        assert!(
            sql.contains("SET hnsw.iterative_scan = 'strict_order';"),
            "{sql}"
        );
        assert!(sql.contains("RESET enable_seqscan;"), "{sql}");
        let forced = SearchParams::parse(&params(&[("seqscan", ParamValue::Bool(false))])).unwrap();
        assert!(
            forced
                .settings_sql(IndexKind::Hnsw)
                .contains("SET enable_seqscan = off;")
        );
    }

    #[test]
    fn names_and_sql() {
        let long = "x".repeat(80);
        let idx = index_name(&long);
        assert!(idx.len() <= 63, "{idx}");
        assert_ne!(index_name("a"), index_name("b"));
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
        assert_eq!(recommended_lists(5_000), 5);
        assert_eq!(recommended_lists(10), 1);
        assert_eq!(recommended_lists(4_000_000), 2000);
        assert_eq!(
            abbreviate_vectors("Order By: (embedding <-> '[1,2.5,-3]'::vector) x '[4]'"),
            "Order By: (embedding <-> '[...]'::vector) x '[...]'"
        );
        assert_eq!(abbreviate_vectors("no vectors '[1"), "no vectors '[1");
        let col = Collection {
            name: "t".into(),
            table: quote_ident("t"),
            index_name: index_name("t"),
            dim: 3,
            distance: Distance::Angular,
            build: BuildParams::parse(&params(&[(
                "quantization",
                ParamValue::Str("binary".into()),
            )]))
            .unwrap(),
            index: None,
            probe: None,
            plans: Map::new(),
        };
        assert!(col.search_sql().contains("<=>"));
        assert!(col.search_sql().contains("LIMIT $3"));
        assert!(
            col.index_sql(None)
                .contains("(binary_quantize(embedding)::bit(3)) bit_hamming_ops")
        );
        assert_eq!(col.rerank(&SearchParams::default(), 10), 40);
    }
}
