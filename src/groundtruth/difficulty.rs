//! Query difficulty: relative contrast (RC) and local intrinsic dimensionality (LID) of each
//! query, as VIBE computes them (Jääsaari et al., "VIBE: Vector Index Benchmark for
//! Embeddings", 2025; github.com/vector-index-bench/vibe at b332c735, `export_results.py`
//! `compute_lid` and `export_query_stats`, `vibe/datasets.py` `write_output` with
//! `vibe/algorithms/faiss/module.py` `FaissFlat.query_with_distances` for the mean distance).
//! A query with a low RC or a high LID is hard for an index: its nearest neighbours barely
//! stand out from the rest of the data.
//!
//! With `d_1 ≤ … ≤ d_depth` the query's exact neighbour distances (ragdbeval's conventions:
//! plain, not squared, euclidean; `1 − cos`; `−q·x`), `w = d_min(k, depth)`:
//! - **RC@k** = mean distance from the query to every base point / `w`. VIBE's
//!   `avg_distances / distances[:, k-1]`, the mean over the whole base (its flat index
//!   searches `ntotal` points). Deviation: a base of more than [`MEAN_SAMPLE`] points is
//!   averaged over a uniform sample of [`MEAN_SAMPLE`] distinct points drawn with seed
//!   [`MEAN_SAMPLE_SEED`] (the same sample for every query), so that it costs no more than a
//!   ground truth of that size.
//! - **LID@k**, the maximum-likelihood estimate of Levina and Bickel as VIBE writes it: of
//!   the first `k` distances keep those > 1e-5 (a duplicate of the query says nothing about
//!   the neighbourhood's growth); `s = Σ ln(dᵢ / w)`, where a term with `dᵢ ≥ w/2` is computed
//!   as `ln1p((dᵢ − w) / w)` for precision; `LID = −(number kept) / s`. The k-th term is 0
//!   but counts in the number kept, as in VIBE.
//! - k beyond the truth's depth (a base smaller than k): `w` is the deepest true distance,
//!   as VIBE's `min(len − 1, k − 1)` does for LID.
//! - Undefined cases are NaN (JSON `null`), never a panic: RC when `w` is 0 or the base empty;
//!   LID when no distance is kept (VIBE: 0/0, NaN) or `s = 0` (all kept distances equal `w`;
//!   VIBE divides by zero and gets −inf). Any other non-finite result is NaN too. Under the
//!   `dot` metric distances can be negative and neither figure has its geometric meaning;
//!   they are computed by the same formulas, as VIBE does.

use rayon::prelude::*;
use serde::Serialize;

use super::GroundTruth;
use crate::distance::Distance;
use crate::rng::SplitMix64;
use crate::types::PointId;
use crate::vectors::Vectors;

/// The k of VIBE's headline figures (`rc10`, `lid10`) and of `dataset info`'s default.
pub const DEFAULT_K: usize = 10;

/// Largest base averaged whole for RC; a larger one is averaged over this many points.
pub const MEAN_SAMPLE: usize = 10_000;

/// Seed of the RC sample of a base larger than [`MEAN_SAMPLE`].
pub const MEAN_SAMPLE_SEED: u64 = 0x5243_4d45_414e; // "RCMEAN"

/// VIBE drops neighbour distances at or below this from the LID estimate.
const LID_MIN_DISTANCE: f64 = 1e-5;

/// RC and LID of one query (NaN where undefined, see the module doc).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct QueryDifficulty {
    pub rc: f64,
    pub lid: f64,
}

/// Per-query difficulty of a query set, with the k it was computed at.
#[derive(Debug, Clone, PartialEq)]
pub struct Difficulty {
    /// The k asked for; queries use min(k, their truth's depth).
    pub k: usize,
    /// Base points the mean distance of RC is taken over.
    pub mean_over: usize,
    pub queries: Vec<QueryDifficulty>,
}

/// Distribution of one figure over the queries where it is defined (numpy's default
/// linear-interpolated quantiles).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Distribution {
    /// Queries with a defined value.
    pub count: usize,
    /// Queries where it is NaN.
    pub undefined: usize,
    pub mean: f64,
    pub min: f64,
    pub p25: f64,
    pub median: f64,
    pub p75: f64,
    pub max: f64,
}

