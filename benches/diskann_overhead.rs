//! ragdbeval's single-client loop against a bare loop over DiskANN's own k-NN search: same
//! index, same queries, same `l_search`. Target: ragdbeval's QPS within 5 % of the
//! bare loop's (ratio ≥ 0.95).
//!
//! As in `benches/overhead.rs` (qdrant-edge), the two sides alternate in short slices (one
//! pass over the query set each) in ABBA order, so that a steady drift of the machine cancels;
//! each round reports the median of its per-pair ratios, and the rounds their spread.
//!
//! Run: `cargo bench --bench diskann_overhead --features diskann` (env: ROUNDS, default 3; SLICES per round,
//! default 60) on the demo set. Without `--bench` (as `cargo test` runs it): one short round
//! on 5,000 points, which still checks that both loops return k hits per query.

use std::hint::black_box;
use std::time::{Duration, Instant};

use ragdbeval::adapters::diskann::DiskAnn;
use ragdbeval::engine::{CollectionSpec, PointId, VectorEngine};
use ragdbeval::params::{ParamMap, ParamValue};
use ragdbeval::runner::load::single_client_iterations;
use ragdbeval::synthetic::SyntheticSpec;

mod common;
use common::{env, mean_and_spread, median};

const K: usize = 10;
const L_SEARCH: i64 = 100;

/// The engine with the set's train vectors, searched with `l_search`.
fn loaded(spec: &SyntheticSpec, train: &ragdbeval::vectors::Vectors) -> DiskAnn {
    let mut engine = DiskAnn::default();
    let mut build = ParamMap::new();
    build.insert("max_degree".into(), ParamValue::Int(64));
    build.insert("l_build".into(), ParamValue::Int(100));
    engine
        .create(&CollectionSpec {
            name: "overhead".into(),
            dim: train.dim(),
            distance: spec.distance,
            expected_points: train.len(),
            build_params: build,
            work_dir: std::env::temp_dir(),
            attributes: None,
            element_type: Default::default(),
        })
        .expect("create");
    let ids: Vec<PointId> = (0..train.len() as PointId).collect();
    engine.insert_batch(&ids, train.as_flat()).expect("insert");
    engine.wait_until_ready().expect("index");
    let mut search = ParamMap::new();
    search.insert("l_search".into(), ParamValue::Int(L_SEARCH));
    engine.set_search_params(&search).expect("search params");
    engine
}

fn main() {
    let full = std::env::args().any(|a| a == "--bench");
    let (rounds, slices) = if full {
        (env("ROUNDS", 3).max(1), env("SLICES", 60).max(2))
    } else {
        println!(
            "diskann_overhead: test mode (one short round on 5,000 points; --bench for the real run)"
        );
        (1, 4)
    };
    let spec = SyntheticSpec {
        n: if full { 20_000 } else { 5_000 },
        ..SyntheticSpec::demo()
    };
    let (train, test) = spec.generate();
    let engine = loaded(&spec, &train);

    let nq = test.len();
    let native = || -> Duration {
        let start = Instant::now();
        let hits = engine
            .native_query_loop(test.as_flat(), K)
            .expect("native query");
        assert_eq!(black_box(hits), nq * K, "the bare loop lost hits");
        start.elapsed()
    };
    let ours = || -> Duration {
        single_client_iterations(&engine, &test, K, nq as u64).expect("closed loop")
    };
    // ragdbeval's path returns what the bare loop returns.
    let mut out = Vec::new();
    engine.search(test.row(0), K, &mut out).expect("search");
    assert_eq!(out.len(), K, "ragdbeval's search lost hits");
    // Warm both paths before anything is timed.
    native();
    ours();

    println!(
        "diskann, clustered set ({} × {}), {nq} queries per slice, k = {K}, l_search = \
         {L_SEARCH}: {rounds} round(s) of {slices} slices per side, ABBA order",
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
