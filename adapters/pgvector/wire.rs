//! Searches over PostgreSQL's extended query protocol on a plain blocking socket.
//!
//! The `postgres` crate runs every call through a tokio runtime: the request goes through a
//! channel to the connection future, which writes it, waits in `epoll`, reads the answer and
//! hands each row back through another channel. On a small machine that client CPU is taken
//! from the server: a search cost ~67–72 µs of client CPU through the crate and ~40 µs over a
//! blocking socket with the same statement (50k × 50 HNSW, one client; libpq's `pgbench -M
//! prepared` takes ~52 µs). A search session here does what libpq does for a prepared
//! statement and no more: one `write` of Bind + Execute + Sync with the vector as a binary
//! parameter, then blocking reads until ReadyForQuery, decoding the (id, distance) rows in
//! place.
//!
//! Only the unfiltered search uses it; everything else (loading, index builds, `EXPLAIN`,
//! filtered searches) stays on the `postgres` crate. A server or URL this client cannot talk to
//! (authentication other than trust, password, MD5 or SCRAM-SHA-256; several host addresses,
//! `target_session_attrs`, required channel binding or TLS) sends searches back to the crate,
//! and `describe()` says which client searched and why.
//!
//! Deadlines are socket timeouts: a read or write that waits longer than the engine's
//! watchdog limit (`--timeout` plus 5 s) fails, and the session is dropped.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use fallible_iterator::FallibleIterator;
use postgres::config::{ChannelBinding, Host, SslMode, TargetSessionAttrs};
use postgres_protocol::authentication::{md5_hash, sasl};
use postgres_protocol::message::{backend::Message, frontend};

use super::sql::Collection;
use super::*;

/// The adapter's side: which searches go over the wire, its sessions, its errors.
mod adapter;
pub(super) use adapter::search_client;

/// The search statement's name in every wire session.
const STATEMENT: &str = "ragdbeval_search";
/// Type oids of the search statement's columns: `id bigint`, `dist double precision`.
const INT8_OID: u32 = 20;
const FLOAT8_OID: u32 = 701;
/// Bytes asked of the socket per read; one read holds a whole answer of k ≤ ~250 rows.
const READ_CHUNK: usize = 8192;

/// Why a wire call failed, which decides what happens to the session.
#[derive(Debug)]
pub(super) enum WireError {
    /// The server rejected the statement; the session is in sync and stays usable.
    Db {
        /// SQLSTATE.
        code: String,
        /// The server's message, detail and hint.
        message: String,
    },
    /// The socket failed, timed out or was closed: the session is gone.
    Io(io::Error),
    /// What this client does not implement; searches go through the `postgres` crate.
    Unsupported(String),
    /// An answer this client did not expect: the session is dropped.
    Protocol(String),
}

impl From<io::Error> for WireError {
    fn from(e: io::Error) -> Self {
        WireError::Io(e)
    }
}

/// The socket: TCP, or a Unix socket for a `host=/dir` URL.
enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    fn set_timeouts(&self, limit: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => {
                s.set_read_timeout(limit)?;
                s.set_write_timeout(limit)
            }
            Stream::Unix(s) => {
                s.set_read_timeout(limit)?;
                s.set_write_timeout(limit)
            }
        }
    }

    /// A read, retried when a signal interrupts it. SA_RESTART does not restart a read on a
    /// socket with a timeout (signal(7)), so Ctrl-C lands here as EINTR: the query finishes
    /// and the runner stops after it, as on every other engine.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let read = match self {
                Stream::Tcp(s) => s.read(buf),
                Stream::Unix(s) => s.read(buf),
            };
            match read {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => return other,
            }
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf),
            Stream::Unix(s) => s.write_all(buf),
        }
    }
}

/// One search session.
pub(super) struct WireSession {
    stream: Stream,
    /// Bytes read and not yet parsed.
    rbuf: BytesMut,
    /// The request being written.
    wbuf: BytesMut,
    /// The oid of the `vector` type in this database (an extension type has no fixed oid).
    vector_oid: u32,
    /// The engine generation its settings and statement belong to.
    generation: u64,
    /// (limit, rerank) the statement is prepared for.
    prepared: Option<(i64, i64)>,
}

/// Why this client cannot serve `config`, if it cannot.
pub(super) fn unsupported(config: &Config) -> Option<String> {
    if !config.get_hostaddrs().is_empty() {
        return Some("the URL sets hostaddr".into());
    }
    if config.get_target_session_attrs() != TargetSessionAttrs::Any {
        return Some("the URL sets target_session_attrs".into());
    }
    if config.get_channel_binding() == ChannelBinding::Require {
        return Some("the URL requires channel binding".into());
    }
    if config.get_ssl_mode() == SslMode::Require {
        return Some("the URL requires TLS".into());
    }
    if config.get_user().is_none() {
        return Some("the URL names no user".into());
    }
    if config.get_hosts().is_empty() {
        return Some("the URL names no host".into());
    }
    None
}

