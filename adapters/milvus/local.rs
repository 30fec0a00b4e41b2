//! Per-thread search connections: each thread that searches runs its calls on its own
//! current-thread runtime and its own HTTP/2 connection, made on its first search.
//!
//! Through a shared multi-thread runtime every call would cross threads twice (the caller
//! hands the request to the worker that drives the connection and is woken when the answer is
//! back), client CPU taken from the server on a small machine; the Qdrant adapter measured
//! that cost (adapters/qdrant/local.rs). Driving the connection on the thread that waits for
//! the answer removes both hops.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::runtime::Runtime;
use tonic::transport::Channel;

use super::*;

/// Tells engines apart, so that a thread never searches through another engine's connection.
static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

/// A fresh owner number for a new engine.
pub(super) fn new_owner() -> u64 {
    NEXT_OWNER.fetch_add(1, Ordering::Relaxed)
}

/// This thread's runtime and connection, for the engine numbered `owner`.
struct Local {
    owner: u64,
    rt: Runtime,
    channel: Channel,
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

/// Ends this thread's connection to the engine numbered `owner`, if it has one.
pub(super) fn forget(owner: u64) {
    LOCAL.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_some_and(|l| l.owner == owner) {
            *slot = None;
        }
    });
}

impl MilvusEngine {
    /// Runs `f` with this thread's runtime and connection for this engine.
    pub(super) fn on_local<T>(
        &self,
        operation: &str,
        f: impl FnOnce(&Runtime, &Channel) -> EngineResult<T>,
    ) -> EngineResult<T> {
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
                    // The channel belongs to the runtime it is made on.
                    let channel = {
                        let _guard = rt.enter();
                        self.endpoint.connect_lazy()
                    };
                    Local {
                        owner: self.owner,
                        rt,
                        channel,
                    }
                }
            };
            let result = f(&local.rt, &local.channel);
            *slot = Some(local);
            result
        })
    }
}
