//! Results that survive what a run cannot control: a `kill -9` at any moment, a full disk, a
//! second run writing the same result, a resume rewriting the kept figures, a second Ctrl-C.
//! In every case the result left behind is either complete and verifiable or resumable to
//! one, never `completed` over per-query lines that are not there.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use ragdbeval::results::{RunResult, RunState};
use ragdbeval::rng::SplitMix64;

use crate::common::{stderr, stdout, succeeds, succeeds_in_temp};

/// Build, searches, single-point writes and a stream: every kind of step a kill can land in.
const RUNBOOK: &str = r#"
name = "kill-points"

[[steps]]
kind = "build"
end = "60%"

[[steps]]
kind = "search"

[[steps]]
kind = "insert"
start = "60%"
end = "75%"
mode = "single"

[[steps]]
kind = "search"

[[steps]]
kind = "delete"
ids = { fraction = 0.05, seed = 3 }
mode = "single"

[[steps]]
kind = "search"

[[steps]]
kind = "stream"
insert = { start = "75%", end = "100%" }
delete = { ids = { fraction = 0.05, seed = 5 } }
rate = "5000/s"
batch_size = 1
searchers = 1

[[steps]]
kind = "search"
"#;

/// What each record of a configuration is, in order (the runbook above).
const RECORDS: [&str; 8] = [
    "build", "search", "mutation", "search", "mutation", "search", "stream", "search",
];

const DATASET: &str = "gen:clustered:n=6000,dim=32,queries=400,seed=9";

fn command(dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ragdbeval"));
    c.args(args)
        .current_dir(dir)
        .env("RAGDBEVAL_DATA_DIR", dir.join("cache"));
    c
}

fn spawn(dir: &Path, args: &[&str]) -> Child {
    command(dir, args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the ragdbeval binary runs")
}

fn run(dir: &Path, args: &[&str]) -> Output {
    command(dir, args)
        .output()
        .expect("the ragdbeval binary runs")
}

fn bench_args<'a>(name: &'a str, engine: &'a str, dataset: &'a str) -> Vec<&'a str> {
    vec![
        "bench",
        "--db",
        engine,
        "-q",
        "--warmup",
        "0",
        "--dataset",
        dataset,
        "--runbook",
        "kill.toml",
        "--work-dir",
        "work",
        "--name",
        name,
    ]
}

/// Waits until `ready()` holds, polling every 5 ms; the run must not end first, and `what`
/// must happen within `limit`.
fn wait_while_running(
    child: &mut Child,
    limit: Duration,
    what: &str,
    mut ready: impl FnMut() -> bool,
) {
    let started = Instant::now();
    while !ready() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended before {what}"
        );
        assert!(started.elapsed() < limit, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn kill(child: &mut Child, signal: libc::c_int) {
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as libc::pid_t, signal) };
}

/// Records the result at `path` keeps (all configurations); 0 while it does not exist.
fn kept(path: &Path) -> Option<usize> {
    RunResult::load(path)
        .ok()
        .map(|r| r.configs.iter().map(|c| c.steps.len()).sum())
}

/// `ragdbeval verify` passes on `result`.
fn assert_verifies(dir: &Path, result: &Path, context: &str) {
    let out = run(dir, &["verify", &result.to_string_lossy()]);
    assert!(
        out.status.success(),
        "verify {} ({context}): {}{}",
        result.display(),
        stdout(&out),
        stderr(&out)
    );
}

/// (config, step, query) of every sidecar line, sorted: each timed query once.
fn sidecar_keys(path: &Path) -> Vec<(u64, u64, u64)> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut keys: Vec<(u64, u64, u64)> = text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let n = |k: &str| v[k].as_u64().unwrap();
            (n("config"), n("step"), n("query"))
        })
        .collect();
    keys.sort_unstable();
    keys
}

/// Temporary files and locks left in `dir`.
fn leftovers(dir: &Path) -> Vec<PathBuf> {
    crate::common::files_in(dir)
        .into_iter()
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.ends_with(".tmp") || name.ends_with(".lock")
        })
        .collect()
}

