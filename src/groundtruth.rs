//! Exact k-nearest-neighbour ground truth: the computation every benchmark figure rests on.
//!
//! Formulation: for a block of queries and a block of base vectors, one SGEMM gives all inner
//! products; a ranking score is derived per metric (`|x|² - 2q·x` for euclidean, `-q·x/|x|` for
//! angular, `-q·x` for dot), and each query keeps its best candidates in a threshold buffer.
//! The SGEMM scores are only used to *select* candidates: a margin of extra candidates is kept,
//! their distances are recomputed exactly with [`Distance::between`], and the final top-k is
//! sorted by (distance, id), so ties are broken stably by id and stored distances compare
//! exactly with the distances the harness recomputes for engine results.

use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use crate::distance::{Distance, dot};
use crate::engine::PointId;

/// True neighbours of each query: `ids` and `distances` are `queries × k`, best first.
#[derive(Debug, Clone, PartialEq)]
pub struct GroundTruth {
    pub k: usize,
    pub ids: Vec<PointId>,
    pub distances: Vec<f32>,
}

impl GroundTruth {
    pub fn queries(&self) -> usize {
        self.ids.len().checked_div(self.k).unwrap_or(0)
    }

    pub fn ids_of(&self, q: usize) -> &[PointId] {
        &self.ids[q * self.k..(q + 1) * self.k]
    }

    pub fn distances_of(&self, q: usize) -> &[f32] {
        &self.distances[q * self.k..(q + 1) * self.k]
    }

    /// Keeps the first `k` neighbours of each query.
    pub fn truncated(&self, k: usize) -> GroundTruth {
        let k = k.min(self.k);
        let mut ids = Vec::with_capacity(self.queries() * k);
        let mut distances = Vec::with_capacity(self.queries() * k);
        for q in 0..self.queries() {
            ids.extend_from_slice(&self.ids_of(q)[..k]);
            distances.extend_from_slice(&self.distances_of(q)[..k]);
        }
        GroundTruth { k, ids, distances }
    }
}

/// The base set to search: flat row-major vectors plus, optionally, the id of each row
/// (its row number when absent). Ids must be ascending, so that tie-breaking by id and by
/// scan order agree.
pub struct BaseSet<'a> {
    pub vectors: &'a [f32],
    pub ids: Option<&'a [PointId]>,
    pub dim: usize,
}

/// Selected rows of a matrix: entry `i` is vector `rows[i]` with id `ids[i]`. A live set is
/// searched in place, without copying the dataset. Ids must be ascending.
pub struct RowSelection<'a> {
    pub vectors: &'a [f32],
    pub rows: &'a [usize],
    pub ids: &'a [PointId],
    pub dim: usize,
}

/// Either form, as the kernel sees it.
enum Base<'a> {
    All(&'a BaseSet<'a>),
    Rows(&'a RowSelection<'a>),
}

impl Base<'_> {
    fn len(&self) -> usize {
        match self {
            Base::All(b) => b.vectors.len() / b.dim,
            Base::Rows(r) => r.rows.len(),
        }
    }

    fn dim(&self) -> usize {
        match self {
            Base::All(b) => b.dim,
            Base::Rows(r) => r.dim,
        }
    }

    #[inline]
    fn id(&self, entry: usize) -> PointId {
        match self {
            Base::All(b) => b.ids.map_or(entry as PointId, |ids| ids[entry]),
            Base::Rows(r) => r.ids[entry],
        }
    }

    #[inline]
    fn vector(&self, entry: usize) -> &[f32] {
        let (data, row, dim) = match self {
            Base::All(b) => (b.vectors, entry, b.dim),
            Base::Rows(r) => (r.vectors, r.rows[entry], r.dim),
        };
        &data[row * dim..(row + 1) * dim]
    }

    /// Entries `start..end` as one contiguous block: borrowed, or gathered into `buf`.
    fn block<'b>(&'b self, start: usize, end: usize, buf: &'b mut Vec<f32>) -> &'b [f32] {
        match self {
            Base::All(b) => &b.vectors[start * b.dim..end * b.dim],
            Base::Rows(_) => {
                buf.clear();
                for e in start..end {
                    buf.extend_from_slice(self.vector(e));
                }
                buf
            }
        }
    }
}

