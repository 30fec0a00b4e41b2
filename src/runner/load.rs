//! Load generation: closed-loop concurrency levels and open-loop fixed-rate runs.
//!
//! Closed loop: N clients each send their next query when the previous answer arrives, for a
//! fixed time; each client walks its own seeded permutation of the queries, so clients do not
//! hit the same query at the same moment.
//!
//! Open loop: queries are *scheduled* at the target rate (query i at `start + i / rate`) and a
//! pool of workers sends each one at its scheduled time, or as soon as a worker is free when
//! the engine is behind. Latency is measured from the **intended** send time, so queueing delay
//! shows up in the latency instead of being hidden by a slower send rate (coordinated omission).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::engine::{EngineError, Neighbor, VectorEngine};
use crate::metrics::latency::{LatencySummary, new_histogram, record};
use crate::resources::{PhaseResources, Sampler, Watch};
use crate::synthetic::SplitMix64;
use crate::vectors::Vectors;

/// One load level's figures.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadLevel {
    /// `closed` or `open`.
    pub kind: String,
    /// Clients (closed) or workers (open).
    pub concurrency: usize,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub target_rate: Option<f64>,
    pub duration_s: f64,
    pub completed: u64,
    pub errors: u64,
    /// Completed queries ÷ wall time.
    pub qps: f64,
    /// Latency (open loop: from the intended send time).
    pub latency: LatencySummary,
    /// Open loop: worst delay between a query's intended and actual send time.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub max_send_lag_ms: Option<f64>,
    /// Open loop: the engine (or the harness) could not keep up with the target rate.
    pub saturated: bool,
    pub resources: PhaseResources,
    /// Interval histograms (one per second) for `ragdbeval merge`, if written.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub histogram_log: Option<String>,
    /// The merged histogram, kept for logs and merging; not serialised.
    #[serde(skip)]
    pub histogram: Option<Histogram<u64>>,
    /// Per-second histograms (start offset, histogram), for interval logs.
    #[serde(skip)]
    pub intervals: Vec<(Duration, Histogram<u64>)>,
}

/// Per-second histograms shared by the workers of one level.
struct Intervals {
    start: Instant,
    slots: Mutex<Vec<Histogram<u64>>>,
}

impl Intervals {
    fn new(start: Instant, seconds: usize) -> Intervals {
        Intervals {
            start,
            slots: Mutex::new((0..seconds.max(1)).map(|_| new_histogram()).collect()),
        }
    }

    /// Merges one worker's per-second histograms.
    fn absorb(&self, local: &[Histogram<u64>]) {
        if let Ok(mut slots) = self.slots.lock() {
            for (s, l) in slots.iter_mut().zip(local) {
                let _ = s.add(l);
            }
        }
    }

    fn into_vec(self) -> Vec<(Duration, Histogram<u64>)> {
        self.slots
            .into_inner()
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .filter(|(_, h)| !h.is_empty())
            .map(|(i, h)| (Duration::from_secs(i as u64), h))
            .collect()
    }

    fn slot(&self, at: Instant) -> usize {
        at.saturating_duration_since(self.start).as_secs() as usize
    }
}

/// What the workers of one level share: per-second and total histograms, the first error,
/// and the stop flag.
struct Shared {
    intervals: Intervals,
    total: Mutex<Histogram<u64>>,
    first_error: Mutex<Option<EngineError>>,
    errors: AtomicU64,
    stop: AtomicBool,
}

impl Shared {
    fn new(start: Instant, seconds: usize) -> Shared {
        Shared {
            intervals: Intervals::new(start, seconds),
            total: Mutex::new(new_histogram()),
            first_error: Mutex::new(None),
            errors: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        }
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Records an engine error and stops every worker of the level.
    fn fail(&self, e: EngineError) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        self.stop.store(true, Ordering::Relaxed);
        if let Ok(mut slot) = self.first_error.lock() {
            slot.get_or_insert(e);
        }
    }

    /// Merges a finished worker's histograms.
    fn absorb(&self, worker: Recorder) {
        self.intervals.absorb(&worker.per_second);
        if let Ok(mut t) = self.total.lock() {
            let _ = t.add(&worker.total);
        }
    }

    /// The merged histogram and per-second intervals, or the first error.
    fn finish(self) -> Result<(Histogram<u64>, Vec<(Duration, Histogram<u64>)>, u64), EngineError> {
        if let Some(e) = self.first_error.into_inner().ok().flatten() {
            return Err(e);
        }
        let hist = self.total.into_inner().unwrap_or_else(|_| new_histogram());
        Ok((
            hist,
            self.intervals.into_vec(),
            self.errors.load(Ordering::Relaxed),
        ))
    }
}

