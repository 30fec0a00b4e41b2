//! Integration tests of what is particular to the PostgreSQL + pgvector adapter
//! (`--db pgvector`); what every server engine must do is in `conformance`.
//!
//! They need a server: start one with `scripts/servers/pgvector.sh start` and set
//! `PGVECTOR_URL` to the URL it prints. Without it (at build time) they are reported as
//! ignored, except under CI (`CI` set), where a missing server is a failure.
//! `server_stopped_mid_run_is_an_error` starts (and stops) a second, private server with the
//! same script.

use crate::common::{K, ScriptServer, config_set, params, row_id, unique_name};

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ragdbeval::distance::Distance;
use ragdbeval::engine::{CollectionSpec, ConnectOptions, EngineError, EngineResult, Neighbor, PointId, VectorEngine, Query};
use ragdbeval::groundtruth::{BaseSet, GroundTruth, exact_knn};
use ragdbeval::params::{ParamMap, ParamValue};
use ragdbeval::synthetic::{SyntheticKind, SyntheticSpec};
use ragdbeval::vectors::Vectors;

/// The server under test (the test is ignored unless `build.rs` saw `PGVECTOR_URL`, or `CI`).
fn server_url() -> String {
    crate::common::engine_url("pgvector").expect("pgvector is a server engine")
}

fn options(url: &str, recreate: bool) -> ConnectOptions {
    crate::common::connect_options("pgvector", Some(url), recreate)
}

fn try_open(url: &str, recreate: bool) -> EngineResult<Box<dyn VectorEngine>> {
    crate::common::open_engine("pgvector", &options(url, recreate))
}

fn open(url: &str, recreate: bool) -> Box<dyn VectorEngine> {
    crate::common::open_at("pgvector", url, recreate)
}

/// A clustered dataset with its exact ground truth.
struct Data {
    train: Arc<Vectors>,
    test: Vectors,
    distance: Distance,
    gt: GroundTruth,
}

impl Data {
    fn clustered(n: usize, queries: usize, distance: Distance, seed: u64) -> Data {
        let spec = SyntheticSpec {
            kind: SyntheticKind::Clustered,
            n,
            queries,
            dim: 32,
            distance,
            seed,
            clusters: 16,
            spread: 0.5,
            ..SyntheticSpec::demo()
        };
        let (train, test) = spec.generate();
        let gt = exact_knn(
            &BaseSet {
                vectors: train.as_flat(),
                ids: None,
                dim: train.dim(),
            },
            test.as_flat(),
            distance,
            K,
            &|_| {},
        );
        Data {
            train: Arc::new(train),
            test,
            distance,
            gt,
        }
    }

    fn dim(&self) -> usize {
        self.train.dim()
    }

    fn spec(&self, name: &str, build: ParamMap) -> CollectionSpec {
        CollectionSpec {
            name: name.to_string(),
            dim: self.dim(),
            distance: self.distance,
            expected_points: self.train.len(),
            build_params: build,
            work_dir: std::env::temp_dir(),
            attributes: None,
            element_type: Default::default(),
        }
    }

    /// Bulk load the way the runner does: shared rows, batch_size × upload_parallel at a time.
    fn load(&self, engine: &mut dyn VectorEngine) {
        let ids: Vec<PointId> = (0..self.train.len() as PointId).collect();
        for (c, chunk) in ids.chunks(1000).enumerate() {
            engine
                .insert_shared(chunk, &self.train, c * 1000)
                .expect("bulk insert");
        }
    }

    fn search_all(&self, engine: &dyn VectorEngine) -> Vec<Vec<Neighbor>> {
        crate::common::search_all(engine, self.test.as_flat(), self.dim())
    }

    /// Recall@k against exact ground truth, by distance (see [`crate::common::recall`]).
    fn recall(&self, results: &[Vec<Neighbor>]) -> f64 {
        crate::common::recall(
            self.train.as_flat(),
            self.test.as_flat(),
            self.dim(),
            self.distance,
            &self.gt,
            results,
            row_id,
        )
    }
}

fn ids_of(results: &[Vec<Neighbor>]) -> Vec<Vec<PointId>> {
    results
        .iter()
        .map(|r| r.iter().map(|n| n.id).collect())
        .collect()
}

