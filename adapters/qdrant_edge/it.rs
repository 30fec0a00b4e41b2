//! End-to-end tests of the Qdrant Edge adapter against the real engine.

use crate::common::params;

use std::collections::HashSet;
use std::time::Instant;

use ragdbeval::adapters::qdrant_edge;
use ragdbeval::distance::Distance;
use ragdbeval::engine::{CollectionSpec, ConnectOptions, EngineError, IndexReport, VectorEngine, Query, Batch};
use ragdbeval::groundtruth::{BaseSet, GroundTruth, exact_knn};
use ragdbeval::params::{EngineConfig, ParamMap, ParamMapExt, ParamValue, expand};
use ragdbeval::synthetic::{SyntheticKind, SyntheticSpec};
use ragdbeval::vectors::Vectors;

const K: usize = 10;

fn options() -> ConnectOptions {
    ConnectOptions {
        batch_size: 1_000,
        upload_parallel: 1,
        ..ConnectOptions::default()
    }
}

/// The first point of a set's build and search sweeps.
fn set_params(set: &str) -> (ParamMap, ParamMap) {
    let config = EngineConfig::parse(crate::common::entry("qdrant-edge").config_toml)
        .expect("config.toml parses");
    let set = config.set(set).expect("set exists");
    let build = expand(&set.build)
        .into_iter()
        .next()
        .expect("a build point");
    let search = expand(&set.search)
        .into_iter()
        .next()
        .expect("a search point");
    (build, search)
}

/// Creates a shard, loads `train` in runner-sized batches and optimizes it.
fn build(
    dir: &tempfile::TempDir,
    train: &Vectors,
    distance: Distance,
    build_params: ParamMap,
) -> (Box<dyn VectorEngine>, IndexReport) {
    let mut engine = qdrant_edge::open(&options()).expect("open");
    assert_eq!(engine.name(), "qdrant-edge");
    engine
        .create(&CollectionSpec {
            name: "test".into(),
            dim: train.dim(),
            distance,
            expected_points: train.len(),
            build_params,
            work_dir: dir.path().to_path_buf(),
            attributes: None,
            element_type: Default::default(),
        })
        .expect("create");
    let t = Instant::now();
    let batch = 5_000;
    let ids: Vec<u64> = (0..train.len() as u64).collect();
    for start in (0..train.len()).step_by(batch) {
        let end = (start + batch).min(train.len());
        engine
            .insert_batch(&ids[start..end], train.rows(start, end))
            .expect("insert");
    }
    let loaded = t.elapsed();
    let report = engine.wait_until_ready().expect("wait_until_ready");
    eprintln!(
        "built {} x {}: load {loaded:?}, optimize {:?}; report {}",
        train.len(),
        train.dim(),
        t.elapsed() - loaded,
        serde_json::to_string(&report).unwrap_or_default()
    );
    (engine, report)
}

fn truth(train: &Vectors, test: &Vectors, distance: Distance) -> GroundTruth {
    let base = BaseSet {
        vectors: train.as_flat(),
        ids: None,
        dim: train.dim(),
    };
    exact_knn(&base, test.as_flat(), distance, K, &|_| {})
}

/// Mean recall@K of the engine's answers, through `batch_search` or one `search` per query.
fn recall(engine: &dyn VectorEngine, test: &Vectors, gt: &GroundTruth, batch: bool) -> f64 {
    let answers: Vec<Vec<u64>> = if batch {
        engine
            .batch_search(Batch::new(test.as_flat(), test.dim(), K))
            .expect("batch search")
            .into_iter()
            .map(|r| r.iter().map(|n| n.id).collect())
            .collect()
    } else {
        let mut out = Vec::new();
        test.iter()
            .map(|q| {
                engine.search(Query::new(q, K), &mut out).expect("search");
                out.iter().map(|n| n.id).collect()
            })
            .collect()
    };
    let mut hits = 0usize;
    for (q, got) in answers.iter().enumerate() {
        assert!(got.len() <= K);
        let want: HashSet<u64> = gt.ids_of(q).iter().copied().collect();
        hits += got.iter().filter(|id| want.contains(id)).count();
    }
    hits as f64 / (answers.len() * K) as f64
}

