//! Integration tests of what is particular to the Qdrant gRPC adapter; what every server
//! engine must do is in `conformance`.
//!
//! They need a server: set `QDRANT_URL` (for example `http://localhost:6334`, plus
//! `QDRANT_API_KEY` if the server wants one). Without it (at build time) they are reported as
//! ignored, under CI too: a Qdrant server cannot be installed on these machines.

use crate::common::{K, TestData, params, row_id, search_all, unique_name};

use ragdbeval::distance::Distance;
use ragdbeval::engine::{CollectionSpec, VectorEngine};
use ragdbeval::params::{ParamMap, ParamValue};

/// The server under test (the test is ignored unless `build.rs` saw `QDRANT_URL`).
fn server_url() -> String {
    crate::common::engine_url("qdrant").expect("qdrant is a server engine")
}

fn open(url: &str, recreate: bool) -> Box<dyn VectorEngine> {
    crate::common::open_at("qdrant", url, recreate)
}

fn spec(name: &str, dim: usize, n: usize, build: ParamMap) -> CollectionSpec {
    crate::common::collection(name, dim, n, Distance::Euclidean, build)
}

/// Qdrant's own facts about the default build: the report counts indexed vectors, `exact`
/// search is exact, the API key never reaches the result file, and without
/// `--server-storage` no size is claimed.
#[test]
#[cfg_attr(not(engine_runs = "qdrant"), ignore = "needs QDRANT_URL")]
fn default_build_facts() {
    let url = server_url();
    let d = TestData::generate("clustered:n=5000,dim=32,queries=100,seed=7");
    let build = crate::common::config_set("qdrant", "default").0;
    let mut engine = crate::common::loaded("qdrant", &url, &d, "facts", build);
    let report = engine.wait_until_ready().expect("ready");
    assert!(report.indexed_vectors.unwrap_or(0) > 0, "{report:?}");

    engine
        .set_search_params(&params(&[("exact", ParamValue::Bool(true))]))
        .expect("params");
    let exact = search_all(engine.as_ref(), &d.queries, d.dim);
    let re = d.recall(&exact, row_id);
    assert_eq!(re, 1.0, "exact recall {re}");
    assert!(exact.iter().all(|found| found.len() == K));

    let described = engine.describe();
    assert!(described.contains_key("server_version"), "{described:?}");
    assert!(described.contains_key("collection_info"), "{described:?}");
    if let Ok(key) = std::env::var("QDRANT_API_KEY")
        && !key.is_empty()
    {
        assert!(!serde_json::to_string(&described).unwrap().contains(&key));
    }
    let size = engine.footprint().expect("footprint");
    assert!(size.index.is_none() && size.total.is_none(), "{size:?}");
    assert!(
        size.total_unmeasured
            .is_some_and(|why| why.contains("--server-storage"))
    );
    engine.close().expect("close");
}

#[test]
#[cfg_attr(not(engine_runs = "qdrant"), ignore = "needs QDRANT_URL")]
fn build_settings_reach_the_server() {
    let url = server_url();
    let mut engine = open(&url, false);
    let name = unique_name("params");
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
#[cfg_attr(not(engine_runs = "qdrant"), ignore = "needs QDRANT_URL")]
fn filtered_search_keeps_to_the_predicate() {
    let url = server_url();
    let mut engine = open(&url, true);
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
    let mut engine = open(&url, true);
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
