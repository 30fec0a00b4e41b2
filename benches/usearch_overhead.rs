//! ragdbeval's single-client loop against a bare loop over usearch's own `Index::search`: same
//! index, same queries, `expansion_search` = 128. Target: ragdbeval's QPS within 5 % of the
//! bare loop's (ratio ≥ 0.95); the harness is `benches/common/in_process.rs`.
//!
//! Run: `cargo bench --bench usearch_overhead` (env: ROUNDS, default 3; SLICES per round,
//! default 60; QUERIES per slice, default 500) on the demo set. Without `--bench` (as
//! `cargo test` runs it): one short round on 5,000 points.

use ragdbeval::adapters::usearch::USearch;

mod common;
use common::in_process::{K, collection, compare, load, plan};

fn main() {
    let plan = plan("usearch_overhead", 60, 500);
    let (train, test) = plan.spec.generate();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut engine = USearch::default();
    let build = [("connectivity", 16), ("expansion_add", 128)];
    let spec = collection(plan.spec.distance, &train, &build, dir.path());
    load(&mut engine, &spec, &train, &[("expansion_search", 128)]);
    let label = format!(
        "usearch, clustered set ({} × {}), expansion_search = 128",
        train.len(),
        train.dim()
    );
    compare(&label, &plan, &engine, &test, &|rows| {
        engine.native_query_loop(rows, K).expect("bare query loop")
    });
}
