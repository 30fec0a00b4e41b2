//! ragdbeval's single-client loop against a bare DuckDB loop, for the `duckdb` engine: same
//! database and connection, same queries, same `ef_search`. The bare loop is a prepared
//! `SELECT id FROM t ORDER BY array_distance(v, ?::FLOAT[dim]) LIMIT k`, each query vector
//! written as array text as the adapter writes it. Target: ragdbeval's QPS within 5 % of the
//! bare loop's (ratio ≥ 0.95).
//!
//! As in `benches/overhead.rs`, the two sides alternate in short slices (one pass over the
//! query set each) in ABBA order, and each round reports the median ratio of its slice pairs.
//!
//! Run: `cargo bench --features duckdb --bench duckdb_overhead` (env: ROUNDS, default 3;
//! SLICES per round, default 40). Under `cargo test` (no `--bench`): one round of 2 slice
//! pairs on 5,000 points, to keep it from rotting.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ragdbeval::adapters::duckdb::DuckDb;
use ragdbeval::engine::{CollectionSpec, ConnectOptions, PointId, VectorEngine};
use ragdbeval::params::{ParamMap, ParamValue};
use ragdbeval::runner::load::single_client_iterations;
use ragdbeval::synthetic::SyntheticSpec;

mod common;
use common::{env, mean_and_spread, median};

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (rounds, slices) = if full {
        (env("ROUNDS", 3).max(1), env("SLICES", 40).max(2))
    } else {
        println!("duckdb_overhead: test mode (one round of 2 slice pairs on 5,000 points)");
        (1, 2)
    };
    let mut spec = SyntheticSpec::demo();
    if !full {
        spec.n = 5_000;
        spec.queries = 100;
    }
    let (train, test) = spec.generate();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut engine = DuckDb::open(&ConnectOptions::default()).expect("duckdb with vss");
    let mut build = ParamMap::new();
    build.insert("m".into(), ParamValue::Int(16));
    build.insert("ef_construction".into(), ParamValue::Int(128));
    engine
        .create(&CollectionSpec {
            name: "overhead".into(),
            dim: train.dim(),
            distance: spec.distance,
            expected_points: train.len(),
            build_params: build,
            work_dir: dir.path().to_path_buf(),
            attributes: None,
            element_type: Default::default(),
        })
        .expect("create");
    let ids: Vec<PointId> = (0..train.len() as PointId).collect();
    engine.insert_batch(&ids, train.as_flat()).expect("insert");
    engine.wait_until_ready().expect("index");
    let mut search = ParamMap::new();
    search.insert("ef_search".into(), ParamValue::Int(64));
    engine.set_search_params(&search).expect("search params");

    let nq = test.len();
    let native = || -> Duration {
        let start = Instant::now();
        black_box(
            engine
                .native_query_loop(test.as_flat(), 10)
                .expect("bare query loop"),
        );
        start.elapsed()
    };
    let ours = || -> Duration {
        single_client_iterations(&engine, &test, 10, nq as u64).expect("closed loop")
    };
    // Warm both paths (prepared statements, the connection) before anything is timed.
    native();
    ours();

    println!(
        "duckdb, {} × {}, {nq} queries per slice, k = 10, ef_search = 64: {rounds} round(s) \
         of {slices} slices per side, ABBA order",
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
            ratios.push(n.as_secs_f64() / o.as_secs_f64());
        }
        let m = median(&mut ratios);
        medians.push(m);
        let per_query = |total: f64| total / (slices * nq) as f64 * 1e6;
        println!(
            "round {round}: bare {:.1} µs/query, ragdbeval {:.1} µs/query; QPS ratio \
             (ragdbeval / bare), median over {slices} slice pairs: {m:.3}",
            per_query(native_s),
            per_query(ours_s),
        );
    }
    let (mean, spread) = mean_and_spread(&medians);
    println!(
        "QPS ratio over {rounds} round(s): mean {mean:.3}, spread ±{:.1} % (target: ≥ 0.95)",
        spread * 100.0
    );
}
