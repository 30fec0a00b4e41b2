//! Unit tests of the parent module.

use super::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The tests below measure this very process: they run one at a time, so one test's
/// allocations and CPU do not land in another's figures.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn sees_allocation_and_cpu() {
    let _g = serial();
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
    assert_eq!(r.client.memory_method, MemoryMethod::Rss);
    assert_eq!(r.client.peak_memory_bytes(), r.client.peak_rss_bytes);
    assert_eq!(r.client.peak_processes, 1);
    assert!(r.engine.is_none());
}

/// VmRSS of this process from /proc/self/status, read independently of the sampler.
fn status_rss() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = s.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// CPU (user + system, all threads) of this process in seconds, from getrusage: a source
/// independent of the /proc parsing under test.
fn self_cpu_seconds() -> f64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes into the struct passed.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) }, 0);
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

/// The defect: every thread was counted as a process carrying the whole RSS and its CPU.
/// Sampling this (multi-threaded) process as an "engine" tree must give its own RSS, and
/// the same figure with 8 more threads alive. Failed before the fix: the sampler reported
/// 738 MB against a VmRSS of 148 MB.
#[test]
fn threads_do_not_multiply_memory_or_cpu() {
    let _g = serial();
    let me = std::process::id();
    let v = vec![1u8; 64 << 20];
    std::hint::black_box(&v);
    let watch = Watch::with_engine(Some(me));
    let sampler = Sampler::start(watch, Duration::from_millis(20));
    std::thread::sleep(Duration::from_millis(200));
    let alone = sampler.stop().engine.unwrap();
    let rss_now = status_rss();

    let stop = Arc::new(AtomicBool::new(false));
    let cpu_before = self_cpu_seconds();
    let sampler = Sampler::start(watch, Duration::from_millis(20));
    let workers: Vec<_> = (0..8)
        .map(|i| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                // Two threads burn CPU, the others only exist.
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    if i < 2 {
                        x = x.wrapping_add(1);
                    } else {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                }
                std::hint::black_box(x);
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(400));
    let threaded = sampler.stop().engine.unwrap();
    let cpu_after = self_cpu_seconds();
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    drop(v);

    let lo = rss_now as f64 * 0.75;
    let hi = rss_now as f64 * 1.25;
    assert!(
        (lo..hi).contains(&(alone.peak_rss_bytes as f64)),
        "alone: sampler {} vs VmRSS {rss_now}",
        alone.peak_rss_bytes
    );
    assert!(
        (threaded.peak_rss_bytes as f64) < alone.peak_rss_bytes as f64 * 1.25,
        "8 more threads grew the figure: {} -> {}",
        alone.peak_rss_bytes,
        threaded.peak_rss_bytes
    );
    // PSS of one process: its private pages plus shares of shared ones, so at least the
    // 64 MB touched here and at most its RSS.
    assert_eq!(threaded.memory_method, MemoryMethod::Pss, "{threaded:?}");
    let pss = threaded.peak_memory_bytes();
    assert!(
        pss > 64 << 20 && pss <= threaded.peak_rss_bytes,
        "{threaded:?}"
    );
    assert_eq!(threaded.peak_processes, 1, "{threaded:?}");
    let real = cpu_after - cpu_before;
    // Tick granularity (10 ms per process and end) plus the sampler's own share.
    assert!(
        (threaded.cpu_seconds - real).abs() <= 0.2 * real + 0.05,
        "sampler CPU {} s vs process CPU {real} s",
        threaded.cpu_seconds
    );
    check(&threaded, &MachineLimits::this_machine()).unwrap();
}

#[test]
fn parses_stat_with_odd_command_names() {
    // comm may hold spaces and parentheses; fields are counted after the last ')'.
    let line = "4242 (postgres: a) (b) S 4000 4242 4242 0 -1 4194560 1 2 3 4 \
                150 25 7 3 20 0 9 0 123456 1000000 2500 18446744073709551615";
    let s = parse_stat(line).unwrap();
    assert_eq!(
        s,
        ProcStat {
            ppid: 4000,
            own_ticks: 175,
            children_ticks: 10,
            num_threads: 9,
        }
    );
    assert_eq!(parse_stat("4242 (x) S"), None);
    assert_eq!(parse_stat("garbage"), None);
}

#[test]
fn parses_smaps_rollup_and_status() {
    let rollup = "55d4c7a00000-7ffd2b1f4000 ---p 00000000 00:00 0   [rollup]\n\
                  Rss:              148752 kB\n\
                  Pss:               90210 kB\n\
                  Pss_Dirty:         70000 kB\n\
                  Shared_Clean:      60000 kB\n";
    assert_eq!(
        parse_smaps_rollup(rollup),
        Some((148752 * 1024, 90210 * 1024))
    );
    assert_eq!(parse_smaps_rollup("Rss: 1 kB\n"), None);
    let status = "Name:\tpostgres\nVmPeak:\t  300 kB\nVmRSS:\t   2048 kB\nThreads:\t1\n";
    assert_eq!(parse_status_rss(status), Some(2048 * 1024));
    assert_eq!(parse_status_rss("Name:\tkthreadd\n"), None);
}

