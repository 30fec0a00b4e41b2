//! The phase runner: for each build configuration, open the engine, build, then measure every
//! search configuration. The result file is rewritten after each finished step, so a failure
//! keeps everything measured before it.

pub mod build;
mod cleanup;
mod config;
pub mod end_task;
pub mod filtered_truth;
pub mod ground_truth;
mod levels;
pub mod load;
pub mod mutate;
mod plan;
pub mod retrieval;
pub mod search;
mod steps;
pub mod stream;
pub mod verify;
pub mod warnings;

pub(crate) use cleanup::check_interrupt;
pub use plan::{BenchPlan, FilterPlan, LoadPlan, RunScope};

use cleanup::stopped_by_signal;
use config::{ConfigSlot, run_config};
use warnings::push_warning;

use crate::dataset::Dataset;
use crate::engine::EngineError;
use crate::params::{ParamMap, ParamMapExt};
use crate::results::run_files::RunFiles;
use crate::results::{
    ConfigRun, Repeats, ResultFileError, RunResult, RunState, SearchStep, Step, Trial, manifest,
};
use crate::runbook::Resolved;

/// Why a run stopped.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{operation}: {source}")]
    Engine {
        operation: &'static str,
        source: EngineError,
    },
    #[error(transparent)]
    Results(#[from] ResultFileError),
    #[error("{0}")]
    Setup(String),
    /// Ctrl-C or SIGTERM: the steps that finished are kept.
    #[error("interrupted")]
    Interrupted,
}

impl RunError {
    /// Adapter for `map_err` that names the operation.
    pub fn engine(operation: &'static str) -> impl Fn(EngineError) -> RunError {
        move |source| RunError::Engine { operation, source }
    }
}

/// Runs the plan, updating `result` and saving it through `files` after every step.
pub fn run(
    plan: &BenchPlan,
    dataset: &Dataset,
    result: &mut RunResult,
    files: &RunFiles,
) -> Result<(), RunError> {
    files.save(result)?;
    // Records a configuration produces: one per build or write step, one per search-parameter
    // set per search step.
    let records: usize = plan
        .steps
        .iter()
        .map(|s| match s {
            Resolved::Search { .. } => plan.searches.len() * plan.filter_levels(),
            _ => 1,
        })
        .sum();
    let configs = configurations(plan);
    if configs.iter().any(|(_, s)| s.is_some()) {
        plan.observer().message(&format!(
            "[{}] the runbook's stream steps change the collection while it is searched: each \
             of the {} search-parameter sets gets its own build and runbook",
            plan.entry.name,
            plan.searches.len()
        ));
    }
    for (ci, (build_params, stream_set)) in configs.into_iter().enumerate() {
        // A resumed run (`bench --resume`) arrives with the configurations of its earlier
        // attempts: finished ones are kept as they are, the unfinished one continues after
        // its last recorded step.
        let done = match result.configs.get_mut(ci) {
            Some(c) if c.steps.len() >= records => continue,
            Some(c) => {
                c.error = None;
                c.steps.len()
            }
            None => {
                result.configs.push(ConfigRun {
                    build_params: build_params.clone(),
                    stream_search_params: stream_set.map(|s| plan.searches[s].clone()),
                    steps: Vec::new(),
                    error: None,
                });
                0
            }
        };
        let scope = RunScope {
            plan,
            dataset,
            files: Some(files),
        };
        let slot = ConfigSlot {
            index: ci,
            stream_set,
            build_params,
            done,
        };
        let outcome = run_config(scope, result, slot)
            .and_then(|()| {
                if plan.repeat_build && plan.repeat > 1 {
                    rebuild_trials(plan, dataset, result, slot)?;
                    files.save(result)?;
                }
                Ok(())
            })
            .map_err(stopped_by_signal);
        if let Err(e) = outcome {
            if let Some(c) = result.configs.last_mut() {
                c.error = Some(crate::secret::redact(&e.to_string()));
            }
            return Err(e);
        }
    }
    Ok(())
}

/// The configurations to run, in order: each set of build parameters, and, when the runbook
/// has stream steps and several search-parameter sets, each of those sets for its streams
/// (`Some(index)`). A stream changes the collection while it is searched, so it cannot be
/// measured again with other parameters on the same state: each set gets its own build and
/// runbook. Without stream steps, or with one set: one configuration per build (`None`).
pub fn configurations(plan: &BenchPlan) -> Vec<(&ParamMap, Option<usize>)> {
    let streams = plan.steps.iter().any(|s| matches!(s, Resolved::Stream(_)));
    let sets: Vec<Option<usize>> = if streams && plan.searches.len() > 1 {
        (0..plan.searches.len()).map(Some).collect()
    } else {
        vec![None]
    };
    plan.builds
        .iter()
        .flat_map(|b| sets.iter().map(move |s| (b, *s)))
        .collect()
}

