//! End-to-end tests of the `ragdbeval` binary on small generated datasets.

use crate::common::{files_in, ragdbeval, run_in_temp, stdout, succeeds, succeeds_in_temp};
use ragdbeval::results::{RunResult, RunState, Step};

#[test]
fn bench_exact_end_to_end_writes_result_and_sidecar() {
    let (dir, out) = succeeds_in_temp(&argv![
        "bench --db exact --dataset gen:clustered:n=3000,dim=16,queries=200,seed=5 --runbook build-search -k 10 --quiet --name run"
    ]);
    let table = stdout(&out);
    assert!(table.contains("recall"), "{table}");
    assert!(table.contains("1.0000"), "{table}");

    let result = RunResult::load(&dir.path().join("results/run.json")).unwrap();
    assert_eq!(result.status.state, RunState::Completed);
    assert_eq!(result.dataset.train, 3000);
    assert_eq!(result.dataset.queries, 200);
    assert_eq!(result.engine.name, "exact");
    let config = &result.configs[0];
    assert!(matches!(config.steps[0], Step::Build(_)));
    let search = config.searches().next().unwrap();
    assert_eq!(search.quality.recall, 1.0);
    assert_eq!(search.quality.recall_distance, 1.0);
    // An exact answer: every ε-recall 1 and returned distances = true ones (rel 1).
    assert_eq!(search.quality.recall_epsilon, Some(1.0));
    assert_eq!(search.quality.recall_large_epsilon, Some(1.0));
    assert_eq!(search.quality.relative_distance_error, Some(1.0));
    // Recall 1 in every difficulty band, a third of the queries each (give or take ties).
    let bands = search.difficulty_bands.as_ref().unwrap();
    assert_eq!(bands.bands.len(), 3);
    assert_eq!(
        bands.bands.iter().map(|b| b.queries).sum::<usize>() + bands.undefined,
        200
    );
    assert!(
        bands
            .bands
            .iter()
            .all(|b| b.recall == Some(1.0) && b.queries >= 60)
    );
    assert!(table.contains("LID@K cuts"), "{table}");
    assert_eq!(search.quality.ndcg, 1.0);
    assert_eq!(search.latency.count, 200);
    assert!(search.qps > 0.0);
    assert_eq!(result.manifest.command_line[1], "bench");
    assert!(result.manifest.hardware.logical_cores >= 1);

    // One sidecar line per timed query, with ids and recomputed distances.
    let sidecar = std::fs::read_to_string(dir.path().join("results/run.queries.jsonl")).unwrap();
    assert_eq!(sidecar.lines().count(), 200);
    let first: serde_json::Value = serde_json::from_str(sidecar.lines().next().unwrap()).unwrap();
    assert_eq!(first["ids"].as_array().unwrap().len(), 10);
    assert_eq!(first["distances"].as_array().unwrap().len(), 10);
    // Each line carries its query's difficulty: RC > 1 (the k-th neighbour is nearer than
    // the average point) and a positive LID.
    for line in sidecar.lines() {
        let q: serde_json::Value = serde_json::from_str(line).unwrap();
        assert!(q["rc"].as_f64().unwrap() > 1.0, "{line}");
        assert!(q["lid"].as_f64().unwrap() > 0.0, "{line}");
    }
    // No temp files left behind.
    assert_eq!(files_in(&dir.path().join("results")).len(), 2);
}

#[test]
fn exact_recall_is_one_on_angular_and_dot_with_batch_mode() {
    let dir = tempfile::tempdir().unwrap();
    for (dist, mode) in [
        ("angular", "single"),
        ("dot", "batch"),
        ("angular", "batch"),
    ] {
        let spec = format!("gen:uniform:n=2000,dim=12,queries=100,distance={dist},seed=9");
        let name = format!("{dist}-{mode}");
        succeeds(
            dir.path(),
            &argv![
                "bench --db exact --dataset",
                &spec,
                "--mode",
                mode,
                "-k 20 -q --name",
                &name
            ],
        );
        let r = RunResult::load(&dir.path().join(format!("results/{name}.json"))).unwrap();
        let s = r.configs[0].searches().next().unwrap();
        assert_eq!(s.quality.recall, 1.0, "{dist} {mode}");
        assert_eq!(s.mode, mode);
        // Batch mode warms up too (a warm-up batch before the timed one).
        assert!(s.warmup_queries > 0, "{dist} {mode}");
    }
}

