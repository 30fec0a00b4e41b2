//! One run scored against its judgments: per query every metric, their means over the queries
//! they apply to, the same per category and difficulty, rejection accuracy, latency
//! percentiles and answer metrics.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use serde::Serialize;

use super::score::{
    AT_K_METRICS, Gain, at_k, ideal_grades, match_results, percentile, r_precision,
    reciprocal_rank, score_discrimination,
};
use super::{Hit, JudgedQuery, Judgments, Matching, Run, RunQuery};
use crate::metrics::answers::{AnswerInput, score_answer};

/// Which judged queries the retrieval means average over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Averaging {
    /// trec_eval's default: every judged query the run answers, those judged only
    /// non-relevant included (their values are trec_eval's: 0, recall too).
    TrecEval,
    /// trec_eval's `-c`: every judged query, those missing from the run scored as empty
    /// answers.
    TrecEvalComplete,
    /// The RAG ground-truth JSONL convention: queries with at least one relevant judgment
    /// (rejection queries apart), those missing from the run scored as empty answers.
    Answerable,
}

impl Averaging {
    /// The name the CLI takes and the outputs print.
    pub fn name(self) -> &'static str {
        match self {
            Averaging::TrecEval => "trec_eval",
            Averaging::TrecEvalComplete => "trec_eval-c",
            Averaging::Answerable => "answerable",
        }
    }

    /// The convention of a judgments format: trec_eval's for TREC qrels, answerable queries
    /// for the RAG ground-truth JSONL.
    pub fn default_for(matching: Matching) -> Averaging {
        match matching {
            Matching::Exact => Averaging::TrecEval,
            Matching::Fuzzy => Averaging::Answerable,
        }
    }

    /// Whether a query counts in the retrieval means.
    fn counts(self, judged: &JudgedQuery, relevant: usize, in_run: bool) -> bool {
        match self {
            Averaging::TrecEval => in_run,
            Averaging::TrecEvalComplete => true,
            Averaging::Answerable => !judged.is_rejection && relevant > 0,
        }
    }

    /// Recall of a query without a relevant judgment: 0 as trec_eval computes it, 1
    /// (vacuous) where such queries are left out of the means anyway.
    fn recall_without_relevant(self) -> f64 {
        match self {
            Averaging::Answerable => 1.0,
            Averaging::TrecEval | Averaging::TrecEvalComplete => 0.0,
        }
    }
}

/// How to score.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    pub ks: Vec<usize>,
    pub gain: Gain,
    /// A rejection query is rejected when no result scores at least this (default: when the
    /// run returns nothing).
    pub reject_below: Option<f64>,
    /// Which queries the means average over; `None`: the judgments format's convention
    /// ([`Averaging::default_for`]).
    pub averaging: Option<Averaging>,
}

/// One query's values.
#[derive(Debug, Clone, Serialize)]
pub struct QueryScore {
    pub query_id: String,
    pub category: Option<String>,
    pub difficulty: Option<String>,
    pub is_rejection: bool,
    /// Relevant judgments (R).
    pub relevant: usize,
    pub returned: usize,
    /// Whether the query counts in the retrieval means ([`Averaging`]).
    pub counted: bool,
    /// One value per [`Evaluation::metric_names`] (NaN: not defined for this query, `null`
    /// in JSON).
    pub metrics: Vec<f64>,
    /// 1-based rank of the first relevant result.
    pub first_relevant_rank: Option<usize>,
    /// The relevant documents returned (the references they matched).
    pub relevant_returned: Vec<String>,
    /// For a rejection query: whether the run rejected it.
    pub rejected: Option<bool>,
    /// Results that matched ambiguously (1-based ranks).
    pub ambiguous_ranks: Vec<usize>,
}

/// Means over a set of queries.
#[derive(Debug, Clone, Serialize)]
pub struct Aggregate {
    pub queries: usize,
    /// Queries the retrieval metrics average over ([`Averaging`]).
    pub scored: usize,
    pub metrics: BTreeMap<String, f64>,
    pub rejection_queries: usize,
    pub rejection_accuracy: f64,
}

/// The whole evaluation.
#[derive(Debug, Clone, Serialize)]
pub struct Evaluation {
    pub ks: Vec<usize>,
    /// The per-query metrics, in the order of [`QueryScore::metrics`].
    pub metric_names: Vec<String>,
    pub gain: &'static str,
    pub matching: &'static str,
    /// Which queries the retrieval means average over ([`Averaging::name`]).
    pub averaging: &'static str,
    pub reject_below: Option<f64>,
    pub aggregate: Aggregate,
    pub by_category: BTreeMap<String, Aggregate>,
    pub by_difficulty: BTreeMap<String, Aggregate>,
    /// Latency percentiles (ms) over the queries that carry one.
    pub latency_ms: BTreeMap<String, f64>,
    /// Judged queries the run has no line for (scored as empty results).
    pub missing_from_run: Vec<String>,
    /// Run queries without judgments (left out, as trec_eval does).
    pub not_judged: Vec<String>,
    pub ambiguous_matches: usize,
    pub per_query: Vec<QueryScore>,
}

