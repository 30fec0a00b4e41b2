//! The retrieval task: a search step's answers, and the exact top-K of the same step, scored
//! against the dataset's relevance judgments by `eval`'s code, so that a table shows what
//! approximate search costs the answer ("ANN recall 0.82, NDCG@10 0.601 vs 0.612 exact").
//!
//! A result is judged by the base row its id holds at that step (in a build-only runbook, the
//! id itself); an id that holds nothing is never relevant. Results are ranked by the distance
//! the harness recomputed, with the scores of the TREC run files `bench --trec-run` writes
//! (repeated ids skipped), and the means are trec_eval's `-c`: every judged query counts, one
//! without results as empty. `ragdbeval eval -c` (or `trec_eval -c`) on the exported run and
//! the dataset's `qrels.txt` gives the same figures.

use std::collections::{BTreeMap, HashSet};

use super::search::LiveState;
use crate::dataset::judgments::TaskJudgments;
use crate::engine::PointId;
use crate::eval::evaluate::{Averaging, EvalOptions, evaluate};
use crate::eval::score::Gain;
use crate::eval::{Hit, Run, RunQuery};
use crate::groundtruth::GroundTruth;
use crate::metrics::ranking::ranking_scores;
use crate::results::EndTask;

/// The metrics kept, at each depth.
const METRICS: [&str; 5] = ["ndcg", "recall", "mrr", "hit", "map"];

/// One query's answer: ids in rank order and their recomputed distances (NaN: no distance).
pub type RankedAnswer<'a> = (&'a [PointId], &'a [f32]);

/// The depths scored: 10 and the search's K, none beyond K.
fn depths(k: usize) -> Vec<usize> {
    let mut ks = vec![k];
    if k > 10 {
        ks.insert(0, 10);
    }
    ks
}

/// Scores `answer_of(q)` for every judged query `q`, and the exact top-`k` of `truth`, against
/// `judgments`.
pub fn score<'a>(
    judgments: &TaskJudgments,
    k: usize,
    live: &LiveState,
    truth: &GroundTruth,
    answer_of: impl Fn(usize) -> RankedAnswer<'a>,
) -> EndTask {
    let queries = judged_queries(judgments);
    let run = |list_of: &dyn Fn(usize) -> (Vec<PointId>, Vec<f32>)| Run {
        queries: queries
            .iter()
            .map(|&q| {
                let (ids, distances) = list_of(q);
                run_query(q, &ids, &distances, live)
            })
            .collect(),
    };
    let engine = run(&|q| {
        let (ids, distances) = answer_of(q);
        (ids.to_vec(), distances.to_vec())
    });
    let exact = run(&|q| exact_top(truth, q, k));
    EndTask {
        queries: queries.len(),
        metrics: means(judgments, &engine, k),
        exact: means(judgments, &exact, k),
    }
}

/// The query indices the judgments hold (they are checked to be indices when loaded).
fn judged_queries(judgments: &TaskJudgments) -> Vec<usize> {
    judgments
        .judgments
        .queries
        .iter()
        .filter_map(|q| q.id.parse().ok())
        .collect()
}

/// The exact top-`k` of query `q` (the live set's; padding left out).
fn exact_top(truth: &GroundTruth, q: usize, k: usize) -> (Vec<PointId>, Vec<f32>) {
    let depth = k.min(truth.k);
    let ids: Vec<PointId> = truth.ids_of(q)[..depth]
        .iter()
        .copied()
        .take_while(|id| *id != PointId::MAX)
        .collect();
    let distances = truth.distances_of(q)[..ids.len()].to_vec();
    (ids, distances)
}

/// One query of the run: each id judged by the base row it holds, scored as the TREC export
/// scores it.
fn run_query(q: usize, ids: &[PointId], distances: &[f32], live: &LiveState) -> RunQuery {
    let natural: Vec<Option<f32>> = distances.iter().map(|d| Some(*d)).collect();
    let scores = ranking_scores(&natural);
    let mut seen: HashSet<PointId> = HashSet::with_capacity(ids.len());
    let hits = ids
        .iter()
        .zip(scores)
        .filter(|(id, _)| seen.insert(**id))
        .map(|(id, score)| {
            let document = match live.row_of.get(*id as usize).copied().flatten() {
                Some(row) => row.to_string(),
                None => format!("not-live-{id}"),
            };
            Hit::new(document, f64::from(score))
        })
        .collect();
    RunQuery {
        id: q.to_string(),
        hits,
        answer: None,
        latency_ms: None,
    }
}

