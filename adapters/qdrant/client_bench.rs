//! ragdbeval's closed loop against a minimal loop with the same gRPC library (`qdrant-client`)
//! on one Qdrant server's collection: the same collection, queries, `hnsw_ef` and k, at 1 and
//! 2 clients. Target: ragdbeval's QPS at least 0.95 × the minimal loop's at both.
//!
//! The native side is what an async Rust program written for speed does: the `QueryPoints`
//! requests built up front, one client, `clients` tasks on a tokio runtime each awaiting one
//! `query` after another and dropping the answer. ragdbeval's side is the adapter as
//! `bench --db qdrant` drives it (blocking sender threads, each request built per query and
//! its answer turned into neighbours). Client CPU is the whole bench process's (the gRPC work
//! runs on runtime threads, not on the senders), taken around each slice on both sides.
//!
//! Run: `QDRANT_URL=http://127.0.0.1:6334 scripts/engine_vs_native.sh qdrant` (no script here
//! starts a Qdrant server). Env: QDRANT_URL (required, the gRPC port), ROUNDS (default 3),
//! PAIRS (default 12), SLICE_S (default 2), N (default 50000), DIM (default 50). Without
//! `--bench` (as `cargo test` runs it) it makes one short round on a small set, and says so;
//! without QDRANT_URL it says it is skipped.

use std::sync::Arc;

use qdrant_client::Qdrant;
use qdrant_client::qdrant::{QueryPoints, QueryPointsBuilder, SearchParamsBuilder};

use ragdbeval::distance::Distance;

use crate::common::{ClientCpu, K, prepare, tokio_slice};

const COLLECTION: &str = "qdrant_client_cmp";
const HNSW_EF: i64 = 64;

/// The comparison, as `ENGINE=qdrant cargo bench --bench client_overhead` runs it.
pub fn run() {
    let Some(mut c) = prepare(
        "qdrant",
        COLLECTION,
        Distance::Euclidean,
        &[("m", 16), ("ef_construct", 128)],
        &[("hnsw_ef", HNSW_EF)],
    ) else {
        return;
    };
    let (url, test, slice_s) = (c.url.clone(), &c.test, c.settings.slice_s);

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let client = Arc::new(
        Qdrant::from_url(&url)
            .skip_compatibility_check()
            .build()
            .expect("a client for QDRANT_URL"),
    );
    let requests: Arc<Vec<QueryPoints>> = test
        .iter()
        .map(|q| {
            QueryPointsBuilder::new(COLLECTION)
                .query(q.to_vec())
                .limit(K as u64)
                .with_payload(false)
                .with_vectors(false)
                .params(SearchParamsBuilder::default().hnsw_ef(HNSW_EF as u64))
                .build()
        })
        .collect::<Vec<_>>()
        .into();

    let native = |clients: usize| {
        let (client, requests) = (Arc::clone(&client), Arc::clone(&requests));
        tokio_slice(&rt, clients, slice_s, move |i| {
            let (client, requests) = (Arc::clone(&client), Arc::clone(&requests));
            async move {
                let request = requests[i % requests.len()].clone();
                std::hint::black_box(client.query(request).await.expect("query"));
            }
        })
    };
    let index = format!("m = 16, ef_construct = 128, hnsw_ef = {HNSW_EF}");
    let native_name = "the minimal qdrant-client loop";
    c.against(&index, native_name, ClientCpu::Process, &native);
    c.engine.close().expect("close");
    rt.block_on(client.delete_collection(COLLECTION))
        .expect("delete the collection");
}
