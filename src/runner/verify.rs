//! `ragdbeval verify`: recomputes a result's quality metrics and latency percentiles from its
//! per-query sidecar and the dataset, so anyone with the dataset can re-check a published
//! result.
//!
//! The sidecar's returned ids are rescored from scratch: the ground truth of each runbook
//! step is recomputed (or read from the cache, which is itself checked), each returned id's
//! distance is recomputed from the vector it held at that step (the sidecar's own distances
//! and the engine's scores are not trusted), and the step's means and percentiles are
//! recomputed the way the runner computes them. A stored figure that differs is reported.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::filtered_truth::{FilteredTruths, filtered_truths};
use super::ground_truth::{self, StepTruths};
use super::search::LiveState;
use crate::dataset::Dataset;
use crate::filter::{Attributes, CompiledPredicate, FilterLevel, FilterSetup};
use crate::groundtruth::GroundTruth;
use crate::metrics::latency::LatencySummary;
use crate::metrics::quality::{QualitySummary, QueryInput, score_query, summarize};
use crate::results::{ConfigRun, RunResult, SearchStep, Step};
use crate::runbook::{Resolved, Runbook};
use crate::types::{PointId, Progress};

/// Relative tolerance of a recomputed mean: the same sums in another order.
const TOLERANCE: f64 = 1e-9;

/// What `verify` found for one search step.
#[derive(Debug, Clone)]
pub struct StepCheck {
    pub config: usize,
    pub runbook_step: usize,
    pub search_params: String,
    pub queries: usize,
    /// Figures that differ: (name, stored, recomputed).
    pub mismatches: Vec<(String, f64, f64)>,
}

/// Why a result cannot be verified at all.
#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    #[error("{0}")]
    Invalid(String),
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
}

#[derive(Deserialize)]
struct Line {
    config: usize,
    step: usize,
    query: usize,
    latency_us: Option<f64>,
    ids: Vec<PointId>,
}

/// The ground-truth depth that scores `result` as its run did: any depth covering every
/// step's `k` and `relevant` gives the same figures.
pub fn truth_depth(result: &RunResult) -> usize {
    // The run's own depth when recorded: the ground-truth cache is then shared with it.
    if let Some(k) = result.manifest.settings.ground_truth_k {
        return k.max(1);
    }
    result
        .configs
        .iter()
        .flat_map(|c| c.searches())
        .map(|s| s.quality.k.max(s.quality.relevant))
        .max()
        .unwrap_or(1)
        .max(1)
}

/// What `verify` found.
#[derive(Debug, Clone)]
pub struct Verification {
    /// One check per search step.
    pub steps: Vec<StepCheck>,
    /// Sidecar lines that could not be read, left out: a step they belonged to shows as
    /// lacking queries.
    pub unreadable_lines: usize,
}

/// Checks every search step of `result` (whose sidecar is at `sidecar`) against `dataset`.
pub fn verify(
    result: &RunResult,
    sidecar: &Path,
    dataset: &Dataset,
    cache_dir: &Path,
    progress: &dyn Progress,
) -> Result<Verification, VerifyError> {
    let steps = recorded_steps(result, dataset)?;
    // The depth the runner's step truths use (bench caps them at 1000).
    let depth = truth_depth(result).min(1000);
    let cache = ground_truth::cache_path(cache_dir, dataset, &steps, depth);
    let truths = ground_truth::step_truths(dataset, &steps, depth, Some(&cache), progress)
        .map_err(|e| invalid(format!("computing the ground truth: {e}")))?;
    let filtered = filtered_truth(result, dataset, &steps, depth, cache_dir, progress)?;

    let (lines, unreadable_lines) = read_lines(sidecar)?;
    let reference = Reference {
        dataset,
        steps: &steps,
        truths: &truths,
        filtered: filtered.as_ref(),
        lines: &lines,
    };
    let mut checks = Vec::new();
    for (ci, config) in result.configs.iter().enumerate() {
        reference.check_config(ci, config, &mut checks)?;
    }
    Ok(Verification {
        steps: checks,
        unreadable_lines,
    })
}

