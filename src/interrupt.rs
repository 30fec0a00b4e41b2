//! Ctrl-C (SIGINT) and SIGTERM as a request to stop: the handler only sets a flag, and the
//! runner checks it between queries, batches and steps, so an interrupted run ends with its
//! finished steps saved, its result marked `interrupted`, and no temporary file left behind.
//! A second signal while the first is being honoured ends the process at once (exit 130), for
//! a user who does not want to wait for the current engine call.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Whether a stop was requested.
#[inline]
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

extern "C" fn on_signal(_: libc::c_int) {
    // Only async-signal-safe work here: an atomic swap and `_exit`.
    if REQUESTED.swap(true, Ordering::SeqCst) {
        // SAFETY: `_exit` is async-signal-safe and ends the process without unwinding.
        unsafe { libc::_exit(130) };
    }
}

/// Installs the handler for SIGINT and SIGTERM. Called once, by the commands that run
/// benchmarks; elsewhere the default (immediate exit) is right.
pub fn install() -> std::io::Result<()> {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction with a valid handler and an empty mask is well formed;
        // the handler only touches an atomic and calls `_exit`.
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
