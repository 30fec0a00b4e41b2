//! The query phase: warm-up, then the timed loop, then scoring against ground truth.
//!
//! The timed loop does nothing but call the engine, read the clock and copy the answer into
//! preallocated buffers. Histograms, distances and metrics are computed after it ends.

use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::{BenchPlan, RunError, RunScope};
use crate::dataset::Dataset;
use crate::engine::{Neighbor, PointId, VectorEngine};
use crate::filter::{Attributes, CompiledPredicate, FilterLevel, Predicate};
use crate::groundtruth::GroundTruth;
use crate::metrics::bands::{DifficultyBands, lid_terciles};
use crate::metrics::latency::LatencySummary;
use crate::metrics::quality::{
    DISTANCE_EPSILON, QueryInput, QueryQuality, score_query_marking, summarize,
};
use crate::params::ParamMap;
use crate::resources::{Sampler, Watch};
use crate::results::run_files::RunFiles;
use crate::results::sidecar::QueryRecord;
use crate::results::{FilterOutcome, Repeats, SearchStep, Trial, WarmupSettle};
use crate::types::{Progress, ProgressUnit};

/// Raw answers of a timed query loop, `queries × k`, padded with `PointId::MAX` / NaN.
pub struct Answers {
    pub k: usize,
    pub ids: Vec<PointId>,
    pub scores: Vec<f32>,
    pub latencies: Vec<Duration>,
}

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

fn copy_answer(out: &[Neighbor], ids: &mut [PointId], scores: &mut [f32]) {
    for (slot, nb) in out.iter().take(ids.len()).enumerate() {
        ids[slot] = nb.id;
        scores[slot] = nb.score;
    }
}

/// Runs warm-up and the timed loop, one call per query. Warm-up calls are timed too (into
/// `warmup_latencies`, never into the results) to report cold start and settling.
fn timed_single(
    engine: &dyn VectorEngine,
    dataset: &Dataset,
    k: usize,
    warmup: usize,
    filters: Option<&[Predicate]>,
    progress: &dyn Progress,
    warmup_latencies: &mut Vec<Duration>,
) -> Result<(Answers, Duration), RunError> {
    let nq = dataset.test.len();
    let mut out: Vec<Neighbor> = Vec::with_capacity(k * 2);
    // One call, filtered or not: the branch is outside the timed call.
    let call = |q: usize, out: &mut Vec<Neighbor>| match filters {
        Some(f) => engine.search_filtered(dataset.test.row(q), k, &f[q], out),
        None => engine.search(dataset.test.row(q), k, out),
    };
    for i in 0..warmup {
        let t = Instant::now();
        call(i % nq, &mut out).map_err(RunError::engine("warm-up search"))?;
        warmup_latencies.push(t.elapsed());
    }
    let mut ids = vec![PointId::MAX; nq * k];
    let mut scores = vec![f32::NAN; nq * k];
    let mut latencies = vec![Duration::ZERO; nq];
    let bar = progress.task("queries", Some(nq as u64), ProgressUnit::Items);
    let loop_start = Instant::now();
    for qi in 0..nq {
        let t = Instant::now();
        call(qi, &mut out).map_err(RunError::engine("search"))?;
        latencies[qi] = t.elapsed();
        copy_answer(
            &out,
            &mut ids[qi * k..(qi + 1) * k],
            &mut scores[qi * k..(qi + 1) * k],
        );
        if qi % 256 == 255 {
            bar.set(qi as u64 + 1);
            super::check_interrupt()?;
        }
    }
    let wall = loop_start.elapsed();
    drop(bar);
    Ok((
        Answers {
            k,
            ids,
            scores,
            latencies,
        },
        wall,
    ))
}

