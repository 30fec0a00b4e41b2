//! Per-thread runtimes and connections for the engines reached through an async client (gRPC
//! over HTTP/2): each thread that searches runs its calls on its own current-thread tokio
//! runtime and its own connection, made on the thread's first call for that engine.
//!
//! Through a shared multi-thread runtime every call crosses threads twice (the caller hands
//! the request to the worker that drives the connection, and is woken when the answer is
//! back). At two clients on two cores that cost about 70 µs of client CPU per query against
//! Qdrant, taken from the server: 0.89× of a minimal tokio loop with the same client library
//! (adapters/qdrant/client_bench.rs). Driving the connection on the thread that waits for the
//! answer removes both hops.

use std::any::Any;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::runtime::Runtime;

use crate::engine::{EngineError, EngineResult};

/// Tells engines apart, so that a thread never searches through another engine's connection.
static NEXT_OWNER: AtomicU64 = AtomicU64::new(1);

/// A fresh owner number for a new engine.
pub fn new_owner() -> u64 {
    NEXT_OWNER.fetch_add(1, Ordering::Relaxed)
}

/// This thread's runtime and connection, for the engine numbered `owner`.
struct Local {
    owner: u64,
    rt: Runtime,
    connection: Box<dyn Any>,
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

/// Ends this thread's connection to the engine numbered `owner`, if it has one (other
/// threads' connections end with their threads).
pub fn forget(owner: u64) {
    LOCAL.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_some_and(|l| l.owner == owner) {
            *slot = None;
        }
    });
}

/// Runs `f` with this thread's runtime and connection for the engine numbered `owner`; a
/// thread without one starts a runtime and calls `connect` inside it (a connection belongs
/// to the runtime it is made on). `engine` and `operation` name a failure to start tokio.
pub fn with_local<C: 'static, T>(
    (owner, engine, operation): (u64, &str, &str),
    connect: impl FnOnce() -> EngineResult<C>,
    f: impl FnOnce(&Runtime, &C) -> EngineResult<T>,
) -> EngineResult<T> {
    LOCAL.with(|cell| {
        let mut slot = cell.borrow_mut();
        let local = match slot.take() {
            Some(local) if local.owner == owner && local.connection.is::<C>() => local,
            _ => {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| {
                        EngineError::op(engine, operation, format!("cannot start tokio: {e}"))
                    })?;
                let connection = {
                    let _guard = rt.enter();
                    connect()?
                };
                Local {
                    owner,
                    rt,
                    connection: Box::new(connection),
                }
            }
        };
        let result = match local.connection.downcast_ref::<C>() {
            Some(connection) => f(&local.rt, connection),
            None => Err(EngineError::op(
                engine,
                operation,
                "per-thread connection of another type",
            )),
        };
        *slot = Some(local);
        result
    })
}
