//! Resource sampling: peak memory and mean CPU of the client process and, when the engine runs
//! as a separate local process, of the engine's process tree, over each phase.
//!
//! Everything is read from `/proc` (Linux), counting **processes, never threads**: on Linux
//! every thread is a task with its own `/proc/PID/task/TID` entry, and tools that list tasks
//! as processes (sysinfo does) report each thread with the whole process's RSS and CPU, which
//! multiplied a server's figures by its thread count.
//!
//! - **Tree**: the engine's root PID and its descendants, found through
//!   `/proc/PID/task/*/children` (each thread lists the children it forked), or, on kernels
//!   without that file, by scanning every `/proc/PID/stat` for its parent PID.
//! - **Memory** of the engine tree: PSS (`/proc/PID/smaps_rollup`) summed over the tree's
//!   processes. PSS divides each shared page among the processes mapping it, so PostgreSQL's
//!   shared buffers, mapped by every forked backend, count once; summed RSS would count them
//!   once per backend. When any process's `smaps_rollup` cannot be read (another user's
//!   process without the right to read it, a kernel before 4.14), the phase falls back to
//!   summed RSS and says so in `memory_method` and `memory_note`. The client is one process;
//!   its figure is its RSS (`VmRSS`), `memory_method = rss`.
//! - **CPU**: `utime + stime` of each process (the kernel's sum over all its threads), plus,
//!   in the engine tree, `cutime + cstime` (children that exited and were reaped inside the
//!   tree, such as PostgreSQL backends of closed connections, keep their CPU there). The mean
//!   is the difference between the first and last sample divided by wall time, so it is exact
//!   up to clock ticks rather than an average of noisy samples. 100 % means one core busy.
//!
//! A figure no machine can produce (CPU above 100 % × cores, memory above the machine's RAM)
//! is a measurement bug: [`check`] turns it into an error, and `runner::warnings::resource_warnings` into a
//! warning stored with the result.

use std::collections::HashSet;
use std::io::ErrorKind;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How a [`ResourceStats`]' memory figure was obtained.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MemoryMethod {
    /// Files written before 2026-11 (no `memory_method` field): `peak_rss_bytes` summed RSS
    /// over every task the sampler listed, threads included, so a multi-threaded server's
    /// figure was multiplied by its thread count. Not comparable with newer files.
    #[default]
    Legacy,
    /// Peak of the PSS summed over the processes (`peak_pss_bytes`).
    Pss,
    /// Peak of the RSS summed over the processes (`peak_rss_bytes`): pages shared between
    /// processes count once per process.
    Rss,
    /// Nothing could be read (no `/proc`, or the process was gone).
    Unavailable,
}

/// Resource use of one process (tree) over one phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResourceStats {
    pub pid: u32,
    /// Peak of the RSS summed over the processes of the tree (each process once, threads
    /// never). Always measured; the headline figure only when `memory_method` is `rss`.
    pub peak_rss_bytes: u64,
    /// Peak of the PSS summed over the processes of the tree, when every sample could read
    /// every process's PSS (`memory_method` = `pss`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_pss_bytes: Option<u64>,
    /// Which of the two peaks is the memory figure: see [`ResourceStats::peak_memory_bytes`].
    #[serde(default)]
    pub memory_method: MemoryMethod,
    /// Why the memory figure is not PSS where PSS was wanted (the engine tree).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_note: Option<String>,
    pub mean_cpu_percent: f64,
    pub cpu_seconds: f64,
    pub wall_seconds: f64,
    pub samples: u64,
    /// Most processes seen in the tree at one sample (1 for the client).
    #[serde(default)]
    pub peak_processes: u64,
}

impl ResourceStats {
    /// The memory figure to report: the PSS peak when measured, else the RSS peak (also for
    /// old files, whose `memory_method` is `legacy`).
    pub fn peak_memory_bytes(&self) -> u64 {
        match (self.memory_method, self.peak_pss_bytes) {
            (MemoryMethod::Pss, Some(pss)) => pss,
            _ => self.peak_rss_bytes,
        }
    }
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

// ---------------------------------------------------------------------------------------------
// /proc parsing

/// The fields of `/proc/PID/stat` the sampler uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    pub ppid: u32,
    /// utime + stime of all the process's threads, in clock ticks.
    pub own_ticks: u64,
    /// cutime + cstime: waited-for children, in clock ticks.
    pub children_ticks: u64,
    pub num_threads: u64,
}