/// One batch call for all queries; its duration is the only latency sample. A warm-up batch
/// of `warmup` queries (cycling over the query set) runs first, as the single mode's warm-up
/// calls do, so caches and lazily built structures are not charged to the timed call.
fn timed_batch(
    engine: &dyn VectorEngine,
    dataset: &Dataset,
    k: usize,
    warmup: usize,
    filters: Option<&[Predicate]>,
) -> Result<(Answers, Duration), RunError> {
    let nq = dataset.test.len();
    let dim = dataset.test.dim();
    let call = |queries: &[f32], predicates: Option<&[Predicate]>| match predicates {
        Some(p) => engine.batch_search_filtered(queries, dim, k, p),
        None => engine.batch_search(queries, dim, k),
    };
    if warmup > 0 {
        let rows: Vec<usize> = (0..warmup.min(nq * 4)).map(|i| i % nq).collect();
        let mut batch = Vec::with_capacity(rows.len() * dim);
        for q in &rows {
            batch.extend_from_slice(dataset.test.row(*q));
        }
        let predicates: Option<Vec<Predicate>> =
            filters.map(|f| rows.iter().map(|q| f[*q].clone()).collect());
        call(&batch, predicates.as_deref()).map_err(RunError::engine("warm-up batch search"))?;
    }
    let t = Instant::now();
    let results =
        call(dataset.test.as_flat(), filters).map_err(RunError::engine("batch search"))?;
    let wall = t.elapsed();
    let mut ids = vec![PointId::MAX; nq * k];
    let mut scores = vec![f32::NAN; nq * k];
    for (qi, out) in results.iter().enumerate().take(nq) {
        copy_answer(
            out,
            &mut ids[qi * k..(qi + 1) * k],
            &mut scores[qi * k..(qi + 1) * k],
        );
    }
    Ok((
        Answers {
            k,
            ids,
            scores,
            latencies: vec![wall],
        },
        wall,
    ))
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

/// Each query's quality, and the positions of its relevant results (kept for the sidecar
/// only).
struct Scored {
    per_query: Vec<QueryQuality>,
    relevant_at: Vec<Vec<u32>>,
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
        ..timing(plan, dataset, target, &answers, wall, &warmup_latencies)
    };
    // With --repeat-build the trials are whole rebuilt runs (runner::run), not loops here.
    if plan.repeat > 1 && !plan.repeat_build {
        step.repeats = Some(repeat_trials(engine, dataset, plan, predicates, &step)?);
    }
    Ok(step)
}

/// The timed queries in the plan's mode: one call per query, or one batch.
fn timed_queries(
    engine: &dyn VectorEngine,
    plan: &BenchPlan,
    dataset: &Dataset,
    warmup: usize,
    predicates: Option<&[Predicate]>,
    warmup_latencies: &mut Vec<Duration>,
) -> Result<(Answers, Duration), RunError> {
    if plan.batch_mode {
        timed_batch(engine, dataset, plan.k, warmup, predicates)
    } else {
        timed_single(
            engine,
            dataset,
            plan.k,
            warmup,
            predicates,
            plan.observer(),
            warmup_latencies,
        )
    }
}

/// Distances are recomputed from the dataset, with each id's current vector: the engine's
/// scores are never trusted. Ids that are not live get NaN (never relevant).
fn answer_distances(dataset: &Dataset, live: &LiveState, answers: &Answers) -> Vec<f32> {
    let (nq, k) = (dataset.test.len(), answers.k);
    let distance_of = |i: usize, row: usize| {
        dataset
            .distance
            .between(dataset.test.row(i / k), dataset.train.row(row))
    };
    if dataset.train.is_mapped() {
        // A mapped base is read in row order, one forward sweep, rather than faulted in at
        // random (under memory pressure every random fault reads ahead and evicts).
        let mut order: Vec<(usize, usize)> = (0..nq * k)
            .filter_map(|i| live.get(answers.ids[i]).map(|row| (row, i)))
            .collect();
        order.par_sort_unstable();
        let found: Vec<f32> = order
            .par_iter()
            .map(|&(row, i)| distance_of(i, row))
            .collect();
        let mut distances = vec![f32::NAN; nq * k];
        for (&(_, i), d) in order.iter().zip(found) {
            distances[i] = d;
        }
        distances
    } else {
        (0..nq * k)
            .into_par_iter()
            .map(|i| match live.get(answers.ids[i]) {
                Some(row) => distance_of(i, row),
                None => f32::NAN,
            })
            .collect()
    }
}

/// Results query `q` returned (its row without the padding).
fn returned_of(answers: &Answers, q: usize) -> usize {
    let k = answers.k;
    answers.ids[q * k..(q + 1) * k]
        .iter()
        .take_while(|id| **id != PointId::MAX)
        .count()
}

