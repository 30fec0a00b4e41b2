//! Helpers shared by the integration tests: run the real binary, make bad datasets, drive
//! an engine's adapter directly.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use ragdbeval::distance::Distance;
use ragdbeval::engine::{
    CollectionSpec, ConnectOptions, EngineResult, Neighbor, PointId, Query, VectorEngine,
};
use ragdbeval::groundtruth::{BaseSet, GroundTruth, exact_knn};
use ragdbeval::params::{EngineConfig, ParamMap, expand};
use ragdbeval::synthetic::SyntheticSpec;

/// A command line for [`ragdbeval`]: each string literal is split at its spaces (`"bench
/// --db exact -q"` is four arguments), any other value is one argument as it is.
macro_rules! argv {
    (@parts [$($done:expr,)*]) => { [$($done,)*].concat() };
    (@parts [$($done:expr,)*] $words:literal $(, $($rest:tt)*)?) => {
        argv!(@parts [$($done,)* crate::common::words($words),] $($($rest)*)?)
    };
    (@parts [$($done:expr,)*] $one:expr $(, $($rest:tt)*)?) => {
        argv!(@parts [$($done,)* crate::common::one($one),] $($($rest)*)?)
    };
    ($($part:tt)*) => { argv!(@parts [] $($part)*) };
}

/// The arguments of a literal of [`argv!`].
pub fn words(text: &'static str) -> Vec<&'static str> {
    text.split_whitespace().collect()
}

/// One argument of [`argv!`].
pub fn one(arg: &str) -> Vec<&str> {
    vec![arg]
}

/// Runs `ragdbeval` with `args` in `cwd`, offline, without progress bars. After a `bench`
/// that succeeded, every result file it wrote must pass `ragdbeval verify` (the
/// figures of every result the suite writes are recomputed from its sidecar and dataset).
pub fn ragdbeval(cwd: &Path, args: &[&str]) -> Output {
    let out = run_binary(cwd, args);
    if args.first() == Some(&"bench") && out.status.success() {
        verify_written(cwd, args);
    }
    out
}

/// Runs `ragdbeval` as [`ragdbeval`] does; the run must succeed.
pub fn succeeds(cwd: &Path, args: &[&str]) -> Output {
    let out = ragdbeval(cwd, args);
    assert!(
        out.status.success(),
        "ragdbeval {}: {}",
        args.join(" "),
        stderr(&out)
    );
    out
}

/// Runs `ragdbeval` in a new temporary directory, returned with the output.
pub fn run_in_temp(args: &[&str]) -> (tempfile::TempDir, Output) {
    let dir = tempfile::tempdir().unwrap();
    let out = ragdbeval(dir.path(), args);
    (dir, out)
}

/// [`run_in_temp`]; the run must succeed.
pub fn succeeds_in_temp(args: &[&str]) -> (tempfile::TempDir, Output) {
    let dir = tempfile::tempdir().unwrap();
    let out = succeeds(dir.path(), args);
    (dir, out)
}

fn run_binary(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ragdbeval"))
        .args(args)
        .current_dir(cwd)
        .env("RAGDBEVAL_DATA_DIR", cwd.join("cache"))
        .output()
        .expect("the ragdbeval binary runs")
}

/// Runs `verify` on the result a `bench` with `args` wrote in `cwd`.
fn verify_written(cwd: &Path, args: &[&str]) {
    let value = |names: &[&str]| {
        args.windows(2)
            .find(|w| names.contains(&w[0]))
            .map(|w| w[1].to_string())
    };
    // Sparse and hybrid runs write no sidecar: `verify` says so (tests/it/hybrid.rs).
    if args.contains(&"--no-sidecar")
        || args
            .windows(2)
            .any(|w| w[0] == "--retrieval" && w[1] != "dense")
    {
        return;
    }
    let dir = cwd.join(value(&["-o", "--out"]).unwrap_or_else(|| "results".into()));
    let results: Vec<PathBuf> = match value(&["--name"]) {
        Some(name) => vec![dir.join(format!("{name}.json"))],
        None => files_in(&dir)
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect(),
    };
    for result in results.iter().filter(|p| p.is_file()) {
        let path = result.to_string_lossy();
        let checked = run_binary(cwd, &["verify", &path]);
        assert!(
            checked.status.success(),
            "verify {path} (written by `ragdbeval {}`): {}{}",
            args.join(" "),
            stdout(&checked),
            stderr(&checked)
        );
    }
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Files in `dir` (recursively none expected), empty if it does not exist.
pub fn files_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default()
}

/// The committed h5py fixtures.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("datasets/fixtures")
        .join(name)
}

