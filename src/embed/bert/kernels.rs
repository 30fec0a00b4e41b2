//! The arithmetic of the encoder. Matrix products go through the `gemm` crate (packed SIMD
//! kernels chosen at run time, the ones candle uses); the row-wise steps (bias and GELU, layer
//! normalisation, softmax) are plain loops compiled a second time for AVX2 + FMA and chosen at
//! run time, as the ground-truth tile is. Their `exp` is a polynomial the compiler vectorises
//! (a libm call per element is a fifth of the encoder's time at these sizes).
//!
//! Every function here works on one thread: the caller runs batches in parallel.

/// The right-hand side of a product, `k × n`.
#[derive(Clone, Copy)]
pub enum Rhs<'a> {
    /// Row-major with row stride `ld`: element (i, j) at `data[i * ld + j]`.
    Rows { data: &'a [f32], ld: usize },
    /// The transpose of a row-major matrix with row stride `ld`: element (i, j) at
    /// `data[j * ld + i]` (the keys of an attention head, multiplied as `Kᵀ`).
    Transposed { data: &'a [f32], ld: usize },
}

/// `dst[m × n] (row stride ldd) = (dst if accumulate) + scale · lhs[m × k] (row stride lda) · rhs`.
#[allow(clippy::too_many_arguments)] // a product's shape and strides; gemm takes 19
pub fn matmul(
    dst: &mut [f32],
    ldd: usize,
    lhs: &[f32],
    lda: usize,
    rhs: Rhs<'_>,
    (m, n, k): (usize, usize, usize),
    scale: f32,
    accumulate: bool,
) {
    if m == 0 || n == 0 {
        return;
    }
    let (rhs_data, rhs_rs, rhs_cs, rhs_need) = match rhs {
        Rhs::Rows { data, ld } => (data, ld, 1, (k.max(1) - 1) * ld + n),
        Rhs::Transposed { data, ld } => (data, 1, ld, (n - 1) * ld + k),
    };
    // The pointers below read and write exactly these extents.
    assert!(dst.len() >= (m - 1) * ldd + n, "matmul: dst too short");
    assert!(
        k == 0 || lhs.len() >= (m - 1) * lda + k,
        "matmul: lhs too short"
    );
    assert!(
        k == 0 || rhs_data.len() >= rhs_need,
        "matmul: rhs too short"
    );
    // SAFETY: the asserts above keep every element gemm touches inside the three slices, and
    // `dst` is borrowed mutably, so it overlaps neither input.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            ldd as isize,
            accumulate,
            lhs.as_ptr(),
            1,
            lda as isize,
            rhs_data.as_ptr(),
            rhs_cs as isize,
            rhs_rs as isize,
            1.0,
            scale,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// Runs `$body` compiled for AVX2 + FMA when the CPU has them, else as plain code.
macro_rules! dispatch {
    ($avx:ident, $plain:ident, ($($arg:expr),*)) => {{
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                // SAFETY: the CPU has the features the function is compiled for.
                return unsafe { $avx($($arg),*) };
            }
        }
        $plain($($arg),*)
    }};
}

/// `e^x`, within a few ulp for x in [-87, 88] (Cephes' `expf`: a degree-5 polynomial on
/// the reduced argument, then the power of two put into the exponent); 0 below -87.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // ln 2 in two parts, so that x - n ln 2 is exact enough.
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    // Rounds to the nearest integer by adding and subtracting 1.5 · 2^23.
    const ROUND: f32 = 12_582_912.0;
    let clamped = x.clamp(-87.0, 88.0);
    let n = (clamped * LOG2E + ROUND) - ROUND;
    let r = clamped - n * LN2_HI - n * LN2_LO;
    let p = 1.987_569_1e-4_f32;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 0.5;
    let y = p * r * r + r + 1.0;
    let scale = f32::from_bits(((n as i32 + 127) as u32) << 23);
    if x < -87.0 { 0.0 } else { y * scale }
}

