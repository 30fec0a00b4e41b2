//! Two retrieval runs scored against the same judgments, compared query by query
//! (`ragdbeval eval compare`): per metric the means, the paired t-test, the Wilcoxon
//! signed-rank test, a seeded bootstrap interval of the mean difference and the effect size
//! (the statistics of `ragdbeval compare`, [`super::compare::metric_with`]); per query Win /
//! Loss / Draw / Regression ([`super::compare::classify`]'s rule); per category the
//! mean of each metric on both sides; and a winner on the primary metric.
//!
//! The inputs are plain per-query values, whatever produced them: `eval` scores each run and
//! hands its per-query table here. Differences are always `B − A`.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use super::compare::{MetricComparison, Outcome, OutcomeCounts, Verdict, classify, metric_with};
use crate::metrics::stats::mean;
use crate::types::PointId;

/// One side of the comparison: a run's name and its per-query values.
#[derive(Debug, Clone)]
pub struct RunValues {
    /// What the user calls the run (its file name, or a `--label`).
    pub label: String,
    /// The metrics, in display order.
    pub metrics: Vec<MetricSpec>,
    pub queries: Vec<QueryValues>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MetricSpec {
    pub name: String,
    pub higher_is_better: bool,
}

/// One query's values in one run.
#[derive(Debug, Clone)]
pub struct QueryValues {
    pub query_id: String,
    pub category: Option<String>,
    /// One per [`RunValues::metrics`]; NaN where the metric has no value for this query
    /// (e.g. latency a run did not record): such a query is left out of that metric's test.
    pub values: Vec<f64>,
    /// The relevant documents the run returned (any stable identifier).
    pub relevant_returned: Vec<String>,
    /// 1-based rank of the first relevant result.
    pub first_relevant_rank: Option<usize>,
}

/// A run of `queries` queries `q0`, `q1`, … with one higher-is-better metric, for tests:
/// `value` and `category` give each query's value and category.
#[cfg(test)]
pub fn one_metric_run(
    label: &str,
    metric: &str,
    queries: usize,
    value: impl Fn(usize) -> f64,
    category: impl Fn(usize) -> Option<String>,
) -> RunValues {
    RunValues {
        label: label.into(),
        metrics: vec![MetricSpec {
            name: metric.into(),
            higher_is_better: true,
        }],
        queries: (0..queries)
            .map(|i| QueryValues {
                query_id: format!("q{i}"),
                category: category(i),
                values: vec![value(i)],
                relevant_returned: vec![],
                first_relevant_rank: None,
            })
            .collect(),
    }
}

/// The outcome of `eval compare`.
#[derive(Debug, Clone, Serialize)]
pub struct EvalComparison {
    pub a: String,
    pub b: String,
    pub alpha: f64,
    pub bootstrap_resamples: usize,
    pub bootstrap_seed: u64,
    /// Queries both runs have (the ones compared).
    pub queries: usize,
    /// Queries only one side has: a sign that the runs were not scored on the same
    /// judgments.
    pub only_in_a: Vec<String>,
    pub only_in_b: Vec<String>,
    /// The metric the winner is decided on.
    pub primary: String,
    pub winner: Winner,
    pub metrics: Vec<MetricComparison>,
    pub outcomes: OutcomeCounts,
    pub per_query: Vec<EvalQueryOutcome>,
    pub categories: Vec<CategoryDeltas>,
}

/// Who won on the primary metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Winner {
    A,
    B,
    NoSignificantDifference,
}

#[derive(Debug, Clone, Serialize)]
pub struct EvalQueryOutcome {
    pub query_id: String,
    pub outcome: Outcome,
    pub a_first_rank: Option<usize>,
    pub b_first_rank: Option<usize>,
    /// Relevant documents A returned that B did not.
    pub lost: usize,
}

/// The means of every metric on one category's queries.
#[derive(Debug, Clone, Serialize)]
pub struct CategoryDeltas {
    pub category: String,
    pub queries: usize,
    /// Per metric (in [`EvalComparison::metrics`] order): mean A, mean B.
    pub means: Vec<(f64, f64)>,
    pub outcomes: OutcomeCounts,
}

