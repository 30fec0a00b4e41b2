//! Harness overhead: the closed-loop runner against a no-op engine, one client thread.
//! Target: at least 1,000,000 queries per second (≤ 1 µs per query including the clock reads,
//! latency recording and result capture).
//!
//! Run: `cargo bench --bench harness`. The no-op engine measures the harness, not an engine;
//! it is not registered anywhere.

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ragdbeval::runner::load::single_client_iterations;
use ragdbeval::vectors::Vectors;

/// The stub engines of the integration tests; the no-op one returns k fixed neighbours
/// without doing any work.
#[path = "../tests/it/stubs.rs"]
mod stubs;

fn harness(c: &mut Criterion) {
    let queries = Vectors::new(vec![0.5; 1000 * 128], 128).expect("whole rows");
    let mut g = c.benchmark_group("harness");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(5));
    let noop = stubs::Stub::noop();
    g.bench_function("closed_loop_noop_query_k10", |b| {
        b.iter_custom(|iters| {
            single_client_iterations(&noop, &queries, 10, iters)
                .expect("the no-op engine cannot fail")
        })
    });
    g.finish();
}

criterion_group!(benches, harness);
criterion_main!(benches);
