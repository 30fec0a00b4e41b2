//! What a configuration leaves behind when it ends or is stopped: Ctrl-C and SIGTERM end the
//! run between steps and queries, a stopped server engine drops its collection, and the
//! engine's working directory is removed.

use std::path::PathBuf;

use crate::engine::VectorEngine;

use super::RunError;

/// Stops the run when Ctrl-C or SIGTERM asked for it (see [`crate::interrupt`]).
pub(crate) fn check_interrupt() -> Result<(), RunError> {
    if crate::interrupt::requested() {
        Err(RunError::Interrupted)
    } else {
        Ok(())
    }
}

/// An error that arrives after Ctrl-C asked the run to stop is that stop: a signal can cut an
/// engine call short (a client's read that is not restarted), and the run then ends
/// `interrupted` and resumable, not `failed` with the engine blamed.
pub(super) fn stopped_by_signal(e: RunError) -> RunError {
    if crate::interrupt::requested() {
        RunError::Interrupted
    } else {
        e
    }
}

/// A server engine whose run Ctrl-C stopped drops its collection on the way out, so that the
/// next run on the same dataset does not find it in its way (`already exists`); `--resume`
/// rebuilds it in any case. An in-process engine's files go with the work directory.
pub(super) struct CloseOnInterrupt {
    pub(super) engine: Box<dyn VectorEngine>,
    /// From the registry: an engine without a server has no collection to drop.
    pub(super) embedded: bool,
}

impl std::ops::Deref for CloseOnInterrupt {
    type Target = Box<dyn VectorEngine>;
    fn deref(&self) -> &Self::Target {
        &self.engine
    }
}

impl std::ops::DerefMut for CloseOnInterrupt {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.engine
    }
}

impl Drop for CloseOnInterrupt {
    fn drop(&mut self) {
        // Closing twice is harmless: a closed engine has no collection left to drop.
        if crate::interrupt::requested() && !self.embedded {
            let _ = self.engine.close();
        }
    }
}

/// Removes an engine's working directory when the configuration ends, unless asked to keep it
/// (and on a forced exit, which skips this: see [`crate::interrupt::scratch_dir`]).
pub(super) struct WorkDirGuard {
    path: PathBuf,
    keep: bool,
    _forced_exit: Option<crate::interrupt::ScratchDir>,
}

impl WorkDirGuard {
    /// Creates the working directory of configuration `index` of an engine's run,
    /// `PARENT/ENGINE-PID-INDEX`, guarded: removed when the guard drops unless kept.
    pub(super) fn create(
        parent: &std::path::Path,
        engine: &str,
        index: usize,
        keep: bool,
    ) -> Result<(PathBuf, WorkDirGuard), super::RunError> {
        let path = parent.join(format!("{engine}-{}-{index}", std::process::id()));
        std::fs::create_dir_all(&path).map_err(|e| {
            super::RunError::Setup(format!("cannot create {}: {e}", path.display()))
        })?;
        Ok((path.clone(), WorkDirGuard::new(path, keep)))
    }

    /// Guards `path`; unless it is kept, a forced exit removes it too.
    pub(super) fn new(path: PathBuf, keep: bool) -> WorkDirGuard {
        let forced_exit = (!keep).then(|| crate::interrupt::scratch_dir(&path));
        WorkDirGuard {
            path,
            keep,
            _forced_exit: forced_exit,
        }
    }
}

impl Drop for WorkDirGuard {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}
