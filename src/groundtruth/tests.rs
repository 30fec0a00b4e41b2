//! Unit tests of the parent module.

use super::kernel::{KnnOptions, knn, knn_counted};
use super::*;
use crate::rng::SplitMix64;

fn random(n: usize, dim: usize, seed: u64) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    (0..n * dim).map(|_| rng.next_f32() * 2.0 - 1.0).collect()
}

fn check_against_naive(distance: Distance, n: usize, nq: usize, dim: usize, k: usize) {
    let base = random(n, dim, 1);
    let queries = random(nq, dim, 2);
    let ids: Vec<PointId> = (0..n as PointId).collect();
    let gt = exact_knn(
        &BaseSet {
            vectors: &base,
            ids: None,
            dim,
        },
        &queries,
        distance,
        k,
        &|_| {},
    );
    for q in 0..nq {
        let want = naive_knn(
            &base,
            &ids,
            dim,
            &queries[q * dim..(q + 1) * dim],
            distance,
            k,
        );
        let got: Vec<(PointId, f32)> = gt
            .ids_of(q)
            .iter()
            .copied()
            .zip(gt.distances_of(q).iter().copied())
            .collect();
        assert_eq!(got, want, "{distance} query {q}");
    }
}

#[test]
fn matches_naive_on_every_metric() {
    for d in [Distance::Euclidean, Distance::Angular, Distance::Dot] {
        check_against_naive(d, 3000, 37, 19, 10);
    }
}

/// A base scanned in chunks (as one larger than memory is) gives the same truth as one
/// scanned whole, ties and duplicates included, and progress reaches every query.
#[test]
fn a_base_scanned_in_chunks_matches_the_whole_scan() {
    let dim = 19;
    let n = 5000;
    let mut base = random(n, dim, 11);
    // Duplicates across chunk boundaries (chunks are 1024 rows here): ties by id.
    for (from, to) in [(10usize, 1500usize), (10, 3100), (2047, 2048), (4999, 0)] {
        let row = base[from * dim..(from + 1) * dim].to_vec();
        base[to * dim..(to + 1) * dim].copy_from_slice(&row);
    }
    let mut queries = random(41, dim, 12);
    queries[..dim].copy_from_slice(&base[10 * dim..11 * dim]);
    let set = BaseSet {
        vectors: &base,
        ids: None,
        dim,
    };
    let ids: Vec<PointId> = (0..n as PointId).collect();
    for distance in [Distance::Euclidean, Distance::Angular, Distance::Dot] {
        let whole = exact_knn(&set, &queries, distance, 10, &|_| {});
        let seen = std::sync::atomic::AtomicUsize::new(0);
        let chunked = knn(
            &Base::All(&set),
            &queries,
            distance,
            10,
            KnnOptions {
                chunk_bytes: 1024 * dim * 4,
                ..KnnOptions::default()
            },
            &|d| {
                seen.fetch_max(d, std::sync::atomic::Ordering::Relaxed);
            },
        );
        assert_eq!(chunked, whole, "{distance}");
        assert_eq!(
            seen.into_inner(),
            41,
            "{distance}: progress reaches every query"
        );
        for q in 0..41 {
            let want = naive_knn(
                &base,
                &ids,
                dim,
                &queries[q * dim..(q + 1) * dim],
                distance,
                10,
            );
            let got: Vec<(PointId, f32)> = chunked
                .ids_of(q)
                .iter()
                .copied()
                .zip(chunked.distances_of(q).iter().copied())
                .collect();
            assert_eq!(got, want, "{distance} query {q}");
        }
    }
}

#[test]
fn ties_are_broken_by_id() {
    // Eight copies of the same vector and one query equal to it: all eight are at distance
    // zero, so the top-5 must be the five smallest ids, in order.
    let dim = 4;
    let mut base = random(50, dim, 3);
    let dup = [0.5f32, -0.25, 0.125, 1.0];
    for id in [40usize, 3, 17, 9, 44, 21, 30, 12] {
        base[id * dim..(id + 1) * dim].copy_from_slice(&dup);
    }
    let gt = exact_knn(
        &BaseSet {
            vectors: &base,
            ids: None,
            dim,
        },
        &dup,
        Distance::Euclidean,
        5,
        &|_| {},
    );
    assert_eq!(gt.ids_of(0), &[3, 9, 12, 17, 21]);
    assert!(gt.distances_of(0).iter().all(|d| *d == 0.0));
}

