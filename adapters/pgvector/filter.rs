//! Filtered search in PostgreSQL: one column per attribute (`text` for keywords, `bigint` for
//! integers) with a B-tree index each, and a `WHERE` clause per predicate.
//!
//! The planner decides how a filtered query runs: through the vector index, the filter
//! applied to the candidates the index yields (with `hnsw.iterative_scan` off, at most
//! `ef_search` of them: a selective filter then returns fewer than k rows), or through the
//! B-tree on the attribute, then an exact sort of the passing rows by distance. `describe()`
//! records the plan of every predicate shape searched (`filtered_plans`), so a reader can
//! tell which levels were answered by the vector index and which exactly.
//!
//! Statements are prepared once per session and predicate shape (the fields and operators,
//! not the values: those are parameters).

use postgres::types::ToSql;

use super::copy::abbreviate_vectors;
use super::sql::quote_ident;
use super::*;
use crate::filter::{Attributes, Condition, FieldKind, Predicate, Value as AttrValue};

/// `, "label" text, "num" bigint`: the attribute columns of `CREATE TABLE`.
pub(super) fn columns_ddl(attributes: Option<&Attributes>) -> String {
    let mut out = String::new();
    for field in attributes.iter().flat_map(|a| a.fields()) {
        let ty = match field.kind {
            FieldKind::Keyword => "text",
            FieldKind::Integer => "bigint",
        };
        let _ = write!(out, ", {} {ty} NOT NULL", quote_ident(&field.name));
    }
    out
}

/// `, "label", "num"`: the attribute columns of an `INSERT` or `COPY` column list.
pub(super) fn column_list(attributes: Option<&Attributes>) -> String {
    let mut out = String::new();
    for field in attributes.iter().flat_map(|a| a.fields()) {
        let _ = write!(out, ", {}", quote_ident(&field.name));
    }
    out
}

/// One B-tree index per attribute column.
pub(super) fn index_ddl(table: &str, index_name: &str, attributes: &Attributes) -> String {
    let mut out = String::new();
    for field in attributes.fields() {
        let name = format!("{}_{}", index_name.trim_end_matches("_idx"), field.name);
        let _ = write!(
            out,
            "CREATE INDEX {} ON {table} ({});",
            quote_ident(&name),
            quote_ident(&field.name)
        );
    }
    out
}

/// Appends point `id`'s attributes in binary `COPY` form (length, then bytes).
pub(super) fn encode_copy_attributes(
    buf: &mut Vec<u8>,
    attributes: &Attributes,
    id: PointId,
) -> EngineResult<()> {
    if !attributes.covers(id) {
        return Err(EngineError::op(
            ENGINE,
            "bulk insert",
            format!("point {id} has no attributes"),
        ));
    }
    for (_, value) in attributes.values_of(id) {
        match value {
            AttrValue::Keyword(s) => {
                let len = i32::try_from(s.len())
                    .map_err(|_| EngineError::op(ENGINE, "bulk insert", "attribute too long"))?;
                buf.extend_from_slice(&len.to_be_bytes());
                buf.extend_from_slice(s.as_bytes());
            }
            AttrValue::Integer(x) => {
                buf.extend_from_slice(&8i32.to_be_bytes());
                buf.extend_from_slice(&x.to_be_bytes());
            }
        }
    }
    Ok(())
}

/// The attribute values of `ids` as one array parameter per field (`text[]` or `int8[]`),
/// for `unnest` in an upsert.
pub(super) fn attribute_arrays(
    attributes: &Attributes,
    ids: &[PointId],
) -> EngineResult<Vec<Box<dyn ToSql + Sync + Send>>> {
    if let Some(id) = ids.iter().find(|id| !attributes.covers(**id)) {
        return Err(EngineError::op(
            ENGINE,
            "upsert",
            format!("point {id} has no attributes"),
        ));
    }
    Ok(attributes
        .fields()
        .iter()
        .enumerate()
        .map(|(f, field)| -> Box<dyn ToSql + Sync + Send> {
            match field.kind {
                FieldKind::Keyword => Box::new(
                    ids.iter()
                        .map(|id| match attributes.value(f, *id) {
                            AttrValue::Keyword(s) => s.to_string(),
                            AttrValue::Integer(x) => x.to_string(),
                        })
                        .collect::<Vec<String>>(),
                ),
                FieldKind::Integer => Box::new(
                    ids.iter()
                        .map(|id| match attributes.value(f, *id) {
                            AttrValue::Integer(x) => x,
                            AttrValue::Keyword(_) => 0,
                        })
                        .collect::<Vec<i64>>(),
                ),
            }
        })
        .collect())
}

