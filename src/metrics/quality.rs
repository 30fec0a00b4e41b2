//! Search quality of one result list against exact ground truth, and its mean over queries.
//!
//! Definitions (docs/metrics.md has the full text; every rank metric is
//! trec_eval's, computed on the relevant set below):
//! - `K` is the cutoff: only the first `K` returned entries are the answer. `r = min(relevant,
//!   truth depth)` is the number of true neighbours regarded as relevant (by default `r = K`,
//!   the ANN convention). Padding of a truth deeper than the base (id `PointId::MAX` at +inf)
//!   is not a point and does not count in the depth.
//! - The relevant set `R` is a true top-`r`, so `|R| = r` always. Under distance ties the
//!   true top-`r` is not unique: every point strictly closer than the `r`-th true distance `b`
//!   is in it, and the remaining slots go to points at exactly `b`. Of those tie partners,
//!   the ones the engine returned take the slots first, in its order: the choice of true
//!   top-`r` that agrees best with the answer. So a duplicated vector never makes a correct
//!   answer look wrong, and two tie partners cannot stand in for a closer point the engine
//!   missed. A returned id the truth does not list (a tie partner beyond its depth) is a
//!   tie partner if its recomputed distance is ≤ `b`.
//! - A repeated id keeps its rank but is no new result: a miss there, as if an unjudged
//!   document stood at that rank (a trec_eval run cannot list a document twice). Missing
//!   results (a short list) are misses.
//! - recall = hits / r (`recall_K`); precision = hits / K (`P_K`); F1 their harmonic mean;
//!   RR = 1 / rank of the first relevant result (`recip_rank`); NDCG@K with binary gains
//!   and ideal DCG over min(K, r) ranks (`ndcg_cut_K`); AP@K = Σ precision@i over the relevant
//!   ranks i ≤ K, divided by r = |R| (`map_cut_K`: a perfect top-10 of 100 relevant scores
//!   0.1); hit = hits > 0. None is clamped: each is ≤ 1 by construction.
//! - `recall_distance` is ann-benchmarks' knn recall (`plotting/metrics.py`): threshold = the
//!   `K`-th true distance + 1e-3 (whatever `r` is), results among the first `K` within it,
//!   divided by `K`. Two differences: a repeated id counts once (ann-benchmarks counts it
//!   each time), and with a truth shallower than `K` (a base of fewer than `K` points, where
//!   ann-benchmarks fails) the deepest true distance is used and the count is capped at and
//!   divided by that depth.
//! - `recall_epsilon` and `recall_large_epsilon` are ann-benchmarks' "epsilon" and
//!   "largeepsilon" recall (`epsilon_threshold`): the same count with the threshold
//!   `(1 + ε) ×` the `K`-th true distance, ε = 0.01 and 0.1, with the same two differences.
//! - `relative_distance_error` is ann-benchmarks' `rel`: Σ over all queries and the first `K`
//!   positions of the returned distance, divided by Σ of the true distances at the same
//!   positions — a **ratio of sums over the whole step, not a mean of per-query ratios**;
//!   +inf when the true sum is below 0.01 (ann-benchmarks' rule). A position the engine left
//!   empty has distance +inf there (ann-benchmarks pads short lists with +inf), and so does, by
//!   the rule above, a repeated id (ann-benchmarks adds its distance again) and an id without
//!   a distance (outside the dataset, not live, failing the filter): any of them makes the
//!   step's figure +inf. With a truth shallower than `K` both sums stop at its depth, as
//!   ann-benchmarks' `zip` does.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::metrics::latency::null_is_nan;
use crate::types::PointId;

/// ann-benchmarks' tolerance for the distance form of recall.
pub const DISTANCE_EPSILON: f32 = 1e-3;

/// The same tolerance in f64: ann-benchmarks adds `1e-3` to a float32 true distance in
/// numpy, which yields a float64 threshold; comparing in f32 could round it.
const DISTANCE_EPSILON_F64: f64 = 1e-3;

/// ε of ann-benchmarks' "epsilon" recall (`all_metrics["epsilon"]`).
pub const RECALL_EPSILON: f64 = 0.01;

/// ε of ann-benchmarks' "largeepsilon" recall (`all_metrics["largeepsilon"]`).
pub const RECALL_LARGE_EPSILON: f64 = 0.1;

/// ann-benchmarks' `rel` is +inf when the true distances sum to less than this.
const REL_MIN_TRUE_SUM: f64 = 0.01;

