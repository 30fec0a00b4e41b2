//! `ragdbeval verify`: a result agrees with its sidecar and dataset (every `bench`
//! in this suite is verified by `common::ragdbeval`); an edited sidecar, or a result whose
//! stored figure was changed, fails with a message naming the step and the figure.

use crate::common::{ragdbeval, stderr, stdout, succeeds_in_temp};

#[test]
fn an_edited_sidecar_or_result_fails_verification() {
    let (dir, _) = succeeds_in_temp(&argv![
        "bench -q --db qdrant-edge --warmup 0 --runbook default --dataset gen:clustered:n=3000,dim=16,queries=200,seed=8 --search-param hnsw_ef=8,64 --name r"
    ]);
    let results = dir.path().join("results");
    let sidecar = results.join("r.queries.jsonl");
    let original = std::fs::read_to_string(&sidecar).unwrap();

    // One query of the first search step now lists only its first 3 results.
    let mut lines: Vec<String> = original.lines().map(String::from).collect();
    let mut v: serde_json::Value = serde_json::from_str(&lines[3]).unwrap();
    let ids = v["ids"].as_array_mut().unwrap();
    ids.truncate(3);
    lines[3] = v.to_string();
    std::fs::write(&sidecar, lines.join("\n") + "\n").unwrap();
    let bad = ragdbeval(dir.path(), &["verify", "results/r.json"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stdout(&bad));
    let err = stderr(&bad);
    assert!(err.contains("does not agree with its sidecar"), "{err}");
    assert!(err.contains("1 of 8 search steps differ"), "{err}");
    let report = stdout(&bad);
    assert!(
        report.contains("DIFF  configuration 1 runbook step 2 (hnsw_ef=8)"),
        "{report}"
    );
    assert!(report.contains("recall: stored"), "{report}");
    assert!(
        report.contains("queries_short: stored 0, recomputed 1"),
        "{report}"
    );

    // The sidecar restored, a stored latency percentile edited instead.
    std::fs::write(&sidecar, &original).unwrap();
    let path = results.join("r.json");
    let mut result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let steps = result["configs"][0]["steps"].as_array_mut().unwrap();
    let search = steps
        .iter_mut()
        .rev()
        .find(|s| s["phase"] == "search")
        .expect("a search step");
    search["latency"]["p99_ms"] = 0.001.into();
    std::fs::write(&path, serde_json::to_vec(&result).unwrap()).unwrap();
    let bad = ragdbeval(dir.path(), &["verify", "results/r.json"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stdout(&bad).contains("latency p99_ms: stored 0.001"),
        "{}",
        stdout(&bad)
    );

    // Against another dataset: refused, naming the mismatch.
    let other = ragdbeval(
        dir.path(),
        &argv!["verify results/r.json --dataset gen:clustered:n=3000,dim=16,queries=200,seed=9"],
    );
    assert_eq!(other.status.code(), Some(2));
    assert!(
        stderr(&other).contains("is not the dataset of"),
        "{}",
        stderr(&other)
    );
}
