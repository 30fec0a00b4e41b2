//! Scoring a search measurement's answers: distances recomputed from the dataset, each
//! query's quality against the truth, and the answers no correct engine gives (stale and
//! ghost hits, filter violations, inexact answers from an exact engine).

use rayon::prelude::*;

use super::super::{BenchPlan, RunError};
use super::timed::Answers;
use super::{ActiveFilter, LiveState, SearchTarget};
use crate::dataset::Dataset;
use crate::engine::PointId;
use crate::filter::{CompiledPredicate, Predicate};
use crate::groundtruth::GroundTruth;
use crate::metrics::bands::{DifficultyBands, lid_terciles};
use crate::metrics::quality::{DISTANCE_EPSILON, QueryInput, QueryQuality, score_query_marking};
use crate::results::FilterOutcome;

/// Each query's quality, and the positions of its relevant results (kept for the sidecar
/// only).
pub(super) struct Scored {
    pub per_query: Vec<QueryQuality>,
    pub relevant_at: Vec<Vec<u32>>,
}

/// Distances are recomputed from the dataset, with each id's current vector: the engine's
/// scores are never trusted. Ids that are not live get NaN (never relevant).
pub(super) fn answer_distances(dataset: &Dataset, live: &LiveState, answers: &Answers) -> Vec<f32> {
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
pub(super) fn returned_of(answers: &Answers, q: usize) -> usize {
    let k = answers.k;
    answers.ids[q * k..(q + 1) * k]
        .iter()
        .take_while(|id| **id != PointId::MAX)
        .count()
}

/// Each query scored once; the positions of its relevant results are kept only for the
/// sidecar, which records them.
pub(super) fn score_queries(
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
pub(super) fn difficulty_bands(
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
pub(super) fn stale_hits(answers: &Answers, live: &LiveState) -> usize {
    answers
        .ids
        .iter()
        .filter(|id| **id != PointId::MAX && !live.contains(**id))
        .count()
}

/// A ghost: an updated id that ranks where its old vector would, not where its current one
/// does (the engine kept or still searches the old vector).
pub(super) fn ghost_hits(
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

/// Queries whose answer is not exactly the ground truth: the same ids in the same order with
/// bit-identical distances over the first min(k, depth) positions (padding excluded). Only
/// meaningful for engines that promise exact answers.
pub(super) fn count_truth_mismatches(
    answers: &Answers,
    distances: &[f32],
    gt: &GroundTruth,
) -> usize {
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

/// Checks every returned id against its query's predicate: violations are counted and their
/// distances set to NaN (never relevant); short answers are counted against the number of
/// points that passed (the depth of the filtered truth).
pub(super) fn check_filter(
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
