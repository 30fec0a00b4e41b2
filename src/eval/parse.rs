//! Reading qrels and runs. The format is told by the content: a file whose first non-blank
//! character is `{` is JSON lines (one object per line, or objects spread over several lines
//! as RAG ground-truth files print them), anything else TREC's whitespace-separated columns.

use rustc_hash::FxHashMap as HashMap;
use std::path::Path;

use serde::Deserialize;

use super::{EvalError, Hit, JudgedQuery, Judgments, Matching, Reference, Run, RunQuery};

mod trec;

fn read(path: &Path) -> Result<crate::text::MappedText, EvalError> {
    crate::text::map(path).map_err(|source| EvalError::Read {
        path: path.display().to_string(),
        source,
    })
}

fn is_json(bytes: &[u8]) -> bool {
    bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
}

fn line_error(path: &Path, line: usize, message: impl Into<String>) -> EvalError {
    EvalError::Line {
        path: path.display().to_string(),
        line,
        message: message.into(),
    }
}

fn file_error(path: &Path, message: impl Into<String>) -> EvalError {
    EvalError::File {
        path: path.display().to_string(),
        message: message.into(),
    }
}

/// Reads judgments: TREC qrels or RAG ground-truth JSONL.
pub fn read_qrels(path: &Path) -> Result<Judgments, EvalError> {
    let bytes = read(path)?;
    let judgments = if is_json(&bytes) {
        qrels_jsonl(path, &bytes)?
    } else {
        trec::qrels(path, &bytes, trec::piece_count(bytes.len()))?
    };
    if judgments.queries.is_empty() {
        return Err(file_error(path, "holds no judged query"));
    }
    Ok(judgments)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GoldReferenceLine {
    document: String,
    #[serde(default)]
    page: Option<i64>,
    /// The RAG ground-truth scale is 1–3; a reference without one is relevant (1).
    #[serde(default = "one")]
    relevance: i64,
}

fn one() -> i64 {
    1
}

#[derive(Deserialize)]
struct GroundTruthLine {
    query_id: serde_json::Value,
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    category: Option<String>,
    #[serde(default)]
    difficulty: Option<String>,
    #[serde(default)]
    is_rejection: Option<bool>,
    #[serde(default)]
    gold_references: Vec<GoldReferenceLine>,
    #[serde(default)]
    gold_answers: Vec<String>,
    #[serde(default)]
    answer: Option<String>,
}

/// A query id given as a string or an integer.
fn id_of(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
        serde_json::Value::Number(n) if n.is_u64() || n.is_i64() => Some(n.to_string()),
        _ => None,
    }
}

/// The `query_id` of line `n` as a string, refused when it is neither a string nor an integer
/// or when an earlier line had it (`seen`: each id with its line).
fn new_query_id(
    path: &Path,
    n: usize,
    query_id: &serde_json::Value,
    seen: &mut HashMap<String, usize>,
) -> Result<String, EvalError> {
    let id = id_of(query_id)
        .ok_or_else(|| line_error(path, n, "`query_id` must be a string or an integer"))?;
    match seen.insert(id.clone(), n) {
        Some(first) => Err(line_error(
            path,
            n,
            format!("query {id} appears twice (first on line {first})"),
        )),
        None => Ok(id),
    }
}

/// JSON objects one after the other (one per line, or pretty-printed), each with the line
/// it starts on.
fn json_objects<T: serde::de::DeserializeOwned>(
    path: &Path,
    bytes: &[u8],
) -> Result<Vec<(usize, T)>, EvalError> {
    let mut out = Vec::new();
    let mut stream = serde_json::Deserializer::from_slice(bytes).into_iter::<T>();
    // Newlines are counted from where the previous object ended, so a long file is read once.
    let (mut counted_to, mut newlines) = (0, 0);
    loop {
        let start = stream.byte_offset();
        newlines += bytes[counted_to..start]
            .iter()
            .filter(|b| **b == b'\n')
            .count();
        counted_to = start;
        let line = newlines
            + 1
            + bytes[start..]
                .iter()
                .take_while(|b| b.is_ascii_whitespace())
                .filter(|b| **b == b'\n')
                .count();
        match stream.next() {
            None => break,
            Some(Ok(v)) => out.push((line, v)),
            Some(Err(e)) => return Err(line_error(path, e.line().max(1), e.to_string())),
        }
    }
    Ok(out)
}

