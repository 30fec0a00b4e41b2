//! ragdbeval's single-client loop against a bare DuckDB loop, for the `duckdb` engine: same
//! database and connection, same queries, `ef_search` = 64. The bare loop is a prepared
//! `SELECT id FROM t ORDER BY array_distance(v, ?::FLOAT[dim]) LIMIT k`, each query vector
//! written as array text as the adapter writes it. Target: ragdbeval's QPS within 5 % of the
//! bare loop's (ratio ≥ 0.95); the harness is `benches/common/in_process.rs`.
//!
//! Run: `cargo bench --features duckdb --bench duckdb_overhead` (env: ROUNDS, default 3;
//! SLICES per round, default 40; QUERIES per slice, default 500). Without `--bench` (as
//! `cargo test` runs it): one short round on 5,000 points.

use ragdbeval::adapters::duckdb::DuckDb;
use ragdbeval::engine::ConnectOptions;

mod common;
use common::in_process::{K, collection, compare, load, plan};

fn main() {
    let plan = plan("duckdb_overhead", 40, 500);
    let (train, test) = plan.spec.generate();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut engine = DuckDb::open(&ConnectOptions::default()).expect("duckdb with vss");
    let build = [("m", 16), ("ef_construction", 128)];
    let spec = collection(plan.spec.distance, &train, &build, dir.path());
    load(&mut engine, &spec, &train, &[("ef_search", 64)]);
    let label = format!("duckdb, {} × {}, ef_search = 64", train.len(), train.dim());
    compare(&label, &plan, &engine, &test, &|rows| {
        engine.native_query_loop(rows, K).expect("bare query loop")
    });
}