/// A blank result document for tests that drive the runner directly.
pub fn empty_result() -> ragdbeval::results::RunResult {
    use ragdbeval::results::*;
    RunResult {
        schema: SCHEMA.into(),
        status: RunStatus {
            state: RunState::Running,
            error: None,
            resumed: Vec::new(),
            invalid: Vec::new(),
        },
        manifest: Manifest::new(Default::default()),
        dataset: DatasetInfo {
            name: "t".into(),
            source: "t".into(),
            sha256: String::new(),
            files: Vec::new(),
            train: 0,
            dim: 0,
            queries: 0,
            distance: "euclidean".into(),
            ground_truth_depth: 0,
            ground_truth_source: "computed".into(),
            limit: None,
            judgments: None,
            lexical: None,
        },
        engine: EngineInfo {
            name: "t".into(),
            version: String::new(),
            in_process: true,
            details: serde_json::Map::new(),
        },
        configs: Vec::new(),
        warnings: Vec::new(),
        curves: Vec::new(),
        sidecar: None,
        element_type: None,
    }
}

/// A parameter map from `(name, value)` pairs.
pub fn params(pairs: &[(&str, ragdbeval::params::ParamValue)]) -> ragdbeval::params::ParamMap {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// A collection/table name no other test run uses (underscores only: valid SQL identifier).
pub fn unique_name(tag: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("ragdbeval_test_{tag}_{}_{nanos}", std::process::id())
}

/// The URL of the server a test needs, from the environment variable `var`.
///
/// Server tests are compiled as ignored unless `build.rs` saw their variable at build time
/// (or `CI` is set, where a missing server must fail), so a test that gets here runs for
/// real: an unset variable is a failure with the way to fix it, never a silent pass.
pub fn server_url(var: &str, how: &str) -> String {
    match std::env::var(var) {
        Ok(url) if !url.trim().is_empty() => url.trim().to_string(),
        _ if std::env::var_os("CI").is_some() => {
            panic!("{var} is not set: under CI this test must run against its server ({how})")
        }
        _ => panic!(
            "{var} is not set at run time, but the tests were built with it: set it ({how}) \
             or rebuild without it, so the test is reported as ignored"
        ),
    }
}

/// The cutoff of the server engines' recall checks.
pub const K: usize = 10;

/// The top-`K` answer of `engine` for each query (`queries` holds rows of `dim` values).
pub fn search_all(
    engine: &dyn ragdbeval::engine::VectorEngine,
    queries: &[f32],
    dim: usize,
) -> Vec<Vec<ragdbeval::engine::Neighbor>> {
    queries
        .chunks_exact(dim)
        .map(|q| {
            let mut out = Vec::new();
            if let Err(e) = engine.search(Query::new(q, K), &mut out) {
                panic!("search: {e}");
            }
            out
        })
        .collect()
}

/// Recall@`K` by distance: a returned point counts when its distance to the query, recomputed
/// here from `base`, is within 1e-4 (relative) of the `K`-th true distance, so ties and an
/// engine's own float rounding do not count as misses. `row` maps a returned id to its row
/// in `base`; an id it maps to `None`, or to a row beyond the data, is a miss.
pub fn recall(
    base: &[f32],
    queries: &[f32],
    dim: usize,
    distance: ragdbeval::distance::Distance,
    gt: &ragdbeval::groundtruth::GroundTruth,
    results: &[Vec<ragdbeval::engine::Neighbor>],
    row: impl Fn(ragdbeval::engine::PointId) -> Option<usize>,
) -> f64 {
    let mut hits = 0usize;
    for (q, found) in results.iter().enumerate() {
        let query = &queries[q * dim..(q + 1) * dim];
        let kth = gt.distances_of(q)[K - 1];
        let limit = kth + 1e-4 * kth.abs().max(1.0);
        for n in found.iter().take(K) {
            let Some(v) = row(n.id).and_then(|r| base.get(r.checked_mul(dim)?..)?.get(..dim))
            else {
                continue;
            };
            if distance.between(query, v) <= limit {
                hits += 1;
            }
        }
    }
    hits as f64 / (results.len() * K) as f64
}

/// Opens an HDF5 file for writing without HDF5's file lock. Tests run in parallel threads and
/// spawn children: a child spawned by another test while this file is open inherits its
/// descriptor and with it the lock, and the next open of the file in this process then
/// fails with "unable to lock file, errno = 11". The binary turns locking off in `main`; the
/// test process has no such `main`.
pub fn hdf5_open_rw(path: &Path) -> hdf5::File {
    hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .open_rw(path)
        .unwrap_or_else(|e| panic!("opening {} for writing: {e}", path.display()))
}

/// Creates an HDF5 file without HDF5's file lock: see [`hdf5_open_rw`].
pub fn hdf5_create(path: &Path) -> hdf5::File {
    hdf5::File::with_options()
        .with_fapl(|p| p.file_locking(false))
        .create(path)
        .unwrap_or_else(|e| panic!("creating {}: {e}", path.display()))
}

/// The registry entry of `engine`.
pub fn entry(engine: &str) -> &'static ragdbeval::engine::EngineEntry {
    ragdbeval::adapters::find(engine).unwrap_or_else(|| panic!("{engine} is registered"))
}

