//! What is particular to sqlite-vec: the SQL of filters, parameter errors, and the real
//! engine's answers after writes, under filters and from several threads.

use crate::adapters::support::testing::{map, self as testing};
use std::sync::Arc;

use serde_json::json;

use super::params::Quantization;
use super::sql::KnnShape;
use super::*;
use crate::distance::Distance;
use crate::engine::{CollectionSpec, Neighbor, PointId, Query};
use crate::filter::{Attributes, Column, Condition, Predicate};
use crate::params::{ParamMap, ParamValue};

fn spec(dir: &tempfile::TempDir, dim: usize, build_params: ParamMap) -> CollectionSpec {
    testing::spec(100, dim, Distance::Euclidean, build_params, dir.path())
}

/// 100 points: `label` is "even"/"odd" by id, `num` the id itself.
fn attributes() -> Arc<Attributes> {
    let mut a = Attributes::new(100);
    a.push(
        "label",
        Column::Keyword {
            dictionary: vec!["even".into(), "odd".into()],
            codes: (0..100).map(|i| i % 2).collect(),
        },
    )
    .expect("label column");
    a.push("num", Column::Integer((0..100).collect()))
        .expect("num column");
    Arc::new(a)
}

/// Point `i` of a line: its nearest neighbours are the ids next to it.
fn vectors(ids: &[PointId], dim: usize, shift: f32) -> Vec<f32> {
    ids.iter()
        .flat_map(|&i| (0..dim).map(move |d| i as f32 + shift + d as f32 * 0.001))
        .collect()
}

fn engine() -> SqliteVec {
    SqliteVec::new(&ConnectOptions::default()).expect("sqlite-vec opens")
}

fn ids(out: &[Neighbor]) -> Vec<PointId> {
    out.iter().map(|n| n.id).collect()
}

#[test]
fn filters_become_metadata_constraints_with_bound_values() {
    let filter = Predicate {
        all: vec![
            Condition::equals("label", "x'; DROP"),
            Condition::range("num", 3..9),
        ],
    };
    let shape = KnnShape {
        quantization: Quantization::None,
        rescore: false,
        metric: "l2",
    };
    assert_eq!(
        sql::knn(shape, &filter),
        "SELECT rowid, distance FROM vectors WHERE embedding MATCH ?1 AND k = ?2 \
         AND a_label = ?3 AND a_num >= ?4 AND a_num < ?5"
    );
    let rescored = sql::knn(
        KnnShape {
            quantization: Quantization::Bit,
            rescore: true,
            metric: "l2",
        },
        &filter,
    );
    assert!(
        rescored.contains("coarse MATCH vec_quantize_binary(?1) AND k = ?2 AND a_label = ?4"),
        "{rescored}"
    );
    assert!(rescored.contains("vec_distance_l2(embedding, ?1)"), "{rescored}");
    assert_eq!(sql::filter_values(&filter).len(), 3);
}

#[test]
fn bad_build_and_search_parameters_are_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    let e = engine();
    let cases = [
        (spec(&dir, 8, map(&[("m", ParamValue::Int(16))])), "m"),
        (
            spec(&dir, 12, map(&[("quantization", ParamValue::Str("bit".into()))])),
            "divisible by 8",
        ),
        (
            spec(&dir, 8, map(&[("quantization", ParamValue::Str("pq".into()))])),
            "expected none, int8 or bit",
        ),
        (spec(&dir, 8, map(&[("chunk_size", ParamValue::Int(12))])), "chunk_size"),
        (spec(&dir, 8, map(&[("chunk_size", ParamValue::Int(8192))])), "chunk_size"),
    ];
    for (s, needle) in cases {
        let err = e.check_build_params(&s).expect_err(needle).to_string();
        assert!(err.contains(needle), "{err}");
    }
    let mut dot = spec(&dir, 8, ParamMap::new());
    dot.distance = Distance::Dot;
    let err = e.check_build_params(&dot).expect_err("dot").to_string();
    assert!(err.contains("dot"), "{err}");

    let mut e = engine();
    e.create(&spec(&dir, 8, ParamMap::new())).expect("create");
    let err = e
        .set_search_params(&map(&[("oversample", ParamValue::Int(4))]))
        .expect_err("unquantized")
        .to_string();
    assert!(err.contains("quantized collections only"), "{err}");
    let err = e
        .set_search_params(&map(&[("ef", ParamValue::Int(4))]))
        .expect_err("unknown")
        .to_string();
    assert!(err.contains("ef"), "{err}");
}

