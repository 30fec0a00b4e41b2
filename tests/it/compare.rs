//! `ragdbeval compare`: a known difference is reported as significant in the right
//! direction, no difference as none, per-query outcomes add up, and runs of different data
//! are flagged as not comparable.

use std::path::Path;

use ragdbeval::results::compare::{Verdict, compare};

use crate::common::{ragdbeval, stderr, stdout, succeeds};

const DATA: &str = "gen:clustered:n=4000,dim=32,queries=300,seed=21";

fn bench(dir: &Path, name: &str, extra: &[&str]) {
    let mut args = vec![
        "bench",
        "-q",
        "--warmup",
        "0",
        "--runbook",
        "build-search",
        "--dataset",
        DATA,
        "--name",
        name,
    ];
    args.extend_from_slice(extra);
    let out = ragdbeval(dir, &args);
    assert!(out.status.success(), "{name}: {}", stderr(&out));
}

/// Rewrites every sidecar line of `name` with `edit` (a JSON object per query) into `into`.
fn derive(dir: &Path, name: &str, into: &str, edit: impl Fn(usize, &mut serde_json::Value)) {
    let results = dir.join("results");
    let text = std::fs::read_to_string(results.join(format!("{name}.queries.jsonl"))).unwrap();
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            edit(i, &mut v);
            v.to_string()
        })
        .collect();
    std::fs::write(
        results.join(format!("{into}.queries.jsonl")),
        lines.join("\n") + "\n",
    )
    .unwrap();
    let mut result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(results.join(format!("{name}.json"))).unwrap())
            .unwrap();
    result["sidecar"] = format!("{into}.queries.jsonl").into();
    std::fs::write(
        results.join(format!("{into}.json")),
        serde_json::to_vec(&result).unwrap(),
    )
    .unwrap();
}

fn verdict(c: &ragdbeval::results::compare::Comparison, metric: &str) -> Verdict {
    c.pairs[0]
        .metrics
        .iter()
        .find(|m| m.metric == metric)
        .unwrap_or_else(|| panic!("{metric} compared"))
        .verdict
}

