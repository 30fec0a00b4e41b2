//! Search quality of one result list against exact ground truth, and its mean over queries.
//!
//! Definitions (see the README for the full text):
//! - `K` is the cutoff (results considered); `r = min(relevant, ground-truth depth)` is the
//!   number of true neighbours regarded as relevant (by default `r = K`, the ANN convention).
//! - The relevant set is the true top-`r`, extended over distance ties: every stored neighbour
//!   at distance ≤ the `r`-th true distance, and every returned id whose distance (recomputed
//!   by the harness) equals or beats it.
//! - Result lists are deduplicated (first occurrence kept) and cut at `K`; missing results
//!   count as misses.
//! - recall = min(hits, r) / r; precision = hits / K; F1 their harmonic mean; MRR = 1/rank of
//!   the first relevant result; NDCG with binary gains, ideal DCG over min(K, r) positions;
//!   AP = Σ precision@i over relevant positions i, divided by min(K, r); hit rate = hits > 0.
//! - `recall_distance` is ann-benchmarks' form: a returned item counts if its recomputed
//!   distance is ≤ the `r`-th true distance + 1e-3.

use serde::{Deserialize, Serialize};

use crate::engine::PointId;

/// ann-benchmarks' tolerance for the distance form of recall.
pub const DISTANCE_EPSILON: f32 = 1e-3;

/// Quality of one query's result list.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct QueryQuality {
    pub recall: f64,
    pub recall_distance: f64,
    pub precision: f64,
    pub f1: f64,
    pub reciprocal_rank: f64,
    pub ndcg: f64,
    pub average_precision: f64,
    pub hit: bool,
    /// The raw list repeated an id.
    pub had_duplicates: bool,
    /// Fewer than K distinct results.
    pub short: bool,
}

/// One query's inputs: ground truth (best first) and what the engine returned, with the
/// distances the harness recomputed for each returned id (NaN for an id outside the dataset).
pub struct QueryInput<'a> {
    pub gt_ids: &'a [PointId],
    pub gt_distances: &'a [f32],
    pub returned_ids: &'a [PointId],
    pub returned_distances: &'a [f32],
}

/// Scores one result list at cutoff `k` with `relevant` true neighbours regarded as relevant.
pub fn score_query(input: &QueryInput<'_>, k: usize, relevant: usize) -> QueryQuality {
    let r = relevant.min(input.gt_ids.len());
    if k == 0 || r == 0 {
        return QueryQuality::default();
    }
    let boundary = input.gt_distances[r - 1];
    let is_true_neighbor = |id: PointId| {
        input
            .gt_ids
            .iter()
            .zip(input.gt_distances)
            .any(|(g, d)| *g == id && *d <= boundary)
    };

    // Deduplicate, keeping first occurrences, then cut at K.
    let mut seen: Vec<PointId> = Vec::with_capacity(k);
    let mut dists: Vec<f32> = Vec::with_capacity(k);
    let mut had_duplicates = false;
    for (id, d) in input.returned_ids.iter().zip(input.returned_distances) {
        if seen.contains(id) {
            had_duplicates = true;
            continue;
        }
        if seen.len() < k {
            seen.push(*id);
            dists.push(*d);
        }
    }

    let mut hits = 0usize;
    let mut within_eps = 0usize;
    let mut first_rank = None;
    let mut dcg = 0.0f64;
    let mut precision_sum = 0.0f64;
    for (pos, (id, d)) in seen.iter().zip(&dists).enumerate() {
        if *d <= boundary + DISTANCE_EPSILON {
            within_eps += 1;
        }
        let relevant = is_true_neighbor(*id) || *d <= boundary;
        if relevant {
            hits += 1;
            first_rank.get_or_insert(pos + 1);
            dcg += 1.0 / ((pos + 2) as f64).log2();
            precision_sum += hits as f64 / (pos + 1) as f64;
        }
    }
    let ideal_len = k.min(r);
    let idcg: f64 = (0..ideal_len).map(|i| 1.0 / ((i + 2) as f64).log2()).sum();
    let recall = hits.min(r) as f64 / r as f64;
    let precision = hits as f64 / k as f64;
    let f1 = if recall + precision > 0.0 {
        2.0 * recall * precision / (recall + precision)
    } else {
        0.0
    };
    QueryQuality {
        recall,
        recall_distance: within_eps.min(r) as f64 / r as f64,
        precision,
        f1,
        reciprocal_rank: first_rank.map_or(0.0, |rank| 1.0 / rank as f64),
        ndcg: (dcg / idcg).min(1.0),
        average_precision: (precision_sum / ideal_len as f64).min(1.0),
        hit: hits > 0,
        had_duplicates,
        short: seen.len() < k,
    }
}

