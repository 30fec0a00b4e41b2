//! What every server engine must do: the scenarios each server adapter's own tests ran
//! before they were shared, driven through the adapter API with the engine's `default` set.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use ragdbeval::distance::Distance;
use ragdbeval::engine::{Batch, EngineError, PointId, Query};
use ragdbeval::params::{ParamMap, ParamValue, parse_override};

use super::url_at;
use crate::common::{
    K, TestData, collection, config_set, connect_options, engine_url, entry, files_in, free_port,
    open_at, open_engine, params, ragdbeval, search_all, stderr, unique_name,
};

/// The URL of the engine's server; the tests that call it are ignored without one.
fn url(engine: &str) -> String {
    engine_url(engine).expect("a server engine")
}

/// A closed port: `open` fails within seconds as unreachable, and the message says how to
/// get a server (its script, when it has one) and to pass `--url`.
pub fn unreachable_url_fails_fast(engine: &str) {
    let port = free_port();
    let started = Instant::now();
    match open_engine(
        engine,
        &connect_options(engine, Some(&url_at(engine, port)), false),
    ) {
        Err(EngineError::Unreachable {
            target, message, ..
        }) => {
            println!("unreachable: {target}: {message}");
            assert!(target.contains(&port.to_string()), "{target}");
            assert!(message.contains("--url"), "{message}");
            let server = entry(engine).meta.server.as_ref().expect("a server engine");
            if server.script {
                let script = format!("scripts/servers/{engine}.sh start");
                assert!(message.contains(&script), "{message}");
            }
        }
        Err(other) => panic!("expected Unreachable, got {other}"),
        Ok(_) => panic!("a closed port must not connect"),
    }
    assert!(started.elapsed() < Duration::from_secs(15));
}

/// A URL without a scheme, or of another kind of server, is refused as the `url` parameter.
pub fn bad_url_is_a_parameter_error(engine: &str) {
    for bad in ["localhost:8000", "mysql://nope"] {
        match open_engine(engine, &connect_options(engine, Some(bad), false)) {
            Err(EngineError::BadParameter { param, .. }) => assert_eq!(param, "url", "{bad}"),
            Err(other) => panic!("{bad}: expected BadParameter, got {other}"),
            Ok(_) => panic!("{bad}: not a URL of {engine}"),
        }
    }
}

/// A listener that accepts every connection and never writes a byte; connections are kept
/// open (dropping them would close the socket and give the client an answer).
fn silent_listener() -> (u16, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let handle = std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
            if held.len() > 64 {
                break;
            }
        }
    });
    (port, handle)
}