#[test]
fn default_set_reaches_recall_on_demo_dataset() {
    let spec = SyntheticSpec::demo();
    let (train, test) = spec.generate();
    let gt = truth(&train, &test, spec.distance);
    let dir = tempfile::tempdir().expect("tempdir");
    let (build_params, search_params) = set_params("default");
    let (mut engine, report) = build(&dir, &train, spec.distance, build_params);
    assert_eq!(report.points, Some(train.len() as u64));
    assert_eq!(report.indexed_vectors, Some(train.len() as u64));
    assert!(!report.may_full_scan, "{:?}", report.details);

    engine.set_search_params(&search_params).expect("params");
    let r = recall(engine.as_ref(), &test, &gt, false);
    let rb = recall(engine.as_ref(), &test, &gt, true);
    eprintln!("demo 20k x 64 euclidean, default set: recall@10 {r:.4} (batch {rb:.4})");
    assert!(r >= 0.95, "recall {r}");
    assert!((r - rb).abs() < 0.02, "search {r} vs batch_search {rb}");

    // Euclid scores are plain L2 distances, best first.
    let mut out = Vec::new();
    engine.search(Query::new(test.row(0), K), &mut out).expect("search");
    let nearest = out[0];
    let d = Distance::Euclidean.between(test.row(0), train.row(nearest.id as usize));
    assert!(
        (nearest.score - d).abs() < 1e-3 * d.max(1.0),
        "{} vs {d}",
        nearest.score
    );
    assert!(out.windows(2).all(|w| w[0].score <= w[1].score));

    // Index = HNSW graph files only; total = the shard directory with vectors and WAL.
    let footprint = engine.footprint().expect("footprint");
    let index = footprint.index.clone().expect("graph files measured");
    let size = footprint.total.clone().expect("total measured");
    assert!(size.source.starts_with("shard directory"), "{size:?}");
    assert!(index.source.contains("vector_index"), "{index:?}");
    assert!(
        size.bytes >= (train.len() * train.dim() * 4) as u64,
        "{}",
        size.bytes
    );
    // The WAL is in the total, never in the index; the vectors (stored outside vector_index)
    // are in the total as well.
    let described = engine.describe();
    let wal = described["disk_wal"]["allocated_bytes"]
        .as_u64()
        .expect("disk_wal in describe");
    assert!(wal > 0 && index.bytes > 0, "{footprint:?}");
    assert!(
        index.bytes + wal + (train.len() * train.dim() * 4) as u64 <= size.bytes,
        "index {} + WAL {wal} + vectors must fit in total {}",
        index.bytes,
        size.bytes
    );
    assert_eq!(described["points"], serde_json::json!(train.len()));
    eprintln!(
        "footprint: index {} bytes, total {} bytes; describe {}",
        index.bytes,
        size.bytes,
        serde_json::Value::Object(described)
    );
    engine.close().expect("close");
}

/// Search from several threads at once through `&self`.
#[test]
fn concurrent_searches_agree() {
    let spec = SyntheticSpec {
        n: 5_000,
        queries: 64,
        ..SyntheticSpec::demo()
    };
    let (train, test) = spec.generate();
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut engine, _) = build(&dir, &train, spec.distance, set_params("default").0);
    engine
        .set_search_params(&params(&[("hnsw_ef", ParamValue::Int(64))]))
        .expect("params");
    let engine: &dyn VectorEngine = engine.as_ref();
    let serial = engine
        .batch_search(Batch::new(test.as_flat(), test.dim(), K))
        .expect("batch");
    std::thread::scope(|s| {
        for t in 0..4 {
            let serial = &serial;
            let test = &test;
            s.spawn(move || {
                let mut out = Vec::new();
                for (q, row) in test.iter().enumerate().skip(t).step_by(4) {
                    engine.search(Query::new(row, K), &mut out).expect("search");
                    let ids: Vec<u64> = out.iter().map(|n| n.id).collect();
                    let want: Vec<u64> = serial[q].iter().map(|n| n.id).collect();
                    assert_eq!(ids, want, "query {q}");
                }
            });
        }
    });
}

#[test]
fn hnsw_ef_matters_on_50k_angular_and_exact_is_exact() {
    let spec = SyntheticSpec {
        kind: SyntheticKind::Clustered,
        n: 50_000,
        queries: 500,
        dim: 50,
        distance: Distance::Angular,
        seed: 7,
        clusters: 32,
        spread: 0.5,
        ..SyntheticSpec::demo()
    };
    let (train, test) = spec.generate();
    let gt = truth(&train, &test, spec.distance);
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut engine, report) = build(&dir, &train, spec.distance, set_params("ef-sweep").0);
    assert!(!report.may_full_scan, "{:?}", report.details);
    assert_eq!(report.points, Some(50_000));
    assert_eq!(report.indexed_vectors, report.points);

    let mut recalls = Vec::new();
    for ef in [16, 256] {
        engine
            .set_search_params(&params(&[("hnsw_ef", ParamValue::Int(ef))]))
            .expect("params");
        let r = recall(engine.as_ref(), &test, &gt, true);
        eprintln!("50k x 50 angular: hnsw_ef={ef} recall@10 {r:.4}");
        recalls.push(r);
    }
    assert!(recalls[0] < recalls[1], "{recalls:?}");
    assert!(recalls[1] >= 0.95, "{recalls:?}");

    let (_, exact) = set_params("exact");
    engine.set_search_params(&exact).expect("params");
    let r = recall(engine.as_ref(), &test, &gt, true);
    eprintln!("50k x 50 angular: exact recall@10 {r:.4}");
    assert_eq!(r, 1.0);
}

