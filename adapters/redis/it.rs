//! Integration tests of what is particular to the Redis vector-set adapter (`--db redis`);
//! what every server engine must do is in `conformance`.
//!
//! They need a Redis >= 8.0 server: `export REDIS_URL=$(scripts/servers/redis.sh start)`.
//! Without `REDIS_URL` (at build time) they are reported as ignored, except under CI (env
//! `CI` set), where a missing server is a failure.

use crate::common::{K, ScriptServer, TestData, params, row_id, search_all, unique_name};

use ragdbeval::distance::Distance;
use ragdbeval::engine::{CollectionSpec, ConnectOptions, EngineError, PointId, VectorEngine, Query};
use ragdbeval::groundtruth::{BaseSet, exact_knn};
use ragdbeval::params::{EngineConfig, ParamMap, ParamValue, expand};

/// The server under test (the test is ignored unless `build.rs` saw `REDIS_URL`, or `CI`).
fn server_url() -> String {
    crate::common::engine_url("redis").expect("redis is a server engine")
}

fn options(url: &str, recreate: bool) -> ConnectOptions {
    crate::common::connect_options("redis", Some(url), recreate)
}

fn open(opts: &ConnectOptions) -> Box<dyn VectorEngine> {
    match crate::common::open_engine("redis", opts) {
        Ok(engine) => engine,
        Err(e) => panic!("open: {e}"),
    }
}

fn spec(name: &str, dim: usize, n: usize, distance: Distance, build: ParamMap) -> CollectionSpec {
    crate::common::collection(name, dim, n, distance, build)
}

/// The default build of config.toml's `default` set.
fn default_build() -> ParamMap {
    crate::common::config_set("redis", "default").0
}

/// Redis' own facts about the default build: the index report carries `VINFO` and counts
/// every vector as indexed, scores are similarities (best first), and the size is the key's
/// `MEMORY USAGE`, index and total alike.
#[test]
#[cfg_attr(not(engine_runs = "redis"), ignore = "needs REDIS_URL")]
fn default_build_reports_vinfo_and_memory() {
    let url = server_url();
    let d = TestData::generate("clustered:n=5000,dim=32,queries=200,distance=angular");
    let mut engine = crate::common::loaded("redis", &url, &d, "facts", default_build());
    let report = engine.wait_until_ready().expect("ready");
    assert_eq!(report.indexed_vectors, Some(d.n as u64), "{report:?}");
    assert!(!report.may_full_scan);
    assert!(report.details.contains_key("vinfo"), "{report:?}");
    engine
        .set_search_params(&params(&[("ef", ParamValue::Int(100))]))
        .expect("params");
    for found in search_all(engine.as_ref(), &d.queries, d.dim) {
        assert!(
            found.windows(2).all(|w| w[0].score >= w[1].score),
            "{found:?}"
        );
    }
    let footprint = engine.footprint().expect("footprint");
    let size = footprint.total.clone().expect("a total");
    assert!(
        size.source.starts_with("MEMORY USAGE of the key"),
        "{size:?}"
    );
    assert_eq!(footprint.index.as_ref().map(|i| i.bytes), Some(size.bytes));
    assert!(size.bytes > (d.n * d.dim) as u64, "{size:?}");
    let described = engine.describe();
    for key in ["server_version", "vinfo", "used_memory"] {
        assert!(described.contains_key(key), "{key} missing: {described:?}");
    }
    if url.contains("127.0.0.1") || url.contains("localhost") {
        assert!(engine.server_pid().is_some(), "local server pid");
    }
    engine.close().expect("close");
}

#[test]
#[cfg_attr(not(engine_runs = "redis"), ignore = "needs REDIS_URL")]
fn euclidean_needs_normalize() {
    let url = server_url();
    let d = TestData::generate("clustered:n=2000,dim=16,queries=50,distance=euclidean");
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
    d.load(engine.as_mut(), |row| row as PointId);
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
    let r = crate::common::recall(
        &d.base,
        &d.queries,
        d.dim,
        Distance::Angular,
        &angular_gt,
        &results,
        row_id,
    );
    println!("normalized euclidean set, cosine recall@{K}: {r:.4}");
    assert!(r >= 0.9, "{r}");
    engine.close().expect("close");
}

#[test]
#[cfg_attr(not(engine_runs = "redis"), ignore = "needs REDIS_URL")]
fn unknown_parameters_are_rejected() {
    let url = server_url();
    let mut engine = open(&options(&url, false));
    let name = unique_name("params");
    let bad_builds = [
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
#[cfg_attr(not(engine_runs = "redis"), ignore = "needs REDIS_URL")]
fn config_sets_are_accepted_and_reach_the_server() {
    let url = server_url();
    let entry = crate::common::entry("redis");
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
#[cfg_attr(not(engine_runs = "redis"), ignore = "needs REDIS_URL")]
fn server_stopped_mid_run_is_an_error() {
    // Needs Redis installed, which a set REDIS_URL implies.
    server_url();
    let server = ScriptServer::start("redis");
    let url = server.url.clone();
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
        .search(Query::new(&[1.0, 0.0, 0.0, 0.0], 2), &mut out)
        .expect("search");
    assert_eq!(out[0].id, 1);

    let stopped = server.run("stop");
    assert!(stopped.status.success(), "{stopped:?}");
    for _ in 0..2 {
        match engine.search(Query::new(&[1.0, 0.0, 0.0, 0.0], 2), &mut out) {
            Err(e) => println!("after stop: {e}"),
            Ok(()) => panic!("search succeeded against a stopped server: {out:?}"),
        }
    }
    assert!(engine.upsert_batch(&[3], &[0.0, 0.0, 1.0, 0.0]).is_err());
    assert!(engine.footprint().is_err());
    assert!(matches!(
        crate::common::open_engine("redis", &options(&url, false)),
        Err(EngineError::Unreachable { .. })
    ));
}

/// Filtered search through `SETATTR` attributes and `VSIM … FILTER`: every case keeps to
/// its predicate, single calls and pipelines alike, before and after writes (an update
/// resends the attributes with the new vector).
#[test]
#[cfg_attr(not(engine_runs = "redis"), ignore = "needs REDIS_URL")]
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
#[cfg_attr(not(engine_runs = "redis"), ignore = "needs REDIS_URL")]
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