/// Queries per SGEMM block: large enough that each pass over the base serves many queries.
const QUERY_BLOCK: usize = 256;
/// Base vectors per SGEMM block: the score tile (`QUERY_BLOCK × BASE_BLOCK` floats) stays in L2.
const BASE_BLOCK: usize = 1024;

/// Computes the exact top-`k` of every query against `base`.
///
/// `on_progress` is called with the number of queries finished so far (from worker threads).
/// If the base has fewer than `k` points, each row is padded with id `u64::MAX` and
/// distance `+inf`.
pub fn exact_knn(
    base: &BaseSet<'_>,
    queries: &[f32],
    distance: Distance,
    k: usize,
    on_progress: &(dyn Fn(usize) + Sync),
) -> GroundTruth {
    knn(&Base::All(base), queries, distance, k, on_progress)
}

/// [`exact_knn`] over selected rows of a matrix (a live set after mutations).
pub fn exact_knn_rows(
    base: &RowSelection<'_>,
    queries: &[f32],
    distance: Distance,
    k: usize,
    on_progress: &(dyn Fn(usize) + Sync),
) -> GroundTruth {
    knn(&Base::Rows(base), queries, distance, k, on_progress)
}

fn knn(
    base: &Base<'_>,
    queries: &[f32],
    distance: Distance,
    k: usize,
    on_progress: &(dyn Fn(usize) + Sync),
) -> GroundTruth {
    let dim = base.dim();
    let nq = queries.len() / dim;
    let n = base.len();
    if nq == 0 || k == 0 {
        return GroundTruth {
            k,
            ids: Vec::new(),
            distances: Vec::new(),
        };
    }

    // Per-base-vector term of the ranking score.
    let base_term: Vec<f32> = match distance {
        Distance::Euclidean => (0..n)
            .into_par_iter()
            .map(|e| {
                let x = base.vector(e);
                dot(x, x)
            })
            .collect(),
        Distance::Angular => (0..n)
            .into_par_iter()
            .map(|e| {
                let x = base.vector(e);
                let norm = dot(x, x).sqrt();
                if norm > 0.0 { 1.0 / norm } else { 0.0 }
            })
            .collect(),
        Distance::Dot => Vec::new(),
    };

    // Keep several blocks per thread so both cores stay busy on small query sets.
    let threads = rayon::current_num_threads().max(1);
    let qblock = QUERY_BLOCK.min(nq.div_ceil(threads * 4)).max(8);
    // Candidates kept beyond k, to absorb the rounding of the SGEMM formulation.
    let keep = k + k / 2 + 16;
    let done = AtomicUsize::new(0);

    let mut ids = vec![PointId::MAX; nq * k];
    let mut dists = vec![f32::INFINITY; nq * k];

    ids.par_chunks_mut(qblock * k)
        .zip(dists.par_chunks_mut(qblock * k))
        .enumerate()
        .for_each(|(block, (ids_out, dists_out))| {
            let q0 = block * qblock;
            let qn = ids_out.len() / k;
            let qs = &queries[q0 * dim..(q0 + qn) * dim];
            let mut tops: Vec<TopBuffer> = (0..qn).map(|_| TopBuffer::new(keep)).collect();
            let mut scores = vec![0.0f32; qn * BASE_BLOCK];
            let mut gathered = Vec::new();
            let mut b0 = 0;
            while b0 < n {
                let bn = BASE_BLOCK.min(n - b0);
                let bs = base.block(b0, b0 + bn, &mut gathered);
                // scores[qn × bn] = qs[qn × dim] · bsᵀ[dim × bn]
                // SAFETY: the pointers and strides describe the live slices above exactly:
                // `qs` is qn×dim row-major, `bs` is bn×dim row-major (read as its transpose),
                // `scores` has room for qn×bn with row stride bn.
                unsafe {
                    matrixmultiply::sgemm(
                        qn,
                        dim,
                        bn,
                        1.0,
                        qs.as_ptr(),
                        dim as isize,
                        1,
                        bs.as_ptr(),
                        1,
                        dim as isize,
                        0.0,
                        scores.as_mut_ptr(),
                        bn as isize,
                        1,
                    );
                }
                for (qi, top) in tops.iter_mut().enumerate() {
                    let row = &scores[qi * bn..(qi + 1) * bn];
                    match distance {
                        Distance::Euclidean => {
                            let terms = &base_term[b0..b0 + bn];
                            for (j, (t, s)) in terms.iter().zip(row).enumerate() {
                                top.offer(t - 2.0 * s, (b0 + j) as u32);
                            }
                        }
                        Distance::Angular => {
                            let terms = &base_term[b0..b0 + bn];
                            for (j, (t, s)) in terms.iter().zip(row).enumerate() {
                                top.offer(-s * t, (b0 + j) as u32);
                            }
                        }
                        Distance::Dot => {
                            for (j, s) in row.iter().enumerate() {
                                top.offer(-s, (b0 + j) as u32);
                            }
                        }
                    }
                }
                b0 += bn;
            }
            // Exact re-ranking of the kept candidates.
            let mut exact: Vec<(f32, PointId, u32)> = Vec::with_capacity(keep);
            for (qi, top) in tops.iter_mut().enumerate() {
                let q = &qs[qi * dim..(qi + 1) * dim];
                exact.clear();
                for &(_, entry) in top.candidates() {
                    let e = entry as usize;
                    let d = distance.between(q, base.vector(e));
                    exact.push((d, base.id(e), entry));
                }
                exact.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                for (slot, (d, id, _)) in exact.iter().take(k).enumerate() {
                    ids_out[qi * k + slot] = *id;
                    dists_out[qi * k + slot] = *d;
                }
            }
            let finished = done.fetch_add(qn, Ordering::Relaxed) + qn;
            on_progress(finished);
        });

    GroundTruth {
        k,
        ids,
        distances: dists,
    }
}