/// When each record of an undisturbed run was saved, from the moment its result first
/// appeared: the window of record `i` is `[saved[i - 1], saved[i]]` (`saved[-1]` = 0).
fn reference_timeline(dir: &Path, args: &[&str]) -> Vec<Duration> {
    let path = dir.join("results/reference.json");
    let mut child = spawn(dir, args);
    let mut appeared: Option<Instant> = None;
    let mut saved = Vec::new();
    loop {
        let done = child.try_wait().unwrap().is_some();
        if let Some(n) = kept(&path) {
            let t0 = *appeared.get_or_insert_with(Instant::now);
            while saved.len() < n {
                saved.push(t0.elapsed());
            }
        }
        if done {
            break;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    assert!(child.wait().unwrap().success(), "the reference run failed");
    assert_eq!(saved.len(), RECORDS.len(), "records of the reference run");
    saved
}

/// Kills a run `after` the moment its result holds `records_before` records (for a resumed
/// run: after its result is first rewritten); returns the record it was working on.
fn kill_run_at(
    dir: &Path,
    args: &[&str],
    path: &Path,
    records_before: Option<usize>,
    after: Duration,
) -> &'static str {
    let before = std::fs::read(path).ok();
    let mut child = spawn(dir, args);
    let started = Instant::now();
    let reached = |path: &Path| match records_before {
        Some(n) => kept(path).is_some_and(|kept| kept >= n),
        // A resumed run's result is rewritten at its first save.
        None => std::fs::read(path).ok() != before,
    };
    while !reached(path) && child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no result saved"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
    std::thread::sleep(after);
    kill(&mut child, libc::SIGKILL);
    let _ = child.wait();
    match RunResult::load(path) {
        Ok(r) if r.status.state == RunState::Completed => "end",
        Ok(r) => RECORDS
            .get(r.configs.first().map_or(0, |c| c.steps.len()))
            .copied()
            .unwrap_or("end"),
        Err(e) => panic!("the result of a killed run cannot be read: {e}"),
    }
}

/// After a kill: a `completed` result verifies as it is; any other is resumed (itself killed
/// once when `kill_resume_after` says when) until it completes, and then verifies, with each
/// timed query of the reference recorded once and nothing temporary left.
fn resume_to_the_end(dir: &Path, name: &str, kill_resume_after: Option<Duration>) {
    let results = dir.join("results");
    let path = results.join(format!("{name}.json"));
    let path_text = path.to_string_lossy().into_owned();
    let resume = ["bench", "--resume", path_text.as_str(), "-q"];
    let state = |path: &Path| RunResult::load(path).unwrap().status.state;
    if state(&path) != RunState::Completed {
        assert_eq!(
            state(&path),
            RunState::Running,
            "a killed run leaves `running`"
        );
        if let Some(after) = kill_resume_after {
            kill_run_at(dir, &resume, &path, None, after);
        }
    }
    if state(&path) != RunState::Completed {
        let out = run(dir, &resume);
        assert!(
            out.status.success() && state(&path) == RunState::Completed,
            "resuming {name} after a kill: {}",
            stderr(&out)
        );
        // Every kept step had its lines on disk: nothing is measured twice.
        assert!(!stderr(&out).contains("measured again"), "{}", stderr(&out));
    }
    assert_verifies(dir, &path, name);
    assert_eq!(
        sidecar_keys(&results.join(format!("{name}.queries.jsonl"))),
        sidecar_keys(&results.join("reference.queries.jsonl")),
        "{name}: every timed query recorded once"
    );
    assert!(leftovers(&results).is_empty(), "{:?}", leftovers(&results));
}

/// `kill -9` at random moments of every kind of step (and of some resumes), then `--resume`:
/// each result completes and passes `verify`, with every timed query recorded once.
#[test]
fn killed_at_random_moments_a_run_resumes_to_a_verified_result() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("kill.toml"), RUNBOOK).unwrap();
    let timeline = reference_timeline(dir.path(), &bench_args("reference", "exact", DATASET));
    let draw = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let mut rng = SplitMix64::new(draw);
    let mut landed: BTreeMap<&str, usize> = BTreeMap::new();
    let kinds = ["build", "search", "mutation", "stream"];
    let all_kinds_hit =
        |landed: &BTreeMap<&str, usize>| kinds.iter().all(|k| landed.contains_key(k));
    // Each point aims at one record in turn: it waits until the record before is saved, then
    // sleeps a uniform fraction of the record's window in the reference run. A short step can
    // still end before the kill on a loaded machine, so points go on (up to 48) until every
    // kind of step has been hit; where a kill landed is read from the result it leaves.
    let mut point = 0;
    while point < 24 || (point < 48 && !all_kinds_hit(&landed)) {
        let record = point % RECORDS.len();
        let start = record
            .checked_sub(1)
            .map_or(Duration::ZERO, |i| timeline[i]);
        let after = (timeline[record] - start).mul_f64(rng.next_f64());
        let name = format!("k{point}");
        let path = dir.path().join(format!("results/{name}.json"));
        let args = bench_args(&name, "exact", DATASET);
        let phase = kill_run_at(dir.path(), &args, &path, Some(record), after);
        *landed.entry(phase).or_default() += 1;
        // Every third point kills the resume too, a random moment into it.
        let kill_resume =
            (point % 3 == 2).then(|| timeline[RECORDS.len() - 1].mul_f64(rng.next_f64()));
        resume_to_the_end(dir.path(), &name, kill_resume);
        point += 1;
    }
    eprintln!("kill points by step (random draw {draw}, {point} points): {landed:?}");
    for kind in kinds {
        assert!(
            landed.contains_key(kind),
            "no kill landed in a {kind} step (random draw {draw}): {landed:?}"
        );
    }
}

