//! Latency distributions: every timed operation goes into an HdrHistogram of nanoseconds with
//! three significant digits, and is summarised as percentiles in (fractional) milliseconds.
//!
//! Nanoseconds, not microseconds: an in-process search or a single-point write can take a few
//! µs, and flooring those to whole µs would misstate them by up to 30 %. Three significant
//! digits keep every value within 0.1 % whatever its magnitude.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency the histogram tracks exactly (one hour, in ns); longer values saturate.
const MAX_NANOS: u64 = 3_600_000_000_000;

/// Nanoseconds per millisecond, for the summaries.
const NANOS_PER_MS: f64 = 1e6;

/// A new histogram with the project's resolution (1 ns .. 1 h, 3 significant digits).
pub fn new_histogram() -> Histogram<u64> {
    // Constant, valid bounds: this cannot fail at run time.
    Histogram::new_with_bounds(1, MAX_NANOS, 3).expect("constant histogram bounds are valid")
}

/// Records a duration in nanoseconds (at least 1).
#[inline]
pub fn record(h: &mut Histogram<u64>, d: Duration) {
    let ns = d.as_nanos().clamp(1, MAX_NANOS as u128) as u64;
    h.saturating_record(ns);
}

/// The unit of the values in [`new_histogram`]'s histograms, as interval logs name it.
pub const HISTOGRAM_UNIT: &str = "nanoseconds";

/// Percentiles of a latency distribution, in milliseconds. Without any call (`count` 0) every
/// figure is undefined: NaN here, `null` in JSON (never 0, which would read as instant).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub count: u64,
    #[serde(deserialize_with = "null_is_nan")]
    pub mean_ms: f64,
    #[serde(deserialize_with = "null_is_nan")]
    pub p50_ms: f64,
    #[serde(deserialize_with = "null_is_nan")]
    pub p90_ms: f64,
    #[serde(deserialize_with = "null_is_nan")]
    pub p95_ms: f64,
    #[serde(deserialize_with = "null_is_nan")]
    pub p99_ms: f64,
    #[serde(deserialize_with = "null_is_nan")]
    pub p999_ms: f64,
    #[serde(deserialize_with = "null_is_nan")]
    pub max_ms: f64,
    #[serde(deserialize_with = "null_is_nan")]
    pub min_ms: f64,
}

/// The summary of no calls: every figure undefined.
impl Default for LatencySummary {
    fn default() -> Self {
        LatencySummary {
            count: 0,
            mean_ms: f64::NAN,
            p50_ms: f64::NAN,
            p90_ms: f64::NAN,
            p95_ms: f64::NAN,
            p99_ms: f64::NAN,
            p999_ms: f64::NAN,
            max_ms: f64::NAN,
            min_ms: f64::NAN,
        }
    }
}

/// serde_json writes NaN as `null`: read back as NaN (undefined, not 0).
pub fn null_is_nan<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

impl LatencySummary {
    /// The summary of individual latencies, recorded as the runner records them.
    pub fn of(latencies: impl IntoIterator<Item = Duration>) -> LatencySummary {
        let mut h = new_histogram();
        for d in latencies {
            record(&mut h, d);
        }
        LatencySummary::from_histogram(&h)
    }

    pub fn from_histogram(h: &Histogram<u64>) -> LatencySummary {
        if h.is_empty() {
            return LatencySummary::default();
        }
        let ms = |ns: u64| ns as f64 / NANOS_PER_MS;
        LatencySummary {
            count: h.len(),
            mean_ms: h.mean() / NANOS_PER_MS,
            p50_ms: ms(h.value_at_quantile(0.50)),
            p90_ms: ms(h.value_at_quantile(0.90)),
            p95_ms: ms(h.value_at_quantile(0.95)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            p999_ms: ms(h.value_at_quantile(0.999)),
            max_ms: ms(h.max()),
            min_ms: ms(h.min()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_a_known_distribution() {
        let mut h = new_histogram();
        // 1..=1000 µs, one each: p50 = 500 µs, p99 = 990 µs, max = 1000 µs.
        for us in 1..=1000u64 {
            record(&mut h, Duration::from_micros(us));
        }
        let s = LatencySummary::from_histogram(&h);
        assert_eq!(s.count, 1000);
        assert!((s.p50_ms - 0.5).abs() < 0.001, "{s:?}");
        assert!((s.p99_ms - 0.99).abs() < 0.001, "{s:?}");
        assert!((s.max_ms - 1.0).abs() < 0.001, "{s:?}");
        assert!((s.mean_ms - 0.5005).abs() < 0.001, "{s:?}");
    }

    #[test]
    fn sub_microsecond_values_keep_their_resolution_and_huge_ones_saturate() {
        let mut h = new_histogram();
        // 2.5 µs and 3.4 µs: whole-µs recording made them 2 and 3 (25 % and 12 % low).
        record(&mut h, Duration::from_nanos(2_500));
        record(&mut h, Duration::from_nanos(3_400));
        let s = LatencySummary::from_histogram(&h);
        assert!((s.min_ms - 0.0025).abs() < 0.0025 * 0.001, "{s:?}");
        assert!((s.max_ms - 0.0034).abs() < 0.0034 * 0.001, "{s:?}");
        assert!((s.mean_ms - 0.00295).abs() < 0.00295 * 0.001, "{s:?}");
        record(&mut h, Duration::from_nanos(0));
        assert_eq!(h.min(), 1);
        record(&mut h, Duration::from_secs(10_000));
        assert!(h.max() >= MAX_NANOS / 2);
        let empty = LatencySummary::from_histogram(&new_histogram());
        assert_eq!(empty.count, 0);
        assert!(empty.p50_ms.is_nan() && empty.p999_ms.is_nan() && empty.mean_ms.is_nan());
    }

    #[test]
    fn a_summary_of_no_calls_is_null_in_json_and_reads_back_undefined() {
        let json = serde_json::to_value(LatencySummary::default()).unwrap();
        assert_eq!(json["count"], 0);
        assert!(
            json["p99_ms"].is_null() && json["mean_ms"].is_null(),
            "{json}"
        );
        let back: LatencySummary = serde_json::from_value(json).unwrap();
        assert!(back.p99_ms.is_nan());
        let full = LatencySummary::of([Duration::from_millis(2)]);
        let back: LatencySummary =
            serde_json::from_str(&serde_json::to_string(&full).unwrap()).unwrap();
        assert_eq!(back, full);
    }
}
