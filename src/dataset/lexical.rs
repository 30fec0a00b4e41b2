//! The lexical side a dataset directory may carry beside its dense vectors, for sparse and
//! hybrid runs (`bench --retrieval sparse|hybrid`):
//!
//! - `sparse/base.csr` and `sparse/queries.csr`: one sparse vector per base row and per query,
//!   in the order of the dense files, as CSR matrices in big-ann-benchmarks' sparse format
//!   ([`super::spmat`]); rows with strictly ascending indices and finite values;
//! - `sparse/encoding.json` (optional): what made them (`ragdbeval embed --sparse bm25` writes
//!   the tokenizer, k1, b and the vocabulary size), recorded in the result;
//! - `texts/base.jsonl` and `texts/queries.jsonl` (optional): each row's text, JSONL
//!   `{"_id": "<row>", "text": ...}` in row order, for an engine that analyses text itself
//!   (`--db bm25`).
//!
//! Everything is checked on load against the dense files' row counts, and cut to the rows the
//! run keeps (`--limit`, `--max-queries`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{DatasetError, FileDigest, digest_files, spmat};
use crate::sparse::Csr;
use crate::types::Progress;

/// The folder of the sparse vectors, and of the texts.
pub const SPARSE_DIR: &str = "sparse";
pub const TEXTS_DIR: &str = "texts";

/// A dataset's sparse vectors (and texts), cut to the rows the run keeps.
#[derive(Debug, Clone)]
pub struct LexicalSet {
    pub base: Csr,
    pub queries: Csr,
    /// `sparse/encoding.json`, or null.
    pub encoding: Value,
    pub base_texts: Option<Vec<String>>,
    pub query_texts: Option<Vec<String>>,
    /// Every file read, with its size and SHA-256.
    pub files: Vec<FileDigest>,
}

/// How many rows a file must have: exactly the dense file's, or (when the run cut the dense
/// set) at least the rows kept.
#[derive(Debug, Clone, Copy)]
pub enum Rows {
    Exactly(usize),
    AtLeast(usize),
}

impl Rows {
    fn kept(self) -> usize {
        match self {
            Rows::Exactly(n) | Rows::AtLeast(n) => n,
        }
    }

    fn check(self, found: usize, what: &str) -> Result<(), String> {
        match self {
            Rows::Exactly(n) if found != n => Err(format!(
                "{found} {what}, but the dense file has {n} rows: one per row, in order"
            )),
            Rows::AtLeast(n) if found < n => Err(format!(
                "{found} {what}, fewer than the {n} rows the run keeps"
            )),
            _ => Ok(()),
        }
    }
}

/// The lexical side of dataset directory `dir` for the dense rows and queries it keeps;
/// `None` without `sparse/`.
pub fn load(
    dir: &Path,
    (rows, queries): (Rows, Rows),
    progress: &dyn Progress,
) -> Result<Option<LexicalSet>, DatasetError> {
    let sparse = dir.join(SPARSE_DIR);
    if !sparse.is_dir() {
        return Ok(None);
    }
    let base_path = sparse.join("base.csr");
    let query_path = sparse.join("queries.csr");
    let base = checked(&base_path, rows, None)?;
    let query_matrix = checked(&query_path, queries, Some(base.cols))?;
    let mut paths: Vec<PathBuf> = vec![base_path, query_path];
    let encoding_path = sparse.join("encoding.json");
    let encoding = if encoding_path.is_file() {
        paths.push(encoding_path.clone());
        let text = crate::text::read_to_string(&encoding_path)
            .map_err(|e| DatasetError::io(&encoding_path, e))?;
        serde_json::from_str(&text).map_err(|e| DatasetError::Format {
            path: encoding_path.clone(),
            message: format!("not JSON: {e}"),
        })?
    } else {
        Value::Null
    };
    let texts = dir.join(TEXTS_DIR);
    let (base_texts, query_texts) = if texts.is_dir() {
        let b = texts.join("base.jsonl");
        let q = texts.join("queries.jsonl");
        let pair = (read_texts(&b, rows)?, read_texts(&q, queries)?);
        paths.extend([b, q]);
        (Some(pair.0), Some(pair.1))
    } else {
        (None, None)
    };
    let (_, files) = digest_files(&paths, progress)?;
    Ok(Some(LexicalSet {
        base: first_rows(base, rows.kept()),
        queries: first_rows(query_matrix, queries.kept()),
        encoding,
        base_texts,
        query_texts,
        files,
    }))
}

