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
//! The handler itself only does async-signal-safe work (atomics, `write`, `_exit`): a thread
//! started by [`install`] reads the signals from a pipe and does the rest.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

static REQUESTED: AtomicBool = AtomicBool::new(false);
/// Signals received so far.
static SIGNALS: AtomicUsize = AtomicUsize::new(0);
/// Write end of the pipe to the signal thread; -1 before [`install`].
static WAKE: AtomicI32 = AtomicI32::new(-1);
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

extern "C" fn on_signal(_: libc::c_int) {
    // Only async-signal-safe work here: atomics, `write` and `_exit`.
    let n = SIGNALS.fetch_add(1, Ordering::SeqCst);
    REQUESTED.store(true, Ordering::SeqCst);
    let fd = WAKE.load(Ordering::SeqCst);
    let told = fd >= 0 && {
        let byte = n.min(1) as u8;
        // SAFETY: writing one byte from a valid buffer to a pipe is async-signal-safe.
        unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) == 1 }
    };
    if n >= 2 || (n == 1 && !told) {
        // SAFETY: `_exit` is async-signal-safe and ends the process without unwinding.
        unsafe { libc::_exit(130) };
    }
}

/// Installs the handler for SIGINT and SIGTERM and starts the thread that answers them.
/// Called by the commands that run benchmarks; elsewhere the default (immediate exit) is
/// right.
pub fn install() -> std::io::Result<()> {
    if WAKE.load(Ordering::SeqCst) < 0 {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `pipe2` fills the two descriptors of a valid array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let read_end = fds[0];
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || answer_signals(read_end))?;
        WAKE.store(fds[1], Ordering::SeqCst);
    }
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction with a valid handler and an empty mask is well formed;
        // the handler only touches atomics and calls `write` and `_exit`.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            // Restart interrupted system calls: engine clients must not see EINTR.
            action.sa_flags = libc::SA_RESTART;
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The signal thread: says what the first signal waits for; on the second, runs the
/// forced-exit hook and ends the process.
fn answer_signals(fd: libc::c_int) {
    loop {
        let mut byte = 0u8;
        // SAFETY: reading one byte into a valid buffer from a descriptor this thread owns.
        let n = unsafe { libc::read(fd, (&mut byte as *mut u8).cast(), 1) };
        if n != 1 {
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if byte == 0 {
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
        // SAFETY: ends the process without unwinding the threads still at work.
        unsafe { libc::_exit(130) };
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
