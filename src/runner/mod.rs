//! The phase runner: for each build configuration, open the engine, build, then measure every
//! search configuration. The result file is rewritten after each finished step, so a failure
//! keeps everything measured before it.

pub mod build;
pub mod ground_truth;
pub mod mutate;
pub mod search;

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::dataset::Dataset;
use crate::engine::{CollectionSpec, ConnectOptions, EngineEntry, EngineError};
use crate::output::warnings::Warning;
use crate::params::{ParamMap, ParamMapExt};
use crate::results::sidecar::Sidecar;
use crate::results::{ConfigRun, ResultFileError, RunResult, RunState, Step, manifest};
use crate::runbook::Resolved;
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
    pub batch_mode: bool,
    /// Parent of the engines' working directories.
    pub work_dir: PathBuf,
    pub keep_work_dir: bool,
    pub quiet: bool,
    pub sample_interval: Duration,
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
}

impl RunError {
    /// Adapter for `map_err` that names the operation.
    pub fn engine(operation: &'static str) -> impl Fn(EngineError) -> RunError {
        move |source| RunError::Engine { operation, source }
    }
}

/// Runs the plan, updating `result` and saving it to `path` after every step.
pub fn run(
    plan: &BenchPlan,
    dataset: &Dataset,
    result: &mut RunResult,
    path: &Path,
    mut sidecar: Option<&mut Sidecar>,
) -> Result<(), RunError> {
    result.save(path)?;
    for (ci, build_params) in plan.builds.iter().enumerate() {
        result.configs.push(ConfigRun {
            build_params: build_params.clone(),
            steps: Vec::new(),
            error: None,
        });
        let outcome = run_config(
            plan,
            dataset,
            result,
            path,
            ci,
            build_params,
            sidecar.as_deref_mut(),
        );
        if let Err(e) = outcome {
            if let Some(c) = result.configs.last_mut() {
                c.error = Some(e.to_string());
            }
            return Err(e);
        }
    }
    Ok(())
}

fn run_config(
    plan: &BenchPlan,
    dataset: &Dataset,
    result: &mut RunResult,
    path: &Path,
    ci: usize,
    build_params: &ParamMap,
    mut sidecar: Option<&mut Sidecar>,
) -> Result<(), RunError> {
    let work_dir = plan
        .work_dir
        .join(format!("{}-{}-{ci}", plan.entry.name, std::process::id()));
    std::fs::create_dir_all(&work_dir)
        .map_err(|e| RunError::Setup(format!("cannot create {}: {e}", work_dir.display())))?;
    let _cleanup = WorkDirGuard {
        path: work_dir.clone(),
        keep: plan.keep_work_dir,
    };

    let mut engine = (plan.entry.open)(&plan.connect).map_err(RunError::engine("open"))?;
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
    };
    let mut live = LiveState::empty(dataset.train.len());
    let mut after = "build";
    for (si, step) in plan.steps.iter().enumerate() {
        let runbook_step = si + 1;
        match step {
            Resolved::Build { ids } => {
                if !plan.quiet {
                    eprintln!(
                        "[{}] build {} ({} vectors)",
                        plan.entry.name,
                        build_params.label(),
                        ids.len()
                    );
                }
                let build = build::run_build(engine.as_mut(), &spec, dataset, ids, plan)?;
                let rows: Vec<usize> = ids.iter().map(|id| *id as usize).collect();
                live.upsert(ids, &rows);
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
                if !plan.quiet {
                    eprintln!("[{}] {kind} {} points", plan.entry.name, ids.len());
                }
                let m = mutate::run_mutation(
                    engine.as_mut(),
                    dataset,
                    plan,
                    kind,
                    runbook_step,
                    write,
                    *mode,
                    *batch_size,
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
                if m.index.may_full_scan {
                    warn_full_scan(result, &m.index);
                }
                push_step(result, Step::Mutation(m));
                after = kind;
            }
            Resolved::Search { .. } => {
                let gt = plan
                    .truths
                    .get(si)
                    .and_then(|t| t.as_ref())
                    .ok_or_else(|| {
                        RunError::Setup(format!("no ground truth for runbook step {runbook_step}"))
                    })?;
                for params in &plan.searches {
                    engine
                        .set_search_params(params)
                        .map_err(RunError::engine("set search parameters"))?;
                    let ctx = StepContext {
                        config_index: ci,
                        step_index: result.configs.last().map_or(0, |c| c.steps.len()),
                        runbook_step,
                        after,
                    };
                    let step = search::run_search(
                        engine.as_ref(),
                        dataset,
                        plan,
                        params,
                        gt,
                        &live,
                        sidecar.as_deref_mut(),
                        &ctx,
                    )?;
                    if !plan.quiet {
                        eprintln!(
                            "[{}] search after {after} {}: recall {:.4}, {:.0} QPS, p99 {:.3} ms",
                            plan.entry.name,
                            params.label(),
                            step.quality.recall,
                            step.qps,
                            step.latency.p99_ms
                        );
                    }
                    check_search_warnings(result, &step, engine.in_process());
                    push_step(result, Step::Search(step));
                    result.save(path)?;
                }
            }
        }
        result.save(path)?;
    }
    result.engine.details = engine.describe();
    engine.close().map_err(RunError::engine("close"))?;
    Ok(())
}

