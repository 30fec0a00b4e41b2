//! Runbooks: the sequence of build, insert, update, delete and search steps of a run, in the
//! spirit of big-ann-benchmarks' streaming runbooks, for every engine.
//!
//! A runbook is written against the dataset's train rows: point `i` is train row `i` when it
//! is first inserted; an update gives existing ids the vectors of other train rows. Before
//! anything runs, the runbook is *resolved*: simulated step by step against the dataset size,
//! which rejects overlapping inserts, updates or deletes of ids that are not live, and ranges
//! beyond the dataset, and yields the exact ids and vector rows of every operation plus the
//! live set at every search, from which the ground truth is computed.
//!
//! ```toml
//! name = "my-runbook"
//! [[steps]]
//! kind = "build"
//! end = "90%"
//! [[steps]]
//! kind = "search"
//! [[steps]]
//! kind = "insert"
//! start = "90%"
//! end = "100%"
//! mode = "single"          # one timed call per point (default: batch)
//! [[steps]]
//! kind = "update"
//! ids = { start = 0, end = "5%" }
//! from = "50%"             # new vectors: train rows from here on
//! [[steps]]
//! kind = "delete"
//! ids = { fraction = 0.05, seed = 7 }
//! ```

mod resolve;
mod spec;

pub use resolve::{Resolved, ResolvedStream, StreamOp};
pub use spec::{
    ClusterLabels, ClusterPick, IdSelection, Lifetime, Lifetimes, OpMode, Position, Rate, Runbook,
    StepSpec, StreamDelete, StreamInsert, StreamUpdate,
};

/// What is wrong with a runbook.
#[derive(Debug, thiserror::Error)]
pub enum RunbookError {
    #[error("cannot read runbook {path}: {message}")]
    Read { path: String, message: String },
    #[error("runbook step {step} ({kind}): {message}")]
    Step {
        step: usize,
        kind: &'static str,
        message: String,
    },
    #[error("runbook: {0}")]
    Invalid(String),
}

pub mod bigann;
pub mod clusters;
pub mod generated;

#[cfg(test)]
mod tests;