/// Parses `/proc/PID/stat`. The command name (field 2) is in parentheses and may contain
/// spaces and parentheses itself, so fields are counted after the *last* `)`.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let (_, rest) = text.rsplit_once(')')?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After ')': state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17) ...
    // num_threads(20); index = field number - 3.
    let num = |i: usize| -> Option<u64> { f.get(i)?.parse().ok() };
    let signed = |i: usize| -> Option<u64> {
        // cutime/cstime are declared signed; they are never negative in practice.
        f.get(i)?.parse::<i64>().ok().map(|v| v.max(0) as u64)
    };
    Some(ProcStat {
        ppid: u32::try_from(num(1)?).ok()?,
        own_ticks: num(11)? + num(12)?,
        children_ticks: signed(13)? + signed(14)?,
        num_threads: signed(17)?,
    })
}

/// `Rss` and `Pss` of `/proc/PID/smaps_rollup`, in bytes.
pub fn parse_smaps_rollup(text: &str) -> Option<(u64, u64)> {
    let (mut rss, mut pss) = (None, None);
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("Rss:") {
            rss = parse_kb(v);
        } else if let Some(v) = line.strip_prefix("Pss:") {
            pss = parse_kb(v);
        }
    }
    Some((rss?, pss?))
}

/// `VmRSS` of `/proc/PID/status`, in bytes.
pub fn parse_status_rss(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(parse_kb)
}

/// `  1234 kB` → bytes.
fn parse_kb(v: &str) -> Option<u64> {
    let mut it = v.split_whitespace();
    let n: u64 = it.next()?.parse().ok()?;
    match it.next() {
        Some("kB") => Some(n * 1024),
        _ => None,
    }
}

/// `/proc/PID/task/TID/children`: space-separated PIDs.
fn parse_children(text: &str) -> impl Iterator<Item = u32> + '_ {
    text.split_whitespace().filter_map(|p| p.parse().ok())
}

fn read_proc(pid: u32, file: &str) -> std::io::Result<String> {
    std::fs::read_to_string(format!("/proc/{pid}/{file}"))
}

/// Whether reading a `/proc/PID` file failed because the process exited meanwhile (as
/// opposed to being unreadable). `NotFound` means that only where the kernel has the file.
fn process_gone(e: &std::io::Error) -> bool {
    static HAS_ROLLUP: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    match e.kind() {
        ErrorKind::NotFound => {
            *HAS_ROLLUP.get_or_init(|| std::path::Path::new("/proc/self/smaps_rollup").exists())
        }
        _ => e.raw_os_error() == Some(libc::ESRCH),
    }
}

/// Clock ticks per second of `/proc/PID/stat` times.
fn clock_ticks() -> f64 {
    // SAFETY: sysconf only reads a constant of the C library.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// Root and every descendant (processes only: a thread is never its own entry here).
pub fn process_tree(root: u32) -> Vec<u32> {
    if !std::path::Path::new(&format!("/proc/{root}")).exists() {
        return Vec::new();
    }
    match tree_from_children_files(root) {
        Some(tree) => tree,
        None => tree_from_scan(root),
    }
}

/// The tree through `/proc/PID/task/TID/children` (kernels with CONFIG_PROC_CHILDREN).
/// `None` when the root's file does not exist, so the caller scans instead.
pub fn tree_from_children_files(root: u32) -> Option<Vec<u32>> {
    let probe = format!("/proc/{root}/task/{root}/children");
    if let Err(e) = std::fs::metadata(&probe)
        && e.kind() == ErrorKind::NotFound
    {
        return None;
    }
    let mut seen = HashSet::from([root]);
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let pid = out[i];
        i += 1;
        // A process that exited meanwhile simply has no tasks left to list.
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
                continue;
            };
            for child in parse_children(&text) {
                if seen.insert(child) {
                    out.push(child);
                }
            }
        }
    }
    Some(out)
}

