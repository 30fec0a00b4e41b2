//! Integration tests of the Qdrant gRPC adapter.
//!
//! All but `unreachable_url_fails_fast` need a server: set `QDRANT_URL` (for example
//! `http://localhost:6334`, plus `QDRANT_API_KEY` if the server wants one). Without it (at build time) they
//! are reported as ignored, under CI too: a Qdrant server cannot be installed on these machines.

use crate::common::{K, params, search_all, unique_name};

use std::time::{Duration, Instant};

use ragdbeval::adapters::qdrant;
use ragdbeval::distance::Distance;
use ragdbeval::engine::{CollectionSpec, ConnectOptions, EngineError, Neighbor};
use ragdbeval::groundtruth::{BaseSet, GroundTruth, exact_knn};
use ragdbeval::params::{ParamMap, ParamValue};
use ragdbeval::synthetic::{SyntheticKind, SyntheticSpec};

/// Recall of the answers to the euclidean test data, whose ids are row numbers. By distance,
/// not by id: the server computes distances with its own SIMD code, so exact near-ties may
/// legitimately come back in another order.
fn recall(
    base: &[f32],
    queries: &[f32],
    dim: usize,
    gt: &GroundTruth,
    results: &[Vec<Neighbor>],
) -> f64 {
    let row = |id| usize::try_from(id).ok();
    crate::common::recall(base, queries, dim, Distance::Euclidean, gt, results, row)
}

/// The server under test (the test is ignored unless `build.rs` saw `QDRANT_URL`, or `CI`).
fn server_url() -> String {
    crate::common::server_url(
        "QDRANT_URL",
        "a Qdrant server, e.g. docker run -p 6334:6334 qdrant/qdrant; not installable here, so ignored even under CI",
    )
}