/// Each query scored once; the positions of its relevant results are kept only for the
/// sidecar, which records them.
fn score_queries(
    plan: &BenchPlan,
    gt: &GroundTruth,
    answers: &Answers,
    distances: &[f32],
    keep_positions: bool,
) -> Scored {
    let k = answers.k;
    let nq = answers.ids.len() / k.max(1);
    let (per_query, relevant_at): (Vec<_>, Vec<Vec<u32>>) = (0..nq)
        .into_par_iter()
        .map(|q| {
            let row = &answers.ids[q * k..(q + 1) * k];
            let returned = returned_of(answers, q);
            let mut positions = Vec::new();
            let quality = score_query_marking(
                &QueryInput {
                    gt_ids: gt.ids_of(q),
                    gt_distances: gt.distances_of(q),
                    returned_ids: &row[..returned],
                    returned_distances: &distances[q * k..q * k + returned],
                },
                k,
                plan.relevant,
                |pos| {
                    if keep_positions {
                        positions.push(pos as u32);
                    }
                },
            );
            (quality, positions)
        })
        .unzip();
    Scored {
        per_query,
        relevant_at,
    }
}

/// Recall and latency split into terciles of the queries' LID, when the plan has them.
fn difficulty_bands(
    plan: &BenchPlan,
    answers: &Answers,
    per_query: &[QueryQuality],
) -> Option<DifficultyBands> {
    plan.difficulty.as_ref().and_then(|d| {
        let lid: Vec<f64> = d.queries.iter().map(|q| q.lid).collect();
        let recall: Vec<f64> = per_query.iter().map(|q| q.recall).collect();
        let latencies = (!plan.batch_mode).then_some(answers.latencies.as_slice());
        lid_terciles(&lid, &recall, latencies, d.k)
    })
}

/// Returned ids that are not live.
fn stale_hits(answers: &Answers, live: &LiveState) -> usize {
    answers
        .ids
        .iter()
        .filter(|id| **id != PointId::MAX && !live.contains(**id))
        .count()
}

/// A ghost: an updated id that ranks where its old vector would, not where its current one
/// does (the engine kept or still searches the old vector).
fn ghost_hits(
    dataset: &Dataset,
    relevant: usize,
    target: &SearchTarget<'_>,
    answers: &Answers,
    distances: &[f32],
) -> usize {
    let (gt, live, k) = (target.gt, target.live, answers.k);
    let boundary = |q: usize| {
        let r = relevant.min(gt.k);
        gt.distances_of(q)
            .get(r.saturating_sub(1))
            .copied()
            .unwrap_or(f32::INFINITY)
            + DISTANCE_EPSILON
    };
    (0..dataset.test.len())
        .into_par_iter()
        .map(|q| {
            let bound = boundary(q);
            (0..k)
                .filter(|&j| {
                    let id = answers.ids[q * k + j];
                    let Some(old) = live.previous_row.get(id as usize).copied().flatten() else {
                        return false;
                    };
                    let old_d = dataset
                        .distance
                        .between(dataset.test.row(q), dataset.train.row(old));
                    live.contains(id) && old_d <= bound && distances[q * k + j] > bound
                })
                .count()
        })
        .sum()
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
    let latency = LatencySummary::of(answers.latencies.iter().copied());
    // Cold start and settling, over the whole sequence of calls (warm-up then timed).
    let (cold_start_ms, warmup_settle) = if plan.batch_mode {
        (None, None)
    } else {
        let sequence: Vec<Duration> = warmup_latencies
            .iter()
            .chain(&answers.latencies)
            .copied()
            .collect();
        (
            target
                .position
                .first_after_change
                .then(|| sequence.first().map(|d| d.as_secs_f64() * 1000.0))
                .flatten(),
            warmup_settle(&sequence),
        )
    };
    SearchStep {
        runbook_step: target.position.runbook_step,
        after: target.position.after.to_string(),
        search_params: target.params.clone(),
        mode: if plan.batch_mode { "batch" } else { "single" }.into(),
        warmup_queries: if plan.batch_mode {
            plan.warmup.min(nq * 4)
        } else {
            plan.warmup
        },
        quality: Default::default(),
        qps: per_second(nq, wall),
        qps_from_mean_latency: if plan.batch_mode || latency.mean_ms <= 0.0 {
            per_second(nq, wall)
        } else {
            1000.0 / latency.mean_ms
        },
        latency,
        wall_s: wall.as_secs_f64(),
        live_points: target.live.live,
        stale_hits: 0,
        ghost_hits: 0,
        truth_mismatches: None,
        resources: Default::default(),
        sidecar_step: target.position.step_index,
        cold_start_ms,
        warmup_settle,
        load: Vec::new(),
        max_rate_within_slo: None,
        repeats: None,
        filter: None,
        difficulty_bands: None,
    }
}

