//! Integration tests of the Chroma adapter against a real server.
//!
//! The server comes from `CHROMA_URL` (for example the URL printed by
//! `scripts/servers/chroma.sh start`). Without it (at build time) the server tests are
//! reported as ignored, except under CI (`CI` set), where a missing server is a failure. The two URL tests
//! need no server. `server_stopped_mid_run` starts and stops a private server of its own
//! through the script, with its own `RAGDBEVAL_SERVER_DIR`.

use crate::common::{K, params, unique_name};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ragdbeval::adapters;
use ragdbeval::distance::Distance;
use ragdbeval::engine::{CollectionSpec, ConnectOptions, EngineError, Neighbor, VectorEngine};
use ragdbeval::groundtruth::{BaseSet, GroundTruth, exact_knn};
use ragdbeval::params::{ParamMap, ParamValue};
use ragdbeval::synthetic::{SyntheticKind, SyntheticSpec};

/// Recall of the answers to the test data, whose ids are row numbers. By distance, not by id:
/// the server computes distances with its own SIMD code, so exact near-ties may legitimately
/// come back in another order.
fn recall(d: &Data, results: &[Vec<Neighbor>]) -> f64 {
    let row = |id| usize::try_from(id).ok();
    crate::common::recall(
        &d.base,
        &d.queries,
        d.dim,
        Distance::Euclidean,
        &d.gt,
        results,
        row,
    )
}

/// The server under test (the test is ignored unless `build.rs` saw `CHROMA_URL`, or `CI`).
fn server_url() -> String {
    crate::common::server_url("CHROMA_URL", "scripts/servers/chroma.sh start")
}

fn options(url: Option<&str>, recreate: bool) -> ConnectOptions {
    ConnectOptions {
        url: url.map(str::to_string),
        recreate,
        batch_size: 500,
        upload_parallel: 2,
        timeout: Duration::from_secs(60),
        ..ConnectOptions::default()
    }
}

fn open(opts: &ConnectOptions) -> Result<Box<dyn VectorEngine>, EngineError> {
    let entry = adapters::find("chroma").expect("chroma is registered");
    (entry.open)(opts)
}

fn spec(name: &str, dim: usize, n: usize, build: ParamMap) -> CollectionSpec {
    CollectionSpec {
        name: name.to_string(),
        dim,
        distance: Distance::Euclidean,
        expected_points: n,
        build_params: build,
        work_dir: std::env::temp_dir(),
        attributes: None,
        element_type: Default::default(),
    }
}

/// The clustered 5k × 32 set of the acceptance criterion, with exact ground truth.
struct Data {
    dim: usize,
    n: usize,
    base: Vec<f32>,
    queries: Vec<f32>,
    gt: GroundTruth,
}

fn data() -> Data {
    let dim = 32;
    let spec = SyntheticSpec {
        kind: SyntheticKind::Clustered,
        n: 5000,
        queries: 100,
        dim,
        distance: Distance::Euclidean,
        seed: 7,
        clusters: 16,
        spread: 0.5,
        ..SyntheticSpec::demo()
    };
    let (train, test) = spec.generate();
    let base = train.into_flat();
    let queries = test.into_flat();
    let gt = exact_knn(
        &BaseSet {
            vectors: &base,
            ids: None,
            dim,
        },
        &queries,
        Distance::Euclidean,
        K,
        &|_| {},
    );
    Data {
        dim,
        n: spec.n,
        base,
        queries,
        gt,
    }
}

/// Creates a collection with `build` and bulk-loads the whole set, as the runner does.
fn build(url: &str, d: &Data, tag: &str, build: ParamMap) -> Box<dyn VectorEngine> {
    let mut engine = open(&options(Some(url), false)).expect("open");
    engine
        .create(&spec(&unique_name(tag), d.dim, d.n, build))
        .expect("create");
    let ids: Vec<u64> = (0..d.n as u64).collect();
    for (chunk_ids, chunk) in ids.chunks(1000).zip(d.base.chunks(1000 * d.dim)) {
        engine.insert_batch(chunk_ids, chunk).expect("insert");
    }
    let report = engine.wait_until_ready().expect("ready");
    assert_eq!(report.points, Some(d.n as u64), "{report:?}");
    engine
}

