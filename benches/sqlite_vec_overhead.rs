//! ragdbeval's single-client loop against a bare loop over sqlite-vec's own KNN statement:
//! same database, same queries, same k. The bare loop is one prepared
//! `SELECT rowid, distance FROM vectors WHERE embedding MATCH ? AND k = ?` stepped per query
//! on one connection ([`SqliteVec::native_query_loop`]). Target: ragdbeval's QPS within 5 %
//! of the bare loop's (ratio ≥ 0.95); the harness is `benches/common/in_process.rs`.
//!
//! Run: `cargo bench --features sqlite-vec --bench sqlite_vec_overhead` (env: ROUNDS, default
//! 3; SLICES per round, default 40; QUERIES per slice, default 100: each is a full scan). Without `--bench` (as
//! `cargo test` runs it): one short round on 5,000 points.

use ragdbeval::adapters::sqlite_vec::SqliteVec;
use ragdbeval::engine::ConnectOptions;

mod common;
use common::in_process::{K, collection, compare, load, plan};

fn main() {
    let plan = plan("sqlite_vec_overhead", 40, 100);
    let (train, test) = plan.spec.generate();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut engine = SqliteVec::new(&ConnectOptions::default()).expect("open sqlite-vec");
    let spec = collection(plan.spec.distance, &train, &[], dir.path());
    load(&mut engine, &spec, &train, &[]);
    let label = format!(
        "sqlite-vec, clustered set ({} × {})",
        train.len(),
        train.dim()
    );
    compare(&label, &plan, &engine, &test, &|rows| {
        engine.native_query_loop(rows, K).expect("bare query loop")
    });
}