/// The upsert with attributes: `unnest` of ids, vectors and one array per attribute.
pub(super) fn upsert_sql(table: &str, cast: &str, attributes: &Attributes) -> String {
    let mut unnest = String::from("$1::int8[], $2::vector[]");
    let mut names = String::from("id, e");
    let mut select = format!("u.id, u.e{cast}");
    let mut set = String::from("embedding = EXCLUDED.embedding");
    for (i, field) in attributes.fields().iter().enumerate() {
        let ty = match field.kind {
            FieldKind::Keyword => "text[]",
            FieldKind::Integer => "int8[]",
        };
        let col = quote_ident(&field.name);
        let _ = write!(unnest, ", ${}::{ty}", i + 3);
        let _ = write!(names, ", a{i}");
        let _ = write!(select, ", u.a{i}");
        let _ = write!(set, ", {col} = EXCLUDED.{col}");
    }
    format!(
        "INSERT INTO {table} (id, embedding{}) SELECT {select} \
         FROM unnest({unnest}) AS u({names}) \
         ON CONFLICT (id) DO UPDATE SET {set}",
        column_list(Some(attributes))
    )
}

/// `"label" = $3 AND "num" >= $4 AND "num" < $5` from parameter `$first` on, and the values.
pub(super) fn where_clause(
    predicate: &Predicate,
    first: usize,
) -> (String, Vec<Box<dyn ToSql + Sync + Send>>) {
    let mut sql = String::new();
    let mut values: Vec<Box<dyn ToSql + Sync + Send>> = Vec::new();
    for c in &predicate.all {
        if !sql.is_empty() {
            sql.push_str(" AND ");
        }
        let n = first + values.len();
        match c {
            Condition::Equals { field, value } => {
                let _ = write!(sql, "{} = ${n}::text", quote_ident(field));
                values.push(Box::new(value.clone()));
            }
            Condition::Range { field, gte, lt } => {
                let col = quote_ident(field);
                let _ = write!(sql, "{col} >= ${n}::int8 AND {col} < ${}::int8", n + 1);
                values.push(Box::new(*gte));
                values.push(Box::new(*lt));
            }
        }
    }
    if sql.is_empty() {
        sql.push_str("TRUE");
    }
    (sql, values)
}

impl Collection {
    /// The search query restricted by `where_sql` (parameters after the search's own).
    ///
    /// Unlike [`Collection::search_sql`], the limits stay parameters: PostgreSQL then keeps
    /// planning each execution for its own predicate values (a generic plan cannot tell a
    /// predicate passing 0.1 % from one passing 50 %, and the right path differs: attribute
    /// B-tree and an exact sort, or the vector index and a filter).
    pub(super) fn filtered_search_sql(&self, where_sql: &str) -> String {
        let op = distance_operator(self.distance);
        let q = self.query_expr();
        let t = &self.table;
        if self.build.binary {
            format!(
                "SELECT id, dist FROM (SELECT id, embedding {op} {q} AS dist FROM {t} \
                 WHERE {where_sql} \
                 ORDER BY binary_quantize(embedding)::bit({dim}) <~> binary_quantize($1::vector) \
                 LIMIT $3) AS candidates ORDER BY dist, id LIMIT $2",
                dim = self.dim
            )
        } else {
            format!(
                "SELECT id, embedding {op} {q} AS dist FROM {t} WHERE {where_sql} \
                 ORDER BY embedding {op} {q} LIMIT $2"
            )
        }
    }