/// Quality of one query's result list.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct QueryQuality {
    pub recall: f64,
    pub recall_distance: f64,
    /// Results within (1 + 0.01) × the K-th true distance, / K (ann-benchmarks "epsilon").
    pub recall_epsilon: f64,
    /// Results within (1 + 0.1) × the K-th true distance, / K ("largeepsilon").
    pub recall_large_epsilon: f64,
    /// Σ of the distances of the first min(K, depth) returned entries, +inf if one of them
    /// is empty, a repeat or has no distance: the numerator of ann-benchmarks' `rel`.
    pub returned_distance_sum: f64,
    /// Σ of the first min(K, depth) true distances: the denominator of `rel`.
    pub true_distance_sum: f64,
    pub precision: f64,
    pub f1: f64,
    pub reciprocal_rank: f64,
    pub ndcg: f64,
    pub average_precision: f64,
    pub hit: bool,
    /// An id repeats within the first K entries.
    pub had_duplicates: bool,
    /// Fewer than K distinct results within the first K entries (fewer than the live points,
    /// when the truth says there are fewer than K).
    pub short: bool,
    /// The truth has at least one point (and K ≥ 1): every figure above is defined. A query
    /// over an empty truth (nothing live, or nothing passing its filter) has nothing to find:
    /// it is left out of the step's means, and its per-query figures are `null`.
    pub defined: bool,
}

/// One query's inputs: ground truth (sorted by distance then id, as ragdbeval stores it) and
/// what the engine returned, best first, with the distances the harness recomputed for each
/// returned id (NaN for an id outside the dataset).
pub struct QueryInput<'a> {
    pub gt_ids: &'a [PointId],
    pub gt_distances: &'a [f32],
    pub returned_ids: &'a [PointId],
    pub returned_distances: &'a [f32],
}

/// Scores one result list at cutoff `k` with `relevant` true neighbours regarded as relevant.
pub fn score_query(input: &QueryInput<'_>, k: usize, relevant: usize) -> QueryQuality {
    score_query_marking(input, k, relevant, |_| {})
}

/// [`score_query`], also calling `mark(position)` for each returned entry (0-based) counted
/// as relevant: what the per-query sidecar records, so that a comparison of two runs can say
/// which relevant results one found and the other lost.
pub fn score_query_marking(
    input: &QueryInput<'_>,
    k: usize,
    relevant: usize,
    mut mark: impl FnMut(usize),
) -> QueryQuality {
    // A truth deeper than the base is padded with id MAX at +inf: those are no points.
    let depth = input
        .gt_ids
        .iter()
        .zip(input.gt_distances)
        .take_while(|(id, d)| **id != PointId::MAX && d.is_finite())
        .count();
    let gt_ids = &input.gt_ids[..depth];
    let gt_d = &input.gt_distances[..depth];

    // The answer is the first K entries; `None` marks a repeat of an earlier id, which keeps
    // its rank (the engine spent that slot) but is not a new result.
    let mut seen: HashSet<PointId> = HashSet::with_capacity(k);
    let answer: Vec<Option<f32>> = input
        .returned_ids
        .iter()
        .zip(input.returned_distances)
        .take(k)
        .map(|(id, d)| seen.insert(*id).then_some(*d))
        .collect();
    let had_duplicates = answer.iter().any(Option::is_none);
    // Short only against what exists: a truth padded past its last point says the live set
    // (or the points passing the filter) is smaller than K, and those cannot fill K.
    let available = if depth < input.gt_ids.len() { depth } else { k };
    let short = seen.len() < k.min(available);

    let distance_forms = QueryQuality {
        had_duplicates,
        short,
        ..ann_distance_forms(&answer, gt_d, k)
    };

    let r = relevant.min(depth);
    if k == 0 || r == 0 {
        return distance_forms;
    }
    let distance_forms = QueryQuality {
        defined: true,
        ..distance_forms
    };

    let mut relevant_set = RelevantSet::new(gt_ids, gt_d, r);
    let mut hits = 0usize;
    let mut first_rank = None;
    let mut dcg = 0.0f64;
    let mut precision_sum = 0.0f64;
    for (pos, (id, d)) in input.returned_ids.iter().zip(&answer).enumerate() {
        let Some(d) = d else { continue };
        if relevant_set.admits(*id, *d) {
            mark(pos);
            hits += 1;
            first_rank.get_or_insert(pos + 1);
            dcg += 1.0 / ((pos + 2) as f64).log2();
            precision_sum += hits as f64 / (pos + 1) as f64;
        }
    }
    // hits ≤ r: strictly closer points are at most r − tie_slots distinct ids, tie partners
    // at most tie_slots. So recall, NDCG and AP cannot exceed 1 and need no clamp.
    let idcg: f64 = (0..k.min(r)).map(|i| 1.0 / ((i + 2) as f64).log2()).sum();
    let recall = hits as f64 / r as f64;
    let precision = hits as f64 / k as f64;
    let f1 = if hits > 0 {
        2.0 * recall * precision / (recall + precision)
    } else {
        0.0
    };
    QueryQuality {
        recall,
        precision,
        f1,
        reciprocal_rank: first_rank.map_or(0.0, |rank| 1.0 / rank as f64),
        ndcg: dcg / idcg,
        average_precision: precision_sum / r as f64,
        hit: hits > 0,
        ..distance_forms
    }
}