#[test]
fn row_selection_matches_a_copied_subset() {
    let dim = 7;
    let base = random(2000, dim, 5);
    let queries = random(9, dim, 6);
    // Every third row, with ids that are not row numbers.
    let rows: Vec<usize> = (0..2000).step_by(3).collect();
    let ids: Vec<PointId> = rows.iter().map(|r| *r as PointId * 10).collect();
    let mut copy = Vec::new();
    for r in &rows {
        copy.extend_from_slice(&base[r * dim..(r + 1) * dim]);
    }
    for d in [Distance::Euclidean, Distance::Angular, Distance::Dot] {
        let selection = RowSelection {
            vectors: &base,
            rows: &rows,
            ids: &ids,
            dim,
        };
        let a = exact_knn(&selection, &queries, d, 15, &|_| {});
        let copied = BaseSet {
            vectors: &copy,
            ids: Some(&ids),
            dim,
        };
        let b = exact_knn(&copied, &queries, d, 15, &|_| {});
        assert_eq!(a, b, "{d}");
    }
}

/// Rows read in place between records' headers give the truth of the same rows copied out.
#[test]
fn strided_rows_match_the_copied_rows() {
    let dim = 9;
    let stride = dim + 1;
    let rows = 3000;
    let file = random(rows * stride, 1, 11);
    let queries = random(13, dim, 12);
    let copy: Vec<f32> = file
        .chunks_exact(stride)
        .flat_map(|r| r[1..].iter().copied())
        .collect();
    for d in [Distance::Euclidean, Distance::Angular, Distance::Dot] {
        let strided = StridedBase {
            vectors: &file[1..],
            rows,
            stride,
            dim,
        };
        let a = exact_knn(&strided, &queries, d, 20, &|_| {});
        let copied = BaseSet {
            vectors: &copy,
            ids: None,
            dim,
        };
        assert_eq!(a, exact_knn(&copied, &queries, d, 20, &|_| {}), "{d}");
    }
}

#[test]
fn explicit_ids_and_short_base() {
    let dim = 2;
    let base = vec![0.0, 0.0, 1.0, 0.0, 5.0, 5.0];
    let ids = [10, 20, 30];
    let gt = exact_knn(
        &BaseSet {
            vectors: &base,
            ids: Some(&ids),
            dim,
        },
        &[0.9, 0.0],
        Distance::Euclidean,
        4,
        &|_| {},
    );
    assert_eq!(gt.ids_of(0), &[20, 10, 30, PointId::MAX]);
    assert!((gt.distances_of(0)[0] - 0.1).abs() < 1e-6);
    assert!(gt.distances_of(0)[3].is_infinite());
}

// ---- Exactness against brute force (defect: f32 selection dropped true neighbours) ----
//
// The rule tested: the ground truth must equal `naive_knn` over every point, ids *and*
// f32 distances (same `Distance::between`, same (distance, id) order). That is what
// "exact" means for a harness that stores f32 distances. Independently, the result is
// checked against a float64 brute force: position by position the float64 distances agree
// within `f64_tolerance` (a bound on the rounding of the f32 re-rank, written here
// independently of the implementation), nothing clearly closer than the k-th is missing,
// and equal float64 distances are ordered by id.

/// Gaussian vectors N(mean, sd²), scaled by `scale` afterwards.
fn gaussian(n: usize, dim: usize, mean: f32, sd: f32, scale: f32, seed: u64) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    (0..n * dim)
        .map(|_| (mean + sd * rng.next_gaussian()) * scale)
        .collect()
}