#[test]
fn a_worse_index_is_worse_and_the_same_run_is_not_different() {
    let dir = tempfile::tempdir().unwrap();
    bench(dir.path(), "exact", &["--db", "exact"]);
    bench(
        dir.path(),
        "weak",
        &argv!["--db qdrant-edge --build-param m=4 --search-param hnsw_ef=4"],
    );
    let results = dir.path().join("results");
    let (exact, weak) = (results.join("exact.json"), results.join("weak.json"));

    let c = compare(&exact, &weak, &[], 0.05).unwrap();
    assert!(c.not_comparable.is_empty(), "{:?}", c.not_comparable);
    assert_eq!(verdict(&c, "recall"), Verdict::Worse);
    assert_eq!(verdict(&c, "ndcg"), Verdict::Worse);
    let p = &c.pairs[0];
    let o = p.outcomes;
    assert_eq!(o.win + o.loss + o.draw + o.regression, p.queries);
    assert_eq!(o.win, 0, "the exact engine finds every neighbour first");
    assert!(o.loss + o.regression > 0);

    // The same run against a copy whose latencies are shuffled among queries (same
    // distribution, no shift): nothing is different. Scaled by 1.5: latency is worse.
    let latency = |v: &serde_json::Value| v["latency_us"].as_f64().unwrap();
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(results.join("exact.queries.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    let n = lines.len();
    derive(dir.path(), "exact", "shuffled", |i, v| {
        v["latency_us"] = latency(&lines[(i * 7919 + 13) % n]).into();
    });
    derive(dir.path(), "exact", "slower", |_, v| {
        v["latency_us"] = (latency(v) * 1.5).into();
    });
    let same = compare(&exact, &results.join("shuffled.json"), &[], 0.05).unwrap();
    for metric in ["recall", "ndcg", "mrr", "latency_ms"] {
        assert_eq!(
            verdict(&same, metric),
            Verdict::NoSignificantDifference,
            "{metric}: {:?}",
            same.pairs[0].metrics
        );
    }
    assert_eq!(same.pairs[0].outcomes.draw, same.pairs[0].queries);
    let slower = compare(&exact, &results.join("slower.json"), &[], 0.05).unwrap();
    assert_eq!(verdict(&slower, "latency_ms"), Verdict::Worse);
    assert_eq!(verdict(&slower, "recall"), Verdict::NoSignificantDifference);

    // The command: every format, and a stated α.
    for format in ["text", "md", "json", "html"] {
        let out = succeeds(
            dir.path(),
            &argv![
                "compare results/exact.json results/weak.json --format",
                format
            ],
        );
        assert!(stdout(&out).contains("worse"), "{format}: {}", stdout(&out));
    }
    let bad = ragdbeval(
        dir.path(),
        &argv!["compare results/exact.json results/weak.json --pair 2:1"],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("search step"), "{}", stderr(&bad));
}

#[test]
fn runs_on_other_data_are_not_comparable() {
    let dir = tempfile::tempdir().unwrap();
    bench(dir.path(), "a", &["--db", "exact"]);
    succeeds(
        dir.path(),
        &argv![
            "bench -q --db exact --warmup 0 --runbook build-search --dataset gen:clustered:n=4000,dim=32,queries=300,seed=22 --name b"
        ],
    );
    let results = dir.path().join("results");
    let c = compare(&results.join("a.json"), &results.join("b.json"), &[], 0.05).unwrap();
    assert!(c.pairs.is_empty());
    assert!(
        c.not_comparable
            .iter()
            .any(|r| r.contains("different datasets")),
        "{:?}",
        c.not_comparable
    );
}

/// Scales the latency figures of every search step of result `name` by `factor`.
fn scale_summary_latency(dir: &Path, name: &str, factor: f64) {
    let path = dir.join("results").join(format!("{name}.json"));
    let mut result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for config in result["configs"].as_array_mut().unwrap() {
        for step in config["steps"].as_array_mut().unwrap() {
            if step["phase"] != "search" {
                continue;
            }
            for key in ["mean_ms", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms"] {
                let v = step["latency"][key].as_f64().unwrap();
                step["latency"][key] = (v * factor).into();
            }
        }
    }
    std::fs::write(&path, serde_json::to_vec(&result).unwrap()).unwrap();
}

#[test]
fn the_regression_gate_fails_a_worse_run_and_passes_an_unchanged_one() {
    let dir = tempfile::tempdir().unwrap();
    bench(dir.path(), "base", &["--db", "exact"]);
    bench(
        dir.path(),
        "weak",
        &argv!["--db qdrant-edge --build-param m=4 --search-param hnsw_ef=4"],
    );
    // A slower setting made on purpose: every latency of the base run doubled.
    derive(dir.path(), "base", "slower", |_, v| {
        v["latency_us"] = (v["latency_us"].as_f64().unwrap() * 2.0).into();
    });
    scale_summary_latency(dir.path(), "slower", 2.0);
    let rules = "recall<-0.005,qps<-50%,p99>+10%";
    let gate = |b: &str, extra: &[&str]| {
        let mut args = argv!["compare results/base.json", b, "--fail-on", rules];
        args.extend_from_slice(extra);
        ragdbeval(dir.path(), &args)
    };

    let same = gate("results/base.json", &[]);
    assert_eq!(
        same.status.code(),
        Some(0),
        "{}{}",
        stdout(&same),
        stderr(&same)
    );
    assert_eq!(
        stdout(&same).lines().count(),
        3,
        "one line per rule: {}",
        stdout(&same)
    );
    assert!(
        stdout(&same).lines().all(|l| l.starts_with("ok")),
        "{}",
        stdout(&same)
    );

    let weak = gate("results/weak.json", &[]);
    assert_eq!(
        weak.status.code(),
        Some(1),
        "{}{}",
        stdout(&weak),
        stderr(&weak)
    );
    let printed = stdout(&weak);
    let failed: Vec<&str> = printed
        .lines()
        .filter(|l| l.starts_with("FAIL"))
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    assert!(failed.contains(&"recall<-0.005"), "{}", stdout(&weak));

    let slower = gate("results/slower.json", &["--json"]);
    assert_eq!(
        slower.status.code(),
        Some(1),
        "{}{}",
        stdout(&slower),
        stderr(&slower)
    );
    let lines: Vec<serde_json::Value> = serde_json::from_str(&stdout(&slower)).unwrap();
    let p99 = lines.iter().find(|l| l["rule"] == "p99>+10%").unwrap();
    assert_eq!(p99["failed"], true);
    assert_eq!(p99["significant"], true);
    assert!(
        (p99["change"].as_f64().unwrap() - 1.0).abs() < 1e-9,
        "{p99}"
    );
    let recall = lines.iter().find(|l| l["rule"] == "recall<-0.005").unwrap();
    assert_eq!(recall["failed"], false, "{recall}");

    let bad = ragdbeval(
        dir.path(),
        &argv!["compare results/base.json results/weak.json --fail-on speed<1"],
    );
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("unknown metric"), "{}", stderr(&bad));
}
