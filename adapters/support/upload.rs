//! Writes split into requests that go `workers` at a time (`--upload-parallel`): the server
//! engines' bulk loads, whose servers take several requests at once.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::engine::{EngineError, EngineResult};

/// Calls `send` on every item of `requests`, at most `workers` at a time, and returns the
/// first error; after an error no further request starts.
pub fn in_parallel<T: Sync>(
    engine: &str,
    operation: &str,
    workers: usize,
    requests: &[T],
    send: impl Fn(&T) -> EngineResult<()> + Sync,
) -> EngineResult<()> {
    let workers = workers.min(requests.len());
    if workers <= 1 {
        return requests.iter().try_for_each(send);
    }
    let next = AtomicUsize::new(0);
    let first_error: Mutex<Option<EngineError>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(request) = requests.get(i) else {
                        break;
                    };
                    if let Err(e) = send(request) {
                        // Stop handing out work; keep the first error for the caller.
                        next.store(requests.len(), Ordering::Relaxed);
                        if let Ok(mut slot) = first_error.lock() {
                            slot.get_or_insert(e);
                        }
                        break;
                    }
                }
            });
        }
    });
    match first_error.into_inner() {
        Ok(None) => Ok(()),
        Ok(Some(e)) => Err(e),
        Err(_) => Err(EngineError::op(
            engine,
            operation,
            "an upload thread panicked",
        )),
    }
}
