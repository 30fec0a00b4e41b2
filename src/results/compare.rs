//! Two runs on the same queries, compared query by query (`ragdbeval compare`): per metric the
//! means, the paired t-test, the Wilcoxon signed-rank test, a seeded bootstrap interval of the
//! mean difference and the effect size; per query Win / Loss / Draw / Regression; and the
//! reasons the two runs may not be comparable at all.
//!
//! The per-query values come from the runs' sidecars (`*.queries.jsonl`), which record each
//! query's recall, NDCG, reciprocal rank, latency and which returned results were relevant.
//! Differences are always `B − A`.

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{ResultFileError, RunResult, SearchStep};
use crate::metrics::stats::{bootstrap_mean_ci, effect_size, mean, paired_t, wilcoxon};
use crate::params::ParamMapExt;
use crate::rng::SplitMix64;
use crate::types::PointId;

/// Bootstrap resamples of the mean difference.
pub const BOOTSTRAP_RESAMPLES: usize = 10_000;
/// Seed of the bootstrap's index generator: the same files give the same interval.
pub const BOOTSTRAP_SEED: u64 = 0x5eed_c0de;

/// What `compare` found.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub a: RunLabel,
    pub b: RunLabel,
    /// Significance level of the verdicts.
    pub alpha: f64,
    /// Why the two runs may not be comparable (empty: nothing found).
    pub not_comparable: Vec<String>,
    pub pairs: Vec<StepComparison>,
}

/// Which run a side is.
#[derive(Debug, Clone, Serialize)]
pub struct RunLabel {
    pub file: PathBuf,
    pub engine: String,
    pub version: String,
    pub dataset: String,
}

/// One search step of A against one of B.
#[derive(Debug, Clone, Serialize)]
pub struct StepComparison {
    pub a_step: StepLabel,
    pub b_step: StepLabel,
    pub queries: usize,
    pub metrics: Vec<MetricComparison>,
    pub outcomes: OutcomeCounts,
    /// The queries B lost most on (largest recall drop first), at most [`WORST_LISTED`].
    pub worst_regressions: Vec<QueryOutcome>,
    /// QPS and the latency percentiles of the two steps ([`super::gate::figures`]).
    pub figures: Vec<super::gate::FigureComparison>,
}

/// Regressions listed per pair.
pub const WORST_LISTED: usize = 10;

/// A search step, as the user sees it.
#[derive(Debug, Clone, Serialize)]
pub struct StepLabel {
    /// 1-based among the run's search steps (what `--pair` takes).
    pub search: usize,
    pub config: usize,
    pub runbook_step: usize,
    pub after: String,
    pub search_params: String,
}

/// One metric compared.
#[derive(Debug, Clone, Serialize)]
pub struct MetricComparison {
    pub metric: String,
    pub higher_is_better: bool,
    pub mean_a: f64,
    pub mean_b: f64,
    /// mean(B) − mean(A).
    pub delta: f64,
    pub t: Option<f64>,
    pub t_p: Option<f64>,
    pub wilcoxon_statistic: Option<f64>,
    pub wilcoxon_p: Option<f64>,
    /// 95 % percentile bootstrap interval of the mean difference.
    pub ci95: Option<(f64, f64)>,
    /// Cohen's d_z of the differences.
    pub effect_size: Option<f64>,
    pub verdict: Verdict,
}

/// B against A on one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Better,
    Worse,
    NoSignificantDifference,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::NoSignificantDifference => "no significant difference",
        })
    }
}

/// How one query fared in B against A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// B found a relevant result where A found none, or its first one at a better rank
    /// having lost nothing.
    Win,
    /// A found a relevant result where B found none, or its first one at a better rank with
    /// B losing nothing.
    Loss,
    /// The same first relevant rank (or neither found one) and nothing lost.
    Draw,
    /// Both found relevant results, but B lost one that A had.
    Regression,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct OutcomeCounts {
    pub win: usize,
    pub loss: usize,
    pub draw: usize,
    pub regression: usize,
}

/// One query's outcome, for the list of worst regressions.
#[derive(Debug, Clone, Serialize)]
pub struct QueryOutcome {
    pub query: usize,
    pub outcome: Outcome,
    /// 1-based rank of the first relevant result.
    pub a_first_rank: Option<usize>,
    pub b_first_rank: Option<usize>,
    /// Relevant results A returned that B did not.
    pub lost: usize,
    pub recall_a: f64,
    pub recall_b: f64,
}