fn plans_all_use_index(details: &serde_json::Map<String, serde_json::Value>) -> Vec<String> {
    let plans = details
        .get("plans")
        .and_then(|p| p.as_object())
        .expect("the index report carries the checked plans");
    assert!(!plans.is_empty());
    for (label, plan) in plans {
        assert_eq!(
            plan["uses_index"],
            serde_json::Value::Bool(true),
            "{label}: {}",
            plan["plan"]
        );
        let text = plan["plan"].as_str().unwrap_or("");
        assert!(text.contains("Index Scan"), "{label}: {text}");
        assert!(!text.contains("Seq Scan"), "{label}: {text}");
    }
    plans.keys().cloned().collect()
}

#[test]
#[cfg_attr(not(engine_runs = "pgvector"), ignore = "needs PGVECTOR_URL")]
fn default_build_plans_sizes_sweep_and_writes() {
    let url = server_url();
    let data = Data::clustered(5000, 200, Distance::Euclidean, 7);
    let dim = data.dim();
    let (build, default_search) = config_set("pgvector", "default");
    let (sweep_build, sweep) = config_set("pgvector", "ef-sweep");
    assert_eq!(build, sweep_build);

    let mut engine = open(&url, false);
    assert!(
        engine.version().contains("pgvector 0."),
        "{}",
        engine.version()
    );
    // As the runner does: every search configuration is checked before the build.
    for p in default_search.iter().chain(&sweep) {
        engine
            .set_search_params(p)
            .expect("config search parameters");
    }

    let name = unique_name("life");
    engine
        .create(&data.spec(&name, build.clone()))
        .expect("create");
    let started = Instant::now();
    data.load(engine.as_mut());
    let loaded = started.elapsed();
    let started = Instant::now();
    let report = engine.wait_until_ready().expect("create index");
    println!(
        "load {:.2} s, index {:.2} s, report {:?}",
        loaded.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        report
    );
    assert_eq!(report.points, Some(5000));
    assert_eq!(report.indexed_vectors, Some(5000));
    assert!(
        !report.may_full_scan,
        "{:?}",
        report.details.get("full_scan_reason")
    );
    let labels = plans_all_use_index(&report.details);
    assert_eq!(
        labels.len(),
        7,
        "one plan per search-parameter set: {labels:?}"
    );

    // Two figures: the ANN index alone, and the table that also holds every vector (heap of
    // at least n × dim × 4 bytes) plus that index.
    let footprint = engine.footprint().expect("footprint");
    let size = footprint.index.clone().expect("an index exists");
    let total = footprint.total.clone().expect("table size");
    assert!(size.bytes > 0);
    assert_eq!(size.source, "pg_relation_size(ANN index)");
    assert!(
        total.source.starts_with("pg_total_relation_size(table)"),
        "{total:?}"
    );
    assert!(
        total.bytes >= size.bytes + 5000 * dim as u64 * 4,
        "total {} must hold the index {} and the heap of 5000 × {dim} × 4 B",
        total.bytes,
        size.bytes
    );
    if url.contains("127.0.0.1") || url.contains("localhost") {
        assert!(
            engine.server_pid().is_some(),
            "a local server's PID is found"
        );
    }
    let describe = engine.describe();
    let table_bytes = describe["table_bytes"].as_u64().expect("table size");
    assert!(table_bytes > 5000 * dim as u64 * 4, "{describe:?}");
    assert!(
        describe.contains_key("maintenance_work_mem"),
        "{describe:?}"
    );
    assert!(
        describe.contains_key("max_parallel_maintenance_workers"),
        "{describe:?}"
    );

    // Default parameters reach the recall the config promises.
    engine
        .set_search_params(&default_search[0])
        .expect("params");
    let results = data.search_all(engine.as_ref());
    let recall = data.recall(&results);
    println!("default {:?}: recall {recall:.4}", default_search[0]);
    assert!(recall >= 0.9, "recall {recall}");
    assert!(results.iter().all(|r| r.len() == K));

    // Ids are the dataset rows: each score is the true distance of the returned id's vector.
    for (q, found) in results.iter().enumerate().take(50) {
        for n in found {
            let d = data
                .distance
                .between(data.test.row(q), data.train.row(n.id as usize));
            assert!(
                (d - n.score).abs() <= 1e-3 * d.max(1.0),
                "id {} {d} vs {}",
                n.id,
                n.score
            );
        }
    }
    // Stable: the same queries give the same ids, also from several threads at once.
    assert_eq!(ids_of(&data.search_all(engine.as_ref())), ids_of(&results));
    let shared: &dyn VectorEngine = engine.as_ref();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| s.spawn(|| ids_of(&data.search_all(shared))))
            .collect();
        for h in handles {
            assert_eq!(h.join().expect("search thread"), ids_of(&results));
        }
    });

    // The ef_search sweep: recall does not drop as ef_search grows (beyond noise).
    let mut previous: Option<f64> = None;
    for p in &sweep {
        engine.set_search_params(p).expect("sweep params");
        let r = data.recall(&data.search_all(engine.as_ref()));
        println!("ef_search {:?}: recall {r:.4}", p.get("ef_search"));
        if let Some(prev) = previous {
            assert!(r >= prev - 0.02, "recall fell from {prev} to {r} at {p:?}");
        }
        previous = Some(r);
    }
    assert!(
        previous.unwrap_or(0.0) >= 0.95,
        "ef_search=320 recall {previous:?}"
    );

    // Upsert of an existing id: its new vector is found, under the same id.
    engine
        .set_search_params(&default_search[0])
        .expect("params");
    let moved: PointId = 42;
    let target = data.test.row(0).to_vec();
    engine.upsert_batch(&[moved], &target).expect("upsert");
    let mut out = Vec::new();
    engine.search(Query::new(&target, K), &mut out).expect("search");
    assert_eq!(out[0].id, moved, "{out:?}");
    assert!(out[0].score < 1e-3, "{out:?}");
    // A repeated id in one batch keeps its last vector; a new id is inserted.
    let fresh: PointId = 5000;
    let mut two = data.test.row(1).to_vec();
    two.extend_from_slice(data.test.row(2));
    engine
        .upsert_batch(&[fresh, fresh], &two)
        .expect("upsert new id");
    engine
        .search(Query::new(data.test.row(2), 1), &mut out)
        .expect("search");
    assert_eq!(out[0].id, fresh, "{out:?}");

    let report = engine.wait_until_ready().expect("ready after mutations");
    assert_eq!(report.points, Some(5001));
    assert!(!report.may_full_scan);

    // Wrong dimensions are refused, not truncated.
    let err = engine.upsert_batch(&[1], &[0.0; 16]).unwrap_err();
    assert!(err.to_string().contains("dimension"), "{err}");
    let err = engine.search(Query::new(&[0.0; 16], K), &mut out).unwrap_err();
    assert!(err.to_string().contains("dimension"), "{err}");

    engine.close().expect("close");
}