/// Keeps the `keep` smallest (score, row) pairs seen, cheaply: candidates under the current
/// threshold are appended, and when the buffer is full it is cut back to `keep` with a
/// selection, which tightens the threshold. Rows arrive in ascending order, so a candidate
/// equal to the threshold loses the tie and can be dropped at once.
struct TopBuffer {
    keep: usize,
    threshold: f32,
    items: Vec<(f32, u32)>,
}

impl TopBuffer {
    fn new(keep: usize) -> TopBuffer {
        TopBuffer {
            keep,
            threshold: f32::INFINITY,
            items: Vec::with_capacity(keep * 2 + 64),
        }
    }

    #[inline(always)]
    fn offer(&mut self, score: f32, row: u32) {
        if score < self.threshold {
            self.items.push((score, row));
            if self.items.len() == self.items.capacity() {
                self.shrink();
            }
        }
    }

    fn shrink(&mut self) {
        if self.items.len() > self.keep {
            let keep = self.keep;
            self.items
                .select_nth_unstable_by(keep - 1, |a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            self.items.truncate(keep);
            self.threshold = self
                .items
                .iter()
                .map(|x| x.0)
                .fold(f32::NEG_INFINITY, f32::max);
        }
    }

    fn candidates(&mut self) -> &[(f32, u32)] {
        self.shrink();
        &self.items
    }
}

/// Brute force over explicit ids, used where the base is small or scattered (tests, live sets
/// in mutation steps): distance to every vector, sorted by (distance, id).
pub fn naive_knn(
    base: &[f32],
    ids: &[PointId],
    dim: usize,
    query: &[f32],
    distance: Distance,
    k: usize,
) -> Vec<(PointId, f32)> {
    let mut all: Vec<(PointId, f32)> = base
        .chunks_exact(dim)
        .zip(ids)
        .map(|(x, id)| (*id, distance.between(query, x)))
        .collect();
    all.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    all.truncate(k);
    all
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::SplitMix64;

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
            let a = exact_knn_rows(&selection, &queries, d, 15, &|_| {});
            let copied = BaseSet {
                vectors: &copy,
                ids: Some(&ids),
                dim,
            };
            let b = exact_knn(&copied, &queries, d, 15, &|_| {});
            assert_eq!(a, b, "{d}");
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
}
