//! ragdbeval's closed loop against a minimal loop with the same HTTP library (`ureq`) on one
//! Chroma server's collection: the same collection, queries, `ef_search` and k, at 1 and 2
//! clients. Target: ragdbeval's QPS at least 0.95 × the minimal loop's at both.
//!
//! Chroma has no native benchmark client, and its Python client would measure Python. So the
//! native side is the least a Rust program can do per query with `ureq`: the JSON bodies
//! (`{"query_embeddings": [[…]], "n_results": k, "include": ["distances"]}`) serialised up
//! front, one agent per client thread, each answer read to its end and dropped unparsed.
//! ragdbeval's side is the adapter as `bench --db chroma` drives it (one shared pooled agent,
//! body serialised per query, the answer parsed into neighbours). The two sides alternate in
//! short slices (`common::ab_rounds`).
//!
//! Run: `scripts/engine_vs_native.sh chroma` (starts a server and runs this with `--bench`).
//! Env: CHROMA_URL (required), ROUNDS (default 3), PAIRS (default 12), SLICE_S (default 2), N
//! (default 50000), DIM (default 50). Without `--bench` (as `cargo test` runs it) it makes one
//! short round on a small set, and says so; without CHROMA_URL it says it is skipped.

use std::io::Read as _;

use ragdbeval::distance::Distance;

use crate::common::{ClientCpu, K, native_threads, prepare};

const COLLECTION: &str = "chroma_client_cmp";
const COLLECTIONS: &str = "/api/v2/tenants/default_tenant/databases/default_database/collections";
const EF_SEARCH: i64 = 64;

/// The comparison, as `ENGINE=chroma cargo bench --bench client_overhead` runs it.
pub fn run() {
    let Some(mut c) = prepare(
        "chroma",
        COLLECTION,
        Distance::Euclidean,
        &[
            ("m", 16),
            ("ef_construction", 128),
            ("ef_search", EF_SEARCH),
        ],
        &[("ef_search", EF_SEARCH)],
    ) else {
        return;
    };
    let (url, test, slice_s) = (c.url.clone(), &c.test, c.settings.slice_s);
    let base = url.trim_end_matches('/').to_string();

    // The native side: the collection's query URL and the request bodies.
    let agent = |_: usize| -> ureq::Agent { ureq::Agent::new_with_defaults() };
    let model: serde_json::Value = agent(0)
        .get(&format!("{base}{COLLECTIONS}/{COLLECTION}"))
        .call()
        .expect("look the collection up")
        .body_mut()
        .read_json()
        .expect("the collection's JSON");
    let id = model["id"].as_str().expect("the collection's id");
    let query_url = format!("{base}{COLLECTIONS}/{id}/query");
    let bodies: Vec<Vec<u8>> = test
        .iter()
        .map(|q| {
            serde_json::to_vec(&serde_json::json!({
                "query_embeddings": [q],
                "n_results": K,
                "include": ["distances"],
            }))
            .expect("a JSON body")
        })
        .collect();
    let send = |agent: &mut ureq::Agent, i: usize| {
        let mut answer = agent
            .post(&query_url)
            .header("content-type", "application/json")
            .send(&bodies[i % bodies.len()][..])
            .expect("query");
        let mut sink = Vec::with_capacity(4096);
        answer
            .body_mut()
            .as_reader()
            .read_to_end(&mut sink)
            .expect("read the answer");
        std::hint::black_box(sink);
    };

    let native = |clients: usize| native_threads(clients, slice_s, &agent, &send);
    let index = format!("m = 16, ef_construction = 128, ef_search = {EF_SEARCH}");
    c.against(&index, "the minimal ureq loop", ClientCpu::Threads, &native);
    // Closing drops the collection.
    c.engine.close().expect("close");
}
