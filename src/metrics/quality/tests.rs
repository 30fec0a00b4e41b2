//! Unit tests of the parent module.

use super::*;

// Expected values below are worked out by hand under trec_eval's definitions (binary
// relevance, the relevant set R of size r, K the cutoff): recall = hits/r (`recall`),
// precision = hits/K (`P_K`), RR = 1/first relevant rank (`recip_rank`), NDCG@K = DCG /
// IDCG over min(K, r) positions (`ndcg_cut_K`), AP@K = Σ P@i over relevant ranks i ≤ K / r
// (`map_cut_K`). Discounts: 1/log2(2) = 1, 1/log2(3) = 0.6309298, 1/log2(4) = 0.5,
// 1/log2(5) = 0.4306766, 1/log2(6) = 0.3868528. `scripts/check_metrics_trec.py` feeds the
// same cases to pytrec_eval and prints both.

pub(super) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// 1 / log2(rank + 1): the DCG discount of a 1-based rank.
fn disc(rank: usize) -> f64 {
    1.0 / ((rank + 1) as f64).log2()
}

/// All the figures of one query, in a fixed order, to compare in one assertion that names
/// every field that differs.
#[derive(Debug)]
struct Want {
    recall: f64,
    recall_distance: f64,
    precision: f64,
    reciprocal_rank: f64,
    ndcg: f64,
    average_precision: f64,
}

#[track_caller]
fn check(q: &QueryQuality, w: &Want) {
    let f1 = if w.recall + w.precision > 0.0 {
        2.0 * w.recall * w.precision / (w.recall + w.precision)
    } else {
        0.0
    };
    let pairs = [
        ("recall", q.recall, w.recall),
        ("recall_distance", q.recall_distance, w.recall_distance),
        ("precision", q.precision, w.precision),
        ("f1", q.f1, f1),
        ("reciprocal_rank", q.reciprocal_rank, w.reciprocal_rank),
        ("ndcg", q.ndcg, w.ndcg),
        (
            "average_precision",
            q.average_precision,
            w.average_precision,
        ),
    ];
    let wrong: Vec<String> = pairs
        .iter()
        .filter(|(_, got, want)| !close(*got, *want))
        .map(|(name, got, want)| format!("{name}: got {got}, want {want}"))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("; "));
    assert_eq!(q.hit, w.recall > 0.0, "hit");
}

/// Ground truth 0..10 at distances 1..10 (no ties).
pub(super) fn gt() -> (Vec<PointId>, Vec<f32>) {
    ((0..10).collect(), (1..=10).map(|d| d as f32).collect())
}