fn default_build() -> ParamMap {
    params(&[
        ("m", ParamValue::Int(16)),
        ("ef_construction", ParamValue::Int(100)),
        ("ef_search", ParamValue::Int(100)),
    ])
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

#[test]
fn unreachable_url_fails_fast() {
    let url = format!("http://127.0.0.1:{}", free_port());
    let started = Instant::now();
    match open(&options(Some(&url), false)) {
        Err(EngineError::Unreachable {
            target, message, ..
        }) => {
            assert!(target.contains(&url), "{target}");
            assert!(
                message.contains("scripts/servers/chroma.sh start"),
                "{message}"
            );
            assert!(message.contains("--url"), "{message}");
        }
        Err(other) => panic!("expected Unreachable, got {other}"),
        Ok(_) => panic!("a closed port must not connect"),
    }
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
fn bad_url_is_a_parameter_error() {
    match open(&options(Some("localhost:8000"), false)) {
        Err(EngineError::BadParameter { param, .. }) => assert_eq!(param, "url"),
        Err(other) => panic!("expected BadParameter, got {other}"),
        Ok(_) => panic!("a URL without scheme must be rejected"),
    }
}

#[test]
#[cfg_attr(
    not(engine_runs = "chroma"),
    ignore = "needs CHROMA_URL (scripts/servers/chroma.sh start)"
)]
fn full_lifecycle() {
    let url = server_url();
    let d = data();
    let dim = d.dim;

    let mut engine = build(&url, &d, "life", default_build());
    assert_eq!(engine.name(), "chroma");
    assert!(!engine.in_process());
    assert!(!engine.version().is_empty());

    // A wrong-dimension vector is refused, not silently truncated.
    let err = engine.insert_batch(&[999_999], &[0.0; 16]).unwrap_err();
    assert!(err.to_string().contains("dimension"), "{err}");

    // Same ef_search as the build: accepted; unknown names are rejected.
    engine
        .set_search_params(&params(&[("ef_search", ParamValue::Int(100))]))
        .expect("same ef_search");
    let err = engine
        .set_search_params(&params(&[("bogus", ParamValue::Int(1))]))
        .unwrap_err();
    assert!(matches!(err, EngineError::BadParameter { .. }), "{err}");

    // Approximate search at the default set.
    let results = crate::common::search_all(engine.as_ref(), &d.queries, d.dim);
    let r = recall(&d, &results);
    println!("recall@{K} m=16 ef_construction=100 ef_search=100: {r:.4}");
    assert!(r >= 0.9, "recall {r}");
    for found in &results {
        assert_eq!(found.len(), K);
        assert!(
            found.windows(2).all(|w| w[0].score <= w[1].score),
            "{found:?}"
        );
    }

    // The batch API (one query call) gives the same answers.
    let batch = engine
        .batch_search(&d.queries, dim, K)
        .expect("batch search");
    assert_eq!(batch.len(), d.queries.len() / dim);
    let single_ids: Vec<Vec<u64>> = results
        .iter()
        .map(|r| r.iter().map(|n| n.id).collect())
        .collect();
    let batch_ids: Vec<Vec<u64>> = batch
        .iter()
        .map(|r| r.iter().map(|n| n.id).collect())
        .collect();
    assert_eq!(single_ids, batch_ids);

    // Ids are stable: a stored vector finds itself, under its own id, at distance 0.
    let mut out = Vec::new();
    for row in [0usize, 1, 17, 999, 4321, d.n - 1] {
        engine
            .search(&d.base[row * dim..(row + 1) * dim], 1, &mut out)
            .expect("search");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].id, row as u64, "{out:?}");
        assert!(out[0].score.abs() < 1e-3, "{out:?}");
    }

    // Concurrent searches from several threads share one engine.
    std::thread::scope(|s| {
        for t in 0..4 {
            let engine = &engine;
            let queries = &d.queries;
            s.spawn(move || {
                let mut out = Vec::new();
                for q in queries.chunks_exact(dim).skip(t).step_by(4) {
                    engine.search(q, K, &mut out).expect("threaded search");
                    assert_eq!(out.len(), K);
                }
            });
        }
    });

    // Upsert: a new point equal to query 0 and an existing id moved onto query 1.
    let new_id = d.n as u64 + 1;
    let mut moved = d.queries[..dim].to_vec();
    moved.extend_from_slice(&d.queries[dim..2 * dim]);
    engine.upsert_batch(&[new_id, 7], &moved).expect("upsert");
    engine
        .search(&d.queries[..dim], K, &mut out)
        .expect("search");
    assert_eq!(out[0].id, new_id, "upserted point not found first: {out:?}");
    engine
        .search(&d.queries[dim..2 * dim], K, &mut out)
        .expect("search");
    assert_eq!(out[0].id, 7, "updated point not found first: {out:?}");
    assert!(out[0].score.abs() < 1e-3, "{out:?}");
    // Its old place is empty: row 7's vector no longer finds id 7 at distance 0.
    engine
        .search(&d.base[7 * dim..8 * dim], K, &mut out)
        .expect("search");
    assert!(
        !out.iter().any(|n| n.id == 7 && n.score.abs() < 1e-6),
        "old vector of id 7 still there: {out:?}"
    );
    let report = engine.wait_until_ready().expect("ready after upsert");
    assert_eq!(report.points, Some(d.n as u64 + 1), "{report:?}");

    // Delete: the true neighbours of the first 20 queries, then none may come back.
    let mut doomed: Vec<u64> = (0..20).flat_map(|q| d.gt.ids_of(q).to_vec()).collect();
    doomed.push(new_id);
    doomed.push(7);
    doomed.sort_unstable();
    doomed.dedup();
    engine.delete_batch(&doomed).expect("delete");
    let mut returned_deleted = 0;
    for q in d.queries.chunks_exact(dim).take(20) {
        engine.search(q, K, &mut out).expect("search");
        assert_eq!(out.len(), K);
        returned_deleted += out
            .iter()
            .filter(|n| doomed.binary_search(&n.id).is_ok())
            .count();
    }
    assert_eq!(returned_deleted, 0, "deleted ids came back");
    let report = engine.wait_until_ready().expect("ready after delete");
    assert_eq!(
        report.points,
        Some(d.n as u64 + 1 - doomed.len() as u64),
        "{report:?}"
    );

    // Facts for the result file.
    let described = engine.describe();
    for key in [
        "server_version",
        "collection",
        "configuration",
        "server_hnsw",
        "points",
    ] {
        assert!(described.contains_key(key), "{key} missing: {described:?}");
    }
    let hnsw = &described["server_hnsw"];
    assert_eq!(hnsw["max_neighbors"], 16, "{hnsw}");
    assert_eq!(hnsw["ef_construction"], 100, "{hnsw}");
    assert_eq!(hnsw["ef_search"], 100, "{hnsw}");
    // Both figures or the reason each is missing (no persist directory known, for instance).
    let footprint = engine.footprint().expect("footprint");
    assert!(footprint.index.is_some() || footprint.index_unmeasured.is_some());
    assert!(footprint.total.is_some() || footprint.total_unmeasured.is_some());
    if let (Some(index), Some(total)) = (&footprint.index, &footprint.total) {
        assert!(
            total.bytes >= index.bytes && index.bytes > 0,
            "{footprint:?}"
        );
        assert!(index.bytes >= (d.n * dim * 4) as u64, "{footprint:?}");
    }
    let _ = engine.server_pid();

    // close drops the collection: the same name can be created again without --recreate.
    engine.close().expect("close");
}

