//! Harness overhead: the closed-loop runner against a no-op engine, one client thread.
//! Target: at least 1,000,000 queries per second (≤ 1 µs per query including the clock reads,
//! latency recording and result capture).
//!
//! Run: `cargo bench --bench harness`. The no-op engine measures the harness, not an engine;
//! it is not registered anywhere.

use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ragdbeval::engine::{
    CollectionSpec, EngineResult, Footprint, IndexReport, Neighbor, PointId, VectorEngine,
};
use ragdbeval::params::ParamMap;
use ragdbeval::runner::load::single_client_iterations;
use ragdbeval::vectors::Vectors;

/// Returns k fixed neighbours without doing any work.
struct NoOp;

impl VectorEngine for NoOp {
    fn name(&self) -> &str {
        "noop"
    }
    fn version(&self) -> String {
        "bench".into()
    }
    fn create(&mut self, _: &CollectionSpec) -> EngineResult<()> {
        Ok(())
    }
    fn insert_batch(&mut self, _: &[PointId], _: &[f32]) -> EngineResult<()> {
        Ok(())
    }
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        Ok(IndexReport::default())
    }
    fn upsert_batch(&mut self, _: &[PointId], _: &[f32]) -> EngineResult<()> {
        Ok(())
    }
    fn delete_batch(&mut self, _: &[PointId]) -> EngineResult<()> {
        Ok(())
    }
    fn set_search_params(&mut self, _: &ParamMap) -> EngineResult<()> {
        Ok(())
    }
    #[inline(never)]
    fn search(&self, _: &[f32], k: usize, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        out.clear();
        out.extend((0..k as u64).map(|id| Neighbor { id, score: 0.0 }));
        Ok(())
    }
    fn footprint(&self) -> EngineResult<Footprint> {
        Ok(Footprint::unmeasured("bench engine"))
    }
    fn in_process(&self) -> bool {
        true
    }
}

fn harness(c: &mut Criterion) {
    let queries = Vectors::new(vec![0.5; 1000 * 128], 128).expect("whole rows");
    let mut g = c.benchmark_group("harness");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(5));
    g.bench_function("closed_loop_noop_query_k10", |b| {
        b.iter_custom(|iters| {
            single_client_iterations(&NoOp, &queries, 10, iters)
                .expect("the no-op engine cannot fail")
        })
    });
    g.finish();
}

criterion_group!(benches, harness);
criterion_main!(benches);