fn invalid(message: String) -> VerifyError {
    VerifyError::Invalid(message)
}

/// The runbook the result's settings record, resolved on the dataset.
fn recorded_steps(result: &RunResult, dataset: &Dataset) -> Result<Vec<Resolved>, VerifyError> {
    let steps = result
        .manifest
        .settings
        .runbook_steps
        .clone()
        .ok_or_else(|| invalid("the result's settings do not record its runbook".into()))?;
    let runbook = Runbook {
        name: String::new(),
        steps,
    };
    runbook
        .resolve_on(&dataset.train)
        .map_err(|e| invalid(format!("the recorded runbook: {e}")))
}

/// A filtered run: the same attributes and predicates made again from its settings, and
/// the truth of each level.
fn filtered_truth(
    result: &RunResult,
    dataset: &Dataset,
    steps: &[Resolved],
    depth: usize,
    cache_dir: &Path,
    progress: &dyn Progress,
) -> Result<Option<(FilterSetup, FilteredTruths)>, VerifyError> {
    Ok(match &result.manifest.settings.filter {
        Some(spec) => {
            let setup = spec
                .setup(&dataset.train, &dataset.test, dataset.attributes.as_ref())
                .map_err(|e| invalid(format!("the recorded filter: {e}")))?;
            let t = filtered_truths(dataset, steps, &setup, depth, Some(cache_dir), progress)
                .map_err(|e| invalid(format!("computing the filtered ground truth: {e}")))?;
            Some((setup, t))
        }
        None => None,
    })
}

/// A filter level with the attributes its predicates read.
type LevelFilter<'a> = (&'a FilterLevel, &'a Attributes);

/// What every search step of a result is checked against: the dataset, the recorded runbook
/// with its truths (and its filter levels' truths), and the sidecar's lines.
struct Reference<'a> {
    dataset: &'a Dataset,
    steps: &'a [Resolved],
    truths: &'a StepTruths,
    filtered: Option<&'a (FilterSetup, FilteredTruths)>,
    lines: &'a HashMap<(usize, usize), Vec<Line>>,
}

impl Reference<'_> {
    /// Replays configuration `ci`'s runbook, checking each of its search records where the
    /// runbook places it.
    fn check_config(
        &self,
        ci: usize,
        config: &ConfigRun,
        checks: &mut Vec<StepCheck>,
    ) -> Result<(), VerifyError> {
        let dataset = self.dataset;
        let mut live = LiveState::empty(dataset.train.len());
        let searches: Vec<&SearchStep> = config.searches().collect();
        for (si, step) in self.steps.iter().enumerate() {
            match step {
                Resolved::Build { ids } | Resolved::Insert { ids, .. } => {
                    let rows: Vec<usize> = ids.iter().map(|id| *id as usize).collect();
                    live.upsert(ids, &rows);
                }
                Resolved::Update { ids, rows, .. } => live.upsert(ids, rows),
                Resolved::Delete { ids, .. } => live.delete(ids),
                Resolved::Stream(stream) => {
                    for op in &stream.ops {
                        match op.row {
                            Some(row) => live.upsert(&[op.id], &[row]),
                            None => live.delete(&[op.id]),
                        }
                    }
                }
                Resolved::Search { .. } => {
                    let Some(truth) = self.truths.get(si).and_then(|t| t.as_ref()) else {
                        continue;
                    };
                    for s in searches.iter().filter(|s| s.runbook_step == si + 1) {
                        let (truth, filter) = self.truth_of(si, s, truth)?;
                        let rows = self.lines.get(&(ci, s.sidecar_step)).ok_or_else(|| {
                            invalid(format!(
                                "the sidecar has no lines for configuration {} search step {}",
                                ci + 1,
                                s.sidecar_step
                            ))
                        })?;
                        checks.push(check_step(ci, s, rows, truth, &live, filter, dataset)?);
                    }
                }
            }
        }
        let recorded = config.steps.iter().filter(|s| matches!(s, Step::Search(_)));
        if recorded.count() != checks.iter().filter(|c| c.config == ci + 1).count() {
            return Err(invalid(format!(
                "configuration {} has search steps the recorded runbook does not place",
                ci + 1
            )));
        }
        Ok(())
    }

    /// The truth search record `s` at runbook step `si + 1` is scored against (`unfiltered`,
    /// or its filter level's), with the level.
    fn truth_of<'t>(
        &'t self,
        si: usize,
        s: &SearchStep,
        unfiltered: &'t GroundTruth,
    ) -> Result<(&'t GroundTruth, Option<LevelFilter<'t>>), VerifyError> {
        match (&s.filter, self.filtered) {
            (None, _) => Ok((unfiltered, None)),
            (Some(f), Some((setup, t))) => {
                let level = setup
                    .levels
                    .get(f.level)
                    .ok_or_else(|| invalid(format!("filter level {} is not recorded", f.level)))?;
                let truth = t
                    .truths
                    .get(f.level)
                    .and_then(|l| l.get(si))
                    .and_then(|t| t.as_ref())
                    .ok_or_else(|| invalid("no filtered truth".into()))?;
                Ok((truth, Some((level, &*setup.attributes))))
            }
            (Some(_), None) => Err(invalid(
                "a search step is filtered but the settings record no filter".into(),
            )),
        }
    }
}

