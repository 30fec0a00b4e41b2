//! Paired comparisons of two runs on the same queries: the paired t-test, the Wilcoxon
//! signed-rank test, a seeded bootstrap interval of the mean difference, and the effect size.
//!
//! The conventions are `scipy.stats`'s defaults, so that `scripts/check_stats_scipy.py` can
//! hold the figures to scipy within 1e-6: `ttest_rel` (two-sided, df = n − 1) and `wilcoxon`
//! (two-sided, zero differences dropped, ranks averaged over ties, no continuity correction;
//! the exact null distribution for up to 50 differences without ties or zeros, an exhaustive
//! sign-flip permutation for up to 13 with them, the normal approximation with the tie
//! correction otherwise). Distributions come from `distrs`; a p-value below about 1e-16
//! underflows to 0 in the normal tail (scipy prints 1e-51 there: both mean "far below any α").
//!
//! Several such tests at once are corrected with [`holm`] (the Holm–Bonferroni step-down
//! adjustment, as `statsmodels`' `multipletests(..., method="holm")` computes it;
//! `scripts/check_holm_statsmodels.py` holds the two together).

use distrs::{Normal, StudentsT};

/// A paired t-test of the differences `b − a`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TTest {
    pub t: f64,
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// How a Wilcoxon p-value was computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WilcoxonMethod {
    /// The exact distribution of the rank sum over all sign patterns (≤ 50 differences
    /// without ties or zeros, or ≤ 13 with them).
    Exact,
    /// The normal approximation with the tie correction.
    Normal,
}

/// A Wilcoxon signed-rank test of the differences `b − a`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wilcoxon {
    /// min(R+, R−), as scipy reports it for the two-sided test.
    pub statistic: f64,
    /// Two-sided p-value.
    pub p: f64,
    /// Non-zero differences the test used.
    pub n: usize,
    pub method: WilcoxonMethod,
}

/// The paired t-test; `None` with fewer than two differences or when they are all equal (the
/// statistic is undefined: scipy returns NaN there).
pub fn paired_t(diffs: &[f64]) -> Option<TTest> {
    let n = diffs.len();
    if n < 2 {
        return None;
    }
    let mean = mean(diffs);
    let sd = sample_sd(diffs, mean);
    // Also catches a NaN deviation (a NaN difference).
    if sd.is_nan() || sd <= 0.0 {
        return None;
    }
    let t = mean / (sd / (n as f64).sqrt());
    let df = (n - 1) as f64;
    // sf(|t|) computed as cdf(−|t|): no cancellation for large |t|.
    let p = (2.0 * StudentsT::cdf(-t.abs(), df)).min(1.0);
    Some(TTest { t, df, p })
}

/// The Wilcoxon signed-rank test; `None` when no difference is non-zero.
pub fn wilcoxon(diffs: &[f64]) -> Option<Wilcoxon> {
    let nonzero: Vec<f64> = diffs.iter().copied().filter(|d| *d != 0.0).collect();
    let n = nonzero.len();
    if n == 0 {
        return None;
    }
    let magnitudes: Vec<f64> = nonzero.iter().map(|d| d.abs()).collect();
    let (ranks, tie_groups) = average_ranks(&magnitudes);
    let r_plus: f64 = nonzero
        .iter()
        .zip(&ranks)
        .filter(|(d, _)| **d > 0.0)
        .map(|(_, r)| r)
        .sum();
    let total = (n * (n + 1)) as f64 / 2.0;
    let r_minus = total - r_plus;
    let statistic = r_plus.min(r_minus);
    let ties = tie_groups.iter().any(|&t| t > 1);
    let zeros = diffs.len() - n;
    // scipy's choice (counted on all differences, zeros included): the exact distribution
    // up to 50 without ties or zeros; with them, an exhaustive sign-flip permutation up to 13
    // (2^13 patterns), which is the same distribution over the tied ranks; otherwise normal.
    if (diffs.len() <= 50 && !ties && zeros == 0) || diffs.len() <= 13 {
        let p = exact_two_sided(&nonzero, &ranks, r_plus);
        return Some(Wilcoxon {
            statistic,
            p,
            n,
            method: WilcoxonMethod::Exact,
        });
    }
    let nf = n as f64;
    let tie_term: f64 = tie_groups
        .iter()
        .map(|&t| {
            let t = t as f64;
            t * t * t - t
        })
        .sum::<f64>();
    let variance = nf * (nf + 1.0) * (2.0 * nf + 1.0) / 24.0 - tie_term / 48.0;
    let p = if variance > 0.0 {
        let z = (r_plus - total / 2.0) / variance.sqrt();
        (2.0 * Normal::cdf(-z.abs(), 0.0, 1.0)).min(1.0)
    } else {
        1.0
    };
    Some(Wilcoxon {
        statistic,
        p,
        n,
        method: WilcoxonMethod::Normal,
    })
}