/// A small tmpfs mounted for a test (the tests run as root), unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(at).unwrap();
        let options = format!("size={size}");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &options, "tmpfs"])
            .arg(at)
            .output()
            .expect("mount runs");
        assert!(
            out.status.success(),
            "mounting a tmpfs at {}: {}",
            at.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs(at.to_path_buf())
    }

    fn resize(&self, size: &str) {
        let options = format!("remount,size={size}");
        let out = Command::new("mount")
            .args(["-o", &options])
            .arg(&self.0)
            .output()
            .expect("mount runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Fills the file system up to `spare` free bytes.
    fn fill_leaving(&self, spare: u64) {
        // SAFETY: statvfs fills a zeroed struct for a valid NUL-terminated path.
        let free = unsafe {
            let path = std::ffi::CString::new(self.0.to_string_lossy().as_bytes()).unwrap();
            let mut st: libc::statvfs = std::mem::zeroed();
            assert_eq!(libc::statvfs(path.as_ptr(), &mut st), 0);
            st.f_bavail as u64 * st.f_frsize as u64
        };
        let filler = vec![0u8; free.saturating_sub(spare) as usize];
        std::fs::write(self.0.join("filler"), filler).unwrap();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// A run whose sidecar fills the disk: it fails at once with the cause, leaving a `failed`
/// result whose kept steps verify and whose sidecar is in place; once there is space again,
/// `--resume` completes it.
#[test]
#[cfg_attr(
    not(can_mount_tmpfs),
    ignore = "mounts a small tmpfs: needs CAP_SYS_ADMIN (root)"
)]
fn a_full_disk_leaves_a_failed_result_that_resumes_once_there_is_space() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small");
    let disk = Tmpfs::mount(&small, "1m");
    let args = argv![
        "bench --db exact -q --warmup 0 --dataset gen:clustered:n=4000,dim=16,queries=1200,seed=9 --out small --name r"
    ];
    let out = run(dir.path(), &args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    let path = small.join("r.json");
    let failed = RunResult::load(&path).unwrap();
    assert_eq!(failed.status.state, RunState::Failed, "{err}");
    let error = failed.status.error.clone().unwrap_or_default();
    assert!(error.contains("No space left on device"), "{error}");
    let kept = failed.configs[0].steps.len();
    assert!(
        (2..8).contains(&kept),
        "stopped part-way: {kept} steps kept"
    );
    assert!(
        small.join("r.queries.jsonl").is_file(),
        "the sidecar it names is there"
    );
    assert!(leftovers(&small).is_empty(), "{:?}", leftovers(&small));
    assert_verifies(dir.path(), &path, "failed on a full disk");

    disk.resize("64m");
    let out = run(dir.path(), &["bench", "--resume", "small/r.json", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let resumed = RunResult::load(&path).unwrap();
    assert_eq!(resumed.status.state, RunState::Completed);
    assert_eq!(resumed.status.resumed[0].previous_state, RunState::Failed);
    assert_eq!(resumed.configs[0].steps.len(), 8);
    assert_verifies(dir.path(), &path, "resumed after a full disk");
    assert!(leftovers(&small).is_empty(), "{:?}", leftovers(&small));
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    for p in crate::common::files_in(dir) {
        if p.is_dir() {
            out.extend(snapshot(&p));
        } else {
            out.insert(p.clone(), std::fs::read(&p).unwrap());
        }
    }
    out
}

/// `report --out` on a full disk fails with the cause and leaves no partial report: a new
/// directory does not appear, an existing report stays as it was.
#[test]
#[cfg_attr(
    not(can_mount_tmpfs),
    ignore = "mounts a small tmpfs: needs CAP_SYS_ADMIN (root)"
)]
fn report_out_on_a_full_disk_leaves_no_partial_files() {
    let (dir, _) = succeeds_in_temp(&argv![
        "bench --db exact -q --dataset gen:clustered:n=2000,dim=16,queries=100,seed=9 --name r"
    ]);
    let small = dir.path().join("small");
    let disk = Tmpfs::mount(&small, "64k");
    let report = ["report", "results/r.json", "--out", "small/report/"];
    let out = run(dir.path(), &report);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        crate::common::files_in(&small).is_empty(),
        "nothing left: {:?}",
        crate::common::files_in(&small)
    );

    disk.resize("16m");
    let out = run(dir.path(), &report);
    assert!(out.status.success(), "{}", stderr(&out));
    let written = snapshot(&small.join("report"));
    assert!(
        written
            .keys()
            .any(|p| p.extension().is_some_and(|e| e == "svg"))
    );
    disk.fill_leaving(16 * 1024);
    let out = run(dir.path(), &report);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert_eq!(
        snapshot(&small.join("report")),
        written,
        "the earlier report stays whole, with no temporary directory in it"
    );
}