#[test]
#[cfg_attr(not(engine_runs = "pgvector"), ignore = "needs PGVECTOR_URL")]
fn other_index_sets_use_their_index() {
    let url = server_url();
    // Each set on its own metric, so that every operator class is exercised.
    let cases = [
        ("ivfflat", Distance::Dot, 0.85),
        ("halfvec", Distance::Angular, 0.9),
        ("binary", Distance::Euclidean, 0.5),
    ];
    for (set, distance, min_best) in cases {
        let data = Data::clustered(3000, 100, distance, 11);
        let (build, searches) = config_set("pgvector", set);
        let mut engine = open(&url, false);
        for p in &searches {
            engine
                .set_search_params(p)
                .expect("config search parameters");
        }
        let name = unique_name(set);
        engine.create(&data.spec(&name, build)).expect("create");
        data.load(engine.as_mut());
        let report = engine.wait_until_ready().expect("create index");
        assert_eq!(report.points, Some(3000));
        assert!(
            !report.may_full_scan,
            "{set}: {:?}",
            report.details.get("full_scan_reason")
        );
        assert_eq!(plans_all_use_index(&report.details).len(), searches.len());
        let size = engine.footprint().expect("size").index.expect("index");
        let describe = engine.describe();
        println!(
            "{set} ({distance}): index {} B, {}",
            size.bytes, describe["index_definition"]
        );
        let mut best = 0.0f64;
        for p in &searches {
            engine.set_search_params(p).expect("params");
            let r = data.recall(&data.search_all(engine.as_ref()));
            println!("{set} {p:?}: recall {r:.4}");
            best = best.max(r);
        }
        assert!(best >= min_best, "{set}: best recall {best} < {min_best}");
        // Writes through this set's column type and search path: an upserted vector is found
        // under its id, a deleted id is gone.
        let target = data.test.row(0).to_vec();
        engine.upsert_batch(&[5], &target).expect("upsert");
        let mut out = Vec::new();
        engine.search(Query::new(&target, K), &mut out).expect("search");
        assert_eq!(out.first().map(|n| n.id), Some(5), "{set}: {out:?}");
        engine.delete_batch(&[5]).expect("delete");
        engine.search(Query::new(&target, K), &mut out).expect("search");
        assert!(out.iter().all(|n| n.id != 5), "{set}: {out:?}");
        engine.close().expect("close");
    }
}

