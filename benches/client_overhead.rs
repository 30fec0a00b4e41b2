//! Each server engine's adapter against its fastest native client, on one server: ragdbeval's
//! closed loop and the native loop alternate in short slices (ABBA) at 1 and 2 clients.
//! Target: ragdbeval's QPS at least 0.95 × the native loop's. Each comparison lives in its
//! engine's folder (`adapters/<module>/client_bench.rs`, its `run`), which says what its native
//! side is and which variables it reads; `build.rs` lists them.
//!
//! Run: `scripts/engine_vs_native.sh <engine>` (starts the server and runs
//! `ENGINE=<engine> cargo bench --bench client_overhead`). Without ENGINE every comparison of
//! this build runs; without `--bench` (as `cargo test` runs it) each makes one short round on a
//! small set, or says it is skipped when its server's URL variable is unset.

mod common;

include!(concat!(env!("OUT_DIR"), "/client_benches.rs"));

fn main() {
    let only = std::env::var("ENGINE").ok();
    if let Some(name) = &only
        && !CLIENT_BENCHES.iter().any(|(engine, _)| engine == name)
    {
        let known: Vec<&str> = CLIENT_BENCHES.iter().map(|(engine, _)| *engine).collect();
        eprintln!(
            "client_overhead: no client comparison for `{name}` in this build ({})",
            known.join(", ")
        );
        std::process::exit(2);
    }
    for (engine, run) in CLIENT_BENCHES {
        if only.as_deref().is_none_or(|name| name == *engine) {
            run();
        }
    }
}