#[test]
fn report_renders_csv_and_markdown() {
    let (dir, _) = succeeds_in_temp(&argv![
        "bench --db exact --dataset gen:uniform:n=500,dim=4,queries=20 -q --name r"
    ]);
    let file = dir.path().join("results/r.json");
    let file = file.to_str().unwrap();
    let csv = ragdbeval(dir.path(), &["report", file, "--format", "csv"]);
    assert!(csv.status.success());
    let text = stdout(&csv);
    let mut lines = text.lines();
    let header = lines.next().unwrap();
    assert!(header.starts_with("engine,engine_version,dataset,"));
    assert!(header.ends_with(
        ",filter,index_holds,raw_bytes_per_vector,memory_after_build_mb,memory_after_build_of"
    ));
    let row = lines.next().unwrap();
    assert!(row.starts_with("exact,"));
    // exact has no index figure; the raw vectors are 4 × 4 B; its memory is the process's.
    assert!(
        row.contains(",-,16,")
            && row.ends_with(",\"ragdbeval process RSS (engine, dataset and harness)\""),
        "{row}"
    );
    let md = ragdbeval(dir.path(), &["report", file, "--format", "markdown"]);
    let text = stdout(&md);
    assert!(
        text.contains("### Quality") && text.contains("| exact |"),
        "{text}"
    );
    // The cost table's sizes are the totals; the engine-specific index figures are not there.
    assert!(
        text.contains("| total MB |") && text.contains("| total B/vec |"),
        "{text}"
    );
    assert!(
        !text.contains("| index MB |") && !text.contains("index B/vec"),
        "{text}"
    );
    assert!(
        text.contains("against the raw vectors' 16 B per vector; no index figure recorded"),
        "{text}"
    );
    let bad = ragdbeval(dir.path(), &["report", file, "--format", "pdf"]);
    assert!(!bad.status.success());
}

#[test]
fn json_flag_prints_the_document() {
    let (_dir, out) = succeeds_in_temp(&argv![
        "bench --db exact --dataset gen:uniform:n=300,dim=4,queries=10 --json"
    ]);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["schema"], "ragdbeval.result/1");
    assert_eq!(doc["status"]["state"], "completed");
}

#[test]
fn dataset_make_info_gt_subset() {
    let (dir, _) = succeeds_in_temp(&argv![
        "dataset make -n 1000 --dim 8 --queries 20 -k 30 --out d.hdf5 -q"
    ]);
    let info = succeeds(dir.path(), &["dataset", "info", "d.hdf5"]);
    let text = stdout(&info);
    assert!(
        text.contains("1000 × 8") && text.contains("depth 30"),
        "{text}"
    );
    // The queries' difficulty: a row each for RC and LID, seven numbers (mean, min,
    // quartiles, max) then the count of undefined ones, min ≤ median ≤ max.
    assert!(text.contains("difficulty at k = 10"), "{text}");
    for name in ["RC", "LID"] {
        let row: Vec<f64> = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} row: {text}"))
            .split_whitespace()
            .skip(1)
            .map(|x| x.parse().unwrap())
            .collect();
        assert_eq!(row.len(), 7, "{text}");
        assert!(
            row[1] <= row[3] && row[3] <= row[5] && row[1] > 0.0,
            "{text}"
        );
    }

    succeeds(
        dir.path(),
        &argv!["dataset subset --dataset d.hdf5 --limit 100 -k 10 --out s.hdf5 -q"],
    );
    let info = stdout(&ragdbeval(dir.path(), &["dataset", "info", "s.hdf5"]));
    assert!(
        info.contains("100 × 8") && info.contains("depth 10"),
        "{info}"
    );

    succeeds(
        dir.path(),
        &argv!["dataset gt --dataset s.hdf5 -k 50 --out g.hdf5 -q"],
    );
    let info = stdout(&ragdbeval(dir.path(), &["dataset", "info", "g.hdf5"]));
    assert!(info.contains("depth 50"), "{info}");
    // Writing the vectors before the truth (to time the truth alone) writes the same file.
    let first = succeeds(
        dir.path(),
        &argv!["dataset gt --dataset s.hdf5 -k 50 --out g-first.hdf5 -q --write-first"],
    );
    assert!(
        stdout(&first).contains("ground truth: k=50"),
        "{}",
        stdout(&first)
    );
    assert_eq!(
        std::fs::read(dir.path().join("g.hdf5")).unwrap(),
        std::fs::read(dir.path().join("g-first.hdf5")).unwrap(),
        "--write-first wrote another file"
    );
    // The same vectors as a TEXMEX directory, whose base `dataset gt` reads in place from
    // the mapped `.fvecs` (not copied, as from HDF5): the same file again.
    let sub = ragdbeval::dataset::load(
        &dir.path().join("s.hdf5").display().to_string(),
        &ragdbeval::dataset::LoadOptions {
            compute_missing_gt: false,
            ..Default::default()
        },
    )
    .unwrap();
    let texmex = dir.path().join("tx");
    std::fs::create_dir(&texmex).unwrap();
    ragdbeval::dataset::texmex::write_fvecs(&texmex.join("s_base.fvecs"), &sub.train).unwrap();
    ragdbeval::dataset::texmex::write_fvecs(&texmex.join("s_query.fvecs"), &sub.test).unwrap();
    let from_texmex = succeeds(
        dir.path(),
        &argv![
            "dataset gt --dataset tx --distance",
            sub.distance.as_str(),
            "-k 50 --out g-tx.hdf5 -q"
        ],
    );
    assert!(
        stdout(&from_texmex).contains("phases: load"),
        "{}",
        stdout(&from_texmex)
    );
    assert_eq!(
        std::fs::read(dir.path().join("g.hdf5")).unwrap(),
        std::fs::read(dir.path().join("g-tx.hdf5")).unwrap(),
        "a TEXMEX base read in place gave another file"
    );

    let list = stdout(&ragdbeval(dir.path(), &["dataset", "list"]));
    assert!(
        list.contains("sift-128-euclidean") && list.contains("sift1m"),
        "{list}"
    );
    assert!(list.contains("lastfm-64-dot"), "{list}");
}

