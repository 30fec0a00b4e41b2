//! Stream steps: writes and searches at the same time, scored exactly. `exact` must score
//! recall 1 with no stale hit; an engine serving an old snapshot must be caught; an engine that
//! shows a write only once it is acknowledged (a correct one) must not be penalised; an engine
//! that cannot write while it searches is refused before the build.

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{stderr, stdout, succeeds};
use crate::runbooks::{exact_as, plan_for};
use ragdbeval::adapters;
use ragdbeval::dataset::{self, Dataset, LoadOptions};
use ragdbeval::engine::{
    CollectionSpec, ConcurrentWrites, ConnectOptions, EngineEntry, EngineResult, Footprint,
    IndexReport, Neighbor, PointId, Query, VectorEngine,
};
use ragdbeval::params::ParamMap;
use ragdbeval::results::run_files::RunFiles;
use ragdbeval::results::{RunResult, Step, StreamStep};
use ragdbeval::runbook::Runbook;
use ragdbeval::runner::{self, ground_truth};
use ragdbeval::vectors::Vectors;

fn example_runbook() -> Runbook {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/runbooks/stream.toml");
    Runbook::load(&path).unwrap()
}

fn small_dataset() -> Dataset {
    dataset::load(
        "gen:clustered:n=3000,dim=16,queries=40,seed=9",
        &LoadOptions {
            gt_k: 10,
            ..LoadOptions::default()
        },
    )
    .unwrap()
}

/// Runs `runbook` on `entry` and returns its stream steps.
fn run(entry: &'static EngineEntry, runbook: &Runbook) -> Result<Vec<StreamStep>, String> {
    let ds = small_dataset();
    let steps = runbook.resolve(ds.train.len()).unwrap();
    let truths =
        ground_truth::step_truths(&ds, &steps, 10, None, &ragdbeval::types::Silent).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut plan = plan_for(entry, steps, truths, dir.path());
    // Long enough for the snapshot engine's 300 ms to show in the freshness figures.
    plan.visibility_timeout = Duration::from_secs(2);
    let mut result = crate::common::empty_result();
    runner::run(
        &plan,
        &ds,
        &mut result,
        &RunFiles::new(&dir.path().join("r.json"), None, None),
    )
    .map_err(|e| e.to_string())?;
    let steps: Vec<StreamStep> = result.configs[0].streams().cloned().collect();
    // The static searches between the stream steps, against the live set after them.
    for s in result.configs[0].searches() {
        assert_eq!(s.quality.recall, 1.0, "search at step {}", s.runbook_step);
    }
    Ok(steps)
}

#[test]
fn exact_scores_recall_one_and_no_stale_hit_while_writes_run() {
    let exact = adapters::find("exact").unwrap();
    let streams = run(exact, &example_runbook()).unwrap();
    assert_eq!(streams.len(), 2);
    // The first stream runs at 2,000 points/s for about a third of a second; the second, as
    // fast as possible in calls of 10, may be over in milliseconds.
    assert!(streams[0].searches > 50, "{}", streams[0].searches);
    for s in &streams {
        assert!(s.searches >= 2, "each searcher searched: {}", s.searches);
        assert!(s.inserts > 0 && s.deletes > 0, "{s:?}");
        assert_eq!(s.recall, 1.0, "step {}", s.runbook_step);
        assert_eq!(s.stale_hits, 0);
        assert_eq!(s.searchers, 2);
        assert!(!s.timeline.is_empty());
        assert_eq!(s.recall_at_stage.len(), 3);
        // Freshness: every sampled write seen by the prober, at once for a linearisable engine.
        let f = &s.freshness;
        assert!(f.samples > 10, "{f:?}");
        assert_eq!(
            f.puts_seen + f.deletes_seen + f.overtaken,
            f.samples,
            "{f:?}"
        );
        assert!(f.puts_seen > 0 && f.deletes_seen > 0, "{f:?}");
        // At once, to the prober's resolution: a write acknowledged during a probe round is
        // looked for in the next one, so its delay is about two rounds. On a 2-core machine
        // running other tests beside this one the prober's thread also waits its turn for
        // the CPU (tens of ms), so the bound is half the delay at which an engine 300 ms
        // behind is caught in the test below: still tells the two apart.
        let resolution_ms = (2.0 * f.probe_round_p50_ms).max(125.0);
        assert!(f.put_delay.p50_ms < resolution_ms, "{f:?}");
        assert!(f.probe_round_p50_ms > 0.0, "{f:?}");
        // Resources: over the step, and per second of it.
        assert!(s.resources.client.samples > 0, "{:?}", s.resources);
        assert!(
            s.timeline.iter().any(|t| t.client_rss_mb > 0.0),
            "{:?}",
            s.timeline
        );
        // CPU is read in clock ticks (10 ms at the usual 100 Hz): a step over in a few
        // milliseconds may honestly read 0 ticks. A tenth of a second with two searchers
        // busy is ~20 ticks.
        if s.duration_s >= 0.1 {
            assert!(
                s.timeline.iter().any(|t| t.client_cpu_percent > 0.0),
                "{:?}",
                s.timeline
            );
        }
    }
    assert!(streams[0].updates > 0);
    // The first step writes at 2,000 points/s: it cannot have gone much faster.
    let first = &streams[0];
    let points = (first.inserts + first.updates + first.deletes) as f64;
    assert!(
        first.write_points_per_s < 2000.0 * 1.05,
        "{} points/s",
        first.write_points_per_s
    );
    assert!(first.duration_s > points / 2000.0 * 0.9);
}

