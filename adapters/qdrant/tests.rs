//! Unit tests of the qdrant adapter that need no server.

use crate::adapters::support::testing::{map};
use super::endpoint::Endpoint;
use super::errors::is_transport_failure;
use super::requests::create_request;
use super::*;
use crate::adapters::support::rows;
use crate::secret::redact as redact_url;
use crate::params::ParamValue;

#[test]
fn endpoints_parse() {
    let e = Endpoint::parse("http://localhost:6334").unwrap();
    assert_eq!(
        (e.https, e.host.as_str(), e.port),
        (false, "localhost", 6334)
    );
    assert!(e.is_local());
    let e = Endpoint::parse("https://user:pw@xyz.cloud.qdrant.io/path").unwrap();
    assert_eq!(
        (e.https, e.host.as_str(), e.port),
        (true, "xyz.cloud.qdrant.io", 443)
    );
    assert!(!e.is_local());
    let e = Endpoint::parse("http://[::1]:7000").unwrap();
    assert_eq!((e.host.as_str(), e.port), ("::1", 7000));
    assert!(e.is_local());
    assert!(Endpoint::parse("localhost:6334").is_err());
    assert!(Endpoint::parse("ftp://x:1").is_err());
    assert!(Endpoint::parse("http://x:notaport").is_err());
    assert_eq!(redact_url("https://u:secret@h:1/p"), "https://u:***@h:1/p");
    assert_eq!(redact_url("http://h:1"), "http://h:1");
}

/// An adapter whose client points at a port that refuses connections: enough for
/// everything that must not need a server (parsing, recording, request translation).
fn offline_engine() -> QdrantEngine {
    let url = "http://127.0.0.1:1";
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    // The client's channels are created on the runtime.
    let client_config = Qdrant::from_url(url)
        .timeout(Duration::from_secs(5))
        .connect_timeout(Duration::from_secs(2))
        .skip_compatibility_check();
    let client = {
        let _guard = rt.enter();
        client_config.clone().build().unwrap()
    };
    QdrantEngine {
        rt,
        client,
        client_config,
        owner: crate::adapters::support::per_thread::new_owner(),
        url: url.into(),
        endpoint: Endpoint::parse(url).unwrap(),
        api_key_set: false,
        server_version: "none".into(),
        server_commit: None,
        recreate: false,
        batch_size: 100,
        upload_parallel: 1,
        request_timeout: Duration::from_secs(5),
        server_pid: None,
        server_storage: None,
        discovered_pid: OnceLock::new(),
        collection: None,
        search_params: None,
        search: SearchSettings::default(),
    }
}

#[cfg(feature = "qdrant-edge")]
fn collection_spec(
    dir: &std::path::Path,
    n: usize,
    dim: usize,
    build_params: ParamMap,
) -> CollectionSpec {
    CollectionSpec {
        name: "c1".into(),
        dim,
        distance: Distance::Euclidean,
        expected_points: n,
        build_params,
        work_dir: dir.to_path_buf(),
        attributes: None,
        element_type: Default::default(),
    }
}

#[cfg(feature = "qdrant-edge")]
fn without_engine_only(mut v: Value) -> Value {
    if let Some(obj) = v.as_object_mut() {
        obj.remove("engine_only");
    }
    v
}

