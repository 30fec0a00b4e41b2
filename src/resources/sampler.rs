//! Sampling over a phase: a thread reads the watched processes every interval and keeps the
//! peaks and the CPU from first to last reading, which become the phase's figures.
//!
//! The engine tree's PSS is paced by its own cost. `smaps_rollup` walks every page a process
//! maps, in the kernel, on a core the engine would otherwise have: for PostgreSQL under search
//! load a sweep of its nine processes took ~20 ms, so reading it every 100 ms (the default
//! interval) would have taken a fifth of a core from the server being measured. After a PSS
//! reading that took `d`, the next one waits at least `d / PSS_SHARE`; the readings between
//! take CPU (`stat`) and RSS (`status`) only, which cost microseconds. The first PSS reading
//! comes one interval into the phase; a phase shorter than that reads it at its end. So a
//! phase reads PSS at least once, and a phase of a few seconds (the slices of the client
//! benches) once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::procfs::{clock_ticks, read_usage, read_usage_with};

/// The largest share of one core the engine tree's PSS readings may take.
const PSS_SHARE: f64 = 0.01;
use super::{MemoryMethod, PhaseResources, ResourceStats, Watch};

/// Accumulates the readings of one side over a phase.
#[derive(Debug)]
struct Tracker {
    root: u32,
    tree: bool,
    start_cpu: Option<u64>,
    last_cpu: u64,
    peak_rss: u64,
    peak_pss: u64,
    /// Every reading had PSS so far.
    pss_complete: bool,
    note: Option<String>,
    samples: u64,
    peak_processes: u64,
    /// When the next reading may read PSS (see the module documentation).
    next_pss: Instant,
    /// Readings that read PSS, and the time they took.
    pss_readings: u64,
    pss_time: Duration,
}

impl Tracker {
    /// A tracker whose first PSS reading is due at `first_pss`.
    fn new(root: u32, tree: bool, first_pss: Instant) -> Tracker {
        Tracker {
            root,
            tree,
            start_cpu: None,
            last_cpu: 0,
            peak_rss: 0,
            peak_pss: 0,
            pss_complete: tree,
            note: None,
            samples: 0,
            peak_processes: 0,
            next_pss: first_pss,
            pss_readings: 0,
            pss_time: Duration::ZERO,
        }
    }

    /// One reading; `last` (the phase's end) reads PSS when it is due or none was read yet.
    fn sample(&mut self, last: bool) {
        let began = Instant::now();
        let with_pss = self.tree && (began >= self.next_pss || (last && self.pss_readings == 0));
        let Some(r) = read_usage_with(self.root, self.tree, with_pss) else {
            return;
        };
        if with_pss {
            let cost = began.elapsed();
            self.next_pss = Instant::now() + cost.div_f64(PSS_SHARE);
            self.pss_readings += 1;
            self.pss_time += cost;
        }
        self.start_cpu.get_or_insert(r.cpu_ticks);
        // CPU time only grows; a process leaving the tree without being reaped inside it
        // (re-parented) takes its share with it, which must not turn into negative use.
        self.last_cpu = self.last_cpu.max(r.cpu_ticks);
        self.peak_rss = self.peak_rss.max(r.rss_bytes);
        match r.pss_bytes {
            Some(pss) => self.peak_pss = self.peak_pss.max(pss),
            None if !with_pss => {}
            None => {
                self.pss_complete = false;
                if self.note.is_none() {
                    self.note = r.pss_missing.map(|why| {
                        format!("PSS unreadable ({why}): memory is RSS summed per process")
                    });
                }
            }
        }
        self.samples += 1;
        self.peak_processes = self.peak_processes.max(r.processes);
    }

    fn stats(&self, wall: f64, ticks: f64) -> ResourceStats {
        let cpu_seconds = match self.start_cpu {
            Some(start) => self.last_cpu.saturating_sub(start) as f64 / ticks,
            None => 0.0,
        };
        let memory_method = if self.samples == 0 {
            MemoryMethod::Unavailable
        } else if self.pss_complete {
            MemoryMethod::Pss
        } else {
            MemoryMethod::Rss
        };
        ResourceStats {
            pid: self.root,
            peak_rss_bytes: self.peak_rss,
            peak_pss_bytes: (memory_method == MemoryMethod::Pss).then_some(self.peak_pss),
            memory_method,
            memory_note: self.note.clone(),
            mean_cpu_percent: if wall > 0.0 {
                100.0 * cpu_seconds / wall
            } else {
                0.0
            },
            cpu_seconds,
            wall_seconds: wall,
            samples: self.samples,
            peak_processes: self.peak_processes,
        }
    }
}

