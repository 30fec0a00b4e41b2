//! The regression gate of `ragdbeval compare --fail-on`: rules such as `recall<-0.005`,
//! `qps<-5%` or `p99>+10%` held against a comparison of two runs. A rule fails when B's
//! change from A crosses its bound *and* the change is significant at the comparison's α:
//!
//! - recall, ndcg, mrr and latency (the per-query mean) by the paired Wilcoxon test that
//!   `compare` reports;
//! - the latency percentiles p50, p95, p99 and p999 by a paired bootstrap of the percentile's
//!   relative change over the per-query latencies (queries resampled together in A and B);
//! - qps has one figure per run and no test: its rule fails on the bound alone.
//!
//! Changes are `B − A`, or with `%` relative to A: `(B − A) / A`.

use serde::Serialize;

use super::SearchStep;
use super::compare::{Comparison, StepQueries, Verdict};
use crate::rng::SplitMix64;

/// Bootstrap resamples of a percentile's relative change.
const RESAMPLES: usize = 1_000;
/// Seed of the bootstrap: the same files give the same interval.
const SEED: u64 = 0x9a7e_5eed;

/// A run-level figure of one search step in A and B: QPS or a latency percentile.
#[derive(Debug, Clone, Serialize)]
pub struct FigureComparison {
    pub metric: String,
    pub higher_is_better: bool,
    pub a: f64,
    pub b: f64,
    /// `(B − A) / A`.
    pub relative: f64,
    /// The bootstrap interval (at 1 − α) of the relative change, from the per-query latencies.
    pub interval: Option<[f64; 2]>,
    /// `None`: no test (one figure per run, or no per-query latencies in batch mode).
    pub verdict: Option<Verdict>,
}

/// QPS and the latency percentiles of two search steps, with the percentiles' bootstrap.
pub fn figures(
    a: &SearchStep,
    b: &SearchStep,
    qa: &StepQueries,
    qb: &StepQueries,
    alpha: f64,
) -> Vec<FigureComparison> {
    let paired: Vec<(f64, f64)> = qa
        .latency_ms
        .iter()
        .zip(&qb.latency_ms)
        .filter_map(|(x, y)| Some(((*x)?, (*y)?)))
        .collect();
    let mut out = vec![figure("qps", true, a.qps, b.qps, None)];
    let percentiles = [
        ("p50_ms", 0.50, a.latency.p50_ms, b.latency.p50_ms),
        ("p95_ms", 0.95, a.latency.p95_ms, b.latency.p95_ms),
        ("p99_ms", 0.99, a.latency.p99_ms, b.latency.p99_ms),
        ("p999_ms", 0.999, a.latency.p999_ms, b.latency.p999_ms),
    ];
    let quantiles: Vec<f64> = percentiles.iter().map(|p| p.1).collect();
    let intervals = percentile_intervals(&paired, &quantiles, alpha);
    for ((name, _, fa, fb), interval) in percentiles.into_iter().zip(intervals) {
        out.push(figure(name, false, fa, fb, interval));
    }
    out
}

fn figure(
    metric: &str,
    higher_is_better: bool,
    a: f64,
    b: f64,
    interval: Option<[f64; 2]>,
) -> FigureComparison {
    let verdict = interval.map(|[lo, hi]| {
        let (up, down) = (lo > 0.0, hi < 0.0);
        match (up || down, up == higher_is_better) {
            (false, _) => Verdict::NoSignificantDifference,
            (true, true) => Verdict::Better,
            (true, false) => Verdict::Worse,
        }
    });
    FigureComparison {
        metric: metric.to_string(),
        higher_is_better,
        a,
        b,
        relative: (b - a) / a,
        interval,
        verdict,
    }
}