#[test]
#[cfg_attr(not(engine_runs = "pgvector"), ignore = "needs PGVECTOR_URL")]
fn tiny_table_scan_is_reported() {
    let url = server_url();
    // On a handful of rows the planner prefers a plain scan over the index: the adapter must
    // say so instead of letting exact results pass for index results, and seqscan=false must
    // bring the index back.
    let data = Data::clustered(50, 5, Distance::Euclidean, 3);
    let (build, searches) = config_set("pgvector", "default");
    let forced = params(&[
        ("ef_search", ParamValue::Int(100)),
        ("seqscan", ParamValue::Bool(false)),
    ]);
    let mut engine = open(&url, false);
    engine.set_search_params(&searches[0]).expect("params");
    engine.set_search_params(&forced).expect("params");
    let name = unique_name("tiny");
    engine.create(&data.spec(&name, build)).expect("create");
    data.load(engine.as_mut());
    let report = engine.wait_until_ready().expect("index");
    let plans = report.details["plans"].clone();
    println!(
        "tiny table: may_full_scan {} plans {plans}",
        report.may_full_scan
    );
    let uses_index = |label: &str| {
        plans[label]["uses_index"]
            .as_bool()
            .unwrap_or_else(|| panic!("no plan for {label}: {plans}"))
    };
    assert!(uses_index("ef_search=100 seqscan=false"), "{plans}");
    // Whatever the planner picks on its own, the report must agree with the plan.
    assert_eq!(report.may_full_scan, !uses_index("ef_search=100"));
    if report.may_full_scan {
        let reason = report.details["full_scan_reason"].as_str().unwrap_or("");
        assert!(reason.contains("ef_search=100"), "{reason}");
        assert!(!reason.contains("ef_search=100 seqscan=false"), "{reason}");
    }
    // Forced, the tiny table is searched through the index and still finds the exact top-k.
    engine.set_search_params(&forced).expect("params");
    let recall = data.recall(&data.search_all(engine.as_ref()));
    assert!(recall >= 0.9, "recall {recall}");
    engine.close().expect("close");
}

#[test]
#[cfg_attr(not(engine_runs = "pgvector"), ignore = "needs PGVECTOR_URL")]
fn unknown_and_bad_parameters_are_rejected() {
    let url = server_url();
    let mut engine = open(&url, false);
    let bad_search = [
        params(&[("hnsw_ef", ParamValue::Int(64))]),
        params(&[("ef_search", ParamValue::Str("high".into()))]),
        params(&[("ef_search", ParamValue::Int(5000))]),
        params(&[("iterative_scan", ParamValue::Str("sideways".into()))]),
    ];
    for p in &bad_search {
        match engine.set_search_params(p) {
            Err(EngineError::BadParameter { message, .. }) => println!("{p:?}: {message}"),
            other => panic!("{p:?}: expected BadParameter, got {other:?}"),
        }
    }

    let data = Data::clustered(100, 5, Distance::Euclidean, 9);
    let name = unique_name("params");
    let bad_build = [
        params(&[("ef_construct", ParamValue::Int(64))]),
        params(&[("index", ParamValue::Str("diskann".into()))]),
        params(&[
            ("index", ParamValue::Str("ivfflat".into())),
            ("m", ParamValue::Int(16)),
        ]),
        params(&[("maintenance_work_mem", ParamValue::Str("lots".into()))]),
    ];
    for p in &bad_build {
        match engine.create(&data.spec(&name, p.clone())) {
            Err(EngineError::BadParameter { message, .. }) => println!("{p:?}: {message}"),
            other => panic!("{p:?}: expected BadParameter, got {other:?}"),
        }
    }
    // strict_order is HNSW-only: with an IVFFlat build it fails before any work.
    engine
        .set_search_params(&params(&[(
            "iterative_scan",
            ParamValue::Str("strict_order".into()),
        )]))
        .expect("valid for HNSW");
    let ivf = params(&[("index", ParamValue::Str("ivfflat".into()))]);
    assert!(matches!(
        engine.create(&data.spec(&name, ivf)),
        Err(EngineError::BadParameter { .. })
    ));
    // None of the rejected builds left a table behind.
    engine
        .create(&data.spec(&name, ParamMap::new()))
        .expect("no table was created by rejected builds");
    engine.close().expect("close");
}