/// The sidecar's lines by (config, step), each in query order, and how many lines could not
/// be read.
type SidecarLines = (HashMap<(usize, usize), Vec<Line>>, usize);

fn read_lines(path: &Path) -> Result<SidecarLines, VerifyError> {
    let read = |e| VerifyError::Read {
        path: path.to_path_buf(),
        source: e,
    };
    let file = crate::text::open(path).map_err(read)?;
    let mut out: HashMap<(usize, usize), Vec<Line>> = HashMap::new();
    let mut unreadable = 0;
    for line in file.split(b'\n') {
        let line = line.map_err(read)?;
        match serde_json::from_slice::<Line>(&line) {
            Ok(parsed) => out
                .entry((parsed.config, parsed.step))
                .or_default()
                .push(parsed),
            Err(_) => unreadable += 1,
        }
    }
    for rows in out.values_mut() {
        rows.sort_by_key(|r| r.query);
    }
    Ok((out, unreadable))
}

/// Rescores one search record from its sidecar lines and lists the stored figures that differ.
fn check_step(
    ci: usize,
    step: &SearchStep,
    rows: &[Line],
    truth: &crate::groundtruth::GroundTruth,
    live: &LiveState,
    filter: Option<LevelFilter<'_>>,
    dataset: &Dataset,
) -> Result<StepCheck, VerifyError> {
    let stored = &step.quality;
    let k = stored.k;
    let mut mismatches = Vec::new();
    let queries_ok = rows.len() == stored.queries
        && rows.len() == dataset.test.len()
        && rows.iter().enumerate().all(|(i, r)| r.query == i);
    if !queries_ok {
        mismatches.push((
            "queries".to_string(),
            stored.queries as f64,
            rows.len() as f64,
        ));
    }
    // Under a filter, an id that fails its query's predicate is never relevant (as in the
    // runner) and is a violation.
    let compiled = compile_filter(filter)?;
    let mut violations = 0usize;
    let scored_rows: Vec<&Line> = rows
        .iter()
        .filter(|r| r.query < dataset.test.len())
        .collect();
    let distances: Vec<Vec<f32>> = scored_rows
        .iter()
        .map(|r| {
            let query = dataset.test.row(r.query);
            let passes = |id: PointId| {
                compiled
                    .as_ref()
                    .and_then(|c| c.get(r.query))
                    .is_none_or(|c| c.passes(id))
            };
            violations += r.ids.iter().filter(|id| !passes(**id)).count();
            r.ids
                .iter()
                .map(
                    |id| match live.row_of.get(*id as usize).copied().flatten() {
                        Some(row) if passes(*id) => {
                            dataset.distance.between(query, dataset.train.row(row))
                        }
                        _ => f32::NAN,
                    },
                )
                .collect()
        })
        .collect();
    let per_query: Vec<_> = scored_rows
        .iter()
        .zip(&distances)
        .map(|(r, distances)| {
            score_query(
                &QueryInput {
                    gt_ids: truth.ids_of(r.query),
                    gt_distances: truth.distances_of(r.query),
                    returned_ids: &r.ids,
                    returned_distances: distances,
                },
                k,
                stored.relevant,
            )
        })
        .collect();
    let again = summarize(&per_query, k, stored.relevant);
    compare_quality(stored, &again, &mut mismatches);
    if let Some(f) = &step.filter
        && f.violations != violations
    {
        mismatches.push((
            "filter violations".into(),
            f.violations as f64,
            violations as f64,
        ));
    }
    check_latency(step, rows, &mut mismatches);
    let answers = EndTaskAnswers {
        rows: &scored_rows,
        distances: &distances,
        truth,
        live,
    };
    check_end_task(step, dataset, &answers, &mut mismatches);
    Ok(StepCheck {
        config: ci + 1,
        runbook_step: step.runbook_step,
        search_params: crate::params::ParamMapExt::label(&step.search_params),
        queries: rows.len(),
        mismatches,
    })
}

