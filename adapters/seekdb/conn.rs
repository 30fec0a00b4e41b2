//! Reaching the server: the URL, connections (one per searching thread, kept idle between
//! calls), and MySQL errors in words.
//!
//! A URL names the server by its unix socket (`mysql://root@localhost/ragdbeval?socket=PATH`,
//! what `scripts/servers/seekdb.sh` prints) or by host and port
//! (`mysql://root@127.0.0.1:2881/ragdbeval`). Without a database in the path the adapter uses
//! `ragdbeval`, created when missing.

use std::time::Duration;

use mysql::prelude::Queryable;
use mysql::{Conn, Opts, OptsBuilder};
use mysql_common::proto::codec::error::PacketCodecError;

use super::{ENGINE, SeekDb};
use crate::adapters::support::server::LocalServer;
use crate::engine::{EngineError, EngineResult};
use crate::secret::redact;

/// The local server `scripts/servers/seekdb.sh` starts.
pub(super) const LOCAL_SERVER: LocalServer = LocalServer {
    engine: ENGINE,
    schemes: &["mysql://"],
    url_example: "mysql://root@HOST:PORT/DATABASE or mysql://root@localhost/DATABASE?socket=PATH",
};

/// The database used when the URL names none.
const DEFAULT_DATABASE: &str = "ragdbeval";

/// A connection and the search settings it was last set to.
pub(super) struct Session {
    pub conn: Conn,
    /// [`SeekDb::generation`] of the search settings the connection was last set to.
    pub generation: u64,
}

/// Where the URL points, for messages: the socket path or `host:port`.
pub(super) fn target(opts: &Opts) -> String {
    match opts.get_socket() {
        Some(socket) => format!("socket {socket}"),
        None => format!("{}:{}", opts.get_ip_or_hostname(), opts.get_tcp_port()),
    }
}

/// The read and write timeout when the caller gives none (`ConnectOptions::default()`).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// The connection options of `url`, with `timeout` on every read and write (none given:
/// [`DEFAULT_TIMEOUT`]); refused as the `url` parameter when it is not a seekdb URL (another
/// scheme, or neither port nor socket).
pub(super) fn options(url: &str, password: Option<&str>, timeout: Duration) -> EngineResult<Opts> {
    let timeout = if timeout.is_zero() { DEFAULT_TIMEOUT } else { timeout };
    let refuse = |why: &str| {
        EngineError::bad_param(
            ENGINE,
            "url",
            format!(
                "`{}` {why}: expected {}",
                redact(url),
                LOCAL_SERVER.url_example
            ),
        )
    };
    let Some(rest) = url.strip_prefix("mysql://") else {
        return Err(refuse("is not a MySQL URL"));
    };
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if !host_port.contains(':') && !rest.contains("socket=") {
        return Err(refuse("names neither a port nor a unix socket"));
    }
    let parsed = Opts::from_url(url).map_err(|e| refuse(&format!("is not a valid URL ({e})")))?;
    let database = parsed
        .get_db_name()
        .filter(|d| !d.is_empty())
        .unwrap_or(DEFAULT_DATABASE)
        .to_string();
    let mut builder = OptsBuilder::from_opts(parsed)
        .db_name(Some(database))
        // The URL says how to connect: no switch from TCP to a socket the server names.
        .prefer_socket(false)
        .tcp_connect_timeout(Some(timeout))
        .read_timeout(Some(timeout))
        .write_timeout(Some(timeout));
    if let Some(p) = password {
        builder = builder.pass(Some(p));
    }
    Ok(builder.into())
}

/// The same options without a read timeout: the index build runs for as long as it takes.
pub(super) fn untimed(opts: &Opts) -> Opts {
    OptsBuilder::from_opts(opts.clone())
        .read_timeout(None::<Duration>)
        .into()
}

/// Opens a connection; the database is created first when missing (through a connection
/// without one).
pub(super) fn connect(opts: &Opts) -> Result<Conn, mysql::Error> {
    match Conn::new(opts.clone()) {
        Err(mysql::Error::MySqlError(e)) if e.code == UNKNOWN_DATABASE => {
            let database = opts.get_db_name().unwrap_or(DEFAULT_DATABASE).to_string();
            let mut bare = Conn::new(OptsBuilder::from_opts(opts.clone()).db_name(None::<String>))?;
            bare.query_drop(format!("CREATE DATABASE IF NOT EXISTS `{database}`"))?;
            Conn::new(opts.clone())
        }
        other => other,
    }
}

/// MySQL's "Unknown database".
const UNKNOWN_DATABASE: u16 = 1049;

/// Whether `e` leaves the connection usable: the server answered with an error.
pub(super) fn connection_survives(e: &mysql::Error) -> bool {
    matches!(e, mysql::Error::MySqlError(_))
}

/// A failed call as one line that says what happened.
pub(super) fn failed(operation: &str, e: &mysql::Error) -> EngineError {
    EngineError::op(ENGINE, operation, worded(e))
}

/// `e` in words: the server's message, or what the transport's error means.
pub(super) fn worded(e: &mysql::Error) -> String {
    match e {
        mysql::Error::MySqlError(m) => format!("{} (error {})", m.message, m.code),
        mysql::Error::IoError(io) | mysql::Error::CodecError(PacketCodecError::Io(io))
            if is_timeout(io) =>
        {
            "no answer within --timeout: the server stopped answering (or is not seekdb)"
                .to_string()
        }
        other => {
            let text = other.to_string();
            crate::engine::worded_connection_failure(&text)
        }
    }
}

/// A read or write that ran into its timeout (EAGAIN on a socket with a timeout).
fn is_timeout(io: &std::io::Error) -> bool {
    matches!(
        io.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

impl SeekDb {
    /// An idle session set to the current search settings, or a new one.
    pub(super) fn take_session(&self, operation: &str) -> EngineResult<Session> {
        let mut session = match self.pool.take() {
            Some(s) => s,
            None => Session {
                conn: connect(&self.opts).map_err(|e| failed(operation, &e))?,
                generation: u64::MAX,
            },
        };
        if session.generation != self.generation {
            session
                .conn
                .query_drop(self.search.session_sql())
                .map_err(|e| failed(operation, &e))?;
            session.generation = self.generation;
        }
        Ok(session)
    }

    /// Runs `f` on a session; the session goes back to the pool unless its connection broke.
    pub(super) fn with_session<T>(
        &self,
        operation: &str,
        f: impl FnOnce(&mut Conn) -> Result<T, mysql::Error>,
    ) -> EngineResult<T> {
        let mut session = self.take_session(operation)?;
        match f(&mut session.conn) {
            Ok(v) => {
                self.pool.give_back(session);
                Ok(v)
            }
            Err(e) => {
                if connection_survives(&e) {
                    self.pool.give_back(session);
                }
                Err(failed(operation, &e))
            }
        }
    }
}

/// The first connection: an unreachable server says how to start one.
pub(super) fn first_connection(opts: &Opts, url: &str) -> EngineResult<Conn> {
    connect(opts).map_err(|e| match e {
        mysql::Error::MySqlError(_) => failed("connect", &e),
        _ => EngineError::Unreachable {
            engine: ENGINE.into(),
            target: format!("{} ({})", redact(url), target(opts)),
            message: format!("{}; {}", worded(&e), LOCAL_SERVER.hint()),
        },
    })
}
