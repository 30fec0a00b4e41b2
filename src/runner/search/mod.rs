//! The query phase: warm-up, then the timed loop, then scoring against ground truth.
//!
//! The timed loop does nothing but call the engine, read the clock and copy the answer into
//! preallocated buffers. Histograms, distances and metrics are computed after it ends.

use std::time::Duration;

mod score;
pub(crate) mod timed;

use score::{
    Scored, answer_distances, check_filter, count_truth_mismatches, difficulty_bands, ghost_hits,
    returned_of, score_queries, stale_hits,
};
use timed::{Answers, repeat_trials, timed_queries};

use super::{BenchPlan, RunError, RunScope, end_task};
use crate::dataset::Dataset;
use crate::engine::{PointId, VectorEngine};
use crate::filter::{Attributes, FilterLevel};
use crate::groundtruth::GroundTruth;
use crate::metrics::latency::LatencySummary;
use crate::metrics::quality::summarize;
use crate::params::ParamMap;
use crate::resources::{Sampler, Watch};
use crate::results::run_files::RunFiles;
use crate::results::sidecar::QueryRecord;
use crate::results::{SearchStep, WarmupSettle};

/// What the engine should hold at a step: for each id, the train row of its current vector
/// (`None` when not live), and for updated ids the row of the vector they had before.
pub struct LiveState {
    pub row_of: Vec<Option<usize>>,
    pub previous_row: Vec<Option<usize>>,
    pub live: usize,
}

impl LiveState {
    pub fn empty(n: usize) -> LiveState {
        LiveState {
            row_of: vec![None; n],
            previous_row: vec![None; n],
            live: 0,
        }
    }

    fn get(&self, id: PointId) -> Option<usize> {
        self.row_of.get(id as usize).copied().flatten()
    }

    pub fn contains(&self, id: PointId) -> bool {
        self.get(id).is_some()
    }

    /// Records that `ids[i]` now holds train row `rows[i]`.
    pub fn upsert(&mut self, ids: &[PointId], rows: &[usize]) {
        for (id, row) in ids.iter().zip(rows) {
            let slot = &mut self.row_of[*id as usize];
            match slot.replace(*row) {
                Some(old) if old != *row => self.previous_row[*id as usize] = Some(old),
                Some(_) => {}
                None => self.live += 1,
            }
        }
    }

    pub fn delete(&mut self, ids: &[PointId]) {
        for id in ids {
            if self.row_of[*id as usize].take().is_some() {
                self.live -= 1;
            }
        }
    }
}

/// Where a search step sits in the run.
pub struct StepContext<'a> {
    pub config_index: usize,
    /// Index in the configuration's list of measured steps (sidecar key).
    pub step_index: usize,
    /// 1-based position in the runbook.
    pub runbook_step: usize,
    /// Kind of the step it follows.
    pub after: &'a str,
    /// First search since the index was built (no search has touched it yet): its first call
    /// is the cold start. After a mutation the read-after-write probes have searched already.
    pub first_after_change: bool,
}

/// The filter level a search measurement runs with.
pub struct ActiveFilter<'a> {
    /// Index of the level in the run's filter settings.
    pub index: usize,
    pub level: &'a FilterLevel,
    pub attributes: &'a Attributes,
    /// Mean fraction of live points passing a predicate at this step.
    pub selectivity: f64,
}

/// What one search measurement runs with: its parameters, the truth it is scored against,
/// what the engine holds, its filter level, and where it sits in the run.
pub struct SearchTarget<'a> {
    pub params: &'a ParamMap,
    /// The exact top-k of the live set (of the live points that pass each query's predicate,
    /// under a filter).
    pub gt: &'a GroundTruth,
    pub live: &'a LiveState,
    pub filter: Option<&'a ActiveFilter<'a>>,
    pub position: &'a StepContext<'a>,
}

