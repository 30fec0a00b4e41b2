//! ragdbeval's single-client loop against a bare loop over DiskANN's own k-NN search: same
//! index, same queries, `l_search` = 100. Target: ragdbeval's QPS within 5 % of the bare
//! loop's (ratio ≥ 0.95); the harness is `benches/common/in_process.rs`.
//!
//! Run: `cargo bench --features diskann --bench diskann_overhead` (env: ROUNDS, default 3;
//! SLICES per round, default 60; QUERIES per slice, default 500) on the demo set. Without
//! `--bench` (as `cargo test` runs it): one short round on 5,000 points.

use ragdbeval::adapters::diskann::DiskAnn;

mod common;
use common::in_process::{K, collection, compare, load, plan};

fn main() {
    let plan = plan("diskann_overhead", 60, 500);
    let (train, test) = plan.spec.generate();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut engine = DiskAnn::default();
    let build = [("max_degree", 64), ("l_build", 100)];
    let spec = collection(plan.spec.distance, &train, &build, dir.path());
    load(&mut engine, &spec, &train, &[("l_search", 100)]);
    let label = format!(
        "diskann, clustered set ({} × {}), l_search = 100",
        train.len(),
        train.dim()
    );
    compare(&label, &plan, &engine, &test, &|rows| {
        engine.native_query_loop(rows, K).expect("bare query loop")
    });
}
