//! ragdbeval's closed loop against the tightest loop the `redis` crate allows, on one Redis 8
//! server's vector set: the same key, queries, `EF` and k, at 1 and 2 clients. Target:
//! ragdbeval's QPS at least 0.95 × the native loop's at both.
//!
//! `redis-benchmark` cannot send a binary FP32 blob per command from a query set, so the
//! native side is a loop written for the comparison with the same client library: one
//! connection per client thread, the `VSIM key FP32 <blob> WITHSCORES COUNT k EF ef` commands
//! encoded up front, each reply read as a raw value and dropped. ragdbeval's side is the
//! adapter as `bench --db redis` drives it (pooled connection, command built per query, reply
//! parsed into neighbours). The two sides alternate in short slices (`common::ab_rounds`).
//!
//! Run: `scripts/engine_vs_native.sh redis` (starts a server and runs this with `--bench`). Env:
//! REDIS_URL (required), ROUNDS (default 3), PAIRS (default 12), SLICE_S (default 2), N
//! (default 50000), DIM (default 50). Without `--bench` (as `cargo test` runs it) it makes one
//! short round on a small set, and says so; without REDIS_URL it says it is skipped.

use ragdbeval::distance::Distance;

use crate::common::{ClientCpu, K, native_threads, prepare};

const KEY: &str = "redis_client_cmp";
const EF: i64 = 64;

/// The comparison, as `ENGINE=redis cargo bench --bench client_overhead` runs it.
pub fn run() {
    // Vector sets rank by cosine: an angular set.
    let Some(mut c) = prepare(
        "redis",
        KEY,
        Distance::Angular,
        &[("m", 16), ("ef_construction", 128)],
        &[("ef", EF)],
    ) else {
        return;
    };
    let (url, test, slice_s) = (c.url.clone(), &c.test, c.settings.slice_s);

    // The native side's commands, as the adapter sends them (raw little-endian FP32 blobs:
    // the set is not normalised by the client).
    let commands: Vec<redis::Cmd> = test
        .iter()
        .map(|q| {
            let blob: Vec<u8> = q.iter().flat_map(|x| x.to_le_bytes()).collect();
            let mut cmd = redis::cmd("VSIM");
            cmd.arg(KEY)
                .arg("FP32")
                .arg(blob)
                .arg("WITHSCORES")
                .arg("COUNT")
                .arg(K)
                .arg("EF")
                .arg(EF);
            cmd
        })
        .collect();
    let client = redis::Client::open(url.as_str()).expect("REDIS_URL");

    // One connection per client thread, each reply read as a raw value and dropped.
    let open = |_: usize| client.get_connection().expect("connect to REDIS_URL");
    let send = |con: &mut redis::Connection, i: usize| {
        let reply: redis::Value = commands[i % commands.len()].query(con).expect("VSIM");
        std::hint::black_box(reply);
    };
    let native = |clients: usize| native_threads(clients, slice_s, &open, &send);
    let index = format!("cosine, M = 16, EF (build) = 128, EF = {EF}");
    c.against(&index, "the native loop", ClientCpu::Threads, &native);
    c.engine.close().expect("close");
    let mut con = client.get_connection().expect("connect");
    let _: i64 = redis::cmd("DEL").arg(KEY).query(&mut con).expect("DEL");
}
