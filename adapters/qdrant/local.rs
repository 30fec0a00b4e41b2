//! Per-thread search connections ([`crate::adapters::support::per_thread`]): each sender
//! thread runs its searches on its own current-thread runtime and its own gRPC connection.

use qdrant_client::Qdrant;
use qdrant_client::qdrant::{QueryPoints, QueryResponse};

use super::errors::classify;
use super::{ENGINE, QdrantEngine};
use crate::adapters::support::per_thread;
use crate::engine::{EngineError, EngineResult};

impl QdrantEngine {
    /// Runs one query on this thread's own runtime and connection (made on the thread's
    /// first search for this engine, with the engine's client settings), and maps its error.
    pub(super) fn run_query(
        &self,
        operation: &str,
        request: QueryPoints,
    ) -> EngineResult<QueryResponse> {
        // One thread runs one query at a time: one connection serves it (the shared
        // client's pool would spread its queries over several).
        let connect = || {
            let mut config = self.client_config.clone();
            config.set_pool_size(1);
            config.build().map_err(|e| {
                EngineError::op(ENGINE, operation, format!("cannot make a client: {e}"))
            })
        };
        per_thread::with_local((self.owner, ENGINE, operation), connect, |rt, client: &Qdrant| {
            rt.block_on(client.query(request))
                .map_err(|e| classify(&self.url, operation, e))
        })
    }
}
