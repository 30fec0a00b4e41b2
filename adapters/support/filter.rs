//! Filters for the engines that answer any predicate over the points' attributes (a callback
//! on ids during the graph search, a `WHERE` on attribute columns, or a scan): the check
//! before the build and the predicate compiled for one filtered search, with one wording of
//! their errors for every such engine.

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::engine::{EngineError, EngineResult};
use crate::filter::{Attributes, CompiledPredicate, Predicate};

/// Refuses, before anything is built, a predicate the attributes cannot answer (a field
/// they lack, a condition of the wrong kind for the field).
pub fn check(engine: &str, attributes: &Attributes, predicate: &Predicate) -> EngineResult<()> {
    predicate
        .compile(attributes)
        .map(|_| ())
        .map_err(|e| EngineError::bad_param(engine, "filter", e))
}

/// `predicate` compiled against the collection's attributes, for one filtered search; an
/// error when the collection was loaded without attributes.
pub fn compile<'a>(
    engine: &str,
    attributes: Option<&'a Attributes>,
    predicate: &Predicate,
) -> EngineResult<CompiledPredicate<'a>> {
    let attributes = attributes.ok_or_else(|| {
        EngineError::op(
            engine,
            "filtered search",
            "the collection has no attributes",
        )
    })?;
    predicate
        .compile(attributes)
        .map_err(|e| EngineError::bad_param(engine, "filter", e))
}

/// [`compile`] for the optional predicate of a search: `None` stays `None`.
pub fn compile_optional<'a>(
    engine: &str,
    attributes: Option<&'a Attributes>,
    filter: Option<&Predicate>,
) -> EngineResult<Option<CompiledPredicate<'a>>> {
    filter.map(|p| compile(engine, attributes, p)).transpose()
}

/// What a search call is called in messages: `search`, or `filtered search` with a predicate.
pub fn operation(filter: Option<&Predicate>) -> &'static str {
    if filter.is_some() {
        "filtered search"
    } else {
        "search"
    }
}

/// What a batch search is called in messages: `batch search`, or `filtered batch search`.
pub fn batch_operation(filters: Option<&[Predicate]>) -> &'static str {
    if filters.is_some() {
        "filtered batch search"
    } else {
        "batch search"
    }
}

/// The number of queries of a batch search, `queries` checked to be whole rows of the
/// collection's dimension `collection_dim` (and, when filtered, one row per predicate).
pub fn batch_rows(
    (engine, operation): (&str, &str),
    collection_dim: usize,
    queries: &[f32],
    dim: usize,
    filters: Option<&[Predicate]>,
) -> EngineResult<usize> {
    let nq = filters.map_or(queries.len() / dim.max(1), <[_]>::len);
    super::rows::check_batch(engine, operation, collection_dim, dim, nq, queries.len())?;
    Ok(nq)
}

/// A batch search for the engines whose search call takes many queries but one predicate:
/// the queries that share a predicate (a label, a tenant; all of them when unfiltered) go
/// to `search` together, `per_call` at the most, and the answers are put back in query
/// order. `nq` queries of `dim` floats; `filters`, when given, has one predicate each.
pub fn by_predicate<'q, N: Clone>(
    queries: &'q [f32],
    dim: usize,
    nq: usize,
    filters: Option<&'q [Predicate]>,
    per_call: usize,
    mut search: impl FnMut(&[f32], Option<&'q Predicate>) -> EngineResult<Vec<Vec<N>>>,
) -> EngineResult<Vec<Vec<N>>> {
    let mut groups: BTreeMap<Option<&Predicate>, Vec<usize>> = BTreeMap::new();
    for q in 0..nq {
        groups.entry(filters.map(|f| &f[q])).or_default().push(q);
    }
    let mut out = vec![Vec::new(); nq];
    for (predicate, members) in groups {
        for part in members.chunks(per_call.max(1)) {
            let answers = search(&gather_rows(queries, dim, part), predicate)?;
            for (q, answer) in part.iter().zip(answers) {
                out[*q] = answer;
            }
        }
    }
    Ok(out)
}

/// The rows `members` of `queries` (ascending query numbers), borrowed when they are one
/// contiguous run (every unfiltered batch), else copied together.
fn gather_rows<'a>(queries: &'a [f32], dim: usize, members: &[usize]) -> Cow<'a, [f32]> {
    match (members.first(), members.last()) {
        (Some(&first), Some(&last)) if last - first + 1 == members.len() => {
            Cow::Borrowed(&queries[first * dim..(last + 1) * dim])
        }
        _ => members
            .iter()
            .flat_map(|q| &queries[q * dim..(q + 1) * dim])
            .copied()
            .collect(),
    }
}

/// The attributes of point `id` as a JSON object (keywords as strings, integers as numbers),
/// for the engines that store them as a document's fields or metadata; empty beyond the
/// table.
pub fn json_fields(
    attributes: &Attributes,
    id: crate::types::PointId,
) -> serde_json::Map<String, serde_json::Value> {
    if !attributes.covers(id) {
        return serde_json::Map::new();
    }
    attributes
        .values_of(id)
        .map(|(field, value)| {
            let v = match value {
                crate::filter::Value::Keyword(s) => serde_json::json!(s),
                crate::filter::Value::Integer(x) => serde_json::json!(x),
            };
            (field.name.clone(), v)
        })
        .collect()
}
