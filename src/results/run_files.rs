//! The files of a run being written, as one unit: its result document, its per-query
//! sidecar and the lock on its name.
//!
//! A step counts as kept once both files hold it: the step's sidecar lines are flushed and
//! synced before the result that lists it is saved (atomically, synced). A process killed at
//! any moment therefore leaves a result whose every kept step has its lines on disk, in the
//! sidecar's temporary file; [`recover`] finds them again for `bench --resume`, and cuts the
//! kept steps back where lines are missing (a file damaged or removed by hand).
//!
//! The syncs happen between steps, after a step's timed loops: nothing is added to the
//! measured path.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use super::lock::ResultLock;
use super::sidecar::{self, Sidecar, SidecarSurvey};
use super::{ResultFileError, RunResult, RunState, Step, manifest};

/// A run's result file, sidecar and lock. The runner saves through it; a forced exit
/// (a second Ctrl-C) finishes the files through [`RunFiles::stop_hook`] from another thread.
pub struct RunFiles {
    result: PathBuf,
    shared: Arc<Mutex<Shared>>,
}

struct Shared {
    /// `None` without a sidecar (`--no-sidecar`) or once finished.
    sidecar: Option<Sidecar>,
    lock: Option<ResultLock>,
    /// Steps per configuration in the result this run last saved: the steps kept (`None`
    /// before its first save, when the file holds what an earlier attempt kept).
    saved: Option<Vec<usize>>,
}

impl RunFiles {
    /// The files of the result at `result`, with its sidecar (if any) and the lock on its
    /// name (if taken; the lock is released when the files are dropped).
    pub fn new(result: &Path, sidecar: Option<Sidecar>, lock: Option<ResultLock>) -> RunFiles {
        RunFiles {
            result: result.to_path_buf(),
            shared: Arc::new(Mutex::new(Shared {
                sidecar,
                lock,
                saved: None,
            })),
        }
    }

    pub fn result_path(&self) -> &Path {
        &self.result
    }

    fn shared(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether per-query lines are recorded.
    pub fn has_sidecar(&self) -> bool {
        self.shared().sidecar.is_some()
    }

    /// Runs `write` on the sidecar, if there is one: a step's lines, written in one go.
    pub fn with_sidecar(
        &self,
        write: impl FnOnce(&mut Sidecar) -> Result<(), ResultFileError>,
    ) -> Result<(), ResultFileError> {
        match self.shared().sidecar.as_mut() {
            Some(sidecar) => write(sidecar),
            None => Ok(()),
        }
    }

    /// Saves `result` with every step it lists kept: the sidecar's lines are put on disk
    /// first, and count as kept once the result is saved.
    pub fn save(&self, result: &RunResult) -> Result<(), ResultFileError> {
        let mut shared = self.shared();
        if let Some(sidecar) = shared.sidecar.as_mut() {
            sidecar.sync()?;
        }
        result.save(&self.result)?;
        if let Some(sidecar) = shared.sidecar.as_mut() {
            sidecar.keep();
        }
        shared.saved = Some(result.configs.iter().map(|c| c.steps.len()).collect());
        Ok(())
    }

    /// Drops from `result` the steps measured after its last successful save (one whose
    /// save failed, on a full disk): they are not kept, their lines are not in the sidecar,
    /// and the final result must not list them.
    pub fn drop_unsaved_steps(&self, result: &mut RunResult) {
        let shared = self.shared();
        let Some(saved) = &shared.saved else {
            return;
        };
        for (i, config) in result.configs.iter_mut().enumerate() {
            config.steps.truncate(saved.get(i).copied().unwrap_or(0));
        }
    }

    /// Moves the sidecar into place with the lines of the kept steps. Done before the final
    /// result is saved, so that a result in a final state never names a sidecar that is not
    /// there; on failure its temporary file stays for `bench --resume`.
    pub fn finish_sidecar(&self) -> Result<(), ResultFileError> {
        match self.shared().sidecar.take() {
            Some(sidecar) => sidecar.finish(),
            None => Ok(()),
        }
    }

    /// Drops the sidecar unfinished (its temporary file is removed): for a run that measured
    /// nothing and leaves no result.
    pub fn discard_sidecar(&self) {
        drop(self.shared().sidecar.take());
    }

    /// What a forced exit runs (see [`crate::interrupt::on_forced_exit`]): finishes the
    /// sidecar with its kept lines, marks the saved result `interrupted` if it still says
    /// `running`, releases the name, and keeps every later write out, the process being
    /// about to end. Does nothing once these files are dropped.
    pub fn stop_hook(&self) -> impl FnOnce() + Send + 'static {
        let shared: Weak<Mutex<Shared>> = Arc::downgrade(&self.shared);
        let result = self.result.clone();
        move || {
            let Some(shared) = shared.upgrade() else {
                return;
            };
            let mut guard = shared.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(sidecar) = guard.sidecar.take() {
                let _ = sidecar.finish();
            }
            if let Ok(mut saved) = RunResult::load(&result)
                && saved.status.state == RunState::Running
            {
                saved.status.state = RunState::Interrupted;
                saved.manifest.finished_at = Some(manifest::now());
                let _ = saved.save(&result);
            }
            drop(guard.lock.take());
            // Held until the process ends: the runner's thread must not save after this.
            std::mem::forget(guard);
        }
    }
}

