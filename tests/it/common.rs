//! Helpers shared by the integration tests: run the real binary, make bad datasets.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `ragdbeval` with `args` in `cwd`, offline, without progress bars.
pub fn ragdbeval(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ragdbeval"))
        .args(args)
        .current_dir(cwd)
        .env("RAGDBEVAL_DATA_DIR", cwd.join("cache"))
        .output()
        .expect("the ragdbeval binary runs")
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
        },
        manifest: Manifest::new(serde_json::Map::new()),
        dataset: DatasetInfo {
            name: "t".into(),
            source: "t".into(),
            sha256: String::new(),
            train: 0,
            dim: 0,
            queries: 0,
            distance: "euclidean".into(),
            ground_truth_depth: 0,
            ground_truth_source: "computed".into(),
            limit: None,
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
