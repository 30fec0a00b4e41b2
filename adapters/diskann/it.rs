//! The DiskANN adapter's own particulars through `bench`: its on-disk sets run a static
//! runbook, and a runbook that writes after the build is refused before the build.

use crate::common::{ragdbeval, stderr};
use ragdbeval::results::{RunResult, RunState};

const DATASET: &str = "gen:clustered:n=3000,dim=32,queries=100,distance=euclidean,seed=5";

#[test]
#[cfg_attr(
    not(engine_runs = "diskann"),
    ignore = "needs the cargo feature `diskann` (scripts/test.sh builds it)"
)]
fn the_on_disk_set_runs_build_search() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "bench",
        "--db",
        "diskann",
        "--set",
        "on-disk",
        "--runbook",
        "build-search",
        "--dataset",
        DATASET,
        "-q",
        "--name",
        "d",
    ];
    let out = ragdbeval(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let r = RunResult::load(&dir.path().join("results/d.json")).unwrap();
    assert_eq!(r.status.state, RunState::Completed);
    let search = r.configs[0].searches().next().unwrap();
    assert!(
        search.quality.recall >= 0.9,
        "recall {}",
        search.quality.recall
    );
}

#[test]
#[cfg_attr(
    not(engine_runs = "diskann"),
    ignore = "needs the cargo feature `diskann` (scripts/test.sh builds it)"
)]
fn a_runbook_that_writes_is_refused_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "bench",
        "--db",
        "diskann",
        "--set",
        "on-disk",
        "--dataset",
        DATASET,
        "-q",
        "--name",
        "d",
    ];
    let out = ragdbeval(dir.path(), &args);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains("storage = \"disk\"") && err.contains("--runbook build-search"),
        "{err}"
    );
    // Refused by the check before the first build.
    assert!(err.contains("check the runbook's writes"), "{err}");
}
