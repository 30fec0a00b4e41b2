//! ragdbeval's single-client loop against a bare loop over each in-process engine's own search
//! call ([`VectorEngine::native_query_loop`]): same index, same queries, the engine's `default`
//! parameter set. Target: ragdbeval's QPS within 5 % of the bare loop's (ratio ≥ 0.95); the
//! harness is `benches/common/in_process.rs`. Every engine of the registry that this build has
//! and that runs in-process is measured, unless ENGINE names one; an engine with no library of
//! its own (`exact`) is said and passed over.
//!
//! Run: `cargo bench --features usearch --bench engine_overhead` (env: ENGINE; ROUNDS, default
//! 3; SLICES per round, default 60; QUERIES per slice, default 500, fewer where one pass of
//! the bare loop would take over 200 ms) on the demo set. Without `--bench` (as `cargo test`
//! runs it): one short round on 5,000 points per engine.

use std::time::{Duration, Instant};

use ragdbeval::adapters::ENGINES;
use ragdbeval::engine::{ConnectOptions, EngineEntry};
use ragdbeval::params::{EngineConfig, ParamMap, expand};

mod common;
use common::in_process::{K, Plan, collection, compare, load, plan};

fn main() {
    let only = std::env::var("ENGINE").ok();
    let mut measured = 0;
    for entry in ENGINES
        .iter()
        .filter(|e| e.embedded() && e.left_out.is_none())
    {
        if only.as_deref().is_some_and(|name| name != entry.name) {
            continue;
        }
        measured += usize::from(measure(entry, &plan("engine_overhead", 60, 500)));
    }
    assert!(
        measured > 0,
        "no in-process engine with a library of its own was measured"
    );
}

/// The first point of the build and search sweeps of the engine's `default` set.
fn default_params(entry: &EngineEntry) -> (ParamMap, ParamMap) {
    let config = EngineConfig::parse(entry.config_toml).expect("config.toml parses");
    let set = config.set("default").expect("a `default` set");
    let first = |table| expand(table).into_iter().next().unwrap_or_default();
    (first(&set.build), first(&set.search))
}

/// Loads the engine and compares the two loops; false when it has no bare loop.
fn measure(entry: &EngineEntry, plan: &Plan) -> bool {
    let (train, test) = plan.spec.generate();
    let dir = tempfile::tempdir().expect("temp dir");
    let opts = ConnectOptions {
        batch_size: 1000,
        upload_parallel: 1,
        ..ConnectOptions::default()
    };
    let mut engine = (entry.open)(&opts).unwrap_or_else(|e| panic!("open {}: {e}", entry.name));
    let (build, search) = default_params(entry);
    let spec = collection(plan.spec.distance, &train, build, dir.path());
    load(engine.as_mut(), &spec, &train, &search);
    let bare = |rows: &[f32]| {
        engine
            .native_query_loop(rows, K)
            .map(|r| r.expect("bare loop"))
    };
    let start = Instant::now();
    if bare(test.as_flat()).is_none() {
        println!(
            "{}: no library of its own to compare with, passed over",
            entry.name
        );
        return false;
    }
    let per_query = start.elapsed() / test.len() as u32;
    let queries = plan.queries.min(per_slice(per_query));
    let label = format!(
        "{}, clustered set ({} × {}), default set {search:?}",
        entry.name,
        train.len(),
        train.dim()
    );
    let plan = Plan {
        queries,
        ..plan.clone()
    };
    compare(&label, &plan, engine.as_ref(), &test, &|rows| {
        bare(rows).unwrap_or(0)
    });
    true
}

/// Queries per slice so that one pass of the bare loop takes at most 200 ms (at least 20).
fn per_slice(per_query: Duration) -> usize {
    let fit = Duration::from_millis(200).as_nanos() / per_query.as_nanos().max(1);
    usize::try_from(fit).unwrap_or(usize::MAX).max(20)
}