/// `Distance::between` in float64, same conventions (a zero norm gives angular 1).
fn distance_f64(distance: Distance, a: &[f32], b: &[f32]) -> f64 {
    let dot =
        |x: &[f32], y: &[f32]| -> f64 { x.iter().zip(y).map(|(p, q)| *p as f64 * *q as f64).sum() };
    match distance {
        Distance::Euclidean => a
            .iter()
            .zip(b)
            .map(|(p, q)| (*p as f64 - *q as f64).powi(2))
            .sum::<f64>()
            .sqrt(),
        Distance::Angular => {
            let denom = (dot(a, a) * dot(b, b)).sqrt();
            if denom == 0.0 {
                1.0
            } else {
                1.0 - dot(a, b) / denom
            }
        }
        Distance::Dot => -dot(a, b),
    }
}

/// How far an f32 `Distance::between` may be from the float64 value, with a factor 4 to
/// spare: relative for euclidean (the differences are rounded, not the coordinates),
/// absolute for angular, |q|·max|x| for dot.
fn f64_tolerance(distance: Distance, dim: usize, query: &[f32], base: &[f32], kth: f64) -> f64 {
    let u = f32::EPSILON as f64 / 2.0;
    let norm = |x: &[f32]| x.iter().map(|v| (*v as f64).powi(2)).sum::<f64>().sqrt();
    match distance {
        Distance::Euclidean => 4.0 * (dim + 8) as f64 * u * kth.abs() + 1e-30,
        Distance::Angular => 4.0 * (2 * dim + 9) as f64 * u,
        Distance::Dot => {
            let max = base.chunks_exact(dim).map(norm).fold(0.0, f64::max);
            4.0 * (dim + 2) as f64 * u * norm(query) * max
        }
    }
}

/// A case under test: the `k` nearest of `queries` under `distance` over `base` (`dim`
/// values a row), whose row r has id `ids[r]`.
#[derive(Clone, Copy)]
struct Case<'a> {
    distance: Distance,
    base: &'a [f32],
    ids: &'a [PointId],
    dim: usize,
    queries: &'a [f32],
    k: usize,
}

/// Asserts that `gt` is the exact top-k of the case's queries over its base; panics with
/// the number of top-k entries that differ from brute force.
fn assert_exact(label: &str, case: Case<'_>, gt: &GroundTruth) {
    let Case {
        distance,
        base,
        ids,
        dim,
        queries,
        k,
    } = case;
    let nq = queries.len() / dim;
    assert_eq!(gt.queries(), nq, "{label}");
    // 1. Equal to the f32 brute force.
    let mut differ = 0;
    let mut first = None;
    for q in 0..nq {
        let query = &queries[q * dim..(q + 1) * dim];
        let want = naive_knn(base, ids, dim, query, distance, k);
        for slot in 0..k {
            let got = (gt.ids_of(q)[slot], gt.distances_of(q)[slot]);
            let expect = want
                .get(slot)
                .copied()
                .unwrap_or((PointId::MAX, f32::INFINITY));
            if got != expect {
                differ += 1;
                first.get_or_insert((q, slot, got, expect));
            }
        }
    }
    assert!(
        differ == 0,
        "{label}: {differ} of {} top-{k} entries differ from brute force (first: query, \
         slot, got, want = {:?})",
        nq * k,
        first
    );
    // 2. Against float64.
    let n = base.len() / dim;
    for q in 0..nq {
        let query = &queries[q * dim..(q + 1) * dim];
        let mut all: Vec<(f64, PointId)> = (0..n)
            .map(|r| {
                (
                    distance_f64(distance, query, &base[r * dim..(r + 1) * dim]),
                    ids[r],
                )
            })
            .collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let kk = k.min(n);
        let kth = all[kk - 1].0;
        let tol = f64_tolerance(distance, dim, query, base, kth);
        let row_of = |id: PointId| ids.iter().position(|i| *i == id).unwrap();
        let vector = |id: PointId| &base[row_of(id) * dim..(row_of(id) + 1) * dim];
        let d64 = |id: PointId| all.iter().find(|e| e.1 == id).map(|e| e.0).unwrap();
        // Equal float64 distances must be ordered by id when the vectors are identical
        // (then the f32 distances are bit-identical too). Distinct vectors at equal float64
        // distance may differ in f32 rounding (summation order), so for them only the
        // tolerance applies.
        let tie = |a: PointId, b: PointId| d64(a) == d64(b) && vector(a) == vector(b);
        let got = &gt.ids_of(q)[..kk];
        for (slot, id) in got.iter().enumerate() {
            let d = d64(*id);
            assert!(
                (d - all[slot].0).abs() <= tol,
                "{label} query {q} slot {slot}: f64 distance {d} vs brute force {} (tol {tol})",
                all[slot].0
            );
            if slot > 0 {
                let prev = d64(got[slot - 1]);
                assert!(prev <= d + tol, "{label} query {q}: out of order at {slot}");
                if tie(got[slot - 1], *id) {
                    assert!(
                        got[slot - 1] < *id,
                        "{label} query {q}: tie not by id at {slot}"
                    );
                }
            }
        }
        for (d, id) in &all {
            if !got.contains(id) {
                assert!(
                    *d >= kth - tol,
                    "{label} query {q}: missing id {id} at {d} < {kth}"
                );
                if tie(*id, got[kk - 1]) {
                    assert!(*id > got[kk - 1], "{label} query {q}: tie at the boundary");
                }
            }
        }
    }
}