/// A second run writing the same result fails at once, naming the first one's process;
/// the first completes untouched. The lock a killed run leaves is taken over.
#[test]
fn a_second_run_with_the_same_name_fails_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let args = argv![
        "bench --db exact -q --warmup 0 --dataset gen:clustered:n=4000,dim=16,queries=200,seed=9 --concurrency 1 --duration 1s --name same"
    ];
    let lock = dir.path().join("results/.same.lock");
    let wait_for_lock = |child: &mut Child| {
        let pid = child.id().to_string();
        wait_while_running(child, Duration::from_secs(30), "its lock", || {
            std::fs::read_to_string(&lock).is_ok_and(|t| t.trim() == pid)
        });
    };
    let mut first = spawn(dir.path(), &args);
    wait_for_lock(&mut first);
    let started = Instant::now();
    let second = run(dir.path(), &args);
    let err = stderr(&second);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("is being written by process {}", first.id())),
        "{err}"
    );
    assert!(err.contains("--name"), "says what to do: {err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused before loading anything: {:?}",
        started.elapsed()
    );
    assert!(first.wait().unwrap().success());
    let path = dir.path().join("results/same.json");
    assert_eq!(
        RunResult::load(&path).unwrap().status.state,
        RunState::Completed
    );
    assert_verifies(dir.path(), &path, "the first run");
    assert!(!lock.exists(), "the lock goes with its run");

    // A killed owner's lock (its file, with a dead process id) is taken over.
    let mut killed = spawn(dir.path(), &args);
    wait_for_lock(&mut killed);
    kill(&mut killed, libc::SIGKILL);
    let _ = killed.wait();
    assert!(lock.exists());
    succeeds(dir.path(), &args);
    assert!(!lock.exists());
}

/// The text of each element of the first `"steps"` array of a result file, as written.
fn step_texts(json: &str) -> Vec<&str> {
    let start = json.find("\"steps\": [").expect("a steps array") + "\"steps\": [".len();
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    let (mut out, mut from) = (Vec::new(), start);
    for (i, c) in json[start..].char_indices().map(|(i, c)| (start + i, c)) {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            _ if in_string => {}
            '{' | '[' => depth += 1,
            '}' | ']' if depth > 0 => depth -= 1,
            ',' | ']' if depth == 0 => {
                out.push(json[from..i].trim());
                from = i + 1;
                if c == ']' {
                    break;
                }
            }
            _ => {}
        }
    }
    out
}

