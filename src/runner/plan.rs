//! What a run is asked to do: the engine and its parameters, the resolved runbook and its
//! truths, and the optional filter and load plans, as the command line resolved them.

use std::path::PathBuf;
use std::time::Duration;

use crate::dataset::Dataset;
use crate::engine::{ConnectOptions, EngineEntry};
use crate::filter::FilterSetup;
use crate::groundtruth::difficulty::Difficulty;
use crate::params::ParamMap;
use crate::results::run_files::RunFiles;
use crate::runbook::Resolved;
use crate::types::{Progress, ProgressHandle, Silent};

use super::ground_truth::StepTruths;

/// What to run.
pub struct BenchPlan {
    pub entry: &'static EngineEntry,
    pub connect: ConnectOptions,
    /// Build configurations (one engine instance each).
    pub builds: Vec<ParamMap>,
    /// Search configurations measured at every search step.
    pub searches: Vec<ParamMap>,
    /// The resolved runbook: what every step does.
    pub steps: Vec<Resolved>,
    /// Ground truth of each search step (same indexing as `steps`).
    pub truths: StepTruths,
    pub k: usize,
    /// True neighbours regarded as relevant (`r`; defaults to k).
    pub relevant: usize,
    pub warmup: usize,
    /// Timed trials of every search measurement (`--repeat`); 1: one trial.
    pub repeat: usize,
    /// `--repeat-build`: each trial rebuilds the index (the whole configuration is run
    /// `repeat` times; the first run is recorded, the others give its trials).
    pub repeat_build: bool,
    pub batch_mode: bool,
    /// Parent of the engines' working directories.
    pub work_dir: PathBuf,
    pub keep_work_dir: bool,
    /// No progress and no messages, whatever `progress` is.
    pub quiet: bool,
    /// Where phases report progress bars and one-line messages (the terminal, in the CLI).
    pub progress: ProgressHandle,
    pub sample_interval: Duration,
    /// Load levels to run after each search measurement.
    pub load: LoadPlan,
    /// How long a sampled write is polled for read-after-write visibility.
    pub visibility_timeout: Duration,
    /// `--filter`: attributes, the levels measured at every search step, and their truths.
    pub filters: Option<FilterPlan>,
    /// Each query's RC and LID at K against the whole dataset: recorded in the sidecar, and
    /// the LID splits every search step's recall and latency into difficulty bands.
    pub difficulty: Option<Difficulty>,
}

/// Filtered search: every search step measures each level (each search-parameter set at
/// each level), against the truth of that level at that step.
#[derive(Debug, Clone)]
pub struct FilterPlan {
    pub setup: FilterSetup,
    /// `truths[level][step]`, indexed like [`BenchPlan::steps`].
    pub truths: Vec<StepTruths>,
    /// `selectivity[level][step]`: the mean fraction of the live points that pass a query's
    /// predicate at a search step (0 elsewhere).
    pub selectivity: Vec<Vec<f64>>,
}

impl FilterPlan {
    /// Search measurements per search step and search-parameter set.
    pub fn levels(&self) -> usize {
        self.setup.levels.len()
    }
}

/// Concurrency sweeps, fixed-rate runs and rate sweeps (`--concurrency`, `--rate`,
/// `--rate-sweep`).
#[derive(Debug, Clone, Default)]
pub struct LoadPlan {
    /// Closed-loop client counts.
    pub concurrency: Vec<usize>,
    /// Open-loop target rates (queries per second).
    pub rates: Vec<f64>,
    /// Search for the highest rate within `slo`.
    pub rate_sweep: bool,
    pub slo: Duration,
    /// Time per level.
    pub duration: Duration,
    /// Open-loop senders.
    pub workers: usize,
    /// Where to write interval histogram logs (one file per level), if anywhere.
    pub histogram_dir: Option<PathBuf>,
    /// Prefix of those files.
    pub histogram_prefix: String,
}

impl BenchPlan {
    /// Measurements per search step and search-parameter set: one per filter level, or one
    /// unfiltered.
    pub fn filter_levels(&self) -> usize {
        self.filters.as_ref().map_or(1, FilterPlan::levels)
    }

    /// The observer phases report to: silent when `quiet`.
    pub fn observer(&self) -> &dyn Progress {
        if self.quiet { &Silent } else { &*self.progress }
    }
}

impl LoadPlan {
    pub fn is_empty(&self) -> bool {
        self.concurrency.is_empty() && self.rates.is_empty() && !self.rate_sweep
    }
}

/// What every step of a configuration reads: the plan, the dataset it runs on, and the run's
/// files (none for a `--repeat-build` trial, which saves nothing).
#[derive(Clone, Copy)]
pub struct RunScope<'a> {
    pub plan: &'a BenchPlan,
    pub dataset: &'a Dataset,
    pub files: Option<&'a RunFiles>,
}