/// For each quantile `q`, the `1 − alpha` percentile interval of `quantile(B) / quantile(A)
/// − 1` over paired resamples of the queries (the same resamples for every `q`); `None` with
/// fewer than two pairs.
fn percentile_intervals(paired: &[(f64, f64)], qs: &[f64], alpha: f64) -> Vec<Option<[f64; 2]>> {
    if paired.len() < 2 {
        return vec![None; qs.len()];
    }
    let mut rng = SplitMix64::new(SEED);
    let n = paired.len();
    let (mut xa, mut xb) = (vec![0.0; n], vec![0.0; n]);
    let mut changes: Vec<Vec<f64>> = vec![Vec::with_capacity(RESAMPLES); qs.len()];
    for _ in 0..RESAMPLES {
        for i in 0..n {
            let (x, y) = paired[rng.below(n as u64) as usize];
            xa[i] = x;
            xb[i] = y;
        }
        for (q, out) in qs.iter().zip(&mut changes) {
            let change = quantile(&mut xb, *q) / quantile(&mut xa, *q) - 1.0;
            if change.is_finite() {
                out.push(change);
            }
        }
    }
    changes
        .into_iter()
        .map(|mut c| {
            if c.is_empty() {
                return None;
            }
            c.sort_by(f64::total_cmp);
            let at = |p: f64| c[((p * c.len() as f64) as usize).min(c.len() - 1)];
            Some([at(alpha / 2.0), at(1.0 - alpha / 2.0)])
        })
        .collect()
}

/// The nearest-rank `q` quantile of `values` (reordered in place).
fn quantile(values: &mut [f64], q: f64) -> f64 {
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    *values.select_nth_unstable_by(rank - 1, f64::total_cmp).1
}

/// One `--fail-on` rule.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rule {
    /// As written (`p99>+10%`).
    pub text: String,
    pub metric: &'static str,
    /// `true` for `<` (fails on a fall beyond the bound), `false` for `>`.
    pub below: bool,
    pub bound: f64,
    /// The bound is a fraction of A (written with `%`).
    pub relative: bool,
}

/// The metrics a rule may name, and the name of their figure in a comparison.
const METRICS: &[(&str, &str)] = &[
    ("recall", "recall"),
    ("ndcg", "ndcg"),
    ("mrr", "mrr"),
    ("latency", "latency_ms"),
    ("qps", "qps"),
    ("p50", "p50_ms"),
    ("p95", "p95_ms"),
    ("p99", "p99_ms"),
    ("p999", "p999_ms"),
];

/// Rules separated by commas: `recall<-0.005,qps<-5%,p99>+10%`.
pub fn parse_rules(text: &str) -> Result<Vec<Rule>, String> {
    let rules: Vec<Rule> = text
        .split(',')
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .map(parse_rule)
        .collect::<Result<_, _>>()?;
    if rules.is_empty() {
        return Err("no rule given: e.g. 'recall<-0.005,qps<-5%,p99>+10%'".into());
    }
    Ok(rules)
}

fn parse_rule(text: &str) -> Result<Rule, String> {
    let (at, below) = match (text.find('<'), text.find('>')) {
        (Some(i), None) => (i, true),
        (None, Some(i)) => (i, false),
        _ => {
            return Err(format!(
                "rule `{text}` is not METRIC<CHANGE or METRIC>CHANGE (e.g. recall<-0.005, p99>+10%)"
            ));
        }
    };
    let name = text[..at].trim().to_ascii_lowercase();
    let metric = METRICS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, figure)| *figure)
        .ok_or_else(|| {
            let known: Vec<&str> = METRICS.iter().map(|(n, _)| *n).collect();
            format!(
                "rule `{text}`: unknown metric `{name}` (known: {})",
                known.join(", ")
            )
        })?;
    let change = text[at + 1..].trim();
    let (number, relative) = match change.strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (change, false),
    };
    let value: f64 = number
        .strip_prefix('+')
        .unwrap_or(number)
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite())
        .ok_or_else(|| {
            format!("rule `{text}`: `{change}` is not a number (with % for a share of A)")
        })?;
    Ok(Rule {
        text: text.to_string(),
        metric,
        below,
        bound: if relative { value / 100.0 } else { value },
        relative,
    })
}