/// The figures of the steps a resumed run kept are written back exactly as they were: every
/// number parsed and printed again to the same bits.
#[test]
fn a_resumed_result_keeps_its_figures_bit_for_bit() {
    let dir = tempfile::tempdir().unwrap();
    let args = argv![
        "bench --db exact -q --warmup 0 --dataset gen:clustered:n=6000,dim=32,queries=400,seed=9 --concurrency 1 --duration 1s --name r"
    ];
    let path = dir.path().join("results/r.json");
    let mut child = spawn(dir.path(), &args);
    wait_while_running(&mut child, Duration::from_secs(60), "3 saved steps", || {
        kept(&path).unwrap_or(0) >= 3
    });
    kill(&mut child, libc::SIGINT);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let before = std::fs::read_to_string(&path).unwrap();
    let kept_steps = RunResult::load(&path).unwrap().configs[0].steps.len();
    let out = run(dir.path(), &["bench", "--resume", "results/r.json", "-q"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let after = std::fs::read_to_string(&path).unwrap();
    let (was, now) = (step_texts(&before), step_texts(&after));
    assert_eq!(was.len(), kept_steps);
    assert_eq!(now.len(), 8);
    for (i, (a, b)) in was.iter().zip(&now).enumerate() {
        assert!(a == b, "kept step {i} was rewritten:\n{a}\n---\n{b}");
    }
    assert_verifies(dir.path(), &path, "resumed");
}

/// Reads a child's stderr into shared lines.
fn collect_stderr(child: &mut Child) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = lines.clone();
    let pipe = child.stderr.take().expect("stderr piped");
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    lines
}

/// The first Ctrl-C during a long index build is answered at once with what the run waits
/// for; a second one ends the process without waiting, leaving an `interrupted` result that
/// resumes, its sidecar in place and no temporary file or lock.
#[test]
fn a_second_ctrl_c_during_an_index_build_leaves_a_resumable_result() {
    let dir = tempfile::tempdir().unwrap();
    let args = argv![
        "bench --db qdrant-edge --warmup 0 --dataset gen:clustered:n=20000,dim=64,queries=50,seed=9 --runbook build-search --build-param ef_construct=400 --work-dir work --name r"
    ];
    let path = dir.path().join("results/r.json");
    // The signal must land in the index build, after the points are loaded: a run stopped
    // while loading ends at the next batch, without a note. Later tries wait longer.
    for attempt in 0..4u32 {
        let _ = std::fs::remove_dir_all(dir.path().join("results"));
        let mut child = command(dir.path(), &args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = collect_stderr(&mut child);
        wait_while_running(
            &mut child,
            Duration::from_secs(60),
            "its first save",
            || path.exists(),
        );
        std::thread::sleep(Duration::from_millis(200 * (attempt as u64 + 1)));
        kill(&mut child, libc::SIGINT);
        let noted = Instant::now();
        let said = || {
            lines
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.contains("finishing the index build"))
        };
        while !said() && child.try_wait().unwrap().is_none() {
            assert!(noted.elapsed() < Duration::from_secs(30));
            std::thread::sleep(Duration::from_millis(5));
        }
        if !said() {
            // Stopped before the index build: try again, later.
            let _ = child.wait();
            continue;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the build goes on after the note"
        );
        kill(&mut child, libc::SIGINT);
        let second = Instant::now();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130));
        assert!(
            second.elapsed() < Duration::from_secs(5),
            "ended without waiting for the build: {:?}",
            second.elapsed()
        );
        let r = RunResult::load(&path).unwrap();
        assert_eq!(r.status.state, RunState::Interrupted);
        let work = crate::common::files_in(&dir.path().join("work"));
        assert!(work.is_empty(), "the engine's files are removed: {work:?}");
        let results = dir.path().join("results");
        assert!(leftovers(&results).is_empty(), "{:?}", leftovers(&results));
        assert!(results.join("r.queries.jsonl").is_file());
        let out = run(dir.path(), &["bench", "--resume", "results/r.json", "-q"]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_verifies(dir.path(), &path, "resumed after a second Ctrl-C");
        return;
    }
    panic!("no Ctrl-C landed in the index build in 4 tries");
}

