//! Criterion microbenchmarks of the hot paths: distance kernels, ground-truth blocks, recall
//! computation and latency recording.
//!
//! Run: `cargo bench --bench core` (add `-- --quick` for a fast pass).

use std::hint::black_box;
use std::time::Duration;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use ragdbeval::distance::{Distance, dot, squared_l2};
use ragdbeval::groundtruth::{BaseSet, exact_knn};
use ragdbeval::metrics::latency::{new_histogram, record};
use ragdbeval::metrics::quality::{QueryInput, score_query};
use ragdbeval::synthetic::SplitMix64;

fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = SplitMix64::new(seed);
    (0..n).map(|_| rng.next_f32() * 2.0 - 1.0).collect()
}

fn distances(c: &mut Criterion) {
    let mut g = c.benchmark_group("distance");
    for dim in [96usize, 128, 960] {
        let a = random(dim, 1);
        let b = random(dim, 2);
        g.throughput(Throughput::Elements(dim as u64));
        g.bench_with_input(BenchmarkId::new("squared_l2", dim), &dim, |bench, _| {
            bench.iter(|| squared_l2(black_box(&a), black_box(&b)))
        });
        g.bench_with_input(BenchmarkId::new("dot", dim), &dim, |bench, _| {
            bench.iter(|| dot(black_box(&a), black_box(&b)))
        });
        g.bench_with_input(BenchmarkId::new("angular", dim), &dim, |bench, _| {
            bench.iter(|| Distance::Angular.between(black_box(&a), black_box(&b)))
        });
    }
    g.finish();
}

fn ground_truth(c: &mut Criterion) {
    let mut g = c.benchmark_group("ground_truth");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(5));
    let dim = 128;
    let n = 100_000;
    let nq = 256;
    let base = random(n * dim, 3);
    let queries = random(nq * dim, 4);
    // Distance computations per second: queries × base vectors.
    g.throughput(Throughput::Elements((n * nq) as u64));
    for distance in [Distance::Euclidean, Distance::Angular] {
        g.bench_function(format!("{distance}-256q-100k-128d-k100"), |bench| {
            bench.iter(|| {
                exact_knn(
                    &BaseSet {
                        vectors: &base,
                        ids: None,
                        dim,
                    },
                    black_box(&queries),
                    distance,
                    100,
                    &|_| {},
                )
            })
        });
    }
    g.finish();
}

fn recall(c: &mut Criterion) {
    let gt_ids: Vec<u64> = (0..100).collect();
    let gt_d: Vec<f32> = (0..100).map(|i| i as f32).collect();
    let returned: Vec<u64> = (0..100)
        .map(|i| if i % 3 == 0 { i + 1000 } else { i })
        .collect();
    let returned_d: Vec<f32> = returned.iter().map(|&i| i as f32).collect();
    c.bench_function("score_query k=100", |bench| {
        bench.iter(|| {
            score_query(
                black_box(&QueryInput {
                    gt_ids: &gt_ids,
                    gt_distances: &gt_d,
                    returned_ids: &returned,
                    returned_distances: &returned_d,
                }),
                100,
                100,
            )
        })
    });
}

fn histogram(c: &mut Criterion) {
    let mut h = new_histogram();
    let mut i = 0u64;
    c.bench_function("hdrhistogram record", |bench| {
        bench.iter(|| {
            i = i.wrapping_add(7919);
            record(
                &mut h,
                Duration::from_nanos(black_box(1000 + i % 1_000_000)),
            );
        })
    });
}

criterion_group!(benches, distances, ground_truth, recall, histogram);
criterion_main!(benches);
