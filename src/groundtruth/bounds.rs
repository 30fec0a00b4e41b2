//! The proven bound on the rounding of the f32 selection scores: how far above the k-th
//! smallest score a candidate must still be kept for the result to be exact.

use crate::distance::Distance;

/// Unit roundoff of f32.
const U: f64 = f32::EPSILON as f64 / 2.0;

/// γ_m = m·u / (1 − m·u): the relative error bound of m chained f32 roundings (Higham, Accuracy
/// and Stability of Numerical Algorithms, §3.1); a length-d dot product in any summation order,
/// with or without FMA, is within γ_d Σ|a_i b_i|. Also γ_a + γ_b + γ_a·γ_b ≤ γ_(a+b).
fn gamma(m: usize) -> f64 {
    let mu = m as f64 * U;
    if mu < 0.5 {
        mu / (1.0 - mu)
    } else {
        f64::INFINITY
    }
}

/// The error bounds of one metric and base, from which each query's [`Slack`] follows.
///
/// Notation: s̃ is the f32 selection score, S its exact value on the (centred) f32 vectors,
/// d̃ = `Distance::between` (f32, original vectors), d its exact value; Q = |q'|, M = max |x'|
/// (primes: centred for euclidean, as given otherwise). Every bound is doubled, a safety factor
/// over the worst case (and over the f64 arithmetic evaluating it).
///
/// Why that is enough: let T be the k-th smallest s̃ of the query and X those k items. If an
/// item y has s̃(y) > threshold(T), the bounds give d(y) − d(x) > 2·(error of d̃) for every x
/// in X, hence d̃(y) > d̃(x): at least k items rank strictly before y in the (d̃, id) order,
/// so y cannot be in the exact top-k. Every item with s̃ ≤ threshold(T) is re-ranked with d̃,
/// so the result equals a brute force over all items with `Distance::between`.
///
/// The argument only involves y and the items of X, all scored already: M need only bound
/// the norms of the rows scored so far. The scan therefore uses the largest norm packed so
/// far and widens every query's slack before it scores a chunk with a larger one
/// ([`super::top::TopBuffer::widen`]); an item dropped earlier stays rightly dropped, as the k
/// items that outrank it are still there.
pub(super) struct ErrorBounds {
    distance: Distance,
    dim: usize,
    /// M, an upper bound of the largest norm of a (centred) base vector.
    max_norm: f64,
}

impl ErrorBounds {
    pub(super) fn new(distance: Distance, dim: usize, max_norm2: f32) -> ErrorBounds {
        // The f32 squared norm is ≥ (1 − γ_d)·|x|².
        let max_norm = (max_norm2 as f64 / (1.0 - gamma(dim))).sqrt();
        ErrorBounds {
            distance,
            dim,
            max_norm,
        }
    }

    /// The slack for query `q` (centred like the base, as the scoring sees it).
    #[cfg(test)]
    pub(super) fn slack(&self, q: &[f32]) -> Slack {
        self.slack_for(norm2(q))
    }

    /// [`ErrorBounds::slack`] for a query of squared norm `q2` ([`norm2`]).
    pub(super) fn slack_for(&self, q2: f64) -> Slack {
        let d = self.dim;
        let qn = q2.sqrt();
        let m = self.max_norm;
        // Subnormal underflow breaks relative bounds: each product or term may lose up to
        // 2^-149 absolutely; this covers both the selection and the re-rank, twice over.
        let tiny = 16.0 * (d + 8) as f64 * 2f64.powi(-149);
        let slack = match self.distance {
            Distance::Euclidean => {
                // s̃ = fl(fl(|x'|²) − 2·fl(q'·x')): |s̃ − S| ≤ γ_(d+4)·(M² + 2QM).
                let e_score = 2.0 * gamma(d + 4) * (m * m + 2.0 * qn * m);
                // Centring rounds each coordinate by ≤ u relatively, so q' − x' differs from
                // q − x by a vector e with |e| ≤ 1.01u(Q + M), and the squared distance by
                // ≤ 2|q − x||e| + |e|² ≤ 2.03u(Q + M)² + O(u²).
                let e_centre = 5.0 * U * (qn + m) * (qn + m);
                // d̃² is within γ_(d+3) of d² (differences and squares are rounded
                // relatively, the sum of non-negative terms by γ_d), d̃ within u more:
                // d̃(y) > d̃(x) once d²(y) > (1 + rho)·d²(x).
                let g = gamma(d + 3);
                let rho = (1.0 + g) * (1.0 + U).powi(2) / ((1.0 - g) * (1.0 - U).powi(2)) - 1.0;
                // With T the k-th s̃: d²(x) ≤ T + Q² + e for x in X, and
                // d²(y) ≥ s̃(y) + Q² − e, e = e_score + e_centre.
                let e = e_score + e_centre;
                Slack {
                    abs: 2.0 * e + tiny,
                    rel: 2.0 * rho,
                    offset: q2 + e,
                }
            }
            Distance::Angular => {
                // s̃ = fl(−fl(q·x)·fl(1/fl(√fl(|x|²)))) is within Q·γ_(2d+4) of
                // S = −q·x/|x|; d̃ = fl(1 − fl(q·x)/fl(√(fl(|q|²)·fl(|x|²)))) is within
                // γ_(2d+7) of d = 1 + S/Q, i.e. Q·γ_(2d+7) in score units.
                let e_score = 2.0 * qn * gamma(2 * d + 6);
                let e_rerank = 2.0 * qn * gamma(2 * d + 9);
                Slack {
                    abs: 2.0 * e_score + 2.0 * e_rerank + tiny,
                    rel: 0.0,
                    offset: 0.0,
                }
            }
            Distance::Dot => {
                // s̃ = −fl(q·x) and d̃ = −dot(q, x): both within γ_(d+2)·Q·M of −q·x.
                let e = 2.0 * gamma(d + 2) * qn * m;
                Slack {
                    abs: 4.0 * e + tiny,
                    rel: 0.0,
                    offset: 0.0,
                }
            }
        };
        if slack.abs.is_finite() && slack.rel.is_finite() {
            slack
        } else {
            // Bounds too large to mean anything (huge dimension or norms): keep everything.
            Slack {
                abs: f64::INFINITY,
                rel: 0.0,
                offset: 0.0,
            }
        }
    }
}

/// The squared norm of a (centred) query, in f64 as [`ErrorBounds::slack_for`] takes it.
pub(super) fn norm2(q: &[f32]) -> f64 {
    q.iter().map(|v| (*v as f64) * (*v as f64)).sum()
}

/// How far above the k-th smallest selection score a candidate may be and still belong to
/// the exact top-k: `abs + rel·max(kth + offset, 0)` (see [`ErrorBounds`]).
#[derive(Debug, Clone, Copy)]
pub(super) struct Slack {
    abs: f64,
    rel: f64,
    offset: f64,
}

impl Slack {
    /// The largest selection score that may still be in the top-k, rounded up to f32 so that
    /// the comparison in f32 never cuts below the bound.
    pub(super) fn threshold(&self, kth: f32) -> f32 {
        let t = kth as f64;
        let v = t + self.abs + self.rel * (t + self.offset).max(0.0);
        let f = v as f32;
        if (f as f64) < v { f.next_up() } else { f }
    }
}
