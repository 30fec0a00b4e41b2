//! The adapter's use of the wire client: an idle session or a new one for each unfiltered
//! search, the fallback to the `postgres` crate when this client cannot serve the server, and
//! what a wire error means to the run.

use super::*;

/// Which client runs the unfiltered searches, for `describe()`.
pub(in crate::adapters::pgvector) fn search_client(engine: &PgVector) -> String {
    match engine.wire_off.get() {
        None => "wire protocol on a blocking socket (adapters/pgvector/wire.rs)".into(),
        Some(why) => format!("postgres crate ({why})"),
    }
}

impl PgVector {
    fn wire_fail(&self, operation: &str, error: WireError) -> EngineError {
        match error {
            // Class 57P: admin_shutdown, crash_shutdown, cannot_connect_now.
            WireError::Db { code, message } if code.starts_with("57P") => {
                self.connection_lost(operation, &message)
            }
            WireError::Db { message, .. } => EngineError::op(ENGINE, operation, message),
            WireError::Io(e)
                if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) =>
            {
                self.no_answer(operation)
            }
            WireError::Io(e) => self.connection_lost(operation, &e),
            WireError::Unsupported(m) | WireError::Protocol(m) => {
                EngineError::op(ENGINE, operation, m)
            }
        }
    }

    /// An idle wire session, or a new one.
    fn wire_session(&self) -> Result<WireSession, WireError> {
        if let Some(session) = self.wire_pool.take() {
            return Ok(session);
        }
        let connect_timeout = self
            .config
            .get_connect_timeout()
            .copied()
            .unwrap_or(DEFAULT_CONNECT_TIMEOUT);
        let io_timeout = self.watchdog.as_deref().map(|w| w.limit);
        WireSession::connect(
            &self.config,
            connect_timeout,
            io_timeout,
            &self.session_setup_sql(),
        )
    }

    /// The unfiltered search on a wire session; `None` when searches go through the
    /// `postgres` crate (this client cannot serve the server or the statement).
    pub(in crate::adapters::pgvector) fn search_over_wire(
        &self,
        col: &Collection,
        query: &[f32],
        (limit, rerank): (i64, i64),
        out: &mut Vec<Neighbor>,
    ) -> Option<EngineResult<()>> {
        if self.wire_off.get().is_some() {
            return None;
        }
        let result = self.wire_session().and_then(|mut session| {
            match session
                .ready(self, col, limit, rerank)
                .and_then(|()| session.search(query, out))
            {
                Ok(()) => {
                    self.wire_pool.give_back(session);
                    Ok(())
                }
                Err(e) => {
                    // A rejected statement leaves the session in sync; anything else ends it.
                    if matches!(e, WireError::Db { .. }) {
                        self.wire_pool.give_back(session);
                    }
                    Err(e)
                }
            }
        });
        match result {
            Ok(()) => Some(Ok(())),
            Err(WireError::Unsupported(why)) => {
                out.clear();
                let _ = self.wire_off.set(why);
                self.wire_pool.clear();
                None
            }
            Err(e) => Some(Err(self.wire_fail("search", e))),
        }
    }
}
