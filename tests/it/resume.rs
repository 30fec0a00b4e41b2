//! `bench --resume`: a run that stopped (Ctrl-C, a server that died after the build) is
//! continued from its first unfinished step and ends as a run that never stopped would, in
//! structure: the same steps in the same order, per-query records once each, no temporary
//! files; the result says it was resumed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ragdbeval::params::ParamMapExt;
use ragdbeval::results::{RunResult, RunState, Step};

use crate::common::{ragdbeval, stderr, succeeds};

fn spawn(dir: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_ragdbeval"))
        .args(args)
        .current_dir(dir)
        .env("RAGDBEVAL_DATA_DIR", dir.join("cache"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the ragdbeval binary runs")
}

/// Waits until the result at `path` holds at least `records` steps.
fn wait_for_steps(child: &mut Child, path: &Path, records: usize) {
    let started = Instant::now();
    loop {
        let saved = RunResult::load(path).ok().map_or(0, |r| {
            r.configs.iter().map(|c| c.steps.len()).sum::<usize>()
        });
        if saved >= records {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no step was saved"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before it could be stopped"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// What must agree between a resumed run and one that never stopped: per configuration, each
/// record's kind, runbook step and search parameters.
fn shape(r: &RunResult) -> Vec<Vec<(String, usize, String)>> {
    r.configs
        .iter()
        .map(|c| {
            c.steps
                .iter()
                .map(|s| match s {
                    Step::Build(_) => ("build".to_string(), 1, String::new()),
                    Step::Mutation(m) => (m.kind.clone(), m.runbook_step, String::new()),
                    Step::Stream(t) => ("stream".to_string(), t.runbook_step, String::new()),
                    Step::Search(s) => (
                        "search".to_string(),
                        s.runbook_step,
                        s.search_params.label(),
                    ),
                })
                .collect()
        })
        .collect()
}

/// (config, step) of every sidecar line, sorted.
fn sidecar_keys(path: &Path) -> Vec<(u64, u64)> {
    let mut keys: Vec<(u64, u64)> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["config"].as_u64().unwrap(), v["step"].as_u64().unwrap())
        })
        .collect();
    keys.sort_unstable();
    keys
}

fn temp_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().ends_with(".tmp"))
                .collect()
        })
        .unwrap_or_default()
}

fn compare_with_reference(dir: &Path, resumed: &str, reference: &str) {
    let results = dir.join("results");
    let r = RunResult::load(&results.join(format!("{resumed}.json"))).unwrap();
    let reference_run = RunResult::load(&results.join(format!("{reference}.json"))).unwrap();
    assert_eq!(r.status.state, RunState::Completed, "{:?}", r.status);
    assert_eq!(r.status.error, None);
    assert_eq!(r.status.resumed.len(), 1, "the result says it was resumed");
    assert!(r.configs.iter().all(|c| c.error.is_none()));
    assert_eq!(shape(&r), shape(&reference_run));
    assert_eq!(
        sidecar_keys(&results.join(format!("{resumed}.queries.jsonl"))),
        sidecar_keys(&results.join(format!("{reference}.queries.jsonl"))),
        "every timed query recorded once"
    );
    assert!(
        temp_files(&results).is_empty(),
        "{:?}",
        temp_files(&results)
    );
}

