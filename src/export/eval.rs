//! How `ragdbeval eval` writes its scores: a terminal summary, Markdown, a per-query CSV and
//! JSON. Stored values are rounded to 4 decimals (stable snapshots) and a value a
//! query or set does not have (NaN) is `null` in JSON and empty in CSV.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use rayon::prelude::*;
use serde::Serialize;
use serde::ser::SerializeMap as _;

use super::compare::{aligned, md_table};
use crate::eval::evaluate::{ANSWER_METRICS, Aggregate, Evaluation, QueryScore, band};
use crate::eval::score::AT_K_METRICS;

/// Decimals kept on storage.
const STORED_DECIMALS: i32 = 4;

/// Rounded to [`STORED_DECIMALS`], unless `full` (`eval --full-precision`).
fn round(v: f64, full: bool) -> f64 {
    if full {
        return v;
    }
    let scale = 10f64.powi(STORED_DECIMALS);
    (v * scale).round() / scale
}

fn shown(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v:.4}"),
        _ => "–".into(),
    }
}

/// The k the breakdown tables show: 5 when asked for, else the closest.
fn breakdown_k(e: &Evaluation) -> usize {
    e.ks.iter()
        .copied()
        .min_by_key(|k| (k.abs_diff(5), *k))
        .unwrap_or(5)
}

fn counts_line(e: &Evaluation) -> String {
    let a = &e.aggregate;
    let without = e.per_query.iter().filter(|q| q.relevant == 0).count();
    let (without_rel, missing) = match e.averaging {
        "trec_eval" => (
            "in the means",
            "left out of the means, as trec_eval does without -c",
        ),
        "trec_eval-c" => (
            "in the means",
            "in the means as empty answers, as trec_eval -c",
        ),
        _ => ("left out of the means", "in the means as empty answers"),
    };
    format!(
        "{} judged queries, means over {} ({}): {} rejection, {} without a relevant judgment \
         ({without_rel}); {} missing from the run ({missing}); {} run queries without \
         judgments (ignored); {} ambiguous matches; matching {}, gain {}",
        a.queries,
        a.scored,
        e.averaging,
        a.rejection_queries,
        without,
        e.missing_from_run.len(),
        e.not_judged.len(),
        e.ambiguous_matches,
        e.matching,
        e.gain
    )
}

fn at_k_rows(metrics: &BTreeMap<String, f64>, ks: &[usize]) -> Vec<Vec<String>> {
    AT_K_METRICS
        .iter()
        .map(|m| {
            let mut row = vec![m.to_string()];
            row.extend(
                ks.iter()
                    .map(|k| shown(metrics.get(&format!("{m}@{k}")).copied())),
            );
            row
        })
        .collect()
}

fn single_rows(e: &Evaluation, bands: bool) -> Vec<Vec<String>> {
    let m = &e.aggregate.metrics;
    let mut rows = vec![
        vec!["r_precision".into(), shown(m.get("r_precision").copied())],
        vec!["rr (no cut)".into(), shown(m.get("rr").copied())],
        vec!["score_cv".into(), shown(m.get("score_cv").copied())],
        vec![
            format!(
                "rejection accuracy ({} queries)",
                e.aggregate.rejection_queries
            ),
            shown(Some(e.aggregate.rejection_accuracy)),
        ],
    ];
    for (name, v) in &e.latency_ms {
        rows.push(vec![format!("latency {name} (ms)"), shown(Some(*v))]);
    }
    for name in ANSWER_METRICS {
        if let Some(v) = m.get(name) {
            rows.push(vec![name.to_string(), shown(Some(*v))]);
        }
    }
    if bands {
        for name in ["hit@5", "mrr@5", "ndcg@5"] {
            if let Some(v) = m.get(name)
                && let Some(b) = band(name, *v)
            {
                rows.push(vec![format!("{name} band"), b.to_string()]);
            }
        }
    }
    rows
}

fn breakdown_rows(groups: &BTreeMap<String, Aggregate>, k: usize) -> Vec<Vec<String>> {
    groups
        .iter()
        .map(|(name, a)| {
            let mut row = vec![name.clone(), a.queries.to_string(), a.scored.to_string()];
            for m in ["hit", "mrr", "ndcg", "recall"] {
                row.push(shown(a.metrics.get(&format!("{m}@{k}")).copied()));
            }
            row.push(shown(Some(a.rejection_accuracy)));
            row
        })
        .collect()
}

