//! Text as editors save it: a UTF-8 byte-order mark changes no score in any text file
//! ragdbeval reads (TREC qrels and runs, ground-truth and run JSONL, runbooks, attribute
//! files), and UTF-16 is one error naming the file and the encoding.

use std::path::Path;

use crate::common::{ragdbeval, stderr, stdout};

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// TREC qrels whose first query (51) is found at rank 1: a BOM kept in its id would make it
/// missing from the run and hit@1 fall.
const TREC_QRELS: &str = "51 0 d1 1\n51 0 d7 2\n52 0 d2 1\n53 0 d3 1\n";
const TREC_RUN: &str = "51 Q0 d1 1 0.9 t\n51 Q0 d9 2 0.5 t\n52 Q0 d4 1 0.8 t\n52 Q0 d2 2 0.7 t\n\
                        53 Q0 d3 1 0.6 t\n";
const GT_JSONL: &str = r#"{"query_id": "Q1", "gold_references": [{"document": "A.pdf", "page": 3, "relevance": 2}]}
{"query_id": "Q2", "gold_references": [{"document": "B.pdf", "page": 9}]}
"#;
const RUN_JSONL: &str = r#"{"query_id": "Q1", "results": [{"document": "a.pdf", "page": 3, "score": 0.9}]}
{"query_id": "Q2", "results": [{"document": "C.pdf", "page": 1, "score": 0.8}, {"document": "B.pdf", "page": 10, "score": 0.7}]}
"#;

fn with_bom(text: &str) -> Vec<u8> {
    [BOM, text.as_bytes()].concat()
}

fn utf16(text: &str, big_endian: bool, mark: bool) -> Vec<u8> {
    let mark = if mark { "\u{feff}" } else { "" };
    format!("{mark}{text}")
        .encode_utf16()
        .flat_map(|u| {
            if big_endian {
                u.to_be_bytes()
            } else {
                u.to_le_bytes()
            }
        })
        .collect()
}

/// `eval` of `qrels` and `run` saved as `q` and `r` in `dir`, `encode`d: its terminal output
/// and its JSON.
fn eval(dir: &Path, qrels: &str, run: &str, encode: fn(&str) -> Vec<u8>) -> (String, String) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("q"), encode(qrels)).unwrap();
    std::fs::write(dir.join("r"), encode(run)).unwrap();
    let o = ragdbeval(dir, &argv!["eval --qrels q --run r -k 1,3 --json e.json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    (
        stdout(&o),
        std::fs::read_to_string(dir.join("e.json")).unwrap(),
    )
}