/// What can make two runs impossible to compare.
#[derive(Debug, thiserror::Error)]
pub enum EvalCompareError {
    #[error("the two runs have no query in common")]
    NoCommonQueries,
    #[error("the two runs share no metric")]
    NoCommonMetrics,
    #[error("primary metric `{0}` is not one of the compared metrics ({1})")]
    UnknownPrimary(String, String),
    #[error("query `{0}` appears twice in run {1}")]
    DuplicateQuery(String, String),
    #[error("comparing needs at least two runs, got {0}")]
    TooFewRuns(usize),
    /// A pair of a comparison of several runs, named, since the inner error says "the two
    /// runs".
    #[error("{a} against {b}: {inner}")]
    InPair {
        a: String,
        b: String,
        inner: Box<EvalCompareError>,
    },
}

/// How the comparison is run.
#[derive(Debug, Clone)]
pub struct EvalCompareOptions {
    pub alpha: f64,
    pub resamples: usize,
    pub seed: u64,
    /// `None`: the first metric both runs have.
    pub primary: Option<String>,
}

fn count(outcomes: &mut OutcomeCounts, o: Outcome) {
    match o {
        Outcome::Win => outcomes.win += 1,
        Outcome::Loss => outcomes.loss += 1,
        Outcome::Draw => outcomes.draw += 1,
        Outcome::Regression => outcomes.regression += 1,
    }
}

/// A query of A beside the same query of B.
type QueryPair<'r> = (&'r QueryValues, &'r QueryValues);

/// A metric both runs have, with its column in A and in B.
type SharedColumn<'r> = (&'r MetricSpec, usize, usize);

/// Per category: the indices of its pairs and their outcomes.
type CategoryMembers<'r> = BTreeMap<&'r str, (Vec<usize>, OutcomeCounts)>;

/// The queries of A and B matched by id, in A's order, and those only one side has.
struct MatchedQueries<'r> {
    pairs: Vec<QueryPair<'r>>,
    only_in_a: Vec<String>,
    only_in_b: Vec<String>,
}

/// Compares B against A on the queries both have, in A's query order.
pub fn compare_runs(
    a: &RunValues,
    b: &RunValues,
    options: &EvalCompareOptions,
) -> Result<EvalComparison, EvalCompareError> {
    let MatchedQueries {
        pairs,
        only_in_a,
        only_in_b,
    } = match_queries(a, b)?;
    let columns = shared_columns(a, b);
    if columns.is_empty() {
        return Err(EvalCompareError::NoCommonMetrics);
    }
    let primary = primary_metric(&columns, options)?;

    let metrics: Vec<MetricComparison> = columns
        .iter()
        .map(|(m, ia, ib)| {
            // Queries where either side has no value are left out of this metric.
            let (va, vb): (Vec<f64>, Vec<f64>) = pairs
                .iter()
                .map(|(qa, qb)| (value(qa, *ia), value(qb, *ib)))
                .filter(|(x, y)| x.is_finite() && y.is_finite())
                .unzip();
            metric_with(
                &m.name,
                m.higher_is_better,
                &va,
                &vb,
                options.alpha,
                options.resamples,
                options.seed,
            )
        })
        .collect();

    let (outcomes, per_query, by_category) = classify_queries(&pairs);
    let categories = category_deltas(by_category, &columns, &pairs);
    let winner = match metrics
        .iter()
        .find(|m| m.metric == primary)
        .map(|m| m.verdict)
    {
        Some(Verdict::Better) => Winner::B,
        Some(Verdict::Worse) => Winner::A,
        _ => Winner::NoSignificantDifference,
    };
    Ok(EvalComparison {
        a: a.label.clone(),
        b: b.label.clone(),
        alpha: options.alpha,
        bootstrap_resamples: options.resamples,
        bootstrap_seed: options.seed,
        queries: pairs.len(),
        only_in_a,
        only_in_b,
        primary,
        winner,
        metrics,
        outcomes,
        per_query,
        categories,
    })
}

/// A query's value in column `i`; NaN where the run has none.
fn value(q: &QueryValues, i: usize) -> f64 {
    q.values.get(i).copied().unwrap_or(f64::NAN)
}

