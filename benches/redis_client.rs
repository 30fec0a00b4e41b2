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
//! Run: `scripts/redis_vs_native.sh` (starts a server and runs this with `--bench`). Env:
//! REDIS_URL (required), ROUNDS (default 3), PAIRS (default 4), SLICE_S (default 2), N
//! (default 50000), DIM (default 50). Without `--bench` (as `cargo test` runs it) it makes one
//! short round on a small set, and says so; without REDIS_URL it says it is skipped.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ragdbeval::distance::Distance;
use ragdbeval::runner::load::thread_cpu_time;
use ragdbeval::synthetic::SyntheticSpec;

mod common;
use common::{Slice, ab_rounds, closed_loop_slice, env, loaded_engine};

const KEY: &str = "redis_client_cmp";
const K: usize = 10;
const EF: i64 = 64;

/// `clients` threads, each on its own connection, sending the prepared commands round-robin
/// for `secs` seconds.
fn native_loop(
    client: &redis::Client,
    commands: &[redis::Cmd],
    clients: usize,
    secs: u64,
) -> Slice {
    let done = AtomicU64::new(0);
    let cpu_ns = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    std::thread::scope(|s| {
        for c in 0..clients {
            let (done, cpu_ns, stop) = (&done, &cpu_ns, &stop);
            s.spawn(move || {
                let mut con = client.get_connection().expect("connect to REDIS_URL");
                let cpu0 = thread_cpu_time();
                let mut n = 0u64;
                let mut i = c * commands.len() / clients.max(1);
                while !stop.load(Ordering::Relaxed) {
                    let reply: redis::Value =
                        commands[i % commands.len()].query(&mut con).expect("VSIM");
                    std::hint::black_box(reply);
                    n += 1;
                    i += 1;
                }
                if let (Some(a), Some(b)) = (cpu0, thread_cpu_time()) {
                    cpu_ns.fetch_add((b - a).as_nanos() as u64, Ordering::Relaxed);
                }
                done.fetch_add(n, Ordering::Relaxed);
            });
        }
        std::thread::sleep(Duration::from_secs(secs));
        stop.store(true, Ordering::Relaxed);
    });
    let wall = start.elapsed().as_secs_f64();
    let n = done.into_inner();
    Slice {
        qps: n as f64 / wall,
        cpu_per_query: cpu_ns.into_inner() as f64 / 1e9 / n.max(1) as f64,
    }
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let Ok(url) = std::env::var("REDIS_URL") else {
        println!(
            "redis_client: skipped, REDIS_URL is not set (scripts/redis_vs_native.sh starts a \
             server and runs this bench)"
        );
        return;
    };
    let (rounds, pairs, slice_s, n, dim) = if full {
        (
            env("ROUNDS", 3).max(1),
            env("PAIRS", 4).max(2),
            env("SLICE_S", 2).max(1) as u64,
            env("N", 50_000),
            env("DIM", 50),
        )
    } else {
        println!(
            "redis_client: test mode (one short round on 5,000 points; --bench for the real run)"
        );
        (1, 2, 1, 5_000, 50)
    };
    // Vector sets rank by cosine: an angular set.
    let spec = SyntheticSpec {
        n,
        dim,
        distance: Distance::Angular,
        ..SyntheticSpec::demo()
    };
    let (train, test) = spec.generate();
    let nq = test.len();

    let (mut engine, _work_dir) = loaded_engine(
        "redis",
        &url,
        KEY,
        spec.distance,
        &train,
        &[("m", 16), ("ef_construction", 128)],
        &[("ef", EF)],
    );

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

    let ours = |clients: usize| closed_loop_slice(&*engine, &test, K, clients, slice_s);
    let native = |clients: usize| native_loop(&client, &commands, clients, slice_s);
    println!(
        "redis: {n} × {dim} clustered points (cosine), {nq} queries, M = 16, EF (build) = 128, \
         EF = {EF}, k = {K}; {rounds} round(s) of {pairs} slice pairs of {slice_s} s per side \
         and client count, ABBA order"
    );
    ab_rounds("the native loop", &[1, 2], rounds, pairs, &ours, &native);
    engine.close().expect("close");
    let mut con = client.get_connection().expect("connect");
    let _: i64 = redis::cmd("DEL").arg(KEY).query(&mut con).expect("DEL");
}
