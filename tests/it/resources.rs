//! The resource sampler against real multi-process and multi-threaded servers: its memory
//! figure for a server's process tree must match the PSS the kernel reports for the same
//! processes (`/proc/PID/smaps_rollup`, summed, read by this test on its own), and must not grow
//! with the server's thread count.
//!
//! Servers: PostgreSQL + pgvector from `PGVECTOR_URL` (many processes sharing
//! `shared_buffers`) and Chroma from `CHROMA_URL` (one process, many threads), started with
//! `scripts/servers/pgvector.sh start` / `scripts/servers/chroma.sh start`. Without the
//! variable at build time a test is reported as ignored, except under CI (`CI` set), where a
//! missing server is a failure, as in `pgvector.rs` and `chroma.rs` (see `build.rs`).

use std::time::Duration;

use crate::common::{empty_result, server_url};
use ragdbeval::engine::ConnectOptions;
use ragdbeval::resources::{MachineLimits, MemoryMethod, Sampler, Watch, check};

/// The server's PID as ragdbeval finds it in a run: through the adapter.
fn server_pid(engine: &str, url: &str) -> u32 {
    let entry = ragdbeval::adapters::find(engine).expect("engine is registered");
    let opts = ConnectOptions {
        url: Some(url.to_string()),
        timeout: Duration::from_secs(60),
        ..ConnectOptions::default()
    };
    let e = (entry.open)(&opts).expect("open the engine");
    e.server_pid().expect(
        "the adapter finds the local server's PID (for chroma: RAGDBEVAL_SERVER_DIR of the \
         script that started it)",
    )
}

/// What this test reads itself, independently of ragdbeval's code: the processes of the tree
/// (by parent PID over all of /proc), their summed PSS and RSS (`smaps_rollup`) and threads.
#[derive(Debug)]
struct Truth {
    processes: usize,
    threads: u64,
    pss: u64,
    rss: u64,
}

fn field_kb(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn truth(root: u32) -> Truth {
    let mut parent = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let after = stat.rsplit_once(')').unwrap().1;
        let ppid: u32 = after.split_whitespace().nth(1).unwrap().parse().unwrap();
        parent.push((pid, ppid));
    }
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        i += 1;
        tree.extend(parent.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
    }
    let mut t = Truth {
        processes: 0,
        threads: 0,
        pss: 0,
        rss: 0,
    };
    for pid in tree {
        let Ok(rollup) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")) else {
            continue; // exited meanwhile
        };
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        t.processes += 1;
        t.pss += field_kb(&rollup, "Pss:");
        t.rss += field_kb(&rollup, "Rss:");
        t.threads += field_kb(&status, "Threads:") / 1024;
    }
    t
}

/// Samples the server tree for a while with ragdbeval's sampler, reads the truth at the end
/// of the window (before the sampler's last reading), and compares.
fn compare(pid: u32, during: impl FnOnce()) -> (ragdbeval::resources::ResourceStats, Truth) {
    let sampler = Sampler::start(Watch::with_engine(Some(pid)), Duration::from_millis(20));
    during();
    std::thread::sleep(Duration::from_millis(200));
    let truth = truth(pid);
    let stats = sampler.stop().engine.expect("engine stats");
    println!(
        "pid {pid}: ragdbeval peak {} MB ({:?}), peak summed RSS {} MB, {} processes; \
         /proc smaps_rollup: PSS {} MB, RSS {} MB over {} processes, {} threads; CPU {:.1}%",
        stats.peak_memory_bytes() >> 20,
        stats.memory_method,
        stats.peak_rss_bytes >> 20,
        stats.peak_processes,
        truth.pss >> 20,
        truth.rss >> 20,
        truth.processes,
        truth.threads,
        stats.mean_cpu_percent,
    );
    assert_eq!(stats.memory_method, MemoryMethod::Pss, "{stats:?}");
    let ours = stats.peak_memory_bytes() as f64;
    let pss = truth.pss as f64;
    assert!(
        (ours - pss).abs() <= 0.25 * pss,
        "ragdbeval {ours} bytes vs summed PSS {pss} bytes: more than 25 % apart"
    );
    check(&stats, &MachineLimits::this_machine()).expect("a possible figure");
    (stats, truth)
}