/// Matches the queries of A and B by id; a query id twice in one run, or no query in both,
/// is an error.
fn match_queries<'r>(
    a: &'r RunValues,
    b: &'r RunValues,
) -> Result<MatchedQueries<'r>, EvalCompareError> {
    let mut b_index: HashMap<&str, usize> = HashMap::with_capacity(b.queries.len());
    for (i, q) in b.queries.iter().enumerate() {
        if b_index.insert(q.query_id.as_str(), i).is_some() {
            return Err(EvalCompareError::DuplicateQuery(
                q.query_id.clone(),
                b.label.clone(),
            ));
        }
    }
    let mut seen_in_a: HashMap<&str, ()> = HashMap::with_capacity(a.queries.len());
    let mut pairs: Vec<QueryPair<'r>> = Vec::new();
    let mut only_in_a = Vec::new();
    for q in &a.queries {
        if seen_in_a.insert(q.query_id.as_str(), ()).is_some() {
            return Err(EvalCompareError::DuplicateQuery(
                q.query_id.clone(),
                a.label.clone(),
            ));
        }
        match b_index.get(q.query_id.as_str()) {
            Some(&j) => pairs.push((q, &b.queries[j])),
            None => only_in_a.push(q.query_id.clone()),
        }
    }
    let only_in_b: Vec<String> = b
        .queries
        .iter()
        .filter(|q| !seen_in_a.contains_key(q.query_id.as_str()))
        .map(|q| q.query_id.clone())
        .collect();
    if pairs.is_empty() {
        return Err(EvalCompareError::NoCommonQueries);
    }
    Ok(MatchedQueries {
        pairs,
        only_in_a,
        only_in_b,
    })
}

/// The metrics both runs have, in A's order, with each side's column.
fn shared_columns<'r>(a: &'r RunValues, b: &RunValues) -> Vec<SharedColumn<'r>> {
    a.metrics
        .iter()
        .enumerate()
        .filter_map(|(ia, m)| {
            let ib = b.metrics.iter().position(|n| n.name == m.name)?;
            Some((m, ia, ib))
        })
        .collect()
}

