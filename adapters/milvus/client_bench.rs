//! ragdbeval's closed loop against a minimal loop with the same gRPC library (tonic with
//! prost, over the adapter's Milvus messages) on one Milvus server's collection: the same
//! collection, queries, `nprobe` and k, at 1 and 2 clients. Target: ragdbeval's QPS at least
//! 0.95 × the minimal loop's at both.
//!
//! The native side is what an async Rust program written for speed does: the `Search`
//! requests encoded up front, one channel, `clients` tasks on a tokio runtime each awaiting
//! one call after another and dropping the answer. ragdbeval's side is the adapter as
//! `bench --db milvus` drives it (blocking sender threads, each request built per query and
//! its answer turned into neighbours). Client CPU is the whole bench process's, taken around
//! each slice on both sides.
//!
//! Run: `scripts/engine_vs_native.sh milvus` (starts a server and runs this with `--bench`).
//! Env: MILVUS_URL (required), ROUNDS (default 3), PAIRS (default 12), SLICE_S (default 2),
//! N (default 50000), DIM (default 50). Without `--bench` (as `cargo test` runs it) it makes
//! one short round on a small set, and says so; without MILVUS_URL it says it is skipped.

use std::sync::Arc;

use ragdbeval::adapters::milvus::proto::{
    DSL_BOOL_EXPR, PLACEHOLDER_FLOAT_VECTOR, PlaceholderGroup, PlaceholderValue, SearchRequest,
    SearchResults, kv,
};
use ragdbeval::distance::Distance;
use tonic::codegen::http::uri::PathAndQuery;
use tonic::transport::Channel;

use crate::common::{ClientCpu, K, prepare, tokio_slice};

const COLLECTION: &str = "milvus_client_cmp";
const NPROBE: i64 = 16;
const SEARCH: &str = "/milvus.proto.milvus.MilvusService/Search";

/// One call of `request` on `channel`; the answer is dropped.
async fn search(channel: &Channel, request: SearchRequest) {
    let mut grpc = tonic::client::Grpc::new(channel.clone());
    grpc.ready().await.expect("channel ready");
    let codec = tonic_prost::ProstCodec::<SearchRequest, SearchResults>::default();
    let answer = grpc
        .unary(
            tonic::Request::new(request),
            PathAndQuery::from_static(SEARCH),
            codec,
        )
        .await
        .expect("search");
    std::hint::black_box(answer);
}

/// The search of `q`, as a minimal client encodes it.
fn request(q: &[f32]) -> SearchRequest {
    let group = PlaceholderGroup {
        placeholders: vec![PlaceholderValue {
            tag: "$0".into(),
            r#type: PLACEHOLDER_FLOAT_VECTOR,
            values: vec![q.iter().flat_map(|x| x.to_le_bytes()).collect()],
        }],
    };
    SearchRequest {
        collection_name: COLLECTION.into(),
        dsl: String::new(),
        placeholder_group: prost::Message::encode_to_vec(&group),
        dsl_type: DSL_BOOL_EXPR,
        search_params: vec![
            kv("anns_field", "vector"),
            kv("topk", K.to_string()),
            kv("metric_type", "L2"),
            kv("params", format!("{{\"nprobe\":{NPROBE}}}")),
            kv("round_decimal", "-1"),
        ],
        nq: 1,
        use_default_consistency: true,
    }
}

/// The comparison, as `ENGINE=milvus cargo bench --bench client_overhead` runs it.
pub fn run() {
    let Some(mut c) = prepare(
        "milvus",
        COLLECTION,
        Distance::Euclidean,
        &[],
        &[("nprobe", NPROBE)],
    ) else {
        return;
    };
    let (url, test, slice_s) = (c.url.clone(), &c.test, c.settings.slice_s);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let channel = rt
        .block_on(
            tonic::transport::Endpoint::from_shared(url.clone())
                .expect("MILVUS_URL is a URL")
                .tcp_nodelay(true)
                .connect(),
        )
        .expect("a channel to MILVUS_URL");
    let requests: Arc<Vec<SearchRequest>> = test.iter().map(request).collect::<Vec<_>>().into();

    let native = |clients: usize| {
        let (channel, requests) = (channel.clone(), Arc::clone(&requests));
        tokio_slice(&rt, clients, slice_s, move |i| {
            let (channel, request) = (channel.clone(), requests[i % requests.len()].clone());
            async move { search(&channel, request).await }
        })
    };
    let index = format!("IVF_FLAT (nlist 4·√n), nprobe = {NPROBE}");
    c.against(&index, "the minimal tonic loop", ClientCpu::Process, &native);
    c.engine.close().expect("close");
}