/// The tree by reading every process's parent from `/proc/*/stat` (the `/proc` directory
/// lists thread-group leaders, i.e. processes, only).
pub fn tree_from_scan(root: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let parents: Vec<(u32, u32)> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, parse_stat(&read_proc(pid, "stat").ok()?)?.ppid)))
        .collect();
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i];
        i += 1;
        for &(pid, ppid) in &parents {
            if ppid == parent && !out.contains(&pid) {
                out.push(pid);
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Sampling

/// One reading of a process (tree).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// RSS summed over the processes.
    pub rss_bytes: u64,
    /// PSS summed over the processes, when every process's PSS was read.
    pub pss_bytes: Option<u64>,
    /// Why PSS is missing, when it was wanted.
    pub pss_missing: Option<String>,
    /// CPU in clock ticks (see the module documentation for what is included).
    pub cpu_ticks: u64,
    /// Processes read.
    pub processes: u64,
    /// Threads of those processes (for tests and diagnostics, never summed into figures).
    pub threads: u64,
}

/// Reads one process (`tree` false: the client) or a process tree with PSS (`tree` true).
/// `None` when the root is gone or `/proc` is unavailable.
pub fn read_usage(root: u32, tree: bool) -> Option<Reading> {
    let pids = if tree { process_tree(root) } else { vec![root] };
    let mut r = Reading {
        rss_bytes: 0,
        pss_bytes: tree.then_some(0),
        pss_missing: None,
        cpu_ticks: 0,
        processes: 0,
        threads: 0,
    };
    for pid in pids {
        // A process that exits between listing and reading is skipped: it is gone, and a
        // reaped one's CPU has moved into its parent's cutime/cstime.
        let Some(stat) = read_proc(pid, "stat").ok().and_then(|s| parse_stat(&s)) else {
            continue;
        };
        let mut rss = None;
        let mut pss = None;
        let mut missing = None;
        if tree {
            match read_proc(pid, "smaps_rollup") {
                Ok(text) => match parse_smaps_rollup(&text) {
                    Some((rs, ps)) => {
                        rss = Some(rs);
                        pss = Some(ps);
                    }
                    // A process past releasing its memory (exiting, zombie) shows nothing.
                    None if text.trim().is_empty() => continue,
                    None => missing = Some(format!("/proc/{pid}/smaps_rollup has no Pss")),
                },
                Err(e) if process_gone(&e) => continue,
                Err(e) => missing = Some(format!("/proc/{pid}/smaps_rollup: {e}")),
            }
        }
        let rss = match rss {
            Some(rss) => rss,
            None => match read_proc(pid, "status")
                .ok()
                .and_then(|s| parse_status_rss(&s))
            {
                Some(rss) => rss,
                // Exited meanwhile (or a kernel thread without memory).
                None => continue,
            },
        };
        // Only a process still there without a readable PSS makes the sum RSS.
        match (pss, missing) {
            (Some(ps), _) => r.pss_bytes = r.pss_bytes.map(|p| p + ps),
            (None, Some(why)) => {
                r.pss_bytes = None;
                r.pss_missing.get_or_insert(why);
            }
            (None, None) => {}
        }
        r.rss_bytes += rss;
        r.cpu_ticks += stat.own_ticks + if tree { stat.children_ticks } else { 0 };
        r.processes += 1;
        r.threads += stat.num_threads;
    }
    if r.processes == 0 {
        return None;
    }
    Some(r)
}

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

// ---------------------------------------------------------------------------------------------
// Sanity checks

/// What this machine can physically produce.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MachineLimits {
    /// Online CPUs (not this process's affinity: a server may run on all of them).
    pub cores: u64,
    /// `MemTotal` of `/proc/meminfo`; `None` when unknown (no memory check then).
    pub ram_bytes: Option<u64>,
    /// Clock ticks per second of the CPU times (their granularity).
    pub ticks_per_second: f64,
}

impl MachineLimits {
    pub fn this_machine() -> MachineLimits {
        // SAFETY: sysconf only reads a value of the C library / kernel.
        let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
        let cores = if online > 0 {
            online as u64
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get() as u64)
        };
        let ram_bytes = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(parse_kb)
        });
        MachineLimits {
            cores,
            ram_bytes,
            ticks_per_second: clock_ticks(),
        }
    }
}

/// A resource figure no machine like this one can produce: a measurement bug.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Implausible {
    #[error(
        "{cpu_percent:.0}% CPU (pid {pid}: {cpu_seconds:.2} s CPU in {wall_seconds:.2} s) \
         exceeds {cores} cores × 100%"
    )]
    Cpu {
        pid: u32,
        cpu_percent: f64,
        cpu_seconds: f64,
        wall_seconds: f64,
        cores: u64,
    },
    #[error(
        "peak memory {bytes} bytes (pid {pid}, {method:?}) exceeds the machine's RAM of \
         {ram_bytes} bytes"
    )]
    Memory {
        pid: u32,
        bytes: u64,
        method: MemoryMethod,
        ram_bytes: u64,
    },
}

/// Checks that `stats` is physically possible on a machine with `limits`.
///
/// CPU times are counted in clock ticks per process, so each process read at the first and
/// last sample can add up to one tick of rounding at each end; that much is tolerated.
pub fn check(stats: &ResourceStats, limits: &MachineLimits) -> Result<(), Implausible> {
    let slack = 2.0 * stats.peak_processes.max(1) as f64 / limits.ticks_per_second;
    if stats.cpu_seconds > limits.cores as f64 * stats.wall_seconds + slack {
        return Err(Implausible::Cpu {
            pid: stats.pid,
            cpu_percent: stats.mean_cpu_percent,
            cpu_seconds: stats.cpu_seconds,
            wall_seconds: stats.wall_seconds,
            cores: limits.cores,
        });
    }
    let bytes = stats.peak_memory_bytes();
    if let Some(ram_bytes) = limits.ram_bytes
        && bytes > ram_bytes
    {
        return Err(Implausible::Memory {
            pid: stats.pid,
            bytes,
            method: stats.memory_method,
            ram_bytes,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
