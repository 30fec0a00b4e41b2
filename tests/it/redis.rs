//! Integration tests of the Redis vector-set adapter (`--db redis`).
//!
//! They need a Redis >= 8.0 server: `export REDIS_URL=$(scripts/servers/redis.sh start)`.
//! Without `REDIS_URL` (at build time) they are reported as ignored, except under CI (env
//! `CI` set), where a missing server is a failure. `unreachable_url_fails_fast` needs no server.

use crate::common::{K, params, search_all, unique_name};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ragdbeval::distance::Distance;
use ragdbeval::engine::{
    CollectionSpec, ConnectOptions, EngineError, Neighbor, PointId, VectorEngine,
};
use ragdbeval::groundtruth::{BaseSet, GroundTruth, exact_knn};
use ragdbeval::params::{EngineConfig, ParamMap, ParamValue, expand};
use ragdbeval::synthetic::SyntheticSpec;

const DATASET: &str = "gen:clustered:n=5000,dim=32,queries=200,distance=angular";

/// Recall of the answers; every returned id must be one this test inserted.
fn recall(
    base: &[f32],
    queries: &[f32],
    dim: usize,
    distance: Distance,
    gt: &GroundTruth,
    results: &[Vec<Neighbor>],
) -> f64 {
    let row = |id| {
        let row = row_of(id).expect("returned id is one we inserted");
        assert!(row * dim < base.len(), "id {id} beyond the data");
        Some(row)
    };
    crate::common::recall(base, queries, dim, distance, gt, results, row)
}

/// The server under test (the test is ignored unless `build.rs` saw `REDIS_URL`, or `CI`).
fn server_url() -> String {
    crate::common::server_url("REDIS_URL", "scripts/servers/redis.sh start")
}

fn options(url: &str, recreate: bool) -> ConnectOptions {
    ConnectOptions {
        url: Some(url.to_string()),
        recreate,
        batch_size: 500,
        upload_parallel: 2,
        timeout: Duration::from_secs(30),
        ..ConnectOptions::default()
    }
}

fn open(opts: &ConnectOptions) -> Box<dyn VectorEngine> {
    let entry = ragdbeval::adapters::find("redis").expect("redis is registered");
    match (entry.open)(opts) {
        Ok(engine) => engine,
        Err(e) => panic!("open: {e}"),
    }
}

fn spec(name: &str, dim: usize, n: usize, distance: Distance, build: ParamMap) -> CollectionSpec {
    CollectionSpec {
        name: name.to_string(),
        dim,
        distance,
        expected_points: n,
        build_params: build,
        work_dir: std::env::temp_dir(),
        attributes: None,
        element_type: Default::default(),
    }
}

/// The default build of config.toml's `default` set.
fn default_build() -> ParamMap {
    params(&[
        ("quantization", ParamValue::Str("q8".into())),
        ("m", ParamValue::Int(16)),
        ("ef_construction", ParamValue::Int(200)),
    ])
}

/// External ids far from row numbers, so that a lost or mangled mapping shows.
fn id_of(row: usize) -> PointId {
    1_000_000_000_000 + 7 * row as PointId
}

fn row_of(id: PointId) -> Option<usize> {
    let off = id.checked_sub(1_000_000_000_000)?;
    (off % 7 == 0).then_some((off / 7) as usize)
}

struct Data {
    dim: usize,
    n: usize,
    base: Vec<f32>,
    queries: Vec<f32>,
    gt: GroundTruth,
    distance: Distance,
}

fn data(text: &str) -> Data {
    let spec: SyntheticSpec = text.parse().expect("dataset spec");
    let (train, test) = spec.generate();
    let dim = train.dim();
    let base = train.as_flat().to_vec();
    let queries = test.as_flat().to_vec();
    let gt = exact_knn(
        &BaseSet {
            vectors: &base,
            ids: None,
            dim,
        },
        &queries,
        spec.distance,
        K,
        &|_| {},
    );
    Data {
        dim,
        n: train.len(),
        base,
        queries,
        gt,
        distance: spec.distance,
    }
}

