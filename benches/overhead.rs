//! ragdbeval's single-client loop against the engine's own in-process loop, for the embedded
//! Qdrant engine: same shard, same queries, same parameters. Target: ragdbeval's QPS within
//! 5 % of the native loop's.
//!
//! Run: `cargo bench --bench overhead`. Compare the two `time:` lines (per query).

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ragdbeval::adapters::qdrant_edge::QdrantEdge;
use ragdbeval::engine::{CollectionSpec, ConnectOptions, PointId, VectorEngine};
use ragdbeval::params::{ParamMap, ParamValue};
use ragdbeval::runner::load::single_client_iterations;
use ragdbeval::synthetic::SyntheticSpec;

fn overhead(c: &mut Criterion) {
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
    let mut g = c.benchmark_group("qdrant_edge_single_client");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(8));
    g.bench_function("native_query_loop", |b| {
        b.iter_custom(|iters| {
            // Whole passes over the query set, then a partial one.
            let start = Instant::now();
            let mut left = iters as usize;
            while left > 0 {
                let n = left.min(nq);
                black_box(
                    engine
                        .native_query_loop(test.rows(0, n), 10)
                        .expect("native query"),
                );
                left -= n;
            }
            start.elapsed()
        })
    });
    g.bench_function("ragdbeval_closed_loop", |b| {
        b.iter_custom(|iters| {
            single_client_iterations(&engine, &test, 10, iters).expect("closed loop")
        })
    });
    g.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);
