//! Sparse and hybrid runs (`bench --retrieval sparse|hybrid`) on a dataset directory with
//! sparse vectors, texts and judgments: every engine with a lexical side against the exact
//! counterparts, the task figures equal to `eval` on the exported TREC runs, and bad input
//! refused with one line before anything is written.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::common::{ragdbeval, stderr, succeeds};
use ragdbeval::dataset::lexical;
use ragdbeval::results::{RunResult, SearchStep, Step};
use ragdbeval::sparse::bm25::{Bm25Index, Bm25Params};

const DATASET: &str = "gen:clustered:n=1500,dim=16,queries=30,seed=9";

/// Words of row `r`'s text: a topic shared by its neighbours in id order, and two words of its
/// own, so that lexical and dense retrieval agree in part.
fn row_text(r: usize) -> String {
    format!(
        "topic{} item{} code{} common words here",
        r / 25,
        r,
        (r * 7919) % 600
    )
}

/// The generated set as a big-ann directory with sparse vectors (BM25 of the texts), texts
/// and judgments (query `q` looks for row `q·41 mod n` by its own words).
fn text_set(cwd: &Path) -> PathBuf {
    let set = cwd.join("set");
    succeeds(
        cwd,
        &argv![
            "dataset convert -q -k 100 --dataset",
            DATASET,
            "--to fbin --out",
            set.to_str().unwrap()
        ],
    );
    let (rows, queries) = (1500, 30);
    let base_texts: Vec<String> = (0..rows).map(row_text).collect();
    let targets: Vec<usize> = (0..queries).map(|q| (q * 41) % rows).collect();
    let query_texts: Vec<String> = targets
        .iter()
        .map(|&r| format!("item{r} code{}", (r * 7919) % 600))
        .collect();
    let refs: Vec<&str> = base_texts.iter().map(String::as_str).collect();
    let index = Bm25Index::fit(&refs, Bm25Params::default());
    let qrefs: Vec<&str> = query_texts.iter().map(String::as_str).collect();
    let encoded = index.queries(&qrefs);
    let encoding = serde_json::json!({"encoding": "bm25"});
    let texts = Some((base_texts.as_slice(), query_texts.as_slice()));
    lexical::write(&set, &index.vectors, &encoded, &encoding, texts).unwrap();
    let mut qrels = String::new();
    for (q, r) in targets.iter().enumerate() {
        writeln!(qrels, "{q} 0 {r} 1").unwrap();
    }
    std::fs::write(set.join("qrels.txt"), qrels).unwrap();
    set
}

