//! Distance functions and their conventions.
//!
//! Conventions match ann-benchmarks' stored ground truth: euclidean is the plain L2 norm
//! (not squared), angular is the cosine distance `1 - cos`, and dot ("ip") is the negated inner
//! product so that smaller is always better. Every distance the harness reports or compares
//! comes from [`Distance::between`], so ties compare exactly.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The metric of a dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Distance {
    Euclidean,
    Angular,
    Dot,
}

impl Distance {
    /// Name as written in ann-benchmarks files.
    pub fn as_str(self) -> &'static str {
        match self {
            Distance::Euclidean => "euclidean",
            Distance::Angular => "angular",
            Distance::Dot => "dot",
        }
    }

    /// Distance between two vectors under this metric (smaller is closer).
    #[inline]
    pub fn between(self, a: &[f32], b: &[f32]) -> f32 {
        match self {
            Distance::Euclidean => squared_l2(a, b).sqrt(),
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
}

impl fmt::Display for Distance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An unknown metric name.
#[derive(Debug, thiserror::Error)]
#[error("unknown distance `{0}`: expected euclidean (l2), angular (cosine) or dot (ip)")]
pub struct UnknownDistance(pub String);

impl FromStr for Distance {
    type Err = UnknownDistance;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "euclidean" | "l2" | "euclid" => Ok(Distance::Euclidean),
            "angular" | "cosine" | "cos" => Ok(Distance::Angular),
            "dot" | "ip" | "inner_product" | "innerproduct" => Ok(Distance::Dot),
            other => Err(UnknownDistance(other.to_string())),
        }
    }
}

/// Lanes of the accumulators below: eight independent sums let the compiler keep them in one
/// SIMD register, and the fixed order makes every result bit-reproducible.
const LANES: usize = 8;

/// Inner product with a fixed summation order.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let mut acc = [0.0f32; LANES];
    let chunks = a.len() / LANES;
    for c in 0..chunks {
        let (x, y) = (&a[c * LANES..][..LANES], &b[c * LANES..][..LANES]);
        for l in 0..LANES {
            acc[l] += x[l] * y[l];
        }
    }
    let mut tail = 0.0f32;
    for i in chunks * LANES..a.len() {
        tail += a[i] * b[i];
    }
    reduce(acc) + tail
}

/// Squared euclidean distance with a fixed summation order.
#[inline]
pub fn squared_l2(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let mut acc = [0.0f32; LANES];
    let chunks = a.len() / LANES;
    for c in 0..chunks {
        let (x, y) = (&a[c * LANES..][..LANES], &b[c * LANES..][..LANES]);
        for l in 0..LANES {
            let d = x[l] - y[l];
            acc[l] += d * d;
        }
    }
    let mut tail = 0.0f32;
    for i in chunks * LANES..a.len() {
        let d = a[i] - b[i];
        tail += d * d;
    }
    reduce(acc) + tail
}

#[inline]
fn reduce(acc: [f32; LANES]) -> f32 {
    ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_computed_values() {
        let a = [1.0, 2.0, 3.0];
        let b = [4.0, 6.0, 3.0];
        assert_eq!(Distance::Euclidean.between(&a, &b), 5.0);
        assert_eq!(Distance::Dot.between(&a, &b), -(4.0 + 12.0 + 9.0));
        // Orthogonal vectors: cosine distance 1; identical direction: 0.
        assert!((Distance::Angular.between(&[1.0, 0.0], &[0.0, 2.0]) - 1.0).abs() < 1e-7);
        assert!(Distance::Angular.between(&[1.0, 1.0], &[3.0, 3.0]).abs() < 1e-6);
        // Opposite direction: 2.
        assert!((Distance::Angular.between(&[1.0, 0.0], &[-1.0, 0.0]) - 2.0).abs() < 1e-7);
    }

    #[test]
    fn long_vectors_match_naive_sum() {
        let a: Vec<f32> = (0..37).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..37).map(|i| (37 - i) as f32 * 0.25).collect();
        let naive: f64 = a
            .iter()
            .zip(&b)
            .map(|(x, y)| (*x as f64 - *y as f64).powi(2))
            .sum();
        assert!((squared_l2(&a, &b) as f64 - naive).abs() < 1e-3);
        let naive_dot: f64 = a.iter().zip(&b).map(|(x, y)| *x as f64 * *y as f64).sum();
        assert!((dot(&a, &b) as f64 - naive_dot).abs() < 1e-3);
    }

    #[test]
    fn names_parse() {
        assert_eq!(
            "euclidean".parse::<Distance>().unwrap(),
            Distance::Euclidean
        );
        assert_eq!("cosine".parse::<Distance>().unwrap(), Distance::Angular);
        assert_eq!("ip".parse::<Distance>().unwrap(), Distance::Dot);
        assert!("hamming".parse::<Distance>().is_err());
    }
}