/// Measures one search configuration and scores it against `target.gt`.
pub fn run_search(
    engine: &dyn VectorEngine,
    scope: RunScope<'_>,
    target: &SearchTarget<'_>,
) -> Result<SearchStep, RunError> {
    let (plan, dataset) = (scope.plan, scope.dataset);
    let sampler = Sampler::start(
        Watch::with_engine(engine.server_pid()),
        plan.sample_interval,
    );
    let mut warmup_latencies = Vec::with_capacity(plan.warmup);
    let predicates = target.filter.map(|f| f.level.predicates.as_slice());
    let timed = timed_queries(
        engine,
        plan,
        dataset,
        plan.warmup,
        predicates,
        &mut warmup_latencies,
    );
    let resources = sampler.stop();
    let (answers, wall) = timed?;

    let mut distances = answer_distances(dataset, target.live, &answers);
    // Under a filter, an id that fails its query's predicate is never relevant, however
    // close: its distance is NaN like that of a point that is not live.
    let filter_outcome = match target.filter {
        Some(f) => Some(check_filter(f, &answers, &mut distances, target.gt)?),
        None => None,
    };
    let keep_positions = scope.files.is_some_and(RunFiles::has_sidecar);
    let scored = score_queries(plan, target.gt, &answers, &distances, keep_positions);
    let truth_mismatches = engine
        .answers_are_exact()
        .then(|| count_truth_mismatches(&answers, &distances, target.gt));
    let end_task = dataset.judgments.as_ref().map(|judgments| {
        let k = answers.k;
        end_task::score(judgments, k, target.live, target.gt, |q| {
            let range = q * k..q * k + returned_of(&answers, q);
            (&answers.ids[range.clone()], &distances[range])
        })
    });
    if let Some(files) = scope.files {
        write_sidecar(files, plan, target.position, &answers, &distances, &scored)?;
    }
    let mut step = SearchStep {
        quality: summarize(&scored.per_query, plan.k, plan.relevant),
        difficulty_bands: difficulty_bands(plan, &answers, &scored.per_query),
        stale_hits: stale_hits(&answers, target.live),
        ghost_hits: ghost_hits(dataset, plan.relevant, target, &answers, &distances),
        truth_mismatches,
        resources,
        filter: filter_outcome,
        end_task,
        ..timing(plan, dataset, target, &answers, wall, &warmup_latencies)
    };
    // With --repeat-build the trials are whole rebuilt runs (runner::run), not loops here.
    if plan.repeat > 1 && !plan.repeat_build {
        step.repeats = Some(repeat_trials(engine, dataset, plan, predicates, &step)?);
    }
    Ok(step)
}

/// One sidecar line per query: its answer, distances, quality and difficulty.
fn write_sidecar(
    files: &RunFiles,
    plan: &BenchPlan,
    position: &StepContext<'_>,
    answers: &Answers,
    distances: &[f32],
    scored: &Scored,
) -> Result<(), RunError> {
    let k = answers.k;
    files.with_sidecar(|sidecar| {
        for q in 0..scored.per_query.len() {
            let lat = if plan.batch_mode {
                None
            } else {
                Some(answers.latencies[q].as_nanos() as f64 / 1000.0)
            };
            let returned = returned_of(answers, q);
            let quality = &scored.per_query[q];
            let difficulty = plan.difficulty.as_ref().and_then(|d| d.queries.get(q));
            sidecar.write(&QueryRecord {
                config: position.config_index,
                step: position.step_index,
                query: q,
                latency_us: lat,
                ids: &answers.ids[q * k..q * k + returned],
                scores: &answers.scores[q * k..q * k + returned],
                distances: &distances[q * k..q * k + returned],
                recall: quality.defined.then_some(quality.recall),
                ndcg: quality.defined.then_some(quality.ndcg),
                rr: quality.defined.then_some(quality.reciprocal_rank),
                relevant: &scored.relevant_at[q],
                rc: difficulty.map(|d| d.rc),
                lid: difficulty.map(|d| d.lid),
            })?;
        }
        Ok(())
    })?;
    Ok(())
}

/// The step's record with its timing figures (throughput, latency, cold start, settling) and
/// where it sits; the quality figures are left at their defaults for the caller to fill.
fn timing(
    plan: &BenchPlan,
    dataset: &Dataset,
    target: &SearchTarget<'_>,
    answers: &Answers,
    wall: Duration,
    warmup_latencies: &[Duration],
) -> SearchStep {
    let nq = dataset.test.len();
    let measured = Measurement {
        queries: nq,
        batch: plan.batch_mode,
        warmup_queries: if plan.batch_mode {
            plan.warmup.min(nq * 4)
        } else {
            plan.warmup
        },
        runbook_step: target.position.runbook_step,
        after: target.position.after,
        params: target.params,
        live_points: target.live.live,
        sidecar_step: target.position.step_index,
        first_after_change: target.position.first_after_change,
    };
    timed_step(&measured, answers, wall, warmup_latencies)
}

