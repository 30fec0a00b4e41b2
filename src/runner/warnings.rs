//! Warnings the runner derives from what it measured: suspicious search results, possible
//! full scans, resource figures that cannot be true. Each is stated once per run.

use crate::engine::IndexReport;
use crate::params::ParamMapExt;
use crate::resources::{MachineLimits, PhaseResources, check};
use crate::results::warnings::Warning;
use crate::results::{RunResult, SearchStep, Step};

/// Checks every phase's figures of a run on this machine and words each impossible one as a
/// warning (the run keeps its figures, flagged, rather than failing after the work is done).
pub fn resource_warnings(result: &RunResult) -> Vec<Warning> {
    let limits = MachineLimits::this_machine();
    let mut out = Vec::new();
    let mut visit = |phase: String, r: &PhaseResources| {
        let sides =
            std::iter::once(("client", &r.client)).chain(r.engine.as_ref().map(|e| ("engine", e)));
        for (side, stats) in sides {
            if let Err(e) = check(stats, &limits) {
                out.push(Warning::ImplausibleResources {
                    phase: phase.clone(),
                    side: side.to_string(),
                    detail: e.to_string(),
                });
            }
        }
    };
    for config in &result.configs {
        let label = config.build_params.label();
        for step in &config.steps {
            match step {
                Step::Build(b) => visit(format!("build {label}"), &b.resources),
                Step::Mutation(m) => visit(
                    format!("{}:{} {label}", m.runbook_step, m.kind),
                    &m.resources,
                ),
                Step::Stream(t) => {
                    visit(format!("{}:stream {label}", t.runbook_step), &t.resources)
                }
                Step::Search(s) => {
                    let at = format!(
                        "{}:search {label} {}",
                        s.runbook_step,
                        s.search_params.label()
                    );
                    visit(at.clone(), &s.resources);
                    for level in &s.load {
                        visit(
                            format!("{at} load {}-{}", level.kind, level.concurrency),
                            &level.resources,
                        );
                    }
                }
            }
        }
    }
    out
}

/// Coefficient of variation over `--repeat` trials above which a figure is called noisy.
pub const NOISY_CV: f64 = 0.10;

/// A NOISY warning for each `--repeat` figure of `step` whose trials vary by more than
/// [`NOISY_CV`].
pub(super) fn check_repeat_warnings(result: &mut RunResult, step: &SearchStep) {
    if let Some(repeats) = &step.repeats {
        for f in &repeats.summary {
            if let Some(cv) = f.cv
                && cv > NOISY_CV
            {
                push_warning(
                    result,
                    Warning::NoisyMeasurement {
                        runbook_step: step.runbook_step,
                        search_params: step.search_params.label(),
                        figure: f.figure.clone(),
                        cv_percent: cv * 100.0,
                        trials: repeats.trials.len(),
                    },
                );
            }
        }
    }
}

/// The warnings a search measurement raises, in the order they are listed.
pub(super) fn check_search_warnings(result: &mut RunResult, step: &SearchStep, in_process: bool) {
    warn_of_result_lists(result, step);
    warn_of_filter_violations(result, step);
    warn_of_wrong_answers(result, step);
    check_repeat_warnings(result, step);
    warn_of_harness(result, step, in_process);
}

/// Queries with nothing to find, duplicate ids, and short result lists.
fn warn_of_result_lists(result: &mut RunResult, step: &SearchStep) {
    let q = &step.quality;
    if q.queries_without_truth > 0 {
        push_warning(
            result,
            Warning::NothingToFind {
                runbook_step: step.runbook_step,
                search_params: step.search_params.label(),
                queries: q.queries_without_truth,
                of: q.queries,
            },
        );
    }
    if q.queries_with_duplicates > 0 {
        push_warning(
            result,
            Warning::DuplicateIds {
                queries: q.queries_with_duplicates,
            },
        );
    }
    // Under a filter, fewer than K results are only short when more points passed.
    let short = step
        .filter
        .as_ref()
        .map_or(q.queries_short, |f| f.short_results);
    if short > 0 {
        push_warning(result, Warning::ShortResults { queries: short });
    }
}

/// Ids that fail their query's filter: a warning, and the result marked invalid.
fn warn_of_filter_violations(result: &mut RunResult, step: &SearchStep) {
    if let Some(f) = &step.filter
        && f.violations > 0
    {
        push_warning(
            result,
            Warning::FilterViolations {
                count: f.violations,
                queries: f.violating_queries,
                level: f.name.clone(),
                runbook_step: step.runbook_step,
            },
        );
        let why = format!(
            "the engine returned {} id(s) that fail their query's filter ({}, runbook step {})",
            f.violations, f.name, step.runbook_step
        );
        if !result.status.invalid.contains(&why) {
            result.status.invalid.push(why);
        }
    }
}

/// Stale hits, answers that differ from an exact engine's truth, and ghost hits.
fn warn_of_wrong_answers(result: &mut RunResult, step: &SearchStep) {
    if step.stale_hits > 0 {
        push_warning(
            result,
            Warning::StaleHits {
                count: step.stale_hits,
            },
        );
    }
    if let Some(queries) = step.truth_mismatches
        && queries > 0
    {
        // Whole-dataset steps use the file's neighbours when it has them; every other truth
        // is ragdbeval's own.
        let detail = if result.dataset.ground_truth_source == "file" && step.after == "build" {
            "the truth is the dataset file's stored neighbours (ties or float rounding where \
             the file was made); `ragdbeval dataset gt` recomputes it exactly"
        } else {
            "the truth was computed by ragdbeval: this is a bug, please report it"
        };
        push_warning(
            result,
            Warning::TruthMismatch {
                queries,
                runbook_step: step.runbook_step,
                detail: detail.to_string(),
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
}

/// Too few queries for the high percentiles, and a client that may limit the measurement.
fn warn_of_harness(result: &mut RunResult, step: &SearchStep, in_process: bool) {
    let q = &step.quality;
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

pub(super) fn warn_full_scan(result: &mut RunResult, index: &IndexReport) {
    let detail = index
        .details
        .get("full_scan_reason")
        .and_then(|v| v.as_str())
        .unwrap_or("the engine reported unindexed or small segments")
        .to_string();
    push_warning(result, Warning::PossibleFullScan { detail });
}

/// Adds a warning once (the same caveat from several steps is stated once).
pub(super) fn push_warning(result: &mut RunResult, w: Warning) {
    if !result.warnings.contains(&w) {
        result.warnings.push(w);
    }
}