#[test]
fn deletes_and_updates_are_visible() {
    let spec = SyntheticSpec {
        n: 10_000,
        queries: 50,
        ..SyntheticSpec::demo()
    };
    let (train, test) = spec.generate();
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut engine, report) = build(&dir, &train, spec.distance, set_params("default").0);
    assert!(!report.may_full_scan);
    engine
        .set_search_params(&params(&[("hnsw_ef", ParamValue::Int(128))]))
        .expect("params");

    // Delete the current top-3 of every query, then none of them may come back.
    let mut deleted = HashSet::new();
    let mut out = Vec::new();
    for q in test.iter() {
        engine.search(Query::new(q, 3), &mut out).expect("search");
        deleted.extend(out.iter().map(|n| n.id));
    }
    let ids: Vec<u64> = deleted.iter().copied().collect();
    engine.delete_batch(&ids).expect("delete");
    let mut returned_deleted = 0;
    for q in test.iter() {
        engine.search(Query::new(q, K), &mut out).expect("search");
        assert_eq!(out.len(), K);
        returned_deleted += out.iter().filter(|n| deleted.contains(&n.id)).count();
    }
    assert_eq!(returned_deleted, 0);
    assert_eq!(
        engine.describe()["points"],
        serde_json::json!(train.len() - deleted.len())
    );

    // Move an existing point onto a query vector: it must come first for that query.
    let kept = (0..train.len() as u64)
        .find(|id| !deleted.contains(id))
        .expect("a kept id");
    let target = test.row(7).to_vec();
    engine.upsert_batch(&[kept], &target).expect("upsert");
    engine.search(Query::new(&target, K), &mut out).expect("search");
    assert_eq!(out[0].id, kept, "{out:?}");
    assert!(out[0].score.abs() < 1e-4, "{out:?}");
    // And a new id is inserted after the build.
    let new_id = train.len() as u64 + 10;
    let target = test.row(8).to_vec();
    engine.upsert_batch(&[new_id], &target).expect("upsert");
    engine.search(Query::new(&target, K), &mut out).expect("search");
    assert_eq!(out[0].id, new_id, "{out:?}");
    assert_eq!(
        engine.describe()["points"],
        serde_json::json!(train.len() - deleted.len() + 1)
    );
}

#[test]
fn unknown_parameters_are_rejected() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spec = |build_params: ParamMap| CollectionSpec {
        name: "test".into(),
        dim: 8,
        distance: Distance::Euclidean,
        expected_points: 100,
        build_params,
        work_dir: dir.path().to_path_buf(),
        attributes: None,
        element_type: Default::default(),
    };
    let mut engine = qdrant_edge::open(&options()).expect("open");
    let err = engine
        .create(&spec(params(&[("ef_construction", ParamValue::Int(100))])))
        .expect_err("unknown build param");
    assert!(matches!(err, EngineError::BadParameter { .. }), "{err}");
    let err = engine
        .create(&spec(params(&[(
            "quantization",
            ParamValue::Str("int4".into()),
        )])))
        .expect_err("bad quantization");
    assert!(matches!(err, EngineError::BadParameter { .. }), "{err}");

    engine.create(&spec(ParamMap::new())).expect("create");
    let err = engine
        .set_search_params(&params(&[("ef", ParamValue::Int(64))]))
        .expect_err("unknown search param");
    assert!(matches!(err, EngineError::BadParameter { .. }), "{err}");
    let err = engine
        .set_search_params(&params(&[("hnsw_ef", ParamValue::Str("big".into()))]))
        .expect_err("wrong type");
    assert!(matches!(err, EngineError::BadParameter { .. }), "{err}");
    let err = engine
        .set_search_params(&params(&[("rescore", ParamValue::Bool(true))]))
        .expect_err("rescore without quantization");
    assert!(matches!(err, EngineError::BadParameter { .. }), "{err}");
    // A second create in the same directory is refused without --recreate.
    assert!(engine.create(&spec(ParamMap::new())).is_err());
}

