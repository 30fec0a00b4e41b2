//! The `duckdb` adapter's statements, parameters and errors, and its engine against a real
//! DuckDB with vss (installed by scripts/install/duckdb.sh, as the build needs).

use crate::adapters::support::testing::{map};
use std::sync::Arc;

use super::engine::{VSS_ENV, open as open_engine, vss_path_from};
use super::params::{BuildSettings, SearchSettings};
use super::sql::{Table, vector_text, where_clause};
use crate::distance::Distance;
use crate::engine::{CollectionSpec, ConnectOptions, EngineError, Neighbor, VectorEngine, Query};
use crate::filter::{Attributes, Column, Condition, Predicate};
use crate::params::{ParamMap, ParamValue};

#[test]
fn build_parameters_are_checked() {
    let b = BuildSettings::parse(&ParamMap::new()).unwrap();
    let h = b.hnsw.expect("an index by default");
    assert_eq!(
        (h.m, h.m0, h.ef_construction, b.on_disk),
        (16, None, 128, false)
    );
    let none = BuildSettings::parse(&map(&[("index", ParamValue::Str("none".into()))])).unwrap();
    assert!(none.hnsw.is_none());
    for (bad, word) in [
        (map(&[("mm", ParamValue::Int(3))]), "mm"),
        (map(&[("m", ParamValue::Int(0))]), "at least 1"),
        (map(&[("m", ParamValue::Str("x".into()))]), "m"),
        (
            map(&[("index", ParamValue::Str("ivf".into()))]),
            "hnsw or none",
        ),
        (
            map(&[
                ("index", ParamValue::Str("none".into())),
                ("m", ParamValue::Int(8)),
            ]),
            "hnsw",
        ),
    ] {
        let err = BuildSettings::parse(&bad).unwrap_err();
        assert!(matches!(err, EngineError::BadParameter { .. }), "{err}");
        assert!(err.to_string().contains(word), "{err}");
    }
    assert_eq!(
        SearchSettings::parse(&ParamMap::new()).unwrap().ef_search,
        64
    );
    assert!(SearchSettings::parse(&map(&[("hnsw_ef", ParamValue::Int(3))])).is_err());
    assert!(SearchSettings::parse(&map(&[("ef_search", ParamValue::Int(0))])).is_err());
}

#[test]
fn statements_match_metric_and_function() {
    let build = BuildSettings::parse(&map(&[("m0", ParamValue::Int(40))])).unwrap();
    for (distance, metric, function) in [
        (Distance::Euclidean, "'l2sq'", "array_distance("),
        (Distance::Angular, "'cosine'", "array_cosine_distance("),
        (Distance::Dot, "'ip'", "array_negative_inner_product("),
    ] {
        let t = Table::new("c\"x", 3, distance);
        let index = t.index_sql(&build).unwrap();
        assert!(
            index.contains(metric) && index.contains("M0 = 40"),
            "{index}"
        );
        assert!(index.contains("ON \"c\"\"x\" USING HNSW"), "{index}");
        let search = t.search_sql(7, Some("TRUE"));
        assert!(
            search.contains(function) && search.ends_with("LIMIT 7"),
            "{search}"
        );
        assert!(search.contains("?::FLOAT[3]") && search.contains("WHERE TRUE"));
    }
}

#[test]
fn vectors_and_filters_become_sql() {
    let v = [0.1f32, -3.5e-9, 1e30, 2.0];
    let text = vector_text(&v);
    let back: Vec<f32> = text[1..text.len() - 1]
        .split(',')
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(back, v);
    let p = Predicate {
        all: vec![
            Condition::equals("la\"bel", "x'y"),
            Condition::range("num", 3..9),
        ],
    };
    let (sql, values) = where_clause(&p);
    assert_eq!(sql, "\"la\"\"bel\" = ? AND \"num\" >= ? AND \"num\" < ?");
    assert_eq!(values.len(), 3);
    assert_eq!(where_clause(&Predicate { all: vec![] }).0, "TRUE");
}

#[test]
fn a_missing_extension_names_the_install_command() {
    let err = vss_path_from(Some("/nonexistent/vss.duckdb_extension".into())).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("scripts/install/duckdb.sh") && msg.contains(VSS_ENV),
        "{msg}"
    );
    assert!(msg.contains("/nonexistent/vss.duckdb_extension"), "{msg}");
}

/// 300 points on a line in 4 dimensions, with a keyword and an integer attribute.
fn points() -> (Vec<u64>, Vec<f32>, Arc<Attributes>) {
    let n = 300;
    let ids: Vec<u64> = (0..n as u64).collect();
    let vectors: Vec<f32> = ids
        .iter()
        .flat_map(|i| [*i as f32, 1.0, 0.0, (*i % 7) as f32])
        .collect();
    let mut a = Attributes::new(n);
    a.push(
        "label",
        Column::Keyword {
            dictionary: vec!["even".into(), "odd".into()],
            codes: ids.iter().map(|i| (*i % 2) as u32).collect(),
        },
    )
    .unwrap();
    a.push(
        "num",
        Column::Integer(ids.iter().map(|i| *i as i64).collect()),
    )
    .unwrap();
    (ids, vectors, Arc::new(a))
}

