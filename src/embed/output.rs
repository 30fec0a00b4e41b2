//! The dataset `ragdbeval embed` writes: a big-ann-benchmarks directory that `--dataset DIR`
//! loads (angular, as `embed.json` records) (`base.fbin`, `query.fbin`, `gt.ibin`), and beside it what
//! connects the vectors to the texts, so the end task can be scored:
//!
//! - `chunks.tsv`: `vector-id  corpus-id  chunk  token-start  token-end` (a header line, then
//!   one line per base vector, in vector order; tokens count from the document's first text
//!   token, special tokens excluded);
//! - `queries.tsv`: `query-index  query-id`;
//! - `qrels.txt`: TREC qrels `query-index 0 vector-id score`, one line for every window of
//!   each judged document, so that a `bench --trec-run` file scores against it directly;
//! - `embed.json`: the model, the rules and the counts.
//!
//! Everything is written into a hidden directory beside the destination and renamed into place
//! at the end ([`crate::atomic::AtomicDir`]): a failure leaves nothing.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::ops::Range;
use std::path::Path;

use super::input::Qrel;
use crate::atomic::AtomicDir;
use crate::dataset::{DatasetError, bigann};
use crate::groundtruth::GroundTruth;
use crate::vectors::Vectors;

/// One base vector: the document and window it embeds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VectorSource<'a> {
    pub doc: &'a str,
    pub chunk: usize,
    pub tokens: Range<usize>,
}

/// Everything written.
pub struct EmbedDataset<'a> {
    pub base: &'a Vectors,
    pub queries: &'a Vectors,
    pub truth: &'a GroundTruth,
    /// Per base vector, in order.
    pub sources: &'a [VectorSource<'a>],
    /// Query ids, in the order of `queries`.
    pub query_ids: &'a [&'a str],
    /// `(query index, vector id, score)`.
    pub qrels: &'a [(usize, usize, i64)],
    pub manifest: serde_json::Value,
    /// Sparse vectors and texts of the windows and queries (`--sparse`).
    pub lexical: Option<EmbedLexical<'a>>,
}

/// The lexical side written beside the vectors ([`crate::dataset::lexical`]).
pub struct EmbedLexical<'a> {
    pub base: &'a crate::sparse::Csr,
    pub queries: &'a crate::sparse::Csr,
    pub encoding: serde_json::Value,
    pub base_texts: &'a [String],
    pub query_texts: &'a [String],
}

/// Why the dataset could not be written.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{}: already exists and is not an empty directory; give a new path", .0.display())]
    NotEmpty(std::path::PathBuf),
    #[error(transparent)]
    Dataset(#[from] DatasetError),
}

fn io_err(path: &Path) -> impl Fn(std::io::Error) -> OutputError + '_ {
    move |source| OutputError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Checks that `dir` can be written: missing, or an empty directory.
pub fn check_writable(dir: &Path) -> Result<(), OutputError> {
    if dir.is_file() || std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some()) {
        return Err(OutputError::NotEmpty(dir.to_path_buf()));
    }
    Ok(())
}

/// Writes the dataset at `dir`.
pub fn write(dir: &Path, ds: &EmbedDataset<'_>) -> Result<(), OutputError> {
    check_writable(dir)?;
    let tmp = AtomicDir::create(dir).map_err(io_err(dir))?;
    let at = |name: &str| tmp.path().join(name);
    let f32s = bigann::ElementType::Float32;
    bigann::write_vectors(&at("base.fbin"), ds.base, f32s)?;
    bigann::write_vectors(&at("query.fbin"), ds.queries, f32s)?;
    bigann::write_truth(&at("gt.ibin"), ds.truth)?;
    write_lines(&at("chunks.tsv"), |w| {
        writeln!(w, "vector-id\tcorpus-id\tchunk\ttoken-start\ttoken-end")?;
        for (i, s) in ds.sources.iter().enumerate() {
            let (start, end) = (s.tokens.start, s.tokens.end);
            writeln!(w, "{i}\t{}\t{}\t{start}\t{end}", s.doc, s.chunk)?;
        }
        Ok(())
    })?;
    write_lines(&at("queries.tsv"), |w| {
        writeln!(w, "query-index\tquery-id")?;
        for (i, id) in ds.query_ids.iter().enumerate() {
            writeln!(w, "{i}\t{id}")?;
        }
        Ok(())
    })?;
    write_lines(&at("qrels.txt"), |w| {
        for (q, v, score) in ds.qrels {
            writeln!(w, "{q} 0 {v} {score}")?;
        }
        Ok(())
    })?;
    if let Some(l) = &ds.lexical {
        let texts = Some((l.base_texts, l.query_texts));
        crate::dataset::lexical::write(tmp.path(), l.base, l.queries, &l.encoding, texts)?;
    }
    let manifest = serde_json::to_vec_pretty(&ds.manifest).unwrap_or_default();
    std::fs::write(at("embed.json"), manifest).map_err(io_err(&at("embed.json")))?;
    tmp.commit().map_err(io_err(dir))
}

/// Writes a text file through a buffer and syncs it.
fn write_lines(
    path: &Path,
    body: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), OutputError> {
    let file = std::fs::File::create(path).map_err(io_err(path))?;
    let mut w = BufWriter::new(file);
    body(&mut w).and_then(|_| w.flush()).map_err(io_err(path))?;
    w.get_ref().sync_all().map_err(io_err(path))
}

/// Judgments mapped to vectors: each `(query id, corpus id, score)` becomes one
/// `(query index, vector id, score)` per window of the document, in qrels order. Judgments of
/// a query or document not embedded are left out and counted (second value).
pub fn map_qrels(
    qrels: &[Qrel],
    query_index: &HashMap<&str, usize>,
    doc_vectors: &HashMap<&str, Range<usize>>,
) -> (Vec<(usize, usize, i64)>, usize) {
    let mut mapped = Vec::new();
    let mut skipped = 0;
    for qrel in qrels {
        match (
            query_index.get(qrel.query.as_str()),
            doc_vectors.get(qrel.doc.as_str()),
        ) {
            (Some(&q), Some(rows)) => mapped.extend(rows.clone().map(|v| (q, v, qrel.score))),
            _ => skipped += 1,
        }
    }
    (mapped, skipped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_window_of_a_judged_document_is_judged() {
        let qrel = |q: &str, d: &str, score| Qrel {
            query: q.into(),
            doc: d.into(),
            score,
        };
        let qrels = [
            qrel("q1", "d1", 1),
            qrel("q2", "d2", 2),
            qrel("q9", "d1", 1),
            qrel("q1", "gone", 1),
        ];
        let queries = HashMap::from([("q1", 0), ("q2", 1)]);
        let docs = HashMap::from([("d1", 0..1), ("d2", 1..4)]);
        let (mapped, skipped) = map_qrels(&qrels, &queries, &docs);
        assert_eq!(mapped, [(0, 0, 1), (1, 1, 2), (1, 2, 2), (1, 3, 2)]);
        assert_eq!(skipped, 2);
    }
}