/// The per-query metric names, in output order.
pub fn metric_names(ks: &[usize]) -> Vec<String> {
    let mut names = Vec::new();
    for m in AT_K_METRICS {
        for k in ks {
            names.push(format!("{m}@{k}"));
        }
    }
    names.extend(
        ["r_precision", "rr", "score_cv"]
            .iter()
            .map(|s| s.to_string()),
    );
    names
}

/// Answer metric names (present when the run carries answers).
pub const ANSWER_METRICS: [&str; 7] = [
    "exact_match",
    "token_f1",
    "rouge_l_f1",
    "answer_relevance",
    "support_coverage",
    "support_density",
    "hallucination_rate",
];

/// Whether a larger value of `metric` is better (everything but AQWV's costs and latency is
/// a score; hallucination rate is a cost).
pub fn higher_is_better(metric: &str) -> bool {
    !matches!(metric, "hallucination_rate" | "latency_ms")
}

/// Which metrics each query has: the retrieval metrics always, latency and the answer
/// metrics when the run carries any.
struct Layout {
    len: usize,
    latency: bool,
    answers: bool,
    averaging: Averaging,
}

fn score_query(
    layout: &Layout,
    judged: &JudgedQuery,
    answer: Option<&RunQuery>,
    judgments: &Judgments,
    options: &EvalOptions,
) -> QueryScore {
    let empty = RunQuery::default();
    let run_query = answer.unwrap_or(&empty);
    let hits = &run_query.hits;
    let matched = match_results(judged, hits, judgments.matching);
    let ideal = ideal_grades(&judged.references);
    let mut metrics = Vec::with_capacity(layout.len);
    let at: Vec<_> = options
        .ks
        .iter()
        .map(|k| {
            let mut a = at_k(&matched.grades, &ideal, *k, options.gain);
            if ideal.is_empty() {
                a.recall = layout.averaging.recall_without_relevant();
            }
            a
        })
        .collect();
    for mi in 0..AT_K_METRICS.len() {
        metrics.extend(at.iter().map(|a| a.values()[mi]));
    }
    metrics.push(r_precision(&matched.grades, ideal.len()));
    metrics.push(reciprocal_rank(&matched.grades));
    metrics.push(score_discrimination(hits).unwrap_or(f64::NAN));
    if layout.latency {
        metrics.push(run_query.latency_ms.unwrap_or(f64::NAN));
    }
    if layout.answers {
        let values = match &run_query.answer {
            Some(text) => {
                let retrieved: Option<Vec<&str>> = hits.iter().map(Hit::text).collect();
                let golds: Vec<&str> = judged.gold_answers.iter().map(String::as_str).collect();
                let scores = score_answer(&AnswerInput {
                    answer: text,
                    golds: &golds,
                    question: judged.text.as_deref(),
                    retrieved: retrieved.as_deref().filter(|r| !r.is_empty()),
                });
                [
                    scores.exact_match,
                    scores.token_f1,
                    scores.rouge_l_f1,
                    scores.answer_relevance,
                    scores.support_coverage,
                    scores.support_density,
                    scores.hallucination_rate,
                ]
            }
            None => [None; 7],
        };
        metrics.extend(values.iter().map(|v| v.unwrap_or(f64::NAN)));
    }
    let rejected = judged.is_rejection.then(|| match options.reject_below {
        None => hits.is_empty(),
        Some(threshold) => hits.iter().all(|h| h.score < threshold || h.score.is_nan()),
    });
    let first_relevant_rank = matched.grades.iter().position(|g| *g >= 1).map(|i| i + 1);
    let relevant_returned = matched
        .reference
        .iter()
        .zip(&matched.grades)
        .filter(|(_, g)| **g >= 1)
        .filter_map(|(r, _)| r.map(|r| reference_key(judged, r)))
        .collect();
    QueryScore {
        query_id: judged.id.clone(),
        category: judged.category.clone(),
        difficulty: judged.difficulty.clone(),
        is_rejection: judged.is_rejection,
        relevant: ideal.len(),
        returned: hits.len(),
        counted: layout
            .averaging
            .counts(judged, ideal.len(), answer.is_some()),
        metrics,
        first_relevant_rank,
        relevant_returned,
        rejected,
        ambiguous_ranks: matched.ambiguous.iter().map(|r| r + 1).collect(),
    }
}

fn reference_key(judged: &JudgedQuery, r: usize) -> String {
    let reference = &judged.references[r];
    match reference.page {
        Some(p) => format!("{}#{p}", reference.document),
        None => reference.document.to_string(),
    }
}

