//! Generated cases of the parent module's scoring: many ties, near misses, repeats and
//! short lists, checked against ann-benchmarks' recall and against the bounds every figure
//! must keep. Helpers shared with the hand-computed cases are in `tests.rs`.

use super::tests::{close, dist_of, duplicated_nn, gt, score_with};
use super::*;

/// Truth ids and distances, returned ids and distances, K, --relevant.
type Case = (Vec<PointId>, Vec<f32>, Vec<PointId>, Vec<f32>, usize, usize);

/// SplitMix64, for the generated cases below.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A generated query: a truth with many ties (distances on a coarse grid, sorted by
/// distance then id as ragdbeval stores them) and a returned list mixing true neighbours,
/// tie partners beyond the depth, strangers, near misses within 1e-3 and (optionally)
/// repeats.
fn generated_case(rng: &mut Rng, repeats: bool) -> Case {
    let depth = 1 + rng.below(15) as usize;
    let mut gd: Vec<f32> = (0..depth).map(|_| (1 + rng.below(6)) as f32).collect();
    gd.sort_by(f32::total_cmp);
    let g: Vec<PointId> = (0..depth as PointId).collect();
    let k = 1 + rng.below(12) as usize;
    let relevant = 1 + rng.below(16) as usize;
    let len = rng.below(k as u64 + 3) as usize;
    let mut ids = Vec::new();
    let mut d = Vec::new();
    let mut stranger = 1000;
    for _ in 0..len {
        match rng.below(5) {
            0 | 1 => {
                let i = rng.below(depth as u64) as usize;
                if !repeats && ids.contains(&g[i]) {
                    continue;
                }
                ids.push(g[i]);
                d.push(gd[i]);
            }
            2 => {
                // A point the truth does not list, at or beyond its last distance.
                stranger += 1;
                ids.push(stranger);
                d.push(gd[depth - 1] + rng.below(3) as f32);
            }
            3 => {
                stranger += 1;
                ids.push(stranger);
                d.push(gd[rng.below(depth as u64) as usize] + 0.0005);
            }
            _ if repeats && !ids.is_empty() => {
                let j = rng.below(ids.len() as u64) as usize;
                ids.push(ids[j]);
                d.push(d[j]);
            }
            _ => {
                stranger += 1;
                ids.push(stranger);
                d.push(f32::NAN);
            }
        }
    }
    (g, gd, ids, d, k, relevant)
}

/// ann-benchmarks' `get_recall_values` with `knn_threshold` for one query, transcribed
/// (ann_benchmarks/plotting/metrics.py): run distances are the first `count` results,
/// padded with +inf when fewer came back (results.py); threshold = the `count`-th true
/// distance + 1e-3; recall = results within it / count.
fn ann_benchmarks_knn_recall(true_d: &[f32], run_d: &[f32], count: usize) -> f64 {
    let t = f64::from(true_d[count - 1]) + 1e-3;
    let actual = (0..count)
        .map(|i| run_d.get(i).copied().unwrap_or(f32::INFINITY))
        .filter(|d| f64::from(*d) <= t)
        .count();
    actual as f64 / count as f64
}

#[test]
fn distance_form_is_ann_benchmarks_knn() {
    // On lists without repeats and a truth at least K deep, recall_distance must be exactly
    // ann-benchmarks' knn recall, whatever --relevant is (today's code used the r-th
    // true distance and divided by r).
    let mut rng = Rng(7);
    let mut compared = 0;
    for _ in 0..5000 {
        let (g, gd, ids, d, k, relevant) = generated_case(&mut rng, false);
        if g.len() < k {
            continue;
        }
        let q = score_with(&g, &gd, &ids, &d, k, relevant);
        let want = ann_benchmarks_knn_recall(&gd, &d, k);
        assert!(
            close(q.recall_distance, want),
            "k {k} r {relevant} truth {gd:?} run {d:?}: {} vs {want}",
            q.recall_distance
        );
        compared += 1;
    }
    assert!(compared > 1000, "{compared}");
}

