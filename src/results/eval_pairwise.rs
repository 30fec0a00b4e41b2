//! Three or more retrieval runs compared pair by pair (`ragdbeval eval compare R1 R2 R3 …`):
//! every pair through [`compare_runs`], then, per metric, the pairs' t-test p-values and
//! their Wilcoxon p-values each Holm-adjusted across the pairs ([`holm_optional`]), and each
//! pair's verdict taken on its adjusted Wilcoxon p.
//!
//! Why the adjustment: k runs make k(k − 1)/2 tests per metric, and at α = 0.05 each one
//! alone has a 5 % chance of a false "better"; over the family that chance grows with every
//! run added. Holm's step-down keeps it at most α whatever the dependence between the pairs
//! (they share runs, so they are not independent). A single pair is its own family: its
//! adjusted p is its raw p.

use serde::Serialize;

use super::compare::{OutcomeCounts, Verdict, verdict};
use super::eval_compare::{
    EvalCompareError, EvalCompareOptions, EvalComparison, RunValues, Winner, compare_runs,
};
use crate::metrics::stats::holm_optional;

/// The outcome of comparing every pair of several runs.
#[derive(Debug, Clone, Serialize)]
pub struct PairwiseComparison {
    /// The runs' labels, in the order given.
    pub runs: Vec<String>,
    pub alpha: f64,
    /// How each metric's family of p-values was adjusted: `holm`.
    pub adjustment: &'static str,
    /// Pairs compared, the size of each family (a pair whose test is undefined for a metric,
    /// e.g. identical values, is left out of that family).
    pub pair_count: usize,
    pub bootstrap_resamples: usize,
    pub bootstrap_seed: u64,
    /// The metric each pair's winner is decided on.
    pub primary: String,
    /// Per pair (A before B in the order given): queries compared and outcomes.
    pub pairs: Vec<PairSummary>,
    /// Per metric, every pair's statistics with the adjusted p-values.
    pub metrics: Vec<PairwiseMetric>,
}

/// One pair of runs, B against A.
#[derive(Debug, Clone, Serialize)]
pub struct PairSummary {
    pub a: String,
    pub b: String,
    /// A's and B's positions in [`PairwiseComparison::runs`] (labels need not differ).
    #[serde(skip)]
    pub positions: (usize, usize),
    pub queries: usize,
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    pub outcomes: OutcomeCounts,
    /// On the primary metric, by the Holm-adjusted Wilcoxon p.
    pub winner: Winner,
}

/// One metric across all pairs.
#[derive(Debug, Clone, Serialize)]
pub struct PairwiseMetric {
    pub metric: String,
    pub higher_is_better: bool,
    /// In [`PairwiseComparison::pairs`] order.
    pub pairs: Vec<PairMetric>,
}

/// One metric for one pair: the statistics of [`compare_runs`] with the adjusted p-values.
#[derive(Debug, Clone, Serialize)]
pub struct PairMetric {
    pub a: String,
    pub b: String,
    /// As [`PairSummary::positions`].
    #[serde(skip)]
    pub positions: (usize, usize),
    pub mean_a: f64,
    pub mean_b: f64,
    /// mean(B) − mean(A).
    pub delta: f64,
    pub ci95: Option<(f64, f64)>,
    pub effect_size: Option<f64>,
    pub t_p: Option<f64>,
    /// `t_p` Holm-adjusted across the pairs.
    pub t_p_holm: Option<f64>,
    pub wilcoxon_p: Option<f64>,
    /// `wilcoxon_p` Holm-adjusted across the pairs.
    pub wilcoxon_p_holm: Option<f64>,
    /// B against A at α, on `wilcoxon_p_holm`.
    pub verdict: Verdict,
}

/// Compares every pair of `runs` (each later run against each earlier one) and adjusts each
/// metric's p-values across the pairs. The metrics are those every pair shares.
pub fn compare_pairwise(
    runs: &[RunValues],
    options: &EvalCompareOptions,
) -> Result<PairwiseComparison, EvalCompareError> {
    if runs.len() < 2 {
        return Err(EvalCompareError::TooFewRuns(runs.len()));
    }
    let mut compared: Vec<Compared> = Vec::new();
    for (i, a) in runs.iter().enumerate() {
        for (j, b) in runs.iter().enumerate().skip(i + 1) {
            let pair = compare_runs(a, b, options).map_err(|e| EvalCompareError::InPair {
                a: a.label.clone(),
                b: b.label.clone(),
                inner: Box::new(e),
            })?;
            compared.push(((i, j), pair));
        }
    }
    let metrics = adjusted_metrics(&compared, options.alpha);
    if metrics.is_empty() {
        return Err(EvalCompareError::NoCommonMetrics);
    }
    let primary = compared[0].1.primary.clone();
    let pairs = pair_summaries(&compared, metrics.iter().find(|m| m.metric == primary));
    Ok(PairwiseComparison {
        runs: runs.iter().map(|r| r.label.clone()).collect(),
        alpha: options.alpha,
        adjustment: "holm",
        pair_count: compared.len(),
        bootstrap_resamples: options.resamples,
        bootstrap_seed: options.seed,
        primary,
        pairs,
        metrics,
    })
}

/// One pair's comparison, with A's and B's positions among the runs.
type Compared = ((usize, usize), EvalComparison);

