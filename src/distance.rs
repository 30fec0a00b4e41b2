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
    ///
    /// The sums are [`dot_sum`] and [`squared_l2_sum`] (f32 within blocks, f64 across them)
    /// and the result is rounded to f32 once, at the end. On 8-bit integer data (`uint8`,
    /// `int8`, held as f32) every sum is exact, whatever the dimension: euclidean is then the
    /// correctly rounded square root of the exact integer squared distance, and dot the exact
    /// inner product rounded to f32 (exact up to 2^24 in magnitude).
    #[inline]
    pub fn between(self, a: &[f32], b: &[f32]) -> f32 {
        match self {
            Distance::Euclidean => squared_l2_sum(a, b).sqrt() as f32,
            Distance::Angular => {
                let denom = (dot_sum(a, a) * dot_sum(b, b)).sqrt();
                if denom == 0.0 {
                    1.0
                } else {
                    (1.0 - dot_sum(a, b) / denom) as f32
                }
            }
            Distance::Dot => -dot_sum(a, b) as f32,
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

/// Components per block: each lane sums at most 256 terms in f32 before the block's lanes are
/// added in f64. A term of 8-bit integers is an integer of magnitude at most 65 536 (255², a
/// difference of 255 squared, (−128)²), so every partial sum of a lane is an integer of
/// magnitude at most 256 × 65 536 = 2^24, which f32 holds exactly; the f64 total of the blocks
/// is exact up to 2^53. Hence: on 8-bit integer data, [`dot_sum`] and [`squared_l2_sum`] are
/// exact for any dimension (plain f32 accumulation stops being exact once a sum passes 2^24,
/// e.g. euclidean on `uint8` beyond 258 dimensions). On other data they are at least as
/// accurate as an f32 sum in the same order: the f32 error bound γ_d still holds.
const BLOCK: usize = LANES * 256;

/// Inner product, rounded to f32 (see [`dot_sum`]).
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    dot_sum(a, b) as f32
}

/// Squared euclidean distance, rounded to f32 (see [`squared_l2_sum`]).
#[inline]
pub fn squared_l2(a: &[f32], b: &[f32]) -> f32 {
    squared_l2_sum(a, b) as f32
}

/// Inner product with a fixed summation order: f32 lanes within each [`BLOCK`], f64 across
/// blocks. Exact on 8-bit integer data of any dimension.
#[inline]
pub fn dot_sum(a: &[f32], b: &[f32]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    let mut total = 0.0f64;
    for (a, b) in a.chunks(BLOCK).zip(b.chunks(BLOCK)) {
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
        total += reduce(acc) + f64::from(tail);
    }
    total
}

/// Squared euclidean distance with a fixed summation order: f32 lanes within each
/// [`BLOCK`], f64 across blocks. Exact on 8-bit integer data of any dimension.
#[inline]
pub fn squared_l2_sum(a: &[f32], b: &[f32]) -> f64 {
    debug_assert_eq!(a.len(), b.len());
    let mut total = 0.0f64;
    for (a, b) in a.chunks(BLOCK).zip(b.chunks(BLOCK)) {
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
        total += reduce(acc) + f64::from(tail);
    }
    total
}

/// The lanes' sum, in f64 (exact for the lane sums of 8-bit integer data).
#[inline]
fn reduce(acc: [f32; LANES]) -> f64 {
    let a = acc.map(f64::from);
    ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]))
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

    /// A hand-computed case where f32 accumulation rounds: 300 dimensions of `uint8`, the
    /// query all 0, the base vector 255 everywhere but one 254. The squared distance is
    /// 299 × 65025 + 64516 = 19 506 991, above 2^24 = 16 777 216 and odd, so no f32 holds it
    /// (f32 steps are 2 there): a plain f32 sum cannot return it. The block sums are exact.
    #[test]
    fn uint8_sums_are_exact_beyond_two_to_the_24() {
        let q = vec![0.0f32; 300];
        let mut x = vec![255.0f32; 300];
        x[7] = 254.0;
        assert_eq!(squared_l2_sum(&q, &x), 19_506_991.0);
        // What accumulating in f32 alone gives: not the exact value.
        let naive: f32 = q.iter().zip(&x).map(|(a, b)| (a - b) * (a - b)).sum();
        assert_ne!(f64::from(naive), 19_506_991.0);
        // The distance is the square root of the exact integer, rounded once.
        assert_eq!(
            Distance::Euclidean.between(&q, &x),
            19_506_991f64.sqrt() as f32
        );
        // Dot of int8 data over 4 blocks and a tail: 8195 × (−128)(−128) = 134 266 880.
        let a = vec![-128.0f32; 8195];
        assert_eq!(dot_sum(&a, &a), 8195.0 * 16384.0);
        // Mixed signs: +127·127 and −128·127 alternate, ending on the positive term.
        let b: Vec<f32> = (0..1001)
            .map(|i| if i % 2 == 0 { 127.0 } else { -128.0 })
            .collect();
        let c = vec![127.0f32; 1001];
        assert_eq!(dot_sum(&b, &c), 501.0 * 16129.0 - 500.0 * 16256.0);
    }

    /// Squared distances of u8 vectors in 4 096 dimensions (two blocks): compared with an
    /// i64 sum on random bytes, every one exact.
    #[test]
    fn uint8_squared_distances_match_integer_arithmetic() {
        let mut state = 0x2545F4914F6CDD1Du64;
        let mut byte = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 56) as u8
        };
        for dim in [1, 7, 258, 259, 1000, 2048, 2049, 4096] {
            let a: Vec<u8> = (0..dim).map(|_| byte()).collect();
            let b: Vec<u8> = (0..dim).map(|_| byte()).collect();
            let exact: i64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| (i64::from(*x) - i64::from(*y)).pow(2))
                .sum();
            let exact_dot: i64 = a
                .iter()
                .zip(&b)
                .map(|(x, y)| i64::from(*x) * i64::from(*y))
                .sum();
            let (af, bf): (Vec<f32>, Vec<f32>) = (
                a.iter().map(|v| f32::from(*v)).collect(),
                b.iter().map(|v| f32::from(*v)).collect(),
            );
            assert_eq!(squared_l2_sum(&af, &bf), exact as f64, "dim {dim}");
            assert_eq!(dot_sum(&af, &bf), exact_dot as f64, "dim {dim}");
        }
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