#[test]
fn a_bom_changes_no_eval_score() {
    let root = tempfile::tempdir().unwrap();
    for (name, qrels, run) in [
        ("trec", TREC_QRELS, TREC_RUN),
        ("jsonl", GT_JSONL, RUN_JSONL),
    ] {
        let plain = eval(&root.path().join(name), qrels, run, |t| {
            t.as_bytes().to_vec()
        });
        let marked = eval(
            &root.path().join(format!("{name}-bom")),
            qrels,
            run,
            with_bom,
        );
        assert_eq!(marked.0, plain.0, "{name}: terminal output");
        assert_eq!(marked.1, plain.1, "{name}: JSON");
        let e: serde_json::Value = serde_json::from_str(&marked.1).unwrap();
        assert_eq!(e["missing_from_run"], serde_json::json!([]), "{name}");
        // TREC: 51 and 53 found first, 52 not; JSONL: Q1 found first (fuzzily), Q2 not.
        let hit1 = if name == "trec" { 0.6667 } else { 0.5 };
        assert_eq!(e["aggregate"]["metrics"]["hit@1"], hit1, "{name}");
    }
    // `eval compare` reads its runs the same way.
    let dir = root.path().join("trec");
    std::fs::write(dir.join("r-bom"), with_bom(TREC_RUN)).unwrap();
    let o = ragdbeval(&dir, &["eval", "compare", "r", "r-bom", "--qrels", "q"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let said = stdout(&o);
    assert!(said.contains("3 queries): 0 win, 0 loss, 3 draw"), "{said}");
}

const RUNBOOK: &str = "name = \"bom\"\n[[steps]]\nkind = \"build\"\nend = \"80%\"\n\
                       [[steps]]\nkind = \"search\"\n[[steps]]\nkind = \"insert\"\n\
                       start = \"80%\"\nend = \"100%\"\n[[steps]]\nkind = \"search\"\n";

fn attributes() -> String {
    (0..2000)
        .map(|i| format!("{{\"id\": {i}, \"color\": \"c{}\"}}\n", i % 7))
        .collect()
}

/// A bench on the exact engine with a runbook and an attribute file written by `encode` in
/// `dir`: the figures that depend on what was read (the runbook's steps and hash, the
/// filter's selectivity and name, recall), with the result file's path.
fn bench(dir: &Path, encode: fn(&str) -> Vec<u8>) -> serde_json::Value {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("rb.toml"), encode(RUNBOOK)).unwrap();
    std::fs::write(dir.join("attrs.jsonl"), encode(&attributes())).unwrap();
    let o = ragdbeval(
        dir,
        &argv![
            "bench --db exact -q --name b --warmup 0 --dataset gen:clustered:n=2000,dim=8,queries=30,seed=4 --runbook rb.toml --attributes attrs.jsonl --filter color=c3"
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results/b.json")).unwrap())
            .unwrap();
    let settings = &r["manifest"]["settings"];
    let searches: Vec<serde_json::Value> = r["configs"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s.get("filter").is_some())
        .map(|s| {
            serde_json::json!([
                s["runbook_step"],
                s["filter"]["name"],
                s["filter"]["selectivity"],
                s["quality"]["recall"]
            ])
        })
        .collect();
    serde_json::json!({
        "runbook": settings["runbook"],
        "runbook_hash": settings["runbook_hash"],
        "runbook_steps": settings["runbook_steps"],
        "searches": searches,
    })
}

#[test]
fn a_bom_in_a_runbook_or_an_attribute_file_changes_no_figure() {
    let root = tempfile::tempdir().unwrap();
    let plain = bench(&root.path().join("plain"), |t| t.as_bytes().to_vec());
    let marked = bench(&root.path().join("bom"), with_bom);
    assert_eq!(marked, plain);
    assert_eq!(plain["runbook"], "bom");
    let searches = plain["searches"].as_array().unwrap();
    assert_eq!(searches.len(), 2, "{plain}");
    assert_eq!(searches[0][1], "color = \"c3\"");
}

/// UTF-16, with or without its byte-order mark, and UTF-32 in every kind of text file: one
/// error line naming the file and the encoding, exit 2, no result.
#[test]
fn other_encodings_are_one_error_naming_the_file_and_the_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("q"), TREC_QRELS).unwrap();
    std::fs::write(d.join("r"), TREC_RUN).unwrap();
    std::fs::write(d.join("q16"), utf16(TREC_QRELS, false, true)).unwrap();
    std::fs::write(d.join("r16"), utf16(RUN_JSONL, true, false)).unwrap();
    std::fs::write(d.join("rb16.toml"), utf16(RUNBOOK, false, false)).unwrap();
    std::fs::write(d.join("attrs16.jsonl"), utf16(&attributes(), true, true)).unwrap();
    let mut utf32 = vec![0xFF, 0xFE, 0, 0];
    utf32.extend(TREC_RUN.chars().flat_map(|c| (c as u32).to_le_bytes()));
    std::fs::write(d.join("r32"), utf32).unwrap();
    let bench = |extra: &[&'static str]| {
        let mut args = vec![
            "bench",
            "--db",
            "exact",
            "-q",
            "--dataset",
            "gen:clustered:n=2000,dim=8,queries=30,seed=4",
        ];
        args.extend_from_slice(extra);
        args
    };
    let cases: [(Vec<&str>, &str); 5] = [
        (
            vec!["eval", "--qrels", "q16", "--run", "r"],
            "q16: UTF-16 LE text; save it as UTF-8",
        ),
        (
            vec!["eval", "--qrels", "q", "--run", "r16"],
            "r16: UTF-16 BE text; save it as UTF-8",
        ),
        (
            vec!["eval", "--qrels", "q", "--run", "r32"],
            "r32: UTF-32 LE text; save it as UTF-8",
        ),
        (
            bench(&["--runbook", "rb16.toml"]),
            "rb16.toml: UTF-16 LE text; save it as UTF-8",
        ),
        (
            bench(&["--attributes", "attrs16.jsonl", "--filter", "color=c3"]),
            "attrs16.jsonl: UTF-16 BE text; save it as UTF-8",
        ),
    ];
    for (args, needle) in cases {
        let o = ragdbeval(d, &args);
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(
            !d.join("results").exists(),
            "{args:?}: a result was written"
        );
    }
}
