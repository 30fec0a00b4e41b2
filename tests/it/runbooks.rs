//! Mutation runbooks: the bookkeeping of live sets must be exact. The `exact` engine shows
//! recall 1.000, 0 stale hits and 0 ghost hits at every step of every example runbook; an
//! engine that ignores deletes is caught by the stale-hit counter.

use std::path::Path;
use std::time::Duration;

use crate::common::{ragdbeval, stderr, succeeds};
use crate::stubs::Stub;
use ragdbeval::adapters;
use ragdbeval::dataset::{self, LoadOptions};
use ragdbeval::engine::{ConnectOptions, EngineEntry, EngineResult, VectorEngine};
use ragdbeval::params::ParamMap;
use ragdbeval::results::run_files::RunFiles;
use ragdbeval::results::{RunResult, RunState, Step, Visibility};
use ragdbeval::runbook::Runbook;
use ragdbeval::runner::{self, BenchPlan, ground_truth};

fn check_exact_run(dir: &Path, runbook: &str, dataset: &str) -> RunResult {
    // A file's stem, or a generated runbook's spec made a file name.
    let name: String = if runbook.ends_with(".toml") {
        Path::new(runbook)
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    } else {
        runbook
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect()
    };
    let out = ragdbeval(
        dir,
        &argv![
            "bench --db exact --dataset",
            dataset,
            "--runbook",
            runbook,
            "-q --name",
            &name
        ],
    );
    assert!(out.status.success(), "{runbook}: {}", stderr(&out));
    let r = RunResult::load(&dir.join(format!("results/{name}.json"))).unwrap();
    assert_eq!(r.status.state, RunState::Completed);
    let searches: Vec<_> = r.configs[0].searches().collect();
    assert!(searches.len() >= 2, "{runbook}");
    for s in &searches {
        assert_eq!(
            s.quality.recall, 1.0,
            "{runbook} step {} after {}",
            s.runbook_step, s.after
        );
        assert_eq!(s.stale_hits, 0, "{runbook} step {}", s.runbook_step);
        assert_eq!(s.ghost_hits, 0, "{runbook} step {}", s.runbook_step);
        // Recall 1.0 alone cannot catch a wrong truth (a closer point missing from the truth
        // still counts as relevant): the exact engine must reproduce it id for id, bit for bit.
        assert_eq!(
            s.truth_mismatches,
            Some(0),
            "{runbook} on {dataset}: step {} after {}",
            s.runbook_step,
            s.after
        );
    }
    for m in r.configs[0].mutations() {
        assert_eq!(m.stale_hits, 0, "{runbook} step {}", m.runbook_step);
    }
    // Stream steps: recall 1 under the streaming rule and no stale hit, on every shape.
    for t in r.configs[0].streams() {
        assert_eq!(
            t.recall, 1.0,
            "{runbook} on {dataset}: stream step {}",
            t.runbook_step
        );
        assert_eq!(
            t.stale_hits, 0,
            "{runbook} on {dataset}: stream step {}",
            t.runbook_step
        );
        // Linearisable: every sampled write shows at once. Writes a self-query cannot reveal
        // (under dot product) are left out, and writes a later one overtakes are dropped.
        let f = &t.freshness;
        assert_eq!(
            f.not_seen, 0,
            "{runbook} on {dataset}: stream step {}: {f:?}",
            t.runbook_step
        );
        assert_eq!(
            f.puts_seen + f.deletes_seen + f.overtaken,
            f.samples,
            "{f:?}"
        );
        // A stage without searches has no recall: null, never 0.
        for stage in &t.recall_at_stage {
            assert_eq!(
                stage.recall.is_some(),
                stage.searches > 0,
                "{runbook} on {dataset}: stream step {} stage {}",
                t.runbook_step,
                stage.stage
            );
        }
    }
    r
}

