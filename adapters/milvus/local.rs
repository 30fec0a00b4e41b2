//! Per-thread search connections ([`crate::adapters::support::per_thread`]): each thread that
//! searches runs its calls on its own current-thread runtime and its own HTTP/2 connection,
//! made on its first search.

use tokio::runtime::Runtime;
use tonic::transport::Channel;

use super::*;
use crate::adapters::support::per_thread;

impl MilvusEngine {
    /// Runs `f` with this thread's runtime and connection for this engine.
    pub(super) fn on_local<T>(
        &self,
        operation: &str,
        f: impl FnOnce(&Runtime, &Channel) -> EngineResult<T>,
    ) -> EngineResult<T> {
        per_thread::with_local(
            (self.owner, ENGINE, operation),
            || Ok(self.endpoint.connect_lazy()),
            f,
        )
    }
}
