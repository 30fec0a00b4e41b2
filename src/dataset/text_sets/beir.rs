//! A known-item set written as a BEIR directory: `corpus.jsonl` (`_id`, `text`),
//! `queries.jsonl` (`_id`, `text`, and `lexical: true` on a query kept by `--keep-lexical`),
//! `qrels/test.tsv` (header, then `query-id<TAB>corpus-id<TAB>1`: each query judges its own
//! item) and `construction.json` (the source, the rule and every count). The directory
//! appears whole or not at all.

use std::io::{BufWriter, Write};
use std::path::Path;

use serde_json::{Value, json};

use super::TextSetError;
use super::known_item::KnownItemSet;
use crate::atomic::AtomicDir;

/// Name of the file that records how the set was built.
pub const CONSTRUCTION: &str = "construction.json";

/// Writes `set` to the new directory `dir`, with `construction` as its `construction.json`.
pub fn write(dir: &Path, set: &KnownItemSet, construction: &Value) -> Result<(), TextSetError> {
    let out = AtomicDir::create(dir).map_err(|e| TextSetError::io(dir, e))?;
    let root = out.path();
    let docs = set
        .documents
        .iter()
        .map(|d| json!({"_id": d.id, "text": d.text}));
    lines(&root.join("corpus.jsonl"), docs)?;
    let queries = set.queries.iter().map(|q| {
        let item = &set.documents[q.item];
        if q.lexical {
            json!({"_id": item.id, "text": item.description, "lexical": true})
        } else {
            json!({"_id": item.id, "text": item.description})
        }
    });
    lines(&root.join("queries.jsonl"), queries)?;
    let qrels_dir = root.join("qrels");
    std::fs::create_dir(&qrels_dir).map_err(|e| TextSetError::io(&qrels_dir, e))?;
    let qrels = std::iter::once("query-id\tcorpus-id\tscore".to_string()).chain(
        set.queries.iter().map(|q| {
            let id = &set.documents[q.item].id;
            format!("{id}\t{id}\t1")
        }),
    );
    lines(&qrels_dir.join("test.tsv"), qrels)?;
    let text = serde_json::to_string_pretty(construction).unwrap_or_default() + "\n";
    let path = root.join(CONSTRUCTION);
    std::fs::write(&path, text).map_err(|e| TextSetError::io(&path, e))?;
    out.commit().map_err(|e| TextSetError::io(dir, e))
}

/// The construction record of `set`: what the source says of itself, the rule, the counts.
pub fn construction(source: Value, set: &KnownItemSet, rule: Value) -> Value {
    json!({
        "task": "known-item retrieval: a query is an item's one-line description; its only \
                 relevant document is that item's text",
        "source": source,
        "rule": rule,
        "documents": set.documents.len(),
        "documents_left_out": set.documents_left_out,
        "candidate_queries": set.candidates,
        "not_candidates": set.not_candidates,
        "queries": set.queries.len(),
        "lexical_queries": set.queries.iter().filter(|q| q.lexical).count(),
    })
}

/// Writes one line per item of `rows` to `path`.
fn lines<T: std::fmt::Display>(
    path: &Path,
    rows: impl Iterator<Item = T>,
) -> Result<(), TextSetError> {
    let io = |e| TextSetError::io(path, e);
    let mut w = BufWriter::new(std::fs::File::create(path).map_err(io)?);
    for row in rows {
        writeln!(w, "{row}").map_err(io)?;
    }
    w.into_inner()
        .map_err(|e| io(e.into_error()))?
        .sync_all()
        .map_err(io)
}