/// The tree holds this process and its child processes, never its threads, by both walks.
#[test]
fn tree_has_children_not_threads() {
    let _g = serial();
    let me = std::process::id();
    let mut children: Vec<std::process::Child> = (0..3)
        .map(|_| {
            std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .unwrap()
        })
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let (stop, tx) = (stop.clone(), tx.clone());
            std::thread::spawn(move || {
                // SAFETY: gettid has no preconditions.
                tx.send(unsafe { libc::gettid() } as u32).unwrap();
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(5));
                }
            })
        })
        .collect();
    let tids: Vec<u32> = (0..4).map(|_| rx.recv().unwrap()).collect();

    let mut want: Vec<u32> = std::iter::once(me)
        .chain(children.iter().map(|c| c.id()))
        .collect();
    want.sort_unstable();
    let mut by_scan = tree_from_scan(me);
    by_scan.sort_unstable();
    let mut walked = process_tree(me);
    walked.sort_unstable();
    let by_children = tree_from_children_files(me).map(|mut t| {
        t.sort_unstable();
        t
    });
    let usage = read_usage(me, true).unwrap();

    stop.store(true, Ordering::Relaxed);
    for t in threads {
        t.join().unwrap();
    }
    for c in &mut children {
        c.kill().unwrap();
        c.wait().unwrap();
    }
    assert_eq!(by_scan, want);
    assert_eq!(walked, want);
    if let Some(t) = by_children {
        assert_eq!(t, want);
    }
    for tid in tids {
        assert!(!walked.contains(&tid), "thread {tid} counted as a process");
    }
    assert_eq!(usage.processes, 4, "{usage:?}");
    assert!(usage.threads >= 5, "{usage:?}");
    assert!(usage.pss_bytes.is_some(), "{usage:?}");
}

/// A child that exited but was not yet reaped (a zombie; PostgreSQL backends pass through
/// this state on every disconnect) has no memory left and its smaps_rollup fails with
/// ESRCH: it is gone, not unreadable, and must not turn the tree's figure into RSS.
#[test]
fn exited_children_do_not_degrade_pss() {
    let _g = serial();
    let me = std::process::id();
    let mut zombies: Vec<std::process::Child> = (0..2)
        .map(|_| std::process::Command::new("true").spawn().unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let usage = read_usage(me, true).unwrap();
    for z in &mut zombies {
        z.wait().unwrap();
    }
    assert!(usage.pss_bytes.is_some(), "{usage:?}");
    assert_eq!(usage.processes, 1, "{usage:?}");
}

fn stats(cpu_seconds: f64, wall_seconds: f64, pss: u64) -> ResourceStats {
    ResourceStats {
        pid: 1,
        peak_rss_bytes: pss * 2,
        peak_pss_bytes: Some(pss),
        memory_method: MemoryMethod::Pss,
        mean_cpu_percent: 100.0 * cpu_seconds / wall_seconds,
        cpu_seconds,
        wall_seconds,
        samples: 10,
        peak_processes: 3,
        ..ResourceStats::default()
    }
}

#[test]
fn impossible_figures_are_errors() {
    let limits = MachineLimits {
        cores: 2,
        ram_bytes: Some(8 << 30),
        ticks_per_second: 100.0,
    };
    // 2 cores fully busy, with a tick of rounding per process: possible.
    assert_eq!(check(&stats(2.05, 1.0, 1 << 30), &limits), Ok(()));
    // The reported Chroma figure on a 2-core machine: 224 %.
    let e = check(&stats(2.24, 1.0, 1 << 30), &limits).unwrap_err();
    assert!(matches!(e, Implausible::Cpu { cores: 2, .. }), "{e}");
    assert!(e.to_string().contains("224% CPU"), "{e}");
    // Memory is judged on the reported figure: PSS 6 GB fits though RSS 12 GB does not.
    assert_eq!(check(&stats(0.5, 1.0, 6 << 30), &limits), Ok(()));
    let e = check(&stats(0.5, 1.0, 9 << 30), &limits).unwrap_err();
    assert!(matches!(e, Implausible::Memory { .. }), "{e}");
    let mut rss_only = stats(0.5, 1.0, 6 << 30);
    rss_only.memory_method = MemoryMethod::Rss;
    rss_only.peak_pss_bytes = None;
    assert!(check(&rss_only, &limits).is_err());
    // Unknown RAM: no memory check.
    let unknown = MachineLimits {
        ram_bytes: None,
        ..limits
    };
    assert_eq!(check(&stats(0.5, 1.0, 9 << 30), &unknown), Ok(()));
    let real = MachineLimits::this_machine();
    assert!(
        real.cores >= 1 && real.ram_bytes.unwrap_or(0) > 0,
        "{real:?}"
    );
}

/// Result files written before the fields were added still load, as `legacy` RSS.
#[test]
fn old_stats_still_load() {
    let old = r#"{"pid": 7, "peak_rss_bytes": 2000000000, "mean_cpu_percent": 224.0,
                  "cpu_seconds": 2.24, "wall_seconds": 1.0, "samples": 10}"#;
    let s: ResourceStats = serde_json::from_str(old).unwrap();
    assert_eq!(s.memory_method, MemoryMethod::Legacy);
    assert_eq!(s.peak_memory_bytes(), 2_000_000_000);
    assert_eq!(s.peak_pss_bytes, None);
    let new = stats(0.5, 1.0, 1 << 20);
    let text = serde_json::to_string(&new).unwrap();
    assert!(text.contains(r#""memory_method":"pss""#), "{text}");
    assert_eq!(serde_json::from_str::<ResourceStats>(&text).unwrap(), new);
}