/// The URL of a server engine's server (see [`server_url`]); `None` for an embedded engine.
pub fn engine_url(engine: &str) -> Option<String> {
    let server = entry(engine).meta.server.as_ref()?;
    Some(server_url(server.url_env, server.how_to_get))
}

/// Connection options of the engine tests: runner-sized batches, two upload threads and a
/// minute per request. A server that wants a key gets it from `<NAME>_API_KEY`
/// (`QDRANT_API_KEY`), the variable beside its `<NAME>_URL`.
pub fn connect_options(engine: &str, url: Option<&str>, recreate: bool) -> ConnectOptions {
    let key_env = format!("{}_API_KEY", engine.to_uppercase().replace('-', "_"));
    ConnectOptions {
        url: url.map(str::to_string),
        api_key: std::env::var(key_env).ok().filter(|k| !k.is_empty()),
        recreate,
        batch_size: 500,
        upload_parallel: 2,
        timeout: Duration::from_secs(60),
        ..ConnectOptions::default()
    }
}

/// Opens `engine` through its registry entry.
pub fn open_engine(engine: &str, opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    (entry(engine).open)(opts)
}

/// Opens `engine` at `url`; a failure fails the test.
pub fn open_at(engine: &str, url: &str, recreate: bool) -> Box<dyn VectorEngine> {
    match open_engine(engine, &connect_options(engine, Some(url), recreate)) {
        Ok(opened) => opened,
        Err(e) => panic!("open {engine} at {url}: {e}"),
    }
}

/// What `create` is asked for, in the system temp dir and without attributes.
pub fn collection(
    name: &str,
    dim: usize,
    n: usize,
    distance: Distance,
    build: ParamMap,
) -> CollectionSpec {
    CollectionSpec {
        name: name.to_string(),
        dim,
        distance,
        expected_points: n,
        build_params: build,
        work_dir: std::env::temp_dir(),
        attributes: None,
        element_type: Default::default(),
    }
}

/// The build parameters and the expanded search parameters of a set of `engine`'s
/// config.toml; the set must have a description and a single build.
pub fn config_set(engine: &str, set: &str) -> (ParamMap, Vec<ParamMap>) {
    let config = EngineConfig::parse(entry(engine).config_toml).expect("config.toml parses");
    let found = config.set(set).expect("set exists");
    assert!(found.description.is_some(), "set {set} has no description");
    let builds = expand(&found.build);
    assert_eq!(builds.len(), 1, "set {set} sweeps build parameters");
    (builds[0].clone(), expand(&found.search))
}

/// A port nothing listens on: free a moment ago.
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// A generated dataset with its exact top-`K` ground truth, for tests that drive an adapter
/// directly.
pub struct TestData {
    pub dim: usize,
    pub n: usize,
    pub base: Vec<f32>,
    pub queries: Vec<f32>,
    pub gt: GroundTruth,
    pub distance: Distance,
}

impl TestData {
    /// `spec` as on the command line without `gen:` (`clustered:n=5000,dim=32,…`).
    pub fn generate(spec: &str) -> TestData {
        Self::from_spec(&format!("gen:{spec}").parse().expect("dataset spec"))
    }