/// A server that accepts the connection and never answers must not hang a run: `bench`
/// pointed at a silent listener fails within its deadline with one error line naming the
/// engine, and writes no result.
pub fn silent_server_hits_the_deadline(engine: &str) {
    let (port, _listener) = silent_listener();
    let url = url_at(engine, port);
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = ragdbeval(
        dir.path(),
        &argv![
            "bench --db",
            engine,
            "--url",
            &url,
            "--timeout 2 -q --warmup 0 --runbook build-search --dataset gen:uniform:n=200,dim=8,queries=5"
        ],
    );
    let took = started.elapsed();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{engine}: {err}");
    assert!(
        took < Duration::from_secs(20),
        "{engine} took {took:?}: {err}"
    );
    assert!(err.starts_with("error: "), "{engine}: {err}");
    let lines = err.trim_end().lines().count();
    assert_eq!(lines, 1, "{engine}: one line: {err}");
    assert!(err.contains(engine), "{engine} named: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!err.contains("os error 11"), "say what EAGAIN means: {err}");
    let results = files_in(&dir.path().join("results"));
    assert!(results.is_empty(), "{engine}: no result file");
}

/// External ids far from row numbers, so that a lost or mangled mapping shows.
fn id_of(row: usize) -> PointId {
    1_000_000_000_000 + 7 * row as PointId
}

fn row_of(id: PointId) -> Option<usize> {
    let off = id.checked_sub(1_000_000_000_000)?;
    (off % 7 == 0).then_some((off / 7) as usize)
}

/// Search parameters from `name=value` texts, as `--search-param` takes them.
fn search_params(texts: &[&str]) -> ParamMap {
    texts
        .iter()
        .map(|text| match parse_override(text) {
            Ok((name, ragdbeval::params::SweepValue::One(value))) => (name, value),
            other => panic!("{text}: not one search parameter: {other:?}"),
        })
        .collect()
}

/// The engine's search-effort sweep (`hnsw_ef=8,32,128`), one parameter map per value with
/// the other search parameters of its conformance settings; empty without a sweep.
fn effort_sweep(engine: &str) -> Vec<ParamMap> {
    let case = &entry(engine).meta.conformance;
    let Some((name, values)) = case.effort_sweep.split_once('=') else {
        return Vec::new();
    };
    values
        .split(',')
        .map(|value| {
            let mut p = search_params(case.search_params);
            p.insert(name.to_string(), ParamValue::parse(value));
            p
        })
        .collect()
}

/// Recall@K of `results`, whose ids must all be ids this test inserted.
fn recall_of(d: &TestData, results: &[Vec<ragdbeval::engine::Neighbor>]) -> f64 {
    d.recall(results, |id| {
        let row = row_of(id).unwrap_or_else(|| panic!("returned id {id} was never inserted"));
        assert!(row < d.n, "id {id} beyond the data");
        Some(row)
    })
}

/// The adapter API on the engine's server, with its config.toml's `default` set on a
/// clustered 5k × 32 set in its conformance distance, under ids far from row numbers.
pub fn api_lifecycle(engine: &str) {
    let url = url(engine);
    let case = &entry(engine).meta.conformance;
    let d = TestData::generate(&format!(
        "clustered:n=5000,dim=32,queries=100,distance={},seed=7",
        case.distance
    ));
    let dim = d.dim;
    let (build, searches) = config_set(engine, "default");

    let mut db = open_at(engine, &url, false);
    assert_eq!(db.name(), engine);
    let version = db.version();
    assert!(!version.is_empty() && version != "unknown", "{version}");
    // As the runner does: every search configuration is checked before the build.
    for p in searches.iter().chain(&effort_sweep(engine)) {
        db.set_search_params(p).expect("config search parameters");
    }
    let name = unique_name("life");
    db.create(&d.spec(&name, build.clone())).expect("create");
    d.load(db.as_mut(), id_of);
    let report = db.wait_until_ready().expect("ready");
    println!("index report: {report:?}");
    assert_eq!(report.points, Some(d.n as u64), "{report:?}");

    // A wrong-dimension vector is refused, not silently truncated.
    let err = db
        .insert_batch(&[id_of(d.n + 100)], &[0.0; 16])
        .unwrap_err();
    assert!(err.to_string().contains("dimension"), "{err}");

    // The default set reaches the engine's recall, one call per query and in one batch.
    for p in &searches {
        db.set_search_params(p).expect("default search parameters");
    }
    let results = search_all(db.as_ref(), &d.queries, dim);
    let r = recall_of(&d, &results);
    println!("{engine} default set: recall@{K} {r:.4}");
    assert!(r >= case.min_recall, "recall {r}");
    assert!(results.iter().all(|found| found.len() == K), "{results:?}");
    let batch = db
        .batch_search(Batch::new(&d.queries, dim, K))
        .expect("batch search");
    assert_eq!(batch.len(), d.queries.len() / dim);
    let rb = recall_of(&d, &batch);
    assert!(rb >= case.min_recall, "batch recall {rb}");

    // Ids are stable: a stored vector finds itself first, under its own id.
    let mut out = Vec::new();
    for row in [0usize, 1, 17, 999, 4321, d.n - 1] {
        db.search(Query::new(d.row(row), 1), &mut out)
            .expect("search");
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].id, id_of(row), "{out:?}");
    }

    // Several threads search one engine at once.
    std::thread::scope(|s| {
        for t in 0..4 {
            let db = &db;
            let queries = &d.queries;
            s.spawn(move || {
                let mut out = Vec::new();
                for q in queries.chunks_exact(dim).skip(t).step_by(4) {
                    db.search(Query::new(q, K), &mut out)
                        .expect("threaded search");
                    assert_eq!(out.len(), K);
                }
            });
        }
    });

    // The effort sweep: recall does not fall as effort grows (0.02 of noise allowed).
    let mut curve = Vec::new();
    for p in effort_sweep(engine) {
        db.set_search_params(&p).expect("sweep parameters");
        curve.push(recall_of(&d, &search_all(db.as_ref(), &d.queries, dim)));
    }
    println!("{engine} effort sweep: {curve:?}");
    for w in curve.windows(2) {
        assert!(w[1] >= w[0] - 0.02, "recall fell: {curve:?}");
    }
    if let Some(best) = curve.last() {
        assert!(*best >= case.min_recall, "{curve:?}");
    }
    for p in &searches {
        db.set_search_params(p).expect("default search parameters");
    }

    // Upsert: a new id onto query 0 and an existing id moved onto query 1.
    let new_id = id_of(d.n + 10);
    let moved = id_of(7);
    let mut vectors = d.query(0).to_vec();
    vectors.extend_from_slice(d.query(1));
    db.upsert_batch(&[new_id, moved], &vectors).expect("upsert");
    db.search(Query::new(d.query(0), K), &mut out)
        .expect("search");
    assert_eq!(out[0].id, new_id, "upserted point not found first: {out:?}");
    db.search(Query::new(d.query(1), K), &mut out)
        .expect("search");
    assert_eq!(out[0].id, moved, "updated point not found first: {out:?}");
    // Its old place is empty: row 7's vector no longer finds id 7 first.
    db.search(Query::new(d.row(7), K), &mut out)
        .expect("search");
    assert_ne!(
        out[0].id, moved,
        "old vector of the moved id still there: {out:?}"
    );
    // The runner waits after every mutation phase too: one new point, one replaced.
    let report = db.wait_until_ready().expect("ready after upsert");
    assert_eq!(report.points, Some(d.n as u64 + 1), "{report:?}");

    // Delete the true neighbours of the first 20 queries and both upserted ids: none may
    // come back.
    let mut doomed: Vec<PointId> = (0..20)
        .flat_map(|q| d.gt.ids_of(q).to_vec())
        .map(|row| id_of(row as usize))
        .chain([moved, new_id])
        .collect();
    doomed.sort_unstable();
    doomed.dedup();
    db.delete_batch(&doomed).expect("delete");
    for q in 0..20 {
        db.search(Query::new(d.query(q), K), &mut out)
            .expect("search");
        assert_eq!(out.len(), K);
        let back: Vec<_> = out
            .iter()
            .filter(|n| doomed.binary_search(&n.id).is_ok())
            .collect();
        assert!(back.is_empty(), "deleted ids came back: {back:?}");
    }
    let report = db.wait_until_ready().expect("ready after delete");
    let left = d.n as u64 + 1 - doomed.len() as u64;
    assert_eq!(report.points, Some(left), "{report:?}");
    // Deleting ids that are gone already is not an error.
    db.delete_batch(&doomed[..3]).expect("delete again");

    // Both sizes, or the reason each is missing.
    let footprint = db.footprint().expect("footprint");
    assert!(footprint.index.is_some() || footprint.index_unmeasured.is_some());
    assert!(footprint.total.is_some() || footprint.total_unmeasured.is_some());
    if let (Some(index), Some(total)) = (&footprint.index, &footprint.total) {
        assert!(total.bytes >= index.bytes, "{footprint:?}");
    }
    let _ = db.server_pid();

    // close drops the collection: the same name is created again without --recreate.
    db.close().expect("close");
    let mut again = open_at(engine, &url, false);
    again
        .create(&d.spec(&name, build))
        .expect("the collection was dropped by close");
    again.close().expect("close");
}

