//! ragdbeval's single-client loop against the engine's own in-process loop, for the embedded
//! Qdrant engine: same shard, same queries, `hnsw_ef` = 128. Target: ragdbeval's QPS within
//! 5 % of the native loop's (ratio ≥ 0.95).
//!
//! Two loops timed one after the other drift apart with the machine (frequency, neighbours
//! on a shared host): blocks of several seconds each gave ratios from 0.74 to 1.08. So the two
//! sides alternate in short slices (`benches/common/in_process.rs`).
//!
//! Run: `cargo bench --bench qdrant_edge_overhead` (env: ROUNDS, default 3; SLICES per round, default 60;
//! QUERIES per slice, default 500). Without `--bench` (as `cargo test` runs it): one short
//! round on 5,000 points.

use ragdbeval::adapters::qdrant_edge::QdrantEdge;
use ragdbeval::engine::ConnectOptions;

mod common;
use common::in_process::{K, collection, compare, load, plan};

fn main() {
    let plan = plan("qdrant_edge_overhead", 60, 500);
    let (train, test) = plan.spec.generate();
    let dir = tempfile::tempdir().expect("temp dir");
    let opts = ConnectOptions {
        batch_size: 1000,
        upload_parallel: 1,
        ..ConnectOptions::default()
    };
    let mut engine = QdrantEdge::new(&opts);
    let spec = collection(
        plan.spec.distance,
        &train,
        &[("m", 16), ("ef_construct", 128)],
        dir.path(),
    );
    load(&mut engine, &spec, &train, &[("hnsw_ef", 128)]);
    let label = format!(
        "qdrant-edge, clustered set ({} × {}), hnsw_ef = 128",
        train.len(),
        train.dim()
    );
    compare(&label, &plan, &engine, &test, &|rows| {
        engine.native_query_loop(rows, K).expect("native query")
    });
}