/// Ranks of `values` (1-based, ties get their average rank) and the sizes of the tie groups.
fn average_ranks(values: &[f64]) -> (Vec<f64>, Vec<usize>) {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut groups = Vec::new();
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Positions start..end hold ranks start+1..=end: their mean.
        let rank = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        groups.push(end - start);
        start = end;
    }
    (ranks, groups)
}

/// Two-sided exact p-value of the observed R+: twice the smaller tail of R+'s distribution
/// over all 2^n sign patterns of the non-zero differences (their ranks fixed), capped at 1, as
/// scipy computes it. Ranks are summed doubled, so tied (half-integer) ranks stay exact.
fn exact_two_sided(nonzero: &[f64], ranks: &[f64], r_plus: f64) -> f64 {
    let doubled: Vec<usize> = ranks.iter().map(|r| (2.0 * r).round() as usize).collect();
    let max: usize = doubled.iter().sum();
    // counts[s]: sign patterns whose positive doubled ranks sum to s, as f64 (2^50 is exact).
    let mut counts = vec![0.0f64; max + 1];
    counts[0] = 1.0;
    for &rank in &doubled {
        for s in (rank..=max).rev() {
            counts[s] += counts[s - rank];
        }
    }
    debug_assert_eq!(nonzero.len(), ranks.len());
    let observed = ((2.0 * r_plus).round() as usize).min(max);
    let total = 2f64.powi(nonzero.len() as i32);
    let lower: f64 = counts[..=observed].iter().sum::<f64>() / total;
    let upper: f64 = counts[observed..].iter().sum::<f64>() / total;
    (2.0 * lower.min(upper)).min(1.0)
}

/// Holm–Bonferroni step-down adjusted p-values of a family of tests, in the order given.
///
/// With the m defined p-values sorted ascending, p₍ᵢ₎ (i = 1..m) becomes
/// max over j ≤ i of (m − j + 1) · p₍ⱼ₎, capped at 1: rejecting where the adjusted p < α keeps
/// the chance of any false rejection in the family at most α, with no assumption about how
/// the tests depend on each other. The adjusted values keep the order of the raw ones (equal
/// raw p-values get equal adjusted ones) and are never smaller than them.
///
/// A NaN input is a test that was not computed: it stays NaN and is not counted in m, as R's
/// `p.adjust` treats NA (statsmodels has no such case). Inputs are meant to be p-values in
/// [0, 1]; one above 1 (or +∞) comes out as 1.
pub fn holm(p_values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..p_values.len())
        .filter(|&i| !p_values[i].is_nan())
        .collect();
    // Stable: tied p-values keep their positions, and get the same adjusted value anyway.
    order.sort_by(|&a, &b| p_values[a].total_cmp(&p_values[b]));
    let family = order.len();
    let mut adjusted = vec![f64::NAN; p_values.len()];
    let mut running_max = f64::NEG_INFINITY;
    for (rank, &i) in order.iter().enumerate() {
        // The multiplier as an f64 before the product, as numpy computes it, so the figures
        // match statsmodels bit for bit.
        let scaled = (family - rank) as f64 * p_values[i];
        running_max = running_max.max(scaled);
        adjusted[i] = running_max.min(1.0);
    }
    adjusted
}

