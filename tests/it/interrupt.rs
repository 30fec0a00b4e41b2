//! Ctrl-C stops a run cleanly: exit 130, the result marked `interrupted` with the steps that
//! finished, and no temporary file anywhere.

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

#[test]
fn ctrl_c_after_the_build_leaves_an_interrupted_result_and_no_temp_files() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    // Long enough searches (many queries, several load levels) that the signal lands
    // mid-run, after the build step was saved.
    let mut child = Command::new(env!("CARGO_BIN_EXE_ragdbeval"))
        .args([
            "bench",
            "--db",
            "exact",
            "-q",
            "--name",
            "r",
            "--warmup",
            "0",
            "--dataset",
            "gen:uniform:n=20000,dim=64,queries=2000,seed=3",
            "--concurrency",
            "1,1,1,1,1,1",
            "--duration",
            "3s",
            "--work-dir",
            work.to_str().unwrap(),
        ])
        .current_dir(dir.path())
        .env("RAGDBEVAL_DATA_DIR", dir.path().join("cache"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the ragdbeval binary runs");
    let result = dir.path().join("results/r.json");
    let started = Instant::now();
    loop {
        let built = RunResult::load(&result)
            .ok()
            .is_some_and(|r| r.configs.iter().any(|c| !c.steps.is_empty()));
        if built {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no step was saved"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before the signal"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
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