/// A search over an empty live set has nothing to find: recall and NDCG are null in the
/// result (not 0), `–` on the terminal, and one warning names the step.
#[test]
fn a_search_after_everything_is_deleted_has_no_recall() {
    let dir = tempfile::tempdir().unwrap();
    let runbook = dir.path().join("empty.toml");
    std::fs::write(
        &runbook,
        "name = \"empty\"\n[[steps]]\nkind = \"build\"\nend = \"100%\"\n[[steps]]\nkind = \"search\"\n\
         [[steps]]\nkind = \"delete\"\nids = { start = 0, end = \"100%\" }\n\
         [[steps]]\nkind = \"search\"\n",
    )
    .unwrap();
    let out = succeeds(
        dir.path(),
        &argv![
            "bench --db exact --dataset gen:uniform:n=300,dim=4,queries=7 --runbook",
            runbook.to_str().unwrap(),
            "--name empty"
        ],
    );
    let text = std::fs::read_to_string(dir.path().join("results/empty.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let steps = doc["configs"][0]["steps"].as_array().unwrap();
    let searches: Vec<&serde_json::Value> = steps
        .iter()
        .filter(|s| s.get("quality").is_some())
        .collect();
    assert_eq!(searches.len(), 2);
    assert_eq!(searches[0]["quality"]["recall"], 1.0);
    let empty = &searches[1]["quality"];
    for figure in [
        "recall",
        "ndcg",
        "mrr",
        "map",
        "precision",
        "hit_rate",
        "recall_min",
    ] {
        assert!(empty[figure].is_null(), "{figure}: {empty}");
    }
    assert_eq!(empty["queries_without_truth"], 7);
    let warnings: Vec<&serde_json::Value> = doc["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["kind"] == "nothing_to_find")
        .collect();
    assert_eq!(warnings.len(), 1, "{}", doc["warnings"]);
    assert_eq!(warnings[0]["runbook_step"], 4);
    // Short answers are no fault when nothing is live.
    assert!(
        !doc["warnings"].to_string().contains("short_results"),
        "{}",
        doc["warnings"]
    );
    let err = stderr(&out) + &crate::common::stdout(&out);
    assert!(err.contains("empty live set"), "{err}");
    // Reading the result back keeps the figures undefined.
    let back = RunResult::load(&dir.path().join("results/empty.json")).unwrap();
    let last = back.configs[0].searches().last().unwrap();
    assert!(last.quality.recall.is_nan());
}

/// The exact engine reproduces the ground truth exactly on every dataset shape that breaks
/// naive float arithmetic: data far from the origin, tiny and huge magnitudes, duplicate rows
/// (ties broken by id), under every metric, at every step of every example runbook. One test
/// per shape, so that they run side by side.
fn exact_reproduces_the_truth_on(shape: &str) {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/runbooks");
    let runbooks = [
        "default".to_string(),
        root.join("churn.toml").display().to_string(),
        root.join("append-only.toml").display().to_string(),
        root.join("stream.toml").display().to_string(),
        root.join("sliding-window.toml").display().to_string(),
        root.join("drift.toml").display().to_string(),
        // Expiry at 20,000 writes/s to keep the test short (lifetimes in writes and seconds).
        "expiry:rate=20000,lifetimes=50/0.02s/never".to_string(),
        "drift:clusters=3".to_string(),
        "sliding-window:window=30%,slide=15%".to_string(),
    ];
    for runbook in &runbooks {
        check_exact_run(dir.path(), runbook, shape);
    }
}

macro_rules! exact_on_every_shape {
    ($($test:ident: $shape:literal,)*) => {
        $(
            #[test]
            fn $test() {
                exact_reproduces_the_truth_on($shape);
            }
        )*
    };
}

exact_on_every_shape! {
    exact_is_exact_near_offset_1000: "gen:uniform:n=2000,dim=32,queries=40,seed=21,offset=1000",
    exact_is_exact_near_offset_10000: "gen:uniform:n=2000,dim=32,queries=40,seed=22,offset=10000",
    exact_is_exact_at_tiny_scale: "gen:clustered:n=2000,dim=16,queries=40,seed=23,scale=0.001",
    exact_is_exact_at_huge_scale: "gen:clustered:n=2000,dim=16,queries=40,seed=24,scale=10000",
    exact_is_exact_with_duplicate_rows: "gen:clustered:n=2000,dim=16,queries=40,seed=25,duplicates=0.3",
    exact_is_exact_angular_with_duplicates:
        "gen:uniform:n=2000,dim=8,queries=40,seed=26,distance=angular,offset=50,duplicates=0.2",
    exact_is_exact_dot_with_duplicates:
        "gen:clustered:n=2000,dim=8,queries=40,seed=27,distance=dot,scale=100,duplicates=0.2",
}

#[test]
fn exact_is_perfect_on_the_default_and_example_runbooks() {
    let dir = tempfile::tempdir().unwrap();
    let data = "gen:clustered:n=4000,dim=16,queries=100,seed=3";
    let r = check_exact_run(dir.path(), "default", data);
    let live: Vec<usize> = r.configs[0].searches().map(|s| s.live_points).collect();
    assert_eq!(live, [3600, 4000, 4000, 3800]);
    let kinds: Vec<&str> = r.configs[0].mutations().map(|m| m.kind.as_str()).collect();
    assert_eq!(kinds, ["insert", "update", "delete"]);
    for m in r.configs[0].mutations() {
        assert!(m.latency.count > 0 && m.vectors_per_s > 0.0, "{m:?}");
        assert_eq!(m.visibility.visible, m.visibility.samples, "{m:?}");
    }
    let update = r.configs[0].mutations().nth(1).unwrap();
    assert_eq!((update.mode.as_str(), update.points), ("single", 200));
    // Build and mutations count throughput the same way: points until indexed (write calls
    // plus index-ready wait), and the write calls alone.
    for m in r.configs[0].mutations() {
        assert!(
            (m.total_s - (m.write_s + m.ready_wait_s)).abs() < 1e-9,
            "{m:?}"
        );
        assert!(
            (m.vectors_per_s - m.points as f64 / m.total_s).abs() < 1e-6,
            "{m:?}"
        );
        assert!(m.write_vectors_per_s >= m.vectors_per_s, "{m:?}");
    }
    let build = r.configs[0].build().unwrap();
    assert!((build.vectors_per_s - build.points as f64 / build.total_s).abs() < 1e-6);
    assert!(build.write_vectors_per_s >= build.vectors_per_s);
    // Only the search right after the build is a cold start: after a mutation the
    // read-after-write probes have already searched.
    let cold: Vec<bool> = r.configs[0]
        .searches()
        .map(|s| s.cold_start_ms.is_some())
        .collect();
    assert_eq!(cold, [true, false, false, false]);

    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/runbooks");
    for file in ["churn.toml", "append-only.toml"] {
        let path = root.join(file);
        check_exact_run(dir.path(), path.to_str().unwrap(), data);
    }
    // Angular data too.
    check_exact_run(
        dir.path(),
        "default",
        "gen:uniform:n=1500,dim=8,queries=50,distance=angular",
    );
}

#[test]
fn bad_runbook_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[[steps]]\nkind = \"build\"\nend = 10\n[[steps]]\nkind = \"delete\"\nids = { start = 5, end = 50 }\n").unwrap();
    let out = ragdbeval(
        dir.path(),
        &argv![
            "bench --db exact --dataset gen:uniform:n=100,dim=4,queries=5 --runbook",
            bad.to_str().unwrap(),
            "-q"
        ],
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("step 2 (delete)") && err.contains("id 10 is not live"),
        "{err}"
    );
}

/// The real `exact` engine behind a stub named `name`, to inject a fault into.
pub(crate) fn exact_as(name: &'static str, opts: &ConnectOptions) -> EngineResult<Stub> {
    let exact = adapters::find("exact").expect("exact is registered");
    Ok(Stub::wrapping(name, (exact.open)(opts)?))
}

/// A real `exact` engine whose deletes are silently dropped: what a broken adapter does.
fn open_broken(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(
        exact_as("ignores-deletes", opts)?.ignoring_deletes(),
    ))
}