/// One worker's histograms; merged into [`Shared`] when the worker ends.
struct Recorder {
    total: Histogram<u64>,
    per_second: Vec<Histogram<u64>>,
}

impl Recorder {
    fn new(seconds: usize) -> Recorder {
        Recorder {
            total: new_histogram(),
            per_second: (0..seconds).map(|_| new_histogram()).collect(),
        }
    }

    #[inline]
    fn record(&mut self, slot: usize, latency: Duration) {
        record(&mut self.total, latency);
        if let Some(h) = self.per_second.get_mut(slot) {
            record(h, latency);
        }
    }
}

fn permutation(n: usize, seed: u64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    let mut rng = SplitMix64::new(seed);
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        order.swap(i, j);
    }
    order
}

/// Closed loop: `clients` threads, each querying back-to-back for `duration`.
pub fn closed_loop(
    engine: &dyn VectorEngine,
    queries: &Vectors,
    k: usize,
    clients: usize,
    duration: Duration,
    sample_interval: Duration,
) -> Result<LoadLevel, EngineError> {
    closed_loop_budget(engine, queries, k, clients, duration, None, sample_interval)
}

/// [`closed_loop`] that also stops after `budget` queries per client (benchmarks of the
/// harness itself use it to run an exact number of queries).
pub fn closed_loop_budget(
    engine: &dyn VectorEngine,
    queries: &Vectors,
    k: usize,
    clients: usize,
    duration: Duration,
    budget: Option<u64>,
    sample_interval: Duration,
) -> Result<LoadLevel, EngineError> {
    let budget = budget.unwrap_or(u64::MAX);
    let clients = clients.max(1);
    let nq = queries.len();
    // Per-second histograms cover the run; a budget-limited run with no time limit needs none.
    let seconds = if duration.as_secs() > 86_400 {
        1
    } else {
        duration.as_secs_f64().ceil() as usize + 1
    };
    let sampler = Sampler::start(Watch::with_engine(engine.server_pid()), sample_interval);
    let start = Instant::now();
    let shared = Shared::new(start, seconds);

    std::thread::scope(|scope| {
        for c in 0..clients {
            let shared = &shared;
            scope.spawn(move || {
                let order = permutation(nq, 0x5EED ^ c as u64);
                let mut out: Vec<Neighbor> = Vec::with_capacity(k);
                let mut rec = Recorder::new(seconds);
                let mut i = 0usize;
                loop {
                    let t = Instant::now();
                    if t.duration_since(start) >= duration || i as u64 >= budget || shared.stopped()
                    {
                        break;
                    }
                    let q = queries.row(order[i % nq] as usize);
                    if let Err(e) = engine.search(q, k, &mut out) {
                        shared.fail(e);
                        break;
                    }
                    let end = Instant::now();
                    rec.record(shared.intervals.slot(end), end - t);
                    i += 1;
                }
                shared.absorb(rec);
            });
        }
    });
    let wall = start.elapsed();
    let resources = sampler.stop();
    let (hist, intervals, errors) = shared.finish()?;
    let completed = hist.len();
    Ok(LoadLevel {
        kind: "closed".into(),
        concurrency: clients,
        target_rate: None,
        duration_s: wall.as_secs_f64(),
        completed,
        errors,
        qps: completed as f64 / wall.as_secs_f64().max(1e-9),
        latency: LatencySummary::from_histogram(&hist),
        max_send_lag_ms: None,
        saturated: false,
        resources,
        histogram_log: None,
        histogram: Some(hist),
        intervals,
    })
}