/// Per metric every pair shares, the pairs' rows with both tests' p-values adjusted, each test
/// its own family.
fn adjusted_metrics(compared: &[Compared], alpha: f64) -> Vec<PairwiseMetric> {
    let Some((_, first)) = compared.first() else {
        return Vec::new();
    };
    first
        .metrics
        .iter()
        .filter_map(|template| {
            let per_pair: Vec<_> = compared
                .iter()
                .map(|(_, c)| c.metrics.iter().find(|m| m.metric == template.metric))
                .collect::<Option<_>>()?;
            let t_adjusted = holm_optional(&per_pair.iter().map(|m| m.t_p).collect::<Vec<_>>());
            let w_adjusted =
                holm_optional(&per_pair.iter().map(|m| m.wilcoxon_p).collect::<Vec<_>>());
            let pairs = compared
                .iter()
                .zip(&per_pair)
                .zip(t_adjusted.into_iter().zip(w_adjusted))
                .map(
                    |(((positions, c), m), (t_p_holm, wilcoxon_p_holm))| PairMetric {
                        a: c.a.clone(),
                        b: c.b.clone(),
                        positions: *positions,
                        mean_a: m.mean_a,
                        mean_b: m.mean_b,
                        delta: m.delta,
                        ci95: m.ci95,
                        effect_size: m.effect_size,
                        t_p: m.t_p,
                        t_p_holm,
                        wilcoxon_p: m.wilcoxon_p,
                        wilcoxon_p_holm,
                        verdict: verdict(wilcoxon_p_holm, m.delta, m.higher_is_better, alpha),
                    },
                )
                .collect();
            Some(PairwiseMetric {
                metric: template.metric.clone(),
                higher_is_better: template.higher_is_better,
                pairs,
            })
        })
        .collect()
}

/// Each pair's queries and outcomes, and its winner on the primary metric's adjusted verdict.
fn pair_summaries(compared: &[Compared], primary: Option<&PairwiseMetric>) -> Vec<PairSummary> {
    compared
        .iter()
        .enumerate()
        .map(|(i, (positions, c))| {
            let winner = match primary.and_then(|m| m.pairs.get(i)).map(|p| p.verdict) {
                Some(Verdict::Better) => Winner::B,
                Some(Verdict::Worse) => Winner::A,
                _ => Winner::NoSignificantDifference,
            };
            PairSummary {
                a: c.a.clone(),
                b: c.b.clone(),
                positions: *positions,
                queries: c.queries,
                only_in_a: c.only_in_a.clone(),
                only_in_b: c.only_in_b.clone(),
                outcomes: c.outcomes,
                winner,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::eval_compare::one_metric_run;

    /// A run of 12 queries: `hit` says, per query, whether the run scores 1 (else 0.5).
    fn run(label: &str, hit: impl Fn(usize) -> bool) -> RunValues {
        one_metric_run(
            label,
            "rr",
            12,
            |i| if hit(i) { 1.0 } else { 0.5 },
            |_| None,
        )
    }

    fn options() -> EvalCompareOptions {
        EvalCompareOptions {
            alpha: 0.05,
            resamples: 200,
            seed: 1,
            primary: None,
        }
    }

    #[test]
    fn wilcoxon_p_values_are_holm_adjusted_across_the_pairs() {
        // base → all: 12 of 12 queries better (exact p = 2/2^12); base → half and half → all:
        // 6 of 12 each (p = 2/2^6 = 0.03125, 6 zeros). Holm: 3·2/4096, then 2·0.03125 for both.
        let runs = [
            run("base", |_| false),
            run("half", |i| i < 6),
            run("all", |_| true),
        ];
        let c = compare_pairwise(&runs, &options()).unwrap();
        assert_eq!(c.pair_count, 3);
        let rr = &c.metrics[0];
        let labels: Vec<(&str, &str)> = rr.pairs.iter().map(|p| (&*p.a, &*p.b)).collect();
        assert_eq!(labels, [("base", "half"), ("base", "all"), ("half", "all")]);
        let raw: Vec<f64> = rr.pairs.iter().map(|p| p.wilcoxon_p.unwrap()).collect();
        assert_eq!(raw, [0.031_25, 2.0 / 4096.0, 0.031_25]);
        let adjusted: Vec<f64> = rr
            .pairs
            .iter()
            .map(|p| p.wilcoxon_p_holm.unwrap())
            .collect();
        assert_eq!(adjusted, [0.0625, 6.0 / 4096.0, 0.0625]);
        // base → all: every difference 0.5, no t-test, left out of the t-test's family of 2.
        assert!(rr.pairs[1].t_p.is_none() && rr.pairs[1].t_p_holm.is_none());
        for p in [&rr.pairs[0], &rr.pairs[2]] {
            assert_eq!(p.t_p_holm, p.t_p.map(|t| 2.0 * t));
        }
        let verdicts: Vec<Verdict> = rr.pairs.iter().map(|p| p.verdict).collect();
        assert_eq!(
            verdicts,
            [
                Verdict::NoSignificantDifference,
                Verdict::Better,
                Verdict::NoSignificantDifference
            ]
        );
        assert_eq!(c.pairs[1].winner, Winner::B);
        assert_eq!(c.pairs[0].winner, Winner::NoSignificantDifference);
    }

    #[test]
    fn two_runs_are_one_family_and_keep_their_p_values() {
        let runs = [run("base", |_| false), run("half", |i| i < 6)];
        let c = compare_pairwise(&runs, &options()).unwrap();
        let p = &c.metrics[0].pairs[0];
        assert_eq!(p.wilcoxon_p_holm, p.wilcoxon_p);
        assert_eq!(p.verdict, Verdict::Better);
        assert!(matches!(
            compare_pairwise(&runs[..1], &options()),
            Err(EvalCompareError::TooFewRuns(1))
        ));
    }
}