fn options(url: &str, recreate: bool) -> ConnectOptions {
    ConnectOptions {
        url: Some(url.to_string()),
        api_key: std::env::var("QDRANT_API_KEY")
            .ok()
            .filter(|k| !k.is_empty()),
        recreate,
        batch_size: 500,
        upload_parallel: 2,
        timeout: Duration::from_secs(60),
        ..ConnectOptions::default()
    }
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

#[test]
fn unreachable_url_fails_fast() {
    // A port that was free a moment ago: nothing listens there.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    let result = qdrant::open(&options(&url, false));
    let elapsed = started.elapsed();
    match result {
        Err(EngineError::Unreachable {
            target, message, ..
        }) => {
            println!("unreachable: {target}: {message}");
            assert!(target.contains(&port.to_string()), "{target}");
            assert!(message.contains("--url"), "{message}");
        }
        Err(other) => panic!("expected Unreachable, got {other}"),
        Ok(_) => panic!("a closed port must not connect"),
    }
    assert!(elapsed < Duration::from_secs(15), "took {elapsed:?}");
}

#[test]
fn bad_url_is_a_parameter_error() {
    match qdrant::open(&options("localhost:6334", false)) {
        Err(EngineError::BadParameter { param, .. }) => assert_eq!(param, "url"),
        Err(other) => panic!("expected BadParameter, got {other}"),
        Ok(_) => panic!("a URL without scheme must be rejected"),
    }
}

#[test]
#[cfg_attr(
    not(engine_runs = "qdrant"),
    ignore = "needs QDRANT_URL (a Qdrant server, e.g. docker run -p 6334:6334 qdrant/qdrant; not installable here, so ignored even under CI)"
)]
fn full_lifecycle() {
    let url = server_url();
    let dim = 32;
    let data = SyntheticSpec {
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
    let (train, test) = data.generate();
    let base = train.as_flat();
    let queries = test.as_flat();
    let gt = exact_knn(
        &BaseSet {
            vectors: base,
            ids: None,
            dim,
        },
        queries,
        Distance::Euclidean,
        K,
        &|_| {},
    );

    let mut engine = qdrant::open(&options(&url, false)).expect("open");
    assert_eq!(engine.name(), "qdrant");
    assert!(!engine.in_process());
    assert!(!engine.version().is_empty());
    let name = unique_name("life");
    let build = params(&[
        ("m", ParamValue::Int(16)),
        ("ef_construct", ParamValue::Int(128)),
    ]);
    engine
        .create(&spec(&name, dim, data.n, build))
        .expect("create");

    // Build: the runner hands over batch_size × upload_parallel points at a time.
    let ids: Vec<u64> = (0..data.n as u64).collect();
    for (chunk_ids, chunk) in ids.chunks(1000).zip(base.chunks(1000 * dim)) {
        engine.insert_batch(chunk_ids, chunk).expect("insert");
    }
    let report = engine.wait_until_ready().expect("ready");
    assert_eq!(report.points, Some(data.n as u64), "{report:?}");
    assert!(report.indexed_vectors.unwrap_or(0) > 0, "{report:?}");
    println!("index report: {report:?}");

    // A wrong-dimension vector is refused, not silently truncated.
    let err = engine.insert_batch(&[999_999], &[0.0; 16]).unwrap_err();
    assert!(err.to_string().contains("dimension"), "{err}");

    // Unknown search parameters are rejected.
    let err = engine
        .set_search_params(&params(&[("bogus", ParamValue::Int(1))]))
        .unwrap_err();
    assert!(matches!(err, EngineError::BadParameter { .. }), "{err}");

    // Approximate search at hnsw_ef=128.
    engine
        .set_search_params(&params(&[("hnsw_ef", ParamValue::Int(128))]))
        .expect("params");
    let results = search_all(engine.as_ref(), queries, dim);
    let r = recall(base, queries, dim, &gt, &results);
    println!("recall@{K} hnsw_ef=128: {r:.4}");
    assert!(r >= 0.9, "recall {r}");
    for found in &results {
        assert_eq!(found.len(), K);
    }

    // The batch query API gives the same quality.
    let batch = engine.batch_search(queries, dim, K).expect("batch search");
    assert_eq!(batch.len(), data.queries);
    let rb = recall(base, queries, dim, &gt, &batch);
    assert!(rb >= 0.9, "batch recall {rb}");

    // Concurrent searches from several threads share one engine.
    std::thread::scope(|s| {
        for t in 0..4 {
            let engine = &engine;
            s.spawn(move || {
                let mut out = Vec::new();
                for q in queries.chunks_exact(dim).skip(t).step_by(4) {
                    engine.search(q, K, &mut out).expect("threaded search");
                    assert_eq!(out.len(), K);
                }
            });
        }
    });

    // Exact search is exact.
    engine
        .set_search_params(&params(&[("exact", ParamValue::Bool(true))]))
        .expect("params");
    let exact = search_all(engine.as_ref(), queries, dim);
    let re = recall(base, queries, dim, &gt, &exact);
    assert_eq!(re, 1.0, "exact recall {re}");

    // Upsert: a new point equal to query 0 and an existing id moved onto query 1.
    let new_id = data.n as u64 + 1;
    let mut moved = queries[..dim].to_vec();
    moved.extend_from_slice(&queries[dim..2 * dim]);
    engine.upsert_batch(&[new_id, 7], &moved).expect("upsert");
    let mut out = Vec::new();
    engine.search(&queries[..dim], K, &mut out).expect("search");
    assert_eq!(out[0].id, new_id, "upserted point not found first: {out:?}");
    engine
        .search(&queries[dim..2 * dim], K, &mut out)
        .expect("search");
    assert_eq!(out[0].id, 7, "updated point not found first: {out:?}");

    // Delete: the true neighbours of the first 20 queries, then none may come back.
    let mut doomed: Vec<u64> = (0..20).flat_map(|q| gt.ids_of(q).to_vec()).collect();
    doomed.push(new_id);
    doomed.push(7);
    doomed.sort_unstable();
    doomed.dedup();
    engine.delete_batch(&doomed).expect("delete");
    engine
        .set_search_params(&params(&[("hnsw_ef", ParamValue::Int(128))]))
        .expect("params");
    let mut returned_deleted = 0;
    for q in queries.chunks_exact(dim).take(20) {
        engine.search(q, K, &mut out).expect("search");
        assert_eq!(out.len(), K);
        returned_deleted += out
            .iter()
            .filter(|n| doomed.binary_search(&n.id).is_ok())
            .count();
    }
    assert_eq!(returned_deleted, 0, "deleted ids came back");

    // Facts for the result file; the API key never appears.
    let described = engine.describe();
    assert!(described.contains_key("server_version"), "{described:?}");
    assert!(described.contains_key("collection_info"), "{described:?}");
    if let Ok(key) = std::env::var("QDRANT_API_KEY")
        && !key.is_empty()
    {
        assert!(!serde_json::to_string(&described).unwrap().contains(&key));
    }
    // Without --server-storage there is no size source over gRPC.
    let size = engine.footprint().expect("footprint");
    assert!(size.index.is_none() && size.total.is_none(), "{size:?}");
    assert!(
        size.total_unmeasured
            .is_some_and(|why| why.contains("--server-storage"))
    );
    let _ = engine.server_pid();

    engine.close().expect("close");
}

#[test]
#[cfg_attr(
    not(engine_runs = "qdrant"),
    ignore = "needs QDRANT_URL (a Qdrant server, e.g. docker run -p 6334:6334 qdrant/qdrant; not installable here, so ignored even under CI)"
)]
fn recreate_behaviour() {
    let url = server_url();
    let name = unique_name("recreate");
    let s = spec(&name, 8, 100, ParamMap::new());

    let mut first = qdrant::open(&options(&url, false)).expect("open");
    first.create(&s).expect("create");
    first.insert_batch(&[1, 2], &[0.5; 16]).expect("insert");

    // Same name without --recreate: refused, and the message says how to proceed.
    let mut second = qdrant::open(&options(&url, false)).expect("open");
    let err = second.create(&s).unwrap_err().to_string();
    assert!(err.contains("--recreate"), "{err}");

    // With --recreate: dropped and created empty.
    let mut third = qdrant::open(&options(&url, true)).expect("open");
    third.create(&s).expect("recreate");
    let report = third.wait_until_ready().expect("ready");
    assert_eq!(report.points, Some(0), "{report:?}");
    third.close().expect("close");
}