/// A write acknowledged but not applied yet: when, the ids, and their vectors (none: delete).
type PendingWrite = (Instant, Vec<PointId>, Option<Vec<f32>>);

/// An `exact` engine whose writes misbehave in time, in one of two ways.
struct Lagging {
    inner: Box<dyn VectorEngine>,
    mode: Lag,
    /// Acknowledged writes not yet applied (snapshot mode), with when they were acknowledged.
    pending: Mutex<VecDeque<PendingWrite>>,
}

#[derive(Clone, Copy)]
enum Lag {
    /// Writes are acknowledged at once and applied `0` later: searches see an old snapshot.
    Snapshot(Duration),
    /// Each write is in flight for `0` before it is applied, and acknowledged right after: a
    /// correct engine that shows no write in flight.
    SlowWrites(Duration),
}

impl Lagging {
    fn writer(&self) -> &dyn ConcurrentWrites {
        self.inner
            .concurrent_writes()
            .expect("exact writes concurrently")
    }

    /// Applies the pending writes acknowledged at least the lag ago.
    fn catch_up(&self) -> EngineResult<()> {
        let Lag::Snapshot(lag) = self.mode else {
            return Ok(());
        };
        let mut pending = self.pending.lock().unwrap();
        while pending.front().is_some_and(|(t, _, _)| t.elapsed() >= lag) {
            let (_, ids, vectors) = pending.pop_front().unwrap();
            match vectors {
                Some(v) => self.writer().upsert(&ids, &v)?,
                None => self.writer().delete(&ids)?,
            }
        }
        Ok(())
    }

    fn write(&self, ids: &[PointId], vectors: Option<&[f32]>) -> EngineResult<()> {
        match self.mode {
            Lag::Snapshot(_) => {
                self.pending.lock().unwrap().push_back((
                    Instant::now(),
                    ids.to_vec(),
                    vectors.map(<[f32]>::to_vec),
                ));
                Ok(())
            }
            Lag::SlowWrites(delay) => {
                std::thread::sleep(delay);
                match vectors {
                    Some(v) => self.writer().upsert(ids, v),
                    None => self.writer().delete(ids),
                }
            }
        }
    }
}

impl ConcurrentWrites for Lagging {
    fn upsert(&self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.write(ids, Some(vectors))
    }
    fn delete(&self, ids: &[PointId]) -> EngineResult<()> {
        self.write(ids, None)
    }
}