/// [`holm`] over p-values that may be missing (a test that could not be computed): `None`
/// stays `None` and is not counted in the family.
pub fn holm_optional(p_values: &[Option<f64>]) -> Vec<Option<f64>> {
    let raw: Vec<f64> = p_values.iter().map(|p| p.unwrap_or(f64::NAN)).collect();
    holm(&raw)
        .into_iter()
        .map(|p| (!p.is_nan()).then_some(p))
        .collect()
}

/// A percentile bootstrap interval of the mean of `diffs`: `resamples` resamples drawn with
/// `draw(n)` (a seeded generator returning an index below n), the `level` central interval of
/// their means with linear interpolation between order statistics (numpy's default
/// percentile), so a reference given the same indices gets the same figures.
pub fn bootstrap_mean_ci(
    diffs: &[f64],
    resamples: usize,
    level: f64,
    mut draw: impl FnMut(usize) -> usize,
) -> Option<(f64, f64)> {
    let n = diffs.len();
    if n == 0 || resamples == 0 || !(0.0..1.0).contains(&level) {
        return None;
    }
    let mut means: Vec<f64> = (0..resamples)
        .map(|_| (0..n).map(|_| diffs[draw(n)]).sum::<f64>() / n as f64)
        .collect();
    means.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    Some((percentile(&means, tail), percentile(&means, 1.0 - tail)))
}

/// A percentile bootstrap interval of the median of `values` (trials of one measurement),
/// drawn as [`bootstrap_mean_ci`] draws.
pub fn bootstrap_median_ci(
    values: &[f64],
    resamples: usize,
    level: f64,
    mut draw: impl FnMut(usize) -> usize,
) -> Option<(f64, f64)> {
    let n = values.len();
    if n == 0 || resamples == 0 || !(0.0..1.0).contains(&level) {
        return None;
    }
    let mut sample = vec![0.0; n];
    let mut medians: Vec<f64> = (0..resamples)
        .map(|_| {
            for slot in sample.iter_mut() {
                *slot = values[draw(n)];
            }
            median(&mut sample)
        })
        .collect();
    medians.sort_by(f64::total_cmp);
    let tail = (1.0 - level) / 2.0;
    Some((percentile(&medians, tail), percentile(&medians, 1.0 - tail)))
}

/// The median (numpy's: the mean of the two middle values for an even count); sorts `values`.
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    percentile(values, 0.5)
}

/// Coefficient of variation: sample standard deviation over the mean (`None` for fewer than
/// two values or a zero mean).
pub fn coefficient_of_variation(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let m = mean(values);
    (m != 0.0).then(|| sample_sd(values, m) / m.abs())
}

/// numpy's `percentile(..., method="linear")` of sorted `values` at fraction `q`.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    let position = q * (sorted.len() - 1) as f64;
    let below = position.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    let fraction = position - below as f64;
    sorted[below] + (sorted[above] - sorted[below]) * fraction
}

/// Cohen's d for paired samples (d_z): the mean difference over the standard deviation of the
/// differences; `None` when that deviation is 0 or there are fewer than two.
pub fn effect_size(diffs: &[f64]) -> Option<f64> {
    if diffs.len() < 2 {
        return None;
    }
    let mean = mean(diffs);
    let sd = sample_sd(diffs, mean);
    (sd > 0.0).then(|| mean / sd)
}

pub fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// Standard deviation with n − 1 in the denominator.
fn sample_sd(values: &[f64], mean: f64) -> f64 {
    let ss: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
    (ss / (values.len() - 1) as f64).sqrt()
}

#[cfg(test)]
mod tests;