#[test]
#[cfg_attr(
    not(engine_runs = "chroma"),
    ignore = "needs CHROMA_URL (scripts/servers/chroma.sh start)"
)]
fn ef_search_is_fixed_at_creation() {
    let url = server_url();
    let mut engine = open(&options(Some(&url), false)).expect("open");
    // Before create: a sweep over ef_search is refused at once, not after a long build.
    engine
        .set_search_params(&params(&[("ef_search", ParamValue::Int(64))]))
        .expect("first value");
    let err = engine
        .set_search_params(&params(&[("ef_search", ParamValue::Int(128))]))
        .unwrap_err();
    assert!(matches!(err, EngineError::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("build"), "{err}");
    let err = engine
        .set_search_params(&params(&[("hnsw_ef", ParamValue::Int(64))]))
        .unwrap_err();
    assert!(matches!(err, EngineError::BadParameter { .. }), "{err}");

    // The value checked before create is the collection's ef_search.
    let name = unique_name("efpending");
    engine
        .create(&spec(&name, 8, 10, ParamMap::new()))
        .expect("create");
    let described = engine.describe();
    assert_eq!(described["server_hnsw"]["ef_search"], 64, "{described:?}");
    engine
        .set_search_params(&params(&[("ef_search", ParamValue::Int(64))]))
        .expect("same value");
    engine
        .set_search_params(&ParamMap::new())
        .expect("no parameters");
    let err = engine
        .set_search_params(&params(&[("ef_search", ParamValue::Int(10))]))
        .unwrap_err();
    assert!(matches!(err, EngineError::Unsupported { .. }), "{err}");
    engine.close().expect("close");

    // A build value that contradicts the search value is a parameter error.
    let mut engine = open(&options(Some(&url), false)).expect("open");
    engine
        .set_search_params(&params(&[("ef_search", ParamValue::Int(64))]))
        .expect("value");
    let err = engine
        .create(&spec(
            &unique_name("efclash"),
            8,
            10,
            params(&[("ef_search", ParamValue::Int(32))]),
        ))
        .unwrap_err();
    assert!(matches!(err, EngineError::BadParameter { .. }), "{err}");
}

#[test]
#[cfg_attr(
    not(engine_runs = "chroma"),
    ignore = "needs CHROMA_URL (scripts/servers/chroma.sh start)"
)]
fn recall_grows_with_ef_search() {
    let url = server_url();
    let d = data();
    // A sparse graph so that ef_search matters on this small set. Chroma fixes ef_search at
    // creation, so each level is its own build: one insert thread makes the three graphs the
    // same (hnswlib's fixed seed, one insertion order); with the default thread count they
    // differ, and a worse graph at ef_search 200 once scored below a better one at 40.
    let mut recalls = Vec::new();
    for ef in [10i64, 40, 200] {
        let build_params = params(&[
            ("m", ParamValue::Int(4)),
            ("ef_construction", ParamValue::Int(16)),
            ("ef_search", ParamValue::Int(ef)),
            ("num_threads", ParamValue::Int(1)),
        ]);
        let mut engine = build(&url, &d, "efsweep", build_params);
        let r = recall(
            &d,
            &engine.batch_search(&d.queries, d.dim, K).expect("search"),
        );
        println!("recall@{K} m=4 ef_construction=16 ef_search={ef}: {r:.4}");
        recalls.push(r);
        engine.close().expect("close");
    }
    for w in recalls.windows(2) {
        assert!(
            w[1] >= w[0] - 0.02,
            "recall fell as ef_search grew: {recalls:?}"
        );
    }
    assert!(
        recalls[2] > recalls[0],
        "ef_search had no effect: {recalls:?}"
    );
}

