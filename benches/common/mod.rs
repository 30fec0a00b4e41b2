//! What the comparison benches share: settings from the environment, the median, and the
//! alternating A/B rounds of the engine-client comparisons.
//!
//! Two loops timed one after the other drift apart with the machine (frequency, neighbours on
//! a shared host), so the two sides alternate in short slices, in ABBA order so that a steady
//! drift cancels; the ratio is taken per pair of slices, each round reports its median ratio,
//! and the rounds their spread.

#![allow(dead_code)] // each bench uses its own part

pub mod in_process;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ragdbeval::distance::Distance;
use ragdbeval::engine::{CollectionSpec, ConnectOptions, VectorEngine};
use ragdbeval::runner::load::{closed_loop, thread_cpu_time};
use ragdbeval::synthetic::SyntheticSpec;
use ragdbeval::vectors::Vectors;

/// The registered engine `name`, opened on `url` as `bench --db NAME --url URL --recreate`
/// opens it, with collection `collection` built from `train` under the integer `build`
/// parameters and searched with the `search` ones, with the work directory it was given (keep
/// it while the engine lives). Panics with the step that failed.
pub fn loaded_engine(
    name: &str,
    url: &str,
    collection: &str,
    distance: Distance,
    train: &Vectors,
    build: &[(&str, i64)],
    search: &[(&str, i64)],
) -> (Box<dyn VectorEngine>, tempfile::TempDir) {
    let work_dir = tempfile::tempdir().expect("temp dir");
    let entry = ragdbeval::adapters::find(name).expect("a registered engine");
    let options = ConnectOptions {
        url: Some(url.to_string()),
        recreate: true,
        batch_size: 1000,
        upload_parallel: 2,
        ..ConnectOptions::default()
    };
    let mut engine = (entry.open)(&options).unwrap_or_else(|e| panic!("connect to {name}: {e}"));
    let spec = CollectionSpec {
        name: collection.into(),
        ..in_process::collection(distance, train, in_process::params(build), work_dir.path())
    };
    in_process::load(engine.as_mut(), &spec, train, &in_process::params(search));
    (engine, work_dir)
}

/// One slice of ragdbeval's closed loop (`bench --concurrency C --duration S`), with the
/// client CPU of its sender threads per query.
pub fn closed_loop_slice(
    engine: &dyn VectorEngine,
    queries: &Vectors,
    k: usize,
    clients: usize,
    secs: u64,
) -> Slice {
    let level = closed_loop(
        engine,
        queries,
        k,
        clients,
        Duration::from_secs(secs),
        Duration::from_secs(1),
    )
    .expect("closed loop");
    let cpu = level.sender_cpu_ms.unwrap_or(f64::NAN) / 1e3;
    Slice {
        qps: level.qps,
        cpu_per_query: cpu / level.completed.max(1) as f64,
        calls: level.completed,
    }
}

/// How long and on what an engine-client comparison runs.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// Rounds, each reporting its median ratio.
    pub rounds: usize,
    /// Slice pairs per round and client count.
    pub pairs: usize,
    /// Seconds per slice.
    pub slice_s: u64,
    /// Points in the synthetic set.
    pub n: usize,
    /// Their dimension.
    pub dim: usize,
}

/// The settings of the engine-client bench `bench`: from the environment (ROUNDS, PAIRS,
/// SLICE_S, N, DIM) under `cargo bench`, which passes `--bench`; otherwise (as `cargo test`
/// runs a bench) one pair of slices on 2,000 points, said on stdout: enough to run every
/// line of the comparison, not to measure it.
pub fn settings(bench: &str) -> Settings {
    if std::env::args().any(|a| a == "--bench") {
        Settings {
            rounds: env("ROUNDS", 3).max(1),
            // 12: with 8 the rounds of pgvector and Redis at 2 clients moved by ±5.6 % and
            // ±8.9 % on the 2-core VM (single slice pairs 0.67–1.40), with 12 by ±2.5 % and
            // ±1.9 %; a round's figure is a mean over its pairs.
            pairs: env("PAIRS", 12).max(2),
            slice_s: env("SLICE_S", 2).max(1) as u64,
            n: env("N", 50_000),
            dim: env("DIM", 50),
        }
    } else {
        println!(
            "{bench}: test mode (one pair of slices on 2,000 points; --bench for the real run)"
        );
        Settings {
            rounds: 1,
            pairs: 1,
            slice_s: 1,
            n: 2_000,
            dim: 50,
        }
    }
}