/// Calls `f`; a panic fails the test with a clear message, an error is returned.
fn no_panic<T>(what: &str, f: impl FnOnce() -> EngineResult<T>) -> EngineResult<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| panic!("{what} panicked"))
}

/// A private server of the script with a table of 1,000 rows in the default set, searched
/// once while it is up, for the tests that stop or freeze their server.
fn private_server_with_a_table(
    seed: u64,
    timeout: Duration,
) -> (ScriptServer, Data, Box<dyn VectorEngine>) {
    // Needs PostgreSQL + pgvector installed, which a set PGVECTOR_URL implies.
    server_url();
    let server = ScriptServer::start("pgvector");
    let data = Data::clustered(1000, 5, Distance::Euclidean, seed);
    let (build, searches) = config_set("pgvector", "default");
    let opts = ConnectOptions {
        timeout,
        ..options(&server.url, false)
    };
    let mut engine = crate::common::open_engine("pgvector", &opts).expect("open");
    engine.set_search_params(&searches[0]).expect("params");
    let name = unique_name("private");
    engine.create(&data.spec(&name, build)).expect("create");
    data.load(engine.as_mut());
    engine.wait_until_ready().expect("index");
    let mut out = Vec::new();
    engine
        .search(Query::new(data.test.row(0), K), &mut out)
        .expect("search while up");
    assert_eq!(out.len(), K);
    (server, data, engine)
}

#[test]
#[cfg_attr(not(engine_runs = "pgvector"), ignore = "needs PGVECTOR_URL")]
fn server_stopped_mid_run_is_an_error() {
    let (server, data, mut engine) = private_server_with_a_table(13, Duration::from_secs(60));
    let url = server.url.clone();
    let mut out = Vec::new();

    let stop = server.run("stop");
    assert!(
        stop.status.success(),
        "{}",
        String::from_utf8_lossy(&stop.stderr)
    );

    let q = data.test.row(1);
    let err = no_panic("search", || engine.search(Query::new(q, K), &mut out)).expect_err("server is down");
    println!("search after stop: {err}");
    assert!(
        matches!(err, EngineError::Unreachable { .. }),
        "a lost server is Unreachable: {err}"
    );
    assert!(err.to_string().contains("pgvector.sh start"), "{err}");
    let row = data.train.row(0).to_vec();
    no_panic("upsert", || engine.upsert_batch(&[1], &row)).expect_err("upsert");
    no_panic("insert", || engine.insert_batch(&[7777], &row)).expect_err("insert");
    no_panic("delete", || engine.delete_batch(&[1])).expect_err("delete");
    no_panic("wait", || engine.wait_until_ready()).expect_err("wait");
    no_panic("footprint", || engine.footprint()).expect_err("footprint");
    let described = catch_unwind(AssertUnwindSafe(|| engine.describe())).expect("describe");
    assert!(described.contains_key("table_bytes_error"), "{described:?}");
    no_panic("close", || engine.close()).expect_err("close");
    match try_open(&url, false) {
        Err(EngineError::Unreachable { .. }) => {}
        Err(other) => panic!("expected Unreachable, got {other}"),
        Ok(_) => panic!("the server was stopped"),
    }
}

/// Sends `signal` to a process and all its descendants.
fn signal_tree(pid: u32, signal: &str) {
    let children = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|s| {
            s.split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok())
                .collect::<Vec<_>>()
        })
        .collect::<Vec<_>>();
    let _ = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status();
    for child in children {
        signal_tree(child, signal);
    }
}