/// Classifies one query (the A/B comparison's Win / Loss / Draw / Regression rule): relevant ids each side
/// returned, and the rank of each side's first relevant result.
pub fn classify(
    a_relevant: &[PointId],
    b_relevant: &[PointId],
    a_first: Option<usize>,
    b_first: Option<usize>,
) -> (Outcome, usize) {
    let lost = a_relevant
        .iter()
        .filter(|id| !b_relevant.contains(id))
        .count();
    let outcome = match (a_first, b_first) {
        (None, None) => Outcome::Draw,
        (None, Some(_)) => Outcome::Win,
        (Some(_), None) => Outcome::Loss,
        (Some(_), Some(_)) if lost > 0 => Outcome::Regression,
        (Some(a), Some(b)) if b < a => Outcome::Win,
        (Some(a), Some(b)) if b > a => Outcome::Loss,
        _ => Outcome::Draw,
    };
    (outcome, lost)
}

/// One query's line in a sidecar, as far as comparing needs it.
#[derive(Debug, Clone, Deserialize)]
struct SidecarLine {
    config: usize,
    step: usize,
    query: usize,
    latency_us: Option<f64>,
    ids: Vec<PointId>,
    recall: Option<f64>,
    ndcg: Option<f64>,
    rr: Option<f64>,
    relevant: Option<Vec<u32>>,
}

/// Per-query values of one search step, in query order.
#[derive(Debug, Clone, Default)]
pub struct StepQueries {
    pub recall: Vec<f64>,
    pub ndcg: Vec<f64>,
    pub rr: Vec<f64>,
    /// `None` in batch mode.
    pub latency_ms: Vec<Option<f64>>,
    /// Relevant ids returned, and the 1-based rank of the first.
    pub relevant: Vec<(Vec<PointId>, Option<usize>)>,
}

/// Reads the per-query lines of the given (config, sidecar step)s from a run's sidecar.
fn read_steps(
    path: &Path,
    wanted: &[(usize, usize)],
) -> Result<HashMap<(usize, usize), StepQueries>, ResultFileError> {
    let bad = |message: String| ResultFileError::Parse {
        path: path.to_path_buf(),
        message,
    };
    let file = crate::text::open(path).map_err(|e| ResultFileError::Read {
        path: path.to_path_buf(),
        source: e,
    })?;
    let mut lines: HashMap<(usize, usize), Vec<SidecarLine>> = HashMap::new();
    for (n, line) in file.lines().enumerate() {
        let line = line.map_err(|e| ResultFileError::Read {
            path: path.to_path_buf(),
            source: e,
        })?;
        let parsed: SidecarLine =
            serde_json::from_str(&line).map_err(|e| bad(format!("line {}: {e}", n + 1)))?;
        let key = (parsed.config, parsed.step);
        if wanted.contains(&key) {
            lines.entry(key).or_default().push(parsed);
        }
    }
    let mut out = HashMap::new();
    for key in wanted {
        let mut rows = lines.remove(key).unwrap_or_default();
        if rows.is_empty() {
            return Err(bad(format!(
                "no per-query lines for configuration {} step {}",
                key.0 + 1,
                key.1
            )));
        }
        rows.sort_by_key(|r| r.query);
        let mut q = StepQueries::default();
        for r in rows {
            // A line without `relevant` predates per-query figures; with it, a `null` figure is
            // a query over an empty truth (NaN: left out of the paired statistics).
            let Some(relevant) = r.relevant else {
                return Err(bad(
                    "its lines carry no per-query recall (written before ragdbeval recorded it): \
                     run the benchmark again to compare it"
                        .into(),
                ));
            };
            let ids: Vec<PointId> = relevant
                .iter()
                .filter_map(|&p| r.ids.get(p as usize).copied())
                .collect();
            let first = relevant.first().map(|&p| p as usize + 1);
            q.recall.push(r.recall.unwrap_or(f64::NAN));
            q.ndcg.push(r.ndcg.unwrap_or(f64::NAN));
            q.rr.push(r.rr.unwrap_or(f64::NAN));
            q.latency_ms.push(r.latency_us.map(|us| us / 1000.0));
            q.relevant.push((ids, first));
        }
        out.insert(*key, q);
    }
    Ok(out)
}

