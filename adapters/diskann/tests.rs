//! Unit tests of the DiskANN adapter: parameters, and the real index through the trait.

use std::sync::Arc;

use serde_json::json;

use super::DiskAnn;
use crate::distance::Distance;
use crate::engine::{CollectionSpec, ConcurrentWrites, PointId, VectorEngine};
use crate::filter::{Attributes, Column, Condition, Predicate};
use crate::params::{ParamMap, ParamValue};

fn map(pairs: &[(&str, ParamValue)]) -> ParamMap {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

fn spec(n: usize, dim: usize, distance: Distance, build_params: ParamMap) -> CollectionSpec {
    CollectionSpec {
        name: "t".into(),
        dim,
        distance,
        expected_points: n,
        build_params,
        work_dir: std::env::temp_dir(),
        attributes: None,
        element_type: Default::default(),
    }
}

/// Point `i` sits at `(i, 0, 0, 0)`: its nearest neighbours are its neighbours on the line.
fn line(ids: std::ops::Range<u64>) -> (Vec<PointId>, Vec<f32>) {
    let ids: Vec<PointId> = ids.collect();
    let vectors = ids.iter().flat_map(|&i| [i as f32, 0.0, 0.0, 0.0]).collect();
    (ids, vectors)
}

fn nearest(engine: &DiskAnn, query: [f32; 4], k: usize) -> Vec<PointId> {
    let mut out = Vec::new();
    engine.search(&query, k, &mut out).unwrap();
    out.iter().map(|n| n.id).collect()
}

fn built(n: u64) -> DiskAnn {
    let mut engine = DiskAnn::default();
    engine
        .create(&spec(n as usize, 4, Distance::Euclidean, ParamMap::new()))
        .unwrap();
    let (ids, vectors) = line(0..n);
    engine.insert_batch(&ids, &vectors).unwrap();
    engine.wait_until_ready().unwrap();
    engine
}

#[test]
fn bad_build_parameters_are_refused_by_name() {
    let engine = DiskAnn::default();
    for (params, needle) in [
        (map(&[("m", ParamValue::Int(16))]), "`m`"),
        (map(&[("max_degree", ParamValue::Int(1))]), "max_degree"),
        (map(&[("max_degree", ParamValue::Int(5_000))]), "max_degree"),
        (map(&[("l_build", ParamValue::Int(0))]), "l_build"),
        (map(&[("alpha", ParamValue::Float(0.5))]), "alpha"),
        (map(&[("alpha", ParamValue::Float(f64::NAN))]), "alpha"),
        (map(&[("alpha", ParamValue::Str("big".into()))]), "alpha"),
    ] {
        let err = engine
            .check_build_params(&spec(10, 4, Distance::Euclidean, params))
            .unwrap_err()
            .to_string();
        assert!(err.contains(needle), "{err}");
    }
    let ok = map(&[
        ("max_degree", ParamValue::Int(32)),
        ("l_build", ParamValue::Int(50)),
        ("alpha", ParamValue::Float(1.0)),
    ]);
    for distance in [Distance::Euclidean, Distance::Angular, Distance::Dot] {
        engine
            .check_build_params(&spec(10, 4, distance, ok.clone()))
            .unwrap();
    }
}

#[test]
fn bad_search_parameters_are_refused_by_name() {
    let mut engine = DiskAnn::default();
    for (params, needle) in [
        (map(&[("ef", ParamValue::Int(16))]), "`ef`"),
        (map(&[("l_search", ParamValue::Int(0))]), "l_search"),
        (map(&[("beam_width", ParamValue::Int(0))]), "beam_width"),
        (map(&[("l_search", ParamValue::Bool(true))]), "l_search"),
    ] {
        let err = engine.set_search_params(&params).unwrap_err().to_string();
        assert!(err.contains(needle), "{err}");
    }
    engine
        .set_search_params(&map(&[
            ("l_search", ParamValue::Int(5)),
            ("beam_width", ParamValue::Int(4)),
        ]))
        .unwrap();
}

/// The build reports the library's counts; an L below k still finds k points.
#[test]
fn the_build_reports_the_graph_and_searches_it() {
    let mut engine = built(300);
    let report = engine.wait_until_ready().unwrap();
    assert_eq!(report.points, Some(300));
    assert_eq!(report.indexed_vectors, Some(300));
    assert!(report.details["degree_max"].as_u64().unwrap() > 0);
    assert_eq!(report.details["start_points"], json!(1));
    assert_eq!(nearest(&engine, [120.2, 0.0, 0.0, 0.0], 3), [120, 121, 119]);
    engine
        .set_search_params(&map(&[("l_search", ParamValue::Int(2))]))
        .unwrap();
    assert_eq!(nearest(&engine, [120.2, 0.0, 0.0, 0.0], 5).len(), 5);
    let footprint = engine.footprint().unwrap();
    let index = footprint.index.unwrap().bytes;
    let total = footprint.total.unwrap().bytes;
    assert!(index > 0 && total > index + 300 * 16, "{index} {total}");
}

/// Point `i` of a pseudo-random cloud in [0, 100)^4 (a graph on a line is a chain, which
/// concurrent inserts can leave broken; a cloud is what DiskANN is built for).
fn cloud_point(i: u64) -> [f32; 4] {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(0x2545_F491_4F6C_DD1D);
    std::array::from_fn(|_| {
        x ^= x >> 33;
        x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        x ^= x >> 29;
        (x % 10_000) as f32 / 100.0
    })
}

fn cloud(ids: std::ops::Range<u64>) -> (Vec<PointId>, Vec<f32>) {
    let ids: Vec<PointId> = ids.collect();
    let vectors = ids.iter().flat_map(|&i| cloud_point(i)).collect();
    (ids, vectors)
}

/// Of `queries` points of the cloud searched for themselves, how many come back first.
fn found_themselves(engine: &DiskAnn, queries: impl Iterator<Item = u64>) -> (usize, usize) {
    let mut found = 0;
    let mut asked = 0;
    for i in queries {
        asked += 1;
        found += usize::from(nearest(engine, cloud_point(i), 1) == [i]);
    }
    (found, asked)
}

/// Inserts beyond the slots grow the index; updates move points; deletes hide them; deleted
/// slots are consolidated and reused before the index grows.
#[test]
fn writes_after_the_build_reuse_slots_grow_and_are_searched() {
    let mut engine = DiskAnn::default();
    engine
        .create(&spec(100, 4, Distance::Euclidean, ParamMap::new()))
        .unwrap();
    let (ids, vectors) = cloud(0..100);
    engine.insert_batch(&ids, &vectors).unwrap();
    engine.wait_until_ready().unwrap();
    // 100 points leave 1 024 free slots: fill them.
    let (ids, vectors) = cloud(100..1_124);
    engine.upsert_batch(&ids, &vectors).unwrap();
    engine.delete_batch(&(0..50).collect::<Vec<_>>()).unwrap();
    // No unused slot is left: the 50 deleted ones are consolidated and reused.
    let (ids, vectors) = cloud(2_000..2_040);
    engine.upsert_batch(&ids, &vectors).unwrap();
    let described = engine.describe();
    assert_eq!(described["consolidations"], json!(1), "{described:?}");
    assert_eq!(described["grows"], json!(0));
    assert_eq!(found_themselves(&engine, 2_000..2_040), (40, 40));
    for i in 0..50 {
        assert_ne!(nearest(&engine, cloud_point(i), 1), [i], "deleted {i}");
    }
    // Far beyond the slots: the index grows.
    let (ids, vectors) = cloud(3_000..5_000);
    engine.upsert_batch(&ids, &vectors).unwrap();
    assert_eq!(engine.describe()["grows"], json!(1));
    let (found, asked) = found_themselves(&engine, (50..1_124).chain(3_000..5_000).step_by(7));
    assert!(found * 100 >= asked * 98, "{found} of {asked}");
    // Point 60 moves far away; point 61 is deleted.
    engine.upsert_batch(&[60], &[500.0; 4]).unwrap();
    engine.delete_batch(&[61, 99_999]).unwrap();
    assert_eq!(nearest(&engine, [499.0; 4], 1), [60]);
    assert_ne!(nearest(&engine, cloud_point(60), 1), [60]);
    assert_ne!(nearest(&engine, cloud_point(61), 1), [61]);
    let report = engine.wait_until_ready().unwrap();
    assert_eq!(report.points, Some(50 + 1_024 + 40 + 2_000 - 1));
}

#[test]
fn searches_before_the_build_and_dimension_errors() {
    let mut engine = DiskAnn::default();
    engine
        .create(&spec(10, 4, Distance::Euclidean, ParamMap::new()))
        .unwrap();
    // Nothing loaded: nothing found.
    assert!(nearest(&engine, [1.0, 0.0, 0.0, 0.0], 3).is_empty());
    let (ids, vectors) = line(0..10);
    engine.insert_batch(&ids, &vectors).unwrap();
    let mut out = Vec::new();
    let err = engine.search(&[1.0; 4], 3, &mut out).unwrap_err();
    assert!(err.to_string().contains("wait_until_ready"), "{err}");
    engine.wait_until_ready().unwrap();
    let err = engine.search(&[1.0; 3], 3, &mut out).unwrap_err();
    assert!(err.to_string().contains("dimension mismatch"), "{err}");
    let err = engine.insert_batch(&[60], &[1.0; 5]).unwrap_err();
    assert!(err.to_string().contains("dimension mismatch"), "{err}");
}

/// The predicate decides what comes back. DiskANN's multi-hop filtered search walks from
/// matching points through at most one non-matching one: here every other point matches.
#[test]
fn filtered_search_returns_only_passing_points() {
    let mut attributes = Attributes::new(200);
    attributes
        .push("parity", Column::Integer((0..200).map(|i| i % 2).collect()))
        .unwrap();
    let mut engine = DiskAnn::default();
    let mut s = spec(200, 4, Distance::Euclidean, ParamMap::new());
    s.attributes = Some(Arc::new(attributes));
    engine.create(&s).unwrap();
    let (ids, vectors) = line(0..200);
    engine.insert_batch(&ids, &vectors).unwrap();
    engine.wait_until_ready().unwrap();
    let odd = Predicate {
        all: vec![Condition::Range {
            field: "parity".into(),
            gte: 1,
            lt: 2,
        }],
    };
    let mut out = Vec::new();
    engine
        .search_filtered(&[40.2, 0.0, 0.0, 0.0], 5, &odd, &mut out)
        .unwrap();
    let got: Vec<PointId> = out.iter().map(|n| n.id).collect();
    assert_eq!(got, [41, 39, 43, 37, 45]);
}

#[test]
fn angular_and_dot_data_use_their_metrics() {
    for distance in [Distance::Angular, Distance::Dot] {
        let mut engine = DiskAnn::default();
        engine
            .create(&spec(3, 4, distance, ParamMap::new()))
            .unwrap();
        let vectors = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0];
        engine.insert_batch(&[1, 2, 3], &vectors).unwrap();
        engine.wait_until_ready().unwrap();
        assert_eq!(nearest(&engine, [0.1, 0.9, 0.0, 0.0], 1), [2], "{distance:?}");
    }
}

/// Searches from several threads while another thread writes.
#[test]
fn searches_run_beside_writes() {
    let engine = built(500);
    let writes: &dyn ConcurrentWrites = engine.concurrent_writes().unwrap();
    std::thread::scope(|s| {
        for t in 0..3 {
            let engine = &engine;
            s.spawn(move || {
                for i in 0..200 {
                    let x = ((i * 7 + t * 13) % 400) as f32 + 0.2;
                    let got = nearest(engine, [x, 0.0, 0.0, 0.0], 1);
                    assert_eq!(got.len(), 1);
                }
            });
        }
        s.spawn(|| {
            for i in 0..50u64 {
                let (ids, vectors) = line(1_000 + i * 10..1_010 + i * 10);
                writes.upsert(&ids, &vectors).unwrap();
                writes.delete(&[400 + i]).unwrap();
            }
        });
    });
    assert_eq!(nearest(&engine, [420.0, 0.0, 0.0, 0.0], 1), [399]);
    assert_eq!(nearest(&engine, [1_234.1, 0.0, 0.0, 0.0], 1), [1_234]);
}