fn searches(cwd: &Path, name: &str) -> Vec<SearchStep> {
    let r = RunResult::load(&cwd.join(format!("results/{name}.json"))).unwrap();
    assert!(r.dataset.lexical.is_some());
    r.configs[0]
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Search(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

fn bench(cwd: &Path, set: &Path, engine: &str, extra: &[&str], name: &str) -> Vec<SearchStep> {
    let mut args = argv![
        "bench -q --db",
        engine,
        "--dataset",
        set.to_str().unwrap(),
        "--name",
        name
    ];
    args.extend_from_slice(extra);
    succeeds(cwd, &args);
    searches(cwd, name)
}

#[test]
fn exact_scores_one_on_sparse_and_hybrid_and_its_task_figures_equal_eval() {
    let dir = tempfile::tempdir().unwrap();
    let set = text_set(dir.path());
    let trec = dir.path().join("sparse.trec");
    let sparse = bench(
        dir.path(),
        &set,
        "exact",
        &argv!["--retrieval sparse --trec-run", trec.to_str().unwrap()],
        "ex-sparse",
    );
    assert_eq!(sparse[0].quality.recall, 1.0);
    let task = sparse[0]
        .end_task
        .as_ref()
        .expect("judgments score the task");
    // The lexical reference finds every query's row first: its own two words.
    assert_eq!(task.metrics["mrr@10"], 1.0);
    let json = dir.path().join("e.json");
    succeeds(
        dir.path(),
        &argv![
            "eval --means trec_eval-c --full-precision --qrels",
            set.join("qrels.txt").to_str().unwrap(),
            "--run",
            trec.to_str().unwrap(),
            "--json",
            json.to_str().unwrap()
        ],
    );
    let out: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    for (name, value) in &task.metrics {
        let again = out["aggregate"]["metrics"][name]
            .as_f64()
            .expect("the metric in eval's JSON");
        assert!(
            (value - again).abs() < 1e-12,
            "{name}: {value} vs eval {again}"
        );
    }

    let hybrid = bench(
        dir.path(),
        &set,
        "exact",
        &argv!["--retrieval hybrid --search-param fusion=rrf,convex --search-param depth=50"],
        "ex-hybrid",
    );
    assert_eq!(hybrid.len(), 2);
    for s in &hybrid {
        assert_eq!(s.quality.recall, 1.0, "{:?}", s.search_params);
        let t = s.end_task.as_ref().expect("task figures");
        assert_eq!(t.metrics, t.exact);
    }
}

#[cfg(feature = "qdrant-edge")]
#[test]
fn qdrant_edge_sparse_is_exact_and_its_fusions_agree_with_the_exact_ones() {
    let dir = tempfile::tempdir().unwrap();
    let set = text_set(dir.path());
    let sparse = bench(
        dir.path(),
        &set,
        "qdrant-edge",
        &argv!["--retrieval sparse"],
        "qe-sparse",
    );
    // Qdrant's sparse index is an exact dot product: only ties may be ordered otherwise.
    assert!(sparse[0].quality.recall > 0.999, "{:?}", sparse[0].quality);
    let hybrid = bench(
        dir.path(),
        &set,
        "qdrant-edge",
        &argv![
            "--retrieval hybrid --search-param fusion_in=client,engine --search-param hnsw_ef=128"
        ],
        "qe-hybrid",
    );
    assert_eq!(hybrid.len(), 2);
    let recall: Vec<f64> = hybrid.iter().map(|s| s.quality.recall).collect();
    assert!(recall.iter().all(|r| *r > 0.95), "{recall:?}");
    // The same fusion in the client and in the engine: Qdrant's RRF is the textbook one.
    assert!((recall[0] - recall[1]).abs() < 0.01, "{recall:?}");
}

#[cfg(feature = "bm25")]
#[test]
fn bm25_agrees_with_the_exact_sparse_truth_of_the_same_texts() {
    let dir = tempfile::tempdir().unwrap();
    let set = text_set(dir.path());
    let steps = bench(
        dir.path(),
        &set,
        "bm25",
        &argv!["--retrieval sparse"],
        "bm25",
    );
    // tantivy rounds long documents' lengths to 256 levels and scores in f32: the ranking can
    // differ from the exact one only between near ties.
    assert!(steps[0].quality.recall > 0.97, "{:?}", steps[0].quality);
    let task = steps[0].end_task.as_ref().expect("task figures");
    assert_eq!(task.metrics["mrr@10"], 1.0, "{:?}", task.metrics);
}

#[cfg_attr(not(engine_runs = "pgvector"), ignore = "needs PGVECTOR_URL")]
#[test]
fn pgvector_sparse_and_its_fusions_against_the_exact_ones() {
    let url = crate::common::engine_url("pgvector").expect("pgvector is a server engine");
    let dir = tempfile::tempdir().unwrap();
    let set = text_set(dir.path());
    fn at<'a>(url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        let mut a = argv!["--recreate --url", url];
        a.extend_from_slice(extra);
        a
    }
    // No index: an exact scan of the inner products.
    let scan = bench(
        dir.path(),
        &set,
        "pgvector",
        &at(
            &url,
            &argv!["--retrieval sparse --build-param sparse_index=none"],
        ),
        "pg-scan",
    );
    assert!(scan[0].quality.recall > 0.999, "{:?}", scan[0].quality);
    // The HNSW index over inner products: used (the plan check), and approximate. These
    // queries are needles (two rare words, a few rows with a nonzero product among 1,500 at
    // zero), where a graph walk over inner products finds few of them: a known limit of
    // HNSW on sparse vectors, not asserted away.
    let hnsw = bench(
        dir.path(),
        &set,
        "pgvector",
        &at(
            &url,
            &argv!["--retrieval sparse --search-param ef_search=200 --search-param seqscan=false"],
        ),
        "pg-sparse",
    );
    assert!(hnsw[0].quality.recall > 0.1, "{:?}", hnsw[0].quality);
    assert!(hnsw[0].quality.recall <= scan[0].quality.recall);
    let run = RunResult::load(&dir.path().join("results/pg-sparse.json")).unwrap();
    let build = run.configs[0].build().expect("a build step");
    assert!(!build.index.may_full_scan, "{:?}", build.index.details);
    assert_eq!(build.index.indexed_vectors, Some(1500));
    // Hybrid over the exact sparse scan and the vector HNSW: RRF in one SQL statement and in
    // the client over the same two lists.
    let hybrid = bench(
        dir.path(),
        &set,
        "pgvector",
        &at(
            &url,
            &argv![
                "--retrieval hybrid --build-param sparse_index=none --search-param fusion_in=client,engine",
                "--search-param ef_search=200 --search-param seqscan=false"
            ],
        ),
        "pg-hybrid",
    );
    assert_eq!(hybrid.len(), 2);
    let recall: Vec<f64> = hybrid.iter().map(|s| s.quality.recall).collect();
    assert!(recall.iter().all(|r| *r > 0.9), "{recall:?}");
    assert!((recall[0] - recall[1]).abs() < 0.01, "{recall:?}");
}

#[test]
fn bad_sparse_and_hybrid_runs_are_refused_with_one_line_and_no_result() {
    let dir = tempfile::tempdir().unwrap();
    let set = text_set(dir.path());
    let s = set.to_str().unwrap();
    let plain = dir.path().join("plain");
    succeeds(
        dir.path(),
        &argv![
            "dataset convert -q --dataset",
            DATASET,
            "--to fbin --out",
            plain.to_str().unwrap()
        ],
    );
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            argv![
                "bench -q --db exact --retrieval sparse --dataset",
                plain.to_str().unwrap()
            ],
            "has no sparse vectors",
        ),
        (
            argv!["bench -q --db usearch --retrieval sparse --dataset", s],
            "has no lexical retrieval",
        ),
        (
            argv![
                "bench -q --db exact --retrieval sparse --search-param rrf_k=5 --dataset",
                s
            ],
            "give it with --retrieval hybrid",
        ),
        (
            argv![
                "bench -q --db exact --retrieval hybrid --search-param fusion=max --dataset",
                s
            ],
            "rrf or convex",
        ),
        (
            argv![
                "bench -q --db exact --retrieval hybrid --search-param alpha=2 --search-param fusion=convex --dataset",
                s
            ],
            "between 0 and 1",
        ),
        (
            argv![
                "bench -q --db exact --retrieval hybrid --search-param depth=5 --dataset",
                s
            ],
            "at least k",
        ),
        (
            argv![
                "bench -q --db exact --retrieval hybrid --search-param fusion_in=engine --dataset",
                s
            ],
            "fusion_in=client",
        ),
        (
            argv![
                "bench -q --db exact --retrieval sparse --runbook drift:clusters=4 --dataset",
                s
            ],
            "--runbook is not available",
        ),
        (
            argv![
                "bench -q --db exact --retrieval sparse --filter label:0.1 --dataset",
                s
            ],
            "--filter is not available",
        ),
    ];
    for (args, says) in cases {
        let out = ragdbeval(dir.path(), &args);
        assert!(!out.status.success(), "{args:?}");
        let err = stderr(&out);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    assert!(
        !dir.path().join("results").exists()
            || crate::common::files_in(&dir.path().join("results")).is_empty(),
        "a refused run leaves no result"
    );
    // A result of a sparse run is refused by `verify` with the reason.
    bench(
        dir.path(),
        &set,
        "exact",
        &argv!["--retrieval sparse"],
        "ok",
    );
    let verify = ragdbeval(dir.path(), &argv!["verify results/ok.json"]);
    assert!(!verify.status.success());
    assert!(
        stderr(&verify).contains("is a sparse or hybrid run"),
        "{}",
        stderr(&verify)
    );
}

#[test]
fn a_malformed_sparse_folder_is_named_with_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let set = text_set(dir.path());
    // Queries with one row too few.
    let m = ragdbeval::dataset::spmat::read(&set.join("sparse/queries.csr")).unwrap();
    let rows: Vec<Vec<(u32, f32)>> = (0..m.rows - 1)
        .map(|r| {
            let e = m.entries(r);
            e.indices
                .iter()
                .copied()
                .zip(e.values.iter().copied())
                .collect()
        })
        .collect();
    let short = ragdbeval::sparse::Csr::from_rows(m.cols, &rows);
    ragdbeval::dataset::spmat::write(&set.join("sparse/queries.csr"), &short).unwrap();
    let out = ragdbeval(
        dir.path(),
        &argv![
            "bench -q --db exact --retrieval sparse --dataset",
            set.to_str().unwrap()
        ],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("queries.csr") && err.contains("29 sparse vectors"),
        "{err}"
    );
}