impl VectorEngine for Lagging {
    fn name(&self) -> &str {
        "lagging"
    }
    fn version(&self) -> String {
        self.inner.version()
    }
    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        self.inner.create(spec)
    }
    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.inner.insert_batch(ids, vectors)
    }
    fn insert_shared(
        &mut self,
        ids: &[PointId],
        rows: &Arc<Vectors>,
        start: usize,
    ) -> EngineResult<()> {
        self.inner.insert_shared(ids, rows, start)
    }
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        self.inner.wait_until_ready()
    }
    fn upsert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.inner.upsert_batch(ids, vectors)
    }
    fn delete_batch(&mut self, ids: &[PointId]) -> EngineResult<()> {
        self.inner.delete_batch(ids)
    }
    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        self.inner.set_search_params(params)
    }
    fn search(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        self.catch_up()?;
        self.inner.search(query, out)
    }
    fn footprint(&self) -> EngineResult<Footprint> {
        self.inner.footprint()
    }
    fn concurrent_writes(&self) -> Option<&dyn ConcurrentWrites> {
        Some(self)
    }
}

fn lagging(opts: &ConnectOptions, mode: Lag) -> EngineResult<Box<dyn VectorEngine>> {
    let exact = adapters::find("exact").unwrap();
    Ok(Box::new(Lagging {
        inner: (exact.open)(opts)?,
        mode,
        pending: Mutex::new(VecDeque::new()),
    }))
}

fn open_snapshot(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    lagging(opts, Lag::Snapshot(Duration::from_millis(300)))
}

fn open_slow_writes(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    lagging(opts, Lag::SlowWrites(Duration::from_millis(2)))
}

static SNAPSHOT: EngineEntry = EngineEntry {
    name: "snapshot-300ms",
    // test double: exact serving searches from a snapshot 300 ms old; it wraps exact.
    meta: &adapters::meta::exact::ENGINE,
    config_toml: "",
    open: open_snapshot,
    left_out: None,
};

static SLOW_WRITES: EngineEntry = EngineEntry {
    name: "slow-writes",
    // test double: exact whose writes show only when acknowledged; it wraps exact.
    meta: &adapters::meta::exact::ENGINE,
    config_toml: "",
    open: open_slow_writes,
    left_out: None,
};

/// Build, then one stream step of `toml` (without the static searches, which a snapshot
/// engine would fail too).
fn one_stream(toml: &str) -> Runbook {
    Runbook::parse_toml(&format!(
        "[[steps]]\nkind = \"build\"\nend = \"60%\"\n[[steps]]\nkind = \"stream\"\n{toml}"
    ))
    .unwrap()
}

#[test]
fn an_engine_serving_an_old_snapshot_is_caught() {
    // 1,200 points at 1,500/s: most of the stream runs more than 300 ms after its start.
    let runbook = one_stream(
        "insert = { start = \"60%\", end = \"80%\" }\n\
         delete = { ids = { fraction = 0.3, seed = 1 } }\nrate = \"1500/s\"",
    );
    let streams = run(&SNAPSHOT, &runbook).unwrap();
    let s = &streams[0];
    assert!(s.stale_hits > 0, "{s:?}");
    assert!(s.searches_with_stale_hits > 0);
    assert!(s.recall < 1.0, "recall {}", s.recall);
    // Its writes show about 300 ms after their acknowledgement.
    assert!(s.freshness.put_delay.p50_ms >= 250.0, "{:?}", s.freshness);
    assert!(
        s.freshness.delete_delay.p50_ms >= 250.0,
        "{:?}",
        s.freshness
    );
}

#[test]
fn an_engine_hiding_writes_in_flight_is_not_penalised() {
    let runbook = one_stream(
        "insert = { start = \"60%\", end = \"70%\" }\n\
         update = { ids = { start = 0, end = \"5%\" }, from = \"70%\" }\n\
         delete = { ids = { fraction = 0.1, seed = 1 } }",
    );
    let streams = run(&SLOW_WRITES, &runbook).unwrap();
    let s = &streams[0];
    assert!(s.searches > 50, "{s:?}");
    assert_eq!(s.recall, 1.0);
    assert_eq!(s.stale_hits, 0);
}

fn open_stub(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(exact_as("one-thread", opts)?))
}

static ONE_THREAD: EngineEntry = EngineEntry {
    name: "one-thread",
    // test double: exact behind a stub that cannot write while searching; it wraps exact.
    meta: &adapters::meta::exact::ENGINE,
    config_toml: "",
    open: open_stub,
    left_out: None,
};

#[test]
fn an_engine_that_cannot_write_while_searching_is_refused_before_the_build() {
    let err = run(&ONE_THREAD, &example_runbook()).unwrap_err();
    assert!(
        err.contains("cannot write and search at the same time"),
        "{err}"
    );
    assert!(err.contains("step 3"), "{err}");
}