/// A server that freezes mid-run (every process stopped: the kernel still accepts and
/// acknowledges, nothing answers) fails the call within `--timeout` plus the grace, with an
/// error naming the operation and the deadline, instead of hanging the run.
#[test]
#[cfg_attr(not(engine_runs = "pgvector"), ignore = "needs PGVECTOR_URL")]
fn server_frozen_mid_run_hits_the_deadline() {
    let (server, data, engine) = private_server_with_a_table(17, Duration::from_secs(1));
    let url = server.url.clone();
    let mut out = Vec::new();

    // The postmaster is the parent of any backend.
    let mut probe = postgres::Client::connect(&url, postgres::NoTls).expect("probe session");
    let backend: i32 = probe
        .query_one("SELECT pg_backend_pid()", &[])
        .and_then(|r| r.try_get(0))
        .expect("backend pid");
    let stat = std::fs::read_to_string(format!("/proc/{backend}/stat")).expect("stat");
    let postmaster: u32 = stat
        .rsplit(')')
        .next()
        .and_then(|rest| rest.split_whitespace().nth(1))
        .and_then(|p| p.parse().ok())
        .expect("parent pid");
    signal_tree(postmaster, "-STOP");

    let started = Instant::now();
    let q = data.test.row(1);
    let result = no_panic("search", || engine.search(Query::new(q, K), &mut out));
    let took = started.elapsed();
    signal_tree(postmaster, "-CONT");
    drop(probe);
    let err = result.expect_err("a frozen server cannot answer");
    println!("search on a frozen server, after {took:?}: {err}");
    assert!(took < Duration::from_secs(15), "took {took:?}");
    let text = err.to_string();
    assert!(text.contains("search"), "{text}");
    assert!(text.contains("no answer within 6 s"), "{text}");
    drop(engine);
    drop(server);
}

/// Filtered search through attribute columns, B-tree indexes and `WHERE`: with an iterative
/// index scan every case keeps to its predicate with high recall, before and after writes;
/// without it and with a small ef_search, no row that fails the filter is returned either,
/// and the plan the planner chose for the filtered shape is recorded and agrees with the
/// answers.
#[test]
#[cfg_attr(not(engine_runs = "pgvector"), ignore = "needs PGVECTOR_URL")]
fn filtered_search_keeps_to_the_predicate() {
    let url = server_url();
    let spec = |name: &str| CollectionSpec {
        name: unique_name(name),
        dim: 0,
        distance: Distance::Euclidean,
        expected_points: 0,
        build_params: ParamMap::new(),
        work_dir: std::env::temp_dir(),
        attributes: None,
        element_type: Default::default(),
    };
    let mut engine = open(&url, true);
    engine
        .set_search_params(&params(&[
            ("ef_search", ParamValue::Int(100)),
            ("iterative_scan", ParamValue::Str("strict_order".into())),
            ("seqscan", ParamValue::Bool(false)),
        ]))
        .expect("search params");
    let outcomes = crate::filtered::check_filtered_search(engine.as_mut(), spec("filt"), 0.9);
    assert!(outcomes.iter().all(|o| o.short == 0), "{outcomes:?}");

    // Without iterative scans and with ef_search 10: the index yields 10 candidates, the
    // filter keeps the few that pass.
    let mut engine = open(&url, true);
    engine
        .set_search_params(&params(&[
            ("ef_search", ParamValue::Int(10)),
            ("iterative_scan", ParamValue::Str("off".into())),
            ("seqscan", ParamValue::Bool(false)),
        ]))
        .expect("search params");
    let n = 2000;
    let mut attrs = ragdbeval::filter::Attributes::new(n);
    attrs
        .push(
            "label",
            ragdbeval::filter::Column::Keyword {
                dictionary: (0..100).map(|i| i.to_string()).collect(),
                codes: (0..n as u32).map(|i| i % 100).collect(),
            },
        )
        .unwrap();
    let attrs = Arc::new(attrs);
    let data = Data::clustered(n, 20, Distance::Euclidean, 3);
    engine
        .create(&CollectionSpec {
            attributes: Some(attrs.clone()),
            element_type: Default::default(),
            ..data.spec(&unique_name("filtoff"), ParamMap::new())
        })
        .expect("create");
    data.load(engine.as_mut());
    engine.wait_until_ready().expect("ready");
    let predicate = ragdbeval::filter::Predicate {
        all: vec![ragdbeval::filter::Condition::equals("label", "7")],
    };
    let passes = predicate.compile(&attrs).unwrap();
    let mut short = 0;
    for q in data.test.iter() {
        let mut out = Vec::new();
        engine
            .search(Query::new(q, K).filtered(Some(&predicate)), &mut out)
            .expect("filtered search");
        assert!(out.iter().all(|n| passes.passes(n.id)), "a violation");
        short += usize::from(out.len() < K);
    }
    // The planner chooses: through the HNSW index (10 candidates, then the filter: short
    // answers) or through the label's B-tree (an exact sort of the 20 passing rows: none
    // short). Either way the choice is recorded, and the answers agree with it.
    let details = engine.describe();
    let plans = details["filtered_plans"]
        .as_array()
        .expect("filtered plans");
    assert_eq!(plans.len(), 1, "{plans:?}");
    eprintln!("pgvector filtered plan at 1 %: {}", plans[0]["strategy"]);
    if plans[0]["uses_vector_index"] == true {
        assert!(
            short > 10,
            "only {short} of 20 queries short through the HNSW index"
        );
    } else {
        assert_eq!(
            short, 0,
            "an exact plan left {short} queries short: {plans:?}"
        );
        assert!(
            plans[0]["plan"].as_str().unwrap().contains("label"),
            "{plans:?}"
        );
    }
    engine.close().expect("close");
}

