//! The index build and what DuckDB says about it: `pragma_hnsw_index_info()`, the plan of
//! the search statement, and the collection's sizes.

use ::duckdb::Connection;
use ::duckdb::types::Value as SqlValue;
use serde_json::{Map, Value, json};

use super::ENGINE;
use super::sql::{Table, vector_text};
use super::store::{Store, op_err};
use crate::engine::{EngineError, EngineResult, Footprint, IndexHolds, IndexReport, SourcedBytes};

/// What `pragma_hnsw_index_info()` says about one index.
#[derive(Debug, Clone)]
pub(super) struct HnswInfo {
    pub metric: String,
    pub count: u64,
    pub capacity: u64,
    /// usearch's own count of the bytes it allocated (graph and vectors).
    pub memory: u64,
    pub levels: u64,
}

/// The index of `table`, if there is one.
pub(super) fn hnsw_info(conn: &Connection, table: &Table) -> EngineResult<Option<HnswInfo>> {
    let mut stmt = conn
        .prepare(
            "SELECT metric, count::BIGINT, capacity::BIGINT, approx_memory_usage::BIGINT, \
             levels::BIGINT FROM pragma_hnsw_index_info() WHERE index_name = ?",
        )
        .map_err(op_err("index info"))?;
    let name = table.index.trim_matches('"').replace("\"\"", "\"");
    let mut rows = stmt.query([name]).map_err(op_err("index info"))?;
    let Some(row) = rows.next().map_err(op_err("index info"))? else {
        return Ok(None);
    };
    let get = |i: usize| row.get::<_, i64>(i).map(|v| v.max(0) as u64);
    Ok(Some(HnswInfo {
        metric: row.get(0).map_err(op_err("index info"))?,
        count: get(1).map_err(op_err("index info"))?,
        capacity: get(2).map_err(op_err("index info"))?,
        memory: get(3).map_err(op_err("index info"))?,
        levels: get(4).map_err(op_err("index info"))?,
    }))
}

/// `EXPLAIN` of the search `sql` with `params`: the plan's text.
fn explain(conn: &Connection, sql: &str, params: &[SqlValue]) -> EngineResult<String> {
    let mut stmt = conn
        .prepare(&format!("EXPLAIN {sql}"))
        .map_err(op_err("explain"))?;
    let mut rows = stmt
        .query(::duckdb::params_from_iter(params))
        .map_err(op_err("explain"))?;
    let mut plan = String::new();
    while let Some(row) = rows.next().map_err(op_err("explain"))? {
        let text: String = row.get(1).map_err(op_err("explain"))?;
        plan.push_str(&text);
    }
    Ok(plan)
}

/// Fails unless DuckDB answers the search `sql` with the HNSW index.
pub(super) fn check_index_scan(
    conn: &Connection,
    sql: &str,
    params: &[SqlValue],
    table: &Table,
) -> EngineResult<String> {
    let plan = explain(conn, sql, params)?;
    if plan.contains("HNSW_INDEX_SCAN") {
        Ok(plan)
    } else {
        Err(EngineError::op(
            ENGINE,
            "search",
            format!(
                "DuckDB would not use the HNSW index {} for `{sql}` (no HNSW_INDEX_SCAN in \
                 its EXPLAIN): the search would be a scan",
                table.index
            ),
        ))
    }
}

/// Creates the HNSW index (when the build has one), checkpoints a file database, checks the
/// search plan and reports the index.
pub(super) fn build_index(store: &Store) -> EngineResult<(IndexReport, Map<String, Value>)> {
    let conn = store.conn();
    if let Some(sql) = store.table.index_sql(&store.build) {
        conn.execute_batch(&sql).map_err(op_err("build index"))?;
    }
    if store.file.is_some() {
        conn.execute_batch("CHECKPOINT")
            .map_err(op_err("checkpoint"))?;
    }
    let points: i64 = conn
        .query_row(
            &format!("SELECT count(*) FROM {}", store.table.name),
            [],
            |r| r.get(0),
        )
        .map_err(op_err("count"))?;
    let info = hnsw_info(&conn, &store.table)?;
    let mut details = Map::new();
    if let Some(i) = &info {
        let sql = store.table.search_sql(10, None);
        let probe = [SqlValue::Text(vector_text(&vec![0.5; store.table.dim]))];
        let plan = check_index_scan(&conn, &sql, &probe, &store.table)?;
        details.insert(
            "hnsw_index".into(),
            json!({
                "metric": i.metric, "count": i.count, "capacity": i.capacity,
                "approx_memory_usage": i.memory, "levels": i.levels,
            }),
        );
        details.insert("search_plan".into(), json!(plan));
    }
    let report = IndexReport {
        indexed_vectors: Some(info.as_ref().map_or(0, |i| i.count)),
        points: Some(points.max(0) as u64),
        may_full_scan: info.is_none(),
        details: details.clone(),
    };
    Ok((report, details))
}

/// The index: usearch's allocated bytes (graph and the vectors it holds). The total: the
/// database file after a checkpoint when on disk; in memory, DuckDB's own memory (tables,
/// buffers: `duckdb_memory()`) plus the index, which DuckDB does not count there.
pub(super) fn footprint(store: &Store) -> EngineResult<Footprint> {
    let conn = store.conn();
    let info = hnsw_info(&conn, &store.table)?;
    let index = match &info {
        Some(i) => Ok(SourcedBytes {
            bytes: i.memory,
            source: "pragma_hnsw_index_info().approx_memory_usage (usearch's allocated bytes: \
                     graph + vectors)"
                .into(),
        }),
        None => Err("no index (index = none): every search scans the table".to_string()),
    };
    let total = match &store.file {
        Some(file) => {
            conn.execute_batch("CHECKPOINT")
                .map_err(op_err("checkpoint"))?;
            let mut bytes = 0;
            for f in [file.clone(), file.with_extension("db.wal")] {
                bytes += std::fs::metadata(&f).map(|m| m.len()).unwrap_or(0);
            }
            SourcedBytes {
                bytes,
                source: "database file (+ WAL) after CHECKPOINT".into(),
            }
        }
        None => {
            let memory: i64 = conn
                .query_row(
                    "SELECT coalesce(sum(memory_usage_bytes), 0)::BIGINT FROM duckdb_memory()",
                    [],
                    |r| r.get(0),
                )
                .map_err(op_err("footprint"))?;
            SourcedBytes {
                bytes: memory.max(0) as u64 + info.as_ref().map_or(0, |i| i.memory),
                source: "duckdb_memory() (tables, buffers) + the HNSW index's allocated bytes"
                    .into(),
            }
        }
    };
    Ok(Footprint::new(index, Ok(total)).holding(IndexHolds::GraphAndVectors))
}