/// A step's answers as the sidecar holds them, with their recomputed distances.
struct EndTaskAnswers<'a> {
    rows: &'a [&'a Line],
    distances: &'a [Vec<f32>],
    truth: &'a GroundTruth,
    live: &'a LiveState,
}

/// Rescores the retrieval task against the dataset's judgments, when the step recorded it:
/// a figure recorded without judgments to check it against is a mismatch, as is one missing.
fn check_end_task(
    step: &SearchStep,
    dataset: &Dataset,
    answers: &EndTaskAnswers<'_>,
    mismatches: &mut Vec<(String, f64, f64)>,
) {
    let again =
        dataset.judgments.as_ref().map(|judgments| {
            let position: BTreeMap<usize, usize> = answers
                .rows
                .iter()
                .enumerate()
                .map(|(i, r)| (r.query, i))
                .collect();
            let k = step.quality.k;
            crate::runner::end_task::score(judgments, k, answers.live, answers.truth, |q| {
                match position.get(&q) {
                    Some(&i) => (&answers.rows[i].ids[..], &answers.distances[i][..]),
                    None => (&[][..], &[][..]),
                }
            })
        });
    match (&step.end_task, &again) {
        (Some(stored), Some(again)) => {
            for (name, value) in &stored.metrics {
                let recomputed = again.metrics.get(name).copied().unwrap_or(f64::NAN);
                if differs(*value, recomputed) {
                    mismatches.push((format!("end task {name}"), *value, recomputed));
                }
            }
            for (name, value) in &stored.exact {
                let recomputed = again.exact.get(name).copied().unwrap_or(f64::NAN);
                if differs(*value, recomputed) {
                    mismatches.push((format!("end task exact {name}"), *value, recomputed));
                }
            }
        }
        (Some(stored), None) => {
            mismatches.push(("end task queries".into(), stored.queries as f64, f64::NAN));
        }
        (None, Some(again)) => {
            mismatches.push(("end task queries".into(), f64::NAN, again.queries as f64));
        }
        (None, None) => {}
    }
}

/// Each query's predicate of a filter level, compiled against the attributes.
fn compile_filter<'a>(
    filter: Option<LevelFilter<'a>>,
) -> Result<Option<Vec<CompiledPredicate<'a>>>, VerifyError> {
    Ok(match filter {
        Some((level, attributes)) => Some(
            level
                .predicates
                .iter()
                .map(|p| p.compile(attributes))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| VerifyError::Invalid(format!("the recorded filter: {e}")))?,
        ),
        None => None,
    })
}

