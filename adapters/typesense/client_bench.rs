//! ragdbeval's closed loop against a minimal loop with the same HTTP library (`ureq`) on one
//! Typesense server's collection: the same collection, queries, `ef` and k, at 1 and 2
//! clients. Target: ragdbeval's QPS at least 0.95 × the minimal loop's at both.
//!
//! Typesense's own clients are Python, JavaScript and others that would measure their
//! language, and it ships no benchmark client. So the native side is the least a Rust program
//! can do per query: the `multi_search` bodies (one search each, the vector query written
//! once) and the URL with the shared parameters made up front, one agent per client thread,
//! each answer read to its end and dropped unparsed. ragdbeval's side is the adapter as
//! `bench --db typesense` drives it (one shared pooled agent, the vector query written per
//! query, the answer parsed into neighbours). The two sides alternate in short slices
//! (`common::ab_rounds`).
//!
//! Run: `scripts/engine_vs_native.sh typesense` (starts a server and runs this with
//! `--bench`). Env: TYPESENSE_URL (required), TYPESENSE_API_KEY (default: the key in the
//! script's state directory), ROUNDS (default 3), PAIRS (default 12), SLICE_S (default 2), N
//! (default 50000), DIM (default 50). Without `--bench` (as `cargo test` runs it) it makes one
//! short round on a small set, and says so; without TYPESENSE_URL it says it is skipped.

use std::io::Read as _;

use ragdbeval::distance::Distance;

use crate::common::{ClientCpu, K, native_threads, prepare};

const COLLECTION: &str = "typesense_client_cmp";
const EF: i64 = 64;

/// The comparison, as `ENGINE=typesense cargo bench --bench client_overhead` runs it.
pub fn run() {
    let Some(mut c) = prepare("typesense", COLLECTION, Distance::Angular, &[], &[("ef", EF)]) else {
        return;
    };
    let (url, test, slice_s) = (c.url.clone(), &c.test, c.settings.slice_s);
    let key = api_key();
    let search_url = format!(
        "{}/multi_search?collection={COLLECTION}&q=*&include_fields=id&per_page={K}",
        url.trim_end_matches('/')
    );
    let bodies: Vec<Vec<u8>> = test
        .iter()
        .map(|q| {
            let floats = serde_json::to_string(q).expect("a JSON array");
            serde_json::to_vec(&serde_json::json!({
                "searches": [{ "vector_query": format!("ragdbeval_vector:({floats}, k:{EF})") }],
            }))
            .expect("a JSON body")
        })
        .collect();

    let agent = |_: usize| -> ureq::Agent { ureq::Agent::new_with_defaults() };
    let send = |agent: &mut ureq::Agent, i: usize| {
        let mut answer = agent
            .post(&search_url)
            .header("content-type", "application/json")
            .header("x-typesense-api-key", &key)
            .send(&bodies[i % bodies.len()][..])
            .expect("multi_search");
        let mut sink = Vec::with_capacity(4096);
        answer
            .body_mut()
            .as_reader()
            .read_to_end(&mut sink)
            .expect("read the answer");
        std::hint::black_box(sink);
    };

    let native = |clients: usize| native_threads(clients, slice_s, &agent, &send);
    let index = format!("M = 16, ef_construction = 200 (fixed), ef = {EF}");
    c.against(&index, "the minimal ureq loop", ClientCpu::Threads, &native);
    // Closing drops the collection.
    c.engine.close().expect("close");
}

/// TYPESENSE_API_KEY, else the key `scripts/servers/typesense.sh` made up.
fn api_key() -> String {
    if let Ok(key) = std::env::var("TYPESENSE_API_KEY") {
        return key;
    }
    let dir = std::env::var("RAGDBEVAL_SERVER_DIR").unwrap_or_else(|_| "/tmp/ragdbeval-servers".into());
    std::fs::read_to_string(std::path::Path::new(&dir).join("typesense/api_key"))
        .map(|k| k.trim().to_string())
        .expect("TYPESENSE_API_KEY unset and no key in the script's state directory")
}
