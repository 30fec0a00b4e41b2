//! Finding the server: `--url` or the local server started through
//! `scripts/servers/pgvector.sh`, the target's description, and its process id.

use super::params::SearchParams;
use super::session::{connect_within, pg_message};
use super::*;
use crate::adapters::support::process;
use crate::adapters::support::server::LocalServer;

/// Connects to the PostgreSQL server named by `opts.url`, or, without one, starts a local
/// server with `scripts/servers/pgvector.sh start` and connects to it. Makes sure the `vector`
/// extension exists in the database, so that a wrong address or a server without pgvector
/// fails here rather than in the middle of a timed phase.
pub fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(connect(opts)?))
}

/// [`open`]'s engine, unboxed: the dense engine, and the connection side of the sparse and
/// hybrid one (`hybrid.rs`).
pub(super) fn connect(opts: &ConnectOptions) -> EngineResult<PgVector> {
    let given = opts.url.as_deref().map(str::trim).filter(|u| !u.is_empty());
    let (url, auto_started) = match given {
        Some(u) => (u.to_string(), false),
        None => (LOCAL_SERVER.start()?, true),
    };
    let config = client_config(&url, opts)?;
    let target = describe_target(&config);

    let mut client = connect_within(&config).map_err(|e| EngineError::Unreachable {
        engine: ENGINE.into(),
        target: target.clone(),
        message: format!(
            "{}; {}",
            crate::engine::worded_connection_failure(&e),
            LOCAL_SERVER.hint()
        ),
    })?;
    let version = ensure_extension(&mut client)?;
    let server_pid = opts
        .server_pid
        .or_else(|| detect_server_pid(&mut client, &config));
    if auto_started {
        eprintln!(
            "pgvector: using {target} ({version}); it keeps running after the benchmark: \
             stop it with scripts/servers/pgvector.sh stop"
        );
    }

    let wire_off = super::wire::unsupported(&config).map_or_else(OnceLock::new, OnceLock::from);
    let engine = PgVector {
        config,
        target,
        statement_timeout: (!opts.timeout.is_zero()).then_some(opts.timeout),
        watchdog: (!opts.timeout.is_zero()).then(|| super::watchdog::Watchdog::new(opts.timeout)),
        recreate: opts.recreate,
        batch_size: opts.batch_size_or(DEFAULT_BATCH),
        upload_parallel: opts.upload_parallel.max(1),
        pool: IdlePool::new(MAX_IDLE_CONNECTIONS),
        wire_pool: IdlePool::new(MAX_IDLE_CONNECTIONS),
        wire_off,
        version,
        server_pid,
        auto_started,
        collection: None,
        search: SearchParams::default(),
        checked: Vec::new(),
        generation: 0,
        filter_shapes: Mutex::new(Vec::new()),
    };
    // The connection that proved the server works is the first one of the pool.
    let conn = engine
        .init_session(client)
        .map_err(|e| engine.fail("open", e))?;
    engine.put_conn(conn);
    Ok(engine)
}

/// The client configuration for `url`: the API key as the password (unless the URL has
/// one) and the connect timeout from `--timeout`.
fn client_config(url: &str, opts: &ConnectOptions) -> EngineResult<Config> {
    let mut config = Config::from_str(url).map_err(|e| {
        EngineError::bad_param(
            ENGINE,
            "url",
            format!(
                "`{}` is not a PostgreSQL URL ({e}); expected postgres://USER@HOST:PORT/DATABASE",
                crate::secret::redact(url)
            ),
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
    Ok(config)
}

/// Creates the `vector` extension if the database lacks it, and says which PostgreSQL and
/// pgvector versions answer.
fn ensure_extension(client: &mut Client) -> EngineResult<String> {
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
    Ok(version)
}

/// The local server `scripts/servers/pgvector.sh` starts.
pub(super) const LOCAL_SERVER: LocalServer = LocalServer {
    engine: ENGINE,
    schemes: &["postgres://", "postgresql://"],
    url_example: "postgres://USER@HOST:PORT/DB",
};

/// `user@host:port/db` of a config, without the password (for messages and results).
pub(super) fn describe_target(config: &Config) -> String {
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
pub(super) fn is_local(config: &Config) -> bool {
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
pub(super) fn detect_server_pid(client: &mut Client, config: &Config) -> Option<u32> {
    if !is_local(config) {
        return None;
    }
    // Reading `data_directory` needs superuser or pg_read_all_settings; failing is fine.
    let dir: Option<String> = client
        .query_one("SELECT current_setting('data_directory')", &[])
        .ok()
        .and_then(|row| row.try_get(0).ok());
    if let Some(dir) = dir
        && let Some(pid) = process::pid_from_file(&Path::new(&dir).join("postmaster.pid"))
        && process::is_named(pid, "postgres")
    {
        return Some(pid);
    }
    let backend: i32 = client
        .query_one("SELECT pg_backend_pid()", &[])
        .ok()?
        .try_get(0)
        .ok()?;
    let ppid = process::parent_pid(u32::try_from(backend).ok()?)?;
    process::is_named(ppid, "postgres").then_some(ppid)
}