#[test]
fn the_example_runbook_runs_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let runbook = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/runbooks/stream.toml");
    let out = succeeds(
        dir.path(),
        &argv![
            "bench --db exact --dataset gen:uniform:n=2000,dim=8,queries=20,seed=4 --runbook",
            runbook.to_str().unwrap(),
            "-k 10 --out res --name r"
        ],
    );
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(text.contains("stream"), "{text}");
    let result = RunResult::load(&dir.path().join("res").join("r.json")).unwrap();
    let streams: Vec<&StreamStep> = result.configs[0]
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::Stream(t) => Some(t),
            _ => None,
        })
        .collect();
    assert_eq!(streams.len(), 2);
    assert!(streams.iter().all(|s| s.recall == 1.0 && s.stale_hits == 0));
    // The end-of-run summary has a line per stream step.
    let summary = stdout(&out);
    let lines: Vec<&str> = summary
        .lines()
        .filter(|l| l.starts_with("3:stream") || l.starts_with("5:stream"))
        .collect();
    assert_eq!(lines.len(), 2, "{summary}");
    assert!(
        summary.contains("stream step") && summary.contains("@80%"),
        "{summary}"
    );

    // The report draws each stream step's timeline and writes streams.csv.
    succeeds(dir.path(), &["report", "res/r.json", "--out", "rep/"]);
    let csv = std::fs::read_to_string(dir.path().join("rep/streams.csv")).unwrap();
    let mut rows = csv.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let rows: Vec<Vec<&str>> = rows.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2, "{csv}");
    let cell = |row: &[&str], key: &str| {
        let i = header.iter().position(|h| *h == key).unwrap();
        row[i].to_string()
    };
    assert_eq!(cell(&rows[0], "step"), "3:stream");
    assert_eq!(cell(&rows[0], "recall"), "1");
    assert_eq!(cell(&rows[1], "stale_hits"), "0");
    assert!(cell(&rows[0], "qps").parse::<f64>().unwrap() > 0.0);
    for plot in ["stream-recall", "stream-qps", "stream-p99", "stream-writes"] {
        let found = std::fs::read_dir(dir.path().join("rep/plots"))
            .unwrap()
            .filter_map(Result::ok)
            .any(|e| {
                e.file_name()
                    .to_string_lossy()
                    .ends_with(&format!("{plot}.svg"))
            });
        assert!(found, "no {plot} plot");
    }
}

#[test]
fn malformed_stream_steps_are_refused_with_the_step() {
    for (toml, wants) in [
        (
            "rate = \"fast\"\ninsert = { start = \"60%\", end = \"70%\" }",
            "rate",
        ),
        ("", "has no writes"),
        (
            "insert = { start = \"50%\", end = \"70%\" }",
            "overlap live ids",
        ),
        (
            "delete = { ids = { start = 0, end = \"10%\" } }\nupdate = { ids = { start = 0, end = \"10%\" }, from = \"70%\" }",
            "does not also update",
        ),
    ] {
        let text = format!(
            "[[steps]]\nkind = \"build\"\nend = \"60%\"\n[[steps]]\nkind = \"stream\"\n{toml}"
        );
        let err = match Runbook::parse_toml(&text) {
            Err(e) => e.to_string(),
            Ok(rb) => rb.resolve(1000).unwrap_err().to_string(),
        };
        assert!(err.contains(wants), "{toml}: {err}");
    }
}

/// A big-ann-benchmarks streaming runbook, in their YAML layout, for a 3,000-point set.
pub(crate) const BIGANN_RUNBOOK: &str = r#"
small-set:
  max_pts: 3000
  1:
    operation: "insert"
    start: 0
    end: 2000
  2:
    operation: "search"
  3:
    operation: "delete"
    start: 0
    end: 400
  4:
    operation: "replace"
    tags_start: 500
    tags_end: 700
    ids_start: 2000
    ids_end: 2200
  5:
    operation: "search"
  6:
    operation: "insert"
    start: 2200
    end: 3000
  7:
    operation: "search"
  gt_url: "none"
"#;