#[test]
#[cfg_attr(
    not(engine_runs = "chroma"),
    ignore = "needs CHROMA_URL (scripts/servers/chroma.sh start)"
)]
fn build_params_are_checked() {
    let url = server_url();
    let mut engine = open(&options(Some(&url), false)).expect("open");
    let name = unique_name("params");
    let err = engine
        .create(&spec(
            &name,
            8,
            100,
            params(&[("bogus", ParamValue::Int(1))]),
        ))
        .unwrap_err();
    assert!(matches!(err, EngineError::BadParameter { .. }), "{err}");
    let err = engine
        .create(&spec(
            &name,
            8,
            100,
            params(&[("m", ParamValue::Str("x".into()))]),
        ))
        .unwrap_err();
    assert!(matches!(err, EngineError::BadParameter { .. }), "{err}");

    // Buffer and persist thresholds reach the server.
    let build = params(&[
        ("m", ParamValue::Int(12)),
        ("ef_construction", ParamValue::Int(50)),
        ("batch_size", ParamValue::Int(50)),
        ("sync_threshold", ParamValue::Int(500)),
    ]);
    engine.create(&spec(&name, 8, 100, build)).expect("create");
    let hnsw = engine.describe()["server_hnsw"].clone();
    assert_eq!(hnsw["max_neighbors"], 12, "{hnsw}");
    assert_eq!(hnsw["batch_size"], 50, "{hnsw}");
    assert_eq!(hnsw["sync_threshold"], 500, "{hnsw}");
    engine.close().expect("close");
}

