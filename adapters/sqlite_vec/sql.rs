//! The SQL the adapter sends: the `vec0` table, its writes and its KNN queries, with the
//! project's predicates as constraints on vec0 metadata columns.
//!
//! Every attribute is a metadata column (`text` for keywords, `integer` for integers) named
//! `a_<attribute>`, so that no attribute can take the name of a vec0 column (`distance`,
//! `k`, the vector columns). vec0 evaluates metadata constraints inside its KNN scan, chunk by
//! chunk, before ranking: a filtered query ranks exactly the rows that pass.

use std::fmt::Write as _;

use rusqlite::types::Value as SqlValue;

use super::ENGINE;
use super::params::{BuildSettings, Quantization};
use crate::engine::{EngineError, EngineResult};
use crate::filter::{Attributes, Condition, FieldKind, Predicate};

/// The vec0 table of the collection (one collection per database file).
pub(super) const TABLE: &str = "vectors";
/// The most metadata columns a vec0 table takes (`VEC0_MAX_METADATA_COLUMNS`).
pub(super) const MAX_METADATA_COLUMNS: usize = 16;

/// The metadata column of attribute `name`.
pub(super) fn column(name: &str) -> String {
    format!("a_{name}")
}

/// `CREATE VIRTUAL TABLE vectors USING vec0(...)`.
pub(super) fn create_table(
    dim: usize,
    settings: &BuildSettings,
    attributes: Option<&Attributes>,
) -> EngineResult<String> {
    let metric = settings.metric;
    let mut sql = format!(
        "CREATE VIRTUAL TABLE {TABLE} USING vec0(embedding float[{dim}] distance_metric={metric}"
    );
    match settings.quantization {
        Quantization::None => {}
        Quantization::Int8 => {
            let _ = write!(sql, ", coarse int8[{dim}] distance_metric={metric}");
        }
        // Bit vectors are compared by Hamming distance, whatever the float column's metric.
        Quantization::Bit => {
            let _ = write!(sql, ", coarse bit[{dim}]");
        }
    }
    let fields = attributes.map_or(&[][..], |a| a.fields());
    if fields.len() > MAX_METADATA_COLUMNS {
        return Err(too_many_fields(fields.len()));
    }
    for field in fields {
        let ty = match field.kind {
            FieldKind::Keyword => "text",
            FieldKind::Integer => "integer",
        };
        let _ = write!(sql, ", {} {ty}", column(&field.name));
    }
    let _ = write!(sql, ", chunk_size={})", settings.chunk_size);
    Ok(sql)
}

pub(super) fn too_many_fields(n: usize) -> EngineError {
    EngineError::Unsupported {
        engine: ENGINE.into(),
        what: format!(
            "{n} attributes (a vec0 table has at most {MAX_METADATA_COLUMNS} metadata columns)"
        ),
    }
}

/// The quantized form of parameter `?{param}` (a float32 blob).
fn quantize(quantization: Quantization, param: usize) -> String {
    match quantization {
        Quantization::None => format!("?{param}"),
        Quantization::Int8 => format!("vec_quantize_int8(?{param}, 'unit')"),
        Quantization::Bit => format!("vec_quantize_binary(?{param})"),
    }
}

/// `INSERT`: `?1` rowid, `?2` the float32 vector, `?3…` the attributes in field order.
pub(super) fn insert(settings: &BuildSettings, attributes: Option<&Attributes>) -> String {
    let mut columns = String::from("rowid, embedding");
    let mut values = String::from("?1, ?2");
    if settings.quantized() {
        columns.push_str(", coarse");
        let _ = write!(values, ", {}", quantize(settings.quantization, 2));
    }
    for (i, field) in attributes.map_or(&[][..], |a| a.fields()).iter().enumerate() {
        let _ = write!(columns, ", {}", column(&field.name));
        let _ = write!(values, ", ?{}", i + 3);
    }
    format!("INSERT INTO {TABLE}({columns}) VALUES ({values})")
}

