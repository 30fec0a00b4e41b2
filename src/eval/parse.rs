//! Reading qrels and runs. The format is told by the content: a file whose first non-blank
//! character is `{` is JSON lines (one object per line, or objects spread over several lines
//! as RAG ground-truth files print them), anything else TREC's whitespace-separated columns.

use rustc_hash::FxHashMap as HashMap;
use std::path::Path;

use serde::Deserialize;

use super::{EvalError, Hit, JudgedQuery, Judgments, Matching, Reference, Run, RunQuery};

fn read(path: &Path) -> Result<Vec<u8>, EvalError> {
    crate::text::read(path).map_err(|source| EvalError::Read {
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

/// Lines of a text file as `(1-based number, text)`, blank ones left out; the file must be
/// UTF-8.
fn lines<'a>(path: &Path, bytes: &'a [u8]) -> Result<Vec<(usize, &'a str)>, EvalError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        line_error(path, line, "not UTF-8 text")
    })?;
    Ok(text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i + 1, l))
        .collect())
}

/// Reads judgments: TREC qrels or RAG ground-truth JSONL.
pub fn read_qrels(path: &Path) -> Result<Judgments, EvalError> {
    let bytes = read(path)?;
    let judgments = if is_json(&bytes) {
        qrels_jsonl(path, &bytes)?
    } else {
        qrels_trec(path, &bytes)?
    };
    if judgments.queries.is_empty() {
        return Err(file_error(path, "holds no judged query"));
    }
    Ok(judgments)
}

/// `qid iter docid grade` per line (the iteration column is ignored, as trec_eval does).
fn qrels_trec(path: &Path, bytes: &[u8]) -> Result<Judgments, EvalError> {
    let mut index: HashMap<&str, usize> = HashMap::default();
    let mut queries: Vec<JudgedQuery> = Vec::new();
    let mut seen: HashMap<(usize, &str), usize> = HashMap::default();
    for (n, line) in lines(path, bytes)? {
        let mut fields = line.split_ascii_whitespace();
        let (Some(qid), Some(_iter), Some(doc), Some(grade), None) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            return Err(line_error(
                path,
                n,
                format!(
                    "expected 4 columns `qid iter docid grade`, found {}",
                    line.split_ascii_whitespace().count()
                ),
            ));
        };
        let grade: i64 = grade
            .parse()
            .map_err(|_| line_error(path, n, format!("grade `{grade}` is not an integer")))?;
        let q = *index.entry(qid).or_insert_with(|| {
            queries.push(JudgedQuery {
                id: qid.to_string(),
                ..JudgedQuery::default()
            });
            queries.len() - 1
        });
        if let Some(first) = seen.insert((q, doc), n) {
            return Err(line_error(
                path,
                n,
                format!("query {qid} judges document {doc} twice (first on line {first})"),
            ));
        }
        queries[q].references.push(Reference {
            document: doc.to_string(),
            page: None,
            grade,
        });
    }
    Ok(Judgments {
        queries,
        matching: Matching::Exact,
    })
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

/// JSON objects one after the other (one per line, or pretty-printed), each with the line
/// it starts on.
fn json_objects<T: serde::de::DeserializeOwned>(
    path: &Path,
    bytes: &[u8],
) -> Result<Vec<(usize, T)>, EvalError> {
    let mut out = Vec::new();
    let mut stream = serde_json::Deserializer::from_slice(bytes).into_iter::<T>();
    loop {
        let start = stream.byte_offset();
        let line = bytes[..start].iter().filter(|b| **b == b'\n').count()
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
        let id = id_of(&line.query_id)
            .ok_or_else(|| line_error(path, n, "`query_id` must be a string or an integer"))?;
        if let Some(first) = ids.insert(id.clone(), n) {
            return Err(line_error(
                path,
                n,
                format!("query {id} appears twice (first on line {first})"),
            ));
        }
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
                    document: r.document,
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
        run_trec(path, &bytes)
    }
}

/// One run line as it is ordered: the score as trec_eval compares it (single precision), the
/// docid and the score as written.
type RankedLine<'a> = (f32, &'a str, f64);

/// `qid Q0 docid rank score tag` per line. As trec_eval does, the rank column is ignored and
/// each query's results are ordered by score (compared in single precision, as trec_eval
/// stores it), descending, ties by docid descending; a docid twice for one query is an error.
fn run_trec(path: &Path, bytes: &[u8]) -> Result<Run, EvalError> {
    let mut index: HashMap<&str, usize> = HashMap::default();
    let mut queries: Vec<(Vec<RankedLine<'_>>, &str)> = Vec::new();
    for (n, line) in lines(path, bytes)? {
        let mut fields = line.split_ascii_whitespace();
        let (Some(qid), Some(_q0), Some(doc), Some(_rank), Some(score), Some(_tag), None) = (
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
            fields.next(),
        ) else {
            return Err(line_error(
                path,
                n,
                format!(
                    "expected 6 columns `qid Q0 docid rank score tag`, found {}",
                    line.split_ascii_whitespace().count()
                ),
            ));
        };
        let score: f64 = match score.parse() {
            Ok(s) if f64::is_finite(s) => s,
            _ => {
                return Err(line_error(
                    path,
                    n,
                    format!("score `{score}` is not a finite number"),
                ));
            }
        };
        let q = *index.entry(qid).or_insert_with(|| {
            queries.push((Vec::new(), qid));
            queries.len() - 1
        });
        queries[q].0.push((score as f32, doc, score));
    }
    let mut run = Run {
        queries: Vec::with_capacity(queries.len()),
    };
    for (mut hits, qid) in queries {
        hits.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then_with(|| b.1.cmp(a.1)));
        if let Some(w) = hits.windows(2).find(|w| w[0].1 == w[1].1) {
            return Err(file_error(
                path,
                format!("query {qid} lists document {} twice", w[0].1),
            ));
        }
        run.queries.push(RunQuery {
            id: qid.to_string(),
            hits: hits
                .into_iter()
                .map(|(_, doc, score)| Hit {
                    document: doc.to_string(),
                    page: None,
                    score,
                    text: None,
                })
                .collect(),
            answer: None,
            latency_ms: None,
        });
    }
    Ok(run)
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
        let id = id_of(&line.query_id)
            .ok_or_else(|| line_error(path, n, "`query_id` must be a string or an integer"))?;
        if let Some(first) = ids.insert(id.clone(), n) {
            return Err(line_error(
                path,
                n,
                format!("query {id} appears twice (first on line {first})"),
            ));
        }
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
            hits.push(Hit {
                document: h.document,
                page: h.page,
                score,
                text: h.text,
            });
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