/// The inputs of the hand-computed tests above, by name, for the property check below and
/// for `scripts/check_metrics_trec.py`.
fn named_cases() -> Vec<(&'static str, Case)> {
    let (g, gd) = gt();
    let line = |ids: &[PointId], k: usize, r: usize| -> Case {
        (g.clone(), gd.clone(), ids.to_vec(), dist_of(ids), k, r)
    };
    let (dg, dgd, dids, dd) = duplicated_nn();
    let tie_g: Vec<PointId> = vec![0, 1, 7, 8];
    let tie_d: Vec<f32> = vec![1.0, 2.0, 2.0, 3.0];
    let g100: Vec<PointId> = (0..100).collect();
    let d100: Vec<f32> = (1..=100).map(|d| d as f32).collect();
    vec![
        ("perfect_list", line(&[0, 1, 2, 3, 4], 5, 5)),
        ("mixed_list", line(&[11, 2, 12, 0], 4, 4)),
        (
            "duplicated_nn_r1",
            (dg.clone(), dgd.clone(), dids.clone(), dd.clone(), 10, 1),
        ),
        ("duplicated_nn_r2", (dg, dgd, dids, dd, 10, 2)),
        ("relevant_above_k", line(&[0, 7, 2], 3, 5)),
        ("relevant_below_k", line(&[3, 1, 0, 8, 9], 5, 2)),
        ("relevant_below_k_perfect", line(&[0, 1, 2, 3, 4], 5, 2)),
        (
            "ten_of_100",
            (
                g100,
                d100,
                (0..10).collect(),
                (1..=10).map(|d| d as f32).collect(),
                10,
                100,
            ),
        ),
        ("repeat", line(&[0, 0, 1], 3, 3)),
        ("repeat_then_more", line(&[0, 0, 1, 2], 3, 3)),
        ("short", line(&[1, 0], 5, 5)),
        ("empty", line(&[], 3, 3)),
        (
            "tie_partners_r2",
            (
                tie_g.clone(),
                tie_d.clone(),
                vec![7, 1],
                vec![2.0, 2.0],
                2,
                2,
            ),
        ),
        (
            "tie_partners_r3",
            (tie_g, tie_d, vec![7, 1], vec![2.0, 2.0], 2, 3),
        ),
        ("k_beyond_depth", line(&(0..20).collect::<Vec<_>>(), 20, 20)),
    ]
}

#[test]
fn figures_are_consistent_and_never_exceed_one() {
    // No clamping hides a wrong definition: over the named cases and generated lists with
    // ties, repeats, strangers and short lists every figure stays in [0, 1], recall and
    // precision count the same hits (recall·r = precision·K), and hit rate, RR and hits
    // agree. With RAGDBEVAL_METRIC_CASES=FILE it also writes every case and its figures
    // as JSON lines, which scripts/check_metrics_trec.py scores with trec_eval.
    let mut rng = Rng(11);
    let generated = (0..20000).map(|i| {
        let name = if i < 3000 { "generated" } else { "" };
        (name, generated_case(&mut rng, true))
    });
    let mut dump = Vec::new();
    for (name, (g, gd, ids, d, k, relevant)) in named_cases().into_iter().chain(generated) {
        let q = score_with(&g, &gd, &ids, &d, k, relevant);
        let r = relevant.min(gd.iter().filter(|d| d.is_finite()).count()) as f64;
        if !name.is_empty() {
            dump.push(serde_json::json!({
                "name": name, "k": k, "relevant": relevant,
                "gt_ids": g, "gt_distances": gd, "ids": ids, "distances": d,
                "recall": q.recall, "recall_distance": q.recall_distance,
                "recall_epsilon": q.recall_epsilon,
                "recall_large_epsilon": q.recall_large_epsilon,
                "rel": summarize(&[q], k, relevant).relative_distance_error,
                "precision": q.precision, "f1": q.f1, "recip_rank": q.reciprocal_rank,
                "ndcg": q.ndcg, "ap": q.average_precision,
            }));
        }
        for (name, v) in [
            ("recall", q.recall),
            ("recall_distance", q.recall_distance),
            ("recall_epsilon", q.recall_epsilon),
            ("recall_large_epsilon", q.recall_large_epsilon),
            ("precision", q.precision),
            ("f1", q.f1),
            ("reciprocal_rank", q.reciprocal_rank),
            ("ndcg", q.ndcg),
            ("average_precision", q.average_precision),
        ] {
            assert!(
                (0.0..=1.0 + 1e-12).contains(&v),
                "{name} = {v}: k {k} r {relevant} truth {gd:?} run {ids:?} {d:?}"
            );
        }
        assert!(
            (q.recall * r - q.precision * k as f64).abs() < 1e-9,
            "hits differ: {q:?} k {k} r {relevant} truth {gd:?} run {ids:?} {d:?}"
        );
        assert_eq!(q.hit, q.recall > 0.0);
        assert_eq!(q.hit, q.reciprocal_rank > 0.0);
        // A relevant first result is the only way to a perfect NDCG or AP.
        if close(q.ndcg, 1.0) || close(q.average_precision, 1.0) {
            assert!(close(q.reciprocal_rank, 1.0), "{q:?}");
        }
    }
    if let Ok(path) = std::env::var("RAGDBEVAL_METRIC_CASES") {
        let lines: Vec<String> = dump.iter().map(|v| v.to_string()).collect();
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    }
}