/// Latency: the sidecar keeps each query's latency at nanosecond resolution.
fn check_latency(step: &SearchStep, rows: &[Line], mismatches: &mut Vec<(String, f64, f64)>) {
    let latencies: Option<Vec<f64>> = rows.iter().map(|r| r.latency_us).collect();
    if let Some(latencies) = latencies {
        let again = LatencySummary::of(
            latencies
                .iter()
                .map(|us| std::time::Duration::from_nanos((us * 1000.0).round().max(0.0) as u64)),
        );
        compare_latency(&step.latency, &again, mismatches);
    }
}

/// Records each (figure, stored, recomputed) whose two values differ.
fn push_differences(pairs: &[(&str, f64, f64)], out: &mut Vec<(String, f64, f64)>) {
    for &(name, stored, again) in pairs {
        if differs(stored, again) {
            out.push((name.to_string(), stored, again));
        }
    }
}

/// Two figures differ beyond rounding; an undefined figure (NaN) equals only another.
fn differs(a: f64, b: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() != b.is_nan();
    }
    (a - b).abs() > TOLERANCE * a.abs().max(b.abs()).max(1e-12)
}

fn compare_quality(
    stored: &QualitySummary,
    again: &QualitySummary,
    out: &mut Vec<(String, f64, f64)>,
) {
    let pairs = [
        ("recall", stored.recall, again.recall),
        (
            "recall_distance",
            stored.recall_distance,
            again.recall_distance,
        ),
        ("precision", stored.precision, again.precision),
        ("f1", stored.f1, again.f1),
        ("mrr", stored.mrr, again.mrr),
        ("ndcg", stored.ndcg, again.ndcg),
        ("map", stored.map, again.map),
        ("hit_rate", stored.hit_rate, again.hit_rate),
        ("recall_min", stored.recall_min, again.recall_min),
        (
            "queries_with_duplicates",
            stored.queries_with_duplicates as f64,
            again.queries_with_duplicates as f64,
        ),
        (
            "queries_short",
            stored.queries_short as f64,
            again.queries_short as f64,
        ),
    ];
    push_differences(&pairs, out);
    // Figures a file from before they existed does not hold are not compared; +inf `rel`
    // equals +inf.
    let optional = [
        (
            "recall_epsilon",
            stored.recall_epsilon,
            again.recall_epsilon,
        ),
        (
            "recall_large_epsilon",
            stored.recall_large_epsilon,
            again.recall_large_epsilon,
        ),
        (
            "relative_distance_error",
            stored.relative_distance_error,
            again.relative_distance_error,
        ),
    ];
    let held: Vec<(&str, f64, f64)> = optional
        .iter()
        .filter_map(|&(name, stored, again)| Some((name, stored?, again?)))
        .filter(|(_, stored, again)| stored != again)
        .collect();
    push_differences(&held, out);
}

fn compare_latency(
    stored: &LatencySummary,
    again: &LatencySummary,
    out: &mut Vec<(String, f64, f64)>,
) {
    let pairs = [
        ("latency count", stored.count as f64, again.count as f64),
        ("latency mean_ms", stored.mean_ms, again.mean_ms),
        ("latency p50_ms", stored.p50_ms, again.p50_ms),
        ("latency p90_ms", stored.p90_ms, again.p90_ms),
        ("latency p95_ms", stored.p95_ms, again.p95_ms),
        ("latency p99_ms", stored.p99_ms, again.p99_ms),
        ("latency p999_ms", stored.p999_ms, again.p999_ms),
        ("latency max_ms", stored.max_ms, again.max_ms),
        ("latency min_ms", stored.min_ms, again.min_ms),
    ];
    push_differences(&pairs, out);
}