fn run_exact(label: &str, distance: Distance, base: &[f32], dim: usize, queries: &[f32], k: usize) {
    let ids: Vec<PointId> = (0..(base.len() / dim) as PointId).collect();
    let set = BaseSet {
        vectors: base,
        ids: None,
        dim,
    };
    let gt = exact_knn(&set, queries, distance, k, &|_| {});
    let case = Case {
        distance,
        base,
        ids: &ids,
        dim,
        queries,
        k,
    };
    assert_exact(label, case, &gt);
}

const METRICS: [Distance; 3] = [Distance::Euclidean, Distance::Angular, Distance::Dot];

#[test]
fn exact_on_offset_data_euclidean() {
    // |x|² ≈ 32·10⁶ (or 10⁸) dwarfs the neighbour distances (≈ 32): in the uncentred f32
    // score |x|² − 2q·x their differences are below rounding.
    for mean in [1000.0, 10000.0] {
        let base = gaussian(2000, 32, mean, 1.0, 1.0, 11);
        let queries = gaussian(200, 32, mean, 1.0, 1.0, 12);
        run_exact(
            &format!("N({mean},1) euclidean"),
            Distance::Euclidean,
            &base,
            32,
            &queries,
            10,
        );
    }
}

#[test]
fn exact_on_offset_data_angular_and_dot() {
    for mean in [1000.0, 10000.0] {
        let base = gaussian(2000, 32, mean, 1.0, 1.0, 13);
        let queries = gaussian(200, 32, mean, 1.0, 1.0, 14);
        for d in [Distance::Angular, Distance::Dot] {
            run_exact(&format!("N({mean},1) {d}"), d, &base, 32, &queries, 10);
        }
    }
}

#[test]
fn exact_on_scaled_data() {
    for scale in [1e-3f32, 1e4] {
        let base = gaussian(2000, 32, 0.0, 1.0, scale, 15);
        let queries = gaussian(50, 32, 0.0, 1.0, scale, 16);
        for d in METRICS {
            run_exact(&format!("scale {scale} {d}"), d, &base, 32, &queries, 10);
        }
        // Scaled and offset at once.
        let base = gaussian(2000, 32, 100.0, 1.0, scale, 17);
        let queries = gaussian(50, 32, 100.0, 1.0, scale, 18);
        for d in METRICS {
            run_exact(
                &format!("scale {scale} offset {d}"),
                d,
                &base,
                32,
                &queries,
                10,
            );
        }
    }
}