/// The kept metrics' means over every judged query.
fn means(judgments: &TaskJudgments, run: &Run, k: usize) -> BTreeMap<String, f64> {
    let options = EvalOptions {
        ks: depths(k),
        gain: Gain::Linear,
        reject_below: None,
        averaging: Some(Averaging::TrecEvalComplete),
    };
    let evaluation = evaluate(&judgments.judgments, run, &options);
    evaluation
        .aggregate
        .metrics
        .into_iter()
        .filter(|(name, _)| {
            name.split_once('@')
                .is_some_and(|(metric, _)| METRICS.contains(&metric))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::FileDigest;
    use crate::eval::{JudgedQuery, Judgments, Matching, Reference};

    fn judgments(relevant: &[(usize, &[u64])]) -> TaskJudgments {
        let queries = relevant
            .iter()
            .map(|(q, docs)| JudgedQuery {
                id: q.to_string(),
                references: docs
                    .iter()
                    .map(|d| Reference {
                        document: d.to_string().into(),
                        page: None,
                        grade: 1,
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        TaskJudgments {
            file: FileDigest {
                path: "qrels.txt".into(),
                bytes: 0,
                sha256: String::new(),
            },
            judgments: Judgments {
                queries,
                matching: Matching::Exact,
            },
            dropped_queries: 0,
        }
    }

    fn live(n: usize) -> LiveState {
        let mut live = LiveState::empty(n);
        let ids: Vec<PointId> = (0..n as PointId).collect();
        let rows: Vec<usize> = (0..n).collect();
        live.upsert(&ids, &rows);
        live
    }

    /// Two queries, K = 2. Query 0: relevant {3}; the engine returns [1, 3] (hit at rank 2),
    /// the truth is [3, 1] (rank 1). Query 1: relevant {5}, the engine returns [2, 4] (miss),
    /// the truth [5, 2]. NDCG@2 engine: (1/log2(3) + 0) / 2; exact: (1 + 1) / 2.
    #[test]
    fn engine_and_exact_are_scored_by_hand() {
        let truth = GroundTruth {
            k: 2,
            ids: vec![3, 1, 5, 2],
            distances: vec![0.1, 0.2, 0.3, 0.4],
        };
        let answers: [(Vec<PointId>, Vec<f32>); 2] =
            [(vec![1, 3], vec![0.2, 0.1]), (vec![2, 4], vec![0.4, 0.5])];
        let task = score(
            &judgments(&[(0, &[3]), (1, &[5])]),
            2,
            &live(8),
            &truth,
            |q| (&answers[q].0, &answers[q].1),
        );
        assert_eq!(task.queries, 2);
        let ndcg = 1.0 / 3f64.log2() / 2.0;
        assert!((task.metrics["ndcg@2"] - ndcg).abs() < 1e-12, "{task:?}");
        assert_eq!(task.metrics["recall@2"], 0.5);
        assert_eq!(task.metrics["mrr@2"], 0.25);
        assert_eq!(task.metrics["hit@2"], 0.5);
        assert_eq!(task.exact["ndcg@2"], 1.0);
        assert_eq!(task.exact["mrr@2"], 1.0);
        assert!(!task.metrics.contains_key("precision@2"));
    }

    /// An id not live is never relevant, even when its number is a judged row; a query with
    /// no answer counts as empty.
    #[test]
    fn ids_not_live_and_empty_answers_score_zero() {
        let truth = GroundTruth {
            k: 1,
            ids: vec![4, 5],
            distances: vec![0.1, 0.3],
        };
        let mut state = live(8);
        state.delete(&[3]);
        let answers: [(Vec<PointId>, Vec<f32>); 2] = [(vec![3], vec![f32::NAN]), (vec![], vec![])];
        let task = score(
            &judgments(&[(0, &[3]), (1, &[5])]),
            1,
            &state,
            &truth,
            |q| (&answers[q].0, &answers[q].1),
        );
        assert_eq!(task.metrics["hit@1"], 0.0);
        assert_eq!(task.exact["hit@1"], 0.5);
    }

    #[test]
    fn depths_are_ten_and_k_never_beyond_k() {
        assert_eq!(depths(5), [5]);
        assert_eq!(depths(10), [10]);
        assert_eq!(depths(100), [10, 100]);
    }
}