#[test]
#[cfg_attr(
    not(engine_runs = "qdrant"),
    ignore = "needs QDRANT_URL (a Qdrant server, e.g. docker run -p 6334:6334 qdrant/qdrant; not installable here, so ignored even under CI)"
)]
fn build_params_are_checked() {
    let url = server_url();
    let mut engine = qdrant::open(&options(&url, false)).expect("open");
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

    // Quantization and cluster settings reach the server.
    let build = params(&[
        ("quantization", ParamValue::Str("int8".into())),
        ("quantization_always_ram", ParamValue::Bool(true)),
        ("shard_number", ParamValue::Int(1)),
        ("replication_factor", ParamValue::Int(1)),
        ("write_consistency_factor", ParamValue::Int(1)),
    ]);
    engine.create(&spec(&name, 8, 100, build)).expect("create");
    let info = engine.describe();
    let text = serde_json::to_string(&info).unwrap();
    assert!(text.contains("\"quantization\":\"int8\""), "{text}");
    engine.close().expect("close");
}

/// Filtered search through payloads, keyword/integer payload indexes and `must` filters:
/// every case keeps to its predicate, single calls and batches alike, before and after
/// writes (an upsert resends the payload), with thresholds low enough that segments are
/// searched through their graphs.
#[test]
#[cfg_attr(
    not(engine_runs = "qdrant"),
    ignore = "needs QDRANT_URL (a Qdrant server, e.g. docker run -p 6334:6334 qdrant/qdrant; not installable here, so ignored even under CI)"
)]
fn filtered_search_keeps_to_the_predicate() {
    let url = server_url();
    let mut engine = qdrant::open(&options(&url, true)).expect("open");
    engine
        .set_search_params(&params(&[("hnsw_ef", ParamValue::Int(128))]))
        .expect("search params");
    crate::filtered::check_filtered_search(
        engine.as_mut(),
        spec(
            &unique_name("filtered"),
            0,
            0,
            params(&[
                ("indexing_threshold", ParamValue::Int(1)),
                // As low as Qdrant allows (a server refuses less than 10 KB).
                ("full_scan_threshold", ParamValue::Int(10)),
            ]),
        ),
        0.9,
    );
    // The check closes (drops) its collection: the strategy is described on a fresh one.
    let mut engine = qdrant::open(&options(&url, true)).expect("open");
    let mut attributes = ragdbeval::filter::Attributes::new(10);
    attributes
        .push("n", ragdbeval::filter::Column::Integer((0..10).collect()))
        .expect("attribute");
    let mut small = spec(&unique_name("strategy"), 2, 10, ParamMap::new());
    small.attributes = Some(std::sync::Arc::new(attributes));
    engine.create(&small).expect("create");
    let strategy = engine.describe()["filter_strategy"].clone();
    assert_eq!(
        strategy["payload_indexes"][0]["schema"], "integer",
        "{strategy}"
    );
    assert!(strategy["full_scan_threshold_points"].as_u64().is_some());
    engine.close().expect("close");
}
