//! Exact top-k by dot product over sparse vectors, and the exact reference of a fused (hybrid)
//! retrieval.
//!
//! Sparse: for each query, the `k` base rows of highest dot product among the rows that share
//! an index with it (an inverted index, and so every sparse engine, never sees the others), by
//! an exact scan of the posting lists of the query's indices; scores summed in f64, ties broken
//! by the smaller id. Distances are stored as `−score`, so that the truth is "smaller is
//! better" as for dense vectors, and a query with fewer than `k` overlapping rows is padded
//! with `PointId::MAX` at +∞ (what [`GroundTruth`] pads with).
//!
//! Fused: the dense and the sparse exact lists of depth `depth` fused by [`fuse`] and cut at
//! `k`, distances `−fused score`: the answer a hybrid retriever gives when both of its
//! retrievals are exact.

use rayon::prelude::*;

use super::GroundTruth;
use crate::sparse::fusion::{Fusion, fuse};
use crate::sparse::{Csr, SparseRow};
use crate::types::PointId;

/// The posting lists of `base`: for each dimension, `(row, value)` in row order.
struct Postings {
    starts: Vec<usize>,
    rows: Vec<u32>,
    values: Vec<f32>,
}

impl Postings {
    fn of(base: &Csr) -> Postings {
        let mut counts = vec![0usize; base.cols + 1];
        for &i in &base.indices {
            counts[i as usize + 1] += 1;
        }
        for c in 1..counts.len() {
            counts[c] += counts[c - 1];
        }
        let starts = counts.clone();
        let mut next = counts;
        let mut rows = vec![0u32; base.nnz()];
        let mut values = vec![0f32; base.nnz()];
        for r in 0..base.rows {
            let row = base.entries(r);
            for (&i, &v) in row.indices.iter().zip(row.values) {
                let at = next[i as usize];
                rows[at] = r as u32;
                values[at] = v;
                next[i as usize] += 1;
            }
        }
        Postings {
            starts,
            rows,
            values,
        }
    }
}

/// An exact sparse searcher over the rows of a matrix: its posting lists.
pub struct SparseIndex {
    postings: Postings,
    rows: usize,
}

impl SparseIndex {
    pub fn new(base: &Csr) -> SparseIndex {
        SparseIndex {
            postings: Postings::of(base),
            rows: base.rows,
        }
    }

    /// The exact top-`k` of `query`: `(row, score)`, best first, ties by the smaller row.
    pub fn top(&self, query: SparseRow<'_>, k: usize) -> Vec<(PointId, f64)> {
        let (mut scores, mut touched) = (vec![0f64; self.rows], vec![false; self.rows]);
        top_of(&self.postings, query, k, &mut scores, &mut touched)
    }

    /// Bytes its posting lists take.
    pub fn bytes(&self) -> u64 {
        (self.postings.starts.len() * 8 + self.postings.rows.len() * 8) as u64
    }
}

/// The exact top-`k` of every query of `queries` among the rows of `base`.
pub fn exact_sparse(base: &Csr, queries: &Csr, k: usize) -> GroundTruth {
    let postings = Postings::of(base);
    let per_query: Vec<Vec<(PointId, f64)>> = (0..queries.rows)
        .into_par_iter()
        .map_init(
            || (vec![0f64; base.rows], vec![false; base.rows]),
            |(scores, touched), q| top_of(&postings, queries.entries(q), k, scores, touched),
        )
        .collect();
    truth_of(&per_query, k)
}

/// One query's top-`k`, in reusable per-thread buffers (left zeroed).
fn top_of(
    postings: &Postings,
    query: SparseRow<'_>,
    k: usize,
    scores: &mut [f64],
    touched: &mut [bool],
) -> Vec<(PointId, f64)> {
    let mut hit: Vec<u32> = Vec::new();
    for (&i, &w) in query.indices.iter().zip(query.values) {
        let Some(span) = postings.starts.get(i as usize..i as usize + 2) else {
            continue; // a dimension no base row has
        };
        for at in span[0]..span[1] {
            let r = postings.rows[at] as usize;
            if !touched[r] {
                touched[r] = true;
                hit.push(r as u32);
            }
            scores[r] += f64::from(w) * f64::from(postings.values[at]);
        }
    }
    let mut ranked: Vec<(PointId, f64)> = hit
        .iter()
        .map(|&r| (r as PointId, scores[r as usize]))
        .collect();
    for &r in &hit {
        scores[r as usize] = 0.0;
        touched[r as usize] = false;
    }
    ranked.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ranked.truncate(k);
    ranked
}

