//! Primitive types shared by every layer: point ids, and the progress observer through which
//! long steps report to whoever shows them (the terminal implements it; the layers that do the
//! work never draw anything themselves).

use std::sync::Arc;

/// Id of a point (vector) in an engine's collection; train row numbers by default.
pub type PointId = u64;

/// What a progress task counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressUnit {
    /// Vectors, queries, points.
    Items,
    /// Bytes (downloads, hashing).
    Bytes,
    /// A wait of unknown length (index build): `total` is ignored.
    Wait,
}

/// Receives progress of long steps. Implementations must be cheap to call from worker
/// threads.
pub trait Progress: Send + Sync {
    /// Starts a task of `total` units (`None`: unknown); it ends when the handle is dropped.
    fn task(&self, label: &str, total: Option<u64>, unit: ProgressUnit) -> Box<dyn ProgressTask>;

    /// A one-line note on what is happening (a phase starting, a step's headline figures).
    fn message(&self, _text: &str) {}
}

/// One running task.
pub trait ProgressTask: Send + Sync {
    /// `done` units finished so far.
    fn set(&self, done: u64);
}

/// Shows nothing: tests, libraries, `--quiet`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

struct SilentTask;

impl ProgressTask for SilentTask {
    fn set(&self, _done: u64) {}
}

impl Progress for Silent {
    fn task(
        &self,
        _label: &str,
        _total: Option<u64>,
        _unit: ProgressUnit,
    ) -> Box<dyn ProgressTask> {
        Box::new(SilentTask)
    }
}

/// A shareable progress observer (cloneable, printable in `Debug` output of options).
#[derive(Clone)]
pub struct ProgressHandle(pub Arc<dyn Progress>);

impl ProgressHandle {
    pub fn silent() -> ProgressHandle {
        ProgressHandle(Arc::new(Silent))
    }
}

impl Default for ProgressHandle {
    fn default() -> Self {
        ProgressHandle::silent()
    }
}

impl std::fmt::Debug for ProgressHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressHandle")
    }
}

impl std::ops::Deref for ProgressHandle {
    type Target = dyn Progress;
    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}