/// The further timed trials of `--repeat` (the index is warm: no warm-up), with the first
/// trial's figures from `first`.
fn repeat_trials(
    engine: &dyn VectorEngine,
    dataset: &Dataset,
    plan: &BenchPlan,
    predicates: Option<&[Predicate]>,
    first: &SearchStep,
) -> Result<Repeats, RunError> {
    let mut trials = vec![Trial::of(first)];
    for _ in 1..plan.repeat {
        super::check_interrupt()?;
        let (answers, wall) = if plan.batch_mode {
            timed_batch(engine, dataset, plan.k, 0, predicates)?
        } else {
            timed_single(
                engine,
                dataset,
                plan.k,
                0,
                predicates,
                plan.observer(),
                &mut Vec::new(),
            )?
        };
        trials.push(Trial::from_summary(
            &LatencySummary::of(answers.latencies),
            per_second(dataset.test.len(), wall),
        ));
    }
    Ok(Repeats::from_trials(trials))
}

/// Checks every returned id against its query's predicate: violations are counted and their
/// distances set to NaN (never relevant); short answers are counted against the number of
/// points that passed (the depth of the filtered truth).
fn check_filter(
    filter: &ActiveFilter<'_>,
    answers: &Answers,
    distances: &mut [f32],
    gt: &GroundTruth,
) -> Result<FilterOutcome, RunError> {
    let k = answers.k;
    let mut compiled: std::collections::BTreeMap<&Predicate, CompiledPredicate<'_>> =
        std::collections::BTreeMap::new();
    for p in &filter.level.predicates {
        if !compiled.contains_key(p) {
            let c = p
                .compile(filter.attributes)
                .map_err(|e| RunError::Setup(format!("filter {}: {e}", filter.level.name)))?;
            compiled.insert(p, c);
        }
    }
    let (mut violations, mut violating_queries, mut short_results) = (0, 0, 0);
    for (q, p) in filter.level.predicates.iter().enumerate() {
        let c = &compiled[p];
        let row = &answers.ids[q * k..(q + 1) * k];
        let returned = row.iter().take_while(|id| **id != PointId::MAX).count();
        let mut bad = 0;
        for (j, id) in row[..returned].iter().enumerate() {
            if !c.passes(*id) {
                bad += 1;
                distances[q * k + j] = f32::NAN;
            }
        }
        violations += bad;
        violating_queries += usize::from(bad > 0);
        let depth = gt
            .ids_of(q)
            .iter()
            .take_while(|id| **id != PointId::MAX)
            .count();
        let mut distinct: Vec<PointId> = row[..returned].to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() < k.min(depth) {
            short_results += 1;
        }
    }
    Ok(FilterOutcome {
        level: filter.index,
        name: filter.level.name.clone(),
        target_selectivity: filter.level.target_selectivity,
        selectivity: filter.selectivity,
        violations,
        violating_queries,
        short_results,
    })
}

/// Queries per second of `count` queries answered in `wall` (0 for no time).
fn per_second(count: usize, wall: Duration) -> f64 {
    let s = wall.as_secs_f64();
    if s > 0.0 { count as f64 / s } else { 0.0 }
}

/// Queries whose answer is not exactly the ground truth: the same ids in the same order with
/// bit-identical distances over the first min(k, depth) positions (padding excluded). Only
/// meaningful for engines that promise exact answers.
fn count_truth_mismatches(answers: &Answers, distances: &[f32], gt: &GroundTruth) -> usize {
    let k = answers.k;
    let depth = k.min(gt.k);
    (0..gt.queries())
        .filter(|&q| {
            let want_ids = &gt.ids_of(q)[..depth];
            let want_d = &gt.distances_of(q)[..depth];
            (0..depth).any(|j| {
                let got_id = answers.ids[q * k + j];
                if want_ids[j] == PointId::MAX {
                    // The live set is smaller than k: nothing may be returned here.
                    return got_id != PointId::MAX;
                }
                got_id != want_ids[j] || distances[q * k + j].to_bits() != want_d[j].to_bits()
            })
        })
        .count()
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
