//! The runbook's `stream` step: one writer thread applies the step's writes while searcher
//! threads search in a closed loop, and every search is then scored exactly against what a
//! correct engine could have returned during its interval ([`crate::groundtruth::stream`]).
//!
//! Times are taken on the client: a search's interval runs from just before the call to just
//! after it returns, a write's from just before its call to its acknowledgement (the call's
//! return). Both are therefore wider than the engine's own, which only ever makes the scoring
//! more lenient to the engine, never wrong against it.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

mod freshness;
mod score;

use freshness::{Announcer, ProbeNote, Samples, Space, freshness_samples, probe_writes};
use score::{
    insert_and_delete_counts, latency_of, mean, recall_at_stages, score_searches, timeline,
};

use super::load::Pacer;
use super::{RunError, RunScope};
use crate::dataset::Dataset;
use crate::engine::{
    ConcurrentWrites, EngineError, IndexProgress, Neighbor, PointId, Query, VectorEngine,
};
use crate::groundtruth::stream::{SearchEvent, WriteEvent, WriteOp};
use crate::metrics::latency::LatencySummary;
use crate::params::ParamMap;
use crate::resources::{PhaseResources, Sampler, Watch};
use crate::results::{StreamFreshness, StreamStep};
use crate::runbook::{ResolvedStream, StreamOp};

const NANOS: f64 = 1e9;

/// The writes of `engine` that may run beside searches, or the error that says it cannot.
pub fn writer_of(
    engine: &dyn VectorEngine,
    runbook_step: usize,
) -> Result<&dyn ConcurrentWrites, RunError> {
    engine.concurrent_writes().ok_or_else(|| {
        RunError::Setup(format!(
            "runbook step {runbook_step} is a stream step, but the {} adapter cannot write and \
             search at the same time from separate threads; run the runbook on an engine that \
             can (`ragdbeval engines`), or use insert/update/delete steps",
            engine.name()
        ))
    })
}

/// One write call: consecutive ops of one kind, at most `batch_size` of them.
fn calls(ops: &[StreamOp], batch_size: usize) -> Vec<&[StreamOp]> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < ops.len() {
        let deletes = ops[start].row.is_none();
        let mut end = start + 1;
        while end < ops.len() && end - start < batch_size && ops[end].row.is_none() == deletes {
            end += 1;
        }
        out.push(&ops[start..end]);
        start = end;
    }
    out
}

/// What the monitor saw in one second of the step.
#[derive(Default)]
struct SecondSample {
    resources: PhaseResources,
    /// The engine's index progress at the end of the second, where it reports one.
    index: Option<IndexProgress>,
}

/// Samples the client and engine second by second (aligned on `origin`) until `done`: one
/// [`Sampler`] per second, each read every `interval`, and the engine's index progress at the
/// end of each second.
fn per_second_samples(
    engine: &dyn VectorEngine,
    watch: Watch,
    interval: Duration,
    origin: Instant,
    done: &AtomicBool,
) -> Vec<SecondSample> {
    let mut seconds = Vec::new();
    while !done.load(Ordering::Acquire) {
        let sampler = Sampler::start(watch, interval);
        let end = origin + Duration::from_secs(seconds.len() as u64 + 1);
        loop {
            let now = Instant::now();
            if now >= end || done.load(Ordering::Acquire) {
                break;
            }
            std::thread::sleep((end - now).min(Duration::from_millis(10)));
        }
        seconds.push(SecondSample {
            resources: sampler.stop(),
            index: engine.index_progress(),
        });
    }
    seconds
}

/// What the writer saw.
struct Written {
    events: Vec<WriteEvent>,
    call_latencies: Vec<Duration>,
}