#[test]
fn help_has_examples() {
    let (_dir, out) = run_in_temp(&["bench", "--help"]);
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(
        text.contains("Examples:") && text.contains("--search-param"),
        "{text}"
    );
}

#[test]
fn search_sweep_reports_qps_at_recall() {
    let (dir, out) = succeeds_in_temp(&argv![
        "bench --db qdrant-edge --dataset gen:clustered:n=3000,dim=16,queries=200 --runbook build-search --search-sweep hnsw_ef=4,16,64 -q --name s"
    ]);
    let text = stdout(&out);
    assert!(text.contains("QPS at recall >= 0.90"), "{text}");
    let r = RunResult::load(&dir.path().join("results/s.json")).unwrap();
    assert_eq!(r.configs[0].searches().count(), 3);
    let curve = &r.curves[0].curve;
    assert!(!curve.frontier.is_empty());
    assert_eq!(curve.qps_at_recall.len(), 3);
}

/// The ground-truth cache is keyed on everything that determines the truth: a run with another
/// `--limit` (or `--max-queries`, or `--distance`) in the same directory must not reuse it. On
/// the first version of the cache, the second run below scored the exact engine at 0.65.
#[test]
fn ground_truth_cache_is_not_reused_for_another_subset() {
    let dir = tempfile::tempdir().unwrap();
    let spec = "gen:clustered:n=3000,dim=8,queries=50,seed=11";
    let runs: [(&str, &[&str]); 5] = [
        ("a", &["--limit", "3000"]),
        ("b", &["--limit", "2000"]),
        ("c", &["--limit", "2000", "--max-queries", "20"]),
        ("d", &["--limit", "2000", "--distance", "angular"]),
        ("e", &["--limit", "3000"]),
    ];
    for (name, extra) in runs {
        let mut args = vec![
            "bench",
            "--db",
            "exact",
            "--dataset",
            spec,
            "-k",
            "10",
            "-q",
            "--name",
            name,
        ];
        args.extend_from_slice(extra);
        succeeds(dir.path(), &args);
        let r = RunResult::load(&dir.path().join(format!("results/{name}.json"))).unwrap();
        for s in r.configs[0].searches() {
            assert_eq!(s.quality.recall, 1.0, "run {name} step {}", s.runbook_step);
            assert_eq!(s.stale_hits, 0, "run {name}");
        }
    }
    // One cache file per distinct truth: a, b, c and d differ; e reuses a's.
    let cached = files_in(&dir.path().join("cache/groundtruth"));
    assert_eq!(cached.len(), 4, "{cached:?}");
}

#[test]
fn completions_and_man_pages_cover_every_command() {
    let dir = tempfile::tempdir().unwrap();
    for shell in ["bash", "zsh", "fish"] {
        let out = succeeds(dir.path(), &["completions", shell]);
        let script = stdout(&out);
        for word in ["bench", "compare", "fail-on", "dataset"] {
            assert!(script.contains(word), "{shell}: no `{word}`");
        }
    }
    let page = stdout(&succeeds(dir.path(), &["man"]));
    assert!(
        page.starts_with(".ie") || page.contains(".TH ragdbeval"),
        "{}",
        &page[..page.len().min(200)]
    );
    succeeds(dir.path(), &["man", "--out", "man1"]);
    for page in [
        "ragdbeval.1",
        "ragdbeval-bench.1",
        "ragdbeval-compare.1",
        "ragdbeval-dataset-make.1",
    ] {
        let text = std::fs::read_to_string(dir.path().join("man1").join(page)).unwrap();
        assert!(text.contains(".TH"), "{page}");
    }
    let bad = ragdbeval(dir.path(), &["completions", "cmd.exe"]);
    assert_eq!(bad.status.code(), Some(2));
}