/// `UPDATE` of a row's vector in place: `?1` rowid, `?2` the float32 vector. Attributes stay:
/// they belong to the point, not to its vector. Float32 tables only (see `Write::Upsert`).
pub(super) fn update(settings: &BuildSettings) -> String {
    let mut set = String::from("embedding = ?2");
    if settings.quantized() {
        let _ = write!(set, ", coarse = {}", quantize(settings.quantization, 2));
    }
    format!("UPDATE {TABLE} SET {set} WHERE rowid = ?1")
}

pub(super) fn delete() -> String {
    format!("DELETE FROM {TABLE} WHERE rowid = ?1")
}

/// How a KNN query is shaped: the collection's quantization and whether its candidates are
/// re-ranked by the float vectors.
#[derive(Debug, Clone, Copy)]
pub(super) struct KnnShape {
    pub quantization: Quantization,
    pub rescore: bool,
    pub metric: &'static str,
}

/// The KNN query over `filter`'s rows. Parameters: `?1` the query (float32 blob), `?2` the
/// candidates vec0 returns (`k`), with rescoring `?3` the results kept, then the filter's
/// values (see [`filter_values`]).
///
/// Unquantized: vec0's own KNN on the float column, ordered by distance. Quantized: vec0's
/// KNN on the quantized column; with rescoring, its candidates re-ranked by the exact
/// distance to their float vector (sqlite-vec's documented re-scoring), ties by rowid.
pub(super) fn knn(shape: KnnShape, filter: &Predicate) -> String {
    let first_filter_param = if shape.rescore { 4 } else { 3 };
    let constraints = filter_sql(filter, first_filter_param);
    match (shape.quantization, shape.rescore) {
        (Quantization::None, _) => format!(
            "SELECT rowid, distance FROM {TABLE} WHERE embedding MATCH ?1 AND k = ?2{constraints}"
        ),
        (q, false) => format!(
            "SELECT rowid, distance FROM {TABLE} WHERE coarse MATCH {} AND k = ?2{constraints}",
            quantize(q, 1)
        ),
        (q, true) => format!(
            "WITH candidates AS (SELECT rowid, embedding FROM {TABLE} \
             WHERE coarse MATCH {} AND k = ?2{constraints}) \
             SELECT rowid, vec_distance_{}(embedding, ?1) AS score FROM candidates \
             ORDER BY score, rowid LIMIT ?3",
            quantize(q, 1),
            shape.metric
        ),
    }
}

/// ` AND a_label = ?4 AND a_num >= ?5 AND a_num < ?6`: numbered from `first`.
fn filter_sql(filter: &Predicate, first: usize) -> String {
    let mut sql = String::new();
    let mut n = first;
    for condition in &filter.all {
        match condition {
            Condition::Equals { field, .. } => {
                let _ = write!(sql, " AND {} = ?{n}", column(field));
                n += 1;
            }
            Condition::Range { field, .. } => {
                let col = column(field);
                let _ = write!(sql, " AND {col} >= ?{n} AND {col} < ?{}", n + 1);
                n += 2;
            }
        }
    }
    sql
}

/// The values of `filter`'s parameters, in the order [`knn`] numbers them.
pub(super) fn filter_values(filter: &Predicate) -> Vec<SqlValue> {
    let mut values = Vec::with_capacity(filter.all.len() * 2);
    for condition in &filter.all {
        match condition {
            Condition::Equals { value, .. } => values.push(SqlValue::Text(value.clone())),
            Condition::Range { gte, lt, .. } => {
                values.push(SqlValue::Integer(*gte));
                values.push(SqlValue::Integer(*lt));
            }
        }
    }
    values
}

/// Whether vec0 can evaluate `predicate` over `attributes`: every field exists with the kind
/// its condition needs (keyword equality, integer range), within vec0's column limit.
pub(super) fn check_filter(attributes: &Attributes, predicate: &Predicate) -> EngineResult<()> {
    if attributes.fields().len() > MAX_METADATA_COLUMNS {
        return Err(too_many_fields(attributes.fields().len()));
    }
    predicate
        .compile(attributes)
        .map(|_| ())
        .map_err(|e| EngineError::bad_param(ENGINE, "filter", e))
}