#[test]
fn exact_on_duplicate_heavy_data() {
    // 3000 rows drawn from 20 distinct vectors: ~150 exact ties per group, more than any
    // fixed candidate margin; the top-k must be the smallest ids of the nearest group.
    let dim = 16;
    let distinct = gaussian(20, dim, 50.0, 1.0, 1.0, 19);
    let mut rng = SplitMix64::new(20);
    let mut base = Vec::new();
    for _ in 0..3000 {
        let g = rng.below(20) as usize;
        base.extend_from_slice(&distinct[g * dim..(g + 1) * dim]);
    }
    // Queries: some equal to a group, some near one.
    let mut queries = distinct[..5 * dim].to_vec();
    queries.extend(gaussian(5, dim, 50.0, 1.0, 1.0, 21));
    for d in METRICS {
        run_exact(&format!("duplicates {d}"), d, &base, dim, &queries, 10);
        run_exact(
            &format!("duplicates {d} k=200"),
            d,
            &base,
            dim,
            &queries,
            200,
        );
    }
}

#[test]
fn exact_on_offset_row_selection() {
    // A live set (every other row, ids ≠ rows) must get the same guarantee.
    let dim = 32;
    let base = gaussian(4000, dim, 1000.0, 1.0, 1.0, 22);
    let queries = gaussian(100, dim, 1000.0, 1.0, 1.0, 23);
    let rows: Vec<usize> = (0..4000).step_by(2).collect();
    let ids: Vec<PointId> = rows.iter().map(|r| *r as PointId * 7 + 3).collect();
    let mut copy = Vec::new();
    for r in &rows {
        copy.extend_from_slice(&base[r * dim..(r + 1) * dim]);
    }
    for d in METRICS {
        let selection = RowSelection {
            vectors: &base,
            rows: &rows,
            ids: &ids,
            dim,
        };
        let gt = exact_knn(&selection, &queries, d, 10, &|_| {});
        let case = Case {
            distance: d,
            base: &copy,
            ids: &ids,
            dim,
            queries: &queries,
            k: 10,
        };
        assert_exact(&format!("rows {d}"), case, &gt);
    }
}

#[test]
fn candidates_stay_near_k() {
    // The bound must not degenerate into keeping everything: centring keeps the euclidean
    // slack at the scale of the spread (uncentred, |x|² ≈ 3·10⁹ makes the slack larger
    // than all distances and every item a candidate), and on spread-out data the slack
    // costs only a few extra re-ranks per query.
    let cases = [
        (
            Distance::Euclidean,
            gaussian(2000, 32, 10000.0, 1.0, 1.0, 24),
            10000.0,
        ),
        (Distance::Euclidean, random(3000 * 32, 1, 25), 0.0),
        (Distance::Angular, random(3000 * 32, 1, 26), 0.0),
        (Distance::Dot, random(3000 * 32, 1, 27), 0.0),
    ];
    for (distance, base, mean) in cases {
        let dim = 32;
        let queries = if mean > 0.0 {
            gaussian(100, dim, mean, 1.0, 1.0, 28)
        } else {
            random(100, dim, 28)
        };
        let set = BaseSet {
            vectors: &base,
            ids: None,
            dim,
        };
        let (_, reranked) = knn_counted(
            &Base::All(&set),
            &queries,
            distance,
            10,
            KnnOptions::default(),
            &|_| {},
        );
        let per_query = reranked as f64 / 100.0;
        assert!(
            per_query < 15.0,
            "{distance} mean {mean}: {per_query} candidates per query"
        );
    }
}

