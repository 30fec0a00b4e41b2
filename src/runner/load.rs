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
//! Senders sleep until just before each send time (see [`Pacer`]) rather than spin, so the
//! harness does not take the CPU the engine needs.
//!
//! How an open-loop level ends: `rate × duration` queries are scheduled over `duration`; after
//! that the senders may catch up on a backlog for at most another `duration`. A query not sent
//! by then is **dropped**: never sent, so it has no latency. Every query sent is waited for
//! and timed (a call cannot be abandoned midway), so `completed + errors + dropped =
//! intended`. A dropped query had waited more than `duration` when the level gave up, longer
//! than the percentiles (which cover answered queries only) may suggest; a level with drops is
//! saturated and warned about.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::engine::{EngineError, Neighbor, Query, VectorEngine};
use crate::metrics::latency::{LatencySummary, new_histogram, record};
use crate::resources::{Sampler, Watch};
use crate::rng::SplitMix64;
use crate::vectors::Vectors;

pub use crate::results::load::LoadLevel;

/// Seconds of a level with their own histogram in the interval logs: the first hour. One
/// histogram is 270 KB; a level keeps at most this many (about 1 GB), later seconds count in
/// the level's total only.
const MAX_INTERVAL_SECONDS: usize = 3600;

/// Per-second histograms shared by the workers of one level. Slots are created as seconds
/// pass, not up front: one histogram is 270 KB, and allocating the whole allowance (then
/// `duration + 120` s) for every worker cost over 500 MB and ~0.2 s of CPU per 1-s open-loop
/// level with 16 workers, inflating the client RSS and CPU the level reports.
struct Intervals {
    start: Instant,
    /// Most slots kept; later seconds count in the total only.
    seconds: usize,
    slots: Mutex<Vec<Histogram<u64>>>,
}

impl Intervals {
    fn new(start: Instant, seconds: usize) -> Intervals {
        Intervals {
            start,
            seconds: seconds.max(1),
            slots: Mutex::new(Vec::new()),
        }
    }