/// Loads `d` the way the runner does: blocks of batch_size × upload_parallel points.
fn load(engine: &mut dyn VectorEngine, d: &Data) {
    let ids: Vec<PointId> = (0..d.n).map(id_of).collect();
    for (chunk_ids, chunk) in ids.chunks(1000).zip(d.base.chunks(1000 * d.dim)) {
        if let Err(e) = engine.insert_batch(chunk_ids, chunk) {
            panic!("insert: {e}");
        }
    }
}

#[test]
fn unreachable_url_fails_fast() {
    // A port that was free a moment ago: nothing listens there.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let url = format!("redis://127.0.0.1:{port}");
    let entry = ragdbeval::adapters::find("redis").expect("redis is registered");
    let started = Instant::now();
    match (entry.open)(&options(&url, false)) {
        Err(EngineError::Unreachable {
            target, message, ..
        }) => {
            assert!(target.contains(&port.to_string()), "{target}");
            assert!(message.contains("redis.sh start"), "{message}");
            assert!(message.contains("--url"), "{message}");
        }
        Err(other) => panic!("expected Unreachable, got {other}"),
        Ok(_) => panic!("a closed port must not connect"),
    }
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[test]
#[cfg_attr(
    not(engine_runs = "redis"),
    ignore = "needs REDIS_URL (scripts/servers/redis.sh start)"
)]
fn full_lifecycle() {
    let url = server_url();
    let d = data(DATASET);
    let dim = d.dim;
    assert_eq!(d.distance, Distance::Angular);

    let mut engine = open(&options(&url, false));
    assert_eq!(engine.name(), "redis");
    assert!(!engine.in_process());
    let version = engine.version();
    assert!(!version.is_empty() && version != "unknown", "{version}");
    let name = unique_name("life");
    // Angular data needs no normalize flag.
    engine
        .create(&spec(&name, dim, d.n, Distance::Angular, default_build()))
        .expect("create");

    // Build.
    load(engine.as_mut(), &d);
    let report = engine.wait_until_ready().expect("ready");
    assert_eq!(report.points, Some(d.n as u64), "{report:?}");
    assert_eq!(report.indexed_vectors, Some(d.n as u64), "{report:?}");
    assert!(!report.may_full_scan);
    assert!(report.details.contains_key("vinfo"), "{report:?}");
    println!("index report: {report:?}");

    // A wrong-dimension vector is refused, not truncated.
    let err = engine.insert_batch(&[1], &[0.0; 16]).unwrap_err();
    assert!(err.to_string().contains("dimension"), "{err}");

    // Default set: ef=100 must reach recall 0.9.
    engine
        .set_search_params(&params(&[("ef", ParamValue::Int(100))]))
        .expect("params");
    let results = search_all(engine.as_ref(), &d.queries, dim);
    let r = recall(&d.base, &d.queries, dim, d.distance, &d.gt, &results);
    println!("recall@{K} ef=100: {r:.4}");
    assert!(r >= 0.9, "recall {r}");
    for found in &results {
        assert_eq!(found.len(), K);
        // Scores are Redis' similarities, best first.
        assert!(
            found.windows(2).all(|w| w[0].score >= w[1].score),
            "{found:?}"
        );
    }

    // The pipelined batch API answers the same.
    let batch = engine
        .batch_search(&d.queries, dim, K)
        .expect("batch search");
    assert_eq!(batch.len(), results.len());
    let rb = recall(&d.base, &d.queries, dim, d.distance, &d.gt, &batch);
    assert!(rb >= 0.9, "batch recall {rb}");

    // Several threads search one engine at once.
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

    // ef sweep: recall does not fall as ef grows (0.02 of noise allowed).
    let mut curve = Vec::new();
    for ef in [10, 20, 40, 80, 160, 320] {
        engine
            .set_search_params(&params(&[("ef", ParamValue::Int(ef))]))
            .expect("params");
        let res = search_all(engine.as_ref(), &d.queries, dim);
        curve.push((
            ef,
            recall(&d.base, &d.queries, dim, d.distance, &d.gt, &res),
        ));
    }
    println!("ef sweep: {curve:?}");
    for w in curve.windows(2) {
        assert!(w[1].1 >= w[0].1 - 0.02, "recall fell: {curve:?}");
    }
    assert!(curve[5].1 >= curve[0].1, "{curve:?}");
    assert!(curve[5].1 >= 0.9, "{curve:?}");

    // Upsert: an existing id moved onto query 0, a new id onto query 1.
    let moved = id_of(7);
    let new_id = id_of(d.n + 10);
    let mut vectors = d.queries[..dim].to_vec();
    vectors.extend_from_slice(&d.queries[dim..2 * dim]);
    engine
        .upsert_batch(&[moved, new_id], &vectors)
        .expect("upsert");
    let mut out = Vec::new();
    engine
        .search(&d.queries[..dim], K, &mut out)
        .expect("search");
    assert_eq!(out[0].id, moved, "updated point not first: {out:?}");
    engine
        .search(&d.queries[dim..2 * dim], K, &mut out)
        .expect("search");
    assert_eq!(out[0].id, new_id, "upserted point not first: {out:?}");
    // The runner waits after every mutation phase too: one new point, one replaced.
    let report = engine.wait_until_ready().expect("ready after upsert");
    assert_eq!(report.points, Some(d.n as u64 + 1), "{report:?}");

    // Delete the true neighbours of the first 20 queries plus both upserted ids: none may
    // come back.
    let mut doomed: Vec<PointId> = (0..20)
        .flat_map(|q| {
            d.gt.ids_of(q)
                .iter()
                .map(|row| id_of(*row as usize))
                .collect::<Vec<_>>()
        })
        .collect();
    doomed.push(moved);
    doomed.push(new_id);
    doomed.sort_unstable();
    doomed.dedup();
    engine.delete_batch(&doomed).expect("delete");
    engine
        .set_search_params(&params(&[("ef", ParamValue::Int(100))]))
        .expect("params");
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
    // Deleting ids that are gone already is not an error.
    engine.delete_batch(&doomed[..3]).expect("delete again");

    // Facts.
    // One in-memory structure: index and total are the same MEMORY USAGE figure.
    let footprint = engine.footprint().expect("footprint");
    let size = footprint.total.clone().expect("a total");
    assert!(
        size.source.starts_with("MEMORY USAGE of the key"),
        "{size:?}"
    );
    assert_eq!(footprint.index.as_ref().map(|i| i.bytes), Some(size.bytes));
    assert!(size.bytes > (d.n * dim) as u64, "{size:?}");
    let described = engine.describe();
    for key in ["server_version", "vinfo", "used_memory"] {
        assert!(described.contains_key(key), "{key} missing: {described:?}");
    }
    if url.contains("127.0.0.1") || url.contains("localhost") {
        assert!(engine.server_pid().is_some(), "local server pid");
    }

    // close drops the key: a fresh create without --recreate succeeds.
    engine.close().expect("close");
    let mut again = open(&options(&url, false));
    again
        .create(&spec(&name, dim, d.n, Distance::Angular, default_build()))
        .expect("key was dropped by close");
    again.close().expect("close");
}