/// The two Qdrant adapters record the same settings for the same parameters and dataset
/// (the real qdrant-edge engine on one side), and reject the same parameters with the same
/// message. Before the shared parser, the edge recorded thresholds of 1/10 and 1/20 of the
/// data and the server 1/100 for both, and the edge refused `pq_compression = 16`.
#[cfg(feature = "qdrant-edge")]
#[test]
#[cfg(feature = "qdrant-edge")]
fn edge_and_server_record_the_same_settings() {
    let s = |t: &str| ParamValue::Str(t.into());
    let grid = [
        ParamMap::new(),
        map(&[
            ("m", ParamValue::Int(32)),
            ("ef_construct", ParamValue::Int(256)),
        ]),
        map(&[
            ("quantization", s("product")),
            ("pq_compression", ParamValue::Int(16)),
        ]),
        map(&[("quantization", s("product")), ("pq_compression", s("x16"))]),
        map(&[
            ("quantization", s("binary")),
            ("quantization_always_ram", ParamValue::Bool(true)),
        ]),
        map(&[
            ("indexing_threshold", ParamValue::Int(10_000)),
            ("full_scan_threshold", ParamValue::Int(10_000)),
        ]),
        // Rejected by both:
        map(&[("pq_compression", ParamValue::Int(16))]),
        map(&[
            ("quantization", s("product")),
            ("pq_compression", ParamValue::Int(12)),
        ]),
        map(&[("ef_construct", ParamValue::Int(2))]),
        map(&[("ef_construction", ParamValue::Int(100))]),
    ];
    let mut server = offline_engine();
    for (n, dim) in [(5_000usize, 32usize), (20_000, 64), (50_000, 50)] {
        for params in &grid {
            let dir = tempfile::tempdir().unwrap();
            let mut edge = crate::adapters::qdrant_edge::open(&ConnectOptions::default()).unwrap();
            let edge_created = edge.create(&collection_spec(dir.path(), n, dim, params.clone()));
            // The server adapter parses before it talks to the server: a parameter error
            // comes back as such, valid settings get as far as the (missing) server.
            let server_created =
                server.create(&collection_spec(dir.path(), n, dim, params.clone()));
            match (edge_created, server_created) {
                (Ok(()), Err(EngineError::Unreachable { .. })) => {
                    let settings = BuildSettings::parse(params, Target::Server, n, dim).unwrap();
                    server.collection = Some(Collection {
                        name: "c1".into(),
                        dim,
                        settings,
                        loaded: 0,
                        attributes: None,
                        payload_indexes: Vec::new(),
                    });
                    let recorded_edge = edge.describe()["build_settings"].clone();
                    let recorded_server = server.describe()["build_settings"].clone();
                    assert_eq!(
                        without_engine_only(recorded_edge),
                        without_engine_only(recorded_server),
                        "{params:?} {n}x{dim}"
                    );
                }
                (
                    Err(EngineError::BadParameter {
                        engine: e1,
                        param: p1,
                        message: m1,
                    }),
                    Err(EngineError::BadParameter {
                        engine: e2,
                        param: p2,
                        message: m2,
                    }),
                ) => {
                    assert_eq!((e1.as_str(), e2.as_str()), ("qdrant-edge", "qdrant"));
                    assert_eq!((p1, m1), (p2, m2), "{params:?}");
                }
                (edge, server) => {
                    panic!("{params:?} {n}x{dim}: edge {edge:?}, server {server:?}")
                }
            }
        }
    }
}

/// The create request carries exactly the parsed settings, pq_compression = 16 included.
#[test]
fn create_request_translates_the_shared_settings() {
    let s = |t: &str| ParamValue::Str(t.into());
    for (params, compression) in [
        (ParamMap::new(), None),
        (
            map(&[
                ("quantization", s("product")),
                ("pq_compression", ParamValue::Int(16)),
            ]),
            Some(CompressionRatio::X16),
        ),
        (
            map(&[("quantization", s("pq")), ("pq_compression", s("x4"))]),
            Some(CompressionRatio::X4),
        ),
        (
            map(&[
                ("quantization", s("int8")),
                ("m", ParamValue::Int(0)),
                ("shard_number", ParamValue::Int(2)),
            ]),
            None,
        ),
    ] {
        let settings = BuildSettings::parse(&params, Target::Server, 20_000, 64).unwrap();
        let request = create_request(&settings, "c", Distance::Angular, 30).build();
        let hnsw = request.hnsw_config.unwrap();
        assert_eq!(hnsw.m, Some(settings.m as u64));
        assert_eq!(hnsw.ef_construct, Some(settings.ef_construct as u64));
        assert_eq!(
            hnsw.full_scan_threshold,
            Some(settings.full_scan_threshold.kb)
        );
        assert_eq!(
            request.optimizers_config.unwrap().indexing_threshold,
            Some(settings.indexing_threshold.kb)
        );
        assert_eq!(request.shard_number, settings.shard_number);
        let quantization = request.quantization_config.and_then(|q| q.quantization);
        match (settings.quantization, quantization) {
            (Quantization::None, None) => {}
            (Quantization::Int8, Some(quantization_config::Quantization::Scalar(_))) => {}
            (Quantization::Product(_), Some(quantization_config::Quantization::Product(p))) => {
                assert_eq!(Some(p.compression), compression.map(|c| c as i32));
            }
            (want, got) => panic!("{want:?} sent as {got:?}"),
        }
        match request.vectors_config.and_then(|v| v.config) {
            Some(qdrant_client::qdrant::vectors_config::Config::Params(p)) => {
                assert_eq!(p.size, 64);
                assert_eq!(p.distance, QDistance::Cosine as i32);
            }
            other => panic!("{other:?}"),
        }
    }
}