#[test]
fn exact_on_many_random_datasets() {
    // Property-style: random shapes, offsets, scales, duplicates, integer grids (exact
    // ties between distinct vectors), zero rows, k beyond n, live-set selections.
    let mut rng = SplitMix64::new(0xC0FFEE);
    for case in 0..400 {
        let n = 1 + rng.below(700) as usize;
        let dim = 1 + rng.below(40) as usize;
        let k = 1 + rng.below(40) as usize;
        let nq = 1 + rng.below(6) as usize;
        let offset = [0.0f32, 1.0, 100.0, 1000.0, 10000.0][rng.below(5) as usize];
        let scale = [1e-3f32, 1.0, 1e3][rng.below(3) as usize];
        let distance = METRICS[rng.below(3) as usize];
        let grid = rng.below(4) == 0;
        let seed = rng.next_u64();
        let draw = |count: usize, seed: u64| -> Vec<f32> {
            let mut r = SplitMix64::new(seed);
            (0..count * dim)
                .map(|_| {
                    let v = if grid {
                        r.below(3) as f32
                    } else {
                        r.next_gaussian()
                    };
                    (offset + v) * scale
                })
                .collect()
        };
        let mut base = draw(n, seed);
        // Duplicates: copy some rows over others.
        if rng.below(2) == 0 {
            for _ in 0..rng.below(n as u64 * 2) {
                let (from, to) = (rng.below(n as u64) as usize, rng.below(n as u64) as usize);
                let row = base[from * dim..(from + 1) * dim].to_vec();
                base[to * dim..(to + 1) * dim].copy_from_slice(&row);
            }
        }
        if rng.below(10) == 0 {
            let r = rng.below(n as u64) as usize;
            base[r * dim..(r + 1) * dim].fill(0.0);
        }
        let mut queries = draw(nq, seed ^ 0x5555);
        if rng.below(3) == 0 {
            // A query equal to a base row.
            let r = rng.below(n as u64) as usize;
            queries[..dim].copy_from_slice(&base[r * dim..(r + 1) * dim]);
        }
        let label = format!(
            "case {case}: n={n} dim={dim} k={k} nq={nq} offset={offset} scale={scale} \
             grid={grid} {distance}"
        );
        if rng.below(3) == 0 {
            let rows: Vec<usize> = (0..n).filter(|_| rng.below(4) != 0).collect();
            if rows.is_empty() {
                continue;
            }
            let ids: Vec<PointId> = rows.iter().map(|r| *r as PointId * 3 + 1).collect();
            let mut copy = Vec::new();
            for r in &rows {
                copy.extend_from_slice(&base[r * dim..(r + 1) * dim]);
            }
            let selection = RowSelection {
                vectors: &base,
                rows: &rows,
                ids: &ids,
                dim,
            };
            let gt = exact_knn(&selection, &queries, distance, k, &|_| {});
            let case = Case {
                distance,
                base: &copy,
                ids: &ids,
                dim,
                queries: &queries,
                k,
            };
            assert_exact(&label, case, &gt);
        } else {
            run_exact(&label, distance, &base, dim, &queries, k);
        }
    }
}

/// `uint8` data whose squared distances pass 2^24 (600 dimensions of 0 or 255, so about
/// 19.5M on average): an f32 sum rounds them, the truth must not. Every stored distance is the
/// square root of the integer squared distance (computed in i64), rounded once to f32; the
/// order is that of the integers wherever the f32 distances differ; and no point left out is
/// strictly closer than the k-th.
#[test]
fn uint8_truth_is_exact_where_f32_sums_round() {
    let (n, nq, dim, k) = (400, 12, 600, 10);
    let mut rng = SplitMix64::new(77);
    let mut bytes = |count: usize| -> Vec<f32> {
        (0..count)
            .map(|_| if rng.next_f32() < 0.5 { 0.0 } else { 255.0 })
            .collect()
    };
    let base = bytes(n * dim);
    let queries = bytes(nq * dim);
    let exact_sq = |q: usize, r: usize| -> i64 {
        queries[q * dim..(q + 1) * dim]
            .iter()
            .zip(&base[r * dim..(r + 1) * dim])
            .map(|(a, b)| (*a as i64 - *b as i64).pow(2))
            .sum()
    };
    let gt = exact_knn(
        &BaseSet {
            vectors: &base,
            ids: None,
            dim,
        },
        &queries,
        Distance::Euclidean,
        k,
        &|_| {},
    );
    let mut above = 0;
    for q in 0..nq {
        let (ids, dists) = (gt.ids_of(q), gt.distances_of(q));
        for (id, d) in ids.iter().zip(dists) {
            let sq = exact_sq(q, *id as usize);
            above += usize::from(sq > 1 << 24);
            assert_eq!(*d, (sq as f64).sqrt() as f32, "query {q} id {id}");
        }
        for w in dists.windows(2).zip(ids.windows(2)) {
            let (d, i) = w;
            if d[0] != d[1] {
                assert!(exact_sq(q, i[0] as usize) < exact_sq(q, i[1] as usize));
            }
        }
        let kth = exact_sq(q, ids[k - 1] as usize);
        for r in 0..n {
            if !ids.contains(&(r as PointId)) {
                let d = (exact_sq(q, r) as f64).sqrt() as f32;
                assert!(
                    d >= dists[k - 1],
                    "query {q}: row {r} ({}) beats the k-th ({kth})",
                    exact_sq(q, r)
                );
            }
        }
    }
    assert!(above > 0, "the case must reach sums an f32 rounds");
}