/// Applies the writes at the step's rate, recording each call's issue and acknowledgement.
fn write_all(
    writer: &dyn ConcurrentWrites,
    dataset: &Dataset,
    stream: &ResolvedStream,
    (origin, sampled): (Instant, &Samples),
    probes: std::sync::mpsc::Sender<ProbeNote>,
) -> Result<Written, EngineError> {
    let mut announcer = Announcer::new(probes, sampled);
    let mut op_index = 0usize;
    let ns = |t: Instant| t.duration_since(origin).as_nanos() as u64;
    let dim = dataset.train.dim();
    let mut written = Written {
        events: Vec::with_capacity(stream.ops.len()),
        call_latencies: Vec::new(),
    };
    let mut vectors: Vec<f32> = Vec::with_capacity(stream.batch_size * dim);
    let mut ids: Vec<PointId> = Vec::with_capacity(stream.batch_size);
    let mut sent_points = 0usize;
    let mut pacer = Pacer::new();
    for call in calls(&stream.ops, stream.batch_size) {
        if let Some(rate) = stream.rate {
            // Open loop: each call at its scheduled time, whether or not the last was late.
            pacer.wait_until(origin + Duration::from_secs_f64(sent_points as f64 / rate));
        }
        ids.clear();
        ids.extend(call.iter().map(|op| op.id));
        let is_delete = call[0].row.is_none();
        if !is_delete {
            vectors.clear();
            for op in call {
                vectors.extend_from_slice(dataset.train.row(op.row.unwrap_or_default()));
            }
        }
        let ops = op_index..op_index + call.len();
        announcer.before_call(ops.clone());
        let issued = Instant::now();
        if is_delete {
            writer.delete(&ids)?;
        } else {
            writer.upsert(&ids, &vectors)?;
        }
        let acked = Instant::now();
        written.call_latencies.push(acked - issued);
        announcer.after_call(ops, &stream.ops, acked);
        op_index += call.len();
        for op in call {
            written.events.push(WriteEvent {
                id: op.id,
                op: op.row.map_or(WriteOp::Delete, |row| WriteOp::Put { row }),
                issued: ns(issued),
                acked: ns(acked),
            });
        }
        sent_points += call.len();
    }
    Ok(written)
}

/// Searches in a closed loop until `stop` (at least once), queries `first, first + step, …` (cycling).
fn search_until(
    engine: &dyn VectorEngine,
    dataset: &Dataset,
    k: usize,
    first: usize,
    step: usize,
    stop: &AtomicBool,
    origin: Instant,
) -> Result<Vec<SearchEvent>, EngineError> {
    let ns = |t: Instant| t.duration_since(origin).as_nanos() as u64;
    let queries = dataset.test.len();
    let mut events = Vec::new();
    let mut out: Vec<Neighbor> = Vec::with_capacity(k);
    let mut q = first % queries;
    // At least one search each, so that a stream shorter than a thread's start-up is still
    // searched (a search sent after the last write is scored like any other).
    loop {
        let sent = Instant::now();
        engine.search(Query::new(dataset.test.row(q), k), &mut out)?;
        let received = Instant::now();
        events.push(SearchEvent {
            query: q,
            sent: ns(sent),
            received: ns(received),
            ids: out.iter().map(|n| n.id).collect(),
        });
        q = (q + step) % queries;
        if stop.load(Ordering::Acquire) {
            break;
        }
    }
    Ok(events)
}

/// What the step's threads recorded, and the first engine error that stopped them.
struct Recorded {
    /// The writer's record; `None` when it stopped early.
    written: Option<Written>,
    searched: Vec<SearchEvent>,
    freshness: StreamFreshness,
    per_second: Vec<SecondSample>,
    failure: Option<EngineError>,
}

/// Runs the step and scores it.
pub fn run_stream(
    engine: &dyn VectorEngine,
    scope: RunScope<'_>,
    params: &ParamMap,
    stream: &ResolvedStream,
    runbook_step: usize,
) -> Result<StreamStep, RunError> {
    let (plan, dataset) = (scope.plan, scope.dataset);
    let writer = writer_of(engine, runbook_step)?;
    let watch = Watch::with_engine(engine.server_pid());
    let step_sampler = Sampler::start(watch, plan.sample_interval);
    let recorded = run_threads(engine, writer, watch, scope, stream);
    let resources = step_sampler.stop();
    let index_after = engine.index_progress();
    if let Some(e) = recorded.failure {
        return Err(RunError::Engine {
            operation: "stream",
            source: e,
        });
    }
    let written = recorded
        .written
        .ok_or_else(|| RunError::Setup("the stream's writer stopped".into()))?;
    let searched = recorded.searched;

    let truth_started = Instant::now();
    let scores = score_searches(dataset, plan.k, stream, &written, &searched);
    let truth_s = truth_started.elapsed().as_secs_f64();

    let first_issue = written.events.first().map_or(0, |w| w.issued);
    let last_ack = written.events.last().map_or(0, |w| w.acked);
    let duration_s = (last_ack.saturating_sub(first_issue)) as f64 / NANOS;
    let per_s = |n: usize| {
        if duration_s > 0.0 {
            n as f64 / duration_s
        } else {
            f64::NAN
        }
    };
    let recall_at_stage = recall_at_stages(&written, &searched, &scores);
    let timeline = timeline(&written, &searched, &scores, &recorded.per_second);
    let (inserts, deletes) = insert_and_delete_counts(stream);
    Ok(StreamStep {
        runbook_step,
        search_params: params.clone(),
        k: plan.k,
        searchers: stream.searchers,
        target_rate: stream.rate,
        batch_size: stream.batch_size,
        inserts,
        updates: stream.ops.len() - inserts - deletes,
        deletes,
        duration_s,
        write_points_per_s: per_s(written.events.len()),
        write_latency: LatencySummary::of(written.call_latencies.iter().copied()),
        searches: searched.len(),
        qps: per_s(searched.len()),
        latency: LatencySummary::of(searched.iter().map(latency_of)),
        recall: mean(scores.iter().map(|s| s.recall())),
        stale_hits: scores.iter().map(|s| s.stale).sum(),
        searches_with_stale_hits: scores.iter().filter(|s| s.stale > 0).count(),
        recall_at_stage,
        truth_s,
        freshness: recorded.freshness,
        resources,
        index_lag_max: timeline.iter().filter_map(|t| t.index_lag).max(),
        index_lag_after: index_after.map(|p| p.points.saturating_sub(p.indexed_vectors)),
        timeline,
        live_points: 0,
    })
}