/// The error function, within 5e-7 (Abramowitz and Stegun 7.1.26, whose 1.5e-7 grows near 0
/// in f32, where `1 - poly · exp` cancels; for GELU that is below an ulp of its output).
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    const P: f32 = 0.327_591_1;
    const A: [f32; 5] = [
        0.254_829_6,
        -0.284_496_74,
        1.421_413_7,
        -1.453_152,
        1.061_405_4,
    ];
    let a = x.abs();
    let t = 1.0 / (1.0 + P * a);
    let poly = ((((A[4] * t + A[3]) * t + A[2]) * t + A[1]) * t + A[0]) * t;
    let y = 1.0 - poly * exp(-a * a);
    y.copysign(x)
}

/// The activation between the two dense layers of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// `x · Φ(x)` with the exact normal CDF (BERT's `gelu`).
    Gelu,
    /// The tanh approximation (`gelu_new`, `gelu_pytorch_tanh`).
    GeluTanh,
    Relu,
}

#[inline(always)]
fn activate(act: Activation, x: f32) -> f32 {
    match act {
        Activation::Gelu => 0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2)),
        Activation::GeluTanh => {
            // tanh(u) = 1 - 2 / (e^{2u} + 1)
            let u = 0.797_884_6 * (x + 0.044_715 * x * x * x);
            let tanh = 1.0 - 2.0 / (exp(2.0 * u) + 1.0);
            0.5 * x * (1.0 + tanh)
        }
        Activation::Relu => x.max(0.0),
    }
}