#[test]
#[cfg_attr(
    not(engine_runs = "redis"),
    ignore = "needs REDIS_URL (scripts/servers/redis.sh start)"
)]
fn euclidean_needs_normalize() {
    let url = server_url();
    let d = data("gen:clustered:n=2000,dim=16,queries=50,distance=euclidean");
    let name = unique_name("euclid");
    let mut engine = open(&options(&url, false));

    let err = engine
        .create(&spec(
            &name,
            d.dim,
            d.n,
            Distance::Euclidean,
            default_build(),
        ))
        .unwrap_err();
    assert!(matches!(err, EngineError::Unsupported { .. }), "{err}");
    assert!(err.to_string().contains("normalize=true"), "{err}");
    let err = engine
        .create(&spec(&name, d.dim, d.n, Distance::Dot, default_build()))
        .unwrap_err();
    assert!(matches!(err, EngineError::Unsupported { .. }), "{err}");

    // With normalize=true it is accepted; the ranking is cosine, so compare against the
    // angular ground truth of the same data.
    let mut build = default_build();
    build.insert("normalize".into(), ParamValue::Bool(true));
    engine
        .create(&spec(&name, d.dim, d.n, Distance::Euclidean, build))
        .expect("create with normalize");
    load(engine.as_mut(), &d);
    let report = engine.wait_until_ready().expect("ready");
    assert_eq!(report.points, Some(d.n as u64));
    engine
        .set_search_params(&params(&[("ef", ParamValue::Int(100))]))
        .expect("params");
    let results = search_all(engine.as_ref(), &d.queries, d.dim);
    let angular_gt = exact_knn(
        &BaseSet {
            vectors: &d.base,
            ids: None,
            dim: d.dim,
        },
        &d.queries,
        Distance::Angular,
        K,
        &|_| {},
    );
    let r = recall(
        &d.base,
        &d.queries,
        d.dim,
        Distance::Angular,
        &angular_gt,
        &results,
    );
    println!("normalized euclidean set, cosine recall@{K}: {r:.4}");
    assert!(r >= 0.9, "{r}");
    engine.close().expect("close");
}