/// The server URL in the environment variable `var`, or `None` after saying on stdout that
/// `bench` is skipped and `how` to run it.
pub fn server_url(bench: &str, var: &str, how: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.trim().is_empty() => Some(url),
        _ => {
            println!("{bench}: skipped, {var} is not set ({how})");
            None
        }
    }
}

/// An engine-client bench's start: the server, the run's settings, the queries, and
/// ragdbeval's engine loaded with the synthetic set.
pub struct Comparison {
    /// The registered engine.
    pub name: String,
    pub url: String,
    pub settings: Settings,
    pub test: Vectors,
    pub engine: Box<dyn VectorEngine>,
    /// The engine's work directory (keep it while the engine lives).
    pub work_dir: tempfile::TempDir,
}

/// The comparison of registered engine `name`: reads its server's URL variable (from its
/// `config.toml`) and the settings, generates the clustered set (`settings.n` ×
/// `settings.dim`, the demo set's queries) and loads ragdbeval's engine with it, into
/// `collection` under the integer `build` and `search` parameters; `None` when the bench is
/// skipped.
pub fn prepare(
    name: &str,
    collection: &str,
    distance: Distance,
    build: &[(&str, i64)],
    search: &[(&str, i64)],
) -> Option<Comparison> {
    let bench = format!("{name}_client");
    let server = ragdbeval::adapters::find(name)
        .and_then(|entry| entry.meta.server.as_ref())
        .expect("a registered server engine");
    let how = if server.script {
        format!("scripts/engine_vs_native.sh {name} starts a server and runs this bench")
    } else {
        format!(
            "{}; then scripts/engine_vs_native.sh {name}",
            server.how_to_get
        )
    };
    let url = server_url(&bench, server.url_env, &how)?;
    let settings = settings(&bench);
    let spec = SyntheticSpec {
        n: settings.n,
        dim: settings.dim,
        distance,
        ..SyntheticSpec::demo()
    };
    let (train, test) = spec.generate();
    let (engine, work_dir) = loaded_engine(name, &url, collection, distance, &train, build, search);
    Some(Comparison {
        name: name.to_string(),
        url,
        settings,
        test,
        engine,
        work_dir,
    })
}

/// How a comparison counts ragdbeval's client CPU.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ClientCpu {
    /// The sender threads' own CPU (a blocking client).
    Threads,
    /// The whole process's (a client whose work runs on an async runtime's threads).
    Process,
}

impl Comparison {
    /// Says what is compared (the engine's set, `index`: the index, its search setting and
    /// k), then runs the rounds of ragdbeval's closed loop against `native` (`native_name`)
    /// at 1 and 2 clients, in ABBA order.
    pub fn against(
        &self,
        index: &str,
        native_name: &str,
        cpu: ClientCpu,
        native: &dyn Fn(usize) -> Slice,
    ) {
        let Settings {
            rounds,
            pairs,
            slice_s,
            n,
            dim,
        } = self.settings;
        let ours = |clients: usize| {
            let slice = || closed_loop_slice(&*self.engine, &self.test, K, clients, slice_s);
            match cpu {
                ClientCpu::Threads => slice(),
                ClientCpu::Process => with_process_cpu(slice),
            }
        };
        let whose = match cpu {
            ClientCpu::Threads => "",
            ClientCpu::Process => "; client CPU is the bench process's",
        };
        println!(
            "{}: {n} × {dim} clustered points, {} queries, {index}, k = {K}; {rounds} \
             round(s) of {pairs} slice pairs of {slice_s} s per side and client count, ABBA \
             order{whose}",
            self.name,
            self.test.len()
        );
        ab_rounds(native_name, &[1, 2], rounds, pairs, &ours, native);
    }
}