/// The search steps of a run in order, with their configuration index.
fn search_steps(run: &RunResult) -> Vec<(usize, &SearchStep)> {
    run.configs
        .iter()
        .enumerate()
        .flat_map(|(ci, c)| c.searches().map(move |s| (ci, s)))
        .collect()
}

/// Why A and B may not be compared query by query, or their latencies side by side.
fn comparability(a: &RunResult, b: &RunResult) -> (Vec<String>, bool) {
    let mut reasons = Vec::new();
    let mut pairable = true;
    if a.dataset.sha256 != b.dataset.sha256 {
        reasons.push(format!(
            "different datasets (SHA-256 {} vs {})",
            short(&a.dataset.sha256),
            short(&b.dataset.sha256)
        ));
        pairable = false;
    }
    if a.dataset.queries != b.dataset.queries || a.dataset.train != b.dataset.train {
        reasons.push(format!(
            "different query or base sets ({} queries × {} points vs {} × {})",
            a.dataset.queries, a.dataset.train, b.dataset.queries, b.dataset.train
        ));
        pairable = false;
    }
    let (sa, sb) = (&a.manifest.settings, &b.manifest.settings);
    for (key, va, vb) in [("k", sa.k, sb.k), ("relevant", sa.relevant, sb.relevant)] {
        if va != vb {
            let text = |v: Option<usize>| v.map_or_else(|| "null".into(), |v| v.to_string());
            reasons.push(format!("different {key} ({} vs {})", text(va), text(vb)));
        }
    }
    let (ha, hb) = (&a.manifest.hardware, &b.manifest.hardware);
    if ha.cpu_model != hb.cpu_model || ha.logical_cores != hb.logical_cores {
        reasons.push(format!(
            "different hardware ({}, {} cores vs {}, {} cores): latencies are not comparable",
            ha.cpu_model, ha.logical_cores, hb.cpu_model, hb.logical_cores
        ));
    }
    (reasons, pairable)
}

fn short(sha: &str) -> &str {
    sha.get(..12).unwrap_or(sha)
}

/// Failure to compare.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(transparent)]
    File(#[from] ResultFileError),
    #[error("{0}")]
    Invalid(String),
}

/// Compares run B against run A. `pairs` picks search steps (1-based among each run's
/// searches); empty pairs the i-th search of A with the i-th of B.
pub fn compare(
    a_path: &Path,
    b_path: &Path,
    pairs: &[(usize, usize)],
    alpha: f64,
) -> Result<Comparison, CompareError> {
    let a = RunResult::load(a_path)?;
    let b = RunResult::load(b_path)?;
    let label = |path: &Path, r: &RunResult| RunLabel {
        file: path.to_path_buf(),
        engine: r.engine.name.clone(),
        version: r.engine.version.clone(),
        dataset: r.dataset.name.clone(),
    };
    let (not_comparable, pairable) = comparability(&a, &b);
    let mut out = Comparison {
        a: label(a_path, &a),
        b: label(b_path, &b),
        alpha,
        not_comparable,
        pairs: Vec::new(),
    };
    if !pairable {
        return Ok(out);
    }
    let (sa, sb) = (search_steps(&a), search_steps(&b));
    let chosen: Vec<(usize, usize)> = if pairs.is_empty() {
        (1..=sa.len().min(sb.len())).map(|i| (i, i)).collect()
    } else {
        pairs.to_vec()
    };
    for &(i, j) in &chosen {
        if i == 0 || i > sa.len() || j == 0 || j > sb.len() {
            return Err(CompareError::Invalid(format!(
                "--pair {i}:{j}: A has {} search step(s), B has {}",
                sa.len(),
                sb.len()
            )));
        }
    }
    let sidecar = |path: &Path, r: &RunResult| -> Result<PathBuf, CompareError> {
        let name = r.sidecar.as_ref().ok_or_else(|| {
            CompareError::Invalid(format!(
                "{} has no per-query sidecar (run with it to compare query by query)",
                path.display()
            ))
        })?;
        Ok(path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .join(name))
    };
    let key = |(ci, s): (usize, &SearchStep)| (ci, s.sidecar_step);
    let wanted_a: Vec<_> = chosen.iter().map(|&(i, _)| key(sa[i - 1])).collect();
    let wanted_b: Vec<_> = chosen.iter().map(|&(_, j)| key(sb[j - 1])).collect();
    let qa = read_steps(&sidecar(a_path, &a)?, &wanted_a)?;
    let qb = read_steps(&sidecar(b_path, &b)?, &wanted_b)?;
    for &(i, j) in &chosen {
        let (step_a, step_b) = (sa[i - 1], sb[j - 1]);
        let (Some(va), Some(vb)) = (qa.get(&key(step_a)), qb.get(&key(step_b))) else {
            continue;
        };
        if va.recall.len() != vb.recall.len() {
            return Err(CompareError::Invalid(format!(
                "search {i} of A has {} queries, search {j} of B has {}",
                va.recall.len(),
                vb.recall.len()
            )));
        }
        let mut pair = compare_step(step_label(i, step_a), step_label(j, step_b), va, vb, alpha);
        pair.figures = super::gate::figures(step_a.1, step_b.1, va, vb, alpha);
        out.pairs.push(pair);
    }
    Ok(out)
}