#[test]
#[cfg_attr(
    not(engine_runs = "redis"),
    ignore = "needs REDIS_URL (scripts/servers/redis.sh start)"
)]
fn unknown_parameters_are_rejected() {
    let url = server_url();
    let mut engine = open(&options(&url, false));
    let name = unique_name("params");
    let bad_builds = [
        params(&[("bogus", ParamValue::Int(1))]),
        params(&[("quantization", ParamValue::Str("pq".into()))]),
        params(&[("m", ParamValue::Int(2))]),
        params(&[("ef_construction", ParamValue::Int(0))]),
        params(&[("normalize", ParamValue::Str("yes".into()))]),
    ];
    for build in bad_builds {
        let err = engine
            .create(&spec(&name, 8, 10, Distance::Angular, build.clone()))
            .unwrap_err();
        assert!(
            matches!(err, EngineError::BadParameter { .. }),
            "{build:?}: {err}"
        );
    }
    for search in [
        params(&[("hnsw_ef", ParamValue::Int(64))]),
        params(&[("ef", ParamValue::Int(0))]),
        params(&[("ef", ParamValue::Str("many".into()))]),
    ] {
        let err = engine.set_search_params(&search).unwrap_err();
        assert!(
            matches!(err, EngineError::BadParameter { .. }),
            "{search:?}: {err}"
        );
    }
}

#[test]
#[cfg_attr(
    not(engine_runs = "redis"),
    ignore = "needs REDIS_URL (scripts/servers/redis.sh start)"
)]
fn config_sets_are_accepted_and_reach_the_server() {
    let url = server_url();
    let entry = ragdbeval::adapters::find("redis").expect("redis is registered");
    let config = EngineConfig::parse(entry.config_toml).expect("config.toml parses");
    for set in ["default", "ef-sweep", "noquant", "bin"] {
        let set = config.set(set).expect("set exists");
        assert!(set.description.is_some());
        for build in expand(&set.build) {
            let mut engine = open(&options(&url, false));
            for search in expand(&set.search) {
                engine.set_search_params(&search).expect("search params");
            }
            let name = unique_name("cfg");
            engine
                .create(&spec(&name, 4, 2, Distance::Angular, build.clone()))
                .expect("create");
            engine
                .insert_batch(&[1, 2], &[1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0])
                .expect("insert");
            let report = engine.wait_until_ready().expect("ready");
            let quant = report.details["vinfo"]["quant-type"].as_str().unwrap_or("");
            let want = match build.get("quantization") {
                Some(ParamValue::Str(q)) if q == "noquant" => "f32",
                Some(ParamValue::Str(q)) if q == "bin" => "bin",
                _ => "int8",
            };
            assert_eq!(quant, want, "{build:?}: {report:?}");
            engine.close().expect("close");
        }
    }
}

#[test]
#[cfg_attr(
    not(engine_runs = "redis"),
    ignore = "needs REDIS_URL (scripts/servers/redis.sh start)"
)]
fn recreate_behaviour() {
    let url = server_url();
    let name = unique_name("recreate");
    let s = spec(&name, 8, 100, Distance::Angular, ParamMap::new());

    let mut first = open(&options(&url, false));
    first.create(&s).expect("create");
    first.insert_batch(&[1, 2], &[0.5; 16]).expect("insert");
    assert_eq!(first.wait_until_ready().expect("ready").points, Some(2));

    // Same key without --recreate: refused, and the message says how to proceed.
    let mut second = open(&options(&url, false));
    let err = second.create(&s).unwrap_err().to_string();
    assert!(err.contains("--recreate"), "{err}");

    // With --recreate: dropped, and empty until loaded.
    let mut third = open(&options(&url, true));
    third.create(&s).expect("recreate");
    let report = third.wait_until_ready().expect("ready");
    assert_eq!(report.points, Some(0), "{report:?}");
    third.close().expect("close");
}