/// Runs the writer on this thread beside the searchers, the freshness prober and the
/// per-second monitor; the first engine error stops them all.
fn run_threads(
    engine: &dyn VectorEngine,
    writer: &dyn ConcurrentWrites,
    watch: Watch,
    scope: RunScope<'_>,
    stream: &ResolvedStream,
) -> Recorded {
    let (plan, dataset, k) = (scope.plan, scope.dataset, scope.plan.k);
    let all_done = AtomicBool::new(false);
    let stop = AtomicBool::new(false);
    let failure: Mutex<Option<EngineError>> = Mutex::new(None);
    let fail = |e: EngineError| {
        if let Ok(mut slot) = failure.lock() {
            slot.get_or_insert(e);
        }
        stop.store(true, Ordering::Release);
    };
    // Chosen before the clock starts: each choice is a pass over the live set.
    let sampled = freshness_samples(stream, Space::of(dataset), k);
    let origin = Instant::now();
    let (probe_tx, probe_rx) = std::sync::mpsc::channel::<ProbeNote>();
    let (written, searched, freshness, per_second) = std::thread::scope(|threads| {
        let monitor = {
            let all_done = &all_done;
            let interval = plan.sample_interval.min(Duration::from_millis(200));
            threads.spawn(move || per_second_samples(engine, watch, interval, origin, all_done))
        };
        let prober = {
            let fail = &fail;
            let bound = (plan.visibility_timeout, sampled.unobservable);
            threads.spawn(move || {
                probe_writes(engine, dataset, k, probe_rx, bound)
                    .map_err(fail)
                    .ok()
            })
        };
        let searchers: Vec<_> = (0..stream.searchers)
            .map(|j| {
                let (stop, fail) = (&stop, &fail);
                threads.spawn(move || {
                    search_until(engine, dataset, k, j, stream.searchers, stop, origin)
                        .map_err(fail)
                        .unwrap_or_default()
                })
            })
            .collect();
        let written = write_all(writer, dataset, stream, (origin, &sampled), probe_tx)
            .map_err(&fail)
            .ok();
        stop.store(true, Ordering::Release);
        let searched: Vec<SearchEvent> = searchers
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect();
        let freshness = prober.join().ok().flatten().unwrap_or_default();
        all_done.store(true, Ordering::Release);
        let per_second = monitor.join().unwrap_or_default();
        (written, searched, freshness, per_second)
    });
    Recorded {
        written,
        searched,
        freshness,
        per_second,
        failure: failure.into_inner().ok().flatten(),
    }
}

/// Applies a stream step's writes without measuring them (a resumed run replaying its past).
pub fn replay(
    engine: &mut dyn VectorEngine,
    dataset: &Dataset,
    stream: &ResolvedStream,
) -> Result<(), RunError> {
    for call in calls(&stream.ops, stream.batch_size) {
        let ids: Vec<PointId> = call.iter().map(|op| op.id).collect();
        if call[0].row.is_none() {
            engine
                .delete_batch(&ids)
                .map_err(RunError::engine("replay stream"))?;
        } else {
            let mut vectors = Vec::with_capacity(ids.len() * dataset.train.dim());
            for op in call {
                vectors.extend_from_slice(dataset.train.row(op.row.unwrap_or_default()));
            }
            engine
                .upsert_batch(&ids, &vectors)
                .map_err(RunError::engine("replay stream"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_group_one_kind_up_to_the_batch_size() {
        let put = |id| StreamOp { id, row: Some(0) };
        let del = |id| StreamOp { id, row: None };
        let ops = [put(1), put(2), put(3), del(4), del(5), put(6)];
        let sizes: Vec<usize> = calls(&ops, 2).iter().map(|c| c.len()).collect();
        assert_eq!(sizes, [2, 1, 2, 1]);
        let sizes: Vec<usize> = calls(&ops, 1).iter().map(|c| c.len()).collect();
        assert_eq!(sizes, [1; 6]);
    }
}