/// Sleeps until `when`: coarse sleep, then a short spin for sub-millisecond precision.
fn sleep_until(when: Instant) {
    loop {
        let now = Instant::now();
        if now >= when {
            return;
        }
        let left = when - now;
        if left > Duration::from_micros(1500) {
            std::thread::sleep(left - Duration::from_micros(1000));
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Open loop at `rate` queries per second for `duration`, with `workers` senders.
pub fn open_loop(
    engine: &dyn VectorEngine,
    queries: &Vectors,
    k: usize,
    rate: f64,
    duration: Duration,
    workers: usize,
    sample_interval: Duration,
) -> Result<LoadLevel, EngineError> {
    let workers = workers.max(1);
    let nq = queries.len();
    let planned = (rate * duration.as_secs_f64()).round().max(1.0) as u64;
    let interval_ns = 1e9 / rate.max(1e-9);
    let seconds = duration.as_secs_f64().ceil() as usize + 120;
    let sampler = Sampler::start(Watch::with_engine(engine.server_pid()), sample_interval);
    let start = Instant::now() + Duration::from_millis(5);
    let shared = Shared::new(start, seconds);
    let next = AtomicU64::new(0);
    let max_lag_ns = AtomicU64::new(0);
    // Give up on a hopeless backlog: by then the level is plainly saturated.
    let deadline = start + duration + duration.max(Duration::from_secs(5));
    let order = permutation(nq, 0x0B0E);

    std::thread::scope(|scope| {
        for _ in 0..workers {
            let (shared, next, max_lag_ns, order) = (&shared, &next, &max_lag_ns, &order);
            scope.spawn(move || {
                let mut out: Vec<Neighbor> = Vec::with_capacity(k);
                let mut rec = Recorder::new(seconds);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= planned || shared.stopped() {
                        break;
                    }
                    let intended = start + Duration::from_nanos((i as f64 * interval_ns) as u64);
                    sleep_until(intended);
                    let sent = Instant::now();
                    if sent > deadline {
                        shared.stop.store(true, Ordering::Relaxed);
                        break;
                    }
                    max_lag_ns.fetch_max((sent - intended).as_nanos() as u64, Ordering::Relaxed);
                    let q = queries.row(order[(i % nq as u64) as usize] as usize);
                    if let Err(e) = engine.search(q, k, &mut out) {
                        shared.fail(e);
                        break;
                    }
                    let end = Instant::now();
                    // From the intended send time: queueing is part of the latency.
                    rec.record(shared.intervals.slot(end), end - intended);
                }
                shared.absorb(rec);
            });
        }
    });
    let wall = Instant::now().saturating_duration_since(start);
    let resources = sampler.stop();
    let (hist, intervals, errors) = shared.finish()?;
    let completed = hist.len();
    let achieved = completed as f64 / wall.as_secs_f64().max(1e-9);
    let lag = Duration::from_nanos(max_lag_ns.load(Ordering::Relaxed));
    // Behind schedule by more than a tenth of the run, or short of the rate by 5 %: the target
    // was not sustained.
    let saturated = completed < planned
        || achieved < 0.95 * rate
        || lag > duration.mul_f64(0.1).max(Duration::from_millis(100));
    Ok(LoadLevel {
        kind: "open".into(),
        concurrency: workers,
        target_rate: Some(rate),
        duration_s: wall.as_secs_f64(),
        completed,
        errors,
        qps: achieved,
        latency: LatencySummary::from_histogram(&hist),
        max_send_lag_ms: Some(lag.as_secs_f64() * 1000.0),
        saturated,
        resources,
        histogram_log: None,
        histogram: Some(hist),
        intervals,
    })
}

/// The highest rate whose p99 stays within `slo`: doubles the rate from `start_rate` until the
/// SLO breaks or the engine saturates, then bisects between the last good and first bad rate.
#[allow(clippy::too_many_arguments)]
pub fn rate_sweep(
    engine: &dyn VectorEngine,
    queries: &Vectors,
    k: usize,
    start_rate: f64,
    slo: Duration,
    step_duration: Duration,
    workers: usize,
    sample_interval: Duration,
) -> Result<(Option<f64>, Vec<LoadLevel>), EngineError> {
    let slo_ms = slo.as_secs_f64() * 1000.0;
    let ok = |l: &LoadLevel| !l.saturated && l.latency.p99_ms <= slo_ms;
    let mut levels = Vec::new();
    let mut good: Option<f64> = None;
    let mut bad: Option<f64> = None;
    let mut rate = start_rate.max(1.0);
    for _ in 0..12 {
        let level = open_loop(
            engine,
            queries,
            k,
            rate,
            step_duration,
            workers,
            sample_interval,
        )?;
        let passed = ok(&level);
        levels.push(level);
        if passed {
            good = Some(rate);
            rate *= 2.0;
        } else {
            bad = Some(rate);
            break;
        }
    }
    if let (Some(mut lo), Some(mut hi)) = (good, bad) {
        for _ in 0..4 {
            let mid = (lo + hi) / 2.0;
            let level = open_loop(
                engine,
                queries,
                k,
                mid,
                step_duration,
                workers,
                sample_interval,
            )?;
            if ok(&level) {
                lo = mid;
            } else {
                hi = mid;
            }
            levels.push(level);
        }
        good = Some(lo);
    }
    Ok((good, levels))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutations_differ_per_client_and_cover_all_queries() {
        let a = permutation(100, 1);
        let b = permutation(100, 2);
        assert_ne!(a, b);
        let mut s = a.clone();
        s.sort();
        assert_eq!(s, (0..100).collect::<Vec<u32>>());
    }
}
