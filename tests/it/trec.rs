//! `bench --trec-run` and `dataset qrels`: the two files meet, so that recall@k
//! computed from them alone, as trec_eval would (results sorted by score descending), is the
//! recall the bench reports; an unwritable file fails before the benchmark.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::common::{files_in, ragdbeval, stderr, succeeds, succeeds_in_temp};

const DATASET: &str = "gen:uniform:n=2000,dim=16,queries=50,seed=1";

/// qid → (score, docid) of a run file; checks the columns, that ranks count from 1 in file
/// order and that scores strictly decrease with them (so trec_eval's sort keeps the order).
fn read_run(path: &Path) -> HashMap<String, Vec<(f64, String)>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut run: HashMap<String, Vec<(f64, String)>> = HashMap::new();
    for line in text.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols.len(), 6, "{line}");
        assert_eq!(cols[1], "Q0", "{line}");
        let results = run.entry(cols[0].to_string()).or_default();
        assert_eq!(
            cols[3].parse::<usize>().unwrap(),
            results.len() + 1,
            "{line}"
        );
        let score: f64 = cols[4].parse().unwrap();
        if let Some((previous, _)) = results.last() {
            // As trec_eval holds them: C floats.
            assert!(
                (score as f32) < (*previous as f32),
                "scores must strictly decrease: {line}"
            );
        }
        results.push((score, cols[2].to_string()));
    }
    run
}

/// qid → relevant docids of a qrels file.
fn read_qrels(path: &Path) -> HashMap<String, HashSet<String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut qrels: HashMap<String, HashSet<String>> = HashMap::new();
    for line in text.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(cols.len(), 4, "{line}");
        assert_eq!((cols[1], cols[3]), ("0", "1"), "{line}");
        qrels
            .entry(cols[0].to_string())
            .or_default()
            .insert(cols[2].to_string());
    }
    qrels
}

/// Mean recall@k over the queries of the qrels, trec_eval's way: the run sorted by score
/// descending (ties by docid descending), cut at k.
fn recall_at(
    run: &HashMap<String, Vec<(f64, String)>>,
    qrels: &HashMap<String, HashSet<String>>,
    k: usize,
) -> f64 {
    let mut sum = 0.0;
    for (qid, relevant) in qrels {
        let mut ranked = run.get(qid).cloned().unwrap_or_default();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
        let hits = ranked
            .iter()
            .take(k)
            .filter(|(_, doc)| relevant.contains(doc))
            .count();
        sum += hits as f64 / relevant.len() as f64;
    }
    sum / qrels.len() as f64
}

/// Mean NDCG@k with binary gains (trec_eval's `ndcg_cut.k`) over the queries of the qrels:
/// sensitive to the order of the results, which recall is not.
fn ndcg_at(
    run: &HashMap<String, Vec<(f64, String)>>,
    qrels: &HashMap<String, HashSet<String>>,
    k: usize,
) -> f64 {
    let gain = |i: usize| 1.0 / ((i + 2) as f64).log2();
    let mut sum = 0.0;
    for (qid, relevant) in qrels {
        let mut ranked = run.get(qid).cloned().unwrap_or_default();
        ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
        let dcg: f64 = ranked
            .iter()
            .take(k)
            .enumerate()
            .filter(|(_, (_, doc))| relevant.contains(doc))
            .map(|(i, _)| gain(i))
            .sum();
        let ideal: f64 = (0..k.min(relevant.len())).map(gain).sum();
        sum += dcg / ideal;
    }
    sum / qrels.len() as f64
}

