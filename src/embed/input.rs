//! The texts to embed and their relevance judgments, as BEIR publishes them:
//!
//! - `corpus.jsonl`: one JSON object per line with `_id`, `text` and optionally `title`
//!   (other fields, such as `metadata`, are ignored). The text embedded is BEIR's: `title + " "
//!   + text` with surrounding whitespace removed when the object has a title, else the text
//!   alone (beir's `SentenceBERT.encode_corpus`).
//! - `queries.jsonl`: the same shape; a query is its `text`.
//! - `qrels/test.tsv`: `query-id<TAB>corpus-id<TAB>score`, after a header line of these three
//!   names.
//!
//! An `_id` may be a JSON string or integer, and is kept as text. Blank lines are skipped.
//! Anything else malformed is one error naming the file and the line
//! (`corpus.jsonl:17: missing field "_id"`).

use std::collections::HashMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// One document or query: its id and the text to embed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextRecord {
    pub id: String,
    pub text: String,
}

/// One relevance judgment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Qrel {
    pub query: String,
    pub doc: String,
    pub score: i64,
}

/// A corpus, its queries and (when given) their judgments.
#[derive(Debug, Clone)]
pub struct TextSet {
    pub corpus: Vec<TextRecord>,
    pub queries: Vec<TextRecord>,
    pub qrels: Option<Vec<Qrel>>,
}

/// Why the input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A malformed line: `FILE:LINE: what is wrong`.
    #[error("{}:{line}: {message}", path.display())]
    Line {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{}: holds no record", path.display())]
    Empty { path: PathBuf },
    #[error("{}: not a BEIR directory: {missing} is missing", dir.display())]
    NotBeir { dir: PathBuf, missing: String },
}

/// Reads a BEIR directory: `corpus.jsonl`, `queries.jsonl` and `qrels/<split>.tsv`.
pub fn read_beir(dir: &Path, split: &str) -> Result<TextSet, InputError> {
    let qrels = dir.join("qrels").join(format!("{split}.tsv"));
    for path in [
        dir.join("corpus.jsonl"),
        dir.join("queries.jsonl"),
        qrels.clone(),
    ] {
        if !path.is_file() {
            let missing = path
                .strip_prefix(dir)
                .unwrap_or(&path)
                .display()
                .to_string();
            return Err(InputError::NotBeir {
                dir: dir.to_path_buf(),
                missing,
            });
        }
    }
    Ok(TextSet {
        corpus: read_jsonl(&dir.join("corpus.jsonl"))?,
        queries: read_jsonl(&dir.join("queries.jsonl"))?,
        qrels: Some(read_qrels(&qrels)?),
    })
}

/// Reads a JSONL file of records (`_id`, `text`, optional `title`).
pub fn read_jsonl(path: &Path) -> Result<Vec<TextRecord>, InputError> {
    let mut records = Vec::new();
    let mut first_line: HashMap<String, usize> = HashMap::new();
    for_each_line(path, |line_no, line| {
        let Some(record) = parse_record(line)? else {
            return Ok(());
        };
        if let Some(first) = first_line.insert(record.id.clone(), line_no) {
            return Err(format!(
                "duplicate \"_id\" {:?} (first on line {first})",
                record.id
            ));
        }
        records.push(record);
        Ok(())
    })?;
    if records.is_empty() {
        return Err(InputError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(records)
}

/// Reads a BEIR qrels file (`query-id`, `corpus-id`, `score`, tab-separated; the header line
/// is optional).
pub fn read_qrels(path: &Path) -> Result<Vec<Qrel>, InputError> {
    let mut qrels = Vec::new();
    for_each_line(path, |line_no, line| {
        let Some(qrel) = parse_qrel(line)? else {
            return Ok(());
        };
        if !(line_no == 1 && qrel.query == "query-id") {
            qrels.push(qrel);
        }
        Ok(())
    })?;
    Ok(qrels)
}

/// Calls `f` with each line (1-based number, text without its line ending) of a UTF-8 file;
/// an error of `f` becomes [`InputError::Line`].
fn for_each_line(
    path: &Path,
    mut f: impl FnMut(usize, &str) -> Result<(), String>,
) -> Result<(), InputError> {
    let io_err = |source| InputError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut reader = crate::text::open(path).map_err(io_err)?;
    let mut buf = Vec::new();
    let mut line_no = 0;
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf).map_err(io_err)? == 0 {
            return Ok(());
        }
        line_no += 1;
        let result = match std::str::from_utf8(&buf) {
            Ok(line) => f(line_no, line.trim_end_matches(['\n', '\r'])),
            Err(_) => Err("not UTF-8 text; save the file as UTF-8".to_string()),
        };
        result.map_err(|message| InputError::Line {
            path: path.to_path_buf(),
            line: line_no,
            message,
        })?;
    }
}

/// One JSONL line as a record; `None` for a blank line.
fn parse_record(line: &str) -> Result<Option<TextRecord>, String> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let value: Value = serde_json::from_str(line).map_err(|e| {
        let text = e.to_string();
        let what = text.rsplit_once(" at line ").map_or(text.as_str(), |p| p.0);
        format!("not JSON ({what}, column {})", e.column())
    })?;
    let Value::Object(obj) = value else {
        return Err("not a JSON object".into());
    };
    let id = match obj.get("_id") {
        None => return Err("missing field \"_id\"".into()),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
        Some(_) => return Err("field \"_id\" is not a string or an integer".into()),
    };
    if id.is_empty() {
        return Err("field \"_id\" is empty".into());
    }
    let text = match obj.get("text") {
        None => return Err("missing field \"text\"".into()),
        Some(Value::String(s)) => s.as_str(),
        Some(_) => return Err("field \"text\" is not a string".into()),
    };
    let text = match obj.get("title") {
        None | Some(Value::Null) => text.trim().to_string(),
        Some(Value::String(title)) => format!("{title} {text}").trim().to_string(),
        Some(_) => return Err("field \"title\" is not a string".into()),
    };
    Ok(Some(TextRecord { id, text }))
}