/// The first host of `config` that accepts a connection.
fn open_stream(config: &Config, timeout: Duration) -> Result<Stream, WireError> {
    let ports = config.get_ports();
    let mut last = None;
    for (i, host) in config.get_hosts().iter().enumerate() {
        let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
        let attempt = match host {
            Host::Tcp(name) => (name.as_str(), port).to_socket_addrs().and_then(|addrs| {
                let mut err = io::Error::new(io::ErrorKind::NotFound, "no address");
                for addr in addrs {
                    match TcpStream::connect_timeout(&addr, timeout) {
                        Ok(s) => {
                            s.set_nodelay(true)?;
                            return Ok(Stream::Tcp(s));
                        }
                        Err(e) => err = e,
                    }
                }
                Err(err)
            }),
            Host::Unix(dir) => {
                UnixStream::connect(dir.join(format!(".s.PGSQL.{port}"))).map(Stream::Unix)
            }
        };
        match attempt {
            Ok(s) => return Ok(s),
            Err(e) => last = Some(e),
        }
    }
    Err(WireError::Io(last.unwrap_or_else(|| {
        io::Error::new(io::ErrorKind::NotFound, "no host")
    })))
}

/// The fields of an ErrorResponse as `pg_message` words them, and its SQLSTATE.
fn db_error(fields: &mut postgres_protocol::message::backend::ErrorFields<'_>) -> WireError {
    let (mut code, mut message, mut detail, mut hint) = (None, None, None, None);
    while let Ok(Some(field)) = fields.next() {
        let value = String::from_utf8_lossy(field.value_bytes()).into_owned();
        match field.type_() {
            b'C' => code = Some(value),
            b'M' => message = Some(value),
            b'D' => detail = Some(value),
            b'H' => hint = Some(value),
            _ => {}
        }
    }
    WireError::Db {
        code: code.unwrap_or_default(),
        message: super::session::server_words(
            message.as_deref().unwrap_or("error without a message"),
            detail.as_deref(),
            hint.as_deref(),
        ),
    }
}

/// pgvector's binary `vector` format: dimension (u16), unused (u16), then the floats, all
/// big-endian.
pub(super) fn put_vector(query: &[f32], buf: &mut BytesMut) -> Result<(), WireError> {
    let dim = u16::try_from(query.len())
        .map_err(|_| WireError::Protocol(format!("a {}-d vector", query.len())))?;
    buf.reserve(4 + 4 * query.len());
    buf.put_u16(dim);
    buf.put_u16(0);
    for x in query {
        buf.put_f32(*x);
    }
    Ok(())
}

/// (id, distance) of one DataRow of the search statement (binary int8, float8 or NULL).
fn neighbor(row: &postgres_protocol::message::backend::DataRowBody) -> Result<Neighbor, WireError> {
    let buffer = row.buffer();
    let mut ranges = row.ranges();
    let bad = |what: &str| WireError::Protocol(format!("a search row with {what}"));
    let id = match ranges.next().map_err(|e| bad(&e.to_string()))? {
        Some(Some(r)) => buffer
            .get(r)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(i64::from_be_bytes)
            .ok_or_else(|| bad("an id that is not 8 bytes"))?,
        _ => return Err(bad("no id")),
    };
    let score = match ranges.next().map_err(|e| bad(&e.to_string()))? {
        Some(Some(r)) => buffer
            .get(r)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map(|b| f64::from_be_bytes(b) as f32)
            .ok_or_else(|| bad("a distance that is not 8 bytes"))?,
        Some(None) => f32::NAN,
        None => return Err(bad("no distance")),
    };
    Ok(Neighbor {
        id: id as PointId,
        score,
    })
}

impl WireSession {
    /// Connects, authenticates and sets the session up (`init_sql`, then the `vector` oid).
    /// `io_timeout` bounds every later read and write.
    pub(super) fn connect(
        config: &Config,
        connect_timeout: Duration,
        io_timeout: Option<Duration>,
        init_sql: &str,
    ) -> Result<WireSession, WireError> {
        if let Some(why) = unsupported(config) {
            return Err(WireError::Unsupported(why));
        }
        let stream = open_stream(config, connect_timeout)?;
        stream.set_timeouts(Some(connect_timeout))?;
        let mut session = WireSession {
            stream,
            rbuf: BytesMut::with_capacity(READ_CHUNK),
            wbuf: BytesMut::with_capacity(1024),
            vector_oid: 0,
            generation: u64::MAX,
            prepared: None,
        };
        session.start_up(config)?;
        session.stream.set_timeouts(io_timeout)?;
        let rows = session.simple(&format!("{init_sql}SELECT 'vector'::regtype::oid"))?;
        session.vector_oid = rows
            .last()
            .and_then(|r| r.parse().ok())
            .ok_or_else(|| WireError::Protocol("no oid for the vector type".into()))?;
        Ok(session)
    }