/// The metric that decides the winner: the one asked for, else the first shared one.
fn primary_metric(
    columns: &[SharedColumn<'_>],
    options: &EvalCompareOptions,
) -> Result<String, EvalCompareError> {
    match &options.primary {
        None => Ok(columns[0].0.name.clone()),
        Some(p) if columns.iter().any(|(m, _, _)| &m.name == p) => Ok(p.clone()),
        Some(p) => {
            let names: Vec<&str> = columns.iter().map(|(m, _, _)| m.name.as_str()).collect();
            Err(EvalCompareError::UnknownPrimary(
                p.clone(),
                names.join(", "),
            ))
        }
    }
}

/// Each pair's outcome, their counts overall, and the pairs of each category.
fn classify_queries<'r>(
    pairs: &[QueryPair<'r>],
) -> (OutcomeCounts, Vec<EvalQueryOutcome>, CategoryMembers<'r>) {
    // Documents as small integers, shared by both sides, for the per-query classification.
    let mut doc_ids: HashMap<String, PointId> = HashMap::new();
    let mut intern = |docs: &[String]| -> Vec<PointId> {
        docs.iter()
            .map(|d| {
                let next = doc_ids.len() as PointId;
                *doc_ids.entry(d.clone()).or_insert(next)
            })
            .collect()
    };
    let mut outcomes = OutcomeCounts::default();
    let mut per_query = Vec::with_capacity(pairs.len());
    let mut by_category: CategoryMembers<'r> = BTreeMap::new();
    for (i, (qa, qb)) in pairs.iter().enumerate() {
        let ra = intern(&qa.relevant_returned);
        let rb = intern(&qb.relevant_returned);
        let (outcome, lost) = classify(&ra, &rb, qa.first_relevant_rank, qb.first_relevant_rank);
        count(&mut outcomes, outcome);
        if let Some(c) = qa.category.as_deref().or(qb.category.as_deref()) {
            let entry = by_category.entry(c).or_default();
            entry.0.push(i);
            count(&mut entry.1, outcome);
        }
        per_query.push(EvalQueryOutcome {
            query_id: qa.query_id.clone(),
            outcome,
            a_first_rank: qa.first_relevant_rank,
            b_first_rank: qb.first_relevant_rank,
            lost,
        });
    }
    (outcomes, per_query, by_category)
}

/// Per category, each shared metric's mean on each side (over the members with a value).
fn category_deltas(
    by_category: CategoryMembers<'_>,
    columns: &[SharedColumn<'_>],
    pairs: &[QueryPair<'_>],
) -> Vec<CategoryDeltas> {
    by_category
        .into_iter()
        .map(|(category, (members, outcomes))| {
            let means = columns
                .iter()
                .map(|(_, ia, ib)| {
                    let side = |pick: &dyn Fn(&QueryPair<'_>) -> f64| {
                        let v: Vec<f64> = members
                            .iter()
                            .map(|i| pick(&pairs[*i]))
                            .filter(|x| x.is_finite())
                            .collect();
                        if v.is_empty() { f64::NAN } else { mean(&v) }
                    };
                    (side(&|p| value(p.0, *ia)), side(&|p| value(p.1, *ib)))
                })
                .collect();
            CategoryDeltas {
                category: category.to_string(),
                queries: members.len(),
                means,
                outcomes,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(label: &str, shift: f64, lose_doc: bool) -> RunValues {
        let metrics = vec![
            MetricSpec {
                name: "ndcg@10".into(),
                higher_is_better: true,
            },
            MetricSpec {
                name: "latency_ms".into(),
                higher_is_better: false,
            },
        ];
        let queries = (0..80)
            .map(|i| {
                let base = 0.3 + 0.005 * (i % 17) as f64;
                QueryValues {
                    query_id: format!("Q{i:03}"),
                    category: Some(if i % 2 == 0 { "even" } else { "odd" }.into()),
                    values: vec![
                        (base + shift + 0.002 * (i % 5) as f64 * shift.signum()).min(1.0),
                        if i == 3 {
                            f64::NAN
                        } else {
                            10.0 + (i % 3) as f64
                        },
                    ],
                    relevant_returned: if lose_doc && i % 4 == 0 {
                        vec!["d1".into()]
                    } else {
                        vec!["d1".into(), "d2".into()]
                    },
                    first_relevant_rank: Some(1),
                }
            })
            .collect();
        RunValues {
            label: label.into(),
            metrics,
            queries,
        }
    }

    fn options() -> EvalCompareOptions {
        EvalCompareOptions {
            alpha: 0.05,
            resamples: 1000,
            seed: 7,
            primary: None,
        }
    }

    #[test]
    fn a_known_improvement_is_significant_and_b_wins() {
        let a = run("a", 0.0, false);
        let b = run("b", 0.1, false);
        let c = compare_runs(&a, &b, &options()).unwrap();
        assert_eq!(c.queries, 80);
        assert_eq!(c.primary, "ndcg@10");
        assert_eq!(c.winner, Winner::B);
        let ndcg = &c.metrics[0];
        assert_eq!(ndcg.verdict, Verdict::Better);
        assert!(ndcg.wilcoxon_p.unwrap() < 1e-6 && ndcg.t_p.unwrap() < 1e-6);
        let (lo, hi) = ndcg.ci95.unwrap();
        assert!(lo > 0.09 && hi < 0.12, "{lo} {hi}");
        // Latency is identical: no test, no verdict; query 3 (no latency) left out.
        assert_eq!(c.metrics[1].verdict, Verdict::NoSignificantDifference);
        assert_eq!(c.categories.len(), 2);
        assert_eq!(c.categories[0].queries, 40);
        assert!(c.categories[0].means[0].1 > c.categories[0].means[0].0);
        // The reverse direction: A wins.
        let c = compare_runs(&b, &a, &options()).unwrap();
        assert_eq!(c.winner, Winner::A);
    }

    #[test]
    fn identical_runs_are_all_draws_with_no_difference() {
        let a = run("a", 0.0, false);
        let c = compare_runs(&a, &a.clone(), &options()).unwrap();
        assert_eq!(c.winner, Winner::NoSignificantDifference);
        assert_eq!(c.outcomes.draw, 80);
        assert_eq!(c.outcomes.win + c.outcomes.loss + c.outcomes.regression, 0);
        assert!(c.metrics.iter().all(|m| m.delta == 0.0));
    }

    #[test]
    fn lost_documents_are_regressions_and_mismatches_are_reported() {
        let a = run("a", 0.0, false);
        let mut b = run("b", 0.0, true);
        b.queries.pop();
        b.queries.push(QueryValues {
            query_id: "extra".into(),
            ..b.queries[0].clone()
        });
        let c = compare_runs(&a, &b, &options()).unwrap();
        assert_eq!(c.outcomes.regression, 20);
        assert_eq!(c.only_in_a, vec!["Q079".to_string()]);
        assert_eq!(c.only_in_b, vec!["extra".to_string()]);
        let bad = EvalCompareOptions {
            primary: Some("mrr@5".into()),
            ..options()
        };
        assert!(
            compare_runs(&a, &b, &bad)
                .unwrap_err()
                .to_string()
                .contains("ndcg@10, latency_ms")
        );
        let mut dup = a.clone();
        dup.queries.push(a.queries[0].clone());
        assert!(compare_runs(&dup, &b, &options()).is_err());
    }
}