fn breakdown_head(first: &str, k: usize) -> Vec<String> {
    vec![
        first.to_string(),
        "queries".into(),
        "scored".into(),
        format!("hit@{k}"),
        format!("mrr@{k}"),
        format!("ndcg@{k}"),
        format!("recall@{k}"),
        "rejection acc.".into(),
    ]
}

fn k_head(ks: &[usize]) -> Vec<String> {
    let mut head = vec!["metric".to_string()];
    head.extend(ks.iter().map(|k| format!("@{k}")));
    head
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// A table writer: aligned text or Markdown.
type TableWriter = fn(&mut String, &[&str], &[Vec<String>]);

/// The @k table, the single values and the breakdowns, in either format.
fn summary_tables(
    out: &mut String,
    e: &Evaluation,
    bands: bool,
    table: TableWriter,
    heading: fn(&str) -> String,
) {
    table(
        out,
        &strs(&k_head(&e.ks)),
        &at_k_rows(&e.aggregate.metrics, &e.ks),
    );
    out.push('\n');
    table(out, &["metric", "value"], &single_rows(e, bands));
    let k = breakdown_k(e);
    for (title, groups) in [
        ("category", &e.by_category),
        ("difficulty", &e.by_difficulty),
    ] {
        if !groups.is_empty() {
            out.push_str(&heading(title));
            table(
                out,
                &strs(&breakdown_head(title, k)),
                &breakdown_rows(groups, k),
            );
        }
    }
}

/// For the terminal.
pub fn text(e: &Evaluation, bands: bool, per_query: bool, verbose: bool) -> String {
    let mut out = counts_line(e) + "\n\n";
    summary_tables(&mut out, e, bands, aligned, |t| format!("\nby {t}:\n"));
    let k = breakdown_k(e);
    if verbose {
        for q in e.per_query.iter().filter(|q| !q.ambiguous_ranks.is_empty()) {
            let _ = writeln!(
                out,
                "ambiguous: query {} results at ranks {:?} fit more than one gold reference \
                 (the first was taken)",
                q.query_id, q.ambiguous_ranks
            );
        }
    }
    if per_query {
        let mut head = vec!["query".to_string()];
        head.extend(
            ["hit", "mrr", "ndcg", "recall"]
                .iter()
                .map(|m| format!("{m}@{k}")),
        );
        head.push("first hit".into());
        let column = |name: String| e.metric_names.iter().position(|n| *n == name);
        let rows: Vec<Vec<String>> = e
            .per_query
            .iter()
            .map(|q| {
                let mut row = vec![q.query_id.clone()];
                for m in ["hit", "mrr", "ndcg", "recall"] {
                    let c = column(format!("{m}@{k}"));
                    row.push(shown(c.and_then(|c| q.metrics.get(c)).copied()));
                }
                row.push(q.first_relevant_rank.map_or("–".into(), |r| r.to_string()));
                row
            })
            .collect();
        let _ = writeln!(out, "\nper query:");
        aligned(&mut out, &strs(&head), &rows);
    }
    out
}

/// For a README or an issue.
pub fn markdown(e: &Evaluation, bands: bool, title: &str) -> String {
    let mut out = format!("# Retrieval evaluation: {title}\n\n{}\n\n", counts_line(e));
    summary_tables(&mut out, e, bands, md_table, |t| format!("\n## By {t}\n\n"));
    out
}

/// One row per query: its labels, then every metric.
pub fn csv(e: &Evaluation, full: bool) -> String {
    let names = &e.metric_names;
    let mut w = ::csv::Writer::from_writer(Vec::new());
    let mut head = vec![
        "query_id",
        "category",
        "difficulty",
        "is_rejection",
        "relevant",
        "returned",
        "counted",
        "first_relevant_rank",
    ];
    head.extend(names.iter().map(|n| n.as_str()));
    let _ = w.write_record(&head);
    for q in &e.per_query {
        let mut row = vec![
            q.query_id.clone(),
            q.category.clone().unwrap_or_default(),
            q.difficulty.clone().unwrap_or_default(),
            q.is_rejection.to_string(),
            q.relevant.to_string(),
            q.returned.to_string(),
            q.counted.to_string(),
            q.first_relevant_rank
                .map_or(String::new(), |r| r.to_string()),
        ];
        for v in &q.metrics {
            row.push(if v.is_finite() {
                round(*v, full).to_string()
            } else {
                String::new()
            });
        }
        let _ = w.write_record(&row);
    }
    w.into_inner()
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// A stored value: rounded (unless full precision), NaN as `null`.
struct Num(f64, bool);

impl Serialize for Num {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.is_finite() {
            s.serialize_f64(round(self.0, self.1))
        } else {
            s.serialize_none()
        }
    }
}

/// Metric name → value, from parallel name and value slices.
struct Values<'a> {
    names: &'a [String],
    values: &'a [f64],
    full: bool,
}