#[test]
#[cfg_attr(
    not(engine_runs = "chroma"),
    ignore = "needs CHROMA_URL (scripts/servers/chroma.sh start)"
)]
fn recreate_behaviour() {
    let url = server_url();
    let name = unique_name("recreate");
    let s = spec(&name, 8, 100, ParamMap::new());

    let mut first = open(&options(Some(&url), false)).expect("open");
    first.create(&s).expect("create");
    first.insert_batch(&[1, 2], &[0.5; 16]).expect("insert");

    // Same name without --recreate: refused, and the message says how to proceed.
    let mut second = open(&options(Some(&url), false)).expect("open");
    let err = second.create(&s).unwrap_err();
    assert!(matches!(err, EngineError::Operation { .. }), "{err}");
    assert!(err.to_string().contains("--recreate"), "{err}");

    // With --recreate: dropped and created empty.
    let mut third = open(&options(Some(&url), true)).expect("open");
    third.create(&s).expect("recreate");
    let report = third.wait_until_ready().expect("ready");
    assert_eq!(report.points, Some(0), "{report:?}");
    third.close().expect("close");
}

/// When `CHROMA_URL` is the script's own server, opening without a URL finds it through
/// the script (idempotent `start`) and knows its persist directory and PID.
#[test]
#[cfg_attr(
    not(engine_runs = "chroma"),
    ignore = "needs CHROMA_URL (scripts/servers/chroma.sh start)"
)]
fn default_url_uses_the_script_server() {
    let url = server_url();
    let base = std::env::var_os("RAGDBEVAL_SERVER_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/ragdbeval-servers"));
    let script_url = std::fs::read_to_string(base.join("chroma/url")).unwrap_or_default();
    if script_url.trim().trim_end_matches('/') != url.trim_end_matches('/') {
        println!("skipped: CHROMA_URL is not the server of scripts/servers/chroma.sh");
        return;
    }
    let mut engine = open(&options(None, false)).expect("open without --url");
    let described = engine.describe();
    assert_eq!(described["url"], url.trim_end_matches('/'), "{described:?}");
    assert!(engine.server_pid().is_some());
    engine
        .create(&spec(&unique_name("default"), 8, 10, ParamMap::new()))
        .expect("create");
    // An empty collection has no vector segment on disk yet: said, not guessed.
    let footprint = engine.footprint().expect("footprint");
    assert!(footprint.index.is_some() || footprint.index_unmeasured.is_some());
    engine.close().expect("close");
}

/// The persist directory of `scripts/servers/chroma.sh`'s server when `url` is that server.
fn script_persist_dir(url: &str) -> Option<PathBuf> {
    let base = std::env::var_os("RAGDBEVAL_SERVER_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/ragdbeval-servers"));
    let script_url = std::fs::read_to_string(base.join("chroma/url")).unwrap_or_default();
    (script_url.trim().trim_end_matches('/') == url.trim_end_matches('/'))
        .then(|| base.join("chroma/data"))
}

/// Two collections in one persist directory: each reports its own vector segment and rows,
/// not the whole directory (which every collection of the server shares).
#[test]
#[cfg_attr(
    not(engine_runs = "chroma"),
    ignore = "needs CHROMA_URL (scripts/servers/chroma.sh start)"
)]
fn two_collections_report_their_own_footprint() {
    let url = server_url();
    let Some(persist) = script_persist_dir(&url) else {
        println!("skipped: CHROMA_URL is not the server of scripts/servers/chroma.sh");
        return;
    };
    let dim = 16;
    let load = |n: usize| {
        let mut opts = options(Some(&url), false);
        opts.server_storage = Some(persist.clone());
        let mut engine = open(&opts).expect("open");
        engine
            .create(&spec(&unique_name("own"), dim, n, default_build()))
            .expect("create");
        let ids: Vec<u64> = (0..n as u64).collect();
        let vectors: Vec<f32> = (0..n * dim)
            .map(|i| ((i * 7919) % 1000) as f32 / 1000.0)
            .collect();
        for (chunk_ids, chunk) in ids.chunks(500).zip(vectors.chunks(500 * dim)) {
            engine.insert_batch(chunk_ids, chunk).expect("insert");
        }
        engine.wait_until_ready().expect("ready");
        engine
    };
    let mut big = load(4000);
    let mut small = load(2000);
    let fb = big.footprint().expect("footprint");
    let fs = small.footprint().expect("footprint");
    println!("big {fb:?}\nsmall {fs:?}");
    let whole = ragdbeval::storage::disk_usage(&persist)
        .expect("du")
        .allocated;
    for (f, n) in [(&fb, 4000u64), (&fs, 2000)] {
        let index = f.index.as_ref().expect("index measured");
        let total = f.total.as_ref().expect("total measured");
        // The HNSW segment holds the vectors themselves (data_level0.bin).
        assert!(index.bytes >= n * dim as u64 * 4, "{f:?}");
        assert!(total.bytes >= index.bytes, "{f:?}");
        assert!(total.bytes < whole, "{f:?} vs persist directory {whole}");
    }
    // Their own: different sizes, and together no more than the shared directory.
    assert!(
        fb.index.as_ref().map(|s| s.bytes) > fs.index.as_ref().map(|s| s.bytes),
        "{fb:?} vs {fs:?}"
    );
    let sum = fb.total.as_ref().map_or(0, |s| s.bytes) + fs.total.as_ref().map_or(0, |s| s.bytes);
    assert!(sum <= whole, "{sum} > persist directory {whole}");
    big.close().expect("close");
    small.close().expect("close");
}