/// What a timed search measurement was, whatever it searched with.
pub(crate) struct Measurement<'a> {
    pub queries: usize,
    /// One batch call (else one call per query).
    pub batch: bool,
    pub warmup_queries: usize,
    pub runbook_step: usize,
    pub after: &'a str,
    pub params: &'a ParamMap,
    pub live_points: usize,
    pub sidecar_step: usize,
    /// The first search since the index changed: its first call is the cold start.
    pub first_after_change: bool,
}

/// A search step's record from its timed loop: throughput, latency, cold start, settling and
/// where it sits; the quality figures are left at their defaults for the caller to fill.
pub(crate) fn timed_step(
    m: &Measurement<'_>,
    answers: &Answers,
    wall: Duration,
    warmup_latencies: &[Duration],
) -> SearchStep {
    let latency = LatencySummary::of(answers.latencies.iter().copied());
    // Cold start and settling, over the whole sequence of calls (warm-up then timed).
    let (cold_start_ms, warmup_settle) = if m.batch {
        (None, None)
    } else {
        let sequence: Vec<Duration> = warmup_latencies
            .iter()
            .chain(&answers.latencies)
            .copied()
            .collect();
        (
            m.first_after_change
                .then(|| sequence.first().map(|d| d.as_secs_f64() * 1000.0))
                .flatten(),
            warmup_settle(&sequence),
        )
    };
    SearchStep {
        runbook_step: m.runbook_step,
        after: m.after.to_string(),
        search_params: m.params.clone(),
        mode: if m.batch { "batch" } else { "single" }.into(),
        warmup_queries: m.warmup_queries,
        quality: Default::default(),
        qps: per_second(m.queries, wall),
        qps_from_mean_latency: if m.batch || latency.mean_ms <= 0.0 {
            per_second(m.queries, wall)
        } else {
            1000.0 / latency.mean_ms
        },
        latency,
        wall_s: wall.as_secs_f64(),
        live_points: m.live_points,
        stale_hits: 0,
        ghost_hits: 0,
        truth_mismatches: None,
        resources: Default::default(),
        sidecar_step: m.sidecar_step,
        cold_start_ms,
        warmup_settle,
        load: Vec::new(),
        max_rate_within_slo: None,
        repeats: None,
        filter: None,
        difficulty_bands: None,
        end_task: None,
    }
}

/// Queries per second of `count` queries answered in `wall` (0 for no time).
fn per_second(count: usize, wall: Duration) -> f64 {
    let s = wall.as_secs_f64();
    if s > 0.0 { count as f64 / s } else { 0.0 }
}

/// Queries per window of the rolling median.
const SETTLE_WINDOW: usize = 20;

/// The first point from which every window's median latency stays within 10 % of the steady
/// state (the median of the second half of the sequence).
pub fn warmup_settle(sequence: &[Duration]) -> Option<WarmupSettle> {
    if sequence.len() < 4 * SETTLE_WINDOW {
        return None;
    }
    let median = |xs: &[Duration]| {
        let mut v: Vec<Duration> = xs.to_vec();
        v.sort_unstable();
        v[v.len() / 2].as_secs_f64()
    };
    let steady = median(&sequence[sequence.len() / 2..]);
    let medians: Vec<f64> = sequence.chunks_exact(SETTLE_WINDOW).map(median).collect();
    let within = |m: &f64| steady > 0.0 && ((m - steady) / steady).abs() <= 0.10;
    // The last window that is out of band; settling starts after it.
    let first_good = match medians.iter().rposition(|m| !within(m)) {
        None => 0,
        Some(last_bad) => last_bad + 1,
    };
    let settled = first_good < medians.len();
    let queries = (first_good * SETTLE_WINDOW).min(sequence.len());
    Some(WarmupSettle {
        queries,
        ms: sequence[..queries]
            .iter()
            .map(|d| d.as_secs_f64() * 1000.0)
            .sum(),
        settled,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settle_finds_the_end_of_a_slow_start() {
        // 100 slow queries (10 ms), then 300 fast ones (1 ms).
        let mut seq = vec![Duration::from_millis(10); 100];
        seq.extend(vec![Duration::from_millis(1); 300]);
        let s = warmup_settle(&seq).unwrap();
        assert!(s.settled);
        assert_eq!(s.queries, 100);
        assert!((s.ms - 1000.0).abs() < 1e-6);
        // Flat from the start: settled at once.
        let flat = vec![Duration::from_millis(2); 200];
        assert_eq!(warmup_settle(&flat).unwrap().queries, 0);
        assert!(warmup_settle(&flat[..10]).is_none());
    }
}