/// Search settings go through the shared parser offline, and `describe` records them.
#[test]
fn search_settings_are_the_shared_ones() {
    let mut engine = offline_engine();
    let params = map(&[
        ("hnsw_ef", ParamValue::Int(64)),
        ("indexed_only", ParamValue::Bool(true)),
    ]);
    engine.set_search_params(&params).unwrap();
    let sent = engine.search_params.clone().unwrap();
    assert_eq!(
        (sent.hnsw_ef, sent.indexed_only, sent.exact),
        (Some(64), Some(true), None)
    );
    assert_eq!(
        engine.describe()["search_params"],
        SearchSettings::parse(&params, None).unwrap().to_json()
    );
    // On a collection without quantization, rescore is refused as on qdrant-edge.
    engine.collection = Some(Collection {
        name: "c".into(),
        dim: 8,
        settings: BuildSettings::parse(&ParamMap::new(), Target::Server, 100, 8).unwrap(),
        loaded: 0,
        attributes: None,
        payload_indexes: Vec::new(),
    });
    let err = engine
        .set_search_params(&map(&[("rescore", ParamValue::Bool(true))]))
        .unwrap_err();
    assert!(matches!(err, EngineError::BadParameter { .. }), "{err}");
    engine.set_search_params(&ParamMap::new()).unwrap();
    assert!(engine.search_params.is_none());
}

#[test]
fn row_checks_catch_dimension_mismatch() {
    assert!(rows::check(ENGINE, "x", 4, 2, 8).is_ok());
    let err = rows::check(ENGINE, "x", 4, 2, 7).unwrap_err().to_string();
    assert!(err.contains("dimension mismatch"), "{err}");
}

#[test]
fn transport_failures_are_recognised() {
    assert!(is_transport_failure(
        grpc_code::INTERNAL,
        "Failed to connect to http://127.0.0.1:1/: tonic::transport::Error(Transport, ...)"
    ));
    assert!(is_transport_failure(grpc_code::UNAVAILABLE, "anything"));
    assert!(!is_transport_failure(
        grpc_code::INVALID_ARGUMENT,
        "Wrong input: Vector dimension error: expected dim: 32, got 16"
    ));
}

#[test]
fn config_parses() {
    let cfg = crate::params::EngineConfig::parse(include_str!("config.toml")).unwrap();
    for set in ["default", "ef-sweep", "exact"] {
        assert!(cfg.set(set).is_ok(), "{set}");
    }
    for (name, set) in &cfg.sets {
        assert!(set.description.is_some(), "{name} has no description");
        for build in crate::params::expand(&set.build) {
            BuildSettings::parse(&build, Target::Server, 1000, 16).unwrap();
        }
    }
}

/// The gRPC filter carries every condition of the predicate as a `must` condition: keyword
/// equality as a `match`, an integer window as a `range` with both bounds; bounds a double
/// cannot hold exactly are refused before the build.
#[test]
fn predicates_become_must_filters() {
    use crate::filter::Condition as FilterCondition;
    use qdrant_client::qdrant::condition::ConditionOneOf;
    use qdrant_client::qdrant::r#match::MatchValue;

    let predicate = Predicate {
        all: vec![
            FilterCondition::equals("label", "l17"),
            FilterCondition::range("price", -5..1 << 40),
        ],
    };
    let filter = grpc_filter(&predicate);
    assert!(filter.should.is_empty() && filter.must_not.is_empty());
    assert_eq!(filter.must.len(), 2);
    let fields: Vec<_> = filter
        .must
        .iter()
        .map(|c| match c.condition_one_of.as_ref() {
            Some(ConditionOneOf::Field(f)) => f.clone(),
            other => panic!("not a field condition: {other:?}"),
        })
        .collect();
    assert_eq!(fields[0].key, "label");
    assert_eq!(
        fields[0].r#match.as_ref().and_then(|m| m.match_value.clone()),
        Some(MatchValue::Keyword("l17".into()))
    );
    assert_eq!(fields[1].key, "price");
    let range = fields[1].range.expect("range condition");
    assert_eq!(
        (range.gte, range.lt, range.gt, range.lte),
        (Some(-5.0), Some((1u64 << 40) as f64), None, None)
    );

    assert!(range_is_exact(&predicate));
    let huge = Predicate {
        all: vec![FilterCondition::range("price", 0..(1 << 53) + 1)],
    };
    assert!(!range_is_exact(&huge));
}
