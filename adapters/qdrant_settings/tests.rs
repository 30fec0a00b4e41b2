//! Both targets parse and record the same settings from the same parameters.

use super::build::{BuildSettings, Origin, PqCompression, Quantization};
use super::search::SearchSettings;
use super::*;
use crate::adapters::support::testing::map;

fn s(text: &str) -> ParamValue {
    ParamValue::Str(text.into())
}

/// The recorded settings without the target-only part.
fn shared_part(settings: &BuildSettings) -> Value {
    let mut v = settings.to_json();
    if let Some(obj) = v.as_object_mut() {
        obj.remove("engine_only");
    }
    v
}

/// Build parameter maps covering every shared parameter, valid and invalid values.
fn build_grid() -> Vec<ParamMap> {
    use ParamValue::{Bool, Float, Int};
    let mut grid = vec![
        ParamMap::new(),
        map(&[("m", Int(16)), ("ef_construct", Int(128))]),
        map(&[("m", Int(0))]),
        map(&[("m", Int(-1))]),
        map(&[("m", s("x"))]),
        map(&[("ef_construct", Int(3))]),
        map(&[("ef_construct", Int(4))]),
        map(&[("indexing_threshold", Int(0))]),
        map(&[("indexing_threshold", Int(20_000))]),
        map(&[("indexing_threshold", Int(5))]),
        map(&[("full_scan_threshold", Int(10_000))]),
        map(&[
            ("indexing_threshold", Int(10_000)),
            ("full_scan_threshold", Int(10_000)),
        ]),
        map(&[("full_scan_threshold", Float(1.5))]),
        map(&[("on_disk", Bool(true)), ("hnsw_on_disk", Bool(false))]),
        map(&[("on_disk", Int(1))]),
        map(&[("quantization", s("int8"))]),
        map(&[
            ("quantization", s("Scalar")),
            ("quantization_always_ram", Bool(true)),
        ]),
        map(&[
            ("quantization", s("binary")),
            ("quantization_always_ram", Bool(false)),
        ]),
        map(&[("quantization", s("product"))]),
        map(&[("quantization", s("pq")), ("pq_compression", Int(64))]),
        map(&[("quantization", s("fp4"))]),
        map(&[("quantization", Int(8))]),
        map(&[("quantization_always_ram", Bool(true))]),
        map(&[("pq_compression", Int(16))]),
        map(&[("quantization", s("int8")), ("pq_compression", s("x16"))]),
        map(&[("bogus", Int(1))]),
        map(&[("ef_construction", Int(100))]),
    ];
    for value in [
        Int(4),
        Int(8),
        Int(16),
        Int(32),
        Int(64),
        s("x16"),
        s("X32"),
        s("16"),
        Int(12),
        Int(0),
        Int(-16),
        s("x"),
        s("x17"),
        Float(16.0),
        Bool(true),
    ] {
        grid.push(map(&[
            ("quantization", s("product")),
            ("pq_compression", value),
        ]));
    }
    grid
}

const DATASETS: &[(usize, usize)] = &[
    (0, 8),
    (1, 1),
    (100, 8),
    (5_000, 32),
    (18_000, 64),
    (20_000, 64),
    (50_000, 50),
    (1_000_000, 128),
    (100_000_000, 768),
    (usize::MAX, usize::MAX),
];

/// Both targets go through one function: for every parameter map and dataset the settings
/// they record are identical (apart from the target-only part), or both reject the map
/// with the same parameter and message.
#[test]
fn both_targets_parse_and_record_the_grid_identically() {
    let mut accepted = 0;
    let mut rejected = 0;
    for params in build_grid() {
        for &(n, dim) in DATASETS {
            let server = BuildSettings::parse(&params, Target::Server, n, dim);
            let edge = BuildSettings::parse(&params, Target::Edge, n, dim);
            match (&server, &edge) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(shared_part(a), shared_part(b), "{params:?} {n}x{dim}");
                    accepted += 1;
                }
                (Err(a), Err(b)) => {
                    assert_eq!(a, b, "{params:?} {n}x{dim}");
                    rejected += 1;
                }
                _ => panic!("{params:?} {n}x{dim}: server {server:?}, edge {edge:?}"),
            }
        }
    }
    // The grid exercises both outcomes.
    assert!(accepted > 100 && rejected > 100, "{accepted} {rejected}");
}