#[inline(always)]
fn bias_act_plain(rows: &mut [f32], bias: &[f32], act: Activation) {
    for row in rows.chunks_exact_mut(bias.len()) {
        for (x, b) in row.iter_mut().zip(bias) {
            *x = activate(act, *x + b);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn bias_act_avx(rows: &mut [f32], bias: &[f32], act: Activation) {
    bias_act_plain(rows, bias, act)
}

/// Each row of `rows` (rows of `bias.len()`) becomes `act(row + bias)`.
pub fn bias_activation(rows: &mut [f32], bias: &[f32], act: Activation) {
    dispatch!(bias_act_avx, bias_act_plain, (rows, bias, act))
}

/// Each row of `rows` (rows of `bias.len()`) gets `bias` added.
pub fn add_bias(rows: &mut [f32], bias: &[f32]) {
    for row in rows.chunks_exact_mut(bias.len()) {
        for (x, b) in row.iter_mut().zip(bias) {
            *x += b;
        }
    }
}

#[inline(always)]
fn layer_norm_plain(rows: &mut [f32], bias: &[f32], gamma: &[f32], beta: &[f32], eps: f32) {
    let dim = gamma.len() as f32;
    for row in rows.chunks_exact_mut(gamma.len()) {
        for (x, b) in row.iter_mut().zip(bias) {
            *x += b;
        }
        let mean = row.iter().sum::<f32>() / dim;
        let var = row.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / dim;
        let inv = 1.0 / (var + eps).sqrt();
        for ((x, g), b) in row.iter_mut().zip(gamma).zip(beta) {
            *x = (*x - mean) * inv * g + b;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn layer_norm_avx(rows: &mut [f32], bias: &[f32], gamma: &[f32], beta: &[f32], eps: f32) {
    layer_norm_plain(rows, bias, gamma, beta, eps)
}

/// Each row of `rows` becomes `LayerNorm(row + bias)` with `gamma`, `beta` and `eps` (the
/// biased variance, as torch's `LayerNorm`).
pub fn bias_layer_norm(rows: &mut [f32], bias: &[f32], gamma: &[f32], beta: &[f32], eps: f32) {
    dispatch!(
        layer_norm_avx,
        layer_norm_plain,
        (rows, bias, gamma, beta, eps)
    )
}

#[inline(always)]
fn softmax_plain(rows: &mut [f32], width: usize) {
    for row in rows.chunks_exact_mut(width) {
        let max = row.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
        for x in row.iter_mut() {
            *x = exp(*x - max);
        }
        let inv = 1.0 / row.iter().sum::<f32>();
        for x in row.iter_mut() {
            *x *= inv;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn softmax_avx(rows: &mut [f32], width: usize) {
    softmax_plain(rows, width)
}

/// Each row of `width` values of `rows` becomes its softmax.
pub fn softmax_rows(rows: &mut [f32], width: usize) {
    dispatch!(softmax_avx, softmax_plain, (rows, width))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf by its Maclaurin series in f64 (exact enough for |x| ≤ 3).
    fn erf_series(x: f64) -> f64 {
        let (mut term, mut sum) = (x, x);
        for n in 1..200 {
            term *= -x * x / n as f64;
            sum += term / (2 * n + 1) as f64;
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn exp_and_erf_are_within_a_few_ulp_of_the_reference() {
        for i in -8700..=8800 {
            let x = i as f32 / 100.0;
            let want = (x as f64).exp();
            let rel = ((exp(x) as f64 - want) / want).abs();
            assert!(rel < 5e-7, "exp({x}) = {} vs {want}", exp(x));
        }
        assert_eq!(exp(-100.0), 0.0);
        for i in -3000..=3000 {
            let x = i as f32 / 1000.0;
            let want = erf_series(x as f64);
            assert!((erf(x) as f64 - want).abs() < 5e-7, "erf({x})");
        }
        assert_eq!(erf(9.0), 1.0);
        assert_eq!(erf(-9.0), -1.0);
    }

    #[test]
    fn row_steps_match_their_definitions_by_hand() {
        let mut rows = [1.0, 2.0, 3.0, -1.0, 0.0, 1.0];
        softmax_rows(&mut rows, 3);
        let e = [1f32.exp(), 2f32.exp(), 3f32.exp()];
        let s: f32 = e.iter().sum();
        for (got, want) in rows[..3].iter().zip(e) {
            assert!((got - want / s).abs() < 1e-6);
        }
        // LayerNorm of (1, 3) + bias (1, -1) = (2, 2): zero variance, so beta.
        let mut ln = [1.0, 3.0];
        bias_layer_norm(&mut ln, &[1.0, -1.0], &[2.0, 2.0], &[0.5, -0.5], 1e-12);
        assert_eq!(ln, [0.5, -0.5]);
        // (0, 4) normalised: (-1, 1).
        let mut ln = [0.0, 4.0];
        bias_layer_norm(&mut ln, &[0.0, 0.0], &[1.0, 1.0], &[0.0, 0.0], 0.0);
        assert_eq!(ln, [-1.0, 1.0]);
        let mut g = [0.0, 1.0, -1.0];
        bias_activation(&mut g, &[0.0, 0.0, 0.0], Activation::Gelu);
        // GELU(1) = 0.5 (1 + erf(1/sqrt 2)) = 0.8413447.
        assert!((g[1] - 0.841_344_7).abs() < 1e-6 && g[0] == 0.0);
        assert!((g[2] + 0.158_655_3).abs() < 1e-6);
    }

    #[test]
    fn products_follow_the_strides() {
        // a = [[1, 2], [3, 4]], b = [[5, 6], [7, 8]].
        let a = [1.0, 2.0, 3.0, 4.0];
        let b = [5.0, 6.0, 7.0, 8.0];
        let mut c = [0.0; 4];
        matmul(
            &mut c,
            2,
            &a,
            2,
            Rhs::Rows { data: &b, ld: 2 },
            (2, 2, 2),
            1.0,
            false,
        );
        assert_eq!(c, [19.0, 22.0, 43.0, 50.0]);
        // a · bᵀ, scaled by 0.5 and added to what is there.
        matmul(
            &mut c,
            2,
            &a,
            2,
            Rhs::Transposed { data: &b, ld: 2 },
            (2, 2, 2),
            0.5,
            true,
        );
        assert_eq!(c, [19.0 + 8.5, 22.0 + 11.5, 43.0 + 19.5, 50.0 + 26.5]);
    }
}
