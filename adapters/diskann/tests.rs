//! Unit tests of the DiskANN adapter: parameters, and the real index through the trait.

use crate::adapters::support::testing::{line, map, nearest, self as testing};
use std::sync::Arc;

use serde_json::json;

use super::DiskAnn;
use crate::distance::Distance;
use crate::engine::{CollectionSpec, ConcurrentWrites, PointId, VectorEngine, Query};
use crate::filter::{Attributes, Column, Condition, Predicate};
use crate::params::{ParamMap, ParamValue};

fn spec(n: usize, dim: usize, distance: Distance, build_params: ParamMap) -> CollectionSpec {
    testing::spec(n, dim, distance, build_params, &std::env::temp_dir())
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
    let err = engine.search(Query::new(&[1.0; 4], 3), &mut out).unwrap_err();
    assert!(err.to_string().contains("wait_until_ready"), "{err}");
    engine.wait_until_ready().unwrap();
    let err = engine.search(Query::new(&[1.0; 3], 3), &mut out).unwrap_err();
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
    let odd = Predicate::from(Condition::range("parity", 1..2));
    let mut out = Vec::new();
    engine
        .search(Query::new(&[40.2, 0.0, 0.0, 0.0], 5).filtered(Some(&odd)), &mut out)
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

/// A clustered set: `n` points of `dim` dimensions around 20 centres in [0, 100)^dim, each
/// coordinate spread by up to ±5 around its centre.
fn clustered(n: u64, dim: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % 10_000) as f32 / 10_000.0
    };
    let centres: Vec<f32> = (0..20 * dim).map(|_| next() * 100.0).collect();
    (0..n)
        .flat_map(|_| {
            let c = (next() * 20.0) as usize % 20;
            let centre = centres[c * dim..(c + 1) * dim].to_vec();
            centre.into_iter().map(|v| v + (next() - 0.5) * 10.0).collect::<Vec<_>>()
        })
        .collect()
}

/// The exact top `k` of `query` among `rows` (squared L2), as row numbers.
fn exact(rows: &[f32], dim: usize, query: &[f32], k: usize) -> Vec<PointId> {
    let mut all: Vec<(f32, PointId)> = rows
        .chunks_exact(dim)
        .enumerate()
        .map(|(i, r)| {
            let d = r.iter().zip(query).map(|(a, b)| (a - b) * (a - b)).sum();
            (d, i as PointId)
        })
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    all.into_iter().take(k).map(|(_, id)| id).collect()
}

fn disk_params(extra: &[(&str, ParamValue)]) -> ParamMap {
    let mut params = map(&[("storage", ParamValue::Str("disk".into()))]);
    params.extend(map(extra));
    params
}

/// The `on-disk` set of config.toml: its build and search parameters.
fn on_disk_set() -> (ParamMap, ParamMap) {
    let config: toml::Value = toml::from_str(include_str!("config.toml")).unwrap();
    let set = &config["sets"]["on-disk"];
    let params = |table: &toml::Value| -> ParamMap {
        table
            .as_table()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    toml::Value::Integer(i) => ParamValue::Int(*i),
                    toml::Value::Float(f) => ParamValue::Float(*f),
                    toml::Value::String(s) => ParamValue::Str(s.clone()),
                    other => panic!("{other:?}"),
                };
                (k.clone(), v)
            })
            .collect()
    };
    (params(&set["build"]), params(&set["search"]))
}

/// Loads `rows` for an on-disk index in `dir`, with `attributes` if any.
fn built_on_disk(
    rows: &[f32],
    dim: usize,
    build: ParamMap,
    dir: &std::path::Path,
    attributes: Option<Attributes>,
) -> DiskAnn {
    let n = rows.len() / dim;
    let mut engine = DiskAnn::default();
    let mut s = spec(n, dim, Distance::Euclidean, build);
    s.work_dir = dir.to_path_buf();
    s.attributes = attributes.map(Arc::new);
    engine.create(&s).unwrap();
    let ids: Vec<PointId> = (0..n as u64).collect();
    engine.insert_batch(&ids, rows).unwrap();
    engine
}