    /// The first parameter number after the search's own (`$1` query, `$2` k, `$3` re-rank
    /// depth with binary quantization).
    pub(super) fn first_filter_param(&self) -> usize {
        if self.build.binary { 4 } else { 3 }
    }
}

impl PgVector {
    pub(super) fn check_predicate(
        &self,
        attributes: &Attributes,
        predicate: &Predicate,
    ) -> EngineResult<()> {
        predicate
            .compile(attributes)
            .map(|_| ())
            .map_err(|e| bad_param("filter", e))
    }

    /// Top-k among the rows that pass `filter`, through a statement prepared once per
    /// session and predicate shape.
    pub(super) fn filtered_search(
        &self,
        query: &[f32],
        k: usize,
        filter: &Predicate,
        out: &mut Vec<Neighbor>,
    ) -> EngineResult<()> {
        out.clear();
        let col = self.collection("filtered search")?;
        rows::check(ENGINE, "filtered search", col.dim, 1, query.len())?;
        if k == 0 {
            return Ok(());
        }
        let (where_sql, values) = where_clause(filter, col.first_filter_param());
        let sql = col.filtered_search_sql(&where_sql);
        {
            let mut seen = session::lock(&self.filter_shapes);
            if !seen.iter().any(|(s, _)| *s == sql) {
                seen.push((sql.clone(), filter.clone()));
            }
        }
        let limit = i64::try_from(k).unwrap_or(i64::MAX);
        let rerank = col.rerank(&self.search, k);
        let vector = Vector::from(query.to_vec());
        let rows = self.with_conn("filtered search", |conn| {
            let stmt = self.prepared(conn, col.build.index, &sql)?;
            let mut params: Vec<&(dyn ToSql + Sync)> = vec![&vector, &limit];
            if col.build.binary {
                params.push(&rerank);
            }
            params.extend(values.iter().map(|v| v.as_ref() as &(dyn ToSql + Sync)));
            Ok(conn.client.query(&stmt, &params)?)
        })?;
        super::neighbors_into(rows, 1.0, "filtered search", out)
    }

    /// `EXPLAIN` of every filtered query shape searched so far, under the current search
    /// parameters, with one predicate of that shape: which path the planner takes.
    pub(super) fn explain_filtered(&self) -> EngineResult<Vec<Value>> {
        let Some(col) = &self.collection else {
            return Ok(Vec::new());
        };
        let shapes = session::lock(&self.filter_shapes).clone();
        if shapes.is_empty() {
            return Ok(Vec::new());
        }
        let probe = Vector::from(col.probe.clone().unwrap_or_else(|| vec![0.0; col.dim]));
        let rerank = col.rerank(&self.search, EXPLAIN_K as usize);
        self.with_conn("explain filtered search", |conn| {
            conn.generation = u64::MAX;
            conn.client
                .batch_execute(&self.search.settings_sql(col.build.index))?;
            let mut out = Vec::with_capacity(shapes.len());
            for (sql, predicate) in &shapes {
                let (_, values) = where_clause(predicate, col.first_filter_param());
                let mut params: Vec<&(dyn ToSql + Sync)> = vec![&probe, &EXPLAIN_K];
                if col.build.binary {
                    params.push(&rerank);
                }
                params.extend(values.iter().map(|v| v.as_ref() as &(dyn ToSql + Sync)));
                let rows = conn.client.query(&format!("EXPLAIN {sql}"), &params)?;
                let mut plan = String::new();
                for row in rows {
                    let line: String = row.try_get(0)?;
                    plan.push_str(&abbreviate_vectors(&line));
                    plan.push('\n');
                }
                let uses_vector_index = plan.contains(&col.index_name);
                out.push(json!({
                    "predicate": predicate.to_string(),
                    "search_params": self.search.to_json(),
                    "uses_vector_index": uses_vector_index,
                    "strategy": if uses_vector_index {
                        "vector index, filter applied to its candidates"
                    } else if plan.contains("Index Scan") || plan.contains("Bitmap") {
                        "attribute B-tree, then an exact sort of the passing rows"
                    } else {
                        "sequential scan, exact sort of the passing rows"
                    },
                    "plan": plan,
                }));
            }
            Ok(out)
        })
    }
}
