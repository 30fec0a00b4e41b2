//! ragdbeval's single-client loop against a bare loop over sqlite-vec's own KNN statement:
//! same database, same queries, same k. The bare loop is one prepared
//! `SELECT rowid, distance FROM vectors WHERE embedding MATCH ? AND k = ?` stepped per query
//! on one connection ([`SqliteVec::native_query_loop`]). Target: ragdbeval's QPS within 5 %
//! of the bare loop's (ratio ≥ 0.95).
//!
//! As in `benches/overhead.rs`, the two sides alternate in short slices (one pass over the
//! same queries each), in ABBA order so that a steady drift of the machine cancels; the ratio
//! is taken per pair of slices, each round reports the median ratio, the rounds their spread.
//!
//! Run: `cargo bench --bench sqlite_vec_overhead` (env: ROUNDS, default 3; SLICES per round,
//! default 40; QUERIES per slice, default 100). Without `--bench` (as `cargo test` runs it)
//! it makes one short round on a small set, and says so.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ragdbeval::adapters::sqlite_vec::SqliteVec;
use ragdbeval::engine::{CollectionSpec, ConnectOptions, PointId, VectorEngine};
use ragdbeval::params::ParamMap;
use ragdbeval::runner::load::single_client_iterations;
use ragdbeval::synthetic::SyntheticSpec;
use ragdbeval::vectors::Vectors;

mod common;
use common::{env, mean_and_spread, median};

/// Rounds, slices per round, queries per slice, and the data set.
fn plan() -> (usize, usize, usize, SyntheticSpec) {
    let mut spec = SyntheticSpec::demo();
    if std::env::args().any(|a| a == "--bench") {
        let (rounds, slices) = (env("ROUNDS", 3).max(1), env("SLICES", 40).max(2));
        (rounds, slices, env("QUERIES", 100).max(1), spec)
    } else {
        println!(
            "sqlite_vec_overhead: test mode (one short round on 2,000 points; --bench for the real run)"
        );
        spec.n = 2_000;
        spec.queries = 50;
        (1, 4, 50, spec)
    }
}

fn main() {
    let (rounds, slices, per_slice, spec) = plan();
    let (train, test) = spec.generate();
    let per_slice = per_slice.min(test.len());
    let queries = Vectors::new(test.rows(0, per_slice).to_vec(), test.dim()).expect("query subset");
    let dir = tempfile::tempdir().expect("temp dir");
    let mut engine = SqliteVec::new(&ConnectOptions::default()).expect("open sqlite-vec");
    engine
        .create(&CollectionSpec {
            name: "overhead".into(),
            dim: train.dim(),
            distance: spec.distance,
            expected_points: train.len(),
            build_params: ParamMap::new(),
            work_dir: dir.path().to_path_buf(),
            attributes: None,
            element_type: Default::default(),
        })
        .expect("create");
    let ids: Vec<PointId> = (0..train.len() as PointId).collect();
    engine.insert_batch(&ids, train.as_flat()).expect("insert");
    engine.wait_until_ready().expect("ready");

    let native = || -> Duration {
        let start = Instant::now();
        black_box(
            engine
                .native_query_loop(queries.as_flat(), 10)
                .expect("native query"),
        );
        start.elapsed()
    };
    let ours = || -> Duration {
        single_client_iterations(&engine, &queries, 10, per_slice as u64).expect("closed loop")
    };
    // Warm both paths (page cache, mapping, prepared statements) before anything is timed.
    native();
    ours();

    println!(
        "sqlite-vec, clustered set ({} × {}), {per_slice} queries per slice, k = 10: \
         {rounds} round(s) of {slices} slices per side, ABBA order",
        train.len(),
        train.dim()
    );
    let mut medians = Vec::with_capacity(rounds);
    for round in 1..=rounds {
        let (mut native_s, mut ours_s, mut ratios) = (0.0, 0.0, Vec::new());
        for pair in 0..slices {
            let (n, o) = if pair % 2 == 0 {
                let n = native();
                (n, ours())
            } else {
                let o = ours();
                (native(), o)
            };
            native_s += n.as_secs_f64();
            ours_s += o.as_secs_f64();
            // QPS ratio, ours over native: the native time over ours.
            ratios.push(n.as_secs_f64() / o.as_secs_f64());
        }
        let m = median(&mut ratios);
        medians.push(m);
        let per_query = |total: f64| total / (slices * per_slice) as f64 * 1e6;
        println!(
            "round {round}: bare loop {:.1} µs/query, ragdbeval {:.1} µs/query; QPS ratio \
             (ragdbeval / bare loop), median over {slices} slice pairs: {m:.3} \
             (slices {:.3} to {:.3})",
            per_query(native_s),
            per_query(ours_s),
            ratios[0],
            ratios[ratios.len() - 1]
        );
    }
    let (mean, spread) = mean_and_spread(&medians);
    println!(
        "QPS ratio over {rounds} round(s): mean {mean:.3}, spread ±{:.1} % (targets: ≥ 0.95, \
         spread within ±5 %)",
        spread * 100.0
    );
}
