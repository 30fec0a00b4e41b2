//! `bench --from RESULT.json`: the recorded command line runs again into a new result that
//! says which run it repeats; other data is refused before anything is measured; an engine
//! version that differs is a warning; only the options that say where things are may be
//! given with it.

use ragdbeval::results::RunResult;

use crate::common::{ragdbeval, stderr, stdout};

const DATA: &str = "gen:clustered:n=2000,dim=8,queries=50,seed=5";

#[test]
fn a_recorded_run_is_repeated_on_the_same_data_only() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let first = ragdbeval(
        d,
        &argv![
            "bench -q --warmup 0 --db qdrant-edge --runbook build-search --search-param hnsw_ef=16,64 --name orig --dataset",
            DATA
        ],
    );
    assert!(first.status.success(), "{}", stderr(&first));

    let again = ragdbeval(d, &argv!["bench --from results/orig.json --name again -q"]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(
        stdout(&again).contains(
            "compare with the run repeated: ragdbeval compare results/orig.json results/again.json"
        ),
        "{}",
        stdout(&again)
    );
    let (orig, new) = (
        RunResult::load(&d.join("results/orig.json")).unwrap(),
        RunResult::load(&d.join("results/again.json")).unwrap(),
    );
    let repeated = new
        .manifest
        .reproduces
        .as_ref()
        .expect("manifest.reproduces");
    assert_eq!(repeated.result, "results/orig.json");
    assert_eq!(repeated.started_at, orig.manifest.started_at);
    assert_eq!(repeated.engine_version, orig.engine.version);
    // The command line it ran: the recorded one, its name replaced.
    let line = new.manifest.command_line.join(" ");
    assert!(line.contains("--search-param hnsw_ef=16,64"), "{line}");
    assert!(
        line.contains("--name again") && !line.contains("orig"),
        "{line}"
    );
    assert_eq!(new.manifest.settings, orig.manifest.settings);
    assert_eq!(new.configs.len(), orig.configs.len());
    assert!(
        new.warnings
            .iter()
            .all(|w| !w.to_string().contains("differ"))
    );
    let compared = ragdbeval(d, &argv!["compare results/orig.json results/again.json"]);
    assert!(compared.status.success(), "{}", stderr(&compared));

    // Another dataset under the recorded run: refused, nothing written.
    let mut other: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("results/orig.json")).unwrap())
            .unwrap();
    other["dataset"]["sha256"] = "ab".repeat(32).into();
    std::fs::write(d.join("other.json"), other.to_string()).unwrap();
    let refused = ragdbeval(d, &argv!["bench --from other.json --name refused -q"]);
    assert_eq!(refused.status.code(), Some(2));
    let err = stderr(&refused);
    assert!(
        err.contains("the dataset is not the one other.json measured"),
        "{err}"
    );
    assert_eq!(
        err.lines().filter(|l| l.starts_with("error")).count(),
        1,
        "{err}"
    );
    assert!(!d.join("results/refused.json").exists());

    // Another engine version: measured, and said.
    let mut older: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.join("results/orig.json")).unwrap())
            .unwrap();
    older["engine"]["version"] = "qdrant-edge 0.0.1".into();
    std::fs::write(d.join("older.json"), older.to_string()).unwrap();
    let newer = ragdbeval(d, &argv!["bench --from older.json --name newer -q"]);
    assert!(newer.status.success(), "{}", stderr(&newer));
    let result = RunResult::load(&d.join("results/newer.json")).unwrap();
    assert!(
        result.warnings.iter().any(|w| w
            .to_string()
            .contains("differs from the run repeated (older.json: qdrant-edge 0.0.1)")),
        "{:?}",
        result.warnings
    );

    // An option that would change what runs.
    let changed = ragdbeval(d, &argv!["bench --from results/orig.json -k 5"]);
    assert_eq!(changed.status.code(), Some(2));
    assert!(
        stderr(&changed).contains("`-k` cannot be given with --from"),
        "{}",
        stderr(&changed)
    );
}