/// A running sampler; [`Sampler::stop`] returns the stats.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<PhaseResources>>,
}

impl Sampler {
    /// Takes the first reading now (so the phase's CPU counts from this call, not from
    /// whenever the thread gets scheduled), then samples `watch` every `interval`.
    pub fn start(watch: Watch, interval: Duration) -> Sampler {
        let began = Instant::now();
        // PSS is first read one interval in, or at the end of a shorter phase.
        let first_pss = began + interval;
        let mut trackers: Vec<Tracker> =
            std::iter::once(Tracker::new(watch.client, false, first_pss))
                .chain(watch.engine.map(|pid| Tracker::new(pid, true, first_pss)))
                .collect();
        for t in &mut trackers {
            t.sample(false);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("ragdbeval-sampler".into())
            .spawn(move || run(trackers, began, interval, &flag))
            .ok();
        Sampler { stop, handle }
    }

    /// Stops the sampler and returns what it measured (zeros if its thread could not start).
    pub fn stop(mut self) -> PhaseResources {
        self.signal_stop();
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }

    fn signal_stop(&self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = &self.handle {
            h.thread().unpark();
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.signal_stop();
    }
}

fn run(
    mut trackers: Vec<Tracker>,
    began: Instant,
    interval: Duration,
    stop: &AtomicBool,
) -> PhaseResources {
    loop {
        // stop() unparks the thread, so that it returns promptly without the thread waking
        // up every few milliseconds to look.
        let wake = Instant::now() + interval;
        loop {
            let now = Instant::now();
            if now >= wake || stop.load(Ordering::Acquire) {
                break;
            }
            std::thread::park_timeout(wake - now);
        }
        let last = stop.load(Ordering::Acquire);
        for t in &mut trackers {
            t.sample(last);
        }
        if last {
            break;
        }
    }
    let wall = began.elapsed().as_secs_f64();
    let ticks = clock_ticks();
    let mut stats = trackers.iter().map(|t| t.stats(wall, ticks));
    let client = stats.next().unwrap_or_default();
    PhaseResources {
        client,
        engine: stats.next(),
    }
}

/// Current RSS of this process in bytes (for quick checks and tests); 0 without `/proc`.
pub fn current_rss() -> u64 {
    read_usage(std::process::id(), false).map_or(0, |r| r.rss_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pss_readings_keep_to_their_share_of_a_core() {
        // This process as an engine tree, read back to back: without the pacing every reading
        // would read smaps_rollup and PSS would take nearly all of the time.
        let mut t = Tracker::new(std::process::id(), true, Instant::now());
        let began = Instant::now();
        t.sample(true);
        let first = t.pss_time;
        for _ in 0..3000 {
            t.sample(false);
        }
        let elapsed = began.elapsed();
        assert_eq!(t.samples, 3001);
        assert!(t.pss_readings >= 1);
        let paced = t.pss_time.saturating_sub(first);
        assert!(
            paced.as_secs_f64() <= 2.0 * PSS_SHARE * elapsed.as_secs_f64() + 0.002,
            "{} PSS readings took {paced:?} of {elapsed:?}",
            t.pss_readings
        );
        // The figure stays a PSS figure.
        let stats = t.stats(elapsed.as_secs_f64(), clock_ticks());
        assert_eq!(stats.memory_method, MemoryMethod::Pss, "{stats:?}");
        assert!(stats.peak_pss_bytes.unwrap_or(0) > 0, "{stats:?}");
    }

    #[test]
    fn a_short_phase_reads_pss_once_at_its_end() {
        let root = std::process::id();
        let mut t = Tracker::new(root, true, Instant::now() + Duration::from_secs(3600));
        t.sample(false);
        t.sample(false);
        assert_eq!(t.pss_readings, 0);
        t.sample(true);
        assert_eq!(t.pss_readings, 1);
        // A phase that read PSS already does not read it again at its end before it is due.
        t.sample(true);
        assert_eq!(t.pss_readings, 1);
        let stats = t.stats(1.0, clock_ticks());
        assert_eq!(stats.memory_method, MemoryMethod::Pss, "{stats:?}");
    }
}
