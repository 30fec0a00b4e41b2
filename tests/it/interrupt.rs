//! Ctrl-C stops a run cleanly: exit 130, the result marked `interrupted` with the steps that
//! finished, and no temporary file anywhere; on every server engine too, whose
//! collection then does not stand in the way of the next run.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ragdbeval::results::{RunResult, RunState};

/// Every file below `dir`, recursively.
fn all_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(all_files(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Waits until the run `child` writes has saved a step, polling every 20 ms; the run must not
/// end first, and must save one within `limit`.
fn wait_for_a_saved_step(
    child: &mut std::process::Child,
    result: &std::path::Path,
    limit: Duration,
) {
    let started = Instant::now();
    while !RunResult::load(result)
        .ok()
        .is_some_and(|r| r.configs.iter().any(|c| !c.steps.is_empty()))
    {
        assert!(started.elapsed() < limit, "no step was saved");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before the signal"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn ctrl_c_after_the_build_leaves_an_interrupted_result_and_no_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    // Long enough searches (many queries, several load levels) that the signal lands
    // mid-run, after the build step was saved.
    let mut child = Command::new(env!("CARGO_BIN_EXE_ragdbeval"))
        .args(argv!["bench --db exact -q --name r --warmup 0 --dataset gen:uniform:n=20000,dim=64,queries=2000,seed=3 --concurrency 1,1,1,1,1,1 --duration 3s --work-dir", work.to_str().unwrap()])
        .current_dir(dir.path())
        .env("RAGDBEVAL_DATA_DIR", dir.path().join("cache"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the ragdbeval binary runs");
    let result = dir.path().join("results/r.json");
    wait_for_a_saved_step(&mut child, &result, Duration::from_secs(60));
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(err.contains("interrupted"), "{err}");
    let r = RunResult::load(&result).unwrap();
    assert_eq!(r.status.state, RunState::Interrupted);
    // What it kept agrees with its sidecar and dataset.
    let verified = crate::common::ragdbeval(dir.path(), &["verify", "results/r.json"]);
    assert!(
        verified.status.success(),
        "{}{}",
        crate::common::stdout(&verified),
        crate::common::stderr(&verified)
    );
    assert!(
        !r.configs[0].steps.is_empty(),
        "the finished steps are kept"
    );
    let leftovers: Vec<_> = all_files(dir.path())
        .into_iter()
        .filter(|p| {
            let name = p
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            name.contains(".tmp") || name.starts_with('.') || name.ends_with('~')
        })
        .collect();
    assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    assert!(
        all_files(&work).is_empty(),
        "engine work files left: {:?}",
        all_files(&work)
    );
}

/// Starts `ragdbeval bench` on a server engine in `dir`, waits until its build step is saved
/// (the run is then searching: a long search step of many queries under several load
/// levels), and sends it Ctrl-C. The run must stop as interrupted: exit 130, the result
/// `interrupted` with the build kept. The collection it leaves must not stop the next run of
/// the same data (without `--recreate`), and `--resume` must finish the run.
///
/// Run for every server engine by `conformance`, in the engine's conformance distance, on a
/// dataset of its own (the collection is named after it).
pub fn ctrl_c_mid_search_is_interrupted(engine: &str) {
    let url = &crate::common::engine_url(engine).expect("a server engine");
    let distance = crate::common::entry(engine).meta.conformance.distance;
    let seed = 4400
        + ragdbeval::adapters::ENGINES
            .iter()
            .position(|e| e.name == engine)
            .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let dataset = |queries: usize| {
        format!("gen:clustered:n=3000,dim=16,queries={queries},distance={distance},seed={seed}")
    };
    let long = dataset(3000);
    let mut child = Command::new(env!("CARGO_BIN_EXE_ragdbeval"))
        .args(argv![
            "bench --db",
            engine,
            "--url",
            url,
            "--recreate -q --name r --warmup 0 --runbook build-search --dataset",
            &long,
            "--concurrency 1,2 --duration 2s"
        ])
        .current_dir(dir.path())
        .env("RAGDBEVAL_DATA_DIR", dir.path().join("cache"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the ragdbeval binary runs");
    let result = dir.path().join("results/r.json");
    wait_for_a_saved_step(&mut child, &result, Duration::from_secs(180));
    // Into the search: its single-client pass, then the load levels.
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        child.try_wait().unwrap().is_none(),
        "{engine}: the run ended before the signal"
    );
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{engine}: {err}");
    assert!(err.contains("interrupted"), "{engine}: {err}");
    let r = RunResult::load(&result).unwrap();
    assert_eq!(r.status.state, RunState::Interrupted, "{engine}: {err}");
    assert_eq!(r.status.error, None, "{engine}");
    assert_eq!(r.configs[0].steps.len(), 1, "{engine}: the build is kept");

    // The next run of the same data, without --recreate, is not in the way of the collection
    // the stopped one built.
    let short = dataset(20);
    let next = crate::common::ragdbeval(
        dir.path(),
        &argv![
            "bench --db",
            engine,
            "--url",
            url,
            "-q --name next --warmup 0 --runbook build-search --dataset",
            &short
        ],
    );
    assert!(
        next.status.success(),
        "{engine}: the next run: {}",
        crate::common::stderr(&next)
    );
    let resumed =
        crate::common::ragdbeval(dir.path(), &["bench", "--resume", "results/r.json", "-q"]);
    assert!(
        resumed.status.success(),
        "{engine}: --resume: {}",
        crate::common::stderr(&resumed)
    );
    let r = RunResult::load(&result).unwrap();
    assert_eq!(r.status.state, RunState::Completed, "{engine}");
    assert_eq!(r.status.resumed.len(), 1, "{engine}");
}