/// ann-benchmarks' forms of one query (they depend on K only, not on r): the distance
/// recalls and both sums of `rel`, over the first min(K, depth) positions of the truth `gt_d`.
fn ann_distance_forms(answer: &[Option<f32>], gt_d: &[f32], k: usize) -> QueryQuality {
    let m = k.min(gt_d.len());
    let (recall_distance, recall_epsilon, recall_large_epsilon) = if m == 0 {
        (0.0, 0.0, 0.0)
    } else {
        // Thresholds in f64, as numpy computes them from a float32 distance.
        let kth = f64::from(gt_d[m - 1]);
        (
            recall_within(answer, m, kth + DISTANCE_EPSILON_F64),
            recall_within(answer, m, kth * (1.0 + RECALL_EPSILON)),
            recall_within(answer, m, kth * (1.0 + RECALL_LARGE_EPSILON)),
        )
    };
    let returned_distance_sum: f64 = (0..m)
        .map(|i| match answer.get(i) {
            Some(Some(d)) if !d.is_nan() => f64::from(*d),
            _ => f64::INFINITY,
        })
        .sum();
    let true_distance_sum: f64 = gt_d[..m].iter().map(|d| f64::from(*d)).sum();
    QueryQuality {
        recall_distance,
        recall_epsilon,
        recall_large_epsilon,
        returned_distance_sum,
        true_distance_sum,
        ..QueryQuality::default()
    }
}

/// The relevant set R of one query (module doc): points strictly closer than the boundary b
/// (the r-th true distance) are in; the r − (their count) remaining slots go to tie partners
/// at b, returned ones first.
struct RelevantSet {
    boundary: f32,
    /// Truth entries within the boundary, sorted by id for lookup; the flag: strictly closer.
    pool: Vec<(PointId, bool)>,
    /// Slots left for tie partners.
    tie_slots: usize,
}

impl RelevantSet {
    /// R for the truth `gt_ids`/`gt_d` (sorted by distance, no padding) and `r` ≥ 1 relevant.
    fn new(gt_ids: &[PointId], gt_d: &[f32], r: usize) -> Self {
        let boundary = gt_d[r - 1];
        let within_boundary = gt_d.partition_point(|d| *d <= boundary);
        let mut pool: Vec<(PointId, bool)> = gt_ids[..within_boundary]
            .iter()
            .zip(gt_d)
            .map(|(id, d)| (*id, *d < boundary))
            .collect();
        pool.sort_unstable_by_key(|p| p.0);
        let strictly_closer = gt_d[..r].iter().filter(|d| **d < boundary).count();
        RelevantSet {
            boundary,
            pool,
            tie_slots: r - strictly_closer,
        }
    }

    /// Whether the returned `id` (recomputed distance `d`, not a repeat) is relevant; a tie
    /// partner admitted takes one of the tie slots.
    #[inline]
    fn admits(&mut self, id: PointId, d: f32) -> bool {
        match self.pool.binary_search_by_key(&id, |p| p.0) {
            Ok(i) if self.pool[i].1 => true,
            // A tie partner: a listed one, or one beyond the truth's depth.
            found => {
                let partner = found.is_ok() || d <= self.boundary;
                if partner && self.tie_slots > 0 {
                    self.tie_slots -= 1;
                    true
                } else {
                    false
                }
            }
        }
    }
}

/// Share of the first `m` true neighbours' worth of results within `threshold`: the answer's
/// distinct results (a repeat is `None`) at a distance ≤ `threshold`, capped at and divided by
/// `m` (the count can only exceed `m` when the truth is shallower than K). NaN is never within.
fn recall_within(answer: &[Option<f32>], m: usize, threshold: f64) -> f64 {
    let within = answer
        .iter()
        .flatten()
        .filter(|d| f64::from(**d) <= threshold)
        .count();
    within.min(m) as f64 / m as f64
}