impl Serialize for Values<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.names.len()))?;
        for (n, v) in self.names.iter().zip(self.values) {
            map.serialize_entry(n, &Num(*v, self.full))?;
        }
        map.end()
    }
}

/// A name → value map of stored values.
struct NamedValues<'a>(&'a BTreeMap<String, f64>, bool);

impl Serialize for NamedValues<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (n, v) in self.0 {
            map.serialize_entry(n, &Num(*v, self.1))?;
        }
        map.end()
    }
}

#[derive(Serialize)]
struct AggregateJson<'a> {
    queries: usize,
    scored: usize,
    metrics: NamedValues<'a>,
    rejection_queries: usize,
    rejection_accuracy: Num,
}

impl AggregateJson<'_> {
    fn of(a: &Aggregate, full: bool) -> AggregateJson<'_> {
        AggregateJson {
            queries: a.queries,
            scored: a.scored,
            metrics: NamedValues(&a.metrics, full),
            rejection_queries: a.rejection_queries,
            rejection_accuracy: Num(a.rejection_accuracy, full),
        }
    }
}

/// A per-query object for serde: the layout [`query_row`] writes by hand, which a test holds
/// to serde's.
#[derive(Serialize)]
#[cfg_attr(not(test), allow(dead_code))]
struct QueryJson<'a> {
    query_id: &'a str,
    category: &'a Option<String>,
    difficulty: &'a Option<String>,
    is_rejection: bool,
    relevant: usize,
    returned: usize,
    counted: bool,
    metrics: Values<'a>,
    first_relevant_rank: Option<usize>,
    relevant_returned: &'a [String],
    rejected: Option<bool>,
    ambiguous_ranks: &'a [usize],
}

#[derive(Serialize)]
struct EvalJson<'a> {
    format: &'static str,
    qrels: &'a str,
    run: &'a str,
    ks: &'a [usize],
    gain: &'a str,
    matching: &'a str,
    averaging: &'a str,
    reject_below: Option<f64>,
    aggregate: AggregateJson<'a>,
    by_category: BTreeMap<&'a str, AggregateJson<'a>>,
    by_difficulty: BTreeMap<&'a str, AggregateJson<'a>>,
    latency_ms: NamedValues<'a>,
    missing_from_run: &'a [String],
    not_judged: &'a [String],
    ambiguous_matches: usize,
    per_query: Vec<QueryJson<'a>>,
}

fn groups(g: &BTreeMap<String, Aggregate>, full: bool) -> BTreeMap<&str, AggregateJson<'_>> {
    g.iter()
        .map(|(k, a)| (k.as_str(), AggregateJson::of(a, full)))
        .collect()
}

/// Per-query objects rendered together into one piece of [`json_pieces`]: pieces large enough
/// that writing them is a few dozen calls, small enough to spread over all cores.
const ROWS_PER_PIECE: usize = 256;

