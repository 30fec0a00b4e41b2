//! TREC's whitespace-separated files: qrels (`qid iter docid grade`) and runs (`qid Q0 docid
//! rank score tag`). A run of millions of lines is the common case, so the text is cut into
//! pieces of whole lines that are checked and parsed on all cores; each piece groups its lines
//! into segments of one query, and only a segment (not a line) looks its query up in a map.
//! Errors name the first bad line in file order, as a line-by-line reader would.

use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::cmp::Ordering;
use std::path::Path;

use super::{file_error, line_error};
use crate::eval::{EvalError, Hit, JudgedQuery, Judgments, Matching, Reference, Run, RunQuery};

/// Below this size a file is parsed in one piece: splitting costs more than it saves.
const PIECE_BYTES: usize = 1 << 20;

/// A problem found in a piece: the byte offset of its line in the whole text, and the message.
type PieceError = (usize, String);

/// Consecutive lines of one query within a piece.
struct Segment<'a, T> {
    qid: &'a str,
    lines: Vec<T>,
}

/// How many pieces a file of `len` bytes is parsed in: about four per worker, one per MiB at
/// most.
pub(super) fn piece_count(len: usize) -> usize {
    (len / PIECE_BYTES).clamp(1, 4 * rayon::current_num_threads())
}

/// `bytes` cut after newlines into `wanted` pieces (fewer if lines are long), each valid UTF-8.
/// A newline byte never occurs inside a multi-byte UTF-8 character, so every piece is checked
/// alone.
fn pieces<'a>(path: &Path, bytes: &'a [u8], wanted: usize) -> Result<Vec<&'a str>, EvalError> {
    let mut cuts = vec![0];
    for i in 1..wanted {
        let from = (bytes.len() * i / wanted).max(*cuts.last().unwrap_or(&0));
        match bytes[from..].iter().position(|b| *b == b'\n') {
            Some(at) => cuts.push(from + at + 1),
            None => break,
        }
    }
    cuts.push(bytes.len());
    cuts.dedup();
    let ranges: Vec<(usize, usize)> = cuts.windows(2).map(|w| (w[0], w[1])).collect();
    ranges
        .par_iter()
        .map(|&(start, end)| {
            std::str::from_utf8(&bytes[start..end]).map_err(|e| {
                let line = line_number(bytes, start + e.valid_up_to());
                line_error(path, line, "not UTF-8 text")
            })
        })
        .collect()
}

/// The 1-based number of the line holding byte `offset`.
fn line_number(bytes: &[u8], offset: usize) -> usize {
    bytes[..offset].iter().filter(|b| **b == b'\n').count() + 1
}

/// The byte offset of `line` (a slice of the text) in the text that begins at address
/// `text_start`.
fn offset_of(text_start: usize, line: &str) -> usize {
    line.as_ptr() as usize - text_start
}

/// Parses every piece with `parse_line` (blank lines skipped), grouping consecutive lines of
/// one query; the first error in file order wins.
fn segments<'a, T: Send>(
    path: &Path,
    bytes: &'a [u8],
    wanted: usize,
    parse_line: impl Fn(&'a str, usize) -> Result<(&'a str, T), String> + Sync,
) -> Result<Vec<Segment<'a, T>>, EvalError> {
    let start = bytes.as_ptr() as usize;
    let parsed: Vec<Result<Vec<Segment<'a, T>>, PieceError>> = pieces(path, bytes, wanted)?
        .into_par_iter()
        .map(|piece| {
            let mut out: Vec<Segment<'a, T>> = Vec::new();
            for line in piece.lines() {
                let offset = offset_of(start, line);
                // A blank line fails to parse; only then is it looked at again, and skipped.
                let (qid, value) = match parse_line(line, offset) {
                    Ok(parsed) => parsed,
                    Err(_) if line.trim().is_empty() => continue,
                    Err(message) => return Err((offset, message)),
                };
                match out.last_mut() {
                    Some(segment) if segment.qid == qid => segment.lines.push(value),
                    last => {
                        // Queries mostly have as many lines as the one before: sized so, a
                        // segment neither grows by copying nor holds unused room.
                        let mut lines = Vec::with_capacity(last.map_or(1, |s| s.lines.len()));
                        lines.push(value);
                        out.push(Segment { qid, lines });
                    }
                }
            }
            Ok(out)
        })
        .collect();
    let mut all = Vec::new();
    for piece in parsed {
        match piece {
            Ok(segments) => all.extend(segments),
            Err((offset, message)) => {
                return Err(line_error(path, line_number(bytes, offset), message));
            }
        }
    }
    Ok(all)
}

/// Segments merged per query, queries in the order of their first line.
fn by_query<'a, T>(segments: Vec<Segment<'a, T>>) -> Vec<(&'a str, Vec<T>)> {
    let mut index: HashMap<&str, usize> = HashMap::default();
    let mut queries: Vec<(&str, Vec<T>)> = Vec::new();
    for segment in segments {
        let q = *index.entry(segment.qid).or_insert_with(|| {
            queries.push((segment.qid, Vec::new()));
            queries.len() - 1
        });
        let lines = &mut queries[q].1;
        if lines.is_empty() {
            *lines = segment.lines;
        } else {
            lines.extend(segment.lines);
        }
    }
    queries
}

