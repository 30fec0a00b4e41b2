//! Datasets with relevance judgments (`qrels.txt` beside the vectors, as `ragdbeval embed`
//! writes them): each search step is also scored on the retrieval task, with the figures
//! `ragdbeval eval --means trec_eval-c` gives on the TREC run the step exported; `verify`
//! recomputes them, the report shows them beside recall, and bad judgments stop the run
//! before any work with one line naming the file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::common::{ragdbeval, stderr, stdout, succeeds};
use ragdbeval::dataset::{self, LoadOptions};
use ragdbeval::results::{RunResult, Step};

const DATASET: &str = "gen:clustered:n=2000,dim=16,queries=40,seed=4";

/// The generated set as a big-ann directory `set/` with a `qrels.txt`: per query (the last
/// one left unjudged) its 3rd true neighbour at grade 2, its 15th at grade 1, and one row
/// unrelated to it at grade 1, so neither the engines nor the exact top-K reach every
/// relevant row.
fn dataset_with_judgments(cwd: &Path) -> PathBuf {
    let set = cwd.join("set");
    succeeds(
        cwd,
        &argv![
            "dataset convert -q -k 20 --dataset",
            DATASET,
            "--to fbin --out",
            set.to_str().unwrap()
        ],
    );
    let opts = LoadOptions {
        gt_k: 20,
        ..LoadOptions::default()
    };
    let loaded = dataset::load(set.to_str().unwrap(), &opts).unwrap();
    let mut qrels = String::new();
    for q in 0..loaded.test.len() - 1 {
        let truth = loaded.ground_truth.ids_of(q);
        let unrelated = (q * 37 + 11) % loaded.train.len();
        writeln!(qrels, "{q} 0 {} 2", truth[2]).unwrap();
        writeln!(qrels, "{q} 0 {} 1", truth[14]).unwrap();
        writeln!(qrels, "{q} 0 {unrelated} 1").unwrap();
    }
    std::fs::write(set.join("qrels.txt"), qrels).unwrap();
    set
}

fn result(cwd: &Path, name: &str) -> RunResult {
    RunResult::load(&cwd.join(format!("results/{name}.json"))).unwrap()
}

fn end_tasks(result: &RunResult) -> Vec<&ragdbeval::results::EndTask> {
    result.configs[0]
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Search(s) => s.end_task.as_ref(),
            _ => None,
        })
        .collect()
}

/// `eval`'s aggregate figure `metric` of a `--json` file.
fn eval_figure(path: &Path, metric: &str) -> f64 {
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    json["aggregate"]["metrics"][metric]
        .as_f64()
        .unwrap_or_else(|| panic!("{metric} in {json:.300}"))
}

#[test]
fn the_exact_engine_scores_as_eval_does_on_its_exported_run_and_verify_agrees() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let set = dataset_with_judgments(d);
    let set = set.to_str().unwrap();
    succeeds(
        d,
        &argv![
            "bench -q --db exact --runbook build-search --dataset",
            set,
            "--warmup 0 -k 20 --name r --trec-run run.trec"
        ],
    );
    let r = result(d, "r");
    let judged = r.dataset.judgments.as_ref().expect("judgments recorded");
    assert_eq!((judged.queries, judged.dropped_queries), (39, 0));
    let task = end_tasks(&r)[0];
    assert_eq!(task.queries, 39);
    // The exact engine's answers are the exact top-K: the same figures on both sides.
    assert_eq!(task.metrics, task.exact);
    let ndcg = task.metrics["ndcg@10"];
    assert!(ndcg > 0.1 && ndcg < 1.0, "{task:?}");

    succeeds(
        d,
        &argv![
            "eval --means trec_eval-c --full-precision --qrels",
            &format!("{set}/qrels.txt"),
            "--run run.trec --json e.json"
        ],
    );
    for (name, value) in &task.metrics {
        let again = eval_figure(&d.join("e.json"), name);
        assert!(
            (value - again).abs() < 1e-12,
            "{name}: {value} vs eval {again}"
        );
    }
    assert_eq!(
        task.metrics.keys().collect::<Vec<_>>(),
        [
            "hit@10",
            "hit@20",
            "map@10",
            "map@20",
            "mrr@10",
            "mrr@20",
            "ndcg@10",
            "ndcg@20",
            "recall@10",
            "recall@20"
        ]
    );

    let verified = ragdbeval(d, &["verify", "results/r.json"]);
    assert!(verified.status.success(), "{}", stderr(&verified));

    // A figure changed by hand is found.
    let path = d.join("results/r.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let changed = text.replacen(&format!("\"ndcg@10\": {ndcg}"), "\"ndcg@10\": 0.999", 1);
    assert_ne!(changed, text, "the figure as written");
    std::fs::write(&path, changed).unwrap();
    let bad = ragdbeval(d, &["verify", "results/r.json"]);
    assert!(!bad.status.success());
    assert!(
        format!("{}{}", stdout(&bad), stderr(&bad)).contains("end task ndcg@10"),
        "{}",
        stdout(&bad)
    );
}

#[cfg(feature = "qdrant-edge")]
#[test]
fn an_approximate_sweep_shows_task_ndcg_beside_recall_in_the_report() {
    use crate::common::files_in;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let set = dataset_with_judgments(d);
    succeeds(
        d,
        &argv![
            "bench -q --db qdrant-edge --runbook build-search --dataset",
            set.to_str().unwrap(),
            "--warmup 0 -k 10 --build-param m=4 --build-param ef_construct=8",
            "--search-param hnsw_ef=1,64 --name hnsw"
        ],
    );
    let r = result(d, "hnsw");
    let tasks = end_tasks(&r);
    assert_eq!(tasks.len(), 2, "one per setting");
    for task in &tasks {
        assert_eq!(
            task.exact, tasks[0].exact,
            "one exact top-K for both settings"
        );
        assert!(task.metrics.contains_key("ndcg@10"));
    }
    let out = succeeds(d, &["report", "results/hnsw.json", "--out", "rep/"]);
    assert!(stdout(&out).contains("plots"), "{}", stdout(&out));
    let plots = files_in(&d.join("rep/plots"));
    assert!(
        plots
            .iter()
            .any(|p| p.to_string_lossy().ends_with("-task-ndcg-qps.svg")),
        "{plots:?}"
    );
    let md = std::fs::read_to_string(d.join("rep/report.md")).unwrap();
    assert!(
        md.contains("task NDCG@10") && md.contains("exact NDCG@10"),
        "{md}"
    );
    let csv = std::fs::read_to_string(d.join("rep/results.csv")).unwrap();
    assert!(csv.lines().next().unwrap().contains("task_ndcg_at_10"));
}

#[test]
fn judgments_that_do_not_name_queries_and_rows_stop_the_run_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let set = dataset_with_judgments(d);
    std::fs::write(set.join("qrels.txt"), "q1 0 5 1\n").unwrap();
    let out = ragdbeval(
        d,
        &argv![
            "bench -q --db exact --runbook build-search --dataset",
            set.to_str().unwrap(),
            "--name r"
        ],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("qrels.txt") && err.contains("query id `q1` is not a query index"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!d.join("results/r.json").exists());
}