    /// Merges one worker's histogram of second `slot`.
    fn absorb(&self, slot: usize, local: &Histogram<u64>) {
        if slot >= self.seconds {
            return;
        }
        if let Ok(mut slots) = self.slots.lock() {
            if slots.len() <= slot {
                slots.resize_with(slot + 1, new_histogram);
            }
            let _ = slots[slot].add(local);
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
        if let Some((slot, h)) = &worker.current {
            self.intervals.absorb(*slot, h);
        }
        if let Ok(mut t) = self.total.lock() {
            let _ = t.add(&worker.total);
        }
    }

    /// The merged histogram, per-second intervals and error count, or the first error.
    fn finish(self) -> Result<Finished, EngineError> {
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

/// What a level's workers measured: the merged histogram, the per-second intervals (start
/// offset, histogram) and the error count.
type Finished = (Histogram<u64>, Vec<(Duration, Histogram<u64>)>, u64);

/// One worker's histograms: its total, merged into [`Shared`] when the worker ends, and the
/// histogram of the current second, handed to the shared [`Intervals`] when the second
/// changes. A worker holds one per-second histogram, not one per second of the level: with
/// 16 workers and a long level the latter was gigabytes.
struct Recorder {
    total: Histogram<u64>,
    /// Most slots kept.
    seconds: usize,
    current: Option<(usize, Histogram<u64>)>,
}

impl Recorder {
    fn new(seconds: usize) -> Recorder {
        Recorder {
            total: new_histogram(),
            seconds,
            current: None,
        }
    }

    #[inline]
    fn record(&mut self, intervals: &Intervals, slot: usize, latency: Duration) {
        record(&mut self.total, latency);
        if slot >= self.seconds {
            return;
        }
        match &mut self.current {
            Some((current, h)) if *current == slot => record(h, latency),
            current => {
                if let Some((done, h)) = current.take() {
                    intervals.absorb(done, &h);
                }
                let mut h = new_histogram();
                record(&mut h, latency);
                *current = Some((slot, h));
            }
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

/// CPU time consumed so far by the calling thread, from `/proc/thread-self/schedstat`
/// (nanoseconds on CPU; Linux). `None` elsewhere or when unreadable.
pub fn thread_cpu_time() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(ns))
}

/// Sums the CPU time of the threads of one level; `None` once any thread could not read it,
/// so a partial sum is never reported as the whole.
struct CpuTally {
    ns: AtomicU64,
    missing: AtomicBool,
}

impl CpuTally {
    fn new() -> CpuTally {
        CpuTally {
            ns: AtomicU64::new(0),
            missing: AtomicBool::new(false),
        }
    }

    fn add(&self, from: Option<Duration>, to: Option<Duration>) {
        match (from, to) {
            (Some(a), Some(b)) => {
                self.ns
                    .fetch_add(b.saturating_sub(a).as_nanos() as u64, Ordering::Relaxed);
            }
            _ => self.missing.store(true, Ordering::Relaxed),
        }
    }

    fn total_ms(&self) -> Option<f64> {
        (!self.missing.load(Ordering::Relaxed))
            .then(|| self.ns.load(Ordering::Relaxed) as f64 / 1e6)
    }
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

/// Wall time of exactly `iterations` queries from one closed-loop client, with no time limit:
/// what criterion's `iter_custom` wants when benchmarking the harness itself.
pub fn single_client_iterations(
    engine: &dyn VectorEngine,
    queries: &Vectors,
    k: usize,
    iterations: u64,
) -> Result<Duration, EngineError> {
    let level = closed_loop_budget(
        engine,
        queries,
        k,
        1,
        Duration::from_secs(u32::MAX as u64),
        Some(iterations),
        Duration::from_secs(1),
    )?;
    Ok(Duration::from_secs_f64(level.duration_s))
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
    let seconds = (duration.as_secs_f64().ceil() as usize + 1).min(MAX_INTERVAL_SECONDS);
    let sampler = Sampler::start(Watch::with_engine(engine.server_pid()), sample_interval);
    let start = Instant::now();
    let shared = Shared::new(start, seconds);
    let cpu = CpuTally::new();

    std::thread::scope(|scope| {
        for c in 0..clients {
            let (shared, cpu) = (&shared, &cpu);
            scope.spawn(move || {
                let cpu_start = thread_cpu_time();
                let order = permutation(nq, 0x5EED ^ c as u64);
                let mut out: Vec<Neighbor> = Vec::with_capacity(k);
                let mut rec = Recorder::new(seconds);
                let mut i = 0usize;
                loop {
                    let t = Instant::now();
                    if t.duration_since(start) >= duration
                        || i as u64 >= budget
                        || (shared.stopped() || crate::interrupt::requested())
                    {
                        break;
                    }
                    let q = queries.row(order[i % nq] as usize);
                    if let Err(e) = engine.search(Query::new(q, k), &mut out) {
                        shared.fail(e);
                        break;
                    }
                    let end = Instant::now();
                    rec.record(&shared.intervals, shared.intervals.slot(end), end - t);
                    i += 1;
                }
                cpu.add(cpu_start, thread_cpu_time());
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
        mean_send_lag_ms: None,
        intended: None,
        dropped: None,
        sender_cpu_ms: cpu.total_ms(),
        saturated: false,
        resources,
        histogram_log: None,
        histogram: Some(hist),
        intervals,
    })
}

/// Waits for send times without burning a core: sleeps until shortly before each one and spins
/// only the last stretch. A plain sleep wakes 50–100 µs late on Linux (timer slack plus
/// wake-up), and since latency counts from the intended send time that lateness would be
/// charged to the engine; spinning a whole millisecond instead cost 20 % of a core at
/// 200 queries/s. So the stretch is the sleep's own recent overshoot, learnt as it goes:
/// sends leave within a few µs of their time while spinning costs a few µs per send.
pub(super) struct Pacer {
    /// How long before a send time the thread asks to wake.
    margin: Duration,
}

impl Pacer {
    /// The longest spin before one send, whatever the overshoot: bounds the sender's CPU to
    /// `rate × MAX_MARGIN` even when the machine wakes threads very late.
    const MAX_MARGIN: Duration = Duration::from_micros(200);
    /// Kept over the latest overshoot, so a wake-up slightly later than the last still lands
    /// before the send time.
    const HEADROOM: Duration = Duration::from_micros(10);

    pub(super) fn new() -> Pacer {
        Pacer {
            margin: Duration::from_micros(100),
        }
    }

    /// Returns at `when` or, if that has passed (the engine is behind), at once: due queries
    /// go out back to back.
    pub(super) fn wait_until(&mut self, when: Instant) {
        loop {
            let now = Instant::now();
            if now >= when {
                return;
            }
            let left = when - now;
            if left > self.margin {
                let wake = when - self.margin;
                std::thread::sleep(wake - now);
                let overshoot = Instant::now().saturating_duration_since(wake);
                // Jump to a larger overshoot at once; let a past outlier fade by an eighth per
                // sleep, so one late wake-up does not keep the sender spinning.
                self.margin = (overshoot + Self::HEADROOM)
                    .max(self.margin - self.margin / 8)
                    .min(Self::MAX_MARGIN);
            } else {
                std::hint::spin_loop();
            }
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
    // Per-second slots for the schedule, its catch-up period, and calls still in flight then.
    let seconds = ((2.0 * duration.as_secs_f64()).ceil() as usize + 120).min(MAX_INTERVAL_SECONDS);
    let sampler = Sampler::start(Watch::with_engine(engine.server_pid()), sample_interval);
    let start = Instant::now() + Duration::from_millis(5);
    let shared = Shared::new(start, seconds);
    let next = AtomicU64::new(0);
    let sent_count = AtomicU64::new(0);
    let max_lag_ns = AtomicU64::new(0);
    let sum_lag_ns = AtomicU64::new(0);
    let cpu = CpuTally::new();
    // After the schedule ends the senders may catch up on a backlog for as long again, so a
    // short stall near the end is still measured; what is unsent by then is dropped, and the
    // level, saturated, costs at most twice its duration.
    let deadline = start + duration + duration;
    let order = permutation(nq, 0x0B0E);

    std::thread::scope(|scope| {
        for _ in 0..workers {
            let (shared, next, order, cpu) = (&shared, &next, &order, &cpu);
            let (sent_count, max_lag_ns, sum_lag_ns) = (&sent_count, &max_lag_ns, &sum_lag_ns);
            scope.spawn(move || {
                let cpu_start = thread_cpu_time();
                let mut pacer = Pacer::new();
                let mut out: Vec<Neighbor> = Vec::with_capacity(k);
                let mut rec = Recorder::new(seconds);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= planned || (shared.stopped() || crate::interrupt::requested()) {
                        break;
                    }
                    let intended = start + Duration::from_nanos((i as f64 * interval_ns) as u64);
                    pacer.wait_until(intended);
                    let sent = Instant::now();
                    if sent > deadline {
                        shared.stop.store(true, Ordering::Relaxed);
                        break;
                    }
                    let lag_ns = (sent - intended).as_nanos() as u64;
                    max_lag_ns.fetch_max(lag_ns, Ordering::Relaxed);
                    sum_lag_ns.fetch_add(lag_ns, Ordering::Relaxed);
                    sent_count.fetch_add(1, Ordering::Relaxed);
                    let q = queries.row(order[(i % nq as u64) as usize] as usize);
                    if let Err(e) = engine.search(Query::new(q, k), &mut out) {
                        shared.fail(e);
                        break;
                    }
                    let end = Instant::now();
                    // From the intended send time: queueing is part of the latency.
                    rec.record(
                        &shared.intervals,
                        shared.intervals.slot(end),
                        end - intended,
                    );
                }
                cpu.add(cpu_start, thread_cpu_time());
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
    let sent = sent_count.load(Ordering::Relaxed);
    let mean_lag_ms = sum_lag_ns.load(Ordering::Relaxed) as f64 / 1e6 / sent.max(1) as f64;
    // An engine error ends the level with that error above, so every query sent was answered:
    // what was scheduled and not sent is all that is missing.
    let dropped = planned.saturating_sub(sent);
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
        mean_send_lag_ms: Some(mean_lag_ms),
        intended: Some(planned),
        dropped: Some(dropped),
        sender_cpu_ms: cpu.total_ms(),
        saturated,
        resources,
        histogram_log: None,
        histogram: Some(hist),
        intervals,
    })
}

/// How a rate sweep runs: the rate it starts from, the p99 it must keep, and how long and
/// with how many senders each rate is run.
pub struct RateSweep {
    pub start_rate: f64,
    pub slo: Duration,
    pub step_duration: Duration,
    pub workers: usize,
    pub sample_interval: Duration,
}

/// The highest rate whose p99 stays within `slo`: doubles the rate from `start_rate` until the
/// SLO breaks or the engine saturates, then bisects between the last good and first bad rate.
pub fn rate_sweep(
    engine: &dyn VectorEngine,
    queries: &Vectors,
    k: usize,
    sweep: &RateSweep,
) -> Result<(Option<f64>, Vec<LoadLevel>), EngineError> {
    let slo_ms = sweep.slo.as_secs_f64() * 1000.0;
    let ok = |l: &LoadLevel| !l.saturated && l.latency.p99_ms <= slo_ms;
    let at = |rate: f64| {
        open_loop(
            engine,
            queries,
            k,
            rate,
            sweep.step_duration,
            sweep.workers,
            sweep.sample_interval,
        )
    };
    let mut levels = Vec::new();
    let mut good: Option<f64> = None;
    let mut bad: Option<f64> = None;
    let mut rate = sweep.start_rate.max(1.0);
    for _ in 0..12 {
        let level = at(rate)?;
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
            let level = at(mid)?;
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
mod tests;
