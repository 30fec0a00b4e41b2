//! Relevance judgments a dataset directory carries beside its vectors: `qrels.txt`, TREC
//! qrels whose query ids are query indices (0, 1, ... in `query.fbin` order) and whose
//! document ids are base rows, as `ragdbeval embed` writes them. With them a benchmark run
//! scores the retrieval task (NDCG, recall, MRR against the judgments) beside recall against
//! the exact neighbours.

use std::path::{Path, PathBuf};

use super::{DatasetError, FileDigest, digest_files};
use crate::eval::Judgments;
use crate::eval::parse::read_qrels;
use crate::types::Progress;

/// The judgments file a dataset directory may hold.
pub const QRELS_FILE: &str = "qrels.txt";

/// A dataset's judgments, restricted to the queries the run keeps.
#[derive(Debug, Clone)]
pub struct TaskJudgments {
    /// The file, its size and SHA-256, as the result records it.
    pub file: FileDigest,
    /// One entry per judged query kept, ids being query indices.
    pub judgments: Judgments,
    /// Judged queries beyond the kept queries (`--queries`), left out.
    pub dropped_queries: usize,
}

/// The judgments of dataset directory `dir` for its first `queries` queries, or `None` when
/// it has no `qrels.txt`. A query id or document id that is not an index, or a file that
/// judges none of the kept queries, is an error naming the file.
pub fn load(
    dir: &Path,
    queries: usize,
    progress: &dyn Progress,
) -> Result<Option<TaskJudgments>, DatasetError> {
    let path: PathBuf = dir.join(QRELS_FILE);
    if !path.is_file() {
        return Ok(None);
    }
    let bad = |message: String| DatasetError::Format {
        path: path.clone(),
        message,
    };
    let mut judgments = read_qrels(&path).map_err(|e| bad(without_path(&e.to_string(), &path)))?;
    for q in &judgments.queries {
        if q.id.parse::<usize>().is_err() {
            return Err(bad(format!(
                "query id `{}` is not a query index (0, 1, ... in the order of the query file)",
                q.id
            )));
        }
        if let Some(r) = q
            .references
            .iter()
            .find(|r| r.document.parse::<u64>().is_err())
        {
            return Err(bad(format!(
                "document id `{}` of query {} is not a base row",
                r.document, q.id
            )));
        }
    }
    let before = judgments.queries.len();
    judgments
        .queries
        .retain(|q| q.id.parse::<usize>().is_ok_and(|i| i < queries));
    if judgments.queries.is_empty() {
        return Err(bad(format!(
            "judges none of the {queries} queries kept (query ids are query indices)"
        )));
    }
    let (_, mut digests) = digest_files(&[&path], progress)?;
    Ok(Some(TaskJudgments {
        file: digests.remove(0),
        dropped_queries: before - judgments.queries.len(),
        judgments,
    }))
}

/// The parser's message without its leading `path:` (the dataset error names the file).
fn without_path(message: &str, path: &Path) -> String {
    let prefix = format!("{}:", path.display());
    message
        .strip_prefix(&prefix)
        .map_or(message, str::trim_start)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Silent;

    fn dir_with(qrels: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(QRELS_FILE), qrels).unwrap();
        dir
    }

    #[test]
    fn keeps_the_judged_queries_the_run_keeps() {
        let dir = dir_with("0 0 5 1\n0 0 6 1\n1 0 7 2\n3 0 1 1\n");
        let j = load(dir.path(), 2, &Silent).unwrap().unwrap();
        let ids: Vec<&str> = j.judgments.queries.iter().map(|q| q.id.as_str()).collect();
        assert_eq!(ids, ["0", "1"]);
        assert_eq!(j.dropped_queries, 1);
        assert_eq!(j.judgments.queries[0].references.len(), 2);
        assert_eq!(j.file.bytes, 32);
    }

    #[test]
    fn no_file_is_no_judgments() {
        let dir = tempfile::tempdir().unwrap();
        assert!(load(dir.path(), 5, &Silent).unwrap().is_none());
    }

    #[test]
    fn ids_that_are_not_indices_are_refused_with_the_file_named() {
        for (qrels, says) in [
            ("q1 0 5 1\n", "query id `q1` is not a query index"),
            (
                "0 0 doc5 1\n",
                "document id `doc5` of query 0 is not a base row",
            ),
            ("7 0 5 1\n", "judges none of the 3 queries kept"),
            ("0 0 5\n", "qrels.txt"),
        ] {
            let dir = dir_with(qrels);
            let e = load(dir.path(), 3, &Silent).unwrap_err().to_string();
            assert!(e.contains(says) && e.contains(QRELS_FILE), "{qrels:?}: {e}");
        }
    }
}
