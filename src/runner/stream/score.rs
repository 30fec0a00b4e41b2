//! Scoring a stream step: every search against the exact truth of its interval, then the
//! step's figures by stage of the stream and second by second.

use std::time::Duration;

use super::{SecondSample, Written};
use crate::dataset::Dataset;
use crate::groundtruth::stream::{SearchEvent, SearchScore, StreamLog, StreamTruth};
use crate::metrics::latency::LatencySummary;
use crate::results::{StageRecall, StreamSecond};
use crate::runbook::{ResolvedStream, StreamOp};

/// Scores every search exactly against what a correct engine could have returned during
/// its interval.
pub(super) fn score_searches(
    dataset: &Dataset,
    k: usize,
    stream: &ResolvedStream,
    written: &Written,
    searched: &[SearchEvent],
) -> Vec<SearchScore> {
    let log = StreamLog {
        train: &dataset.train,
        queries: &dataset.test,
        distance: dataset.distance,
        initial: &stream.initial,
        writes: &written.events,
        k,
    };
    let mut truth = StreamTruth::new(&log);
    let mut used: Vec<usize> = searched.iter().map(|s| s.query).collect();
    used.sort_unstable();
    used.dedup();
    truth.prepare(&used);
    searched.iter().map(|s| truth.score(s)).collect()
}

/// A search's latency: from just before its call to just after its return.
pub(super) fn latency_of(s: &SearchEvent) -> Duration {
    Duration::from_nanos(s.received - s.sent)
}

/// The mean of `values`; NaN for none.
pub(super) fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    if n == 0 { f64::NAN } else { sum / n as f64 }
}

/// Recall of the searches sent while the stream was 40-50 %, 70-80 % and 90-100 % done (the
/// share of writes acknowledged before the search was sent).
pub(super) fn recall_at_stages(
    written: &Written,
    searched: &[SearchEvent],
    scores: &[SearchScore],
) -> Vec<StageRecall> {
    // Progress of the stream at an instant: the share of writes acknowledged before it.
    let acks: Vec<u64> = written.events.iter().map(|w| w.acked).collect();
    let progress = |t: u64| acks.partition_point(|a| *a < t) as f64 / acks.len().max(1) as f64;
    [50u32, 80, 100]
        .iter()
        .map(|&stage| {
            let (lo, hi) = (f64::from(stage - 10) / 100.0, f64::from(stage) / 100.0);
            let picked: Vec<f64> = searched
                .iter()
                .zip(scores)
                .filter(|(s, _)| {
                    let p = progress(s.sent);
                    p > lo && p <= hi
                })
                .map(|(_, sc)| sc.recall())
                .collect();
            StageRecall {
                stage,
                searches: picked.len(),
                recall: (!picked.is_empty()).then(|| mean(picked.iter().copied())),
            }
        })
        .collect()
}

/// The step second by second: its searches, writes and resources.
pub(super) fn timeline(
    written: &Written,
    searched: &[SearchEvent],
    scores: &[SearchScore],
    per_second: &[SecondSample],
) -> Vec<StreamSecond> {
    let acks = written.events.iter().map(|w| w.acked);
    let seconds = (searched.iter().map(|s| s.sent).chain(acks))
        .max()
        .map_or(0, |t| t / 1_000_000_000 + 1);
    (0..seconds)
        .map(|sec| {
            let within = |t: u64| t / 1_000_000_000 == sec;
            let here: Vec<usize> = (0..searched.len())
                .filter(|&i| within(searched[i].sent))
                .collect();
            let lat = LatencySummary::of(here.iter().map(|&i| latency_of(&searched[i])));
            let calls: Vec<Duration> = written
                .events
                .iter()
                .filter(|w| within(w.acked))
                .map(|w| Duration::from_nanos(w.acked - w.issued))
                .collect();
            let wlat = LatencySummary::of(calls.iter().copied());
            let used = per_second.get(sec as usize);
            StreamSecond {
                second: sec,
                searches: here.len(),
                p50_ms: lat.p50_ms,
                p99_ms: lat.p99_ms,
                recall: mean(here.iter().map(|&i| scores[i].recall())),
                stale_hits: here.iter().map(|&i| scores[i].stale).sum(),
                points_written: calls.len(),
                write_p50_ms: wlat.p50_ms,
                write_p99_ms: wlat.p99_ms,
                client_cpu_percent: used.map_or(f64::NAN, |u| u.resources.client.mean_cpu_percent),
                client_rss_mb: used.map_or(f64::NAN, |u| {
                    u.resources.client.peak_memory_bytes() as f64 / 1e6
                }),
                server_cpu_percent: used
                    .and_then(|u| u.resources.engine.as_ref())
                    .map(|e| e.mean_cpu_percent),
                server_memory_mb: used
                    .and_then(|u| u.resources.engine.as_ref())
                    .map(|e| e.peak_memory_bytes() as f64 / 1e6),
                index_lag: used
                    .and_then(|u| u.index)
                    .map(|p| p.points.saturating_sub(p.indexed_vectors)),
            }
        })
        .collect()
}

/// The step's inserts (puts of ids not in the initial set) and deletes.
pub(super) fn insert_and_delete_counts(stream: &ResolvedStream) -> (usize, usize) {
    let count = |f: fn(&StreamOp, &ResolvedStream) -> bool| {
        stream.ops.iter().filter(|op| f(op, stream)).count()
    };
    let inserts = count(|op, s| {
        op.row.is_some()
            && s.initial
                .binary_search_by_key(&op.id, |(id, _)| *id)
                .is_err()
    });
    let deletes = count(|op, _| op.row.is_none());
    (inserts, deletes)
}
