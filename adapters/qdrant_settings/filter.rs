//! Filtered search in Qdrant's terms, for both Qdrant adapters: a point's attributes as its
//! payload, a predicate as a filter of `must` conditions, the payload indexes that make it
//! fast, and the rule by which Qdrant chooses between a graph search and a scan. Written as
//! Qdrant's own JSON (its REST schema), which the edge crate's types deserialize and the
//! gRPC adapter converts field by field.

use serde_json::{Map, Value, json};

use crate::adapters::support::filter::json_fields;
use crate::filter::{Attributes, Condition, FieldKind, Predicate};
use crate::types::PointId;

/// The payload of point `id`: every attribute under its name (keywords as strings,
/// integers as integers). `None` without attributes or for an id beyond them.
pub fn payload(attributes: Option<&Attributes>, id: PointId) -> Option<Map<String, Value>> {
    let attributes = attributes.filter(|a| a.covers(id) && !a.is_empty())?;
    Some(json_fields(attributes, id))
}

/// The payload index each attribute gets: `keyword` or `integer` (with range support, the
/// default of an integer index).
pub fn index_schema(kind: FieldKind) -> &'static str {
    match kind {
        FieldKind::Keyword => "keyword",
        FieldKind::Integer => "integer",
    }
}

/// `{"must": [...]}`: one `match` (keyword equality) or `range` (gte/lt) condition per
/// condition of the predicate.
pub fn filter_json(predicate: &Predicate) -> Value {
    let must: Vec<Value> = predicate
        .all
        .iter()
        .map(|c| match c {
            Condition::Equals { field, value } => {
                json!({ "key": field, "match": { "value": value } })
            }
            Condition::Range { field, gte, lt } => {
                json!({ "key": field, "range": { "gte": gte, "lt": lt } })
            }
        })
        .collect();
    json!({ "must": must })
}

/// How Qdrant executes a filtered search, with this collection's threshold in points, for
/// the result file. Per segment, Qdrant estimates the number of points that pass from the
/// payload index; below the full-scan threshold it scores those points exactly (no graph),
/// above it walks the HNSW graph checking the filter, and in between it samples to decide.
/// A level whose passing points stay below the threshold is therefore answered exactly.
pub fn strategy(full_scan_threshold_kb: u64, dim: usize, indexed: &[(String, &str)]) -> Value {
    let points = full_scan_threshold_kb.saturating_mul(1024) / (dim.max(1) as u64 * 4);
    json!({
        "payload_indexes": indexed
            .iter()
            .map(|(name, schema)| json!({ "field": name, "schema": schema }))
            .collect::<Vec<_>>(),
        "full_scan_threshold_points": points,
        "rule": "per segment, Qdrant estimates the passing points from the payload index: \
                 fewer than full_scan_threshold_points are scored exactly without the graph \
                 (recall 1 by construction), more are searched through the HNSW graph with \
                 the filter checked on the way; in between Qdrant samples to decide",
    })
}
