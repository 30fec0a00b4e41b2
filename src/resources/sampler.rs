//! Sampling over a phase: a thread reads the watched processes every interval and keeps the
//! peaks and the CPU from first to last reading, which become the phase's figures.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::procfs::{clock_ticks, read_usage};
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
}

impl Tracker {
    fn new(root: u32, tree: bool) -> Tracker {
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
        }
    }

    fn sample(&mut self) {
        let Some(r) = read_usage(self.root, self.tree) else {
            return;
        };
        self.start_cpu.get_or_insert(r.cpu_ticks);
        // CPU time only grows; a process leaving the tree without being reaped inside it
        // (re-parented) takes its share with it, which must not turn into negative use.
        self.last_cpu = self.last_cpu.max(r.cpu_ticks);
        self.peak_rss = self.peak_rss.max(r.rss_bytes);
        match r.pss_bytes {
            Some(pss) => self.peak_pss = self.peak_pss.max(pss),
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
        let mut trackers: Vec<Tracker> = std::iter::once(Tracker::new(watch.client, false))
            .chain(watch.engine.map(|pid| Tracker::new(pid, true)))
            .collect();
        for t in &mut trackers {
            t.sample();
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
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn run(
    mut trackers: Vec<Tracker>,
    began: Instant,
    interval: Duration,
    stop: &AtomicBool,
) -> PhaseResources {
    loop {
        // Sleep in short steps so stop() returns promptly.
        let wake = Instant::now() + interval;
        while Instant::now() < wake && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(5).min(interval));
        }
        for t in &mut trackers {
            t.sample();
        }
        if stop.load(Ordering::Relaxed) {
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