#[test]
#[cfg_attr(not(engine_runs = "pgvector"), ignore = "needs PGVECTOR_URL")]
fn wire_searches_match_the_postgres_client() {
    // Unfiltered searches go over the adapter's own wire session; a URL that session does not
    // serve (here `target_session_attrs`) sends them through the `postgres` crate. Both must
    // return the same neighbours with the same distances, for every column type and statement
    // shape, across k and search-parameter changes (which prepare the statement again). The
    // lists = 1 IVFFlat index makes every search exact, so two tables of the same rows agree.
    let url = server_url();
    let separator = if url.contains('?') { '&' } else { '?' };
    let crate_url = format!("{url}{separator}target_session_attrs=read-write");
    let data = Data::clustered(400, 20, Distance::Angular, 11);
    let builds = [
        vec![],
        vec![("type", ParamValue::Str("halfvec".into()))],
        vec![("quantization", ParamValue::Str("binary".into()))],
    ];
    for extra in builds {
        let mut build = params(&[
            ("index", ParamValue::Str("ivfflat".into())),
            ("lists", ParamValue::Int(1)),
        ]);
        build.extend(params(&extra));
        let searches = [
            params(&[("probes", ParamValue::Int(1))]),
            params(&[
                ("probes", ParamValue::Int(1)),
                ("rerank", ParamValue::Int(200)),
            ]),
        ];
        let mut engines = Vec::new();
        for (client, u) in [("wire", &url), ("crate", &crate_url)] {
            let mut engine = open(u, false);
            let searches: &[ParamMap] = if extra.iter().any(|(k, _)| *k == "quantization") {
                &searches
            } else {
                &searches[..1]
            };
            for s in searches {
                engine.set_search_params(s).expect("params");
            }
            engine.set_search_params(&searches[0]).expect("params");
            let name = unique_name(&format!("wire_{client}"));
            engine
                .create(&data.spec(&name, build.clone()))
                .expect("create");
            data.load(engine.as_mut());
            engine.wait_until_ready().expect("index");
            let said = engine.describe()["search_client"]
                .as_str()
                .unwrap_or("")
                .to_string();
            let expected = if client == "wire" {
                "wire protocol"
            } else {
                "postgres crate"
            };
            assert!(said.starts_with(expected), "{client}: {said}");
            engines.push((engine, searches.to_vec()));
        }
        for k in [K, 3, K] {
            for set in 0..engines[0].1.len() {
                let mut results = Vec::new();
                for (engine, searches) in &mut engines {
                    engine.set_search_params(&searches[set]).expect("params");
                    let found: Vec<Vec<Neighbor>> = data
                        .test
                        .iter()
                        .map(|q| {
                            let mut out = Vec::new();
                            engine.search(Query::new(q, k), &mut out).expect("search");
                            out
                        })
                        .collect();
                    results.push(found);
                }
                for (q, (wire, via_crate)) in results[0].iter().zip(&results[1]).enumerate() {
                    assert_eq!(wire.len(), k, "{extra:?} k {k} query {q}");
                    let ids = |r: &[Neighbor]| r.iter().map(|n| n.id).collect::<Vec<_>>();
                    assert_eq!(ids(wire), ids(via_crate), "{extra:?} k {k} query {q}");
                    for (a, b) in wire.iter().zip(via_crate) {
                        assert!(
                            (a.score - b.score).abs() <= 1e-6 * b.score.abs().max(1.0),
                            "{extra:?} k {k} query {q}: {} vs {}",
                            a.score,
                            b.score
                        );
                    }
                }
            }
        }
        // The exact answers are the true neighbours (halfvec rounds the stored vectors).
        if extra.is_empty() {
            let mut out = Vec::new();
            let wire: Vec<Vec<Neighbor>> = data
                .test
                .iter()
                .map(|q| {
                    engines[0].0.search(Query::new(q, K), &mut out).expect("search");
                    out.clone()
                })
                .collect();
            let recall = data.recall(&wire);
            assert!(recall >= 0.999, "recall {recall}");
        }
        for (mut engine, _) in engines {
            engine.close().expect("close");
        }
    }
}