/// Unreadable sidecar lines are reported, naming the file and the count, by `report`,
/// `verify` and `--resume`; a kept step whose lines are missing is measured again on resume,
/// and the resumed run says which.
#[test]
fn damaged_sidecars_are_reported_and_missing_lines_measured_again() {
    let dir = tempfile::tempdir().unwrap();
    let args = argv![
        "bench --db exact -q --warmup 0 --dataset gen:clustered:n=6000,dim=32,queries=400,seed=9 --concurrency 1 --duration 1s --name r"
    ];
    let results = dir.path().join("results");
    let path = results.join("r.json");
    let sidecar = results.join("r.queries.jsonl");
    let mut child = spawn(dir.path(), &args);
    wait_while_running(&mut child, Duration::from_secs(60), "4 saved steps", || {
        kept(&path).unwrap_or(0) >= 4
    });
    kill(&mut child, libc::SIGINT);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let kept_steps = kept(&path).unwrap();
    // The second search (record 3) loses its last line; a torn line is appended.
    let text = std::fs::read_to_string(&sidecar).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let last_of_step_2 = lines
        .iter()
        .rposition(|l| l.starts_with("{\"config\":0,\"step\":3,"))
        .expect("lines of the second search");
    lines.remove(last_of_step_2);
    let damaged = lines.join("\n") + "\n{\"config\":0,\"st";
    std::fs::write(&sidecar, damaged).unwrap();

    let verify = run(dir.path(), &["verify", "results/r.json"]);
    let err = stderr(&verify);
    assert!(!verify.status.success(), "a kept step lacks a line");
    assert!(
        err.contains("r.queries.jsonl: 1 unreadable line(s)"),
        "{err}"
    );
    let report = run(dir.path(), &["report", "results/r.json", "--out", "rep/"]);
    assert!(report.status.success(), "{}", stderr(&report));
    let warned: Vec<String> = stderr(&report)
        .lines()
        .filter(|l| l.contains("unreadable"))
        .map(String::from)
        .collect();
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains("r.queries.jsonl: 1 unreadable line(s)"),
        "{warned:?}"
    );

    let out = run(dir.path(), &["bench", "--resume", "results/r.json", "-q"]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("r.queries.jsonl: 1 unreadable line(s)"),
        "{err}"
    );
    assert!(
        err.contains("configuration 1 step 4 (the search of runbook step 4)")
            && err.contains("that step is measured again"),
        "{err}"
    );
    let r = RunResult::load(&path).unwrap();
    assert_eq!(r.status.state, RunState::Completed);
    assert!(kept_steps >= 4);
    assert_eq!(
        r.status.resumed[0].steps_kept, 3,
        "cut back before the damaged step"
    );
    assert_verifies(dir.path(), &path, "resumed over a damaged sidecar");
}

/// A run stopped by Ctrl-C (its sidecar finished in place) whose resume is then killed
/// (the newer lines in a temporary file) resumes from the newer file: nothing is measured
/// again and the result verifies.
#[test]
fn a_killed_resume_of_an_interrupted_run_resumes_from_its_newer_lines() {
    let dir = tempfile::tempdir().unwrap();
    let args = argv![
        "bench --db exact -q --warmup 0 --dataset gen:clustered:n=6000,dim=32,queries=400,seed=9 --concurrency 1 --duration 1s --name r"
    ];
    let path = dir.path().join("results/r.json");
    let wait_for = |child: &mut Child, records: usize| {
        wait_while_running(child, Duration::from_secs(60), "the saved steps", || {
            kept(&path).unwrap_or(0) >= records
        });
    };
    let mut child = spawn(dir.path(), &args);
    wait_for(&mut child, 2);
    kill(&mut child, libc::SIGINT);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let interrupted = kept(&path).unwrap();
    assert!(interrupted < 6, "stopped early: {interrupted}");
    let resume = ["bench", "--resume", "results/r.json", "-q"];
    let mut child = spawn(dir.path(), &resume);
    wait_for(&mut child, interrupted + 2);
    kill(&mut child, libc::SIGKILL);
    let _ = child.wait();
    let out = run(dir.path(), &resume);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("measured again"), "{err}");
    assert_verifies(dir.path(), &path, "resumed twice");
    assert!(leftovers(&dir.path().join("results")).is_empty());
}