#[test]
fn pq_compression_16_is_product_x16_for_both_targets() {
    for value in [ParamValue::Int(16), s("x16"), s("X16"), s("16")] {
        let params = map(&[
            ("quantization", s("product")),
            ("pq_compression", value.clone()),
        ]);
        for target in [Target::Server, Target::Edge] {
            let settings = BuildSettings::parse(&params, target, 1_000, 16)
                .unwrap_or_else(|e| panic!("{target:?} {value:?}: {e}"));
            assert_eq!(
                settings.quantization,
                Quantization::Product(PqCompression::X16)
            );
            assert_eq!(settings.to_json()["quantization"], "product-x16");
        }
    }
    // Unset, product quantization compresses x16 (Qdrant's usual choice).
    let params = map(&[("quantization", s("pq"))]);
    let settings = BuildSettings::parse(&params, Target::Edge, 1_000, 16).unwrap();
    assert_eq!(
        settings.quantization,
        Quantization::Product(PqCompression::X16)
    );
}

#[test]
fn threshold_rule() {
    // 50k x 50 floats = 9765 KB: indexing 97 KB, full scan 48 KB.
    assert_eq!(derived_thresholds(50_000, 50), (97, 48));
    // 18k x 64 (the demo build) = 4500 KB.
    assert_eq!(derived_thresholds(18_000, 64), (45, 22));
    // The full-scan threshold never goes below a Qdrant server's minimum of 10 KB.
    assert_eq!(derived_thresholds(0, 8), (1, 10));
    assert_eq!(derived_thresholds(10, 2), (1, 10));
    assert_eq!(derived_thresholds(500_000, 8), (156, 78));
    assert_eq!(derived_thresholds(10_000_000, 128), (10_000, 5_000));
    assert_eq!(derived_thresholds(usize::MAX, usize::MAX), (10_000, 5_000));
    for &(n, dim) in DATASETS {
        let (indexing, full_scan) = derived_thresholds(n, dim);
        // 0 would disable indexing.
        assert!(indexing >= 1, "{n}x{dim}");
        assert!(
            full_scan >= QDRANT_SERVER_MIN_FULL_SCAN_THRESHOLD_KB,
            "{n}x{dim}"
        );
        // A segment big enough to be indexed is never below the full-scan threshold, except
        // under the server's 10 KB floor.
        assert!(
            full_scan <= indexing.max(QDRANT_SERVER_MIN_FULL_SCAN_THRESHOLD_KB),
            "{n}x{dim}"
        );
        assert!(indexing <= QDRANT_DEFAULT_INDEXING_THRESHOLD_KB);
        assert!(full_scan <= QDRANT_DEFAULT_FULL_SCAN_THRESHOLD_KB);
    }
    // A user's indexing threshold moves the derived full-scan threshold with it.
    let params = map(&[("indexing_threshold", ParamValue::Int(40))]);
    let settings = BuildSettings::parse(&params, Target::Edge, 1_000_000, 128).unwrap();
    assert_eq!(settings.full_scan_threshold.kb, 20);
    // Below the server's minimum a set value is refused, by both targets alike.
    let low = map(&[("full_scan_threshold", ParamValue::Int(5))]);
    for target in [Target::Edge, Target::Server] {
        let err = BuildSettings::parse(&low, target, 1_000_000, 128).unwrap_err();
        assert!(
            err.to_string().contains("below Qdrant's minimum of 10 KB"),
            "{err}"
        );
    }
    assert_eq!(settings.full_scan_threshold.origin, Origin::Derived);
    assert_eq!(settings.indexing_threshold.origin, Origin::User);
}