static BROKEN: EngineEntry = EngineEntry {
    name: "ignores-deletes",
    // test double: exact with deletes dropped: it wraps exact, so it declares what exact declares.
    meta: &adapters::meta::exact::ENGINE,
    config_toml: "",
    open: open_broken,
    left_out: None,
};

#[test]
fn an_engine_that_ignores_deletes_is_caught() {
    let ds = dataset::load(
        "gen:clustered:n=2000,dim=8,queries=100,seed=1",
        &LoadOptions {
            gt_k: 10,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    let runbook = Runbook::parse_toml(
        "[[steps]]\nkind = \"build\"\nend = \"100%\"\n[[steps]]\nkind = \"delete\"\nids = { start = 0, end = \"50%\" }\n[[steps]]\nkind = \"search\"\n",
    )
    .unwrap();
    let steps = runbook.resolve(ds.train.len()).unwrap();
    let truths =
        ground_truth::step_truths(&ds, &steps, 10, None, &ragdbeval::types::Silent).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_for(&BROKEN, steps, truths, dir.path());
    let mut result = crate::common::empty_result();
    let path = dir.path().join("r.json");
    runner::run(&plan, &ds, &mut result, &RunFiles::new(&path, None, None)).unwrap();
    let search = result.configs[0].searches().next().unwrap();
    assert!(search.stale_hits > 0, "stale hits not detected: {search:?}");
    assert!(
        search.quality.recall < 0.9,
        "deleted ids must not count as hits"
    );
    assert!(
        result
            .warnings
            .iter()
            .any(|w| w.to_string().contains("STALE HITS"))
    );
    match &result.configs[0].steps[1] {
        Step::Mutation(m) => assert_eq!(m.visibility.visible, 0, "the ignored deletes never show"),
        other => panic!("expected the delete step, got {other:?}"),
    }
}

/// Runs `runbook` (TOML) on `dataset` with the engine that ignores deletes; returns the
/// visibility of its (first) delete step.
fn delete_visibility_of_ignored_deletes(dataset: &str, runbook: &str) -> Visibility {
    let ds = dataset::load(
        dataset,
        &LoadOptions {
            gt_k: 10,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    let steps = Runbook::parse_toml(runbook)
        .unwrap()
        .resolve(ds.train.len())
        .unwrap();
    let truths =
        ground_truth::step_truths(&ds, &steps, 10, None, &ragdbeval::types::Silent).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_for(&BROKEN, steps, truths, dir.path());
    let mut result = crate::common::empty_result();
    let path = dir.path().join("r.json");
    runner::run(&plan, &ds, &mut result, &RunFiles::new(&path, None, None)).unwrap();
    let delete = result.configs[0]
        .mutations()
        .find(|m| m.kind == "delete")
        .unwrap();
    delete.visibility.clone()
}

/// Deletes of points that an update had moved: the read-after-write probe must look with the
/// vector the point had when deleted. Probing with its original vector (as the first version
/// did) finds nothing there and reports the ignored deletes as visible.
#[test]
fn deletes_after_updates_are_probed_with_the_current_vector() {
    let v = delete_visibility_of_ignored_deletes(
        "gen:clustered:n=2000,dim=8,queries=50,seed=4",
        "[[steps]]\nkind = \"build\"\nend = \"50%\"\n\
         [[steps]]\nkind = \"update\"\nids = { start = 0, end = \"25%\" }\nfrom = \"50%\"\n\
         [[steps]]\nkind = \"delete\"\nids = { start = 0, end = \"25%\" }\n\
         [[steps]]\nkind = \"search\"\n",
    );
    assert!(v.samples > 0);
    assert_eq!(v.visible, 0, "ignored deletes reported as visible: {v:?}");
}

/// Under `dot` most vectors are not their own nearest neighbour, so a probe with the deleted
/// point's vector never saw it in the first place and would call any delete "visible". Only
/// writes a probe can observe are sampled; the others are counted as unobservable.
#[test]
fn visibility_samples_only_writes_a_probe_can_observe() {
    let v = delete_visibility_of_ignored_deletes(
        "gen:clustered:n=2000,dim=8,queries=20,seed=27,distance=dot,scale=100",
        "[[steps]]\nkind = \"build\"\nend = \"100%\"\n\
         [[steps]]\nkind = \"delete\"\nids = { start = 0, end = \"25%\" }\nmode = \"single\"\n\
         [[steps]]\nkind = \"search\"\n",
    );
    assert!(v.samples > 0 && v.unobservable > 0, "{v:?}");
    assert_eq!(v.visible, 0, "ignored deletes reported as visible: {v:?}");
}

/// A real `exact` engine that dies after the build: every later search fails, as on a
/// crashed server.
fn open_dying(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(
        exact_as("dies-after-build", opts)?.dying_after_build(),
    ))
}

static DYING: EngineEntry = EngineEntry {
    name: "dies-after-build",
    // test double: exact that fails every search after the build: it wraps exact, so it declares what exact declares.
    meta: &adapters::meta::exact::ENGINE,
    config_toml: "",
    open: open_dying,
    left_out: None,
};

#[test]
fn an_engine_dying_mid_run_keeps_the_finished_steps() {
    let ds = dataset::load(
        "gen:uniform:n=500,dim=4,queries=20,seed=2",
        &LoadOptions {
            gt_k: 10,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    let steps = Runbook::build_and_search().resolve(ds.train.len()).unwrap();
    let truths =
        ground_truth::step_truths(&ds, &steps, 10, None, &ragdbeval::types::Silent).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plan = plan_for(&DYING, steps, truths, dir.path());
    let mut result = crate::common::empty_result();
    let path = dir.path().join("r.json");
    let err = runner::run(&plan, &ds, &mut result, &RunFiles::new(&path, None, None)).unwrap_err();
    assert!(err.to_string().contains("connection refused"), "{err}");
    runner::finish(&mut result, Err(&err));
    result.save(&path).unwrap();
    let saved = RunResult::load(&path).unwrap();
    assert_eq!(saved.status.state, RunState::Failed);
    assert!(saved.status.error.unwrap().contains("search"));
    assert!(
        matches!(saved.configs[0].steps[0], Step::Build(_)),
        "the build is kept"
    );
    assert!(saved.configs[0].error.is_some());
}

/// A one-configuration plan over `steps` for a test engine, with short timeouts.
pub(crate) fn plan_for(
    entry: &'static EngineEntry,
    steps: Vec<ragdbeval::runbook::Resolved>,
    truths: ground_truth::StepTruths,
    work_dir: &Path,
) -> BenchPlan {
    BenchPlan {
        entry,
        connect: ConnectOptions {
            batch_size: 100,
            upload_parallel: 1,
            ..ConnectOptions::default()
        },
        builds: vec![ParamMap::new()],
        searches: vec![ParamMap::new()],
        steps,
        truths,
        k: 10,
        relevant: 10,
        warmup: 0,
        repeat: 1,
        repeat_build: false,
        batch_mode: false,
        work_dir: work_dir.to_path_buf(),
        keep_work_dir: false,
        quiet: true,
        progress: Default::default(),
        sample_interval: Duration::from_millis(50),
        load: Default::default(),
        // Ignored deletes never become visible: do not wait long for them.
        visibility_timeout: Duration::from_millis(50),
        filters: None,
        difficulty: None,
    }
}