#[test]
fn writes_are_seen_and_filters_are_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dim = 8;
    let mut e = engine();
    let mut s = spec(&dir, dim, ParamMap::new());
    s.attributes = Some(attributes());
    e.create(&s).expect("create");
    let all: Vec<PointId> = (0..100).collect();
    e.insert_batch(&all, &vectors(&all, dim, 0.0)).expect("insert");
    let report = e.wait_until_ready().expect("ready");
    assert_eq!(report.points, Some(100));
    assert_eq!(report.details["knn_plan_is_vec0"], json!(true), "{report:?}");

    let mut out = Vec::new();
    let q = vectors(&[50], dim, 0.1);
    e.search(Query::new(&q, 3), &mut out).expect("search");
    assert_eq!(ids(&out), [50, 51, 49]);
    // Point 50 moves far away: an update must replace its vector.
    e.upsert_batch(&[50], &vectors(&[50], dim, 1000.0))
        .expect("upsert");
    e.delete_batch(&[51]).expect("delete");
    e.search(Query::new(&q, 3), &mut out).expect("search");
    assert_eq!(ids(&out), [49, 52, 48]);
    assert_eq!(e.collection("t").expect("collection").rows().expect("rows"), 99);

    let odd_in_range = Predicate {
        all: vec![
            Condition::equals("label", "odd"),
            Condition::range("num", 40..60),
        ],
    };
    e.search(Query::new(&q, 4).filtered(Some(&odd_in_range)), &mut out)
        .expect("filtered");
    assert_eq!(ids(&out), [49, 53, 47, 55]);
    let unknown = Predicate::from(Condition::equals("colour", "red"));
    let attrs = attributes();
    assert!(e.check_filter(&attrs, &unknown).is_err());
    assert!(e.check_filter(&attrs, &odd_in_range).is_ok());
    let footprint = e.footprint().expect("footprint");
    assert!(footprint.total.expect("total").bytes > 0);
    assert!(footprint.index.is_none());
}

#[test]
fn searches_run_on_several_threads_while_a_writer_commits() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dim = 8;
    let mut e = engine();
    e.create(&spec(&dir, dim, ParamMap::new())).expect("create");
    let all: Vec<PointId> = (0..100).collect();
    e.insert_batch(&all, &vectors(&all, dim, 0.0)).expect("insert");
    let e = &e;
    std::thread::scope(|scope| {
        for t in 0..4u64 {
            scope.spawn(move || {
                let mut out = Vec::new();
                for _ in 0..50 {
                    let q = vectors(&[t * 10], dim, 0.0);
                    e.search(Query::new(&q, 1), &mut out).expect("search");
                    assert_eq!(ids(&out), [t * 10]);
                }
            });
        }
        let writes = e.concurrent_writes().expect("concurrent writes");
        for id in 100..150 {
            writes
                .upsert(&[id], &vectors(&[id], dim, 0.0))
                .expect("upsert");
        }
        writes.delete(&[149]).expect("delete");
    });
    assert_eq!(e.collection("t").expect("collection").rows().expect("rows"), 149);
}

#[test]
fn quantized_candidates_are_reranked_by_the_float_vectors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let dim = 8;
    let mut e = engine();
    e.create(&spec(
        &dir,
        dim,
        map(&[("quantization", ParamValue::Str("bit".into()))]),
    ))
    .expect("create");
    let all: Vec<PointId> = (0..100).collect();
    // Centred on 0 so that the sign bits differ between points.
    let v: Vec<f32> = vectors(&all, dim, 0.0).iter().map(|x| x - 50.0).collect();
    e.insert_batch(&all, &v).expect("insert");
    e.set_search_params(&map(&[("oversample", ParamValue::Int(100))]))
        .expect("oversample");
    let mut out = Vec::new();
    let q: Vec<f32> = v[20 * dim..21 * dim].iter().map(|x| x + 0.1).collect();
    e.search(Query::new(&q, 3), &mut out).expect("search");
    // All 100 candidates re-ranked by their float vectors: the true neighbours, with their
    // true distances.
    assert_eq!(ids(&out), [20, 21, 19]);
    let expected = (dim as f32 * 0.01).sqrt();
    assert!((out[0].score - expected).abs() < 1e-4, "{out:?}");
}

#[test]
fn only_vec0_knn_plans_count_as_knn() {
    use super::collection::Collection;
    assert!(Collection::plan_is_knn(
        "SCAN vectors VIRTUAL TABLE INDEX 0:3{___}___"
    ));
    assert!(!Collection::plan_is_knn(
        "SCAN vectors VIRTUAL TABLE INDEX 0:1"
    ));
    assert!(!Collection::plan_is_knn("SCAN vectors_rowids"));
}