#[test]
fn recorded_thresholds_state_origin_and_points() {
    let settings = BuildSettings::parse(&ParamMap::new(), Target::Server, 18_000, 64).unwrap();
    let v = settings.to_json();
    assert_eq!(v["indexing_threshold_kb"]["kb"], 45);
    assert_eq!(
        v["indexing_threshold_kb"]["origin"],
        "derived from dataset size"
    );
    // 45 KB of 256-byte vectors.
    assert_eq!(v["indexing_threshold_kb"]["min_points_to_index"], 180);
    assert_eq!(
        v["full_scan_threshold_kb"]["min_points_for_hnsw_search"],
        88
    );
    assert_eq!(v["m"], 16);
    assert_eq!(v["ef_construct"], 100);
    let params = map(&[("indexing_threshold", ParamValue::Int(0))]);
    let v = BuildSettings::parse(&params, Target::Edge, 18_000, 64)
        .unwrap()
        .to_json();
    assert_eq!(v["indexing_threshold_kb"]["indexing_disabled"], true);
    assert_eq!(v["engine_only"]["wal"], true);
}

#[test]
fn target_only_parameters_are_refused_by_the_other_target_with_one_message() {
    let cluster = map(&[("shard_number", ParamValue::Int(2))]);
    let s = BuildSettings::parse(&cluster, Target::Server, 100, 8).unwrap();
    assert_eq!(s.shard_number, Some(2));
    assert_eq!(s.to_json()["engine_only"]["shard_number"], 2);
    let err = BuildSettings::parse(&cluster, Target::Edge, 100, 8).unwrap_err();
    assert_eq!(err.param, "shard_number");
    assert!(err.message.contains("cluster setting"), "{err}");

    let wal = map(&[("wal", ParamValue::Bool(false))]);
    let s = BuildSettings::parse(&wal, Target::Edge, 100, 8).unwrap();
    assert_eq!(s.wal, Some(false));
    let err = BuildSettings::parse(&wal, Target::Server, 100, 8).unwrap_err();
    assert_eq!(err.param, "wal");

    let zero = map(&[("replication_factor", ParamValue::Int(0))]);
    assert!(BuildSettings::parse(&zero, Target::Server, 100, 8).is_err());
    // The error as each adapter reports it: same parameter and message.
    let bogus = map(&[("bogus", ParamValue::Int(1))]);
    let a = BuildSettings::parse(&bogus, Target::Server, 1, 1).unwrap_err();
    let b = BuildSettings::parse(&bogus, Target::Edge, 1, 1).unwrap_err();
    assert_eq!(a, b);
    match a.into_engine(Target::Server) {
        EngineError::BadParameter { engine, param, .. } => {
            assert_eq!((engine.as_str(), param.as_str()), ("qdrant", "bogus"));
        }
        other => panic!("{other}"),
    }
}

#[test]
fn search_settings() {
    use ParamValue::{Bool, Float, Int};
    assert!(
        SearchSettings::parse(&ParamMap::new(), None)
            .unwrap()
            .is_default()
    );
    let p = map(&[("hnsw_ef", Int(64)), ("indexed_only", Bool(true))]);
    let parsed = SearchSettings::parse(&p, Some(false)).unwrap();
    assert_eq!(
        (parsed.hnsw_ef, parsed.indexed_only),
        (Some(64), Some(true))
    );
    assert_eq!(parsed.to_json()["hnsw_ef"], 64);
    for bad in [
        map(&[("hnsw_ef", Int(0))]),
        map(&[("hnsw_ef", s("big"))]),
        map(&[("ef", Int(64))]),
        map(&[("oversampling", Float(0.5))]),
        map(&[("oversampling", Float(f64::NAN))]),
        map(&[("oversampling", Float(f64::INFINITY))]),
    ] {
        assert!(SearchSettings::parse(&bad, None).is_err(), "{bad:?}");
    }
    let rescore = map(&[("rescore", Bool(true)), ("oversampling", Float(2.0))]);
    assert!(SearchSettings::parse(&rescore, Some(false)).is_err());
    assert!(SearchSettings::parse(&rescore, Some(true)).is_ok());
    assert!(SearchSettings::parse(&rescore, None).is_ok());
}