#[test]
fn exact_when_larger_norms_come_in_later_chunks() {
    // The bound follows the largest norm scanned so far (`ErrorBounds`): the first 2048 rows
    // are small (|x| ≈ 5), the last 2048 a tight cluster far out (|x| ≈ 8·10⁴), scanned in
    // chunks of 512. For queries in the cluster the inner products' rounding (≈ 10³) exceeds
    // the gaps between neighbours (≈ 10²): a slack kept from the small rows drops true
    // neighbours, so this fails unless every chunk that brings a larger norm widens it.
    let dim = 64;
    let mut rng = SplitMix64::new(61);
    let mut base: Vec<f32> = (0..2048 * dim)
        .map(|_| rng.next_f32() * 2.0 - 1.0)
        .collect();
    base.extend((0..2048 * dim).map(|_| 1.0e4 + rng.next_f32() * 1.0e-2));
    let queries: Vec<f32> = (0..20 * dim)
        .map(|_| 1.0e4 + rng.next_f32() * 1.0e-2)
        .collect();
    let ids: Vec<PointId> = (0..4096).collect();
    let set = BaseSet {
        vectors: &base,
        ids: None,
        dim,
    };
    let gt = knn(
        &Base::All(&set),
        &queries,
        Distance::Dot,
        10,
        KnnOptions {
            chunk_bytes: 512 * dim * 4,
            ..KnnOptions::default()
        },
        &|_| {},
    );
    let case = Case {
        distance: Distance::Dot,
        base: &base,
        ids: &ids,
        dim,
        queries: &queries,
        k: 10,
    };
    assert_exact("late norms", case, &gt);
}

#[test]
fn groups_on_a_sampled_centre_are_exact() {
    // Filtered truth's path: each group packed straight from scattered rows of an offset
    // matrix, centred on the sampled mean of all groups' rows, over several chunks (5000
    // rows of 128 bytes: three chunks of `GROUP_CHUNK_BYTES`, the next one's rows requested
    // during each scan), all on the calling thread, with one scratch reused by groups of
    // different sizes.
    let dim = 32;
    let n = 15000;
    let base = gaussian(n, dim, 1000.0, 1.0, 1.0, 41);
    let centre = rows_centre(&base, dim, 0..n);
    let mut scratch = GroupScratch::default();
    for (g, d) in METRICS.iter().enumerate() {
        // Every third row from offset g (fewer for later groups), with ids unlike rows.
        let rows: Vec<usize> = (g..n - g * 1000).step_by(3).collect();
        let ids: Vec<PointId> = rows.iter().map(|r| *r as PointId * 5 + 1).collect();
        let mut copy = Vec::new();
        for r in &rows {
            copy.extend_from_slice(&base[r * dim..(r + 1) * dim]);
        }
        let queries = gaussian(20, dim, 1000.0, 1.0, 1.0, 50 + g as u64);
        let selection = RowSelection {
            vectors: &base,
            rows: &rows,
            ids: &ids,
            dim,
        };
        let gt = exact_knn_rows_group(&selection, &queries, *d, 10, &centre, &mut scratch);
        let case = Case {
            distance: *d,
            base: &copy,
            ids: &ids,
            dim,
            queries: &queries,
            k: 10,
        };
        assert_exact(&format!("group {d}"), case, &gt);
    }
}