/// Ranked `(id, score)` lists as a truth of depth `k`: distance `−score`, padded.
fn truth_of(per_query: &[Vec<(PointId, f64)>], k: usize) -> GroundTruth {
    let mut ids = Vec::with_capacity(per_query.len() * k);
    let mut distances = Vec::with_capacity(per_query.len() * k);
    for list in per_query {
        for slot in 0..k {
            match list.get(slot) {
                Some(&(id, score)) => {
                    ids.push(id);
                    distances.push(-score as f32);
                }
                None => {
                    ids.push(PointId::MAX);
                    distances.push(f32::INFINITY);
                }
            }
        }
    }
    GroundTruth { k, ids, distances }
}

/// The exact fused truth of depth `k`: for each query, its rows of `dense` and `sparse`
/// (exact truths of the same queries, of depth at least the fusion depth) cut at `depth`,
/// fused. Dense distances become similarities `−distance`, sparse ones are `−score`.
pub fn exact_fused(
    dense: &GroundTruth,
    sparse: &GroundTruth,
    depth: usize,
    fusion: Fusion,
    k: usize,
) -> GroundTruth {
    let list = |gt: &GroundTruth, q: usize| -> Vec<(PointId, f32)> {
        gt.ids_of(q)
            .iter()
            .zip(gt.distances_of(q))
            .take(depth)
            .take_while(|(id, d)| **id != PointId::MAX && d.is_finite())
            .map(|(id, d)| (*id, -d))
            .collect()
    };
    let per_query: Vec<Vec<(PointId, f64)>> = (0..dense.queries())
        .into_par_iter()
        .map(|q| fuse(&list(dense, q), &list(sparse, q), fusion, k))
        .collect();
    truth_of(&per_query, k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_truth_by_hand_with_ties_and_padding() {
        // Rows: 0 (0:1), 1 (0:1, 2:1), 2 (1:5), 3 (0:1).
        let base = Csr::from_rows(
            3,
            &[
                vec![(0, 1.0)],
                vec![(0, 1.0), (2, 1.0)],
                vec![(1, 5.0)],
                vec![(0, 1.0)],
            ],
        );
        // q0 (0:1, 2:2): row 1 scores 3, rows 0 and 3 score 1 (tie: 0 first); row 2 never.
        // q1 (2:0.5): row 1 only, then padding.
        let queries = Csr::from_rows(3, &[vec![(0, 1.0), (2, 2.0)], vec![(2, 0.5)]]);
        let gt = exact_sparse(&base, &queries, 3);
        assert_eq!(gt.ids_of(0), [1, 0, 3]);
        assert_eq!(gt.distances_of(0), [-3.0, -1.0, -1.0]);
        assert_eq!(gt.ids_of(1), [1, PointId::MAX, PointId::MAX]);
        assert_eq!(gt.distances_of(1)[0], -0.5);
        assert!(gt.distances_of(1)[1].is_infinite());
    }

    #[test]
    fn fused_truth_is_the_fusion_of_the_exact_lists() {
        let dense = GroundTruth {
            k: 3,
            ids: vec![1, 2, 3],
            distances: vec![0.1, 0.2, 0.3],
        };
        let sparse = GroundTruth {
            k: 3,
            ids: vec![3, 4, PointId::MAX],
            distances: vec![-12.0, -3.0, f32::INFINITY],
        };
        let gt = exact_fused(&dense, &sparse, 3, Fusion::Rrf { k: 60.0 }, 2);
        assert_eq!(gt.ids, [3, 1]);
        assert!((f64::from(-gt.distances[0]) - (1.0 / 63.0 + 1.0 / 61.0)).abs() < 1e-7);
        // Depth 1: dense keeps 1 only, sparse 3 only: a tie at 1/61, the smaller id first.
        let shallow = exact_fused(&dense, &sparse, 1, Fusion::Rrf { k: 60.0 }, 2);
        assert_eq!(shallow.ids, [1, 3]);
    }
}