    /// The startup message and authentication, up to the first ReadyForQuery.
    fn start_up(&mut self, config: &Config) -> Result<(), WireError> {
        let user = config.get_user().unwrap_or_default();
        let mut params = vec![("client_encoding", "UTF8"), ("user", user)];
        if let Some(db) = config.get_dbname() {
            params.push(("database", db));
        }
        if let Some(options) = config.get_options() {
            params.push(("options", options));
        }
        if let Some(name) = config.get_application_name() {
            params.push(("application_name", name));
        }
        frontend::startup_message(params, &mut self.wbuf)?;
        self.send()?;
        let password = || {
            config.get_password().ok_or_else(|| WireError::Db {
                code: "28P01".into(),
                message: "the server asks for a password and none was given".into(),
            })
        };
        match self.next()? {
            Message::AuthenticationOk => {}
            Message::AuthenticationCleartextPassword => {
                frontend::password_message(password()?, &mut self.wbuf)?;
                self.send()?;
            }
            Message::AuthenticationMd5Password(body) => {
                let hash = md5_hash(user.as_bytes(), password()?, body.salt());
                frontend::password_message(hash.as_bytes(), &mut self.wbuf)?;
                self.send()?;
            }
            Message::AuthenticationSasl(body) => {
                let mut scram_offered = false;
                let mut mechanisms = body.mechanisms();
                while let Ok(Some(m)) = mechanisms.next() {
                    scram_offered |= m == sasl::SCRAM_SHA_256;
                }
                if !scram_offered {
                    return Err(WireError::Unsupported("a SASL mechanism other than SCRAM".into()));
                }
                self.scram(password()?)?;
            }
            Message::ErrorResponse(body) => return Err(db_error(&mut body.fields())),
            _ => {
                return Err(WireError::Unsupported(
                    "the server's authentication method".into(),
                ));
            }
        }
        loop {
            match self.next()? {
                Message::ReadyForQuery(_) => return Ok(()),
                Message::ErrorResponse(body) => return Err(db_error(&mut body.fields())),
                // AuthenticationOk, ParameterStatus, BackendKeyData, notices.
                _ => {}
            }
        }
    }

    /// SCRAM-SHA-256 without channel binding (there is no TLS to bind to).
    fn scram(&mut self, password: &[u8]) -> Result<(), WireError> {
        let mut scram = sasl::ScramSha256::new(password, sasl::ChannelBinding::unsupported());
        frontend::sasl_initial_response(sasl::SCRAM_SHA_256, scram.message(), &mut self.wbuf)?;
        self.send()?;
        match self.next()? {
            Message::AuthenticationSaslContinue(body) => scram
                .update(body.data())
                .map_err(|e| WireError::Protocol(format!("SCRAM: {e}")))?,
            Message::ErrorResponse(body) => return Err(db_error(&mut body.fields())),
            _ => return Err(WireError::Protocol("SCRAM: unexpected answer".into())),
        }
        frontend::sasl_response(scram.message(), &mut self.wbuf)?;
        self.send()?;
        match self.next()? {
            Message::AuthenticationSaslFinal(body) => scram
                .finish(body.data())
                .map_err(|e| WireError::Protocol(format!("SCRAM: {e}"))),
            Message::ErrorResponse(body) => Err(db_error(&mut body.fields())),
            _ => Err(WireError::Protocol("SCRAM: unexpected answer".into())),
        }
    }

    /// Writes the request built in `wbuf`.
    fn send(&mut self) -> Result<(), WireError> {
        let result = self.stream.write_all(&self.wbuf);
        self.wbuf.clear();
        Ok(result?)
    }