/// Lines put at the top of the server's `pg_hba.conf` for the life of the value; the file is
/// restored and the server reloaded when it is dropped. One test at a time edits the file
/// (tests run in parallel, and each restores what it read).
pub(crate) struct HbaLines {
    client: postgres::Client,
    path: String,
    original: String,
    _one_at_a_time: std::sync::MutexGuard<'static, ()>,
}

static HBA_EDIT: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl HbaLines {
    pub(crate) fn add(mut client: postgres::Client, lines: &str) -> HbaLines {
        let one_at_a_time = HBA_EDIT.lock().unwrap_or_else(|e| e.into_inner());
        let path: String = client
            .query_one("SHOW hba_file", &[])
            .expect("hba_file")
            .get(0);
        let original = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "this test edits the server's {path} (a server of scripts/servers/pgvector.sh): {e}"
            )
        });
        std::fs::write(&path, format!("{lines}\n{original}")).expect("write pg_hba.conf");
        let mut hba = HbaLines {
            client,
            path,
            original,
            _one_at_a_time: one_at_a_time,
        };
        hba.client
            .batch_execute("SELECT pg_reload_conf()")
            .expect("reload");
        // The postmaster takes the reload a moment after the signal.
        std::thread::sleep(Duration::from_millis(500));
        hba
    }
}

impl Drop for HbaLines {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.path, &self.original);
        let _ = self.client.batch_execute("SELECT pg_reload_conf()");
    }
}

#[test]
#[cfg_attr(not(engine_runs = "pgvector"), ignore = "needs PGVECTOR_URL")]
fn wire_sessions_authenticate_with_scram_md5_and_password() {
    // The wire session does its own start-up: each password method the server may ask for
    // must get it to a working search, and a wrong password must fail with the server's words.
    let url = server_url();
    let config: postgres::Config = url.parse().expect("URL");
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().unwrap_or("postgres").to_string();
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let tag = unique_name("auth").replace("ragdbeval_test_", "");
    let roles = [
        (
            format!("wire_scram_{tag}"),
            "scram-sha-256",
            "scram-sha-256",
        ),
        (format!("wire_md5_{tag}"), "md5", "md5"),
        (format!("wire_plain_{tag}"), "scram-sha-256", "password"),
    ];
    let mut lines = String::new();
    for (role, encryption, method) in &roles {
        admin
            .batch_execute(&format!(
                "SET password_encryption = '{encryption}'; \
                 CREATE ROLE {role} LOGIN SUPERUSER PASSWORD 'pw-{role}'"
            ))
            .expect("create role");
        lines.push_str(&format!("host all {role} 127.0.0.1/32 {method}\n"));
    }
    let hba = HbaLines::add(
        postgres::Client::connect(&url, postgres::NoTls).expect("connect"),
        lines.trim_end(),
    );
    let data = Data::clustered(300, 10, Distance::Euclidean, 5);
    let build = params(&[
        ("index", ParamValue::Str("ivfflat".into())),
        ("lists", ParamValue::Int(1)),
    ]);
    for (role, _, method) in &roles {
        let role_url = format!("postgres://{role}:pw-{role}@127.0.0.1:{port}/{db}");
        let mut engine = open(&role_url, false);
        engine
            .set_search_params(&params(&[("probes", ParamValue::Int(1))]))
            .expect("params");
        let name = unique_name(&format!("auth_{method}").replace('-', "_"));
        engine
            .create(&data.spec(&name, build.clone()))
            .expect("create");
        data.load(engine.as_mut());
        engine.wait_until_ready().expect("index");
        let recall = data.recall(&data.search_all(engine.as_ref()));
        let said = engine.describe()["search_client"]
            .as_str()
            .unwrap_or("")
            .to_string();
        assert!(said.starts_with("wire protocol"), "{method}: {said}");
        assert!(recall >= 0.999, "{method}: recall {recall}");
        engine.close().expect("close");
        let wrong = format!("postgres://{role}:wrong@127.0.0.1:{port}/{db}");
        let err = try_open(&wrong, false)
            .err()
            .expect("a wrong password is refused")
            .to_string();
        assert!(
            err.contains("password authentication failed"),
            "{method}: {err}"
        );
    }
    drop(hba);
    for (role, _, _) in &roles {
        let _ = admin.batch_execute(&format!("DROP ROLE IF EXISTS {role}"));
    }
}