/// The whole evaluation, per query as metric name → value; the format is named in `format`
/// (`eval compare` reads it back). The document in pieces to be written one after another:
/// the per-query objects, most of the text of a large run, are rendered on all cores in groups
/// and never copied into one string. Joined, the pieces are what
/// `serde_json::to_string_pretty` writes for the whole document.
pub fn json_pieces(e: &Evaluation, qrels: &str, run: &str, full: bool) -> Vec<String> {
    let doc = document(e, qrels, run, full, Vec::new());
    let head = serde_json::to_string_pretty(&doc).unwrap_or_default();
    let open = match head.strip_suffix("[]\n}") {
        Some(open) if !e.per_query.is_empty() => open,
        _ => return vec![head + "\n"],
    };
    let keys: Vec<String> = e
        .metric_names
        .iter()
        .map(|n| serde_json::to_string(n).unwrap_or_default())
        .collect();
    let mut pieces = vec![format!("{open}[\n")];
    pieces.par_extend(e.per_query.par_chunks(ROWS_PER_PIECE).enumerate().map(
        |(chunk, queries)| {
            let mut out = Vec::with_capacity(queries.len() * 48 * (keys.len() + 16));
            for (i, q) in queries.iter().enumerate() {
                if chunk > 0 || i > 0 {
                    out.extend_from_slice(b",\n");
                }
                query_row(&mut out, q, &keys, full);
            }
            String::from_utf8(out).unwrap_or_default()
        },
    ));
    pieces.push("\n  ]\n}\n".to_string());
    pieces
}

/// Everything but the per-query objects, which are `per_query`.
fn document<'a>(
    e: &'a Evaluation,
    qrels: &'a str,
    run: &'a str,
    full: bool,
    per_query: Vec<QueryJson<'a>>,
) -> EvalJson<'a> {
    EvalJson {
        format: "ragdbeval-eval/1",
        qrels,
        run,
        ks: &e.ks,
        gain: e.gain,
        matching: e.matching,
        averaging: e.averaging,
        reject_below: e.reject_below,
        aggregate: AggregateJson::of(&e.aggregate, full),
        by_category: groups(&e.by_category, full),
        by_difficulty: groups(&e.by_difficulty, full),
        latency_ms: NamedValues(&e.latency_ms, full),
        missing_from_run: &e.missing_from_run,
        not_judged: &e.not_judged,
        ambiguous_matches: e.ambiguous_matches,
        per_query,
    }
}

/// One per-query object laid out as `serde_json::to_string_pretty` lays it out two levels
/// deep (inside the document's `per_query` array), written directly: the rows are almost all
/// of a large run's document, and serde's pretty printer spends most of its time on the
/// layout and on escaping the same metric names in every row. Values go through serde_json,
/// so numbers and strings are written exactly as it writes them. `keys`: the metric names
/// as JSON strings, escaped once. Appended to `out`.
fn query_row(out: &mut Vec<u8>, q: &QueryScore, keys: &[String], full: bool) {
    let mut row = Row(out);
    row.open();
    row.field("query_id", &q.query_id);
    row.field("category", &q.category);
    row.field("difficulty", &q.difficulty);
    row.field("is_rejection", &q.is_rejection);
    row.field("relevant", &q.relevant);
    row.field("returned", &q.returned);
    row.field("counted", &q.counted);
    row.name("metrics");
    let metrics = keys.iter().zip(&q.metrics);
    row.nested(b'{', b'}', metrics, |out, (key, v)| {
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b": ");
        value(out, &Num(*v, full));
    });
    row.field("first_relevant_rank", &q.first_relevant_rank);
    row.name("relevant_returned");
    row.nested(b'[', b']', q.relevant_returned.iter(), value);
    row.field("rejected", &q.rejected);
    row.name("ambiguous_ranks");
    row.nested(b'[', b']', q.ambiguous_ranks.iter(), value);
    row.0.extend_from_slice(b"\n    }");
}

/// Appends `v` as serde_json writes it (writing into memory cannot fail).
fn value<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    let _ = serde_json::to_writer(&mut *out, v);
}

/// A per-query object being written, fields at three levels of indentation.
struct Row<'a>(&'a mut Vec<u8>);