/// Every named set of either adapter's config.toml parses for its own target, and a set
/// without target-only parameters means the same to the other target.
#[cfg(feature = "qdrant-edge")]
#[test]
#[cfg(feature = "qdrant-edge")]
fn config_sets_parse_for_both_targets() {
    for (config, own, other) in [
        (
            include_str!("../qdrant/config.toml"),
            Target::Server,
            Target::Edge,
        ),
        (
            include_str!("../qdrant_edge/config.toml"),
            Target::Edge,
            Target::Server,
        ),
    ] {
        let cfg = crate::params::EngineConfig::parse(config).unwrap();
        for (name, set) in &cfg.sets {
            for build in crate::params::expand(&set.build) {
                let mine = BuildSettings::parse(&build, own, 20_000, 64)
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                let quantized = Some(mine.quantized());
                for search in crate::params::expand(&set.search) {
                    SearchSettings::parse(&search, quantized)
                        .unwrap_or_else(|e| panic!("{name}: {e}"));
                }
                if build.keys().any(|k| own.own_params().contains(&k.as_str())) {
                    continue;
                }
                let theirs = BuildSettings::parse(&build, other, 20_000, 64)
                    .unwrap_or_else(|e| panic!("{name} for {other:?}: {e}"));
                assert_eq!(shared_part(&mine), shared_part(&theirs), "{name}");
            }
        }
    }
}

/// The datatype follows the dataset unless set; the derived thresholds follow the bytes
/// Qdrant stores; `uint8` for data that is not is refused, by both targets alike.
#[test]
fn datatype_follows_the_dataset_and_sizes_the_thresholds() {
    use crate::types::ElementType;
    for target in [Target::Edge, Target::Server] {
        let mut settings = BuildSettings::parse(&ParamMap::new(), target, 1_000_000, 128).unwrap();
        let f32_kb = settings.indexing_threshold.kb;
        settings.resolve_datatype(ElementType::Uint8).unwrap();
        assert_eq!(settings.datatype, ElementType::Uint8);
        // 1M × 128 bytes: 125 000 KB, 1/100 of it; float32 would be four times that.
        assert_eq!(settings.indexing_threshold.kb, 1_250);
        assert_eq!(f32_kb, 5_000);
        assert_eq!(settings.full_scan_threshold.kb, 625);
        let v = settings.to_json();
        assert_eq!(v["datatype"], "uint8");
        assert_eq!(v["datatype_origin"], "dataset element type");
        // 1 250 KB of 128-byte vectors.
        assert_eq!(v["indexing_threshold_kb"]["min_points_to_index"], 10_000);

        // int8 has no Qdrant type: float32.
        let mut settings = BuildSettings::parse(&ParamMap::new(), target, 1_000, 8).unwrap();
        settings.resolve_datatype(ElementType::Int8).unwrap();
        assert_eq!(settings.datatype, ElementType::Float32);

        // Set by the user: kept, and recorded as theirs.
        let params = map(&[("datatype", s("float16"))]);
        let mut settings = BuildSettings::parse(&params, target, 1_000, 8).unwrap();
        settings.resolve_datatype(ElementType::Uint8).unwrap();
        assert_eq!(settings.datatype, ElementType::Float16);
        assert_eq!(settings.to_json()["datatype_origin"], "user");

        let params = map(&[("datatype", s("uint8"))]);
        let mut settings = BuildSettings::parse(&params, target, 1_000, 8).unwrap();
        let err = settings.resolve_datatype(ElementType::Float32).unwrap_err();
        assert!(err.to_string().contains("the dataset is float32"), "{err}");

        for bad in ["int8", "float64", "turbo4"] {
            let params = map(&[("datatype", s(bad))]);
            let err = BuildSettings::parse(&params, target, 1_000, 8).unwrap_err();
            assert!(
                err.to_string()
                    .contains("must be float32, uint8 or float16"),
                "{err}"
            );
        }
    }
}