/// The whitespace-separated fields of `line` when there are exactly `N` of them. One pass
/// over the bytes, no iterator state per field: runs have millions of lines.
fn fields<const N: usize>(line: &str) -> Option<[&str; N]> {
    let bytes = line.as_bytes();
    let mut out = [""; N];
    let (mut n, mut i) = (0, 0);
    loop {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == bytes.len() {
            return (n == N).then_some(out);
        }
        let start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        *out.get_mut(n)? = &line[start..i];
        n += 1;
    }
}

/// `found` columns of `line`, for the message naming the expected layout.
fn column_error(layout: &str, line: &str) -> String {
    format!(
        "expected {layout}, found {}",
        line.split_ascii_whitespace().count()
    )
}

/// `qid iter docid grade` per line (the iteration column is ignored, as trec_eval does).
/// `pieces`: [`piece_count`] of the file's length (a test may cut a small file finer).
pub(super) fn qrels(path: &Path, bytes: &[u8], pieces: usize) -> Result<Judgments, EvalError> {
    let segments = segments(path, bytes, pieces, |line, _| {
        let Some([qid, _iter, doc, grade]) = fields(line) else {
            return Err(column_error("4 columns `qid iter docid grade`", line));
        };
        let grade: i64 = grade
            .parse()
            .map_err(|_| format!("grade `{grade}` is not an integer"))?;
        let reference = Reference {
            document: doc.into(),
            page: None,
            grade,
        };
        Ok((qid, reference))
    })?;
    let queries = by_query(segments);
    if queries
        .par_iter()
        .any(|(_, references)| judged_twice(references))
    {
        return Err(repeat_error(path, bytes));
    }
    let queries = queries
        .into_par_iter()
        .map(|(qid, references)| JudgedQuery {
            id: qid.to_string(),
            references,
            ..JudgedQuery::default()
        })
        .collect();
    Ok(Judgments {
        queries,
        matching: Matching::Exact,
    })
}

/// Whether one query judges a document twice.
fn judged_twice(references: &[Reference]) -> bool {
    let mut seen: HashSet<&str> =
        HashSet::with_capacity_and_hasher(references.len(), Default::default());
    references.iter().any(|r| !seen.insert(r.document.as_str()))
}

/// The first line in file order that judges a document its query judged before, found line
/// by line: only a file with such a line comes here, so the parse keeps no line numbers.
fn repeat_error(path: &Path, bytes: &[u8]) -> EvalError {
    let text = String::from_utf8_lossy(bytes);
    let mut first: HashMap<(&str, &str), usize> = HashMap::default();
    for (i, line) in text.lines().enumerate() {
        let Some([qid, _iter, doc, _grade]) = fields(line) else {
            continue;
        };
        if let Some(at) = first.insert((qid, doc), i + 1) {
            let message = format!("query {qid} judges document {doc} twice (first on line {at})");
            return line_error(path, i + 1, message);
        }
    }
    file_error(path, "judges a document twice for one query")
}

/// `qid Q0 docid rank score tag` per line. As trec_eval does, the rank column is ignored and
/// each query's results are ordered by score (compared in single precision, as trec_eval
/// stores it), descending, ties by docid descending; a docid twice for one query is an error.
/// `pieces` as for [`qrels`].
pub(super) fn run(path: &Path, bytes: &[u8], pieces: usize) -> Result<Run, EvalError> {
    let segments = segments(path, bytes, pieces, |line, _| {
        let Some([qid, _q0, doc, _rank, score, _tag]) = fields(line) else {
            return Err(column_error(
                "6 columns `qid Q0 docid rank score tag`",
                line,
            ));
        };
        match score.parse::<f64>() {
            Ok(score) if score.is_finite() => Ok((qid, Hit::new(doc, score))),
            _ => Err(format!("score `{score}` is not a finite number")),
        }
    })?;
    let queries: Vec<Result<RunQuery, String>> = by_query(segments)
        .into_par_iter()
        .map(|(qid, hits)| ranked_query(qid, hits))
        .collect();
    let queries = queries
        .into_iter()
        .collect::<Result<_, _>>()
        .map_err(|message| file_error(path, message))?;
    Ok(Run { queries })
}

/// trec_eval's result order: score in single precision, descending, then docid descending.
fn trec_order(a: &Hit, b: &Hit) -> Ordering {
    (b.score as f32)
        .total_cmp(&(a.score as f32))
        .then_with(|| b.document.cmp(&a.document))
}

fn ranked_query(qid: &str, mut hits: Vec<Hit>) -> Result<RunQuery, String> {
    {
        let mut seen: HashSet<&str> =
            HashSet::with_capacity_and_hasher(hits.len(), Default::default());
        if let Some(hit) = hits.iter().find(|h| !seen.insert(h.document.as_str())) {
            return Err(format!("query {qid} lists document {} twice", hit.document));
        }
    }
    // Runs are mostly written in this order already: one pass to check costs less than a sort.
    if !hits.is_sorted_by(|a, b| trec_order(a, b).is_le()) {
        hits.sort_unstable_by(trec_order);
    }
    // A query after a much longer one was given that one's room.
    if hits.capacity() > 2 * hits.len() {
        hits.shrink_to_fit();
    }
    Ok(RunQuery {
        id: qid.to_string(),
        hits,
        answer: None,
        latency_ms: None,
    })
}

#[cfg(test)]
mod tests;