fn built(build_params: ParamMap, dir: &tempfile::TempDir) -> Box<dyn VectorEngine> {
    let (ids, vectors, attributes) = points();
    let mut engine = open_engine(&ConnectOptions::default()).expect("vss is installed");
    engine
        .create(&CollectionSpec {
            name: "t".into(),
            dim: 4,
            distance: Distance::Euclidean,
            expected_points: ids.len(),
            build_params,
            work_dir: dir.path().to_path_buf(),
            attributes: Some(attributes),
            element_type: Default::default(),
        })
        .unwrap();
    engine.insert_batch(&ids, &vectors).unwrap();
    engine
}

fn ids_of(out: &[Neighbor]) -> Vec<u64> {
    out.iter().map(|n| n.id).collect()
}

/// The index is built and used, deletes never come back, upserts are seen, filters hold.
#[test]
fn index_writes_and_filters_on_real_duckdb() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = built(ParamMap::new(), &dir);
    let report = engine.wait_until_ready().unwrap();
    assert_eq!(
        (report.indexed_vectors, report.points),
        (Some(300), Some(300))
    );
    assert!(
        report.details["search_plan"]
            .as_str()
            .unwrap()
            .contains("HNSW_INDEX_SCAN")
    );
    let mut out = Vec::new();
    engine.search(Query::new(&[10.2, 1.0, 0.0, 3.0], 3), &mut out).unwrap();
    assert_eq!(ids_of(&out), [10, 11, 9]);
    engine.delete_batch(&[10, 11]).unwrap();
    engine.upsert_batch(&[200], &[10.0, 1.0, 0.0, 3.0]).unwrap();
    engine.search(Query::new(&[10.2, 1.0, 0.0, 3.0], 3), &mut out).unwrap();
    assert_eq!(ids_of(&out), [200, 9, 12]);
    assert!((out[0].score - 0.2).abs() < 1e-5, "{out:?}");
    let odd_in_range = Predicate {
        all: vec![
            Condition::equals("label", "odd"),
            Condition::range("num", 50..60),
        ],
    };
    engine
        .search(Query::new(&[10.0, 1.0, 0.0, 3.0], 4).filtered(Some(&odd_in_range)), &mut out)
        .unwrap();
    assert_eq!(ids_of(&out), [51, 53, 55, 57]);
    let footprint = engine.footprint().unwrap();
    assert!(
        footprint.index.is_some() && footprint.total.is_some(),
        "{footprint:?}"
    );
    let err = engine.search(Query::new(&[1.0; 3], 3), &mut out).unwrap_err();
    assert!(err.to_string().contains("dimension mismatch"), "{err}");
}

/// `index = none` builds nothing and scans; `on_disk` keeps the database in a file.
#[test]
fn exact_and_on_disk_sets() {
    let dir = tempfile::tempdir().unwrap();
    let mut exact = built(map(&[("index", ParamValue::Str("none".into()))]), &dir);
    let report = exact.wait_until_ready().unwrap();
    assert_eq!(report.indexed_vectors, Some(0));
    assert!(report.may_full_scan);
    assert!(exact.footprint().unwrap().index.is_none());
    let mut out = Vec::new();
    exact.search(Query::new(&[2.9, 1.0, 0.0, 3.0], 2), &mut out).unwrap();
    assert_eq!(ids_of(&out), [3, 2]);

    let mut disk = built(map(&[("on_disk", ParamValue::Bool(true))]), &dir);
    disk.set_search_params(&map(&[("ef_search", ParamValue::Int(100))]))
        .unwrap();
    disk.wait_until_ready().unwrap();
    disk.search(Query::new(&[2.9, 1.0, 0.0, 3.0], 2), &mut out).unwrap();
    assert_eq!(ids_of(&out), [3, 2]);
    let total = disk.footprint().unwrap().total.unwrap();
    assert!(
        total.source.contains("file") && total.bytes > 0,
        "{total:?}"
    );
    assert!(dir.path().join("duckdb.db").is_file());
}

/// Searches from several threads at once, each on its own connection, agree.
#[test]
fn concurrent_searches_agree() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = built(ParamMap::new(), &dir);
    engine.wait_until_ready().unwrap();
    let engine = &*engine;
    std::thread::scope(|s| {
        for t in 0..4 {
            s.spawn(move || {
                let mut out = Vec::new();
                for i in 0..50 {
                    let x = (t * 50 + i) as f32;
                    engine.search(Query::new(&[x, 1.0, 0.0, x % 7.0], 1), &mut out).unwrap();
                    assert_eq!(ids_of(&out), [(t * 50 + i) as u64]);
                }
            });
        }
    });
}
