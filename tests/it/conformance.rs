//! Adapter conformance: every engine goes through the default mutation runbook (build 90 %,
//! insert, update, delete, with a search after each) and must honour deletes (0 stale hits),
//! make updates visible (0 ghost hits, read-after-write seen), keep ids stable, and give sane
//! recall that does not fall as its search-effort parameter grows.
//!
//! Embedded engines always run. Server engines run when their URL is set (`scripts/test.sh`
//! starts the servers and sets them); otherwise their tests are reported as ignored, except
//! under CI, where a missing server is a failure (Qdrant excepted: it cannot be installed here).

use crate::common::{ragdbeval, server_url, stderr};
use ragdbeval::results::{RunResult, RunState};

struct Case {
    engine: &'static str,
    /// Environment variable with the server URL (None: embedded).
    url_var: Option<&'static str>,
    dataset: &'static str,
    /// Search-effort sweep, lowest effort first (empty: the engine has none).
    sweep: &'static [&'static str],
    extra: &'static [&'static str],
    min_recall: f64,
}

const EUCLID: &str = "gen:clustered:n=4000,dim=32,queries=200,seed=11";
const ANGULAR: &str = "gen:clustered:n=4000,dim=32,queries=200,distance=angular,seed=11";

const CASES: &[Case] = &[
    Case {
        engine: "exact",
        url_var: None,
        dataset: EUCLID,
        sweep: &[],
        extra: &[],
        min_recall: 1.0,
    },
    Case {
        engine: "qdrant-edge",
        url_var: None,
        dataset: EUCLID,
        sweep: &["hnsw_ef=8", "hnsw_ef=32", "hnsw_ef=128"],
        extra: &[],
        min_recall: 0.95,
    },
    Case {
        engine: "pgvector",
        url_var: Some("PGVECTOR_URL"),
        dataset: EUCLID,
        sweep: &["ef_search=10", "ef_search=40", "ef_search=160"],
        extra: &["--search-param", "seqscan=false"],
        min_recall: 0.9,
    },
    Case {
        engine: "chroma",
        url_var: Some("CHROMA_URL"),
        dataset: EUCLID,
        sweep: &[],
        extra: &[],
        min_recall: 0.9,
    },
    Case {
        engine: "redis",
        url_var: Some("REDIS_URL"),
        dataset: ANGULAR,
        sweep: &["ef=10", "ef=40", "ef=160"],
        extra: &[],
        min_recall: 0.9,
    },
    Case {
        engine: "qdrant",
        url_var: Some("QDRANT_URL"),
        dataset: EUCLID,
        sweep: &["hnsw_ef=8", "hnsw_ef=32", "hnsw_ef=128"],
        extra: &[],
        min_recall: 0.9,
    },
];

fn run_case(case: &Case) {
    // A server case runs only when build.rs saw its variable (or `CI`, except for Qdrant):
    // otherwise its test is ignored, so here a missing URL is a failure.
    let url = case
        .url_var
        .map(|var| server_url(var, "scripts/test.sh starts the servers and sets it"));
    let dir = tempfile::tempdir().unwrap();
    let sweep = case
        .sweep
        .iter()
        .map(|s| s.split_once('=').unwrap())
        .collect::<Vec<_>>();
    let sweep_arg = (!sweep.is_empty()).then(|| {
        format!(
            "{}={}",
            sweep[0].0,
            sweep.iter().map(|(_, v)| *v).collect::<Vec<_>>().join(",")
        )
    });
    let mut args = vec![
        "bench",
        "--db",
        case.engine,
        "--dataset",
        case.dataset,
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
    if let Some(s) = &sweep_arg {
        args.extend(["--search-param", s.as_str()]);
    }
    args.extend_from_slice(case.extra);
    let out = ragdbeval(dir.path(), &args);
    assert!(out.status.success(), "{}: {}", case.engine, stderr(&out));
    let r = RunResult::load(&dir.path().join("results/c.json")).unwrap();
    assert_eq!(r.status.state, RunState::Completed, "{}", case.engine);
    let config = &r.configs[0];

    let searches: Vec<_> = config.searches().collect();
    let per_step = sweep.len().max(1);
    assert_eq!(
        searches.len(),
        4 * per_step,
        "{}: one search per step and setting",
        case.engine
    );
    let live: Vec<usize> = searches
        .iter()
        .step_by(per_step)
        .map(|s| s.live_points)
        .collect();
    assert_eq!(live, [3600, 4000, 4000, 3800], "{}", case.engine);
    for s in &searches {
        assert_eq!(
            s.stale_hits, 0,
            "{} step {}: deleted ids returned",
            case.engine, s.runbook_step
        );
        assert_eq!(
            s.ghost_hits, 0,
            "{} step {}: old vectors returned",
            case.engine, s.runbook_step
        );
    }
    for step in searches.chunks(per_step) {
        let best = step.last().unwrap();
        assert!(
            best.quality.recall >= case.min_recall,
            "{} step {} ({}): recall {:.4} < {}",
            case.engine,
            best.runbook_step,
            best.after,
            best.quality.recall,
            case.min_recall
        );
        for w in step.windows(2) {
            assert!(
                w[1].quality.recall + 0.02 >= w[0].quality.recall,
                "{} step {}: recall fell from {:.4} to {:.4} as effort grew",
                case.engine,
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
            case.engine, m.kind
        );
        assert!(m.latency.count > 0, "{} {}", case.engine, m.kind);
    }
}

#[test]
fn exact_conforms() {
    run_case(&CASES[0]);
}

#[test]
fn qdrant_edge_conforms() {
    run_case(&CASES[1]);
}

#[test]
#[cfg_attr(
    not(has_pgvector),
    ignore = "needs PGVECTOR_URL (scripts/servers/pgvector.sh start)"
)]
fn pgvector_conforms() {
    run_case(&CASES[2]);
}

#[test]
#[cfg_attr(
    not(has_chroma),
    ignore = "needs CHROMA_URL (scripts/servers/chroma.sh start)"
)]
fn chroma_conforms() {
    run_case(&CASES[3]);
}

#[test]
#[cfg_attr(
    not(has_redis),
    ignore = "needs REDIS_URL (scripts/servers/redis.sh start)"
)]
fn redis_conforms() {
    run_case(&CASES[4]);
}

#[test]
#[cfg_attr(
    not(has_qdrant),
    ignore = "needs QDRANT_URL (a Qdrant server, e.g. docker run -p 6334:6334 qdrant/qdrant; not installable here, so ignored even under CI)"
)]
fn qdrant_server_conforms() {
    run_case(&CASES[5]);
}