/// The bench's reported value of `figure` for each search step, in order.
fn reported(result: &Path, figure: &str) -> Vec<f64> {
    let value: serde_json::Value = serde_json::from_slice(&std::fs::read(result).unwrap()).unwrap();
    value["configs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["steps"].as_array().unwrap().clone())
        .filter(|s| s["phase"] == "search")
        .map(|s| s["quality"][figure].as_f64().unwrap())
        .collect()
}

/// The bench's reported recall of each search step, in order.
fn reported_recalls(result: &Path) -> Vec<f64> {
    reported(result, "recall")
}

/// Recall@k from the numbered run files and qrels files `1..=n` paired by number.
fn recalls_from_pairs(dir: &Path, run: &str, qrels: &str, n: usize, k: usize) -> Vec<f64> {
    (1..=n)
        .map(|i| {
            let judged = read_qrels(&dir.join(format!("{qrels}.{i}.qrels")));
            recall_at(&read_run(&dir.join(format!("{run}.{i}.trec"))), &judged, k)
        })
        .collect()
}

fn qrels(dir: &Path, k: &str) -> HashMap<String, HashSet<String>> {
    let out = ragdbeval(
        dir,
        &argv![
            "dataset qrels -q --dataset",
            DATASET,
            "-k",
            k,
            "--out truth.qrels"
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let qrels = read_qrels(&dir.join("truth.qrels"));
    assert_eq!(qrels.len(), 50, "every query judged");
    assert!(qrels.values().all(|r| r.len().to_string() == k));
    qrels
}

#[test]
fn exact_engine_run_scores_recall_one_against_the_qrels() {
    let (dir, _) = succeeds_in_temp(&argv![
        "bench -q --db exact --runbook build-search --dataset",
        DATASET,
        "--warmup 0 -k 10 --name r --trec-run runs/exact.trec"
    ]);
    let run = read_run(&dir.path().join("runs/exact.trec"));
    assert_eq!(run.len(), 50);
    assert!(run.values().all(|r| r.len() == 10));
    let qrels = qrels(dir.path(), "10");
    let recall = recall_at(&run, &qrels, 10);
    assert_eq!(
        reported_recalls(&dir.path().join("results/r.json")),
        vec![recall]
    );
    assert_eq!(recall, 1.0);
    let line = std::fs::read_to_string(dir.path().join("runs/exact.trec")).unwrap();
    assert!(
        line.lines().all(|l| l.ends_with(" exact:-:-")),
        "tag: {line:.200}"
    );
}

#[test]
fn approximate_engine_sweep_writes_one_file_per_setting_with_the_reported_recall() {
    let (dir, _) = succeeds_in_temp(&argv![
        "bench -q --db qdrant-edge --runbook build-search --dataset",
        DATASET,
        "--warmup 0 -k 10 --build-param m=4 --build-param ef_construct=8 --search-param hnsw_ef=1,64 --name r --trec-run hnsw.trec"
    ]);
    assert!(
        !dir.path().join("hnsw.trec").exists(),
        "numbered files only"
    );
    let qrels = qrels(dir.path(), "10");
    let from_files: Vec<f64> = ["hnsw.1.trec", "hnsw.2.trec"]
        .iter()
        .map(|name| recall_at(&read_run(&dir.path().join(name)), &qrels, 10))
        .collect();
    let reported = reported_recalls(&dir.path().join("results/r.json"));
    assert_eq!(reported.len(), 2);
    for (file, bench) in from_files.iter().zip(&reported) {
        assert!(
            (file - bench).abs() < 1e-12,
            "files {from_files:?}, bench {reported:?}"
        );
    }
    assert!(
        from_files[0] < 1.0,
        "a low ef misses neighbours: {from_files:?}"
    );
    let first = std::fs::read_to_string(dir.path().join("hnsw.1.trec")).unwrap();
    assert!(
        first
            .lines()
            .all(|l| l.ends_with(" qdrant-edge:ef_construct=8,m=4:hnsw_ef=1")),
        "{first:.200}"
    );
}

#[test]
fn unwritable_trec_files_fail_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("blocker"), "a file, not a directory").unwrap();
    let out = ragdbeval(
        dir.path(),
        &argv![
            "bench -q --db exact --dataset",
            DATASET,
            "--trec-run blocker/run.trec"
        ],
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--trec-run"), "{}", stderr(&out));
    assert!(
        files_in(&dir.path().join("results")).is_empty(),
        "no result left"
    );
    let out = ragdbeval(
        dir.path(),
        &argv![
            "dataset qrels -q --dataset",
            DATASET,
            "--out blocker/q.qrels"
        ],
    );
    assert!(!out.status.success());
    // --no-sidecar leaves nothing to make the run file from.
    let out = ragdbeval(
        dir.path(),
        &argv!["bench -q --db exact --no-sidecar --trec-run run.trec"],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("cannot be used with"),
        "{}",
        stderr(&out)
    );
}

/// The default runbook searches after a 90 % build, an insert, an update and a delete: each
/// search has its own truth, and `dataset qrels --runbook default` writes it, numbered like
/// the run files. Scored against the whole dataset's truth instead, the exact engine would
/// lose the neighbours that are not live yet.
#[test]
fn runbook_qrels_judge_each_search_step_with_its_own_truth() {
    let (dir, _) = succeeds_in_temp(&argv![
        "bench -q --db exact --runbook default --dataset",
        DATASET,
        "--warmup 0 -k 5 --name r --trec-run run.trec"
    ]);
    succeeds(
        dir.path(),
        &argv![
            "dataset qrels -q --dataset",
            DATASET,
            "-k 5 --runbook default --out steps.qrels"
        ],
    );
    let reported = reported_recalls(&dir.path().join("results/r.json"));
    assert_eq!(reported, vec![1.0; 4]);
    assert_eq!(
        recalls_from_pairs(dir.path(), "run", "steps", 4, 5),
        reported
    );
    // The whole dataset's truth does not judge the search after the 90 % build.
    succeeds(
        dir.path(),
        &argv![
            "dataset qrels -q --dataset",
            DATASET,
            "-k 5 --out whole.qrels"
        ],
    );
    let first = read_run(&dir.path().join("run.1.trec"));
    assert!(recall_at(&first, &read_qrels(&dir.path().join("whole.qrels")), 5) < 1.0);
}

/// int8 vectors without rescoring: the engine ranks by its approximate distances, so its
/// answers are out of true-distance order and the run file's scores are nudged to keep its
/// ranking. NDCG, which depends on that order, comes out as the bench's.
#[test]
fn answers_out_of_distance_order_keep_the_engine_ranking() {
    let (dir, _) = succeeds_in_temp(&argv![
        "bench -q --db qdrant-edge --runbook build-search --dataset gen:clustered:n=3000,dim=32,queries=100,seed=3 --warmup 0 -k 10 --build-param quantization=int8 --search-param rescore=false --name r --trec-run int8.trec"
    ]);
    succeeds(
        dir.path(),
        &argv![
            "dataset qrels -q --dataset gen:clustered:n=3000,dim=32,queries=100,seed=3 --out truth.qrels"
        ],
    );
    let run = read_run(&dir.path().join("int8.trec"));
    let qrels = read_qrels(&dir.path().join("truth.qrels"));
    let result = dir.path().join("results/r.json");
    let ndcg = ndcg_at(&run, &qrels, 10);
    assert!(
        (ndcg - reported(&result, "ndcg")[0]).abs() < 1e-12,
        "{ndcg} vs {:?}",
        reported(&result, "ndcg")
    );
    assert!((recall_at(&run, &qrels, 10) - reported_recalls(&result)[0]).abs() < 1e-12);
}