fn check_search_warnings(
    result: &mut RunResult,
    step: &crate::results::SearchStep,
    in_process: bool,
) {
    let q = &step.quality;
    if q.queries_with_duplicates > 0 {
        push_warning(
            result,
            Warning::DuplicateIds {
                queries: q.queries_with_duplicates,
            },
        );
    }
    if q.queries_short > 0 {
        push_warning(
            result,
            Warning::ShortResults {
                queries: q.queries_short,
            },
        );
    }
    if step.stale_hits > 0 {
        push_warning(
            result,
            Warning::StaleHits {
                count: step.stale_hits,
            },
        );
    }
    if step.ghost_hits > 0 {
        push_warning(
            result,
            Warning::GhostHits {
                count: step.ghost_hits,
            },
        );
    }
    if step.mode == "single" && q.queries < 1000 {
        push_warning(
            result,
            Warning::FewQueries {
                queries: q.queries,
                percentile: "p99.9".into(),
            },
        );
    }
    // With a server engine the client only waits on the network; a busy client means the
    // harness itself may be limiting the measurement.
    if !in_process && step.resources.client.mean_cpu_percent > 90.0 {
        push_warning(
            result,
            Warning::ClientSaturated {
                cpu_percent: step.resources.client.mean_cpu_percent,
            },
        );
    }
}

fn warn_full_scan(result: &mut RunResult, index: &crate::engine::IndexReport) {
    let detail = index
        .details
        .get("full_scan_reason")
        .and_then(|v| v.as_str())
        .unwrap_or("the engine reported unindexed or small segments")
        .to_string();
    push_warning(result, Warning::PossibleFullScan { detail });
}

fn push_step(result: &mut RunResult, step: Step) {
    if let Some(c) = result.configs.last_mut() {
        c.steps.push(step);
    }
}

/// Adds a warning once (the same caveat from several steps is stated once).
fn push_warning(result: &mut RunResult, w: Warning) {
    if !result.warnings.contains(&w) {
        result.warnings.push(w);
    }
}

/// Marks the run finished (completed or failed) and stamps the end time.
pub fn finish(result: &mut RunResult, error: Option<String>) {
    result.status.state = if error.is_some() {
        RunState::Failed
    } else {
        RunState::Completed
    };
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

/// Removes an engine's working directory when the configuration ends, unless asked to keep it.
struct WorkDirGuard {
    path: PathBuf,
    keep: bool,
}

impl Drop for WorkDirGuard {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}
