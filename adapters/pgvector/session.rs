//! Connections: one session per worker, a small pool of idle ones, and the error
//! classification (lost connection vs. failed statement).

use super::copy::abbreviate_vectors;
use super::server::LOCAL_SERVER;
use super::sql::{Collection, IndexInfo, IndexKind, quote_literal, recommended_lists};
use super::watchdog::Slot;
use super::*;

/// A server error's own words (message, detail, hint), or the client error.
pub(super) fn pg_message(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => server_words(db.message(), db.detail(), db.hint()),
        // The client's own errors keep their cause in `source` ("error connecting to
        // server" alone does not say that the connection was refused).
        None => {
            let mut words = e.to_string();
            let mut cause = std::error::Error::source(e);
            while let Some(c) = cause {
                let _ = write!(words, ": {c}");
                cause = c.source();
            }
            words
        }
    }
}

/// An ErrorResponse worded as every pgvector error shows it: "message (detail); hint: hint"
/// (the crate's sessions and the wire sessions alike).
pub(super) fn server_words(message: &str, detail: Option<&str>, hint: Option<&str>) -> String {
    let mut words = message.to_string();
    if let Some(detail) = detail {
        let _ = write!(words, " ({detail})");
    }
    if let Some(hint) = hint {
        let _ = write!(words, "; hint: {hint}");
    }
    words
}

