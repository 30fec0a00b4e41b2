//! Adapter conformance: what every registered engine must do, one module of tests per engine
//! folder, with the settings its `config.toml` declares in `[engine.conformance]`
//! ([`ragdbeval::engine_meta::Conformance`]) and its `default` set: a new engine is tested
//! without touching this file.
//!
//! - `runbooks` (every engine): the default mutation runbook through `bench` (build 90 %,
//!   insert, update, delete, with a search after each) must honour deletes (0 stale hits), make
//!   updates visible (0 ghost hits, read-after-write seen), keep ids stable and give sane recall
//!   that does not fall as its search-effort parameter grows; then the streaming runbook.
//! - `filtered_bench` (every engine): `bench --filter` keeps to its predicates
//!   ([`crate::filtered::every_engine`]).
//! - every server engine, without a server: a closed port fails fast as unreachable, a
//!   malformed URL is a parameter error, and a server that accepts and never answers fails the
//!   run within its deadline with one error line.
//! - every server engine, against its server: the adapter API's lifecycle (build, search,
//!   batches, threads, effort sweep, upserts, deletes, sizes, close), `--recreate`, unknown
//!   parameters refused, and Ctrl-C in the middle of a search ([`crate::interrupt`]).
//!
//! Embedded engines always run. Server engines run when build.rs saw their server
//! (`scripts/test.sh` starts the servers and lists them); otherwise their tests are reported
//! as ignored, except under CI, where a missing server is a failure (Qdrant excepted: it
//! cannot be installed here).

use crate::common::{engine_url, ragdbeval, stderr};
use ragdbeval::results::{RunResult, RunState};

mod server;

macro_rules! engines {
    ($($(#[$only_if:meta])? $module:ident => $name:literal @ $path:literal,)*) => {
        $(
            $(#[$only_if])?
            mod $module {
                #[test]
                #[cfg_attr(
                    not(engine_runs = $name),
                    ignore = "needs its server (scripts/test.sh starts it, or set the URL variable its config.toml names) or its cargo feature (scripts/test.sh builds it)"
                )]
                fn runbooks() {
                    super::run_case($name);
                }

                #[test]
                #[cfg_attr(
                    not(engine_runs = $name),
                    ignore = "needs its server (scripts/test.sh starts it, or set the URL variable its config.toml names) or its cargo feature (scripts/test.sh builds it)"
                )]
                fn filtered_bench() {
                    crate::filtered::every_engine::run_case($name);
                }

                #[cfg(server_engine = $name)]
                #[test]
                fn unreachable_url_fails_fast() {
                    super::server::unreachable_url_fails_fast($name);
                }

                #[cfg(server_engine = $name)]
                #[test]
                fn bad_url_is_a_parameter_error() {
                    super::server::bad_url_is_a_parameter_error($name);
                }

                #[cfg(server_engine = $name)]
                #[test]
                fn silent_server_hits_the_deadline() {
                    super::server::silent_server_hits_the_deadline($name);
                }

                #[cfg(server_engine = $name)]
                #[test]
                #[cfg_attr(
                    not(engine_runs = $name),
                    ignore = "needs its server: scripts/test.sh starts it, or set the URL variable its config.toml names"
                )]
                fn api_lifecycle() {
                    super::server::api_lifecycle($name);
                }

                #[cfg(server_engine = $name)]
                #[test]
                #[cfg_attr(
                    not(engine_runs = $name),
                    ignore = "needs its server: scripts/test.sh starts it, or set the URL variable its config.toml names"
                )]
                fn ctrl_c_mid_search() {
                    crate::interrupt::ctrl_c_mid_search_is_interrupted($name);
                }

                #[cfg(server_engine = $name)]
                #[test]
                #[cfg_attr(
                    not(engine_runs = $name),
                    ignore = "needs its server: scripts/test.sh starts it, or set the URL variable its config.toml names"
                )]
                fn recreate_behaviour() {
                    super::server::recreate_behaviour($name);
                }

                #[cfg(server_engine = $name)]
                #[test]
                #[cfg_attr(
                    not(engine_runs = $name),
                    ignore = "needs its server: scripts/test.sh starts it, or set the URL variable its config.toml names"
                )]
                fn unknown_parameters_are_rejected() {
                    super::server::unknown_parameters_are_rejected($name);
                }
            }
        )*
    };
}

include!(concat!(env!("OUT_DIR"), "/engines.rs"));

/// A URL of `engine`'s kind for a server at 127.0.0.1:`port` (its `url_form`).
pub fn url_at(engine: &str, port: u16) -> String {
    let server = crate::common::entry(engine).meta.server.as_ref();
    let form = server.map_or("", |s| s.url_form);
    form.replace("{port}", &port.to_string())
}

/// A clustered dataset small enough for every engine, in the engine's distance.
fn dataset(distance: &str) -> String {
    format!("gen:clustered:n=4000,dim=32,queries=200,distance={distance},seed=11")
}

