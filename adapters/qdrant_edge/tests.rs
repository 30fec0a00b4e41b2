//! Unit tests of the qdrant-edge adapter.

use crate::adapters::support::testing::{map, self as testing};
use super::shard::{compression_ratio, edge_config};
use super::*;
use crate::params::ParamValue;

fn spec(dir: &tempfile::TempDir, n: usize, dim: usize, build_params: ParamMap) -> CollectionSpec {
    testing::spec(n, dim, Distance::Euclidean, build_params, dir.path())
}

/// The real engine records exactly what the shared parser produced, in `describe` and in
/// the index report, and the shard it created carries those values.
#[test]
fn describe_and_report_record_the_shared_settings() {
    let s = |t: &str| ParamValue::Str(t.into());
    for (n, dim, params) in [
        (20_000, 64, ParamMap::new()),
        (
            5_000,
            32,
            map(&[
                ("m", ParamValue::Int(8)),
                ("ef_construct", ParamValue::Int(64)),
            ]),
        ),
        (
            1_000,
            16,
            map(&[
                ("quantization", s("product")),
                ("pq_compression", ParamValue::Int(16)),
            ]),
        ),
        (
            50_000,
            50,
            map(&[
                ("quantization", s("int8")),
                ("indexing_threshold", ParamValue::Int(0)),
            ]),
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut engine = QdrantEdge::new(&ConnectOptions::default());
        engine.create(&spec(&dir, n, dim, params.clone())).unwrap();
        let want = BuildSettings::parse(&params, Target::Edge, n, dim).unwrap();
        assert_eq!(
            engine.describe()["build_settings"],
            want.to_json(),
            "{params:?}"
        );
        let report = engine.wait_until_ready().unwrap();
        assert_eq!(
            report.details["build_settings"],
            want.to_json(),
            "{params:?}"
        );

        // What the engine was configured with is the parsed settings.
        let config = edge_config(&want, Distance::Euclidean);
        let hnsw = config.hnsw_config.unwrap();
        assert_eq!((hnsw.m, hnsw.ef_construct), (want.m, want.ef_construct));
        assert_eq!(hnsw.full_scan_threshold as u64, want.full_scan_threshold.kb);
        let optimizers = config.optimizers.unwrap();
        assert_eq!(
            optimizers.indexing_threshold,
            Some(want.indexing_threshold.kb as usize)
        );
        let quantization = config.vectors[""].quantization_config.clone();
        match want.quantization {
            Quantization::None => assert!(quantization.is_none()),
            Quantization::Int8 => {
                assert!(matches!(quantization, Some(QuantizationConfig::Scalar(_))))
            }
            Quantization::Binary => {
                assert!(matches!(quantization, Some(QuantizationConfig::Binary(_))))
            }
            Quantization::Product(c) => match quantization {
                Some(QuantizationConfig::Product(p)) => {
                    assert_eq!(p.product.compression, compression_ratio(c))
                }
                other => panic!("{other:?}"),
            },
        }
        engine.close().unwrap();
    }
}

#[test]
fn pq_compression_16_builds_a_product_x16_shard() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = QdrantEdge::new(&ConnectOptions::default());
    let params = map(&[
        ("quantization", ParamValue::Str("product".into())),
        ("pq_compression", ParamValue::Int(16)),
    ]);
    engine.create(&spec(&dir, 1_000, 16, params)).unwrap();
    assert_eq!(
        engine.describe()["build_settings"]["quantization"],
        "product-x16"
    );
}

#[test]
fn search_settings_are_the_shared_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = QdrantEdge::new(&ConnectOptions::default());
    engine.create(&spec(&dir, 100, 8, ParamMap::new())).unwrap();
    let params = map(&[
        ("hnsw_ef", ParamValue::Int(32)),
        ("indexed_only", ParamValue::Bool(true)),
    ]);
    engine.set_search_params(&params).unwrap();
    let want = SearchSettings::parse(&params, Some(false)).unwrap();
    assert_eq!(engine.describe()["search_params"], want.to_json());
    let sent = engine.search_params.clone().unwrap();
    assert_eq!(
        (sent.hnsw_ef, sent.indexed_only, sent.exact),
        (Some(32), true, false)
    );
    // rescore on a collection without quantization has no effect: refused.
    let err = engine
        .set_search_params(&map(&[("rescore", ParamValue::Bool(true))]))
        .unwrap_err();
    assert!(matches!(err, EngineError::BadParameter { .. }), "{err}");
    engine.set_search_params(&ParamMap::new()).unwrap();
    assert!(engine.search_params.is_none());
}

#[test]
fn unknown_and_ignored_parameters_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let mut engine = QdrantEdge::new(&ConnectOptions::default());
    for bad in [
        map(&[("ef", ParamValue::Int(4))]),
        map(&[("pq_compression", ParamValue::Str("x8".into()))]),
        map(&[("shard_number", ParamValue::Int(1))]),
    ] {
        let err = engine.create(&spec(&dir, 100, 8, bad)).unwrap_err();
        match err {
            EngineError::BadParameter { engine, .. } => assert_eq!(engine, "qdrant-edge"),
            other => panic!("{other}"),
        }
    }
}