/// Where [`recover`] cut a result's kept steps back.
#[derive(Debug, Clone, PartialEq)]
pub struct Redo {
    /// Configuration index (0-based, as in the sidecar).
    pub config: usize,
    /// Index of the first step dropped in its configuration (the sidecar's `step`).
    pub step: usize,
    pub runbook_step: usize,
    /// Steps dropped, this one and the ones after it (all configurations).
    pub dropped: usize,
}

/// What [`recover`] found.
#[derive(Debug)]
pub struct Recovered {
    /// The earlier sidecar the resumed one starts from, if any was found.
    pub source: Option<SidecarSurvey>,
    pub redo: Option<Redo>,
}

/// Chooses, among the sidecars earlier attempts left for `sidecar` (the finished file and
/// the temporary files of stopped runs), the one holding the most of the steps `result`
/// keeps, and cuts `result` back before the first search step whose lines it lacks, so that
/// the step is measured again instead of a result listing lines that do not exist.
pub fn recover(result: &mut RunResult, sidecar: &Path) -> Recovered {
    let surveys: Vec<SidecarSurvey> = sidecar::earlier_files(sidecar)
        .iter()
        .filter_map(|p| sidecar::survey(p).ok())
        .collect();
    // Newest first: the first of the best wins a tie.
    let best = surveys
        .into_iter()
        .map(|s| (held_steps(result, Some(&s)), s))
        .reduce(|best, next| if next.0 > best.0 { next } else { best });
    let held = best
        .as_ref()
        .map_or_else(|| held_steps(result, None), |(held, _)| *held);
    let redo = cut_back(result, held);
    Recovered {
        source: best.map(|(_, s)| s),
        redo,
    }
}

/// Steps of `result`, counted in order, before the first search step `survey` lacks lines
/// of (every step when none is lacking).
fn held_steps(result: &RunResult, survey: Option<&SidecarSurvey>) -> usize {
    let mut held = 0;
    for (ci, config) in result.configs.iter().enumerate() {
        for step in &config.steps {
            if let Step::Search(s) = step {
                let lines = survey.and_then(|v| v.lines.get(&(ci, s.sidecar_step)));
                if lines != Some(&s.quality.queries) {
                    return held;
                }
            }
            held += 1;
        }
    }
    held
}

/// Keeps the first `held` steps of `result` (configurations in order) and drops the rest.
fn cut_back(result: &mut RunResult, held: usize) -> Option<Redo> {
    let total: usize = result.configs.iter().map(|c| c.steps.len()).sum();
    if held >= total {
        return None;
    }
    let mut before = 0;
    for (ci, config) in result.configs.iter_mut().enumerate() {
        if held < before + config.steps.len() {
            let step = held - before;
            let runbook_step = match &config.steps[step] {
                Step::Search(s) => s.runbook_step,
                Step::Mutation(m) => m.runbook_step,
                Step::Stream(s) => s.runbook_step,
                Step::Build(_) => 1,
            };
            config.steps.truncate(step);
            config.error = None;
            result.configs.truncate(ci + 1);
            return Some(Redo {
                config: ci,
                step,
                runbook_step,
                dropped: total - held,
            });
        }
        before += config.steps.len();
    }
    None
}