fn run_case(engine: &str) {
    let case = &crate::common::entry(engine).meta.conformance;
    // A server engine's test runs only when build.rs saw its server (or `CI`, except for
    // Qdrant): otherwise it is ignored, so here a missing URL is a failure.
    let url = engine_url(engine);
    let dataset = dataset(case.distance);
    let dir = tempfile::tempdir().unwrap();
    // `hnsw_ef=8,32,128`: one search per value at every step, lowest effort first.
    let sweep_len = case
        .effort_sweep
        .split_once('=')
        .map_or(0, |(_, values)| values.split(',').count());
    let mut args = vec![
        "bench",
        "--db",
        engine,
        "--dataset",
        &dataset,
        "-q",
        "--name",
        "c",
        "--recreate",
        "--warmup",
        "10",
    ];
    if let Some(u) = &url {
        args.extend(["--url", u.as_str()]);
    }
    if sweep_len > 0 {
        args.extend(["--search-param", case.effort_sweep]);
    }
    for param in case.search_params {
        args.extend(["--search-param", param]);
    }
    let out = ragdbeval(dir.path(), &args);
    assert!(out.status.success(), "{}: {}", engine, stderr(&out));
    let r = RunResult::load(&dir.path().join("results/c.json")).unwrap();
    assert_eq!(r.status.state, RunState::Completed, "{}", engine);
    let config = &r.configs[0];

    let searches: Vec<_> = config.searches().collect();
    let per_step = sweep_len.max(1);
    assert_eq!(
        searches.len(),
        4 * per_step,
        "{}: one search per step and setting",
        engine
    );
    let live: Vec<usize> = searches
        .iter()
        .step_by(per_step)
        .map(|s| s.live_points)
        .collect();
    assert_eq!(live, [3600, 4000, 4000, 3800], "{}", engine);
    for s in &searches {
        assert_eq!(
            s.stale_hits, 0,
            "{} step {}: deleted ids returned",
            engine, s.runbook_step
        );
        assert_eq!(
            s.ghost_hits, 0,
            "{} step {}: old vectors returned",
            engine, s.runbook_step
        );
    }
    for step in searches.chunks(per_step) {
        let best = step.last().unwrap();
        assert!(
            best.quality.recall >= case.min_recall,
            "{} step {} ({}): recall {:.4} < {}",
            engine,
            best.runbook_step,
            best.after,
            best.quality.recall,
            case.min_recall
        );
        for w in step.windows(2) {
            assert!(
                w[1].quality.recall + 0.02 >= w[0].quality.recall,
                "{} step {}: recall fell from {:.4} to {:.4} as effort grew",
                engine,
                w[0].runbook_step,
                w[0].quality.recall,
                w[1].quality.recall
            );
        }
    }
    for m in config.mutations() {
        assert_eq!(
            m.visibility.visible, m.visibility.samples,
            "{} {}: writes not visible",
            engine, m.kind
        );
        assert!(m.latency.count > 0, "{} {}", engine, m.kind);
    }
    stream_case(engine, &dataset, url.as_deref());
}

/// The example streaming runbook against the real engine: searches while inserts, updates and
/// deletes run, at a fixed rate and as fast as possible, with the highest effort of the sweep.
/// No stale hit, and recall under streaming no more than 0.05 below the engine's static floor.
fn stream_case(engine: &str, dataset: &str, url: Option<&str>) {
    let case = &crate::common::entry(engine).meta.conformance;
    let mut dir = tempfile::tempdir().unwrap();
    let runbook = concat!(env!("CARGO_MANIFEST_DIR"), "/datasets/runbooks/stream.toml");
    // The highest effort of the sweep (`hnsw_ef=8,32,128` → `hnsw_ef=128`).
    let best_effort = case
        .effort_sweep
        .split_once('=')
        .map(|(name, values)| format!("{name}={}", values.rsplit(',').next().unwrap_or(values)));
    let mut args = vec![
        "bench",
        "--db",
        engine,
        "--dataset",
        dataset,
        "--runbook",
        runbook,
        "-q",
        "--name",
        "s",
        "--recreate",
    ];
    if let Some(u) = url {
        args.extend(["--url", u]);
    }
    let mut params: Vec<&str> = case.search_params.to_vec();
    if let Some(p) = &best_effort {
        params.push(p);
    }
    for p in &params {
        args.extend(["--search-param", *p]);
    }
    let mut out = ragdbeval(dir.path(), &args);
    if case.no_stream.is_some() {
        assert_eq!(
            out.status.code(),
            Some(2),
            "{engine} stream: {}",
            stderr(&out)
        );
        let said = stderr(&out);
        assert!(
            said.contains("is a stream step") && said.lines().count() == 1,
            "{said}"
        );
        return;
    }
    // Single-node Chroma can fail a search that races a delete of one of its hits ("Error
    // finding id", HTTP 500), more often on a loaded machine. ragdbeval reports it as the
    // engine's failure, as it should; the case is run once more so that the rest is tested.
    if !out.status.success() && stderr(&out).contains("Error finding id") {
        eprintln!(
            "{engine} stream: the server's search/delete race, run again: {}",
            stderr(&out)
        );
        dir = tempfile::tempdir().unwrap();
        out = ragdbeval(dir.path(), &args);
    }
    assert!(out.status.success(), "{} stream: {}", engine, stderr(&out));
    let r = RunResult::load(&dir.path().join("results/s.json")).unwrap();
    assert_eq!(r.status.state, RunState::Completed, "{}", engine);
    let config = &r.configs[0];
    let streams: Vec<_> = config.streams().collect();
    assert_eq!(streams.len(), 2, "{engine}: two stream steps");
    for s in &streams {
        assert!(
            s.searches >= 2,
            "{engine} step {}: no searches",
            s.runbook_step
        );
        assert!(
            s.inserts > 0 && s.deletes > 0,
            "{engine} step {}",
            s.runbook_step
        );
        assert_eq!(
            s.stale_hits, 0,
            "{engine} step {}: ids returned after their delete was acknowledged",
            s.runbook_step
        );
        assert!(
            s.recall >= case.min_recall - 0.05,
            "{engine} step {}: streaming recall {:.4}",
            s.runbook_step,
            s.recall
        );
        let f = &s.freshness;
        assert!(f.samples > 0, "{engine}: {f:?}");
        assert_eq!(f.not_seen, 0, "{engine}: sampled writes never seen: {f:?}");
    }
    for s in config.searches() {
        assert_eq!(s.stale_hits, 0, "{engine} search after the stream");
        assert_eq!(s.ghost_hits, 0, "{engine} search after the stream");
    }
}