/// Means over all queries of a search step, plus counts of flagged lists.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QualitySummary {
    pub k: usize,
    pub relevant: usize,
    pub queries: usize,
    /// Queries whose truth is empty (nothing live, or nothing passing the filter): nothing to
    /// find, so they are left out of every mean below. When every query is such, the means
    /// are undefined: NaN here, `null` in JSON.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub queries_without_truth: usize,
    #[serde(deserialize_with = "null_is_nan")]
    pub recall: f64,
    #[serde(deserialize_with = "null_is_nan")]
    pub recall_distance: f64,
    /// ann-benchmarks' "epsilon" recall (ε = 0.01), mean over queries; absent in files
    /// written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall_epsilon: Option<f64>,
    /// ann-benchmarks' "largeepsilon" recall (ε = 0.1), mean over queries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recall_large_epsilon: Option<f64>,
    /// ann-benchmarks' `rel`: Σ returned distances / Σ true distances over all queries (a
    /// ratio of sums, not a mean of ratios); +inf (written as JSON `null`) where
    /// ann-benchmarks gives +inf.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "null_is_infinite"
    )]
    pub relative_distance_error: Option<f64>,
    #[serde(deserialize_with = "null_is_nan")]
    pub precision: f64,
    #[serde(deserialize_with = "null_is_nan")]
    pub f1: f64,
    #[serde(deserialize_with = "null_is_nan")]
    pub mrr: f64,
    #[serde(deserialize_with = "null_is_nan")]
    pub ndcg: f64,
    #[serde(deserialize_with = "null_is_nan")]
    pub map: f64,
    #[serde(deserialize_with = "null_is_nan")]
    pub hit_rate: f64,
    /// Lowest per-query recall, to spot a tail of bad queries behind a good mean.
    #[serde(deserialize_with = "null_is_nan")]
    pub recall_min: f64,
    pub queries_with_duplicates: usize,
    pub queries_short: usize,
}

/// JSON has no infinity: serde_json writes +inf as `null`, which reads back as +inf here (a
/// missing field stays `None`: a file from before the figure existed).
fn null_is_infinite<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Ok(Some(
        Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY),
    ))
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// ann-benchmarks' `rel` over all queries: Σ returned distances / Σ true distances, +inf when
/// the true sum is below 0.01 or a returned distance is missing (+inf).
pub fn relative_distance_error(per_query: &[QueryQuality]) -> f64 {
    let returned: f64 = per_query.iter().map(|q| q.returned_distance_sum).sum();
    let truth: f64 = per_query.iter().map(|q| q.true_distance_sum).sum();
    if truth < REL_MIN_TRUE_SUM || returned.is_infinite() {
        f64::INFINITY
    } else {
        returned / truth
    }
}

/// Averages per-query scores over the queries whose truth is not empty
/// ([`QueryQuality::defined`]); NaN where there are none. F1 is the mean of per-query F1 (not
/// F1 of the means); the relative distance error is a ratio of sums
/// ([`relative_distance_error`]).
pub fn summarize(per_query: &[QueryQuality], k: usize, relevant: usize) -> QualitySummary {
    let scored: Vec<&QueryQuality> = per_query.iter().filter(|q| q.defined).collect();
    let n = scored.len();
    let mean = |f: &dyn Fn(&QueryQuality) -> f64| {
        if n == 0 {
            return f64::NAN;
        }
        scored.iter().map(|q| f(q)).sum::<f64>() / n as f64
    };
    QualitySummary {
        k,
        relevant,
        queries: per_query.len(),
        queries_without_truth: per_query.len() - n,
        recall: mean(&|q| q.recall),
        recall_distance: mean(&|q| q.recall_distance),
        // Optional figures are left out (not NaN) when undefined: a missing `rel` must not
        // read back as ann-benchmarks' +inf. A query without truth adds 0 to both of its sums.
        recall_epsilon: (n > 0).then(|| mean(&|q| q.recall_epsilon)),
        recall_large_epsilon: (n > 0).then(|| mean(&|q| q.recall_large_epsilon)),
        relative_distance_error: (n > 0).then(|| relative_distance_error(per_query)),
        precision: mean(&|q| q.precision),
        f1: mean(&|q| q.f1),
        mrr: mean(&|q| q.reciprocal_rank),
        ndcg: mean(&|q| q.ndcg),
        map: mean(&|q| q.average_precision),
        hit_rate: mean(&|q| if q.hit { 1.0 } else { 0.0 }),
        recall_min: if n == 0 {
            f64::NAN
        } else {
            scored.iter().map(|q| q.recall).fold(1.0, f64::min)
        },
        queries_with_duplicates: per_query.iter().filter(|q| q.had_duplicates).count(),
        queries_short: per_query.iter().filter(|q| q.short).count(),
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod generated_tests;
