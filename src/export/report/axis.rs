//! The axes of a report plot: the range each shows (padded, bounded, logarithmic) and the
//! values it labels.

/// An axis label: whole numbers from 1000 up, else at most 4 significant digits without
/// trailing zeros (log axes otherwise print 0.7000000000000001).
pub(super) fn tick(v: f64) -> String {
    if v.abs() >= 1000.0 {
        return format!("{v:.0}");
    }
    let digits = if v == 0.0 {
        0
    } else {
        (3 - v.abs().log10().floor() as i32).clamp(0, 8) as usize
    };
    let text = format!("{v:.digits$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// An x axis label: [`tick`], or on an axis of whole things none between them.
pub(super) fn x_tick(v: f64, whole: bool) -> String {
    if whole && (v - v.round()).abs() > 1e-9 {
        String::new()
    } else {
        tick(v)
    }
}

/// The finite extremes of `values`, if any.
fn extremes(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    lo.is_finite().then_some((lo, hi))
}

/// A padded range of `values` (linear), never empty.
pub(super) fn span(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let Some((lo, hi)) = extremes(values) else {
        return (0.0, 1.0);
    };
    if hi - lo < 1e-9 {
        return (
            lo - 0.5_f64.max(lo.abs() * 0.1),
            hi + 0.5_f64.max(hi.abs() * 0.1),
        );
    }
    let pad = (hi - lo) * 0.05;
    (lo - pad, hi + pad)
}

/// The range of a linear axis for a quantity that cannot leave `[min, max]` (recall: [0, 1]):
/// the values' span padded by 5 % (a lone value by 5 % of the bounds' width), never past a
/// bound. Where padding would cross a bound, the axis stops at the bound and the padding moves
/// to the other end, so that all points at recall 1.0 give 0.9–1.0, not 0.5–1.5.
pub(super) fn bounded_span(
    values: impl Iterator<Item = f64>,
    (min, max): (f64, f64),
) -> (f64, f64) {
    let Some((lo, hi)) = extremes(values.map(|v| v.clamp(min, max))) else {
        return (min, max);
    };
    let pad = if hi - lo < 1e-9 {
        (max - min) * 0.05
    } else {
        (hi - lo) * 0.05
    };
    let width = hi - lo + 2.0 * pad;
    if lo - pad < min && hi + pad > max {
        (min, max)
    } else if lo - pad < min {
        (min, (min + width).min(max))
    } else if hi + pad > max {
        ((max - width).max(min), max)
    } else {
        (lo - pad, hi + pad)
    }
}

/// A positive range for a log axis.
pub(super) fn log_span(values: impl Iterator<Item = f64>) -> (f64, f64) {
    match extremes(values.filter(|v| *v > 0.0)) {
        Some((lo, hi)) => (lo / 1.5, hi * 1.5),
        None => (0.1, 10.0),
    }
}

/// Most labels an axis carries.
const MAX_TICKS: usize = 10;

/// The values `mantissa × 10^e` within `[lo, hi]`, ascending.
fn decade_multiples(lo: f64, hi: f64, mantissas: &[f64]) -> Vec<f64> {
    let mut out = Vec::new();
    let first = lo.log10().floor() as i32;
    let last = hi.log10().ceil() as i32;
    for e in first..=last {
        for m in mantissas {
            let v = m * 10f64.powi(e);
            if v >= lo * (1.0 - 1e-12) && v <= hi * (1.0 + 1e-12) {
                out.push(v);
            }
        }
    }
    out
}

/// Evenly spaced round values (steps of 1, 2 or 5 × 10^e) within `[lo, hi]`, at least two.
fn linear_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let rough = (hi - lo) / 4.0;
    if !rough.is_finite() || rough <= 0.0 {
        return vec![lo, hi];
    }
    let decade = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * decade)
        .find(|s| (hi - lo) / s <= 6.0)
        .unwrap_or(10.0 * decade);
    let mut out = Vec::new();
    let mut v = (lo / step).ceil() * step;
    while v <= hi * (1.0 + 1e-12) {
        out.push(v);
        v += step;
    }
    if out.len() < 2 { vec![lo, hi] } else { out }
}

/// Labelled values of a log axis over `[lo, hi]`: the powers of ten when the range holds at
/// least three, else 1-2-5 steps, else every multiple of a decade, else round linear steps,
/// so that an axis over less than a decade still carries labels (plotters' own log ticks are
/// powers of ten only, none at all within a decade).
pub(super) fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    if !(lo > 0.0 && hi > lo) {
        return vec![lo.max(f64::MIN_POSITIVE)];
    }
    let mantissas: [&[f64]; 3] = [
        &[1.0],
        &[1.0, 2.0, 5.0],
        &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0],
    ];
    for m in mantissas {
        let ticks = decade_multiples(lo, hi, m);
        if ticks.len() >= 3 {
            // Many decades: every n-th power of ten.
            let every = ticks.len().div_ceil(MAX_TICKS);
            return ticks.into_iter().step_by(every).collect();
        }
    }
    linear_ticks(lo, hi)
}