/// The on-disk set finds the exact neighbours of a clustered set; the report carries the
/// library's counts; the footprint is the index's files.
#[test]
fn the_on_disk_index_is_built_searched_and_measured() {
    let dim = 16;
    let rows = clustered(3_000, dim, 7);
    let dir = tempfile::tempdir().unwrap();
    let (build, search) = on_disk_set();
    let mut engine = built_on_disk(&rows, dim, build, dir.path(), None);
    let report = engine.wait_until_ready().unwrap();
    assert_eq!(report.points, Some(3_000), "{:?}", report.details);
    assert_eq!(report.indexed_vectors, Some(3_000));
    assert_eq!(report.details["pq_chunks"], json!(4));
    assert_eq!(report.details["build_settings"]["storage"], json!("disk"));
    assert!(report.details["pq_code_bytes_in_memory"].as_u64() == Some(3_000 * 4));
    engine.set_search_params(&search).unwrap();
    let queries = clustered(100, dim, 8);
    let (mut found, mut asked) = (0, 0);
    let mut out = Vec::new();
    for q in queries.chunks_exact(dim) {
        engine.search(Query::new(q, 10), &mut out).unwrap();
        let truth = exact(&rows, dim, q, 10);
        found += out.iter().filter(|n| truth.contains(&n.id)).count();
        asked += truth.len();
    }
    let recall = found as f64 / asked as f64;
    println!("on-disk recall@10: {recall:.3}");
    assert!(recall >= 0.9, "recall {recall}");
    let footprint = engine.footprint().unwrap();
    let index = footprint.index.unwrap();
    let total = footprint.total.unwrap();
    assert!(index.source.contains("disk file"), "{}", index.source);
    // The files under the work directory sum to the total; the disk file alone holds every
    // point's full vector.
    let files: Vec<std::fs::DirEntry> = std::fs::read_dir(dir.path())
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(Result::unwrap)
        .collect();
    let sum: u64 = files.iter().map(|f| f.metadata().unwrap().len()).sum();
    assert_eq!(total.bytes, sum);
    assert_eq!(index.bytes, sum, "{files:?}");
    assert!(index.bytes > 3_000 * dim as u64 * 4, "{}", index.bytes);
    // A new collection removes the old one's files.
    engine.close().unwrap();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn bad_on_disk_parameters_are_refused_by_name() {
    let engine = DiskAnn::default();
    for (params, needle) in [
        (map(&[("storage", ParamValue::Str("ssd".into()))]), "storage"),
        (map(&[("pq_chunks", ParamValue::Int(4))]), "storage = \"disk\""),
        (map(&[("num_nodes_to_cache", ParamValue::Int(4))]), "num_nodes_to_cache"),
        (disk_params(&[("pq_chunks", ParamValue::Int(0))]), "pq_chunks"),
        (disk_params(&[("pq_chunks", ParamValue::Int(9))]), "pq_chunks"),
        (disk_params(&[("num_nodes_to_cache", ParamValue::Int(-1))]), "num_nodes_to_cache"),
        (disk_params(&[("pq_bytes", ParamValue::Int(4))]), "`pq_bytes`"),
    ] {
        let err = engine
            .check_build_params(&spec(10, 8, Distance::Euclidean, params))
            .unwrap_err()
            .to_string();
        assert!(err.contains(needle), "{err}");
    }
    let ok = disk_params(&[
        ("pq_chunks", ParamValue::Int(8)),
        ("num_nodes_to_cache", ParamValue::Int(100)),
    ]);
    engine
        .check_build_params(&spec(10, 8, Distance::Euclidean, ok))
        .unwrap();
}

/// The on-disk index is static: writes after the build are refused, naming the mode; a
/// filtered search uses the predicate; cached nodes are counted.
#[test]
fn the_on_disk_index_refuses_writes_and_filters_searches() {
    let dim = 8;
    let rows = clustered(1_000, dim, 3);
    let dir = tempfile::tempdir().unwrap();
    let build = disk_params(&[("num_nodes_to_cache", ParamValue::Int(50))]);
    let mut attributes = Attributes::new(1_000);
    attributes
        .push("parity", Column::Integer((0..1_000).map(|i| i % 2).collect()))
        .unwrap();
    let mut engine = built_on_disk(&rows, dim, build, dir.path(), Some(attributes));
    let report = engine.wait_until_ready().unwrap();
    assert_eq!(report.details["nodes_cached"], json!(50));
    let unsupported = |err: crate::engine::EngineError| {
        assert!(matches!(err, crate::engine::EngineError::Unsupported { .. }), "{err}");
        let text = err.to_string();
        assert!(text.contains("storage = \"disk\"") && text.contains("static"), "{text}");
    };
    unsupported(engine.upsert_batch(&[5], &rows[..dim]).unwrap_err());
    unsupported(engine.insert_batch(&[5_000], &rows[..dim]).unwrap_err());
    unsupported(engine.delete_batch(&[5]).unwrap_err());
    unsupported(engine.concurrent_writes().unwrap().delete(&[5]).unwrap_err());
    let odd = Predicate::from(Condition::range("parity", 1..2));
    let mut out = Vec::new();
    engine.search(Query::new(&rows[..dim], 10).filtered(Some(&odd)), &mut out).unwrap();
    assert_eq!(out.len(), 10);
    assert!(out.iter().all(|n| n.id % 2 == 1), "{out:?}");
    let truth: Vec<PointId> = exact(&rows, dim, &rows[..dim], 40)
        .into_iter()
        .filter(|id| id % 2 == 1)
        .take(10)
        .collect();
    let got: Vec<PointId> = out.iter().map(|n| n.id).collect();
    assert!(got.iter().filter(|id| truth.contains(id)).count() >= 8, "{got:?} {truth:?}");
}

/// A runbook that writes after the build is refused before the build in disk mode only.
#[test]
fn runbook_writes_are_refused_before_an_on_disk_build() {
    let engine = DiskAnn::default();
    let err = engine
        .check_writes(&spec(10, 8, Distance::Euclidean, disk_params(&[])))
        .unwrap_err();
    assert!(matches!(err, crate::engine::EngineError::Unsupported { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("storage = \"disk\"") && text.contains("build-search"), "{text}");
    engine
        .check_writes(&spec(10, 8, Distance::Euclidean, ParamMap::new()))
        .unwrap();
}