/// Means over all queries of a search step, plus counts of flagged lists.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QualitySummary {
    pub k: usize,
    pub relevant: usize,
    pub queries: usize,
    pub recall: f64,
    pub recall_distance: f64,
    pub precision: f64,
    pub f1: f64,
    pub mrr: f64,
    pub ndcg: f64,
    pub map: f64,
    pub hit_rate: f64,
    /// Lowest per-query recall, to spot a tail of bad queries behind a good mean.
    pub recall_min: f64,
    pub queries_with_duplicates: usize,
    pub queries_short: usize,
}

/// Averages per-query scores. F1 is the mean of per-query F1 (not F1 of the means).
pub fn summarize(per_query: &[QueryQuality], k: usize, relevant: usize) -> QualitySummary {
    let n = per_query.len();
    if n == 0 {
        return QualitySummary {
            k,
            relevant,
            ..QualitySummary::default()
        };
    }
    let mean = |f: &dyn Fn(&QueryQuality) -> f64| per_query.iter().map(f).sum::<f64>() / n as f64;
    QualitySummary {
        k,
        relevant,
        queries: n,
        recall: mean(&|q| q.recall),
        recall_distance: mean(&|q| q.recall_distance),
        precision: mean(&|q| q.precision),
        f1: mean(&|q| q.f1),
        mrr: mean(&|q| q.reciprocal_rank),
        ndcg: mean(&|q| q.ndcg),
        map: mean(&|q| q.average_precision),
        hit_rate: mean(&|q| if q.hit { 1.0 } else { 0.0 }),
        recall_min: per_query.iter().map(|q| q.recall).fold(1.0, f64::min),
        queries_with_duplicates: per_query.iter().filter(|q| q.had_duplicates).count(),
        queries_short: per_query.iter().filter(|q| q.short).count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// Ground truth 0..10 at distances 1..10 (no ties).
    fn gt() -> (Vec<PointId>, Vec<f32>) {
        ((0..10).collect(), (1..=10).map(|d| d as f32).collect())
    }

    fn dist_of(ids: &[PointId]) -> Vec<f32> {
        // Ids 0..10 sit at distance id+1; anything else is far away.
        ids.iter()
            .map(|&i| if i < 10 { i as f32 + 1.0 } else { 100.0 })
            .collect()
    }

    fn score(ids: &[PointId], k: usize, relevant: usize) -> QueryQuality {
        let (g, gd) = gt();
        let d = dist_of(ids);
        score_query(
            &QueryInput {
                gt_ids: &g,
                gt_distances: &gd,
                returned_ids: ids,
                returned_distances: &d,
            },
            k,
            relevant,
        )
    }

    #[test]
    fn perfect_list() {
        let q = score(&[0, 1, 2, 3, 4], 5, 5);
        assert!(close(q.recall, 1.0) && close(q.precision, 1.0) && close(q.f1, 1.0));
        assert!(close(q.ndcg, 1.0) && close(q.average_precision, 1.0));
        assert!(close(q.reciprocal_rank, 1.0) && q.hit && !q.short);
    }

    #[test]
    fn hand_computed_mixed_list() {
        // K = 4, r = 4: relevant = {0,1,2,3}. Returned: 11 (miss), 2 (hit), 12 (miss), 0 (hit).
        let q = score(&[11, 2, 12, 0], 4, 4);
        assert!(close(q.recall, 0.5));
        assert!(close(q.precision, 0.5));
        assert!(close(q.f1, 0.5));
        assert!(close(q.reciprocal_rank, 0.5));
        // DCG = 1/log2(3) + 1/log2(5); IDCG = 1 + 1/log2(3) + 1/2 + 1/log2(5).
        let dcg = 1.0 / 3f64.log2() + 1.0 / 5f64.log2();
        let idcg = 1.0 + 1.0 / 3f64.log2() + 0.5 + 1.0 / 5f64.log2();
        assert!(close(q.ndcg, dcg / idcg));
        // AP = (1/2 + 2/4) / 4 = 0.25.
        assert!(close(q.average_precision, 0.25));
        assert!(q.hit);
    }

    #[test]
    fn seed_convention_recall_at_10_of_100() {
        // With 100 relevant neighbours, a perfect top-10 has recall 0.10 and precision 1.0.
        let g: Vec<PointId> = (0..100).collect();
        let gd: Vec<f32> = (1..=100).map(|d| d as f32).collect();
        let ids: Vec<PointId> = (0..10).collect();
        let d: Vec<f32> = (1..=10).map(|d| d as f32).collect();
        let q = score_query(
            &QueryInput {
                gt_ids: &g,
                gt_distances: &gd,
                returned_ids: &ids,
                returned_distances: &d,
            },
            10,
            100,
        );
        assert!(close(q.recall, 0.10));
        assert!(close(q.precision, 1.0));
        assert!(close(q.ndcg, 1.0));
        assert!(close(q.average_precision, 1.0));
    }

    #[test]
    fn duplicates_count_once() {
        // [0, 0, 1] at K = 3: deduplicated to [0, 1], short by one.
        let q = score(&[0, 0, 1], 3, 3);
        assert!(q.had_duplicates && q.short);
        assert!(close(q.recall, 2.0 / 3.0));
        assert!(close(q.precision, 2.0 / 3.0));
    }

    #[test]
    fn short_and_empty_lists_are_misses() {
        let q = score(&[0], 3, 3);
        assert!(close(q.recall, 1.0 / 3.0) && q.short);
        let q = score(&[], 3, 3);
        assert!(close(q.recall, 0.0) && !q.hit && close(q.reciprocal_rank, 0.0));
        assert!(close(q.f1, 0.0) && close(q.ndcg, 0.0));
    }

    #[test]
    fn ties_extend_the_relevant_set() {
        // True top-2 is {0, 1} but id 7 is at the same distance as id 1: returning 7 is correct.
        let g = [0, 1, 7, 8];
        let gd = [1.0, 2.0, 2.0, 3.0];
        let returned = [0, 7];
        let d = [1.0, 2.0];
        let q = score_query(
            &QueryInput {
                gt_ids: &g,
                gt_distances: &gd,
                returned_ids: &returned,
                returned_distances: &d,
            },
            2,
            2,
        );
        assert!(close(q.recall, 1.0));
        // A tie partner beyond the stored depth (id 99 at distance 2.0) also counts.
        let returned = [0, 99];
        let q = score_query(
            &QueryInput {
                gt_ids: &g,
                gt_distances: &gd,
                returned_ids: &returned,
                returned_distances: &d,
            },
            2,
            2,
        );
        assert!(close(q.recall, 1.0));
        // A stranger just beyond the boundary does not.
        let far = [1.0, 2.5];
        let q = score_query(
            &QueryInput {
                gt_ids: &g,
                gt_distances: &gd,
                returned_ids: &returned,
                returned_distances: &far,
            },
            2,
            2,
        );
        assert!(close(q.recall, 0.5));
    }

    #[test]
    fn distance_form_uses_epsilon() {
        // True 2nd distance 2.0; a stranger at 2.0005 passes the distance form, not id overlap.
        let g = [0, 1];
        let gd = [1.0, 2.0];
        let returned = [0, 50];
        let d = [1.0, 2.0005];
        let q = score_query(
            &QueryInput {
                gt_ids: &g,
                gt_distances: &gd,
                returned_ids: &returned,
                returned_distances: &d,
            },
            2,
            2,
        );
        assert!(close(q.recall, 0.5));
        assert!(close(q.recall_distance, 1.0));
    }

    #[test]
    fn k_beyond_ground_truth_depth() {
        // Depth 10, K = 20: r = 10; all ten true neighbours plus ten strangers.
        let ids: Vec<PointId> = (0..20).collect();
        let q = score(&ids, 20, 20);
        assert!(close(q.recall, 1.0));
        assert!(close(q.precision, 0.5));
        assert!(close(q.average_precision, 1.0));
        assert!(close(q.ndcg, 1.0));
    }

    #[test]
    fn summary_means() {
        let a = score(&[0, 1], 2, 2);
        let b = score(&[11, 12], 2, 2);
        let s = summarize(&[a, b], 2, 2);
        assert!(close(s.recall, 0.5) && close(s.hit_rate, 0.5) && close(s.recall_min, 0.0));
        assert_eq!(s.queries, 2);
    }
}
