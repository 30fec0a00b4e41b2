//! The statements of the `duckdb` engine, as text: the table, the HNSW index, the searches
//! (plain and filtered) and their parameters.

use std::fmt::Write as _;

use ::duckdb::types::Value as SqlValue;

use super::params::{BuildSettings, function, metric};
use crate::distance::Distance;
use crate::filter::{Attributes, Condition, FieldKind, Predicate};

/// `"name"` with embedded quotes doubled.
pub(super) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The collection's table and how its searches are written.
#[derive(Debug, Clone)]
pub(super) struct Table {
    /// Quoted table name.
    pub name: String,
    /// Quoted index name.
    pub index: String,
    pub dim: usize,
    pub distance: Distance,
}

impl Table {
    pub(super) fn new(name: &str, dim: usize, distance: Distance) -> Table {
        Table {
            name: quote_ident(name),
            index: quote_ident(&format!("{name}_hnsw")),
            dim,
            distance,
        }
    }

    /// `CREATE TABLE` with one column per attribute (`VARCHAR` keywords, `BIGINT` integers).
    pub(super) fn create_sql(&self, attributes: Option<&Attributes>) -> String {
        let mut sql = format!(
            "CREATE TABLE {} (id BIGINT NOT NULL, v FLOAT[{}] NOT NULL",
            self.name, self.dim
        );
        for field in attributes.iter().flat_map(|a| a.fields()) {
            let ty = match field.kind {
                FieldKind::Keyword => "VARCHAR",
                FieldKind::Integer => "BIGINT",
            };
            let _ = write!(sql, ", {} {ty} NOT NULL", quote_ident(&field.name));
        }
        sql.push(')');
        sql
    }

    /// `CREATE INDEX … USING HNSW` with the build's options; `None` without an index. Once
    /// created, the index takes every later write itself: a second call creates nothing.
    pub(super) fn index_sql(&self, build: &BuildSettings) -> Option<String> {
        let h = build.hnsw.as_ref()?;
        let mut options = format!(
            "metric = '{}', M = {}, ef_construction = {}",
            metric(self.distance),
            h.m,
            h.ef_construction
        );
        if let Some(m0) = h.m0 {
            let _ = write!(options, ", M0 = {m0}");
        }
        Some(format!(
            "CREATE INDEX IF NOT EXISTS {} ON {} USING HNSW (v) WITH ({options})",
            self.index, self.name
        ))
    }

    /// The top-`k` search: the query vector is parameter 1 (text, cast to `FLOAT[dim]`), the
    /// filter's values follow. `k` is part of the text: vss replaces `ORDER BY … LIMIT` by
    /// its index scan only for a constant limit.
    ///
    /// A filtered search orders by `dist, id`, which vss does not replace: its index scan
    /// would take the graph's top `k` first and filter them after, returning fewer than `k`
    /// rows (none, for a selective filter). DuckDB then scans the rows that pass, exactly.
    pub(super) fn search_sql(&self, k: usize, where_sql: Option<&str>) -> String {
        let (filter, order) = match where_sql {
            Some(w) => (format!(" WHERE {w}"), "dist, id"),
            None => (String::new(), "dist"),
        };
        format!(
            "SELECT id, {}(v, ?::FLOAT[{}]) AS dist FROM {}{filter} ORDER BY {order} LIMIT {k}",
            function(self.distance),
            self.dim,
            self.name
        )
    }
}

/// A vector as DuckDB array text, `[0.5,-1.0,…]`: each float written in its shortest form
/// that reads back to the same bits.
pub(super) fn vector_text(v: &[f32]) -> String {
    let mut s = String::with_capacity(v.len() * 12 + 2);
    s.push('[');
    for (i, x) in v.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(s, "{x:?}");
    }
    s.push(']');
    s
}

/// `"label" = ? AND "num" >= ? AND "num" < ?` and its values, in order.
pub(super) fn where_clause(predicate: &Predicate) -> (String, Vec<SqlValue>) {
    let mut sql = String::new();
    let mut values = Vec::new();
    for c in &predicate.all {
        if !sql.is_empty() {
            sql.push_str(" AND ");
        }
        match c {
            Condition::Equals { field, value } => {
                let _ = write!(sql, "{} = ?", quote_ident(field));
                values.push(SqlValue::Text(value.clone()));
            }
            Condition::Range { field, gte, lt } => {
                let col = quote_ident(field);
                let _ = write!(sql, "{col} >= ? AND {col} < ?");
                values.push(SqlValue::BigInt(*gte));
                values.push(SqlValue::BigInt(*lt));
            }
        }
    }
    if sql.is_empty() {
        sql.push_str("TRUE");
    }
    (sql, values)
}