impl Row<'_> {
    fn open(&mut self) {
        self.0.extend_from_slice(b"    {");
    }

    /// `"name": ` on a new line, after a comma unless it is the first field.
    fn name(&mut self, name: &str) {
        if self.0.last() != Some(&b'{') {
            self.0.push(b',');
        }
        self.0.extend_from_slice(b"\n      \"");
        self.0.extend_from_slice(name.as_bytes());
        self.0.extend_from_slice(b"\": ");
    }

    fn field<T: Serialize + ?Sized>(&mut self, name: &str, v: &T) {
        self.name(name);
        value(self.0, v);
    }

    /// An array or map of `items`, one per line at the next level; empty, `[]` or `{}`.
    fn nested<I: Iterator>(
        &mut self,
        open: u8,
        close: u8,
        items: I,
        item: impl Fn(&mut Vec<u8>, I::Item),
    ) {
        self.0.push(open);
        let mut any = false;
        for (i, x) in items.enumerate() {
            self.0.extend_from_slice(if i == 0 {
                b"\n        "
            } else {
                b",\n        "
            });
            item(self.0, x);
            any = true;
        }
        if any {
            self.0.extend_from_slice(b"\n      ");
        }
        self.0.push(close);
    }
}

#[cfg(test)]
fn query_json<'a>(e: &'a Evaluation, q: &'a QueryScore, full: bool) -> QueryJson<'a> {
    QueryJson {
        query_id: &q.query_id,
        category: &q.category,
        difficulty: &q.difficulty,
        is_rejection: q.is_rejection,
        relevant: q.relevant,
        returned: q.returned,
        counted: q.counted,
        metrics: Values {
            names: &e.metric_names,
            values: &q.metrics,
            full,
        },
        first_relevant_rank: q.first_relevant_rank,
        relevant_returned: &q.relevant_returned,
        rejected: q.rejected,
        ambiguous_ranks: &q.ambiguous_ranks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eval::evaluate::{EvalOptions, evaluate};
    use crate::eval::score::Gain;
    use crate::eval::{Hit, JudgedQuery, Judgments, Matching, Reference, Run, RunQuery};

    fn evaluation(queries: usize) -> Evaluation {
        let judged = |i: usize| JudgedQuery {
            id: format!("q{i}"),
            category: i
                .is_multiple_of(2)
                .then(|| "even \"quoted\"\nline".to_string()),
            references: vec![Reference {
                document: format!("d{i}").into(),
                page: None,
                grade: 2,
            }],
            ..JudgedQuery::default()
        };
        let answered = |i: usize| RunQuery {
            id: format!("q{i}"),
            hits: (0..3)
                .map(|h| Hit::new(format!("d{}", i + h), 1.0 / (h + 1) as f64))
                .collect(),
            ..RunQuery::default()
        };
        let judgments = Judgments {
            queries: (0..queries).map(judged).collect(),
            matching: Matching::Exact,
        };
        let run = Run {
            queries: (0..queries).map(answered).collect(),
        };
        let options = EvalOptions {
            ks: vec![1, 3],
            gain: Gain::Linear,
            reject_below: None,
            averaging: None,
        };
        evaluate(&judgments, &run, &options)
    }

    /// The spliced document is byte for byte what serde_json writes for the whole of it.
    #[test]
    fn json_equals_the_whole_document_pretty_printed() {
        for queries in [0, 1, 5, 2 * ROWS_PER_PIECE + 3] {
            let mut e = evaluation(queries);
            // Every shape a row can take: a value it lacks, ranks and references listed or
            // not, a rejection.
            if let Some(q) = e.per_query.first_mut() {
                q.metrics[1] = f64::NAN;
                q.ambiguous_ranks = vec![2, 3];
                q.rejected = Some(false);
                q.first_relevant_rank = None;
            }
            if let Some(q) = e.per_query.get_mut(1) {
                q.relevant_returned.clear();
                q.relevant_returned.push("doc \"a\"\\b".into());
            }
            for full in [false, true] {
                let rows = e
                    .per_query
                    .iter()
                    .map(|q| query_json(&e, q, full))
                    .collect();
                let whole = document(&e, "qrels.txt", "run.trec", full, rows);
                let expected = serde_json::to_string_pretty(&whole).unwrap() + "\n";
                let pieces = json_pieces(&e, "qrels.txt", "run.trec", full);
                assert_eq!(pieces.concat(), expected);
            }
        }
    }
}
