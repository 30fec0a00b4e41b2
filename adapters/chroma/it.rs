//! Integration tests of what is particular to the Chroma adapter, against a real server;
//! what every server engine must do is in `conformance`.
//!
//! The server comes from `CHROMA_URL` (for example the URL printed by
//! `scripts/servers/chroma.sh start`). Without it (at build time) the tests are reported as
//! ignored, except under CI (`CI` set), where a missing server is a failure.
//! `server_stopped_mid_run` starts and stops a private server of its own through the script,
//! with its own `RAGDBEVAL_SERVER_DIR`.

use crate::common::{K, ScriptServer, TestData, params, row_id, unique_name};

use std::path::PathBuf;
use std::time::Instant;

use ragdbeval::distance::Distance;
use ragdbeval::engine::{CollectionSpec, ConnectOptions, EngineError, PointId, VectorEngine, Query, Batch};
use ragdbeval::params::{ParamMap, ParamValue};

/// The server under test (the test is ignored unless `build.rs` saw `CHROMA_URL`, or `CI`).
fn server_url() -> String {
    crate::common::engine_url("chroma").expect("chroma is a server engine")
}

fn options(url: Option<&str>, recreate: bool) -> ConnectOptions {
    crate::common::connect_options("chroma", url, recreate)
}

fn open(opts: &ConnectOptions) -> Result<Box<dyn VectorEngine>, EngineError> {
    crate::common::open_engine("chroma", opts)
}

fn spec(name: &str, dim: usize, n: usize, build: ParamMap) -> CollectionSpec {
    crate::common::collection(name, dim, n, Distance::Euclidean, build)
}

/// The clustered 5k × 32 set, with exact ground truth.
fn data() -> TestData {
    TestData::generate("clustered:n=5000,dim=32,queries=100,seed=7")
}

fn default_build() -> ParamMap {
    crate::common::config_set("chroma", "default").0
}

/// The directory of `scripts/servers/chroma.sh`'s server, which must be the server under test.
fn script_server_dir(url: &str) -> PathBuf {
    let base = std::env::var_os("RAGDBEVAL_SERVER_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/ragdbeval-servers"));
    let script_url = std::fs::read_to_string(base.join("chroma/url")).unwrap_or_default();
    assert_eq!(
        script_url.trim().trim_end_matches('/'),
        url.trim_end_matches('/'),
        "this test needs CHROMA_URL to be the server of scripts/servers/chroma.sh (scripts/test.sh starts it)"
    );
    base.join("chroma")
}

/// Chroma's own facts about the default build: scores are distances, best first (a stored
/// vector finds itself at 0), one batch call answers exactly as one call per query, the HNSW
/// settings reach the server and both sizes are measured or explained.
#[test]
#[cfg_attr(not(engine_runs = "chroma"), ignore = "needs CHROMA_URL")]
fn default_build_is_described_and_measured() {
    let url = server_url();
    let d = data();
    let mut engine = crate::common::loaded("chroma", &url, &d, "facts", default_build());
    let results = crate::common::search_all(engine.as_ref(), &d.queries, d.dim);
    for found in &results {
        assert!(
            found.windows(2).all(|w| w[0].score <= w[1].score),
            "{found:?}"
        );
    }
    let batch = engine
        .batch_search(Batch::new(&d.queries, d.dim, K))
        .expect("batch search");
    let ids = |r: &[Vec<ragdbeval::engine::Neighbor>]| -> Vec<Vec<PointId>> {
        r.iter().map(|r| r.iter().map(|n| n.id).collect()).collect()
    };
    assert_eq!(ids(&results), ids(&batch));
    let mut out = Vec::new();
    for row in [0usize, 4321] {
        engine.search(Query::new(d.row(row), 1), &mut out).expect("search");
        assert!(out[0].score.abs() < 1e-3, "{out:?}");
    }
    // An updated point is found at its new place, at distance 0.
    engine.upsert_batch(&[7], d.query(1)).expect("upsert");
    engine.search(Query::new(d.query(1), K), &mut out).expect("search");
    assert_eq!(out[0].id, 7, "{out:?}");
    assert!(out[0].score.abs() < 1e-3, "{out:?}");

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
    let footprint = engine.footprint().expect("footprint");
    if let (Some(index), Some(total)) = (&footprint.index, &footprint.total) {
        assert!(index.bytes > 0, "{footprint:?}");
        assert!(index.bytes >= (d.n * d.dim * 4) as u64, "{footprint:?}");
        assert!(total.bytes >= index.bytes, "{footprint:?}");
    }
    engine.close().expect("close");
}