/// Neighbours asked for per query, on both sides of a client comparison.
pub const K: usize = 10;

/// The mean of per-round ratios and their largest relative distance from it.
pub fn mean_and_spread(ratios: &[f64]) -> (f64, f64) {
    let mean = ratios.iter().sum::<f64>() / ratios.len().max(1) as f64;
    let spread = ratios
        .iter()
        .map(|m| (m / mean - 1.0).abs())
        .fold(0.0, f64::max);
    (mean, spread)
}

/// A native client's closed loop: `clients` threads, each with the state `open(thread)` gives
/// it (its connection), calling `send(state, i)` for i = a per-thread offset, +1, +2, … until
/// `secs` seconds have passed; the caller maps i onto its query set. Returns the completed
/// calls per second and the threads' CPU per call.
pub fn native_threads<S>(
    clients: usize,
    secs: u64,
    open: &(dyn Fn(usize) -> S + Sync),
    send: &(dyn Fn(&mut S, usize) + Sync),
) -> Slice {
    let done = AtomicU64::new(0);
    let cpu_ns = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    std::thread::scope(|s| {
        for c in 0..clients {
            let (done, cpu_ns, stop) = (&done, &cpu_ns, &stop);
            s.spawn(move || {
                let mut state = open(c);
                let cpu0 = thread_cpu_time();
                let mut n = 0u64;
                // Threads start at different places of the query set.
                let mut i = c * 7919;
                while !stop.load(Ordering::Relaxed) {
                    send(&mut state, i);
                    n += 1;
                    i += 1;
                }
                if let (Some(a), Some(b)) = (cpu0, thread_cpu_time()) {
                    cpu_ns.fetch_add((b - a).as_nanos() as u64, Ordering::Relaxed);
                }
                done.fetch_add(n, Ordering::Relaxed);
            });
        }
        std::thread::sleep(Duration::from_secs(secs));
        stop.store(true, Ordering::Relaxed);
    });
    let wall = start.elapsed().as_secs_f64();
    let n = done.into_inner();
    Slice {
        qps: n as f64 / wall,
        cpu_per_query: cpu_ns.into_inner() as f64 / 1e9 / n.max(1) as f64,
        calls: n,
    }
}

/// CPU time (user + system) of this process so far, all its threads.
pub fn process_cpu() -> Duration {
    rusage(libc::RUSAGE_SELF)
}

/// CPU time of every waited-for child process so far.
pub fn children_cpu() -> Duration {
    rusage(libc::RUSAGE_CHILDREN)
}