impl Difficulty {
    /// RC and LID at `k` of every query in `test` against `train`, with `truth` the exact
    /// neighbours of `test` in `train` under `distance` (ids padded with `PointId::MAX` at
    /// +inf beyond the base are no neighbours).
    pub fn compute(
        train: &Vectors,
        test: &Vectors,
        distance: Distance,
        truth: &GroundTruth,
        k: usize,
    ) -> Difficulty {
        let sample = mean_sample(train.len());
        let mean_over = sample.as_ref().map_or(train.len(), Vec::len);
        // The sampled rows, copied once in ascending order: every query then reads the copy
        // instead of faulting the rows of a mapped base in at random, once per query.
        let sampled: Option<Vec<f32>> = sample.as_ref().map(|rows| {
            let mut flat = Vec::with_capacity(rows.len() * train.dim());
            for &i in rows {
                flat.extend_from_slice(train.row(i));
            }
            flat
        });
        let queries = (0..test.len().min(truth.queries()))
            .into_par_iter()
            .map(|q| {
                let query = test.row(q);
                let mean = match &sampled {
                    None => mean_distance(query, train.iter(), distance, mean_over),
                    Some(flat) => {
                        mean_distance(query, flat.chunks_exact(train.dim()), distance, mean_over)
                    }
                };
                let depth = truth
                    .ids_of(q)
                    .iter()
                    .zip(truth.distances_of(q))
                    .take_while(|(id, d)| **id != PointId::MAX && d.is_finite())
                    .count();
                query_difficulty(mean, &truth.distances_of(q)[..depth], k)
            })
            .collect();
        Difficulty {
            k,
            mean_over,
            queries,
        }
    }

    pub fn rc(&self) -> Distribution {
        Distribution::of(self.queries.iter().map(|q| q.rc))
    }

    pub fn lid(&self) -> Distribution {
        Distribution::of(self.queries.iter().map(|q| q.lid))
    }
}

/// RC and LID of one query from the mean distance to the base and its exact neighbour
/// distances, ascending (only real neighbours: no padding).
pub fn query_difficulty(mean_distance: f64, neighbours: &[f32], k: usize) -> QueryDifficulty {
    let m = k.min(neighbours.len());
    if m == 0 {
        return QueryDifficulty {
            rc: f64::NAN,
            lid: f64::NAN,
        };
    }
    let w = f64::from(neighbours[m - 1]);
    QueryDifficulty {
        rc: finite_or_nan(mean_distance / w),
        lid: lid(&neighbours[..m], w),
    }
}

/// VIBE's `compute_lid` on the first k distances, `w` the k-th (module doc).
fn lid(distances: &[f32], w: f64) -> f64 {
    let half = 0.5 * w;
    let mut kept = 0usize;
    let mut s = 0.0f64;
    for d in distances.iter().map(|d| f64::from(*d)) {
        if d <= LID_MIN_DISTANCE {
            continue;
        }
        kept += 1;
        s += if d < half {
            (d / w).ln()
        } else {
            ((d - w) / w).ln_1p()
        };
    }
    if kept == 0 || s == 0.0 {
        return f64::NAN;
    }
    finite_or_nan(-(kept as f64) / s)
}

fn finite_or_nan(x: f64) -> f64 {
    if x.is_finite() { x } else { f64::NAN }
}

/// Mean over `rows` (`count` of them) of the distance to `query`, summed in f64.
fn mean_distance<'a>(
    query: &[f32],
    rows: impl Iterator<Item = &'a [f32]>,
    distance: Distance,
    count: usize,
) -> f64 {
    if count == 0 {
        return f64::NAN;
    }
    let sum: f64 = rows.map(|x| f64::from(distance.between(query, x))).sum();
    sum / count as f64
}

/// The base rows RC averages over: `None` for the whole base, else [`MEAN_SAMPLE`] distinct
/// rows drawn uniformly (partial Fisher–Yates with [`MEAN_SAMPLE_SEED`]), in ascending order.
fn mean_sample(n: usize) -> Option<Vec<usize>> {
    if n <= MEAN_SAMPLE {
        return None;
    }
    let mut rng = SplitMix64::new(MEAN_SAMPLE_SEED);
    let mut rows: Vec<usize> = (0..n).collect();
    for i in 0..MEAN_SAMPLE {
        let j = i + rng.below((n - i) as u64) as usize;
        rows.swap(i, j);
    }
    rows.truncate(MEAN_SAMPLE);
    rows.sort_unstable();
    Some(rows)
}

impl Distribution {
    /// Of the defined (non-NaN) values; all NaN fields when there is none.
    pub fn of(values: impl Iterator<Item = f64>) -> Distribution {
        let mut total = 0usize;
        let mut defined: Vec<f64> = values
            .inspect(|_| total += 1)
            .filter(|v| !v.is_nan())
            .collect();
        defined.sort_unstable_by(f64::total_cmp);
        let n = defined.len();
        let mean = if n == 0 {
            f64::NAN
        } else {
            defined.iter().sum::<f64>() / n as f64
        };
        Distribution {
            count: n,
            undefined: total - n,
            mean,
            min: quantile(&defined, 0.0),
            p25: quantile(&defined, 0.25),
            median: quantile(&defined, 0.5),
            p75: quantile(&defined, 0.75),
            max: quantile(&defined, 1.0),
        }
    }
}

/// numpy's default (`linear`) quantile of sorted values: position p·(n − 1), interpolated;
/// NaN for no values.
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    let Some(last) = sorted.len().checked_sub(1) else {
        return f64::NAN;
    };
    let pos = p * last as f64;
    let lo = pos.floor() as usize;
    let hi = (lo + 1).min(last);
    let frac = pos - lo as f64;
    sorted[lo] + (sorted[hi] - sorted[lo]) * frac
}

#[cfg(test)]
mod tests;