#[test]
#[cfg_attr(not(engine_runs = "chroma"), ignore = "needs CHROMA_URL")]
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
#[cfg_attr(not(engine_runs = "chroma"), ignore = "needs CHROMA_URL")]
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
        let mut engine = crate::common::loaded("chroma", &url, &d, "efsweep", build_params);
        let r = d.recall(
            &engine.batch_search(Batch::new(&d.queries, d.dim, K)).expect("search"),
            row_id,
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
#[cfg_attr(not(engine_runs = "chroma"), ignore = "needs CHROMA_URL")]
fn build_params_are_checked() {
    let url = server_url();
    let mut engine = open(&options(Some(&url), false)).expect("open");
    let name = unique_name("params");
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

/// When `CHROMA_URL` is the script's own server, opening without a URL finds it through
/// the script (idempotent `start`) and knows its persist directory and PID.
#[test]
#[cfg_attr(not(engine_runs = "chroma"), ignore = "needs CHROMA_URL")]
fn default_url_uses_the_script_server() {
    let url = server_url();
    script_server_dir(&url);
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

/// Two collections in one persist directory: each reports its own vector segment and rows,
/// not the whole directory (which every collection of the server shares).
#[test]
#[cfg_attr(not(engine_runs = "chroma"), ignore = "needs CHROMA_URL")]
fn two_collections_report_their_own_footprint() {
    let url = server_url();
    let persist = script_server_dir(&url).join("data");
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

#[test]
#[cfg_attr(not(engine_runs = "chroma"), ignore = "needs CHROMA_URL")]
fn server_stopped_mid_run() {
    // Needs chromadb installed, which a set CHROMA_URL implies.
    server_url();
    let started = Instant::now();
    let server = ScriptServer::start("chroma");
    let url = server.url.clone();
    println!("private server at {url} in {:?}", started.elapsed());
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    // Idempotent: a second start prints the same URL.
    let again = server.run("start");
    assert_eq!(String::from_utf8_lossy(&again.stdout).trim(), url);

    let mut opts = options(Some(&url), false);
    opts.server_storage = Some(server.dir().join("chroma/data"));
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
        .search(Query::new(&[0.0, 0.0, 0.0, 1.0], 2), &mut out)
        .expect("search");
    assert_eq!(out[0].id, 1);
    // 3 points: below sync_threshold, so no segment files yet; measured or explained.
    let footprint = engine.footprint().expect("footprint");
    assert!(footprint.total.is_some() || footprint.total_unmeasured.is_some());

    let stop = server.run("stop");
    assert!(stop.status.success());
    match engine.search(Query::new(&[0.0, 0.0, 0.0, 1.0], 2), &mut out) {
        Err(e @ EngineError::Unreachable { .. }) => println!("as expected: {e}"),
        Err(other) => panic!("expected Unreachable, got {other}"),
        Ok(()) => panic!("search succeeded on a stopped server"),
    }
    let err = engine.batch_search(Batch::new(&[0.0; 8], 4, 2)).unwrap_err();
    assert!(matches!(err, EngineError::Unreachable { .. }), "{err}");
    let err = engine.insert_batch(&[9], &[0.0; 4]).unwrap_err();
    assert!(matches!(err, EngineError::Unreachable { .. }), "{err}");
}

/// Filtered search through metadata and `where`: every case keeps to its predicate with
/// high recall, one call per query and grouped batches alike, before and after writes.
#[test]
#[cfg_attr(not(engine_runs = "chroma"), ignore = "needs CHROMA_URL")]
fn filtered_search_keeps_to_the_predicate() {
    let url = server_url();
    let mut engine = open(&options(Some(&url), true)).expect("open");
    crate::filtered::check_filtered_search(
        engine.as_mut(),
        spec(&unique_name("filtered"), 0, 0, default_build()),
        0.9,
    );
}
