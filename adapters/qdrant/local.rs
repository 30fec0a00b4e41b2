//! Per-thread search connections: each sender thread runs its searches on its own
//! current-thread runtime and its own gRPC connection.
//!
//! Through the shared multi-thread runtime, every search crossed threads twice (the sender
//! thread hands the request to the worker that drives the connection, and is woken when the
//! answer is back). At two clients on two cores that cost ~70 µs of client CPU per query,
//! taken from the server: 0.89× of a minimal tokio loop with the same client library
//! (adapters/qdrant/client_bench.rs). Driving the connection on the thread that waits for the answer
//! removes both hops.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use qdrant_client::Qdrant;
use qdrant_client::qdrant::{QueryPoints, QueryResponse};
use tokio::runtime::Runtime;

use super::errors::classify;
use super::{ENGINE, QdrantEngine};
use crate::engine::{EngineError, EngineResult};

/// Tells engines apart, so that a thread never searches through another engine's connection.
static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

/// A fresh owner number for a new engine.
pub(super) fn new_owner() -> u64 {
    NEXT_OWNER.fetch_add(1, Ordering::Relaxed)
}

/// This thread's runtime and client, for the engine numbered `owner`.
struct Local {
    owner: u64,
    rt: Runtime,
    client: Qdrant,
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

/// Ends this thread's connection to the engine numbered `owner`, if it has one (the sender
/// threads' own connections end with their threads).
pub(super) fn forget(owner: u64) {
    LOCAL.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_some_and(|local| local.owner == owner) {
            *slot = None;
        }
    });
}

impl QdrantEngine {
    /// Runs one query on this thread's own runtime and connection (made on the thread's
    /// first search for this engine, with the engine's client settings), and maps its error.
    pub(super) fn run_query(
        &self,
        operation: &str,
        request: QueryPoints,
    ) -> EngineResult<QueryResponse> {
        LOCAL.with(|cell| {
            let mut slot = cell.borrow_mut();
            let local = match slot.take() {
                Some(local) if local.owner == self.owner => local,
                _ => {
                    let rt = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| {
                            EngineError::op(ENGINE, operation, format!("cannot start tokio: {e}"))
                        })?;
                    // The client's channels belong to the runtime they are made on. One
                    // thread runs one query at a time: one connection serves it (the shared
                    // client's pool would spread its queries over several).
                    let mut config = self.client_config.clone();
                    config.set_pool_size(1);
                    let client = {
                        let _guard = rt.enter();
                        config.build().map_err(|e| {
                            EngineError::op(ENGINE, operation, format!("cannot make a client: {e}"))
                        })?
                    };
                    Local {
                        owner: self.owner,
                        rt,
                        client,
                    }
                }
            };
            let result = local
                .rt
                .block_on(local.client.query(request))
                .map_err(|e| classify(&self.url, operation, e));
            *slot = Some(local);
            result
        })
    }
}