/// RAG ground-truth JSONL: `query_id`, `query`, `category`, `difficulty`, `is_rejection`,
/// `gold_references` of `{document, page, relevance}`, and optionally `gold_answers` (or one
/// `answer`) for the answer metrics. A query of category `rejection` is a rejection query
/// even without the flag (the format's own sample lines leave it out).
fn qrels_jsonl(path: &Path, bytes: &[u8]) -> Result<Judgments, EvalError> {
    let mut queries = Vec::new();
    let mut ids: HashMap<String, usize> = HashMap::default();
    for (n, line) in json_objects::<GroundTruthLine>(path, bytes)? {
        let id = new_query_id(path, n, &line.query_id, &mut ids)?;
        let is_rejection =
            line.is_rejection.unwrap_or(false) || line.category.as_deref() == Some("rejection");
        let mut gold_answers = line.gold_answers;
        gold_answers.extend(line.answer);
        queries.push(JudgedQuery {
            id,
            text: line.query,
            category: line.category,
            difficulty: line.difficulty,
            is_rejection,
            references: line
                .gold_references
                .into_iter()
                .map(|r| Reference {
                    document: r.document.into(),
                    page: r.page,
                    grade: r.relevance,
                })
                .collect(),
            gold_answers,
        });
    }
    Ok(Judgments {
        queries,
        matching: Matching::Fuzzy,
    })
}

/// Reads a run: TREC run file or JSONL.
pub fn read_run(path: &Path) -> Result<Run, EvalError> {
    let bytes = read(path)?;
    if is_json(&bytes) {
        run_jsonl(path, &bytes)
    } else {
        trec::run(path, &bytes, trec::piece_count(bytes.len()))
    }
}

#[derive(Deserialize)]
struct RunHitLine {
    #[serde(alias = "doc_id", alias = "docid")]
    document: String,
    #[serde(default)]
    page: Option<i64>,
    #[serde(default)]
    #[allow(dead_code)]
    chunk_id: Option<serde_json::Value>,
    #[serde(default)]
    score: Option<f64>,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct RunLine {
    query_id: serde_json::Value,
    #[serde(default)]
    results: Vec<RunHitLine>,
    #[serde(default)]
    answer: Option<String>,
    #[serde(default)]
    latency_ms: Option<f64>,
}

/// `query_id`, ranked `results` of `{document, page?, chunk_id?, score?, text?}`, optional
/// `answer` and `latency_ms`. Results keep the order the file gives them: it is the run's
/// ranking.
fn run_jsonl(path: &Path, bytes: &[u8]) -> Result<Run, EvalError> {
    let mut run = Run::default();
    let mut ids: HashMap<String, usize> = HashMap::default();
    for (n, line) in json_objects::<RunLine>(path, bytes)? {
        let id = new_query_id(path, n, &line.query_id, &mut ids)?;
        if let Some(l) = line.latency_ms
            && !(l.is_finite() && l >= 0.0)
        {
            return Err(line_error(
                path,
                n,
                format!("latency_ms {l} is not a duration"),
            ));
        }
        let mut hits = Vec::with_capacity(line.results.len());
        for (rank, h) in line.results.into_iter().enumerate() {
            let score = h.score.unwrap_or(f64::NAN);
            if h.score.is_some_and(|s| !s.is_finite()) {
                return Err(line_error(
                    path,
                    n,
                    format!("query {id}, result {}: score is not finite", rank + 1),
                ));
            }
            hits.push(Hit::with_page_and_text(h.document, score, h.page, h.text));
        }
        run.queries.push(RunQuery {
            id,
            hits,
            answer: line.answer,
            latency_ms: line.latency_ms,
        });
    }
    Ok(run)
}