/// An existing collection is replaced only with `--recreate`: without it `create` is refused
/// with a message that says how to proceed; with it the collection is empty. Closing the first
/// engine after its collection was replaced is fine.
pub fn recreate_behaviour(engine: &str) {
    let url = url(engine);
    let distance: Distance = entry(engine).meta.conformance.distance.parse().unwrap();
    let spec = collection(&unique_name("recreate"), 8, 100, distance, ParamMap::new());

    let mut first = open_at(engine, &url, false);
    first.create(&spec).expect("create");
    let mut two = vec![0.5; 8];
    two.extend([0.25; 8]);
    first.insert_batch(&[1, 2], &two).expect("insert");
    let report = first.wait_until_ready().expect("ready");
    assert_eq!(report.points, Some(2), "{report:?}");

    let mut second = open_at(engine, &url, false);
    let err = second.create(&spec).unwrap_err();
    assert!(matches!(err, EngineError::Operation { .. }), "{err}");
    assert!(err.to_string().contains("--recreate"), "{err}");

    let mut third = open_at(engine, &url, true);
    third.create(&spec).expect("recreate");
    let report = third.wait_until_ready().expect("ready");
    assert_eq!(report.points, Some(0), "{report:?}");
    third.close().expect("close");
    first
        .close()
        .expect("closing after the collection is gone is fine");
}

/// A build or search parameter the engine does not know is a parameter error, before any
/// work.
pub fn unknown_parameters_are_rejected(engine: &str) {
    let url = url(engine);
    let distance: Distance = entry(engine).meta.conformance.distance.parse().unwrap();
    let bogus = params(&[("bogus", ParamValue::Int(1))]);
    let mut db = open_at(engine, &url, false);
    let err = db.set_search_params(&bogus).unwrap_err();
    assert!(matches!(err, EngineError::BadParameter { .. }), "{err}");
    let name = unique_name("params");
    let err = db
        .create(&collection(&name, 8, 10, distance, bogus))
        .unwrap_err();
    assert!(matches!(err, EngineError::BadParameter { .. }), "{err}");
    // The rejected build left nothing behind.
    db.create(&collection(&name, 8, 10, distance, ParamMap::new()))
        .expect("nothing was created by the rejected build");
    db.close().expect("close");
}
