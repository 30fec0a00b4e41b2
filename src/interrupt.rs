//! Ctrl-C (SIGINT) and SIGTERM as a request to stop: the handler only sets a flag, and the
//! runner checks it between queries, batches and steps, so an interrupted run ends with its
//! finished steps saved, its result marked `interrupted`, and no temporary file left behind.
//!
//! Some work cannot be cut short (an engine building its index in one call): while it runs,
//! the first signal is answered with a line saying so ([`busy`]). A second signal ends the
//! process without waiting for the current engine call, after the hook given to
//! [`on_forced_exit`] has put the run's files in order (the sidecar's kept lines in place, the
//! result marked `interrupted`, resumable) and the engine's scratch directories are removed
//! ([`scratch_dir`]). A third ends it at once.
//!
//! The handler itself only counts the signal (an atomic) and, at the third, ends the process
//! (`_exit`): both async-signal-safe. A thread started by [`install`] is woken by
//! signal-hook's iterator and does the rest.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use signal_hook::low_level;

static REQUESTED: AtomicBool = AtomicBool::new(false);
/// Signals received so far.
static SIGNALS: AtomicUsize = AtomicUsize::new(0);
/// What is running that the first signal has to wait for, said when it arrives.
static BUSY: Mutex<Option<&'static str>> = Mutex::new(None);
type Hook = Box<dyn FnOnce() + Send>;
static FORCED_EXIT: Mutex<Option<Hook>> = Mutex::new(None);
/// Scratch directories (engines' working directories) a forced exit removes.
static SCRATCH: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Whether a stop was requested.
#[inline]
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

/// The signal handler's own part: count, and end the process at the third signal.
fn count_signal() {
    let before = SIGNALS.fetch_add(1, Ordering::SeqCst);
    REQUESTED.store(true, Ordering::SeqCst);
    if before >= 2 {
        low_level::exit(130);
    }
}

/// Installs the handler for SIGINT and SIGTERM and starts the thread that answers them (once
/// per process). Called by the commands that run benchmarks; elsewhere the default
/// (immediate exit) is right.
pub fn install() -> std::io::Result<()> {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    let installed = INSTALLED.get_or_init(|| {
        let start = || -> std::io::Result<()> {
            for signal in [SIGINT, SIGTERM] {
                // SAFETY: the action only touches atomics and calls `_exit`, both
                // async-signal-safe. signal-hook registers it with SA_RESTART: engine
                // clients must not see EINTR.
                unsafe { low_level::register(signal, count_signal)? };
            }
            let signals = Signals::new([SIGINT, SIGTERM])?;
            std::thread::Builder::new()
                .name("signals".into())
                .spawn(move || answer_signals(signals))?;
            Ok(())
        };
        start().map_err(|e| e.to_string())
    });
    installed.clone().map_err(std::io::Error::other)
}

/// The signal thread: says what the first signal waits for; on the second, runs the
/// forced-exit hook and ends the process. signal-hook may fold signals that arrive together
/// into one wake-up: the count says how many there were.
fn answer_signals(mut signals: Signals) {
    for _ in signals.forever() {
        if SIGNALS.load(Ordering::SeqCst) < 2 {
            let busy = *BUSY.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(what) = busy {
                eprintln!(
                    "\nstopping: {what} first, then the run ends with its finished steps saved \
                     (Ctrl-C again to stop at once; the run stays resumable with --resume)"
                );
            }
            continue;
        }
        let hook = FORCED_EXIT
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(hook) = hook {
            hook();
        }
        let scratch = std::mem::take(&mut *SCRATCH.lock().unwrap_or_else(PoisonError::into_inner));
        for dir in scratch {
            let _ = std::fs::remove_dir_all(dir);
        }
        low_level::exit(130);
    }
}

/// Sets what a second signal runs before the process ends (replacing any earlier hook).
/// It runs on the signal thread while the others go on: it must take whatever lock keeps
/// them from writing what it writes.
pub fn on_forced_exit(hook: impl FnOnce() + Send + 'static) {
    *FORCED_EXIT.lock().unwrap_or_else(PoisonError::into_inner) = Some(Box::new(hook));
}

/// Marks work that a stop request cannot cut short, named by `what` ("finishing the index
/// build"), until the returned guard is dropped.
pub fn busy(what: &'static str) -> Busy {
    *BUSY.lock().unwrap_or_else(PoisonError::into_inner) = Some(what);
    Busy(())
}

/// See [`busy`].
pub struct Busy(());

impl Drop for Busy {
    fn drop(&mut self) {
        *BUSY.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// Marks `dir` as scratch space that a forced exit removes (the normal cleanup, which the
/// forced exit skips, removes it otherwise), until the returned guard is dropped.
pub fn scratch_dir(dir: &Path) -> ScratchDir {
    SCRATCH
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(dir.to_path_buf());
    ScratchDir(dir.to_path_buf())
}

/// See [`scratch_dir`].
pub struct ScratchDir(PathBuf);

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let mut dirs = SCRATCH.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = dirs.iter().position(|d| *d == self.0) {
            dirs.remove(i);
        }
    }
}