/// PostgreSQL forks a backend per connection; they all map `shared_buffers`. Summing RSS
/// counts those pages once per backend, PSS once.
#[cfg(feature = "pgvector")]
#[test]
#[cfg_attr(not(engine_runs = "pgvector"), ignore = "needs PGVECTOR_URL")]
fn pgvector_server_tree_memory_is_its_pss() {
    let url = server_url("PGVECTOR_URL", "scripts/servers/pgvector.sh start");
    let pid = server_pid("pgvector", &url);
    let table = crate::common::unique_name("resources");
    let connect = || postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let mut admin = connect();
    admin
        .batch_execute(&format!(
            "CREATE TABLE {table} AS SELECT g AS id, md5(g::text) || md5((g + 1)::text) AS t \
             FROM generate_series(1, 200000) g"
        ))
        .expect("create table");
    // Four more backends, each reading the whole table through shared buffers.
    let mut clients: Vec<postgres::Client> = (0..4).map(|_| connect()).collect();
    let scan = format!("SELECT count(*), sum(length(t)) FROM {table}");
    for c in &mut clients {
        c.query_one(&scan, &[]).expect("scan");
    }
    let (stats, truth) = compare(pid, || {
        for c in &mut clients {
            c.query_one(&scan, &[]).expect("scan");
        }
    });
    admin
        .batch_execute(&format!("DROP TABLE {table}"))
        .expect("drop table");
    // Postmaster, its auxiliary processes and our 5 backends.
    assert!(truth.processes >= 6, "{truth:?}");
    assert!(
        stats.peak_processes as usize + 2 >= truth.processes,
        "{stats:?} {truth:?}"
    );
    // The shared pages are what summed RSS counts many times: it must be more than 25 % above
    // the PSS here, or a sampler summing RSS would pass the comparison above too.
    assert!(
        truth.rss as f64 > 1.25 * truth.pss as f64,
        "{stats:?} {truth:?}"
    );
}

/// Chroma serves from one process with many threads: the figure must be that process's,
/// not multiplied by the thread count.
#[test]
#[cfg_attr(not(engine_runs = "chroma"), ignore = "needs CHROMA_URL")]
fn chroma_server_memory_is_not_multiplied_by_threads() {
    let url = server_url("CHROMA_URL", "scripts/servers/chroma.sh start");
    let pid = server_pid("chroma", &url);
    let (stats, truth) = compare(pid, || ());
    assert!(
        truth.threads > truth.processes as u64,
        "Chroma should be multi-threaded: {truth:?}"
    );
    let rss = truth.rss as f64;
    assert!(
        (stats.peak_rss_bytes as f64) <= 1.25 * rss,
        "summed RSS {} vs the processes' RSS {rss}: threads counted as processes?",
        stats.peak_rss_bytes
    );
}

/// A figure no machine can produce is stated as a warning stored with the run, never passed
/// off as a result; a possible one adds none.
#[test]
fn impossible_figures_become_warnings_of_the_run() {
    use ragdbeval::output::warnings::Warning;
    use ragdbeval::resources::ResourceStats;

    let cores = MachineLimits::this_machine().cores as f64;
    let run_with = |engine: ResourceStats| {
        let search = serde_json::json!({
            "phase": "search",
            "runbook_step": 2, "after": "build", "search_params": {}, "mode": "single",
            "warmup_queries": 0,
            "quality": ragdbeval::metrics::quality::QualitySummary::default(),
            "latency": ragdbeval::metrics::latency::LatencySummary::default(),
            "qps": 1.0, "qps_from_mean_latency": 1.0, "wall_s": 1.0, "live_points": 10,
            "stale_hits": 0, "ghost_hits": 0,
            "resources": {"client": ResourceStats::default(), "engine": engine},
            "sidecar_step": 0
        });
        let config = serde_json::json!({"build_params": {}, "steps": [search]});
        let mut result = empty_result();
        result
            .configs
            .push(serde_json::from_value(config).expect("a config"));
        ragdbeval::runner::finish(&mut result, Ok(()));
        result.warnings
    };
    let engine = |cpu_seconds: f64| ResourceStats {
        pid: 42,
        peak_rss_bytes: 100 << 20,
        mean_cpu_percent: 100.0 * cpu_seconds,
        cpu_seconds,
        wall_seconds: 1.0,
        samples: 10,
        peak_processes: 1,
        ..ResourceStats::default()
    };
    // The defect's figure, scaled to this machine: more than all its cores for the whole phase.
    let warnings = run_with(engine(cores * 1.12 + 0.1));
    let flagged: Vec<&Warning> = warnings
        .iter()
        .filter(|w| matches!(w, Warning::ImplausibleResources { side, .. } if side == "engine"))
        .collect();
    assert_eq!(flagged.len(), 1, "{warnings:?}");
    assert!(
        flagged[0].to_string().contains("IMPLAUSIBLE"),
        "{}",
        flagged[0]
    );
    let warnings = run_with(engine(cores * 0.5));
    assert!(
        !warnings
            .iter()
            .any(|w| matches!(w, Warning::ImplausibleResources { .. })),
        "{warnings:?}"
    );
}