/// One rule checked on one pair of search steps.
#[derive(Debug, Clone, Serialize)]
pub struct GateLine {
    /// 1-based search steps of A and B.
    pub pair: (usize, usize),
    pub rule: String,
    pub metric: String,
    pub a: f64,
    pub b: f64,
    /// B − A, or (B − A) / A for a `%` rule.
    pub change: f64,
    pub crosses_bound: bool,
    /// Whether the change is significant in the rule's direction; `None`: no test.
    pub significant: Option<bool>,
    pub failed: bool,
}

/// Every rule on every compared pair of steps, in that order.
pub fn check(comparison: &Comparison, rules: &[Rule]) -> Vec<GateLine> {
    let mut lines = Vec::new();
    for pair in &comparison.pairs {
        for rule in rules {
            let found = pair
                .metrics
                .iter()
                .find(|m| m.metric == rule.metric)
                .map(|m| (m.mean_a, m.mean_b, m.higher_is_better, Some(m.verdict)))
                .or_else(|| {
                    let f = pair.figures.iter().find(|f| f.metric == rule.metric)?;
                    Some((f.a, f.b, f.higher_is_better, f.verdict))
                });
            // A metric the runs lack (latency in batch mode) is not checked.
            let Some((a, b, higher_is_better, verdict)) = found else {
                continue;
            };
            let change = if rule.relative { (b - a) / a } else { b - a };
            let crosses_bound = if rule.below {
                change < rule.bound
            } else {
                change > rule.bound
            };
            let significant = verdict.map(|v| {
                let rose = match v {
                    Verdict::NoSignificantDifference => return false,
                    Verdict::Better => higher_is_better,
                    Verdict::Worse => !higher_is_better,
                };
                rose != rule.below
            });
            lines.push(GateLine {
                pair: (pair.a_step.search, pair.b_step.search),
                rule: rule.text.clone(),
                metric: rule.metric.to_string(),
                a,
                b,
                change,
                crosses_bound,
                significant,
                failed: crosses_bound && significant.unwrap_or(true),
            });
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse_with_absolute_and_relative_bounds() {
        let rules = parse_rules("recall<-0.005, qps<-5%,p99>+10%").unwrap();
        assert_eq!(rules.len(), 3);
        assert_eq!(
            (rules[0].metric, rules[0].below, rules[0].bound),
            ("recall", true, -0.005)
        );
        assert!(!rules[0].relative);
        assert_eq!((rules[1].metric, rules[1].relative), ("qps", true));
        assert!((rules[1].bound + 0.05).abs() < 1e-12);
        assert_eq!((rules[2].metric, rules[2].below), ("p99_ms", false));
        assert!((rules[2].bound - 0.10).abs() < 1e-12);
        for bad in ["", "recall", "speed<1", "p99>fast", "recall<>1", "qps<-5%%"] {
            assert!(parse_rules(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn percentile_bootstrap_sees_a_shift_and_not_noise() {
        let base: Vec<f64> = (0..400).map(|i| 1.0 + (i % 40) as f64 * 0.01).collect();
        let slower: Vec<(f64, f64)> = base.iter().map(|x| (*x, x * 1.3)).collect();
        let both = percentile_intervals(&slower, &[0.5, 0.99], 0.05);
        for interval in &both {
            let [lo, hi] = interval.unwrap();
            assert!(lo > 0.25 && hi < 0.35, "{lo} {hi}");
        }
        // Each quantile's interval is the one it gets alone: the resamples are shared.
        assert_eq!(percentile_intervals(&slower, &[0.99], 0.05)[0], both[1]);
        let same: Vec<(f64, f64)> = base.iter().map(|x| (*x, *x)).collect();
        assert_eq!(
            percentile_intervals(&same, &[0.99], 0.05),
            vec![Some([0.0, 0.0])]
        );
        assert_eq!(percentile_intervals(&same[..1], &[0.99], 0.05), vec![None]);
    }

    #[test]
    fn nearest_rank_quantiles() {
        let mut v = [5.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(quantile(&mut v, 0.5), 3.0);
        assert_eq!(quantile(&mut v, 0.99), 5.0);
        assert_eq!(quantile(&mut v, 0.0), 1.0);
    }
}