/// Runs the server script with a private state directory.
fn script(state: &Path, command: &str) -> std::process::Output {
    Command::new("bash")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/scripts/servers/chroma.sh"
        ))
        .arg(command)
        .env("RAGDBEVAL_SERVER_DIR", state)
        .output()
        .expect("run scripts/servers/chroma.sh")
}

/// Stops the private server even when an assertion fails.
struct StopOnDrop(PathBuf);
impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let _ = script(&self.0, "stop");
    }
}

#[test]
#[cfg_attr(
    not(engine_runs = "chroma"),
    ignore = "needs CHROMA_URL (scripts/servers/chroma.sh start)"
)]
fn server_stopped_mid_run() {
    // Needs chromadb installed, which a set CHROMA_URL implies.
    server_url();
    let state = tempfile::tempdir().expect("temp dir");
    let _guard = StopOnDrop(state.path().to_path_buf());
    let started = Instant::now();
    let out = script(state.path(), "start");
    assert!(
        out.status.success(),
        "start failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let url = String::from_utf8_lossy(&out.stdout).trim().to_string();
    println!("private server at {url} in {:?}", started.elapsed());
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    // Idempotent: a second start prints the same URL.
    let again = script(state.path(), "start");
    assert_eq!(String::from_utf8_lossy(&again.stdout).trim(), url);

    let mut opts = options(Some(&url), false);
    opts.server_storage = Some(state.path().join("chroma/data"));
    let mut engine = open(&opts).expect("open");
    engine
        .create(&spec(&unique_name("stop"), 4, 3, ParamMap::new()))
        .expect("create");
    engine
        .insert_batch(
            &[1, 2, 3],
            &[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0],
        )
        .expect("insert");
    let mut out = Vec::new();
    engine
        .search(&[0.0, 0.0, 0.0, 1.0], 2, &mut out)
        .expect("search");
    assert_eq!(out[0].id, 1);
    // 3 points: below sync_threshold, so no segment files yet; measured or explained.
    let footprint = engine.footprint().expect("footprint");
    assert!(footprint.total.is_some() || footprint.total_unmeasured.is_some());

    let stop = script(state.path(), "stop");
    assert!(stop.status.success());
    match engine.search(&[0.0, 0.0, 0.0, 1.0], 2, &mut out) {
        Err(e @ EngineError::Unreachable { .. }) => println!("as expected: {e}"),
        Err(other) => panic!("expected Unreachable, got {other}"),
        Ok(()) => panic!("search succeeded on a stopped server"),
    }
    let err = engine.batch_search(&[0.0; 8], 4, 2).unwrap_err();
    assert!(matches!(err, EngineError::Unreachable { .. }), "{err}");
    let err = engine.insert_batch(&[9], &[0.0; 4]).unwrap_err();
    assert!(matches!(err, EngineError::Unreachable { .. }), "{err}");
}

/// Filtered search through metadata and `where`: every case keeps to its predicate with
/// high recall, one call per query and grouped batches alike, before and after writes.
#[test]
#[cfg_attr(
    not(engine_runs = "chroma"),
    ignore = "needs CHROMA_URL (scripts/servers/chroma.sh start)"
)]
fn filtered_search_keeps_to_the_predicate() {
    let url = server_url();
    let mut engine = open(&options(Some(&url), true)).expect("open");
    crate::filtered::check_filtered_search(
        engine.as_mut(),
        spec(&unique_name("filtered"), 0, 0, default_build()),
        0.9,
    );
}
