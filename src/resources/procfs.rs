//! Reading `/proc`: parsers of its files, the process tree of a root PID, and one reading of
//! the memory and CPU of a process (tree), processes only, never threads.

use std::collections::HashSet;
use std::io::ErrorKind;

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
pub(super) fn parse_kb(v: &str) -> Option<u64> {
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
pub(super) fn clock_ticks() -> f64 {
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
    read_usage_with(root, tree, tree)
}

/// [`read_usage`], with PSS only when `with_pss` (the costly part: `smaps_rollup` walks every
/// mapped page; without it RSS comes from `status`, and `pss_bytes` is `None` with no
/// `pss_missing`).
pub fn read_usage_with(root: u32, tree: bool, with_pss: bool) -> Option<Reading> {
    let pids = if tree { process_tree(root) } else { vec![root] };
    let mut r = Reading {
        rss_bytes: 0,
        pss_bytes: with_pss.then_some(0),
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
        if with_pss {
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
