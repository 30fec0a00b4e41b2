//! A small pool of idle connections, so concurrent searches do not reconnect.

use super::*;
use crate::adapters::support::pool::IdlePool;

/// Connections to one server. A search takes one, uses it and returns it, so concurrent
/// searches each have their own socket and none waits for another's round trip.
pub(super) struct Pool {
    pub(super) client: Client,
    pub(super) idle: IdlePool<Connection>,
    pub(super) timeout: Duration,
    pub(super) connect_timeout: Duration,
}

impl Pool {
    pub(super) fn connect(&self) -> RedisResult<Connection> {
        let con = self
            .client
            .get_connection_with_timeout(self.connect_timeout)?;
        con.set_read_timeout(Some(self.timeout))?;
        con.set_write_timeout(Some(self.timeout))?;
        Ok(con)
    }

    pub(super) fn take(&self) -> RedisResult<Connection> {
        match self.idle.take() {
            Some(con) => Ok(con),
            None => self.connect(),
        }
    }

    pub(super) fn give_back(&self, con: Connection) {
        self.idle.give_back(con);
    }

    /// Runs `f` on a pooled connection. The connection goes back to the pool unless the call
    /// broke it: after an I/O error or a timeout a reply may still be in flight, and reusing
    /// the socket would pair the next command with the wrong answer.
    pub(super) fn with<T>(
        &self,
        f: impl FnOnce(&mut Connection) -> RedisResult<T>,
    ) -> RedisResult<T> {
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

    pub(super) fn clear(&self) {
        self.idle.clear();
    }
}

/// True when the error leaves the connection unusable (transport failure, timeout).
pub(super) fn broken(e: &RedisError) -> bool {
    e.is_io_error() || e.is_timeout() || e.is_connection_dropped() || e.is_unrecoverable_error()
}