fn step_label(search: usize, (config, s): (usize, &SearchStep)) -> StepLabel {
    StepLabel {
        search,
        config: config + 1,
        runbook_step: s.runbook_step,
        after: s.after.clone(),
        search_params: s.search_params.label(),
    }
}

/// Compares the per-query values of one pair of steps.
pub fn compare_step(
    a_step: StepLabel,
    b_step: StepLabel,
    a: &StepQueries,
    b: &StepQueries,
    alpha: f64,
) -> StepComparison {
    let mut metrics = vec![
        metric("recall", true, &a.recall, &b.recall, alpha),
        metric("ndcg", true, &a.ndcg, &b.ndcg, alpha),
        metric("mrr", true, &a.rr, &b.rr, alpha),
    ];
    let latencies: Option<(Vec<f64>, Vec<f64>)> = a
        .latency_ms
        .iter()
        .zip(&b.latency_ms)
        .map(|(x, y)| Some(((*x)?, (*y)?)))
        .collect::<Option<Vec<_>>>()
        .map(|v| v.into_iter().unzip());
    if let Some((la, lb)) = latencies {
        metrics.push(metric("latency_ms", false, &la, &lb, alpha));
    }
    let mut outcomes = OutcomeCounts::default();
    let mut per_query = Vec::with_capacity(a.recall.len());
    for q in 0..a.recall.len() {
        let ((ra, fa), (rb, fb)) = (&a.relevant[q], &b.relevant[q]);
        let (outcome, lost) = classify(ra, rb, *fa, *fb);
        match outcome {
            Outcome::Win => outcomes.win += 1,
            Outcome::Loss => outcomes.loss += 1,
            Outcome::Draw => outcomes.draw += 1,
            Outcome::Regression => outcomes.regression += 1,
        }
        per_query.push(QueryOutcome {
            query: q,
            outcome,
            a_first_rank: *fa,
            b_first_rank: *fb,
            lost,
            recall_a: a.recall[q],
            recall_b: b.recall[q],
        });
    }
    let mut worst: Vec<QueryOutcome> = per_query
        .into_iter()
        .filter(|o| matches!(o.outcome, Outcome::Regression | Outcome::Loss) && o.lost > 0)
        .collect();
    worst.sort_by(|x, y| {
        (y.recall_a - y.recall_b)
            .total_cmp(&(x.recall_a - x.recall_b))
            .then(x.query.cmp(&y.query))
    });
    worst.truncate(WORST_LISTED);
    StepComparison {
        a_step,
        b_step,
        queries: a.recall.len(),
        metrics,
        outcomes,
        worst_regressions: worst,
        figures: Vec::new(),
    }
}

/// One metric: means, the two paired tests, the bootstrap interval, the effect size and the
/// verdict. The verdict follows the Wilcoxon signed-rank test, which assumes no normality
/// (per-query recall is bounded and discrete, latency skewed); the t-test is reported beside it.
pub fn metric(
    name: &str,
    higher_is_better: bool,
    a: &[f64],
    b: &[f64],
    alpha: f64,
) -> MetricComparison {
    metric_with(
        name,
        higher_is_better,
        a,
        b,
        alpha,
        BOOTSTRAP_RESAMPLES,
        BOOTSTRAP_SEED,
    )
}