    /// The next message from the server, reading as needed.
    fn next(&mut self) -> Result<Message, WireError> {
        loop {
            if let Some(message) = Message::parse(&mut self.rbuf)? {
                return Ok(message);
            }
            let start = self.rbuf.len();
            self.rbuf.resize(start + READ_CHUNK, 0);
            let read = self.stream.read(&mut self.rbuf[start..]);
            let n = match read {
                Ok(n) => n,
                Err(e) => {
                    self.rbuf.truncate(start);
                    return Err(e.into());
                }
            };
            self.rbuf.truncate(start + n);
            if n == 0 {
                return Err(WireError::Io(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the server closed the connection",
                )));
            }
        }
    }

    /// Reads to ReadyForQuery; the first ErrorResponse on the way is the result.
    fn finish(&mut self, mut error: Option<WireError>) -> Result<(), WireError> {
        loop {
            match self.next()? {
                Message::ReadyForQuery(_) => return error.map_or(Ok(()), Err),
                Message::ErrorResponse(body) if error.is_none() => {
                    error = Some(db_error(&mut body.fields()));
                }
                _ => {}
            }
        }
    }

    /// Runs `sql` (one or more statements) as a simple query; the first column of every row
    /// returned, as text.
    fn simple(&mut self, sql: &str) -> Result<Vec<String>, WireError> {
        frontend::query(sql, &mut self.wbuf)?;
        self.send()?;
        let mut values = Vec::new();
        let mut error = None;
        loop {
            match self.next()? {
                Message::DataRow(row) => {
                    let mut ranges = row.ranges();
                    if let Ok(Some(Some(r))) = ranges.next() {
                        let bytes = row.buffer().get(r).unwrap_or_default();
                        values.push(String::from_utf8_lossy(bytes).into_owned());
                    }
                }
                Message::ErrorResponse(body) if error.is_none() => {
                    error = Some(db_error(&mut body.fields()));
                }
                Message::ReadyForQuery(_) => return error.map_or(Ok(values), Err),
                _ => {}
            }
        }
    }

    /// Prepares `sql` as the search statement, after checking that it takes a `vector` and
    /// returns (bigint, double precision), the two things [`Self::search`] encodes and decodes.
    fn prepare(&mut self, sql: &str) -> Result<(), WireError> {
        // Closing a statement that does not exist is not an error.
        self.prepared = None;
        frontend::close(b'S', STATEMENT, &mut self.wbuf)?;
        frontend::parse(STATEMENT, sql, std::iter::empty(), &mut self.wbuf)?;
        frontend::describe(b'S', STATEMENT, &mut self.wbuf)?;
        frontend::sync(&mut self.wbuf);
        self.send()?;
        let mut params = Vec::new();
        let mut columns = Vec::new();
        let mut error = None;
        loop {
            match self.next()? {
                Message::ParameterDescription(body) => {
                    params = body.parameters().collect().map_err(WireError::Io)?;
                }
                Message::RowDescription(body) => {
                    columns = body
                        .fields()
                        .map(|f| Ok(f.type_oid()))
                        .collect()
                        .map_err(WireError::Io)?;
                }
                Message::ErrorResponse(body) if error.is_none() => {
                    error = Some(db_error(&mut body.fields()));
                }
                Message::ReadyForQuery(_) => break,
                _ => {}
            }
        }
        if let Some(e) = error {
            return Err(e);
        }
        if params != [self.vector_oid] || columns != [INT8_OID, FLOAT8_OID] {
            return Err(WireError::Unsupported(format!(
                "the search statement takes types {params:?} and returns {columns:?}, not \
                 (vector) → (bigint, double precision)"
            )));
        }
        Ok(())
    }

    /// Brings the session to the engine's generation (its search settings) and prepares the
    /// statement for (limit, rerank) when it is not.
    pub(super) fn ready(
        &mut self,
        engine: &PgVector,
        col: &Collection,
        limit: i64,
        rerank: i64,
    ) -> Result<(), WireError> {
        if self.generation != engine.generation {
            self.simple(&engine.search.settings_sql(col.build.index))?;
            // The table or its build may have changed: the statement is prepared again.
            self.prepared = None;
            self.generation = engine.generation;
        }
        if self.prepared != Some((limit, rerank)) {
            self.prepare(&col.search_sql(limit, rerank))?;
            self.prepared = Some((limit, rerank));
        }
        Ok(())
    }

    /// Runs the prepared search for `query`; the neighbours, nearest first, into `out`.
    pub(super) fn search(&mut self, query: &[f32], out: &mut Vec<Neighbor>) -> Result<(), WireError> {
        let mut encoded = Ok(());
        frontend::bind(
            "",
            STATEMENT,
            [1i16],
            [query],
            |q, buf| {
                encoded = put_vector(q, buf);
                Ok(postgres_protocol::IsNull::No)
            },
            [1i16],
            &mut self.wbuf,
        )
        .map_err(|_| WireError::Protocol("cannot encode the query".into()))?;
        if let Err(e) = encoded {
            self.wbuf.clear();
            return Err(e);
        }
        frontend::execute("", 0, &mut self.wbuf)?;
        frontend::sync(&mut self.wbuf);
        self.send()?;
        loop {
            match self.next()? {
                // A row that does not decode drops the session (a `Protocol` error).
                Message::DataRow(row) => out.push(neighbor(&row)?),
                Message::ErrorResponse(body) => return self.finish(Some(db_error(&mut body.fields()))),
                Message::ReadyForQuery(_) => return Ok(()),
                // BindComplete, CommandComplete, notices.
                _ => {}
            }
        }
    }
}
