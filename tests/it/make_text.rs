//! `dataset make-text manpages` on the shipped test pages (`tests/data/manpages`): the BEIR
//! directory it writes, its reuse and refusals, and with the model, the embedded dataset that
//! `bench` scores on the retrieval task.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{stderr, stdout};
use ragdbeval::results::{RunResult, Step};

fn pages() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/manpages")
        .to_string_lossy()
        .into_owned()
}

/// `ragdbeval dataset make-text manpages` on the test pages into `out`, with no model unless
/// `model` is given.
fn make_text(cwd: &Path, out: &Path, extra: &[&str], model: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ragdbeval"));
    cmd.args(["dataset", "make-text", "manpages", "-q", "--man-dir"])
        .arg(pages())
        .arg("--out")
        .arg(out)
        .args(extra)
        .current_dir(cwd)
        .env_remove("RAGDBEVAL_EMBED_MODEL");
    if let Some(model) = model {
        cmd.args(["--model", model]);
    }
    cmd.output().expect("the ragdbeval binary runs")
}

#[test]
fn make_text_writes_a_beir_directory_reuses_it_and_refuses_other_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pages");
    let first = make_text(dir.path(), &out, &["--queries", "3"], None);
    assert!(first.status.success(), "{}", stderr(&first));
    let said = stdout(&first);
    assert!(
        said.contains("8 documents, 3 queries (of 4 candidates) from 12 items read"),
        "{said}"
    );
    assert!(said.contains("ragdbeval embed --beir"), "{said}");
    let beir = out.join("beir");
    let corpus = std::fs::read_to_string(beir.join("corpus.jsonl")).unwrap();
    assert_eq!(corpus.lines().count(), 8);
    let qrels = std::fs::read_to_string(beir.join("qrels/test.tsv")).unwrap();
    let lines: Vec<&str> = qrels.lines().collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[0], "query-id\tcorpus-id\tscore");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(beir.join("construction.json")).unwrap())
            .unwrap();
    assert_eq!(record["documents_left_out"]["`.so` redirect"], 1);
    assert_eq!(
        record["not_candidates"]["description shared by several items"],
        2
    );

    let again = make_text(dir.path(), &out, &["--queries", "3"], None);
    assert!(again.status.success(), "{}", stderr(&again));
    assert!(stdout(&again).contains("reusing"), "{}", stdout(&again));
    let other = make_text(dir.path(), &out, &["--queries", "2"], None);
    assert!(!other.status.success());
    let err = stderr(&other);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("built with other parameters"), "{err}");

    let none = make_text(
        dir.path(),
        &dir.path().join("x"),
        &["--sections", "9"],
        None,
    );
    assert!(!none.status.success());
    assert!(
        stderr(&none).contains("no man page in sections 9"),
        "{}",
        stderr(&none)
    );
}

#[test]
#[cfg_attr(
    not(all(feature = "embed", embed_model)),
    ignore = "needs the cargo feature `embed` and RAGDBEVAL_EMBED_MODEL (scripts/test.sh sets both)"
)]
fn make_text_embeds_the_pages_and_bench_scores_the_task() {
    let model = std::env::var("RAGDBEVAL_EMBED_MODEL").expect("RAGDBEVAL_EMBED_MODEL");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("pages");
    let made = make_text(dir.path(), &out, &[], Some(&model));
    assert!(made.status.success(), "{}", stderr(&made));
    let embedded = out.join("embedded");
    assert!(embedded.join("qrels.txt").is_file());
    crate::common::succeeds(
        dir.path(),
        &argv![
            "bench -q --db exact -k 5 --runbook build-search --name r --dataset",
            embedded.to_str().unwrap()
        ],
    );
    let r = RunResult::load(&dir.path().join("results/r.json")).unwrap();
    let judged = r.dataset.judgments.as_ref().expect("judgments recorded");
    assert_eq!(judged.queries, 4);
    let task = r.configs[0]
        .steps
        .iter()
        .find_map(|s| match s {
            Step::Search(s) => s.end_task.as_ref(),
            _ => None,
        })
        .expect("the search step is scored on the task");
    // Eight short pages: the exact neighbours find most queries' own page first.
    assert!(task.metrics["mrr@5"] > 0.5, "{task:?}");
    let again = make_text(dir.path(), &out, &[], Some(&model));
    assert!(
        stdout(&again).contains("already embedded"),
        "{}",
        stdout(&again)
    );
}