fn rusage(who: libc::c_int) -> Duration {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// A numeric setting from the environment, or `default`.
pub fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The median (sorts `values`).
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// One timed slice of one side: queries per second and client CPU seconds per query.
#[derive(Debug, Clone, Copy)]
pub struct Slice {
    pub qps: f64,
    pub cpu_per_query: f64,
    /// Calls completed in the slice.
    pub calls: u64,
}

/// Runs `rounds` rounds of `pairs` slice pairs per client count, ragdbeval (`ours`) against
/// the native client (`native`, named `native_name`), and prints per round the mean QPS and
/// client CPU per query of each side and their ratio, then per client count the mean
/// ratio over the rounds and its spread. Both sides are run once per client count first,
/// untimed (connections, caches).
pub fn ab_rounds(
    native_name: &str,
    clients: &[usize],
    rounds: usize,
    pairs: usize,
    ours: &dyn Fn(usize) -> Slice,
    native: &dyn Fn(usize) -> Slice,
) {
    for &c in clients {
        ours(c);
        native(c);
    }
    let mut rounds_ratios: Vec<Vec<f64>> = vec![Vec::new(); clients.len()];
    for round in 1..=rounds {
        for (ci, &c) in clients.iter().enumerate() {
            let mut ratios = Vec::with_capacity(pairs);
            let (mut o_qps, mut n_qps, mut o_cpu, mut n_cpu) = (0.0, 0.0, 0.0, 0.0);
            for pair in 0..pairs {
                let (o, n) = if pair % 2 == 0 {
                    let o = ours(c);
                    (o, native(c))
                } else {
                    let n = native(c);
                    (ours(c), n)
                };
                ratios.push(o.qps / n.qps);
                let share = 1.0 / pairs as f64;
                o_qps += o.qps * share;
                n_qps += n.qps * share;
                o_cpu += o.cpu_per_query * share;
                n_cpu += n.cpu_per_query * share;
            }
            // The round's ratio is that of the two sides' mean QPS over all its slices (the
            // slices are equally long, so it is the ratio of queries completed): every slice
            // counts, and a drift of the machine that the ABBA order cancels stays cancelled.
            // The median of the pairs' ratios is printed beside it.
            let ratio = o_qps / n_qps;
            rounds_ratios[ci].push(ratio);
            let m = median(&mut ratios);
            println!(
                "round {round}, {c} client(s): ragdbeval {o_qps:.0} QPS ({:.1} µs client \
                 CPU/query), {native_name} {n_qps:.0} QPS ({:.1} µs/query); ratio {ratio:.3} \
                 (pairs: median {m:.3}, {:.3} to {:.3})",
                o_cpu * 1e6,
                n_cpu * 1e6,
                ratios[0],
                ratios[ratios.len() - 1]
            );
        }
    }
    for (ci, &c) in clients.iter().enumerate() {
        let (mean, spread) = mean_and_spread(&rounds_ratios[ci]);
        println!(
            "{c} client(s): QPS ratio ragdbeval / {native_name} over {rounds} round(s): mean \
             {mean:.3}, spread ±{:.1} % (targets: ≥ 0.95, within ±5 %)",
            spread * 100.0
        );
    }
}

/// `slice` with its client CPU replaced by the process's CPU per query over the slice (for
/// clients whose work runs on runtime threads, not on the callers).
pub fn with_process_cpu(slice: impl FnOnce() -> Slice) -> Slice {
    let cpu0 = process_cpu();
    let s = slice();
    Slice {
        cpu_per_query: (process_cpu() - cpu0).as_secs_f64() / s.calls.max(1) as f64,
        ..s
    }
}

/// A minimal async client's closed loop: `clients` tasks on `rt`, each awaiting `call(i)` one
/// after another for i = a per-task offset, +1, +2, … until `secs` seconds have passed (the
/// caller maps i onto its requests). Returns the calls per second and the process's CPU per
/// call.
pub fn tokio_slice<F, Fut>(
    rt: &tokio::runtime::Runtime,
    clients: usize,
    secs: u64,
    call: F,
) -> Slice
where
    F: Fn(usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    with_process_cpu(|| {
        let start = Instant::now();
        let done: u64 = rt.block_on(async {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
            let mut tasks = tokio::task::JoinSet::new();
            for c in 0..clients {
                let call = call.clone();
                tasks.spawn(async move {
                    let (mut n, mut i) = (0u64, c * 7919);
                    while tokio::time::Instant::now() < deadline {
                        call(i).await;
                        n += 1;
                        i += 1;
                    }
                    n
                });
            }
            tasks.join_all().await.into_iter().sum()
        });
        Slice {
            qps: done as f64 / start.elapsed().as_secs_f64(),
            cpu_per_query: f64::NAN,
            calls: done,
        }
    })
}
