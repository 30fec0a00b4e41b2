//! The timed loops of a search measurement: warm-up, then the queries, one call each or one
//! batch. A loop does nothing but call the engine, read the clock and copy the answer into
//! preallocated buffers.

use std::time::{Duration, Instant};

use super::super::{BenchPlan, RunError};
use super::per_second;
use crate::dataset::Dataset;
use crate::engine::{Batch, EngineResult, Neighbor, PointId, Query, VectorEngine};
use crate::filter::Predicate;
use crate::metrics::latency::LatencySummary;
use crate::results::{Repeats, SearchStep, Trial};
use crate::types::{Progress, ProgressUnit};

/// Raw answers of a timed query loop, `queries × k`, padded with `PointId::MAX` / NaN.
pub struct Answers {
    pub k: usize,
    pub ids: Vec<PointId>,
    pub scores: Vec<f32>,
    pub latencies: Vec<Duration>,
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
    let call = |q: usize, out: &mut Vec<Neighbor>| {
        engine.search(
            Query::new(dataset.test.row(q), k).filtered(filters.map(|f| &f[q])),
            out,
        )
    };
    let queries = Queries {
        count: dataset.test.len(),
        k,
        warmup,
    };
    timed_calls(queries, call, progress, warmup_latencies)
}

/// How many queries a loop runs, how many answers each keeps, and how many warm-up calls
/// come first.
#[derive(Clone, Copy)]
pub(crate) struct Queries {
    pub count: usize,
    pub k: usize,
    pub warmup: usize,
}

/// Warm-up calls (cycling over the queries, each timed into `warmup_latencies`), then one
/// timed `call` per query, its answer (left in the buffer it is given) copied into
/// preallocated rows. Every kind of search (dense, filtered, sparse, hybrid) runs in it: only
/// the call differs.
pub(crate) fn timed_calls(
    queries: Queries,
    mut call: impl FnMut(usize, &mut Vec<Neighbor>) -> EngineResult<()>,
    progress: &dyn Progress,
    warmup_latencies: &mut Vec<Duration>,
) -> Result<(Answers, Duration), RunError> {
    let Queries {
        count: nq,
        k,
        warmup,
    } = queries;
    let mut out: Vec<Neighbor> = Vec::with_capacity(k * 2);
    for i in 0..warmup {
        let t = Instant::now();
        call(i % nq.max(1), &mut out).map_err(RunError::engine("warm-up search"))?;
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
            super::super::check_interrupt()?;
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
    let call = |queries: &[f32], predicates: Option<&[Predicate]>| {
        engine.batch_search(Batch::new(queries, dim, k).filtered(predicates))
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

/// The further timed trials of `--repeat` (the index is warm: no warm-up), with the first
/// trial's figures from `first`.
pub(super) fn repeat_trials(
    engine: &dyn VectorEngine,
    dataset: &Dataset,
    plan: &BenchPlan,
    predicates: Option<&[Predicate]>,
    first: &SearchStep,
) -> Result<Repeats, RunError> {
    let mut trials = vec![Trial::of(first)];
    for _ in 1..plan.repeat {
        super::super::check_interrupt()?;
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

/// The timed queries in the plan's mode: one call per query, or one batch.
pub(super) fn timed_queries(
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
