//! ragdbeval's single-client loop against the engine's own in-process loop, for the embedded
//! Qdrant engine: same shard, same queries, same parameters. Target: ragdbeval's QPS within
//! 5 % of the native loop's (ratio ≥ 0.95).
//!
//! Two loops timed one after the other drift apart with the machine (frequency, neighbours
//! on a shared host): blocks of several seconds each gave ratios from 0.74 to 1.08. So the two
//! sides alternate in short slices (one pass over the query set each), in ABBA order so that
//! a steady drift cancels, and the ratio is taken per pair of slices; each round reports the
//! median ratio, and the rounds their spread.
//!
//! Run: `cargo bench --bench overhead` (env: ROUNDS, default 3; SLICES per round, default 60).

use std::hint::black_box;
use std::time::{Duration, Instant};

use ragdbeval::adapters::qdrant_edge::QdrantEdge;
use ragdbeval::engine::{CollectionSpec, ConnectOptions, PointId, VectorEngine};
use ragdbeval::params::{ParamMap, ParamValue};
use ragdbeval::runner::load::single_client_iterations;
use ragdbeval::synthetic::SyntheticSpec;

mod common;
use common::{env, mean_and_spread, median};

fn main() {
    // `cargo bench` passes `--bench`; nothing else is accepted.
    let (rounds, slices) = (env("ROUNDS", 3).max(1), env("SLICES", 60).max(2));
    let spec = SyntheticSpec::demo();
    let (train, test) = spec.generate();
    let dir = tempfile::tempdir().expect("temp dir");
    let opts = ConnectOptions {
        batch_size: 1000,
        upload_parallel: 1,
        ..ConnectOptions::default()
    };
    let mut engine = QdrantEdge::new(&opts);
    let mut build = ParamMap::new();
    build.insert("m".into(), ParamValue::Int(16));
    build.insert("ef_construct".into(), ParamValue::Int(128));
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
    search.insert("hnsw_ef".into(), ParamValue::Int(128));
    engine.set_search_params(&search).expect("search params");

    let nq = test.len();
    let native = || -> Duration {
        let start = Instant::now();
        black_box(
            engine
                .native_query_loop(test.as_flat(), 10)
                .expect("native query"),
        );
        start.elapsed()
    };
    let ours = || -> Duration {
        single_client_iterations(&engine, &test, 10, nq as u64).expect("closed loop")
    };
    // Warm both paths (caches, the shard's lazily opened state) before anything is timed.
    native();
    ours();

    println!(
        "qdrant-edge, demo set ({} × {}), {nq} queries per slice, k = 10, hnsw_ef = 128: \
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
        let per_query = |total: f64| total / (slices * nq) as f64 * 1e6;
        println!(
            "round {round}: native {:.1} µs/query, ragdbeval {:.1} µs/query; QPS ratio \
             (ragdbeval / native), median over {slices} slice pairs: {m:.3} \
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
