//! No secret in any output: a run given a password in its `--url` writes it nowhere (result,
//! sidecar, `--json`, report directory, `report --format json`, messages, errors), and
//! `--resume` takes it from the user again, never from the file.

// The password test needs the PostgreSQL client: a build without `pgvector` has only the
// redaction test, and fewer of these imports in use.
#![cfg_attr(not(feature = "pgvector"), allow(unused_imports))]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use ragdbeval::results::{RunResult, RunState};

use crate::common::{stderr, stdout, unique_name};
#[cfg(feature = "pgvector")]
use crate::pgvector::HbaLines;

/// Every file below `dir`.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(files_below(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Runs `ragdbeval` in `dir` with `env`, collecting what it printed into `printed`.
fn run(dir: &Path, args: &[&str], env: &[(&str, &str)], printed: &mut String) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_ragdbeval"))
        .args(args)
        .current_dir(dir)
        .env("RAGDBEVAL_DATA_DIR", dir.join("cache"))
        .env_remove("PGPASSWORD")
        .envs(env.iter().copied())
        .output()
        .expect("the ragdbeval binary runs");
    printed.push_str(&stdout(&out));
    printed.push_str(&stderr(&out));
    out
}

/// Starts a bench with `url` and stops it with Ctrl-C once its build is saved: a result to
/// resume.
#[cfg(feature = "pgvector")]
fn interrupted_run(dir: &Path, url: &str, dataset: &str, printed: &mut String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ragdbeval"))
        .args(argv![
            "bench --db pgvector --url",
            url,
            "--recreate --name r --warmup 0 --runbook build-search --dataset",
            dataset,
            "--concurrency 1,2 --duration 3s"
        ])
        .current_dir(dir)
        .env("RAGDBEVAL_DATA_DIR", dir.join("cache"))
        .env_remove("PGPASSWORD")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the ragdbeval binary runs");
    let result = dir.join("results/r.json");
    let started = Instant::now();
    while !RunResult::load(&result)
        .ok()
        .is_some_and(|r| r.configs.iter().any(|c| !c.steps.is_empty()))
    {
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no step saved"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "ended before the signal"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    printed.push_str(&stdout(&out));
    printed.push_str(&stderr(&out));
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
}

#[cfg(feature = "pgvector")]
#[test]
#[cfg_attr(not(engine_runs = "pgvector"), ignore = "needs PGVECTOR_URL")]
fn a_password_in_the_url_is_in_no_output_and_resume_asks_for_it() {
    // A role that must give its password (SCRAM), on the test server.
    let url = crate::common::server_url("PGVECTOR_URL", "scripts/servers/pgvector.sh start");
    let config: postgres::Config = url.parse().expect("URL");
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().unwrap_or("postgres").to_string();
    let mut admin = postgres::Client::connect(&url, postgres::NoTls).expect("connect");
    let tag = unique_name("secret").replace("ragdbeval_test_", "");
    let role = format!("secret_{tag}");
    let password = format!("Pw{tag}Zq7");
    let wrong = format!("Wrong{tag}Xk3");
    admin
        .batch_execute(&format!(
            "SET password_encryption = 'scram-sha-256'; \
             CREATE ROLE {role} LOGIN SUPERUSER PASSWORD '{password}'"
        ))
        .expect("create role");
    let hba = HbaLines::add(
        postgres::Client::connect(&url, postgres::NoTls).expect("connect"),
        &format!("host all {role} 127.0.0.1/32 scram-sha-256"),
    );
    let secret_url = format!("postgresql://{role}:{password}@127.0.0.1:{port}/{db}");
    let wrong_url = format!("postgresql://{role}:{wrong}@127.0.0.1:{port}/{db}");

    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dataset = "gen:clustered:n=3000,dim=16,queries=2000,seed=4411";
    let mut printed = String::new();

    // An unreachable server: the error names the target without the password.
    let o = run(
        d,
        &argv![
            "bench --db pgvector --url",
            &format!("postgresql://{role}:{password}@127.0.0.1:1/{db}"),
            "--dataset",
            dataset
        ],
        &[],
        &mut printed,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));

    interrupted_run(d, &secret_url, dataset, &mut printed);
    let resume = ["bench", "--resume", "results/r.json"];
    // Without the password: one error saying where to give it, and nothing run.
    let o = run(d, &resume, &[], &mut printed);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("set PGPASSWORD"), "{err}");
    assert!(err.contains("--url"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // A wrong one given with --url: the server refuses it; the run stays resumable.
    let o = run(
        d,
        &[&resume[..], &["--url", &wrong_url]].concat(),
        &[],
        &mut printed,
    );
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("password authentication failed"),
        "{}",
        stderr(&o)
    );
    // The right one, from the environment: the run completes.
    let o = run(
        d,
        &[&resume[..], &["--json"]].concat(),
        &[("PGPASSWORD", &password)],
        &mut printed,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r = RunResult::load(&d.join("results/r.json")).unwrap();
    assert_eq!(r.status.state, RunState::Completed);
    let checked = run(d, &["verify", "results/r.json"], &[], &mut printed);
    assert!(checked.status.success(), "{}", stderr(&checked));

    // What the result records instead.
    let masked = format!("postgresql://{role}:***@127.0.0.1:{port}/{db}");
    assert!(
        r.manifest.command_line.contains(&masked),
        "{:?}",
        r.manifest.command_line
    );
    let overrides: Vec<&String> = r.status.resumed.iter().flat_map(|s| &s.overrides).collect();
    assert!(
        overrides.contains(&&format!(
            "--url postgresql://{role}:***@127.0.0.1:{port}/{db}"
        )),
        "{overrides:?}"
    );
    let o = run(
        d,
        &["report", "results/r.json", "--out", "report"],
        &[],
        &mut printed,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(
        d,
        &["report", "results/r.json", "--format", "json"],
        &[],
        &mut printed,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(&masked), "report --format json");
    assert!(printed.contains(&masked), "the --json result is printed");

    let files = files_below(d);
    assert!(
        files.iter().any(|f| f.ends_with("report/index.html")),
        "{files:?}"
    );
    assert!(
        files
            .iter()
            .any(|f| f.to_string_lossy().ends_with(".queries.jsonl"))
    );
    for secret in [&password, &wrong] {
        assert!(!printed.contains(secret.as_str()), "printed: {printed}");
        for file in &files {
            let bytes = std::fs::read(file).unwrap();
            let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
            assert!(!found, "{} holds the password", file.display());
        }
    }
    drop(hba);
    let _ = admin.batch_execute(&format!("DROP ROLE IF EXISTS {role}"));
}

/// A result written before passwords were redacted (here: one edited to hold one) is
/// redacted as it is read: `report` prints and writes no password.
#[test]
fn an_older_result_holding_a_password_is_redacted_as_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut printed = String::new();
    let o = run(
        d,
        &argv![
            "bench --db exact -q --name r --warmup 0 --dataset gen:clustered:n=500,dim=8,queries=20,seed=4412"
        ],
        &[],
        &mut printed,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let path = d.join("results/r.json");
    let mut old: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let password = "OldPwQ8v2";
    let url = format!("postgresql://u:{password}@db.example:5432/x");
    old["manifest"]["command_line"]
        .as_array_mut()
        .unwrap()
        .extend(["--url".into(), url.clone().into()]);
    old["manifest"]["settings"]["url"] = url.into();
    std::fs::write(&path, serde_json::to_string_pretty(&old).unwrap()).unwrap();

    let loaded = RunResult::load(&path).unwrap();
    let masked = "postgresql://u:***@db.example:5432/x";
    assert_eq!(loaded.manifest.command_line.last().unwrap(), masked);
    assert_eq!(loaded.manifest.settings.url.as_deref(), Some(masked));
    let o = run(
        d,
        &["report", "results/r.json", "--format", "json"],
        &[],
        &mut printed,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(masked), "{}", stdout(&o));
    let o = run(
        d,
        &["report", "results/r.json", "--out", "report"],
        &[],
        &mut printed,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!printed.contains(password), "{printed}");
    let page = std::fs::read_to_string(d.join("report/index.html")).unwrap();
    assert!(page.contains(masked), "the page shows the command line");
    for file in files_below(&d.join("report")) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        assert!(!text.contains(password), "{}", file.display());
    }
}