/// Means of each metric over the queries it applies to: retrieval metrics over the counted
/// queries ([`Averaging`]), answer metrics and latency over the queries that have them, NaN
/// where no query has a value.
fn aggregate(queries: &[&QueryScore], names: &[String], retrieval: usize) -> Aggregate {
    let scored = queries.iter().filter(|q| q.counted).count();
    let mut sums = vec![(0.0f64, 0usize); names.len()];
    for q in queries {
        for (i, v) in q.metrics.iter().enumerate() {
            if (i < retrieval && !q.counted) || !v.is_finite() {
                continue;
            }
            sums[i].0 += v;
            sums[i].1 += 1;
        }
    }
    let rejections: Vec<bool> = queries.iter().filter_map(|q| q.rejected).collect();
    Aggregate {
        queries: queries.len(),
        scored,
        metrics: names
            .iter()
            .zip(sums)
            .map(|(name, (s, n))| {
                let mean = if n == 0 { f64::NAN } else { s / n as f64 };
                (name.clone(), mean)
            })
            .collect(),
        rejection_queries: rejections.len(),
        rejection_accuracy: if rejections.is_empty() {
            f64::NAN
        } else {
            rejections.iter().filter(|r| **r).count() as f64 / rejections.len() as f64
        },
    }
}

/// Scores `run` against `judgments`.
pub fn evaluate(judgments: &Judgments, run: &Run, options: &EvalOptions) -> Evaluation {
    let mut by_id: HashMap<&str, &RunQuery> = HashMap::default();
    by_id.reserve(run.queries.len());
    by_id.extend(run.queries.iter().map(|q| (q.id.as_str(), q)));
    let judged_ids: HashMap<&str, ()> = judgments
        .queries
        .iter()
        .map(|q| (q.id.as_str(), ()))
        .collect();
    let mut metric_names = metric_names(&options.ks);
    let retrieval = metric_names.len();
    let latency = run.queries.iter().any(|q| q.latency_ms.is_some());
    let answers = run.queries.iter().any(|q| q.answer.is_some());
    if latency {
        metric_names.push("latency_ms".into());
    }
    if answers {
        metric_names.extend(ANSWER_METRICS.iter().map(|s| s.to_string()));
    }
    let averaging = options
        .averaging
        .unwrap_or(Averaging::default_for(judgments.matching));
    let layout = Layout {
        len: metric_names.len(),
        latency,
        answers,
        averaging,
    };
    let per_query: Vec<QueryScore> = {
        use rayon::prelude::*;
        judgments
            .queries
            .par_iter()
            .map(|j| {
                let answer = by_id.get(j.id.as_str()).copied();
                score_query(&layout, j, answer, judgments, options)
            })
            .collect()
    };
    let missing_from_run = judgments
        .queries
        .iter()
        .filter(|j| !by_id.contains_key(j.id.as_str()))
        .map(|j| j.id.clone())
        .collect();
    let not_judged = run
        .queries
        .iter()
        .filter(|q| !judged_ids.contains_key(q.id.as_str()))
        .map(|q| q.id.clone())
        .collect();
    let all: Vec<&QueryScore> = per_query.iter().collect();
    let group = |key: fn(&QueryScore) -> Option<&String>| {
        let mut groups: BTreeMap<String, Vec<&QueryScore>> = BTreeMap::new();
        for q in &per_query {
            if let Some(k) = key(q) {
                groups.entry(k.clone()).or_default().push(q);
            }
        }
        groups
            .into_iter()
            .map(|(k, qs)| (k, aggregate(&qs, &metric_names, retrieval)))
            .collect::<BTreeMap<_, _>>()
    };
    let mut latencies: Vec<f64> = if latency {
        per_query
            .iter()
            .map(|q| q.metrics[retrieval])
            .filter(|v| v.is_finite())
            .collect()
    } else {
        Vec::new()
    };
    latencies.sort_by(f64::total_cmp);
    let latency_ms = [("p50", 50.0), ("p95", 95.0), ("p99", 99.0)]
        .iter()
        .filter_map(|(name, p)| Some((name.to_string(), percentile(&latencies, *p)?)))
        .collect();
    let aggregate_all = aggregate(&all, &metric_names, retrieval);
    let by_category = group(|q| q.category.as_ref());
    let by_difficulty = group(|q| q.difficulty.as_ref());
    Evaluation {
        ks: options.ks.clone(),
        metric_names,
        gain: match options.gain {
            Gain::Linear => "linear",
            Gain::Exponential => "exp",
        },
        matching: match judgments.matching {
            Matching::Exact => "exact",
            Matching::Fuzzy => "fuzzy",
        },
        averaging: averaging.name(),
        reject_below: options.reject_below,
        aggregate: aggregate_all,
        by_category,
        by_difficulty,
        latency_ms,
        missing_from_run,
        not_judged,
        ambiguous_matches: per_query.iter().map(|q| q.ambiguous_ranks.len()).sum(),
        per_query,
    }
}

/// Interpretation bands of the RAG ground-truth JSONL format, for the metrics it gives them.
pub fn band(metric: &str, value: f64) -> Option<&'static str> {
    let thresholds: [(f64, &str); 3] = match metric {
        "hit@5" => [(0.90, "excellent"), (0.75, "good"), (0.50, "needs work")],
        "mrr@5" => [(0.80, "excellent"), (0.50, "good"), (0.30, "needs work")],
        "ndcg@5" => [(0.80, "excellent"), (0.60, "good"), (0.40, "fair")],
        _ => return None,
    };
    if !value.is_finite() {
        return None;
    }
    Some(
        thresholds
            .iter()
            .find(|(t, _)| value > *t)
            .map_or("poor", |(_, label)| label),
    )
}