/// One qrels line; `None` for a blank line.
fn parse_qrel(line: &str) -> Result<Option<Qrel>, String> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
    let [query, doc, score] = fields[..] else {
        return Err(format!(
            "{} tab-separated fields; a qrels line is query-id, corpus-id, score",
            fields.len()
        ));
    };
    if query.is_empty() || doc.is_empty() {
        return Err("empty query-id or corpus-id".into());
    }
    let score = if query == "query-id" {
        0
    } else {
        score
            .parse::<i64>()
            .map_err(|_| format!("score `{score}` is not an integer"))?
    };
    Ok(Some(Qrel {
        query: query.to_string(),
        doc: doc.to_string(),
        score,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&path, text).unwrap();
        path
    }

    fn small_beir(dir: &Path) {
        write(
            dir,
            "corpus.jsonl",
            "\u{feff}{\"_id\": \"d1\", \"title\": \"Rust\", \"text\": \"A language.\", \"metadata\": {}}\n\
             \n\
             {\"_id\": 2, \"text\": \"  Untitled text. \"}\r\n\
             {\"_id\": \"d3\", \"title\": \"\", \"text\": \"Empty title.\"}\n",
        );
        write(
            dir,
            "queries.jsonl",
            "{\"_id\": \"q1\", \"text\": \"what is rust\"}\n",
        );
        write(
            dir,
            "qrels/test.tsv",
            "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\t2\t0\n",
        );
    }

    #[test]
    fn a_beir_directory_is_read_with_titles_joined() {
        let dir = tempfile::tempdir().unwrap();
        small_beir(dir.path());
        let set = read_beir(dir.path(), "test").unwrap();
        let texts: Vec<(&str, &str)> = set
            .corpus
            .iter()
            .map(|r| (r.id.as_str(), r.text.as_str()))
            .collect();
        assert_eq!(
            texts,
            [
                ("d1", "Rust A language."),
                ("2", "Untitled text."),
                ("d3", "Empty title.")
            ]
        );
        assert_eq!(set.queries[0].text, "what is rust");
        let qrels = set.qrels.unwrap();
        assert_eq!(qrels.len(), 2);
        assert_eq!(
            qrels[1],
            Qrel {
                query: "q1".into(),
                doc: "2".into(),
                score: 0
            }
        );
    }

    fn error_of(dir: &Path, name: &str, text: &str) -> String {
        let path = write(dir, name, text);
        let err = if name.ends_with(".tsv") {
            read_qrels(&path).map(|_| ()).unwrap_err()
        } else {
            read_jsonl(&path).map(|_| ()).unwrap_err()
        };
        err.to_string()
            .strip_prefix(&format!("{}", dir.display()))
            .unwrap()
            .to_string()
    }

    #[test]
    fn malformed_lines_are_named_by_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let ok = "{\"_id\": \"a\", \"text\": \"x\"}\n";
        let cases = [
            (
                format!("{ok}\n{{\"text\": \"no id\"}}\n"),
                "/corpus.jsonl:3: missing field \"_id\"",
            ),
            (
                format!("{ok}{{\"_id\": \"b\"}}\n"),
                "/corpus.jsonl:2: missing field \"text\"",
            ),
            (
                format!("{ok}{{\"_id\": \"b\", \"text\": 5}}\n"),
                "/corpus.jsonl:2: field \"text\" is not a string",
            ),
            (
                format!("{ok}{ok}"),
                "/corpus.jsonl:2: duplicate \"_id\" \"a\" (first on line 1)",
            ),
            (
                format!("{ok}[1, 2]\n"),
                "/corpus.jsonl:2: not a JSON object",
            ),
            ("\n\n".to_string(), "/corpus.jsonl: holds no record"),
        ];
        for (text, want) in cases {
            assert_eq!(error_of(d, "corpus.jsonl", &text), want);
        }
        let broken = error_of(d, "corpus.jsonl", &format!("{ok}{{\"_id\": \"b\",\n"));
        assert!(
            broken.starts_with("/corpus.jsonl:2: not JSON ("),
            "{broken}"
        );
    }

    #[test]
    fn bad_encodings_and_qrels_lines_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let path = d.join("latin1.jsonl");
        std::fs::write(&path, b"{\"_id\": \"a\", \"text\": \"caf\xe9\"}\n").unwrap();
        let err = read_jsonl(&path).unwrap_err().to_string();
        assert!(err.ends_with("latin1.jsonl:1: not UTF-8 text; save the file as UTF-8"));
        assert_eq!(
            error_of(d, "test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\n"),
            "/test.tsv:2: 2 tab-separated fields; a qrels line is query-id, corpus-id, score"
        );
        assert_eq!(
            error_of(d, "test.tsv", "q1\td1\tx\n"),
            "/test.tsv:1: score `x` is not an integer"
        );
    }

    #[test]
    fn a_directory_without_its_files_is_not_beir() {
        let dir = tempfile::tempdir().unwrap();
        small_beir(dir.path());
        std::fs::remove_file(dir.path().join("qrels/test.tsv")).unwrap();
        let err = read_beir(dir.path(), "test").unwrap_err().to_string();
        assert!(
            err.ends_with("not a BEIR directory: qrels/test.tsv is missing"),
            "{err}"
        );
    }
}
