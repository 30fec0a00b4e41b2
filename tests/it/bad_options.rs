//! Options that make no sense, and user numbers that once panicked or aborted: each gets one
//! clear error (exit 2, no result file), or a warning where the run can go on (
//! classes 1, 2, 5 and 7).

use std::time::Instant;

use crate::bad_input::bench_fails;
use crate::common::{files_in, ragdbeval, run_in_temp, stderr, stdout};

/// The option is refused by the argument parser: exit 2, the option named, no panic.
fn refused(args: &[&str], says: &str) {
    let dir = tempfile::tempdir().unwrap();
    let err = bench_fails(dir.path(), args);
    assert!(err.contains(says), "{args:?}: expected `{says}` in: {err}");
}

#[test]
fn huge_durations_are_errors_not_panics() {
    for option in ["--duration", "--visibility-timeout", "--slo"] {
        refused(&[option, "1e300s"], "longer than a week");
        refused(&[option, "8d"], "is not a duration");
    }
    refused(&["--duration=-1s"], "positive duration");
    refused(&["--timeout", "0"], "at least 1");
    refused(&["--timeout", "999999999"], "longer than a week");
}

#[test]
fn counts_must_be_at_least_one() {
    for option in [
        "--max-queries",
        "--concurrency",
        "--workers",
        "--batch-size",
        "--limit",
    ] {
        refused(&[option, "0"], "must be at least 1");
    }
    refused(&["--concurrency", "1,0,4"], "must be at least 1");
}

#[test]
fn rates_must_be_positive_and_finite() {
    for rate in ["0", "-5", "nan", "inf", "fast"] {
        refused(&[&format!("--rate={rate}")], "--rate");
    }
}

#[test]
fn result_names_must_be_plain_visible_file_names() {
    refused(&["--name", ""], "must not be empty");
    refused(&["--name", ".hidden"], "hidden file");
    refused(&["--name", "a/b"], "without `/`");
}

/// A warm-up or generated dataset sized beyond the machine is an error before anything is
/// allocated (both aborted the process with "memory allocation failed").
#[test]
fn sizes_beyond_the_machine_are_errors_before_allocation() {
    refused(
        &["--warmup", "100000000000000"],
        "at most 10000000 warm-up queries",
    );
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let err = bench_fails(dir.path(), &["--dataset", "gen:uniform:n=100000000000000"]);
    assert!(err.contains("more than this machine's"), "{err}");
    assert!(
        started.elapsed().as_secs() < 30,
        "checked before generating"
    );
    let err = bench_fails(
        dir.path(),
        &["--dataset", "gen:uniform:n=1000000000,dim=1000000000000"],
    );
    assert!(
        err.contains("overflows") || err.contains("more than this machine's"),
        "{err}"
    );
}

#[test]
fn k_beyond_the_ground_truth_cap_names_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    let err = bench_fails(dir.path(), &["-k", "1000000000"]);
    assert!(err.contains("above 1000"), "{err}");
    assert!(
        !err.contains("-k 1000000000 --out"),
        "a remedy that cannot work: {err}"
    );
    let err = bench_fails(dir.path(), &["--relevant", "5000"]);
    assert!(err.contains("above 1000"), "{err}");
}

/// An error that embeds its cause and also returns it as its source says it once.
#[test]
fn causes_are_said_once() {
    let (_dir, out) = run_in_temp(&["merge", "/nonexistent/run.hlog"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.matches("os error 2").count(), 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn merge_refuses_empty_and_garbage_logs() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.hlog");
    std::fs::write(&empty, "").unwrap();
    let garbage = dir.path().join("garbage.hlog");
    std::fs::write(&garbage, "this is not a histogram log\n").unwrap();
    for (path, says) in [
        (&empty, "holds no latency intervals"),
        (&garbage, "unreadable from byte 0"),
    ] {
        let out = ragdbeval(dir.path(), &["merge", path.to_str().unwrap()]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.starts_with("error: "), "{err}");
        assert!(
            err.contains("interval log"),
            "an interval log, not a result file: {err}"
        );
        assert!(err.contains(says), "{err}");
        assert!(!err.contains("ParseError"), "no Debug output: {err}");
        assert!(stdout(&out).is_empty(), "no distribution of zeros printed");
    }
}

#[test]
fn a_device_is_not_said_to_be_missing() {
    let dir = tempfile::tempdir().unwrap();
    let err = bench_fails(dir.path(), &["--dataset", "/dev/null"]);
    assert!(!err.contains("does not exist"), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
}

/// Server-only options given to an in-process engine: the run goes on, and says (in the
/// terminal and in the result) that they were ignored.
#[test]
fn server_options_on_an_embedded_engine_are_warned_about() {
    let (dir, out) = run_in_temp(&argv![
        "bench --db exact --dataset gen:uniform:n=500,dim=8,queries=20 --runbook build-search --warmup 0 --name r --url http://127.0.0.1:1 --server-pid 1 --timeout 5"
    ]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    for option in ["--url", "--server-pid", "--timeout"] {
        assert!(
            err.contains(&format!("warning: {option} is ignored")),
            "{option}: {err}"
        );
    }
    let result = std::fs::read_to_string(dir.path().join("results/r.json")).unwrap();
    assert!(result.contains("--url is ignored"), "stored in the result");
    assert!(!files_in(&dir.path().join("results")).is_empty());
}

/// A bad value in the last configuration of a build sweep fails before the first build, and
/// leaves no result (nothing was measured).
#[test]
fn a_bad_value_in_a_build_sweep_fails_before_the_first_build() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let out = ragdbeval(
        dir.path(),
        &argv![
            "bench --db qdrant-edge --dataset gen:uniform:n=20000,dim=32,queries=10 --build-param quantization=none,bogus"
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        files_in(&dir.path().join("results")).is_empty(),
        "no result file"
    );
    assert!(
        err.contains("check build parameters") && err.contains("quantization"),
        "{err}"
    );
    assert!(!err.contains("[qdrant-edge] build"), "no build ran: {err}");
    assert!(started.elapsed().as_secs() < 20, "failed before building");
}

/// A negative position in a runbook names the field and the value, not serde's enum.
#[test]
fn a_negative_runbook_position_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let runbook = dir.path().join("bad.toml");
    std::fs::write(
        &runbook,
        "[[steps]]\nkind = \"build\"\nend = -5\n\n[[steps]]\nkind = \"search\"\n",
    )
    .unwrap();
    let err = bench_fails(dir.path(), &["--runbook", runbook.to_str().unwrap()]);
    assert!(
        err.contains("`start`/`end` = -5 is not a position"),
        "{err}"
    );
    assert!(!err.contains("untagged enum"), "{err}");
}