/// Runs the big-ann runbook on `engine` from the command line, between operations and then
/// concurrently; checks recall against `min_recall`, stale hits and the step shapes.
pub(crate) fn bigann_runbook_runs(
    engine: &str,
    url: Option<&str>,
    distance: &str,
    extra: &[&str],
    min_recall: f64,
) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("runbook.yaml");
    std::fs::write(&file, BIGANN_RUNBOOK).unwrap();
    let spec = format!("{}#small-set", file.display());
    let dataset = format!("gen:clustered:n=3000,dim=16,queries=30,seed=2,distance={distance}");
    for concurrent in [false, true] {
        let mut args = vec![
            "bench",
            "--db",
            engine,
            "--dataset",
            &dataset,
            "--runbook",
            &spec,
            "-k",
            "10",
            "-q",
            "--recreate",
            "--name",
            if concurrent { "c" } else { "b" },
        ];
        if concurrent {
            args.push("--concurrent-writes");
        }
        if let Some(u) = url {
            args.extend(["--url", u]);
        }
        args.extend(extra);
        succeeds(dir.path(), &args);
        let name = if concurrent { "c" } else { "b" };
        let r = RunResult::load(&dir.path().join("results").join(format!("{name}.json"))).unwrap();
        let config = &r.configs[0];
        let searches: Vec<_> = config.searches().collect();
        assert_eq!(searches.len(), 3, "{engine}: big-ann's three searches");
        assert_eq!(
            searches.iter().map(|s| s.live_points).collect::<Vec<_>>(),
            [2000, 1600, 2400],
            "{engine}"
        );
        for s in &searches {
            assert_eq!(s.stale_hits, 0, "{engine}");
            assert!(
                s.quality.recall >= min_recall,
                "{engine}: {}",
                s.quality.recall
            );
        }
        let streams: Vec<_> = config.streams().collect();
        if concurrent {
            assert_eq!(streams.len(), 3, "{engine}: each write a stream step");
            for s in streams {
                assert_eq!(s.stale_hits, 0, "{engine}");
                assert!(s.recall >= min_recall - 0.05, "{engine}: {}", s.recall);
            }
        } else {
            assert!(streams.is_empty());
            assert_eq!(config.mutations().count(), 3);
        }
    }
}

#[test]
fn a_bigann_runbook_runs_on_exact_between_and_during_writes() {
    bigann_runbook_runs("exact", None, "euclidean", &[], 1.0);
}

/// A `--search-param` sweep over a runbook with stream steps runs the runbook once per set,
/// each from a fresh build, and every stream step searches with its configuration's set.
/// qdrant-edge reports its index progress: points written by a stream are not indexed until
/// the next optimize, and the lag is recorded.
#[test]
fn a_search_sweep_gives_each_set_its_own_stream_and_the_index_lag_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let runbook = Path::new(env!("CARGO_MANIFEST_DIR")).join("datasets/runbooks/stream.toml");
    let out = succeeds(
        dir.path(),
        &argv![
            "bench --db qdrant-edge --dataset gen:clustered:n=3000,dim=16,queries=20,seed=4 --runbook",
            runbook.to_str().unwrap(),
            "--search-param hnsw_ef=16,64 -k 10 --out res --name r"
        ],
    );
    assert!(
        stderr(&out).contains("gets its own build"),
        "{}",
        stderr(&out)
    );
    let result = RunResult::load(&dir.path().join("res").join("r.json")).unwrap();
    assert_eq!(result.configs.len(), 2);
    for (config, ef) in result.configs.iter().zip([16, 64]) {
        let set = config.stream_search_params.as_ref().unwrap();
        assert_eq!(
            set.get("hnsw_ef").map(|v| v.to_string()),
            Some(ef.to_string())
        );
        let streams: Vec<&StreamStep> = config.streams().collect();
        assert_eq!(streams.len(), 2);
        for s in streams {
            assert_eq!(&s.search_params, set);
            assert_eq!(s.stale_hits, 0);
            // The embedded shard never indexes in the background: what a stream writes stays
            // unindexed, and the result says how much.
            assert!(s.index_lag_after.unwrap() > 0, "{s:?}");
            assert!(s.timeline.iter().any(|t| t.index_lag.is_some()));
        }
        // Static searches still sweep every set.
        assert_eq!(config.searches().count(), 3 * 2);
    }
}