/// Stops a private server when the test ends, even on failure.
struct PrivateServer {
    script: PathBuf,
    dir: tempfile::TempDir,
}

impl PrivateServer {
    fn run(&self, cmd: &str) -> std::process::Output {
        Command::new("bash")
            .arg(&self.script)
            .arg(cmd)
            .env("RAGDBEVAL_SERVER_DIR", self.dir.path())
            .output()
            .expect("run redis.sh")
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let _ = self.run("stop");
    }
}

#[test]
#[cfg_attr(
    not(engine_runs = "redis"),
    ignore = "needs REDIS_URL (scripts/servers/redis.sh start)"
)]
fn server_stopped_mid_run_is_an_error() {
    // Needs Redis installed, which a set REDIS_URL implies.
    server_url();
    let server = PrivateServer {
        script: Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/servers/redis.sh"),
        dir: tempfile::tempdir().expect("tempdir"),
    };
    let started = server.run("start");
    assert!(started.status.success(), "{started:?}");
    let url = String::from_utf8_lossy(&started.stdout).trim().to_string();
    assert!(url.starts_with("redis://127.0.0.1:"), "{url}");

    let mut engine = open(&options(&url, false));
    engine
        .create(&spec(
            &unique_name("stop"),
            4,
            2,
            Distance::Angular,
            ParamMap::new(),
        ))
        .expect("create");
    engine
        .insert_batch(&[1, 2], &[1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0])
        .expect("insert");
    let mut out = Vec::new();
    engine
        .search(&[1.0, 0.0, 0.0, 0.0], 2, &mut out)
        .expect("search");
    assert_eq!(out[0].id, 1);

    let stopped = server.run("stop");
    assert!(stopped.status.success(), "{stopped:?}");
    for _ in 0..2 {
        match engine.search(&[1.0, 0.0, 0.0, 0.0], 2, &mut out) {
            Err(e) => println!("after stop: {e}"),
            Ok(()) => panic!("search succeeded against a stopped server: {out:?}"),
        }
    }
    assert!(engine.upsert_batch(&[3], &[0.0, 0.0, 1.0, 0.0]).is_err());
    assert!(engine.footprint().is_err());
    let entry = ragdbeval::adapters::find("redis").expect("redis is registered");
    assert!(matches!(
        (entry.open)(&options(&url, false)),
        Err(EngineError::Unreachable { .. })
    ));
}

/// Filtered search through `SETATTR` attributes and `VSIM … FILTER`: every case keeps to
/// its predicate, single calls and pipelines alike, before and after writes (an update
/// resends the attributes with the new vector).
#[test]
#[cfg_attr(
    not(engine_runs = "redis"),
    ignore = "needs REDIS_URL (scripts/servers/redis.sh start)"
)]
fn filtered_search_keeps_to_the_predicate() {
    let url = server_url();
    let mut engine = open(&options(&url, true));
    engine
        .set_search_params(&params(&[
            ("ef", ParamValue::Int(200)),
            ("filter_ef", ParamValue::Int(4000)),
        ]))
        .expect("search params");
    crate::filtered::check_filtered_search(
        engine.as_mut(),
        spec(
            &unique_name("filtered"),
            0,
            0,
            Distance::Angular,
            params(&[("quantization", ParamValue::Str("noquant".into()))]),
        ),
        0.9,
    );
}

/// big-ann-benchmarks' runbook format on a server engine: between operations and concurrently.
#[test]
#[cfg_attr(
    not(engine_runs = "redis"),
    ignore = "needs REDIS_URL (scripts/servers/redis.sh start)"
)]
fn a_bigann_runbook_runs_between_and_during_writes() {
    let url = server_url();
    crate::stream::bigann_runbook_runs(
        "redis",
        Some(&url),
        "angular",
        &["--search-param", "ef=200"],
        0.9,
    );
}