    pub fn from_spec(spec: &SyntheticSpec) -> TestData {
        let (train, test) = spec.generate();
        let dim = train.dim();
        let base = train.into_flat();
        let queries = test.into_flat();
        let gt = exact_knn(
            &BaseSet {
                vectors: &base,
                ids: None,
                dim,
            },
            &queries,
            spec.distance,
            K,
            &|_| {},
        );
        TestData {
            dim,
            n: base.len() / dim,
            base,
            queries,
            gt,
            distance: spec.distance,
        }
    }

    pub fn row(&self, row: usize) -> &[f32] {
        &self.base[row * self.dim..(row + 1) * self.dim]
    }

    pub fn query(&self, q: usize) -> &[f32] {
        &self.queries[q * self.dim..(q + 1) * self.dim]
    }

    /// The collection for this data.
    pub fn spec(&self, name: &str, build: ParamMap) -> CollectionSpec {
        collection(name, self.dim, self.n, self.distance, build)
    }

    /// Loads every row the way the runner does (batch_size × upload_parallel points at a
    /// time), row `r` under id `id_of(r)`.
    pub fn load(&self, engine: &mut dyn VectorEngine, id_of: impl Fn(usize) -> PointId) {
        let ids: Vec<PointId> = (0..self.n).map(id_of).collect();
        for (chunk_ids, chunk) in ids.chunks(1000).zip(self.base.chunks(1000 * self.dim)) {
            if let Err(e) = engine.insert_batch(chunk_ids, chunk) {
                panic!("insert: {e}");
            }
        }
    }

    /// Recall@`K` by distance (see [`recall`]); `row_of` maps a returned id to its row.
    pub fn recall(
        &self,
        results: &[Vec<Neighbor>],
        row_of: impl Fn(PointId) -> Option<usize>,
    ) -> f64 {
        recall(
            &self.base,
            &self.queries,
            self.dim,
            self.distance,
            &self.gt,
            results,
            row_of,
        )
    }
}

/// Ids are row numbers: for the tests whose data is loaded with `id_of = |r| r as PointId`.
pub fn row_id(id: PointId) -> Option<usize> {
    usize::try_from(id).ok()
}

/// Opens `engine` at `url`, creates a collection for `data` with `build` and loads it under
/// row-number ids, as the runner does.
pub fn loaded(
    engine: &str,
    url: &str,
    data: &TestData,
    tag: &str,
    build: ParamMap,
) -> Box<dyn VectorEngine> {
    let mut opened = open_at(engine, url, false);
    opened
        .create(&data.spec(&unique_name(tag), build))
        .expect("create");
    data.load(opened.as_mut(), |r| r as PointId);
    let report = opened.wait_until_ready().expect("ready");
    assert_eq!(report.points, Some(data.n as u64), "{report:?}");
    opened
}

/// A server of the engine's own script (`scripts/servers/<engine>.sh`) with a private state
/// directory: for the tests that stop or freeze a server. Stopped when dropped, even when an
/// assertion fails.
pub struct ScriptServer {
    script: PathBuf,
    dir: tempfile::TempDir,
    pub url: String,
}

impl ScriptServer {
    pub fn start(engine: &str) -> ScriptServer {
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scripts/servers")
            .join(format!("{engine}.sh"));
        let dir = tempfile::Builder::new()
            .prefix(&format!("ragdbeval-{engine}-test-"))
            .tempdir()
            .expect("temp dir");
        let mut server = ScriptServer {
            script,
            dir,
            url: String::new(),
        };
        let out = server.run("start");
        server.url = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(
            out.status.success() && server.url.contains("://"),
            "{engine} start failed: {} {}",
            server.url,
            stderr(&out)
        );
        server
    }

    /// The private state directory (`RAGDBEVAL_SERVER_DIR`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn run(&self, command: &str) -> Output {
        Command::new("bash")
            .arg(&self.script)
            .arg(command)
            .env("RAGDBEVAL_SERVER_DIR", self.dir.path())
            .output()
            .unwrap_or_else(|e| panic!("run {}: {e}", self.script.display()))
    }
}

impl Drop for ScriptServer {
    fn drop(&mut self) {
        let _ = self.run("stop");
    }
}
