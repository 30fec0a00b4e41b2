//! Filters for the engines that answer any predicate over the points' attributes (a callback
//! on ids during the graph search, a `WHERE` on attribute columns, or a scan): the check
//! before the build and the predicate compiled for one filtered search, with one wording of
//! their errors for every such engine.

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