pub(super) fn dist_of(ids: &[PointId]) -> Vec<f32> {
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

pub(super) fn score_with(
    gt_ids: &[PointId],
    gt_distances: &[f32],
    returned_ids: &[PointId],
    returned_distances: &[f32],
    k: usize,
    relevant: usize,
) -> QueryQuality {
    score_query(
        &QueryInput {
            gt_ids,
            gt_distances,
            returned_ids,
            returned_distances,
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
    assert!(close(q.recall_distance, 1.0));
}

#[test]
fn hand_computed_mixed_list() {
    // K = 4, r = 4: R = {0,1,2,3}. Returned: 11 (miss), 2 (hit), 12 (miss), 0 (hit).
    // DCG = 1/log2(3) + 1/log2(5); IDCG = 1 + 1/log2(3) + 1/2 + 1/log2(5).
    // AP = (1/2 + 2/4) / 4 = 0.25. Distance form: threshold = 4th true distance 4 + 1e-3;
    // distances 100, 3, 100, 1 → 2 of 4.
    let q = score(&[11, 2, 12, 0], 4, 4);
    check(
        &q,
        &Want {
            recall: 0.5,
            recall_distance: 0.5,
            precision: 0.5,
            reciprocal_rank: 0.5,
            ndcg: (disc(2) + disc(4)) / (disc(1) + disc(2) + disc(3) + disc(4)),
            average_precision: 0.25,
        },
    );
}

/// The points of the duplicated-nearest-neighbour cases: ids 0 and 1 are the same vector
/// at distance 1 from the query; id i ≥ 2 is at distance i; 20 is far away.
pub(super) fn duplicated_nn() -> (Vec<PointId>, Vec<f32>, Vec<PointId>, Vec<f32>) {
    let gt_ids: Vec<PointId> = (0..12).collect();
    let gt_d: Vec<f32> = (0..12u64).map(|i| i.max(1) as f32).collect();
    // The engine returns an irrelevant point first, then both copies.
    let ids: Vec<PointId> = vec![5, 0, 1, 6, 7, 8, 9, 10, 11, 20];
    let d: Vec<f32> = vec![5.0, 1.0, 1.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 100.0];
    (gt_ids, gt_d, ids, d)
}

#[test]
fn relevant_one_with_a_duplicated_nearest_neighbour() {
    // K = 10, r = 1. Ids 0 and 1 tie for the nearest distance: each alone is a true top-1,
    // so R has ONE element; the engine's first tied copy (0, at rank 2) takes the slot and
    // its second copy (1, rank 3) is an extra result, not a second true neighbour.
    // recall = 1/1; P@10 = 1/10; RR = 1/2; NDCG = (1/log2(3)) / 1 = 0.6309298;
    // AP = (1/2) / 1 = 0.5. Same as trec_eval with qrels {0}. (trec_eval with qrels {0, 1}
    // gives NDCG 0.6934 and map_cut_10 0.5833: see the next test; that set has 2 elements
    // and is no true top-1.)
    // Distance form: threshold = 10th true distance (id 9: 9) + 1e-3; distances
    // 5,1,1,6,7,8,9 pass, 10,11,100 do not → 7/10.
    // Today's code gave P 0.2, NDCG 1.0, AP 1.0 (clamped from 1.1309 and 1.1667) and
    // recall_distance 1.0 (threshold at the r-th distance instead of the K-th).
    let (g, gd, ids, d) = duplicated_nn();
    let q = score_with(&g, &gd, &ids, &d, 10, 1);
    check(
        &q,
        &Want {
            recall: 1.0,
            recall_distance: 0.7,
            precision: 0.1,
            reciprocal_rank: 0.5,
            ndcg: disc(2),
            average_precision: 0.5,
        },
    );
}

#[test]
fn relevant_two_with_a_duplicated_nearest_neighbour_gives_trec_eval_figures() {
    // K = 10, r = 2: both copies are the true top-2, R = {0, 1}, relevant at ranks 2, 3.
    // NDCG = (1/log2(3) + 1/log2(4)) / (1 + 1/log2(3)) = 1.1309298 / 1.6309298 = 0.6934264
    // AP = (1/2 + 2/3) / 2 = 0.5833333 — trec_eval's ndcg_cut_10 and map_cut_10 for
    // qrels {0, 1} and this run. recall = 2/2, P@10 = 2/10, RR = 1/2.
    // Distance form as above: 7/10 (today: threshold at the 2nd distance → 1.0).
    let (g, gd, ids, d) = duplicated_nn();
    let q = score_with(&g, &gd, &ids, &d, 10, 2);
    assert!((q.ndcg - 0.693).abs() < 5e-4 && (q.average_precision - 0.583).abs() < 5e-4);
    check(
        &q,
        &Want {
            recall: 1.0,
            recall_distance: 0.7,
            precision: 0.2,
            reciprocal_rank: 0.5,
            ndcg: (disc(2) + disc(3)) / (disc(1) + disc(2)),
            average_precision: (1.0 / 2.0 + 2.0 / 3.0) / 2.0,
        },
    );
}

#[test]
fn relevant_above_k() {
    // K = 3, r = 5: R = {0..4}. Returned 0 (hit), 7 (miss), 2 (hit).
    // recall = 2/5; P@3 = 2/3; RR = 1; NDCG = (1 + 1/log2(4)) / (1 + 1/log2(3) + 1/2)
    // = 1.5 / 2.1309298 = 0.7039181 (ideal over min(K, r) = 3 ranks);
    // AP = (1/1 + 2/3) / 5 = 0.3333333 (trec_eval divides by |R| = 5, not min(K, r) = 3:
    // today's code gave 0.5556). Distance form: threshold = 3rd true distance 3 + 1e-3;
    // distances 1, 8, 3 → 2/3 (today: threshold at the 5th → 0.4).
    let q = score(&[0, 7, 2], 3, 5);
    check(
        &q,
        &Want {
            recall: 0.4,
            recall_distance: 2.0 / 3.0,
            precision: 2.0 / 3.0,
            reciprocal_rank: 1.0,
            ndcg: (disc(1) + disc(3)) / (disc(1) + disc(2) + disc(3)),
            average_precision: (1.0 + 2.0 / 3.0) / 5.0,
        },
    );
}

#[test]
fn relevant_below_k() {
    // K = 5, r = 2: R = {0, 1}. Returned 3, 1, 0, 8, 9: relevant at ranks 2 and 3.
    // recall = 2/2; P@5 = 2/5; RR = 1/2; NDCG = (1/log2(3) + 1/2) / (1 + 1/log2(3))
    // = 0.6934264; AP = (1/2 + 2/3) / 2 = 0.5833333. Distance form: threshold = 5th true
    // distance 5 + 1e-3; distances 4, 2, 1, 9, 10 → 3/5 (today: 2nd distance → 1.0).
    let q = score(&[3, 1, 0, 8, 9], 5, 2);
    check(
        &q,
        &Want {
            recall: 1.0,
            recall_distance: 0.6,
            precision: 0.4,
            reciprocal_rank: 0.5,
            ndcg: (disc(2) + disc(3)) / (disc(1) + disc(2)),
            average_precision: (1.0 / 2.0 + 2.0 / 3.0) / 2.0,
        },
    );
    // A perfect list at K > r: every rank metric is 1, precision is r/K.
    let q = score(&[0, 1, 2, 3, 4], 5, 2);
    check(
        &q,
        &Want {
            recall: 1.0,
            recall_distance: 1.0,
            precision: 0.4,
            reciprocal_rank: 1.0,
            ndcg: 1.0,
            average_precision: 1.0,
        },
    );
}

#[test]
fn seed_convention_recall_at_10_of_100() {
    // With 100 relevant neighbours, a perfect top-10 has recall 0.10 and precision 1.0;
    // NDCG@10 is 1 (ideal over min(K, r) = 10 ranks) and AP@10 = 10 × 1 / 100 = 0.1
    // (trec_eval's map_cut_10; today's code divided by min(K, r) and gave 1.0).
    let g: Vec<PointId> = (0..100).collect();
    let gd: Vec<f32> = (1..=100).map(|d| d as f32).collect();
    let ids: Vec<PointId> = (0..10).collect();
    let d: Vec<f32> = (1..=10).map(|d| d as f32).collect();
    let q = score_with(&g, &gd, &ids, &d, 10, 100);
    check(
        &q,
        &Want {
            recall: 0.1,
            recall_distance: 1.0,
            precision: 1.0,
            reciprocal_rank: 1.0,
            ndcg: 1.0,
            average_precision: 0.1,
        },
    );
}

#[test]
fn duplicates_keep_their_rank_and_count_once() {
    // [0, 0, 1] at K = 3, r = 3: the repeat occupies rank 2 and is no new result, so it is
    // a miss there (as if the engine had returned a stranger). R = {0, 1, 2}; relevant
    // ranks 1 and 3. recall = 2/3; P@3 = 2/3; RR = 1; NDCG = (1 + 1/2) / (1 + 1/log2(3) +
    // 1/2) = 0.7039181; AP = (1 + 2/3) / 3 = 0.5555556. Distance form: 2 distinct results
    // within 3 + 1e-3 → 2/3 (ann-benchmarks would count the repeat twice: 3/3).
    // Today's code compacted the list to [0, 1] (NDCG 0.7654, AP 0.6667).
    let q = score(&[0, 0, 1], 3, 3);
    assert!(q.had_duplicates && q.short);
    let want = Want {
        recall: 2.0 / 3.0,
        recall_distance: 2.0 / 3.0,
        precision: 2.0 / 3.0,
        reciprocal_rank: 1.0,
        ndcg: (disc(1) + disc(3)) / (disc(1) + disc(2) + disc(3)),
        average_precision: (1.0 + 2.0 / 3.0) / 3.0,
    };
    check(&q, &want);
    // Entries past the K-th are not part of the answer, even when a repeat shortened it
    // (today's code pulled id 2 in from rank 4 and gave recall 1.0).
    let q = score(&[0, 0, 1, 2], 3, 3);
    assert!(q.had_duplicates && q.short);
    check(&q, &want);
}

#[test]
fn short_and_empty_lists_are_misses() {
    // K = 5, r = 5, two results 1, 0: recall = 2/5; P@5 = 2/5 (trec_eval's P_5 divides by
    // 5 whatever was returned); RR = 1; NDCG = (1 + 1/log2(3)) / IDCG5, IDCG5 = 1 +
    // 0.6309298 + 0.5 + 0.4306766 + 0.3868528 = 2.9484591 → 0.5531465; AP = (1 + 1) / 5.
    // Distance form: threshold 5 + 1e-3, 2 of 5 (the missing three count as misses,
    // ann-benchmarks pads them with +inf).
    let q = score(&[1, 0], 5, 5);
    assert!(q.short && !q.had_duplicates);
    check(
        &q,
        &Want {
            recall: 0.4,
            recall_distance: 0.4,
            precision: 0.4,
            reciprocal_rank: 1.0,
            ndcg: (disc(1) + disc(2)) / (1..=5).map(disc).sum::<f64>(),
            average_precision: 0.4,
        },
    );
    let q = score(&[], 3, 3);
    assert!(q.short && !q.hit);
    check(
        &q,
        &Want {
            recall: 0.0,
            recall_distance: 0.0,
            precision: 0.0,
            reciprocal_rank: 0.0,
            ndcg: 0.0,
            average_precision: 0.0,
        },
    );
}

#[test]
fn ties_extend_the_relevant_set() {
    // True top-2 is {0, 1} but id 7 is at the same distance as id 1: returning 7 is correct.
    let g = [0, 1, 7, 8];
    let gd = [1.0, 2.0, 2.0, 3.0];
    let q = score_with(&g, &gd, &[0, 7], &[1.0, 2.0], 2, 2);
    assert!(close(q.recall, 1.0) && close(q.ndcg, 1.0) && close(q.average_precision, 1.0));
    // A tie partner beyond the stored depth (id 99 at distance 2.0) also counts.
    let q = score_with(&g, &gd, &[0, 99], &[1.0, 2.0], 2, 2);
    assert!(close(q.recall, 1.0));
    // A stranger just beyond the boundary does not.
    let q = score_with(&g, &gd, &[0, 99], &[1.0, 2.5], 2, 2);
    assert!(close(q.recall, 0.5));
}

#[test]
fn tie_partners_fill_only_the_free_slots() {
    // K = r = 2; 0 is strictly closest (1.0), 1 and 7 tie at the boundary (2.0): a true
    // top-2 is {0, 1} or {0, 7}. Returning both tie partners but missing 0 is not a true
    // top-2: the first partner (7) takes the one boundary slot, 1 is a miss.
    // recall = 1/2; P@2 = 1/2; RR = 1; NDCG = 1 / (1 + 1/log2(3)) = 0.6131472; AP = 1/2.
    // The distance form is ann-benchmarks' and counts both: threshold 2 + 1e-3 → 2/2.
    // Today's code counted both as hits: recall 1.0.
    let g = [0, 1, 7, 8];
    let gd = [1.0, 2.0, 2.0, 3.0];
    let q = score_with(&g, &gd, &[7, 1], &[2.0, 2.0], 2, 2);
    check(
        &q,
        &Want {
            recall: 0.5,
            recall_distance: 1.0,
            precision: 0.5,
            reciprocal_rank: 1.0,
            ndcg: disc(1) / (disc(1) + disc(2)),
            average_precision: 0.5,
        },
    );
    // The same tie with r = 3 has room for both partners: {0, 1, 7} is the true top-3.
    let q = score_with(&g, &gd, &[7, 1], &[2.0, 2.0], 2, 3);
    check(
        &q,
        &Want {
            // recall 2/3; P@2 = 1; NDCG: ideal over min(2, 3) ranks → 1; AP = (1 + 1) / 3.
            recall: 2.0 / 3.0,
            recall_distance: 1.0,
            precision: 1.0,
            reciprocal_rank: 1.0,
            ndcg: 1.0,
            average_precision: 2.0 / 3.0,
        },
    );
}

#[test]
fn distance_form_uses_epsilon() {
    // True 2nd distance 2.0; a stranger at 2.0005 passes the distance form, not id overlap.
    let q = score_with(&[0, 1], &[1.0, 2.0], &[0, 50], &[1.0, 2.0005], 2, 2);
    assert!(close(q.recall, 0.5));
    assert!(close(q.recall_distance, 1.0));
    // At 2.002 it is beyond 2 + 1e-3.
    let q = score_with(&[0, 1], &[1.0, 2.0], &[0, 50], &[1.0, 2.002], 2, 2);
    assert!(close(q.recall_distance, 0.5));
}

#[test]
fn ids_outside_the_dataset_are_misses() {
    // The harness gives NaN to ids it cannot find: never relevant, never within threshold.
    let q = score_with(&[0, 1], &[1.0, 2.0], &[0, 77], &[1.0, f32::NAN], 2, 2);
    assert!(close(q.recall, 0.5) && close(q.recall_distance, 0.5));
}

#[test]
fn k_beyond_ground_truth_depth() {
    // Depth 10, K = 20, r = 20 → r = 10 (all the truth there is): the ten true neighbours
    // then ten strangers. recall 10/10, P@20 = 10/20, NDCG 1 (ideal over min(20, 10)),
    // AP = 10 × 1 / 10 = 1. The distance form needs a K-th true distance; with depth
    // 10 < K it uses the 10th (10 + 1e-3) and divides by 10.
    let ids: Vec<PointId> = (0..20).collect();
    let q = score(&ids, 20, 20);
    check(
        &q,
        &Want {
            recall: 1.0,
            recall_distance: 1.0,
            precision: 0.5,
            reciprocal_rank: 1.0,
            ndcg: 1.0,
            average_precision: 1.0,
        },
    );
}

#[test]
fn padded_ground_truth_of_a_tiny_base() {
    // A base of 3 points with K = 5: the truth row is padded with id MAX at +inf. Those are
    // no points: r = 3, and returning all three is perfect (today's code took r = 5, a
    // boundary of +inf and gave recall 0.6).
    let g = [0, 1, 2, PointId::MAX, PointId::MAX];
    let gd = [1.0, 2.0, 3.0, f32::INFINITY, f32::INFINITY];
    let q = score_with(&g, &gd, &[0, 1, 2], &[1.0, 2.0, 3.0], 5, 5);
    // Every live point came back: not short (three points cannot fill five slots).
    assert!(!q.short);
    assert!(score_with(&g, &gd, &[0, 1], &[1.0, 2.0], 5, 5).short);
    check(
        &q,
        &Want {
            recall: 1.0,
            recall_distance: 1.0,
            precision: 0.6,
            reciprocal_rank: 1.0,
            ndcg: 1.0,
            average_precision: 1.0,
        },
    );
}

/// An empty truth (nothing live, nothing passing the filter) has nothing to find: the query
/// is left out of the means, and a step of only such queries has undefined (NaN) means.
#[test]
fn queries_over_an_empty_truth_are_left_out_of_the_means() {
    let g = [PointId::MAX; 3];
    let gd = [f32::INFINITY; 3];
    let empty = score_with(&g, &gd, &[], &[], 3, 3);
    assert!(!empty.defined && !empty.short);
    let found = score(&[0, 1], 2, 2);
    assert!(found.defined);
    let s = summarize(&[found, empty], 2, 2);
    assert_eq!((s.queries, s.queries_without_truth), (2, 1));
    assert!(close(s.recall, 1.0) && close(s.ndcg, 1.0) && close(s.recall_min, 1.0));
    let none = summarize(&[empty, empty], 3, 3);
    assert_eq!(none.queries_without_truth, 2);
    for v in [
        none.recall,
        none.ndcg,
        none.mrr,
        none.map,
        none.precision,
        none.hit_rate,
    ] {
        assert!(v.is_nan());
    }
    assert!(none.recall_min.is_nan() && none.relative_distance_error.is_none());
    // Undefined means are `null` in JSON and read back undefined.
    let json = serde_json::to_value(&none).unwrap();
    assert!(json["recall"].is_null() && json["ndcg"].is_null(), "{json}");
    let back: QualitySummary = serde_json::from_value(json).unwrap();
    assert!(back.recall.is_nan() && back.queries_without_truth == 2);
}

#[test]
fn summary_means() {
    let a = score(&[0, 1], 2, 2);
    let b = score(&[11, 12], 2, 2);
    let s = summarize(&[a, b], 2, 2);
    assert!(close(s.recall, 0.5) && close(s.hit_rate, 0.5) && close(s.recall_min, 0.0));
    assert_eq!(s.queries, 2);
}

#[test]
fn epsilon_recalls_scale_the_kth_true_distance() {
    // K = 2, true distances 1 and 2: "epsilon" admits ≤ 2 × 1.01 = 2.02, "largeepsilon"
    // ≤ 2 × 1.1 = 2.2, knn recall ≤ 2.001. Returned: the nearest (1.0) and strangers at
    // 2.01, 2.1 and 2.3 in turn.
    let at = |d: f32| score_with(&[0, 1], &[1.0, 2.0], &[0, 50], &[1.0, d], 2, 2);
    let q = at(2.01);
    assert!(close(q.recall_distance, 0.5));
    assert!(close(q.recall_epsilon, 1.0) && close(q.recall_large_epsilon, 1.0));
    let q = at(2.1);
    assert!(close(q.recall_epsilon, 0.5) && close(q.recall_large_epsilon, 1.0));
    let q = at(2.3);
    assert!(close(q.recall_epsilon, 0.5) && close(q.recall_large_epsilon, 0.5));
}

#[test]
fn epsilon_recalls_count_a_repeat_once_and_cap_at_a_shallow_truth() {
    // The nearest id twice: ann-benchmarks would count 2 of 2, ragdbeval 1 of 2.
    let q = score_with(&[0, 1], &[1.0, 2.0], &[0, 0], &[1.0, 1.0], 2, 2);
    assert!(close(q.recall_epsilon, 0.5) && close(q.recall_large_epsilon, 0.5));
    // Truth of depth 1 (padded), K = 2: threshold from the deepest true distance (1.0), two
    // results within 1.1 count as 1 of 1.
    let q = score_with(
        &[0, PointId::MAX],
        &[1.0, f32::INFINITY],
        &[0, 50],
        &[1.0, 1.05],
        2,
        2,
    );
    assert!(close(q.recall_epsilon, 1.0) && close(q.recall_large_epsilon, 1.0));
}

#[test]
fn relative_distance_error_is_a_ratio_of_sums_over_all_queries() {
    // Query a: true 1, 2, returned 1, 4 → sums 5 / 3. Query b: true 10, 20, returned 10, 20
    // → 30 / 30. rel = (5 + 30) / (3 + 30) = 35 / 33 = 1.0606; the mean of the per-query
    // ratios would be (5/3 + 1) / 2 = 1.3333.
    let a = score_with(&[0, 1], &[1.0, 2.0], &[0, 7], &[1.0, 4.0], 2, 2);
    let b = score_with(&[0, 1], &[10.0, 20.0], &[0, 1], &[10.0, 20.0], 2, 2);
    assert!(close(a.returned_distance_sum, 5.0) && close(a.true_distance_sum, 3.0));
    let s = summarize(&[a, b], 2, 2);
    let rel = s.relative_distance_error.unwrap();
    assert!(close(rel, 35.0 / 33.0), "{rel}");
    assert!(close(s.recall_epsilon.unwrap(), 0.75));
    // A short list, a repeat or an id without a distance is +inf at its rank, as
    // ann-benchmarks pads a short list: the step's rel is +inf.
    let short = score_with(&[0, 1], &[1.0, 2.0], &[0], &[1.0], 2, 2);
    let repeat = score_with(&[0, 1], &[1.0, 2.0], &[0, 0], &[1.0, 1.0], 2, 2);
    let stranger = score_with(&[0, 1], &[1.0, 2.0], &[0, 77], &[1.0, f32::NAN], 2, 2);
    for q in [short, repeat, stranger] {
        let s = summarize(&[b, q], 2, 2);
        assert_eq!(s.relative_distance_error, Some(f64::INFINITY));
    }
    // True distances summing below 0.01: +inf (ann-benchmarks' guard).
    let tiny = score_with(&[0, 1], &[0.001, 0.002], &[0, 1], &[0.001, 0.002], 2, 2);
    assert_eq!(
        summarize(&[tiny], 2, 2).relative_distance_error,
        Some(f64::INFINITY)
    );
    // A shallow truth stops both sums at its depth (ann-benchmarks' zip).
    let shallow = score_with(
        &[0, PointId::MAX],
        &[2.0, f32::INFINITY],
        &[5],
        &[3.0],
        2,
        2,
    );
    assert!(close(shallow.returned_distance_sum, 3.0) && close(shallow.true_distance_sum, 2.0));
}

#[test]
fn relative_distance_error_round_trips_through_json_and_old_files_lack_it() {
    let q = score_with(&[0, 1], &[1.0, 2.0], &[0], &[1.0], 2, 2);
    let s = summarize(&[q], 2, 2);
    let json = serde_json::to_string(&s).unwrap();
    let back: QualitySummary = serde_json::from_str(&json).unwrap();
    assert_eq!(back.relative_distance_error, Some(f64::INFINITY));
    assert_eq!(back, s);
    let mut old = serde_json::to_value(&s).unwrap();
    for key in [
        "recall_epsilon",
        "recall_large_epsilon",
        "relative_distance_error",
    ] {
        old.as_object_mut().unwrap().remove(key);
    }
    let old: QualitySummary = serde_json::from_value(old).unwrap();
    assert_eq!(old.relative_distance_error, None);
    assert_eq!(old.recall_epsilon, None);
}
