//! Resource sampling: peak RSS and mean CPU of the client process and, when the engine runs
//! as a separate local process, of the engine, over each phase.
//!
//! A background thread samples RSS every `interval`; CPU is the difference of the processes'
//! accumulated CPU time between start and stop divided by wall time, so the mean is exact rather
//! than an average of noisy samples. 100% means one core fully busy.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sysinfo::{Pid, ProcessRefreshKind, ProcessesToUpdate, System};

/// Resource use of one process (tree) over one phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceStats {
    pub pid: u32,
    pub peak_rss_bytes: u64,
    pub mean_cpu_percent: f64,
    pub cpu_seconds: f64,
    pub wall_seconds: f64,
    pub samples: u64,
}

/// Which processes to watch: the client itself and optionally an engine server (with its
/// child processes, as PostgreSQL forks one backend per connection).
#[derive(Debug, Clone, Copy)]
pub struct Watch {
    pub client: u32,
    pub engine: Option<u32>,
}

impl Watch {
    pub fn client_only() -> Watch {
        Watch {
            client: std::process::id(),
            engine: None,
        }
    }

    pub fn with_engine(engine: Option<u32>) -> Watch {
        Watch {
            client: std::process::id(),
            engine,
        }
    }
}

/// Stats for both sides of a phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PhaseResources {
    pub client: ResourceStats,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub engine: Option<ResourceStats>,
}

/// A running sampler; [`Sampler::stop`] returns the stats.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<PhaseResources>>,
}

struct Tracker {
    root: u32,
    start_cpu_ms: u64,
    peak_rss: u64,
    samples: u64,
}

/// RSS and accumulated CPU (ms) of `root` and all its descendants.
fn tree_usage(sys: &System, root: u32) -> (u64, u64) {
    let root_pid = Pid::from_u32(root);
    let mut rss = 0;
    let mut cpu = 0;
    for (pid, p) in sys.processes() {
        let mut cur = Some(*pid);
        let mut inside = false;
        // Walk up the parent chain; process trees here are shallow.
        for _ in 0..16 {
            match cur {
                Some(c) if c == root_pid => {
                    inside = true;
                    break;
                }
                Some(c) => cur = sys.process(c).and_then(|pp| pp.parent()),
                None => break,
            }
        }
        if inside {
            rss += p.memory();
            cpu += p.accumulated_cpu_time();
        }
    }
    (rss, cpu)
}

/// Refreshes only the client when no engine process is watched (cheap), else every process,
/// since an engine's children are only found by scanning.
fn refresh(sys: &mut System, watch: &Watch) {
    let client = [Pid::from_u32(watch.client)];
    let which = if watch.engine.is_some() {
        ProcessesToUpdate::All
    } else {
        ProcessesToUpdate::Some(&client)
    };
    sys.refresh_processes_specifics(
        which,
        true,
        ProcessRefreshKind::nothing().with_memory().with_cpu(),
    );
}

impl Sampler {
    /// Starts sampling `watch` every `interval`.
    pub fn start(watch: Watch, interval: Duration) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("ragdbeval-sampler".into())
            .spawn(move || run(watch, interval, &flag))
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

fn run(watch: Watch, interval: Duration, stop: &AtomicBool) -> PhaseResources {
    // Without process information (an unsupported platform) there is nothing to report.
    let Ok(mut sys) = System::new() else {
        return PhaseResources::default();
    };
    refresh(&mut sys, &watch);
    let began = Instant::now();
    let mut trackers: Vec<Tracker> = std::iter::once(watch.client)
        .chain(watch.engine)
        .map(|root| {
            let (rss, cpu) = tree_usage(&sys, root);
            Tracker {
                root,
                start_cpu_ms: cpu,
                peak_rss: rss,
                samples: 1,
            }
        })
        .collect();
    let mut last_cpu: Vec<u64> = trackers.iter().map(|t| t.start_cpu_ms).collect();
    loop {
        // Sleep in short steps so stop() returns promptly.
        let wake = Instant::now() + interval;
        while Instant::now() < wake && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(5).min(interval));
        }
        refresh(&mut sys, &watch);
        for (t, last) in trackers.iter_mut().zip(last_cpu.iter_mut()) {
            let (rss, cpu) = tree_usage(&sys, t.root);
            t.peak_rss = t.peak_rss.max(rss);
            t.samples += 1;
            *last = cpu.max(*last);
        }
        if stop.load(Ordering::Relaxed) {
            break;
        }
    }
    let wall = began.elapsed().as_secs_f64();
    let mut stats = trackers.iter().zip(&last_cpu).map(|(t, end_cpu)| {
        let cpu_seconds = end_cpu.saturating_sub(t.start_cpu_ms) as f64 / 1000.0;
        ResourceStats {
            pid: t.root,
            peak_rss_bytes: t.peak_rss,
            mean_cpu_percent: if wall > 0.0 {
                100.0 * cpu_seconds / wall
            } else {
                0.0
            },
            cpu_seconds,
            wall_seconds: wall,
            samples: t.samples,
        }
    });
    let client = stats.next().unwrap_or_default();
    PhaseResources {
        client,
        engine: stats.next(),
    }
}

/// Current RSS of this process in bytes (for quick checks and tests).
pub fn current_rss() -> u64 {
    let Ok(mut sys) = System::new() else {
        return 0;
    };
    refresh(&mut sys, &Watch::client_only());
    sys.process(Pid::from_u32(std::process::id()))
        .map(|p| p.memory())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sees_allocation_and_cpu() {
        let sampler = Sampler::start(Watch::client_only(), Duration::from_millis(10));
        // Touch 64 MB and burn some CPU.
        let v = vec![1u8; 64 << 20];
        let mut acc = 0u64;
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(300) {
            acc = acc.wrapping_add(v.iter().step_by(4096).map(|b| *b as u64).sum::<u64>());
        }
        std::hint::black_box(acc);
        let r = sampler.stop();
        drop(v);
        assert!(r.client.peak_rss_bytes > 64 << 20, "{r:?}");
        assert!(r.client.mean_cpu_percent > 20.0, "{r:?}");
        assert!(r.client.samples >= 3, "{r:?}");
        assert!(r.engine.is_none());
    }
}
