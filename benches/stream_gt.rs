//! Streaming ground truth against static ground truth (target: at most 2×).
//!
//! Generates a uniform base of `N` × `D` (default 1M × 128), a stream of `W` writes (default
//! 100k: half inserts of new rows, half deletes of random initial points, interleaved, one
//! every 10 µs, each in flight for 5 µs) and `S` searches (default 10k, each a different query,
//! sent at even times over the stream, 200 µs each, every one returning its K ids from the
//! initial set). Then times, `RUNS` times interleaved:
//!
//! - static: the exact top-K of the S queries over all N + W/2 rows (the kernel alone);
//! - streaming: `StreamTruth` over the same writes: indexing the log, one kernel pass over
//!   every row ever live, and scoring every search.
//!
//! Run with `scripts/stream_gt_timing.sh` (or `cargo bench --bench stream_gt`); N, D, W, S,
//! K and RUNS come from the environment. Without `--bench` (as `cargo test` runs it): one run
//! on 20,000 × 32 with 2,000 writes and 200 searches, said on stdout.

use std::time::Instant;

use ragdbeval::distance::Distance;
use ragdbeval::groundtruth::stream::{SearchEvent, StreamLog, StreamTruth, WriteEvent, WriteOp};
use ragdbeval::groundtruth::{BaseSet, exact_knn};
use ragdbeval::rng::SplitMix64;
use ragdbeval::types::PointId;
use ragdbeval::vectors::Vectors;

mod common;
use common::env;

fn uniform(rng: &mut SplitMix64, rows: usize, dim: usize) -> Vectors {
    let data = (0..rows * dim)
        .map(|_| (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32)
        .collect();
    Vectors::new(data, dim).expect("whole rows")
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test` passes nothing, and gets the short run.
    let (n, dim, writes, searches, k, runs) = if std::env::args().any(|a| a == "--bench") {
        (
            env("N", 1_000_000),
            env("D", 128),
            env("W", 100_000),
            env("S", 10_000),
            env("K", 10),
            env("RUNS", 2),
        )
    } else {
        println!("stream_gt: test mode (20,000 × 32, one run; --bench for the real run)");
        (20_000, 32, 2_000, 200, 10, 1)
    };
    let inserts = writes / 2;
    let deletes = writes - inserts;
    let mut rng = SplitMix64::new(7);
    let train = uniform(&mut rng, n + inserts, dim);
    let queries = uniform(&mut rng, searches, dim);
    let initial: Vec<(PointId, usize)> = (0..n).map(|i| (i as PointId, i)).collect();

    // Deletes: distinct random initial ids (partial Fisher-Yates).
    let mut pool: Vec<PointId> = (0..n as PointId).collect();
    for j in 0..deletes {
        let pick = j + rng.below((n - j) as u64) as usize;
        pool.swap(j, pick);
    }
    let mut events = Vec::with_capacity(writes);
    let (mut next_insert, mut next_delete) = (0usize, 0usize);
    for w in 0..writes {
        let issued = w as u64 * 10_000;
        let op = if (w % 2 == 0 && next_insert < inserts) || next_delete >= deletes {
            next_insert += 1;
            let row = n + next_insert - 1;
            (row as PointId, WriteOp::Put { row })
        } else {
            next_delete += 1;
            (pool[next_delete - 1], WriteOp::Delete)
        };
        events.push(WriteEvent {
            id: op.0,
            op: op.1,
            issued,
            acked: issued + 5_000,
        });
    }
    let span = writes as u64 * 10_000;
    let search_events: Vec<SearchEvent> = (0..searches)
        .map(|s| {
            let sent = span * s as u64 / searches as u64;
            SearchEvent {
                query: s,
                sent,
                received: sent + 200_000,
                ids: (0..k as PointId)
                    .map(|i| (s as PointId * 31 + i) % n as PointId)
                    .collect(),
            }
        })
        .collect();
    println!(
        "{n} x {dim} base, {inserts} inserts + {deletes} deletes streamed, {searches} searches, k = {k}; \
         static truth over {} rows",
        n + inserts
    );
    let mut ratios = Vec::new();
    for run in 1..=runs {
        let started = Instant::now();
        let truth = exact_knn(
            &BaseSet {
                vectors: train.as_flat(),
                ids: None,
                dim,
            },
            queries.as_flat(),
            Distance::Euclidean,
            k,
            &|_| {},
        );
        let static_s = started.elapsed().as_secs_f64();
        std::hint::black_box(&truth);

        let started = Instant::now();
        let log = StreamLog {
            train: &train,
            queries: &queries,
            distance: Distance::Euclidean,
            initial: &initial,
            writes: &events,
            k,
        };
        let mut stream = StreamTruth::new(&log);
        let used: Vec<usize> = (0..searches).collect();
        stream.prepare(&used);
        let recall: f64 = search_events
            .iter()
            .map(|s| stream.score(s).recall())
            .sum::<f64>()
            / searches as f64;
        let stream_s = started.elapsed().as_secs_f64();
        ratios.push(stream_s / static_s);
        println!(
            "run {run}: static {static_s:.3} s, streaming {stream_s:.3} s, ratio {:.2} \
             (mean recall of the made-up answers {recall:.4})",
            stream_s / static_s
        );
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "streaming / static: median {:.2} over {runs} runs (target: at most 2.00)",
        ratios[ratios.len() / 2]
    );
}
