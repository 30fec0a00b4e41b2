//! The phase runner: for each build configuration, open the engine, build, then measure every
//! search configuration. The result file is rewritten after each finished step, so a failure
//! keeps everything measured before it.

pub mod build;
pub mod filtered_truth;
pub mod ground_truth;
mod levels;
pub mod load;
pub mod mutate;
pub mod search;
pub mod stream;
pub mod verify;
pub mod warnings;

use levels::run_load;
use warnings::{check_search_warnings, push_warning, warn_full_scan};

use std::path::PathBuf;
use std::time::Duration;

use crate::dataset::Dataset;
use crate::engine::{CollectionSpec, ConnectOptions, EngineEntry, EngineError, VectorEngine};
use crate::filter::FilterSetup;
use crate::groundtruth::difficulty::Difficulty;
use crate::params::{ParamMap, ParamMapExt};
use crate::results::run_files::RunFiles;
use crate::results::warnings::Warning;
use crate::results::{
    ConfigRun, Repeats, ResultFileError, RunResult, RunState, SearchStep, Step, Trial, manifest,
};
use crate::runbook::Resolved;
use crate::types::{Progress, ProgressHandle, Silent};
use ground_truth::StepTruths;
use mutate::Write;
use search::{LiveState, StepContext};

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

/// Stops the run when Ctrl-C or SIGTERM asked for it (see [`crate::interrupt`]).
pub(crate) fn check_interrupt() -> Result<(), RunError> {
    if crate::interrupt::requested() {
        Err(RunError::Interrupted)
    } else {
        Ok(())
    }
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
        let outcome = run_config(
            plan,
            dataset,
            result,
            Some(files),
            (ci, stream_set),
            build_params,
            done,
        )
        .and_then(|()| {
            if plan.repeat_build && plan.repeat > 1 {
                rebuild_trials(plan, dataset, result, (ci, stream_set), build_params)?;
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
    (ci, stream_set): (usize, Option<usize>),
    build_params: &ParamMap,
) -> Result<(), RunError> {
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
        run_config(
            plan,
            dataset,
            &mut scratch,
            None,
            (ci, stream_set),
            build_params,
            0,
        )?;
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

/// Runs one build configuration through the runbook. The first `done` records are already
/// in the result (a resumed run): their build and write steps are replayed to bring the
/// engine's collection to the state they left it in, without being measured again, and their
/// searches are skipped. Without `files` (a `--repeat-build` trial), nothing is saved.
#[allow(clippy::too_many_arguments)]
fn run_config(
    plan: &BenchPlan,
    dataset: &Dataset,
    result: &mut RunResult,
    files: Option<&RunFiles>,
    (ci, stream_set): (usize, Option<usize>),
    build_params: &ParamMap,
    done: usize,
) -> Result<(), RunError> {
    let work_dir = plan
        .work_dir
        .join(format!("{}-{}-{ci}", plan.entry.name, std::process::id()));
    std::fs::create_dir_all(&work_dir)
        .map_err(|e| RunError::Setup(format!("cannot create {}: {e}", work_dir.display())))?;
    let _cleanup = WorkDirGuard {
        path: work_dir.clone(),
        keep: plan.keep_work_dir,
        _forced_exit: (!plan.keep_work_dir).then(|| crate::interrupt::scratch_dir(&work_dir)),
    };

    let mut engine =
        CloseOnInterrupt((plan.entry.open)(&plan.connect).map_err(RunError::engine("open"))?);
    result.engine.version = engine.version();
    result.engine.in_process = engine.in_process();
    // Reject bad search parameters before spending time on a build.
    for params in &plan.searches {
        engine
            .set_search_params(params)
            .map_err(RunError::engine("check search parameters"))?;
    }

    let spec = CollectionSpec {
        name: collection_name(&dataset.name),
        dim: dataset.train.dim(),
        distance: dataset.distance,
        expected_points: plan
            .steps
            .iter()
            .map(|s| match s {
                Resolved::Build { ids } | Resolved::Insert { ids, .. } => ids.len(),
                _ => 0,
            })
            .sum(),
        build_params: build_params.clone(),
        work_dir,
        attributes: plan.filters.as_ref().map(|f| f.setup.attributes.clone()),
        element_type: dataset.element_type,
    };
    // Reject a bad value anywhere in a build sweep before the first build: a typo in the last
    // configuration must not cost the user the hours of the ones before it.
    if ci == 0 {
        for params in &plan.builds {
            let candidate = CollectionSpec {
                build_params: params.clone(),
                ..spec.clone()
            };
            engine
                .check_build_params(&candidate)
                .map_err(RunError::engine("check build parameters"))?;
        }
        // A stream step needs writes beside searches: an engine that cannot do both at once
        // says so here, before any build, instead of serialising them silently.
        for (si, step) in plan.steps.iter().enumerate() {
            if let Resolved::Stream(_) = step {
                stream::writer_of(engine.as_ref(), si + 1)?;
                if plan.filters.is_some() {
                    return Err(RunError::Setup(format!(
                        "runbook step {} is a stream step, which does not search with \
                         --filter yet; drop --filter or the stream step",
                        si + 1
                    )));
                }
            }
        }
        // An engine that cannot express a predicate refuses it here, before any build.
        if let Some(f) = &plan.filters {
            for level in &f.setup.levels {
                if let Some(p) = level.predicates.first() {
                    engine
                        .check_filter(&f.setup.attributes, p)
                        .map_err(RunError::engine("check filter"))?;
                }
            }
        }
    }
    let mut live = LiveState::empty(dataset.train.len());
    let mut after = "build";
    let mut changed = true;
    // Records this configuration has produced so far, counting the kept ones.
    let mut record = 0usize;
    for (si, step) in plan.steps.iter().enumerate() {
        check_interrupt()?;
        let runbook_step = si + 1;
        let replay = record < done;
        match step {
            Resolved::Build { ids } => {
                plan.observer().message(&format!(
                    "[{}] {} {} ({} vectors)",
                    plan.entry.name,
                    if replay {
                        "rebuild (resuming)"
                    } else {
                        "build"
                    },
                    build_params.label(),
                    ids.len()
                ));
                let build = build::run_build(engine.as_mut(), &spec, dataset, ids, plan)?;
                let stored = dataset.element_type.stored_as(engine.stored_element_type());
                if let Some(types) = &mut result.element_type {
                    types.record_engine(&stored);
                }
                let rows: Vec<usize> = ids.iter().map(|id| *id as usize).collect();
                live.upsert(ids, &rows);
                record += 1;
                changed = true;
                if replay {
                    continue;
                }
                if build.index.may_full_scan {
                    warn_full_scan(result, &build.index);
                }
                push_step(result, Step::Build(build));
                result.engine.details = engine.describe();
            }
            Resolved::Insert {
                ids,
                mode,
                batch_size,
            }
            | Resolved::Update {
                ids,
                mode,
                batch_size,
                ..
            }
            | Resolved::Delete {
                ids,
                mode,
                batch_size,
            } => {
                let kind = step.kind();
                let insert_rows: Vec<usize>;
                let write = match step {
                    Resolved::Insert { .. } => {
                        insert_rows = ids.iter().map(|id| *id as usize).collect();
                        Write::Upsert {
                            ids,
                            rows: &insert_rows,
                        }
                    }
                    Resolved::Update { rows, .. } => Write::Upsert { ids, rows },
                    _ => Write::Delete { ids },
                };
                // The live count after the step, for bytes per live vector.
                let live_after = match &write {
                    Write::Upsert { .. } if kind == "insert" => live.live + ids.len(),
                    Write::Upsert { .. } => live.live,
                    Write::Delete { .. } => live.live.saturating_sub(ids.len()),
                };
                plan.observer().message(&format!(
                    "[{}] {kind} {} points",
                    plan.entry.name,
                    ids.len()
                ));
                let m = mutate::run_mutation(
                    engine.as_mut(),
                    dataset,
                    plan,
                    kind,
                    runbook_step,
                    write,
                    *mode,
                    *batch_size,
                    &live,
                    live_after,
                )?;
                match step {
                    Resolved::Insert { ids, .. } => {
                        let rows: Vec<usize> = ids.iter().map(|id| *id as usize).collect();
                        live.upsert(ids, &rows);
                    }
                    Resolved::Update { ids, rows, .. } => live.upsert(ids, rows),
                    _ => live.delete(ids),
                }
                record += 1;
                after = kind;
                changed = false;
                if replay {
                    continue;
                }
                if m.index.may_full_scan {
                    warn_full_scan(result, &m.index);
                }
                if m.stale_hits > 0 {
                    push_warning(
                        result,
                        Warning::StaleHits {
                            count: m.stale_hits,
                        },
                    );
                }
                // The read-after-write probes have already searched the changed index, so the
                // next search is not a cold start (`changed` is off): only one after a build is.
                push_step(result, Step::Mutation(m));
            }
            Resolved::Stream(stream) => {
                let replay = record < done;
                record += 1;
                after = "stream";
                changed = false;
                if replay {
                    stream::replay(engine.as_mut(), dataset, stream)?;
                    for op in &stream.ops {
                        match op.row {
                            Some(row) => live.upsert(&[op.id], &[row]),
                            None => live.delete(&[op.id]),
                        }
                    }
                } else {
                    // One search-parameter set per stream: the configuration's own when the
                    // runbook is swept (see `configurations`), else the only one.
                    let params = plan
                        .searches
                        .get(stream_set.unwrap_or(0))
                        .cloned()
                        .unwrap_or_default();
                    engine
                        .set_search_params(&params)
                        .map_err(RunError::engine("set search parameters"))?;
                    plan.observer().message(&format!(
                        "[{}] stream: {} writes{} with {} searchers",
                        plan.entry.name,
                        stream.ops.len(),
                        stream
                            .rate
                            .map(|r| format!(" at {r:.0}/s"))
                            .unwrap_or_else(|| " as fast as possible".into()),
                        stream.searchers
                    ));
                    let mut step = stream::run_stream(
                        engine.as_ref(),
                        dataset,
                        plan.k,
                        &params,
                        stream,
                        runbook_step,
                        plan.visibility_timeout,
                        plan.sample_interval,
                    )?;
                    for op in &stream.ops {
                        match op.row {
                            Some(row) => live.upsert(&[op.id], &[row]),
                            None => live.delete(&[op.id]),
                        }
                    }
                    step.live_points = live.live;
                    plan.observer().message(&format!(
                        "[{}] stream: recall {:.4}, {} stale hits, {:.0} QPS, p99 {:.3} ms; \
                         writes {:.0} points/s, p99 {:.3} ms; visible after p50 {:.3} ms, \
                         gone after p50 {:.3} ms ({} of {} samples seen)",
                        plan.entry.name,
                        step.recall,
                        step.stale_hits,
                        step.qps,
                        step.latency.p99_ms,
                        step.write_points_per_s,
                        step.write_latency.p99_ms,
                        step.freshness.put_delay.p50_ms,
                        step.freshness.delete_delay.p50_ms,
                        step.freshness.puts_seen + step.freshness.deletes_seen,
                        step.freshness.samples
                    ));
                    if step.stale_hits > 0 {
                        push_warning(
                            result,
                            Warning::StaleHits {
                                count: step.stale_hits,
                            },
                        );
                    }
                    push_step(result, Step::Stream(step));
                }
            }
            Resolved::Search { .. } => {
                // Unfiltered: one measurement per parameter set; filtered: one per level and
                // parameter set, each against the truth of its level.
                let levels: Vec<Option<usize>> = match &plan.filters {
                    Some(f) => (0..f.levels()).map(Some).collect(),
                    None => vec![None],
                };
                for level in levels {
                    let truths = match (level, &plan.filters) {
                        (Some(l), Some(f)) => &f.truths[l],
                        _ => &plan.truths,
                    };
                    let gt = truths.get(si).and_then(|t| t.as_ref()).ok_or_else(|| {
                        RunError::Setup(format!("no ground truth for runbook step {runbook_step}"))
                    })?;
                    let active = match (level, &plan.filters) {
                        (Some(l), Some(f)) => Some(search::ActiveFilter {
                            index: l,
                            level: &f.setup.levels[l],
                            attributes: &f.setup.attributes,
                            selectivity: f.selectivity[l][si],
                        }),
                        _ => None,
                    };
                    for params in &plan.searches {
                        record += 1;
                        if record <= done {
                            changed = false;
                            continue;
                        }
                        engine
                            .set_search_params(params)
                            .map_err(RunError::engine("set search parameters"))?;
                        let ctx = StepContext {
                            config_index: ci,
                            step_index: result.configs.last().map_or(0, |c| c.steps.len()),
                            runbook_step,
                            after,
                            first_after_change: changed,
                        };
                        changed = false;
                        let mut step = search::run_search(
                            engine.as_ref(),
                            dataset,
                            plan,
                            params,
                            gt,
                            &live,
                            active.as_ref(),
                            files,
                            &ctx,
                        )?;
                        let filtered = step
                            .filter
                            .as_ref()
                            .map(|f| {
                                format!(
                                    " [{}: {} violations, {} short]",
                                    f.name, f.violations, f.short_results
                                )
                            })
                            .unwrap_or_default();
                        let recall = match step.quality.recall {
                            r if r.is_nan() => "– (nothing to find)".to_string(),
                            r => format!("{r:.4}"),
                        };
                        plan.observer().message(&format!(
                            "[{}] search after {after} {}{filtered}: recall {recall}, {:.0} QPS, p99 {:.3} ms",
                            plan.entry.name,
                            params.label(),
                            step.qps,
                            step.latency.p99_ms
                        ));
                        if !plan.load.is_empty() {
                            let label = format!("c{ci}-s{runbook_step}-{}", params.label());
                            run_load(engine.as_ref(), dataset, plan, &mut step, &label, result)?;
                        }
                        check_search_warnings(result, &step, engine.in_process());
                        push_step(result, Step::Search(step));
                        if let Some(files) = files {
                            files.save(result)?;
                        }
                    }
                }
            }
        }
        if let Some(files) = files {
            files.save(result)?;
        }
    }
    result.engine.details = engine.describe();
    engine.close().map_err(RunError::engine("close"))?;
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

/// An error that arrives after Ctrl-C asked the run to stop is that stop: a signal can cut an
/// engine call short (a client's read that is not restarted), and the run then ends
/// `interrupted` and resumable, not `failed` with the engine blamed.
fn stopped_by_signal(e: RunError) -> RunError {
    if crate::interrupt::requested() {
        RunError::Interrupted
    } else {
        e
    }
}

/// A server engine whose run Ctrl-C stopped drops its collection on the way out, so that the
/// next run on the same dataset does not find it in its way (`already exists`); `--resume`
/// rebuilds it in any case. An in-process engine's files go with the work directory.
struct CloseOnInterrupt(Box<dyn VectorEngine>);

impl std::ops::Deref for CloseOnInterrupt {
    type Target = Box<dyn VectorEngine>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for CloseOnInterrupt {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Drop for CloseOnInterrupt {
    fn drop(&mut self) {
        // Closing twice is harmless: a closed engine has no collection left to drop.
        if crate::interrupt::requested() && !self.0.in_process() {
            let _ = self.0.close();
        }
    }
}

/// Removes an engine's working directory when the configuration ends, unless asked to keep it
/// (and on a forced exit, which skips this: see [`crate::interrupt::scratch_dir`]).
struct WorkDirGuard {
    path: PathBuf,
    keep: bool,
    _forced_exit: Option<crate::interrupt::ScratchDir>,
}

impl Drop for WorkDirGuard {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}