/// [`metric`] with the bootstrap's resamples and seed chosen by the caller (`eval compare`
/// takes both as options; the A/B report format resamples 1000 times).
pub fn metric_with(
    name: &str,
    higher_is_better: bool,
    a: &[f64],
    b: &[f64],
    alpha: f64,
    resamples: usize,
    seed: u64,
) -> MetricComparison {
    // Pairs where either side is undefined (NaN: a query with nothing to find) are left out.
    let (a, b): (Vec<f64>, Vec<f64>) = a
        .iter()
        .zip(b)
        .filter(|(x, y)| !x.is_nan() && !y.is_nan())
        .map(|(x, y)| (*x, *y))
        .unzip();
    let (a, b) = (a.as_slice(), b.as_slice());
    let diffs: Vec<f64> = a.iter().zip(b).map(|(x, y)| y - x).collect();
    let t = paired_t(&diffs);
    let w = wilcoxon(&diffs);
    let mut rng = SplitMix64::new(seed);
    let ci95 = bootstrap_mean_ci(&diffs, resamples, 0.95, |n| rng.below(n as u64) as usize);
    let delta = mean(b) - mean(a);
    let verdict = verdict(w.map(|w| w.p), delta, higher_is_better, alpha);
    MetricComparison {
        metric: name.to_string(),
        higher_is_better,
        mean_a: mean(a),
        mean_b: mean(b),
        delta,
        t: t.map(|t| t.t),
        t_p: t.map(|t| t.p),
        wilcoxon_statistic: w.map(|w| w.statistic),
        wilcoxon_p: w.map(|w| w.p),
        ci95,
        effect_size: effect_size(&diffs),
        verdict,
    }
}

/// B against A: better or worse when the test's p-value is below `alpha` and the means
/// differ, in the direction `higher_is_better` says; otherwise no significant difference.
pub fn verdict(p: Option<f64>, delta: f64, higher_is_better: bool, alpha: f64) -> Verdict {
    match p {
        Some(p) if p < alpha && delta != 0.0 => {
            if (delta > 0.0) == higher_is_better {
                Verdict::Better
            } else {
                Verdict::Worse
            }
        }
        _ => Verdict::NoSignificantDifference,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_classified_as_the_seeds_define() {
        // B finds something where A found nothing.
        assert_eq!(classify(&[], &[7], None, Some(3)), (Outcome::Win, 0));
        // A found something, B nothing: a loss, with what was lost counted.
        assert_eq!(classify(&[7, 9], &[], Some(1), None), (Outcome::Loss, 2));
        // Both found, same first rank, nothing lost.
        assert_eq!(classify(&[7], &[7], Some(2), Some(2)), (Outcome::Draw, 0));
        assert_eq!(classify(&[], &[], None, None), (Outcome::Draw, 0));
        // Both found, but B lost id 9 that A had, even with a better first rank.
        assert_eq!(
            classify(&[7, 9], &[7, 4], Some(2), Some(1)),
            (Outcome::Regression, 1)
        );
        // Nothing lost: the first relevant rank decides.
        assert_eq!(classify(&[7], &[7, 4], Some(3), Some(1)), (Outcome::Win, 0));
        assert_eq!(classify(&[7], &[7], Some(1), Some(4)), (Outcome::Loss, 0));
    }

    #[test]
    fn verdicts_follow_the_signed_rank_test_and_the_direction() {
        let a: Vec<f64> = (0..60).map(|i| 0.5 + 0.004 * (i % 10) as f64).collect();
        let better: Vec<f64> = a
            .iter()
            .enumerate()
            .map(|(i, x)| x + 0.05 + 0.001 * (i % 7) as f64)
            .collect();
        let m = metric("recall", true, &a, &better, 0.05);
        assert_eq!(m.verdict, Verdict::Better);
        assert!(m.wilcoxon_p.unwrap() < 1e-6);
        let (lo, hi) = m.ci95.unwrap();
        assert!(lo > 0.0 && hi < 0.1, "{lo} {hi}");
        // Lower latency is better.
        let m = metric("latency_ms", false, &better, &a, 0.05);
        assert_eq!(m.verdict, Verdict::Better);
        // Identical values: no difference, and no test to run.
        let m = metric("recall", true, &a, &a, 0.05);
        assert_eq!(m.verdict, Verdict::NoSignificantDifference);
        assert_eq!(m.wilcoxon_p, None);
    }
}
