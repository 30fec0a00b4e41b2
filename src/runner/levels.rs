//! The load levels of a search step (`--concurrency`, `--rate`, `--rate-sweep`): run with
//! the step's search parameters after its timed queries, each level's figures attached to it.

use std::path::PathBuf;

use crate::dataset::Dataset;
use crate::engine::VectorEngine;
use crate::results::load::LoadLevel;
use crate::results::warnings::Warning;
use crate::results::{RunResult, SearchStep};

use super::load::{self, RateSweep};
use super::warnings::push_warning;
use super::{BenchPlan, RunError, check_interrupt};

/// Runs the load levels of `plan.load` with the current search parameters.
pub(super) fn run_load(
    engine: &dyn VectorEngine,
    dataset: &Dataset,
    plan: &BenchPlan,
    step: &mut SearchStep,
    label: &str,
    result: &mut RunResult,
) -> Result<(), RunError> {
    let mut levels = fixed_levels(engine, dataset, plan)?;
    if plan.load.rate_sweep {
        levels.extend(sweep_rates(engine, dataset, plan, step)?);
    }
    for (i, level) in levels.iter_mut().enumerate() {
        if let Some(dir) = &plan.load.histogram_dir {
            let file = dir.join(format!("{}-{label}-{i}.hlog", plan.load.histogram_prefix));
            let file = PathBuf::from(file.to_string_lossy().replace([' ', '='], "_"));
            crate::results::histlog::write(
                &file,
                &format!("{}-{}", level.kind, level.concurrency),
                std::time::SystemTime::now(),
                &level.intervals,
            )?;
            level.histogram_log = Some(file.display().to_string());
        }
        warn_of_level(plan, level, result);
    }
    step.load = levels;
    Ok(())
}

/// The closed-loop levels (`--concurrency`), then the fixed rates (`--rate`).
fn fixed_levels(
    engine: &dyn VectorEngine,
    dataset: &Dataset,
    plan: &BenchPlan,
) -> Result<Vec<LoadLevel>, RunError> {
    let lp = &plan.load;
    let mut levels = Vec::new();
    for &c in &lp.concurrency {
        let level = load::closed_loop(
            engine,
            &dataset.test,
            plan.k,
            c,
            lp.duration,
            plan.sample_interval,
        )
        .map_err(RunError::engine("closed-loop search"))?;
        // A level cut short by Ctrl-C is not a measurement.
        check_interrupt()?;
        plan.observer().message(&format!(
            "[{}]   {c} client(s): {:.0} QPS, p50 {:.3} ms, p99 {:.3} ms",
            plan.entry.name, level.qps, level.latency.p50_ms, level.latency.p99_ms
        ));
        levels.push(level);
    }
    for &rate in &lp.rates {
        let level = load::open_loop(
            engine,
            &dataset.test,
            plan.k,
            rate,
            lp.duration,
            lp.workers,
            plan.sample_interval,
        )
        .map_err(RunError::engine("fixed-rate search"))?;
        check_interrupt()?;
        plan.observer().message(&format!(
            "[{}]   {rate:.0}/s target: {:.0}/s achieved, p99 {:.3} ms, {} dropped{}",
            plan.entry.name,
            level.qps,
            level.latency.p99_ms,
            level.dropped.unwrap_or(0),
            if level.saturated { " (SATURATED)" } else { "" }
        ));
        levels.push(level);
    }
    Ok(levels)
}

/// `--rate-sweep`: the highest rate within the SLO (set on `step`) and the levels tried.
fn sweep_rates(
    engine: &dyn VectorEngine,
    dataset: &Dataset,
    plan: &BenchPlan,
    step: &mut SearchStep,
) -> Result<Vec<LoadLevel>, RunError> {
    let lp = &plan.load;
    // Start from half the single-client throughput: well inside what the engine sustains.
    let start = (step.qps / 2.0).max(1.0);
    let sweep = RateSweep {
        start_rate: start,
        slo: lp.slo,
        step_duration: lp.duration,
        workers: lp.workers,
        sample_interval: plan.sample_interval,
    };
    let (best, sweep) = load::rate_sweep(engine, &dataset.test, plan.k, &sweep)
        .map_err(RunError::engine("rate sweep"))?;
    plan.observer().message(&match best {
        Some(r) => format!(
            "[{}]   highest rate with p99 <= {:?}: {r:.0}/s",
            plan.entry.name, lp.slo
        ),
        None => format!(
            "[{}]   no tested rate kept p99 <= {:?}",
            plan.entry.name, lp.slo
        ),
    });
    step.max_rate_within_slo = best;
    Ok(sweep)
}

/// The harness watches itself: a client near all-cores saturation, or an open loop that fell
/// behind its schedule, makes the level's latency partly the harness's.
fn warn_of_level(plan: &BenchPlan, level: &LoadLevel, result: &mut RunResult) {
    let lp = &plan.load;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    let cpu = level.resources.client.mean_cpu_percent;
    if !plan.entry.embedded() && cpu > 90.0 * cores {
        push_warning(result, Warning::ClientSaturated { cpu_percent: cpu });
    }
    if let (Some(dropped @ 1..), Some(intended)) = (level.dropped, level.intended) {
        push_warning(
            result,
            Warning::DroppedQueries {
                rate: level.target_rate.unwrap_or(0.0),
                intended,
                dropped,
                // The level gives up `duration` after its last scheduled send (load.rs).
                waited_s: lp.duration.as_secs_f64(),
            },
        );
    }
    if level.saturated {
        push_warning(
            result,
            Warning::Note {
                detail: format!(
                    "open loop at {:.0}/s was saturated: achieved {:.0}/s, max send lag {:.1} ms",
                    level.target_rate.unwrap_or(0.0),
                    level.qps,
                    level.max_send_lag_ms.unwrap_or(0.0)
                ),
            },
        );
    }
}