/// True when a client error means the connection is gone (server stopped or crashed), as
/// opposed to a statement the server rejected.
pub(super) fn is_connection_lost(e: &postgres::Error) -> bool {
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
pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A pooled session and what it has been set up for.
pub(super) struct Conn {
    pub(super) client: Client,
    /// The engine generation its settings and prepared statement belong to.
    pub(super) generation: u64,
    /// The search statement prepared for (limit, rerank) (see `Collection::search_sql`).
    pub(super) search: Option<(i64, i64, Statement)>,
    /// Other statements by SQL text, of this generation: filtered searches (one per predicate
    /// shape), the sparse and fused searches of a hybrid table (`hybrid.rs`).
    pub(super) statements: HashMap<String, Statement>,
    /// Its socket under the engine's watchdog (`None`: no deadline could be set up).
    pub(super) slot: Option<Arc<Slot>>,
}

/// Error inside a connection closure: the client's, or one the adapter raises itself.
pub(super) enum Fail {
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

impl PgVector {
    pub(super) fn unreachable(&self, message: String) -> EngineError {
        EngineError::Unreachable {
            engine: ENGINE.into(),
            target: self.target.clone(),
            message,
        }
    }

    /// Maps a failure to an [`EngineError`]: a lost connection becomes `Unreachable` with a
    /// hint, a rejected statement keeps the server's message.
    pub(super) fn fail(&self, operation: &str, fail: Fail) -> EngineError {
        match fail {
            Fail::Engine(e) => e,
            Fail::Io(e) => self.connection_lost(operation, &e),
            Fail::Pg(e) if is_connection_lost(&e) => self.connection_lost(operation, &pg_message(&e)),
            Fail::Pg(e) => EngineError::op(ENGINE, operation, pg_message(&e)),
        }
    }

    /// The server went away under `operation` (stopped, crashed, or shutting down).
    pub(super) fn connection_lost(&self, operation: &str, cause: &dyn std::fmt::Display) -> EngineError {
        self.unreachable(format!(
            "{operation}: connection lost ({cause}); is the server still running? {}",
            LOCAL_SERVER.hint()
        ))
    }

    /// A call the watchdog (or a wire session's socket timeout) cut off.
    pub(super) fn no_answer(&self, operation: &str) -> EngineError {
        let limit = self.watchdog.as_deref().map_or(Duration::ZERO, |w| w.limit);
        EngineError::op(
            ENGINE,
            operation,
            format!(
                "no answer within {} s (--timeout plus 5 s): the server stopped answering (is \
                 it stopped, frozen or overloaded?)",
                limit.as_secs()
            ),
        )
    }

    pub(super) fn collection(&self, operation: &str) -> EngineResult<&Collection> {
        self.collection
            .as_ref()
            .ok_or_else(|| EngineError::op(ENGINE, operation, "no table: create() was not called"))
    }

    /// Settings every session gets once (this crate's sessions and the wire sessions).
    pub(super) fn session_setup_sql(&self) -> String {
        let mut sql = String::new();
        if let Some(t) = self.statement_timeout {
            let _ = write!(sql, "SET statement_timeout = {};", t.as_millis());
        }
        // Plan every execution with its actual values, as `EXPLAIN` does: a generic plan
        // does not know the query vector (nor a filter's values) and may pick a scan the
        // checked plan never showed.
        sql.push_str("SET plan_cache_mode = force_custom_plan;");
        // Using a vector loads pgvector's library, so that its settings (`hnsw.ef_search`, ...)
        // are validated when set instead of kept as unchecked placeholders.
        sql.push_str("SELECT '[1]'::vector;");
        sql
    }

    /// A new session of the `postgres` crate, set up.
    pub(super) fn init_session(&self, mut client: Client) -> Result<Conn, Fail> {
        client.batch_execute(&self.session_setup_sql())?;
        let slot = match &self.watchdog {
            Some(watchdog) => {
                // The port the server sees is this session's local port (NULL over a Unix
                // socket).
                let port: Option<i32> = client
                    .query_one("SELECT inet_client_port()", &[])?
                    .try_get(0)?;
                let server_port = self.config.get_ports().first().copied().unwrap_or(5432);
                port.and_then(|p| u16::try_from(p).ok())
                    .and_then(|p| watchdog.register(p, server_port))
            }
            None => None,
        };
        Ok(Conn {
            client,
            generation: u64::MAX,
            search: None,
            statements: HashMap::new(),
            slot,
        })
    }

    pub(super) fn connect(&self, operation: &str) -> EngineResult<Conn> {
        let client = connect_within(&self.config).map_err(|e| {
            self.unreachable(format!("{operation}: {e}; {}", LOCAL_SERVER.hint()))
        })?;
        self.init_session(client)
            .map_err(|f| self.fail(operation, f))
    }

    pub(super) fn take_conn(&self, operation: &str) -> EngineResult<Conn> {
        loop {
            let pooled = self.pool.take();
            match pooled {
                Some(conn) if !conn.client.is_closed() => return Ok(conn),
                // A closed session (server restarted) is dropped; try the next one.
                Some(_) => continue,
                None => return self.connect(operation),
            }
        }
    }

    pub(super) fn put_conn(&self, conn: Conn) {
        self.pool.give_back(conn);
    }

    /// Runs `f` on a pooled session. The session goes back to the pool unless the call
    /// failed in a way that may have left it broken.
    pub(super) fn with_conn<T>(
        &self,
        operation: &str,
        f: impl FnOnce(&mut Conn) -> Result<T, Fail>,
    ) -> EngineResult<T> {
        let mut conn = self.take_conn(operation)?;
        // Held outside the session while the call runs (no reference count touched on the
        // search path), put back before the session returns to the pool.
        let slot = conn.slot.take();
        let outcome = {
            let _armed = slot.as_deref().zip(self.watchdog.as_deref()).map(|(s, w)| s.arm(w));
            f(&mut conn)
        };
        let expired = slot.as_deref().is_some_and(Slot::expired);
        conn.slot = slot;
        match outcome {
            Ok(v) => {
                self.put_conn(conn);
                Ok(v)
            }
            Err(_) if expired => Err(self.no_answer(operation)),
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

    /// Brings a session up to the current generation: the search settings of an `index`
    /// index applied, the statements of an earlier table or setting forgotten.
    pub(super) fn sync_session(&self, conn: &mut Conn, index: IndexKind) -> Result<(), Fail> {
        if conn.generation != self.generation {
            conn.client
                .batch_execute(&self.search.settings_sql(index))?;
            conn.search = None;
            conn.statements.clear();
            conn.generation = self.generation;
        }
        Ok(())
    }

    /// The session brought up to the current generation ([`Self::sync_session`]) and `sql`
    /// prepared on it, once per session and generation.
    pub(super) fn prepared(
        &self,
        conn: &mut Conn,
        index: IndexKind,
        sql: &str,
    ) -> Result<Statement, Fail> {
        self.sync_session(conn, index)?;
        if let Some(stmt) = conn.statements.get(sql) {
            return Ok(stmt.clone());
        }
        let stmt = conn.client.prepare(sql)?;
        conn.statements.insert(sql.to_string(), stmt.clone());
        Ok(stmt)
    }

    /// Brings a session up to the current generation and returns its search statement for
    /// `limit` results and `rerank` candidates (prepared again only when those change).
    pub(super) fn ready_for_search(
        &self,
        conn: &mut Conn,
        col: &Collection,
        limit: i64,
        rerank: i64,
    ) -> Result<Statement, Fail> {
        self.sync_session(conn, col.build.index)?;
        match &conn.search {
            Some((l, r, stmt)) if (*l, *r) == (limit, rerank) => Ok(stmt.clone()),
            _ => {
                let stmt = conn.client.prepare(&col.search_sql(limit, rerank))?;
                conn.search = Some((limit, rerank, stmt.clone()));
                Ok(stmt)
            }
        }
    }

    /// Splits `0..n` into up to `upload_parallel` ranges of at least `batch_size` and runs
    /// `f` on them concurrently (each call takes its own session).
    pub(super) fn parallel_ranges(
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

    /// Builds the collection's ANN index ([`Self::create_index`]); an IVFFlat index without
    /// `lists` gets pgvector's recommendation for the row count.
    pub(super) fn build_index(&self, col: &Collection) -> EngineResult<IndexInfo> {
        self.create_index(&col.build, &col.table, |client| {
            let lists = match col.build.index {
                IndexKind::Hnsw => None,
                IndexKind::IvfFlat => match col.build.lists {
                    Some(l) => Some(l),
                    None => {
                        let rows: i64 = client
                            .query_one(&format!("SELECT count(*) FROM {}", col.table), &[])?
                            .try_get(0)?;
                        Some(recommended_lists(rows.max(0) as u64))
                    }
                },
            };
            Ok((col.index_sql(lists), lists))
        })
    }

    /// Runs the `CREATE INDEX` that `definition` returns (with the IVFFlat lists it chose),
    /// then `ANALYZE`s `table`, on a dedicated session: its maintenance settings stay off the
    /// search sessions, it has no statement timeout, and it collects the server's notices
    /// (pgvector says there when the graph outgrows `maintenance_work_mem`).
    pub(super) fn create_index(
        &self,
        build: &BuildParams,
        table: &str,
        definition: impl FnOnce(&mut Client) -> Result<(String, Option<u64>), postgres::Error>,
    ) -> EngineResult<IndexInfo> {
        let operation = "create index";
        let notices = Arc::new(Mutex::new(Vec::<String>::new()));
        let sink = Arc::clone(&notices);
        let mut config = self.config.clone();
        config.notice_callback(move |n| lock(&sink).push(n.message().to_string()));
        let mut client = connect_within(&config).map_err(|e| {
            self.unreachable(format!("{operation}: {e}; {}", LOCAL_SERVER.hint()))
        })?;
        let fail = |e: postgres::Error| self.fail(operation, Fail::Pg(e));

        let mut setup = String::from("SET statement_timeout = 0;");
        if let Some(mem) = &build.maintenance_work_mem {
            let _ = write!(setup, "SET maintenance_work_mem = {};", quote_literal(mem));
        }
        if let Some(w) = build.parallel_workers {
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

        let (definition, lists) = definition(&mut client).map_err(fail)?;
        let t = Instant::now();
        client.batch_execute(&definition).map_err(fail)?;
        let build_s = t.elapsed().as_secs_f64();
        // Fresh statistics, so that the planner costs the index against the real row count.
        client
            .batch_execute(&format!("ANALYZE {table}"))
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
    pub(super) fn explain_all(
        &self,
        col: &Collection,
    ) -> EngineResult<Vec<(String, bool, String)>> {
        let probe = Vector::from(col.probe.clone().unwrap_or_else(|| vec![0.0; col.dim]));
        self.explain_sets(
            col.build.index,
            &col.index_name,
            |params| col.search_sql(EXPLAIN_K, col.rerank(params, EXPLAIN_K as usize)),
            &[&probe],
        )
    }

    /// `EXPLAIN`s the statement `sql` makes for each search-parameter set checked so far (the
    /// current one before any), run with `params`: label → (plan uses `index_name`, plan
    /// text).
    pub(super) fn explain_sets(
        &self,
        index: IndexKind,
        index_name: &str,
        sql: impl Fn(&SearchParams) -> String,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> EngineResult<Vec<(String, bool, String)>> {
        let sets = if self.checked.is_empty() {
            vec![("default".to_string(), self.search.clone())]
        } else {
            self.checked.clone()
        };
        self.with_conn("explain search", |conn| {
            // This session's settings are changed below; make it set up again before reuse.
            conn.generation = u64::MAX;
            let mut out = Vec::with_capacity(sets.len());
            for (label, search) in &sets {
                conn.client.batch_execute(&search.settings_sql(index))?;
                let rows = conn
                    .client
                    .query(&format!("EXPLAIN {}", sql(search)), params)?;
                let mut plan = String::new();
                for row in rows {
                    let line: String = row.try_get(0)?;
                    plan.push_str(&abbreviate_vectors(&line));
                    plan.push('\n');
                }
                let uses_index = plan.contains(index_name);
                out.push((label.clone(), uses_index, plan));
            }
            Ok(out)
        })
    }

    pub(super) fn count_rows(&self, table: &str) -> EngineResult<u64> {
        let sql = format!("SELECT count(*) FROM {table}");
        self.with_conn("count rows", |conn| {
            let n: i64 = conn.client.query_one(&sql, &[])?.try_get(0)?;
            Ok(n.max(0) as u64)
        })
    }

    pub(super) fn relation_size(
        &self,
        function: &str,
        relation: &str,
    ) -> EngineResult<Option<u64>> {
        let sql = format!("SELECT {function}(to_regclass($1))");
        let name = relation.to_string();
        self.with_conn("relation size", |conn| {
            let bytes: Option<i64> = conn.client.query_one(&sql, &[&name])?.try_get(0)?;
            Ok(bytes.map(|b| b.max(0) as u64))
        })
    }
}

/// Connects with a deadline on the whole start-up (TCP connect, startup message,
/// authentication, parameter status), not only on the TCP connect that `connect_timeout`
/// covers: a listener that accepts and never answers would otherwise hang the run forever.
/// The attempt runs on its own thread; past the deadline it is abandoned (that thread ends
/// when the peer closes the socket or the process exits).
pub(super) fn connect_within(config: &postgres::Config) -> Result<postgres::Client, String> {
    let deadline = config
        .get_connect_timeout()
        .copied()
        .unwrap_or(DEFAULT_CONNECT_TIMEOUT);
    let (tx, rx) = std::sync::mpsc::channel();
    let config = config.clone();
    std::thread::Builder::new()
        .name("pg-connect".into())
        .spawn(move || {
            let _ = tx.send(config.connect(NoTls));
        })
        .map_err(|e| format!("cannot start a connection thread: {e}"))?;
    match rx.recv_timeout(deadline) {
        Ok(Ok(client)) => Ok(client),
        Ok(Err(e)) => Err(pg_message(&e)),
        Err(_) => Err(format!(
            "no answer to the PostgreSQL start-up within {deadline:?} (--timeout); is it a \
             PostgreSQL server, and is it running?"
        )),
    }
}
