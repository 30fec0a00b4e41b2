//! Fusion of two ranked lists (a dense and a sparse or lexical retrieval) into one, as hybrid
//! retrievers do it:
//!
//! - **RRF**, reciprocal rank fusion (Cormack, Clarke and Büttcher 2009; the default of Qdrant,
//!   Milvus, Elasticsearch, LangChain's `EnsembleRetriever`): `score(d) = Σ 1 / (k + rank(d))`
//!   over the lists that hold `d`, ranks from 1, `k` = 60 by default. Only the order counts.
//! - **Convex**, a convex combination of min-max normalised scores (Weaviate's
//!   `relativeScoreFusion`, LlamaIndex's `relative_score`; analysed by Bruch, Gai and Ingber,
//!   2023): `score(d) = α · n_dense(d) + (1 − α) · n_sparse(d)`, where `n(s) = (s − min) / (max
//!   − min)` over that list (1 for every entry when all its scores are equal) and 0 for a
//!   document the list does not hold. Scores must grow with relevance (similarities).
//!
//! Both break ties by the smaller id, so that the fused list, and the exact reference fused
//! the same way, are deterministic.

use std::collections::HashMap;

use crate::types::PointId;

/// How two lists are fused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fusion {
    Rrf {
        k: f64,
    },
    /// `alpha`: the dense list's weight, in [0, 1].
    Convex {
        alpha: f64,
    },
}

impl Fusion {
    /// RRF's usual constant.
    pub const RRF_K: f64 = 60.0;
}

/// The top `k` of `dense` and `sparse` (each `(id, similarity)`, best first) fused by `fusion`,
/// best first, as `(id, fused score)`.
pub fn fuse(
    dense: &[(PointId, f32)],
    sparse: &[(PointId, f32)],
    fusion: Fusion,
    k: usize,
) -> Vec<(PointId, f64)> {
    let mut scores: HashMap<PointId, f64> = HashMap::with_capacity(dense.len() + sparse.len());
    match fusion {
        Fusion::Rrf { k: c } => {
            for list in [dense, sparse] {
                for (rank, (id, _)) in list.iter().enumerate() {
                    *scores.entry(*id).or_default() += 1.0 / (c + rank as f64 + 1.0);
                }
            }
        }
        Fusion::Convex { alpha } => {
            for (list, weight) in [(dense, alpha), (sparse, 1.0 - alpha)] {
                for (id, n) in normalised(list) {
                    *scores.entry(id).or_default() += weight * n;
                }
            }
        }
    }
    let mut fused: Vec<(PointId, f64)> = scores.into_iter().collect();
    fused.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    fused.truncate(k);
    fused
}

/// Each entry's min-max normalised score.
fn normalised(list: &[(PointId, f32)]) -> impl Iterator<Item = (PointId, f64)> + '_ {
    let (lo, hi) = list
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), (_, s)| {
            (lo.min(f64::from(*s)), hi.max(f64::from(*s)))
        });
    list.iter().map(move |&(id, s)| {
        let n = if hi > lo {
            (f64::from(s) - lo) / (hi - lo)
        } else {
            1.0
        };
        (id, n)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rrf_by_hand() {
        // Dense: 1, 2, 3; sparse: 3, 4. With k = 60:
        //   1: 1/61; 2: 1/62; 3: 1/63 + 1/61; 4: 1/62.
        let dense = [(1, 0.9), (2, 0.8), (3, 0.7)];
        let sparse = [(3, 12.0), (4, 3.0)];
        let got = fuse(&dense, &sparse, Fusion::Rrf { k: 60.0 }, 10);
        let ids: Vec<PointId> = got.iter().map(|x| x.0).collect();
        // 2 and 4 tie at 1/62: the smaller id first.
        assert_eq!(ids, [3, 1, 2, 4]);
        assert!((got[0].1 - (1.0 / 63.0 + 1.0 / 61.0)).abs() < 1e-15);
        assert!((got[3].1 - 1.0 / 62.0).abs() < 1e-15);
        assert_eq!(fuse(&dense, &sparse, Fusion::Rrf { k: 60.0 }, 2).len(), 2);
    }

    #[test]
    fn convex_by_hand() {
        // Dense 0.9, 0.5, 0.1 → 1, 0.5, 0; sparse 10, 5 → 1, 0.
        let dense = [(1, 0.9), (2, 0.5), (3, 0.1)];
        let sparse = [(3, 10.0), (4, 5.0)];
        let got = fuse(&dense, &sparse, Fusion::Convex { alpha: 0.25 }, 10);
        // 1: 0.25; 2: 0.125; 3: 0 + 0.75; 4: 0.
        let want = [(3, 0.75), (1, 0.25), (2, 0.125), (4, 0.0)];
        for (g, w) in got.iter().zip(want) {
            assert_eq!(g.0, w.0);
            assert!((g.1 - w.1).abs() < 1e-7, "{got:?}");
        }
        // One entry, or equal scores: each normalises to 1.
        let one = fuse(&[(7, 0.3)], &[], Fusion::Convex { alpha: 0.5 }, 10);
        assert_eq!(one, [(7, 0.5)]);
    }
}
