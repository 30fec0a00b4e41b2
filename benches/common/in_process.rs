//! The in-process comparisons: ragdbeval's single-client search loop against a bare loop over
//! the library's own search call, on the same index, queries and parameters. Target:
//! ragdbeval's QPS within 5 % of the bare loop's (ratio ≥ 0.95).
//!
//! Each slice is one pass of one side over the query rows; the sides alternate in ABBA order
//! so that a steady drift of the machine cancels, the ratio is taken per pair of slices, each
//! round reports the median ratio and the rounds their spread.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use ragdbeval::distance::Distance;
use ragdbeval::engine::{CollectionSpec, PointId, Query, VectorEngine};
use ragdbeval::params::{ParamMap, ParamValue};
use ragdbeval::runner::load::single_client_iterations;
use ragdbeval::synthetic::SyntheticSpec;
use ragdbeval::vectors::Vectors;

use super::{env, mean_and_spread, median};

/// Neighbours asked for per query, on both sides.
pub const K: usize = 10;

/// What an in-process comparison runs on, and how long.
#[derive(Clone)]
pub struct Plan {
    pub spec: SyntheticSpec,
    pub rounds: usize,
    /// Slice pairs per round.
    pub slices: usize,
    /// Query rows per slice (the first rows of the set's queries).
    pub queries: usize,
}

/// The plan of bench `bench`: under `cargo bench` (which passes `--bench`) the demo set
/// (20,000 × 64, 500 queries), ROUNDS (default 3), SLICES (default `slices`) and QUERIES per
/// slice (default `queries`, at most 500) from the environment; otherwise (as `cargo test`
/// runs a bench) one round of 4 slice pairs on 5,000 points and 100 queries, said on stdout.
pub fn plan(bench: &str, slices: usize, queries: usize) -> Plan {
    let spec = SyntheticSpec::demo();
    if std::env::args().any(|a| a == "--bench") {
        Plan {
            rounds: env("ROUNDS", 3).max(1),
            slices: env("SLICES", slices).max(2),
            queries: env("QUERIES", queries).clamp(1, spec.queries),
            spec,
        }
    } else {
        println!("{bench}: test mode (one short round on 5,000 points; --bench for the real run)");
        Plan {
            spec: SyntheticSpec {
                n: 5_000,
                queries: 100,
                ..spec
            },
            rounds: 1,
            slices: 4,
            queries: 100,
        }
    }
}

/// Integer parameters as a parameter map.
pub fn params(pairs: &[(&str, i64)]) -> ParamMap {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_string(), ParamValue::Int(*v)))
        .collect()
}

/// Creates `engine`'s collection `spec`, loads `train`, waits for the index and sets the
/// `search` parameters. Panics with the step that failed.
pub fn load(
    engine: &mut dyn VectorEngine,
    spec: &CollectionSpec,
    train: &Vectors,
    search: &ParamMap,
) {
    engine.create(spec).expect("create the collection");
    let ids: Vec<PointId> = (0..train.len() as PointId).collect();
    engine
        .insert_batch(&ids, train.as_flat())
        .expect("insert the points");
    engine.wait_until_ready().expect("build the index");
    engine.set_search_params(search).expect("search parameters");
}

/// The collection a comparison loads: `train`'s dimension and size, `distance`, the `build`
/// parameters, in `work_dir`.
pub fn collection(
    distance: Distance,
    train: &Vectors,
    build: ParamMap,
    work_dir: &Path,
) -> CollectionSpec {
    CollectionSpec {
        name: "overhead".into(),
        dim: train.dim(),
        distance,
        expected_points: train.len(),
        build_params: build,
        work_dir: work_dir.to_path_buf(),
        attributes: None,
        element_type: Default::default(),
    }
}

/// Runs the comparison and prints it: `bare(rows)` is the library's own loop over the query
/// rows (returning the hits it read), ragdbeval's side the single-client closed loop over the
/// same rows. Both must return k hits per query; both are run once untimed first.
pub fn compare(
    label: &str,
    plan: &Plan,
    engine: &dyn VectorEngine,
    test: &Vectors,
    bare: &dyn Fn(&[f32]) -> usize,
) {
    let nq = plan.queries.min(test.len());
    let queries = Vectors::new(test.rows(0, nq).to_vec(), test.dim()).expect("query rows");
    let bare_slice = || -> Duration {
        let start = Instant::now();
        let hits = black_box(bare(queries.as_flat()));
        let elapsed = start.elapsed();
        assert_eq!(hits, nq * K, "the bare loop lost hits");
        elapsed
    };
    let ours_slice = || -> Duration {
        single_client_iterations(engine, &queries, K, nq as u64).expect("closed loop")
    };
    let mut out = Vec::new();
    engine
        .search(Query::new(queries.row(0), K), &mut out)
        .expect("search");
    assert_eq!(out.len(), K, "ragdbeval's search lost hits");
    bare_slice();
    ours_slice();

    println!(
        "{label}, {nq} queries per slice, k = {K}: {} round(s) of {} slices per side, ABBA order",
        plan.rounds, plan.slices
    );
    let medians: Vec<f64> = (1..=plan.rounds)
        .map(|round| abba_round(round, plan.slices, nq, &bare_slice, &ours_slice))
        .collect();
    let (mean, spread) = mean_and_spread(&medians);
    println!(
        "QPS ratio over {} round(s): mean {mean:.3}, spread ±{:.1} % (targets: ≥ 0.95, spread \
         within ±5 %)",
        plan.rounds,
        spread * 100.0
    );
}

/// One round of `slices` ABBA slice pairs; prints the round and returns its median ratio.
fn abba_round(
    round: usize,
    slices: usize,
    nq: usize,
    bare: &dyn Fn() -> Duration,
    ours: &dyn Fn() -> Duration,
) -> f64 {
    let (mut bare_s, mut ours_s, mut ratios) = (0.0, 0.0, Vec::with_capacity(slices));
    for pair in 0..slices {
        let (b, o) = if pair % 2 == 0 {
            let b = bare();
            (b, ours())
        } else {
            let o = ours();
            (bare(), o)
        };
        bare_s += b.as_secs_f64();
        ours_s += o.as_secs_f64();
        // QPS ratio, ragdbeval over the bare loop: the bare loop's time over ragdbeval's.
        ratios.push(b.as_secs_f64() / o.as_secs_f64());
    }
    let m = median(&mut ratios);
    let per_query = |total: f64| total / (slices * nq) as f64 * 1e6;
    println!(
        "round {round}: bare loop {:.1} µs/query, ragdbeval {:.1} µs/query; QPS ratio \
         (ragdbeval / bare loop), median over {slices} slice pairs: {m:.3} (slices {:.3} to \
         {:.3})",
        per_query(bare_s),
        per_query(ours_s),
        ratios[0],
        ratios[ratios.len() - 1]
    );
    m
}