/// `--repeat-build`: runs configuration `ci` again `plan.repeat − 1` times from scratch, each
/// into a scratch result that is neither saved nor given the sidecar, and attaches the
/// trials to the recorded run: per search record its QPS and percentiles (in the order the
/// records were made), per build its build time.
fn rebuild_trials(
    plan: &BenchPlan,
    dataset: &Dataset,
    result: &mut RunResult,
    slot: ConfigSlot<'_>,
) -> Result<(), RunError> {
    let (ci, stream_set, build_params) = (slot.index, slot.stream_set, slot.build_params);
    let mut runs: Vec<ConfigRun> = Vec::with_capacity(plan.repeat - 1);
    for trial in 1..plan.repeat {
        plan.observer().message(&format!(
            "[{}] rebuild trial {} of {} ({})",
            plan.entry.name,
            trial + 1,
            plan.repeat,
            build_params.label()
        ));
        let mut scratch = result.clone();
        scratch.configs = vec![ConfigRun {
            build_params: build_params.clone(),
            stream_search_params: stream_set.map(|s| plan.searches[s].clone()),
            steps: Vec::new(),
            error: None,
        }];
        let scope = RunScope {
            plan,
            dataset,
            files: None,
        };
        run_config(scope, &mut scratch, ConfigSlot { done: 0, ..slot })?;
        runs.extend(scratch.configs.pop());
    }
    let Some(recorded) = result.configs.get_mut(ci) else {
        return Ok(());
    };
    for (j, step) in recorded.steps.iter_mut().enumerate() {
        match step {
            Step::Search(s) => {
                let mut trials = vec![Trial::of(s)];
                trials.extend(runs.iter().filter_map(|r| match r.steps.get(j) {
                    Some(Step::Search(t)) => Some(Trial::of(t)),
                    _ => None,
                }));
                s.repeats = Some(Repeats::from_trials(trials));
            }
            Step::Build(b) => {
                b.rebuild_s = std::iter::once(b.total_s)
                    .chain(runs.iter().filter_map(|r| match r.steps.get(j) {
                        Some(Step::Build(t)) => Some(t.total_s),
                        _ => None,
                    }))
                    .collect();
            }
            Step::Mutation(_) | Step::Stream(_) => {}
        }
    }
    let searches: Vec<SearchStep> = recorded.searches().cloned().collect();
    for s in &searches {
        warnings::check_repeat_warnings(result, s);
    }
    Ok(())
}

/// Recall/QPS curves per runbook step, across all configurations.
pub fn compute_curves(result: &mut RunResult) {
    use crate::metrics::pareto::{Curve, CurvePoint};
    // One curve per runbook step and filter level: (step, after, level index and name).
    type CurveKey = (usize, String, Option<(usize, String)>);
    let level_of = |s: &SearchStep| s.filter.as_ref().map(|f| (f.level, f.name.clone()));
    let mut steps: Vec<CurveKey> = Vec::new();
    for c in &result.configs {
        for s in c.searches() {
            let level = level_of(s);
            if !steps
                .iter()
                .any(|(n, _, l)| *n == s.runbook_step && *l == level)
            {
                steps.push((s.runbook_step, s.after.clone(), level));
            }
        }
    }
    result.curves = steps
        .into_iter()
        .map(|(n, after, level)| {
            let points: Vec<CurvePoint> = result
                .configs
                .iter()
                .flat_map(|c| {
                    let level = level.clone();
                    // A step with nothing to find has no recall: no point on the curve.
                    c.searches()
                        .filter(move |s| s.runbook_step == n && level_of(s) == level)
                        .filter(|s| !s.quality.recall.is_nan())
                        .map(move |s| CurvePoint {
                            recall: s.quality.recall,
                            qps: s.qps,
                            p99_ms: s.latency.p99_ms,
                            label: format!(
                                "{} | {}",
                                c.build_params.label(),
                                s.search_params.label()
                            ),
                        })
                })
                .collect();
            crate::results::StepCurve {
                runbook_step: n,
                after,
                filter: level.map(|(_, name)| name),
                curve: Curve::from_points(&points),
            }
        })
        .collect();
}

fn push_step(result: &mut RunResult, step: Step) {
    if let Some(c) = result.configs.last_mut() {
        c.steps.push(step);
    }
}

/// Marks the run finished (completed, failed or interrupted) and stamps the end time.
pub fn finish(result: &mut RunResult, outcome: Result<(), &RunError>) {
    compute_curves(result);
    for w in warnings::resource_warnings(result) {
        push_warning(result, w);
    }
    let (state, error) = match outcome {
        Ok(()) => (RunState::Completed, None),
        Err(RunError::Interrupted) => (RunState::Interrupted, None),
        Err(e) => (
            RunState::Failed,
            Some(crate::secret::redact(&e.to_string())),
        ),
    };
    result.status.state = state;
    result.status.error = error;
    result.manifest.finished_at = Some(manifest::now());
}

/// Collection names every engine accepts: lowercase letters, digits and underscores.
pub fn collection_name(dataset: &str) -> String {
    let clean: String = dataset
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("ragdbeval_{clean}")
}