/// A CSR file of `rows` rows (and `cols` columns, when given), rows checked.
fn checked(path: &Path, rows: Rows, cols: Option<usize>) -> Result<Csr, DatasetError> {
    let bad = |message: String| DatasetError::Format {
        path: path.to_path_buf(),
        message,
    };
    let m = spmat::read(path)?;
    rows.check(m.rows, "sparse vectors").map_err(bad)?;
    if let Some(cols) = cols.filter(|c| *c != m.cols) {
        return Err(bad(format!(
            "{} dimensions, but base.csr has {cols}",
            m.cols
        )));
    }
    m.check_rows().map_err(bad)?;
    Ok(m)
}

/// The first `n` rows of `m`.
fn first_rows(mut m: Csr, n: usize) -> Csr {
    if n < m.rows {
        let end = m.indptr[n];
        m.indptr.truncate(n + 1);
        m.indices.truncate(end);
        m.data.truncate(end);
        m.rows = n;
    }
    m
}

/// The texts of a `texts/*.jsonl` file with ids 0, 1, ..., the rows kept.
fn read_texts(path: &Path, rows: Rows) -> Result<Vec<String>, DatasetError> {
    let bad = |message: String| DatasetError::Format {
        path: path.to_path_buf(),
        message,
    };
    let records = crate::embed::input::read_jsonl(path).map_err(|e| bad(e.to_string()))?;
    rows.check(records.len(), "texts").map_err(bad)?;
    let mut texts = Vec::with_capacity(rows.kept());
    for (i, r) in records.into_iter().enumerate().take(rows.kept()) {
        if r.id != i.to_string() {
            return Err(bad(format!(
                "record {} has `_id` `{}`: ids must be the row numbers 0, 1, ... in order",
                i + 1,
                r.id
            )));
        }
        texts.push(r.text);
    }
    Ok(texts)
}

/// Writes the sparse vectors (and texts) of a dataset into directory `dir`.
pub fn write(
    dir: &Path,
    base: &Csr,
    queries: &Csr,
    encoding: &Value,
    texts: Option<(&[String], &[String])>,
) -> Result<(), DatasetError> {
    let sparse = dir.join(SPARSE_DIR);
    std::fs::create_dir_all(&sparse).map_err(|e| DatasetError::io(&sparse, e))?;
    spmat::write(&sparse.join("base.csr"), base)?;
    spmat::write(&sparse.join("queries.csr"), queries)?;
    let enc = sparse.join("encoding.json");
    let text = serde_json::to_string_pretty(encoding).unwrap_or_default() + "\n";
    crate::atomic::write_atomic(&enc, text.as_bytes()).map_err(|e| DatasetError::io(&enc, e))?;
    if let Some((base_texts, query_texts)) = texts {
        let folder = dir.join(TEXTS_DIR);
        std::fs::create_dir_all(&folder).map_err(|e| DatasetError::io(&folder, e))?;
        write_texts(&folder.join("base.jsonl"), base_texts)?;
        write_texts(&folder.join("queries.jsonl"), query_texts)?;
    }
    Ok(())
}

fn write_texts(path: &Path, texts: &[String]) -> Result<(), DatasetError> {
    let mut out = String::new();
    for (i, t) in texts.iter().enumerate() {
        out.push_str(&serde_json::json!({"_id": i.to_string(), "text": t}).to_string());
        out.push('\n');
    }
    crate::atomic::write_atomic(path, out.as_bytes()).map_err(|e| DatasetError::io(path, e))
}