/// Every quantization set builds, its searches really use the quantized vectors (recall
/// changes with rescore/oversampling) and rescoring with oversampling recovers the recall.
#[test]
fn quantization_sets_work() {
    let spec = SyntheticSpec {
        n: 10_000,
        queries: 100,
        distance: Distance::Angular,
        ..SyntheticSpec::demo()
    };
    let (train, test) = spec.generate();
    let gt = truth(&train, &test, spec.distance);
    let config =
        EngineConfig::parse(crate::common::entry("qdrant-edge").config_toml).expect("config");
    // Recall each set's best sweep point must reach on this data. Binary quantization cannot
    // tell apart points of one tight cluster (their sign bits are those of the cluster
    // centre), so only rescoring a large oversampled candidate set helps it here.
    for (set, floor) in [("int8", 0.95), ("product", 0.5), ("binary", 0.3)] {
        let set_def = config.set(set).expect("set");
        let build_params = expand(&set_def.build).into_iter().next().expect("build");
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut engine, report) = build(&dir, &train, spec.distance, build_params);
        assert!(!report.may_full_scan, "{set}: {:?}", report.details);
        let mut recalls = Vec::new();
        for search_params in expand(&set_def.search) {
            engine.set_search_params(&search_params).expect("params");
            let r = recall(engine.as_ref(), &test, &gt, true);
            eprintln!("{set} {}: recall@10 {r:.4}", search_params.label());
            recalls.push(r);
        }
        let best = recalls.iter().copied().fold(0.0, f64::max);
        let worst = recalls.iter().copied().fold(1.0, f64::min);
        assert!(best >= floor, "{set}: {recalls:?}");
        assert!(
            worst < best,
            "{set}: the sweep changes nothing: {recalls:?}"
        );
    }
}

/// With Qdrant's own 10 000 KB thresholds a 20k x 64 set (5 000 KB) is never indexed: the
/// report must say so.
#[test]
fn qdrant_default_thresholds_are_reported_as_full_scan() {
    let spec = SyntheticSpec {
        n: 5_000,
        queries: 10,
        ..SyntheticSpec::demo()
    };
    let (train, _) = spec.generate();
    let dir = tempfile::tempdir().expect("tempdir");
    let (_engine, report) = build(&dir, &train, spec.distance, set_params("qdrant-defaults").0);
    assert!(report.may_full_scan);
    assert_eq!(report.indexed_vectors, Some(0));
}

/// Filtered search through payload indexes and `must` conditions: with the default build
/// (thresholds derived from the 2000 points: the graph is built and used) and with
/// thresholds as low as Qdrant allows (segments searched through their graph), 0 violations and
/// high recall, before and after updates and deletes; the strategy is recorded.
#[test]
fn filtered_search_keeps_to_the_predicate() {
    for (label, build_params) in [
        ("derived thresholds", ParamMap::new()),
        (
            "graph forced",
            params(&[
                ("indexing_threshold", ParamValue::Int(1)),
                // As low as Qdrant allows (a server refuses less than 10 KB).
                ("full_scan_threshold", ParamValue::Int(10)),
            ]),
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = qdrant_edge::open(&options()).expect("open");
        engine
            .set_search_params(&params(&[("hnsw_ef", ParamValue::Int(128))]))
            .expect("search params");
        let outcomes = crate::filtered::check_filtered_search(
            engine.as_mut(),
            CollectionSpec {
                name: "filtered".into(),
                dim: 0,
                distance: Distance::Euclidean,
                expected_points: 0,
                build_params,
                work_dir: dir.path().to_path_buf(),
                attributes: None,
                element_type: Default::default(),
            },
            0.9,
        );
        let worst = outcomes
            .iter()
            .map(|o| o.recall)
            .fold(f64::INFINITY, f64::min);
        eprintln!("qdrant-edge {label}: worst recall {worst:.3}");
    }
    // The strategy and the payload indexes are described.
    let dir = tempfile::tempdir().unwrap();
    let mut engine = qdrant_edge::open(&options()).expect("open");
    let attrs = {
        let mut a = ragdbeval::filter::Attributes::new(10);
        a.push("n", ragdbeval::filter::Column::Integer((0..10).collect()))
            .unwrap();
        std::sync::Arc::new(a)
    };
    engine
        .create(&CollectionSpec {
            name: "d".into(),
            dim: 2,
            distance: Distance::Euclidean,
            expected_points: 10,
            build_params: ParamMap::new(),
            work_dir: dir.path().to_path_buf(),
            attributes: Some(attrs),
            element_type: Default::default(),
        })
        .unwrap();
    let strategy = engine.describe()["filter_strategy"].clone();
    assert_eq!(
        strategy["payload_indexes"][0]["schema"], "integer",
        "{strategy}"
    );
    assert!(strategy["full_scan_threshold_points"].as_u64().is_some());
}