/// Interrupted after two of three build configurations' first records: the finished
/// configuration is kept, the unfinished one continues where it stopped.
#[test]
fn an_interrupted_run_resumes_to_the_shape_of_an_uninterrupted_one() {
    let dir = tempfile::tempdir().unwrap();
    let args = |name: &'static str| {
        vec![
            "bench",
            "--db",
            "exact",
            "-q",
            "--warmup",
            "0",
            "--dataset",
            "gen:clustered:n=8000,dim=32,queries=400,seed=9",
            "--runbook",
            "default",
            "--concurrency",
            "1",
            "--duration",
            "1s",
            "--name",
            name,
        ]
    };
    let reference = ragdbeval(dir.path(), &args("reference"));
    assert!(reference.status.success(), "{}", stderr(&reference));

    let mut child = spawn(dir.path(), &args("stopped"));
    let path = dir.path().join("results/stopped.json");
    wait_for_steps(&mut child, &path, 3);
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    let stopped = RunResult::load(&path).unwrap();
    assert_eq!(stopped.status.state, RunState::Interrupted);
    let kept = stopped.configs[0].steps.len();
    assert!((3..8).contains(&kept), "stopped mid-run: {kept} steps");

    // Options that would change the run are refused; the run is untouched.
    let refused = ragdbeval(
        dir.path(),
        &["bench", "--resume", "results/stopped.json", "-k", "5"],
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("cannot be given with --resume"));

    succeeds(
        dir.path(),
        &["bench", "--resume", "results/stopped.json", "-q"],
    );
    compare_with_reference(dir.path(), "stopped", "reference");
    let r = RunResult::load(&path).unwrap();
    assert_eq!(r.status.resumed[0].previous_state, RunState::Interrupted);
    assert_eq!(r.status.resumed[0].steps_kept, kept);
    // The kept steps are the ones measured before the stop, not measured again.
    assert_eq!(
        serde_json::to_value(&r.configs[0].steps[..kept]).unwrap(),
        serde_json::to_value(&stopped.configs[0].steps[..kept]).unwrap()
    );

    let again = ragdbeval(dir.path(), &["bench", "--resume", "results/stopped.json"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        stderr(&again).contains("nothing to resume"),
        "{}",
        stderr(&again)
    );
}

/// The case: the server dies after the build step; the run fails keeping the build;
/// the server is started again (on another port) and `--resume --url NEW` completes the run.
#[test]
#[cfg_attr(not(engine_runs = "pgvector"), ignore = "needs PGVECTOR_URL")]
fn a_run_whose_server_died_after_the_build_resumes() {
    crate::common::server_url("PGVECTOR_URL", "scripts/servers/pgvector.sh start");
    let dir = tempfile::tempdir().unwrap();
    let server = crate::common::ScriptServer::start("pgvector");
    let url = server.url.clone();
    let args = |name: &'static str, url: &str| {
        argv!["bench --db pgvector --url", url, "--recreate -q --warmup 0 --timeout 10 --dataset gen:clustered:n=5000,dim=32,queries=200,seed=4 --runbook default --concurrency 1 --duration 1s --name", name]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>()
    };
    let reference = args("reference", &url);
    let reference: Vec<&str> = reference.iter().map(String::as_str).collect();
    succeeds(dir.path(), &reference);

    let first = args("died", &url);
    let first: Vec<&str> = first.iter().map(String::as_str).collect();
    let mut child = spawn(dir.path(), &first);
    let path = dir.path().join("results/died.json");
    wait_for_steps(&mut child, &path, 1);
    let stop = server.run("stop");
    assert!(
        stop.status.success(),
        "{}",
        String::from_utf8_lossy(&stop.stderr)
    );
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let failed = RunResult::load(&path).unwrap();
    assert_eq!(failed.status.state, RunState::Failed);
    assert!(matches!(failed.configs[0].steps[0], Step::Build(_)));

    let start = server.run("start");
    let new_url = String::from_utf8_lossy(&start.stdout).trim().to_string();
    assert!(new_url.starts_with("postgres://"), "restart: {new_url}");
    succeeds(
        dir.path(),
        &argv!["bench --resume results/died.json --url", &new_url, "-q"],
    );
    compare_with_reference(dir.path(), "died", "reference");
    let r = RunResult::load(&path).unwrap();
    assert_eq!(r.status.resumed[0].previous_state, RunState::Failed);
    assert!(r.status.resumed[0].overrides[0].starts_with("--url "));
    drop(server);
}
