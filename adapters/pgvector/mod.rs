//! `pgvector`: PostgreSQL with the pgvector extension, driven as a real server over the wire.
//!
//! One table per collection, `(id bigint PRIMARY KEY, embedding vector(dim))` (or
//! `halfvec(dim)`). The build phase loads it with binary `COPY`, the fastest path PostgreSQL
//! has, and only then runs `CREATE INDEX` (HNSW or IVFFlat) in
//! [`VectorEngine::wait_until_ready`], which is how pgvector recommends loading: building the
//! graph once over all rows is much faster than maintaining it row by row, and an IVFFlat
//! index needs the data to train its lists.
//!
//! PostgreSQL's planner decides per query whether to use the index at all. A sequential scan
//! returns exact results, so a benchmark that silently fell back to one would report perfect
//! recall at scan speed. After every index wait the adapter therefore runs `EXPLAIN` of the
//! search query once per search-parameter set and reports `may_full_scan` (which marks the
//! run) when a plan does not use the index. Its cost model prefers a scan on small tables and at
//! large `ef_search`; the search parameter `seqscan = false` (`SET enable_seqscan = off`) makes
//! it use the index, which the sets that chart an index curve do.
//!
//! Searches take `&self` and run from many client threads at once, each on its own
//! connection taken from a small pool; a session gets the current search settings (`SET
//! hnsw.ef_search`, ...) and its prepared search statement when it is first used after the
//! parameters changed.
//!
//! Without `--url`, [`open`] starts a local server with `scripts/servers/pgvector.sh start` and
//! leaves it running for later runs (stop it with `scripts/servers/pgvector.sh stop`).
//!
//! Files: `server` (finding or starting the server, its pid), `session` (connections and error
//! classification), `sql` (statement text), `params` (build and search parameters), `copy`
//! (binary `COPY` encoding), `report` (footprint and describe); the trait impl is here.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::ops::Range;
use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use pgvector::Vector;
use postgres::config::Host;
use postgres::{Client, Config, NoTls, Statement};
use serde_json::{Map, Value, json};

use crate::adapters::support::pool::IdlePool;
use crate::adapters::support::rows;
use crate::distance::Distance;
use crate::engine::{CollectionSpec, ConcurrentWrites, ConnectOptions, EngineError, EngineResult, Footprint, IndexReport, Neighbor, PointId, Query, SourcedBytes, VectorEngine};
use crate::params::{ParamMap, ParamMapExt};

mod copy;
mod filter;
/// The sparse and hybrid engine: a `sparsevec` column beside the `vector` one.
pub mod hybrid;
mod params;
mod report;
mod server;
mod session;
mod sql;
mod watchdog;
mod wire;
#[cfg(test)]
mod tests;

use copy::{copy_fields, put_copy_header, put_copy_row, put_copy_trailer};
use params::{BuildParams, SearchParams, bad_param};
pub use server::open;
use session::{Conn, Fail};
use sql::{Collection, VecType, distance_operator, index_name, pg_id, quote_ident, quote_literal};

const ENGINE: &str = crate::adapters::meta::pgvector::NAME;
/// Used when the runner passes no timeout (`ConnectOptions::default()`).
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Connecting is quick or hopeless; a dead address should fail fast even with a long
/// per-request timeout.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// Points per request when the runner passes no batch size.
const DEFAULT_BATCH: usize = 1000;
/// Idle connections kept for reuse; more concurrent callers than this still work, their
/// surplus connections are closed when returned.
const MAX_IDLE_CONNECTIONS: usize = 64;
/// Encoded COPY data is sent in slices of this size (one CopyData message each).
const COPY_SLICE: usize = 256 * 1024;
/// `k` of the query whose plan `EXPLAIN` checks (the runner's `k` is not known here; the plan
/// of an ANN query does not depend on it as long as it is small).
const EXPLAIN_K: i64 = 10;
/// pgvector's limits (its documented ranges), checked before any work is done.
const HNSW_M: Range<u64> = 2..101;
const HNSW_EF_CONSTRUCTION: Range<u64> = 4..1001;
const HNSW_EF_SEARCH: Range<u64> = 1..1001;
const IVFFLAT_LISTS: Range<u64> = 1..32769;
/// Largest dimension a `vector` / `halfvec` column can hold.
const MAX_DIM: usize = 16_000;

/// Build parameters accepted by [`VectorEngine::create`].
const BUILD_PARAMS: &[&str] = &[
    "index",
    "m",
    "ef_construction",
    "lists",
    "type",
    "quantization",
    "maintenance_work_mem",
    "parallel_workers",
];

/// Search parameters accepted by [`VectorEngine::set_search_params`].
const SEARCH_PARAMS: &[&str] = &[
    "ef_search",
    "probes",
    "iterative_scan",
    "max_scan_tuples",
    "rerank",
    "seqscan",
];

/// The engine: a connection configuration, a pool of sessions and the table under test.
pub struct PgVector {
    config: Config,
    target: String,
    statement_timeout: Option<Duration>,
    /// Cuts off a call the server never answers (see `watchdog.rs`); with the timeout.
    watchdog: Option<Arc<watchdog::Watchdog>>,
    recreate: bool,
    batch_size: usize,
    upload_parallel: usize,
    pool: IdlePool<Conn>,
    /// Sessions of the unfiltered search (`wire.rs`).
    wire_pool: IdlePool<wire::WireSession>,
    /// Why the unfiltered search went back to the `postgres` crate, once it did.
    wire_off: OnceLock<String>,
    version: String,
    server_pid: Option<u32>,
    auto_started: bool,
    collection: Option<Collection>,
    search: SearchParams,
    /// Every search-parameter set validated so far (the runner checks all of them before the
    /// build): `EXPLAIN` checks the plan of each.
    checked: Vec<(String, SearchParams)>,
    /// Bumped whenever the table or the search parameters change; a pooled session whose
    /// generation differs re-applies its settings and re-prepares its statement.
    generation: u64,
    /// Each filtered query shape searched (SQL text) with one predicate of that shape, for
    /// the `EXPLAIN` of filtered plans in `describe()`.
    filter_shapes: Mutex<Vec<(String, crate::filter::Predicate)>>,
}

impl PgVector {
    /// Asks the server to parse `maintenance_work_mem` now: a bad size fails before a long
    /// load, not after it.
    fn check_maintenance_work_mem(&self, build: &BuildParams) -> EngineResult<()> {
        let Some(mem) = &build.maintenance_work_mem else {
            return Ok(());
        };
        let sql = format!(
            "SET maintenance_work_mem = {}; RESET maintenance_work_mem",
            quote_literal(mem)
        );
        self.with_conn("check maintenance_work_mem", |conn| {
            Ok(conn.client.batch_execute(&sql)?)
        })
        .map_err(|e| match e {
            EngineError::Operation { message, .. } => bad_param("maintenance_work_mem", message),
            other => other,
        })
    }

    /// Creates table `name` as `(id bigint PRIMARY KEY, <columns>)`, dropping one of that name
    /// under `--recreate` (refusing otherwise); returns its quoted name.
    fn create_table(&self, name: &str, columns: &str) -> EngineResult<String> {
        let table = quote_ident(name);
        let exists = self.with_conn("create", |conn| {
            let found: bool = conn
                .client
                .query_one("SELECT to_regclass($1) IS NOT NULL", &[&table])?
                .try_get(0)?;
            Ok(found)
        })?;
        if exists && !self.recreate {
            return Err(EngineError::op(
                ENGINE,
                "create",
                format!(
                    "table `{name}` already exists in {}; pass --recreate to drop it",
                    self.target
                ),
            ));
        }
        let ddl = format!(
            "DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (id bigint PRIMARY KEY, {columns})"
        );
        self.with_conn("create", |conn| Ok(conn.client.batch_execute(&ddl)?))?;
        Ok(table)
    }

    /// Streams binary `COPY` data to `sql` (`COPY ... FROM STDIN (FORMAT BINARY)`) on a pooled
    /// session, in slices of [`COPY_SLICE`].
    fn copy_in(&self, sql: &str, data: &[u8]) -> EngineResult<()> {
        self.with_conn("bulk insert (COPY)", |conn| {
            let mut writer = conn.client.copy_in(sql)?;
            for slice in data.chunks(COPY_SLICE) {
                writer.write_all(slice).map_err(Fail::Io)?;
            }
            writer.finish()?;
            Ok(())
        })
    }

    /// Streams `ids`/`vectors` as binary `COPY` rows to `sql` on a pooled session, encoding
    /// each slice of about [`COPY_SLICE`] bytes just before it is sent: the server parses one
    /// slice while the next is encoded, and no copy of the whole batch is held.
    fn copy_rows(&self, sql: &str, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let col = self.collection("bulk insert")?;
        let (dim, ty, attributes) = (col.dim, col.build.vec_type, col.attributes.as_deref());
        let fields = copy_fields(attributes)?;
        self.with_conn("bulk insert (COPY)", |conn| {
            let mut writer = conn.client.copy_in(sql)?;
            let mut buf = Vec::with_capacity(2 * COPY_SLICE);
            put_copy_header(&mut buf);
            for (id, v) in ids.iter().zip(vectors.chunks_exact(dim)) {
                put_copy_row(&mut buf, fields, *id, v, ty, attributes)?;
                if buf.len() >= COPY_SLICE {
                    writer.write_all(&buf).map_err(Fail::Io)?;
                    buf.clear();
                }
            }
            put_copy_trailer(&mut buf);
            writer.write_all(&buf).map_err(Fail::Io)?;
            writer.finish()?;
            Ok(())
        })
    }

    /// `INSERT ... ON CONFLICT (id) DO UPDATE` from two arrays (ids, vectors).
    fn upsert_points(&self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let col = self.collection("upsert")?;
        rows::check(ENGINE, "upsert", col.dim, ids.len(), vectors.len())?;
        if ids.is_empty() {
            return Ok(());
        }
        let dim = col.dim;
        // One statement cannot update a row twice: keep the last vector of a repeated id.
        let mut last: HashMap<PointId, usize> = HashMap::with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            last.insert(*id, i);
        }
        let mut rows: Vec<usize> = last.into_values().collect();
        rows.sort_unstable();
        let cast = match col.build.vec_type {
            VecType::Vector => String::new(),
            VecType::HalfVec => format!("::halfvec({dim})"),
        };
        let attributes = col.attributes.as_deref();
        let sql = match attributes {
            // A point keeps its attributes when its vector changes: they are written again.
            Some(a) => filter::upsert_sql(&col.table, &cast, a),
            None => format!(
                "INSERT INTO {} (id, embedding) SELECT u.id, u.e{cast} \
                 FROM unnest($1::int8[], $2::vector[]) AS u(id, e) \
                 ON CONFLICT (id) DO UPDATE SET embedding = EXCLUDED.embedding",
                col.table
            ),
        };
        self.parallel_ranges(rows.len(), "upsert", |range| {
            let part = &rows[range];
            let pg_ids = part
                .iter()
                .map(|&i| pg_id(ids[i]))
                .collect::<EngineResult<Vec<i64>>>()?;
            let vecs: Vec<Vector> = part
                .iter()
                .map(|&i| Vector::from(vectors[i * dim..(i + 1) * dim].to_vec()))
                .collect();
            let part_ids: Vec<PointId> = part.iter().map(|&i| ids[i]).collect();
            let extra = match attributes {
                Some(a) => filter::attribute_arrays(a, &part_ids)?,
                None => Vec::new(),
            };
            self.with_conn("upsert", |conn| {
                let mut params: Vec<&(dyn postgres::types::ToSql + Sync)> = vec![&pg_ids, &vecs];
                params.extend(
                    extra
                        .iter()
                        .map(|v| v.as_ref() as &(dyn postgres::types::ToSql + Sync)),
                );
                conn.client.execute(&sql, &params)?;
                Ok(())
            })
        })
    }

    /// `DELETE ... WHERE id = ANY($1)`.
    fn delete_points(&self, ids: &[PointId]) -> EngineResult<()> {
        let col = self.collection("delete")?;
        if ids.is_empty() {
            return Ok(());
        }
        let pg_ids = ids
            .iter()
            .map(|&id| pg_id(id))
            .collect::<EngineResult<Vec<i64>>>()?;
        let sql = format!("DELETE FROM {} WHERE id = ANY($1::int8[])", col.table);
        self.with_conn("delete", |conn| {
            conn.client.execute(&sql, &[&pg_ids])?;
            Ok(())
        })
    }

    /// Top-k of all rows: over the extended-protocol wire client when it serves the
    /// collection, else through a statement prepared once per session.
    fn unfiltered_search(
        &self,
        query: &[f32],
        k: usize,
        out: &mut Vec<Neighbor>,
    ) -> EngineResult<()> {
        out.clear();
        let col = self.collection("search")?;
        rows::check(ENGINE, "search", col.dim, 1, query.len())?;
        if k == 0 {
            return Ok(());
        }
        let limit = i64::try_from(k).unwrap_or(i64::MAX);
        let rerank = col.rerank(&self.search, k);
        if let Some(done) = self.search_over_wire(col, query, (limit, rerank), out) {
            return done;
        }
        let vector = Vector::from(query.to_vec());
        let rows = self.with_conn("search", |conn| {
            let stmt = self.ready_for_search(conn, col, limit, rerank)?;
            Ok(conn.client.query(&stmt, &[&vector])?)
        })?;
        neighbors_into(rows, 1.0, "search", out)
    }
}

/// The `(id, value)` rows of a search as neighbours, in the order the server sent them, each
/// score `sign × value` (a distance as it is; a similarity the hybrid side negates).
fn neighbors_into(
    rows: Vec<postgres::Row>,
    sign: f64,
    operation: &str,
    out: &mut Vec<Neighbor>,
) -> EngineResult<()> {
    out.reserve(rows.len());
    for row in rows {
        let id: i64 = row
            .try_get(0)
            .map_err(|e| EngineError::op(ENGINE, operation, e))?;
        let value: Option<f64> = row
            .try_get(1)
            .map_err(|e| EngineError::op(ENGINE, operation, e))?;
        out.push(Neighbor {
            id: id as PointId,
            score: value.map_or(f32::NAN, |v| (sign * v) as f32),
        });
    }
    Ok(())
}

impl ConcurrentWrites for PgVector {
    fn upsert(&self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.upsert_points(ids, vectors)
    }

    fn delete(&self, ids: &[PointId]) -> EngineResult<()> {
        self.delete_points(ids)
    }
}

impl VectorEngine for PgVector {
    fn name(&self) -> &str {
        ENGINE
    }

    fn version(&self) -> String {
        self.version.clone()
    }

    fn check_build_params(&self, spec: &CollectionSpec) -> EngineResult<()> {
        BuildParams::parse(&spec.build_params).map(|_| ())
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        let build = BuildParams::parse(&spec.build_params)?;
        for (_, params) in &self.checked {
            params.check_against(build.index)?;
        }
        if spec.dim == 0 || spec.dim > MAX_DIM {
            return Err(EngineError::op(
                ENGINE,
                "create",
                format!(
                    "dimension {} is outside pgvector's range 1..={MAX_DIM}",
                    spec.dim
                ),
            ));
        }
        self.check_maintenance_work_mem(&build)?;
        let columns = format!(
            "embedding {}({}) NOT NULL{}",
            build.vec_type.name(),
            spec.dim,
            filter::columns_ddl(spec.attributes.as_deref())
        );
        let table = self.create_table(&spec.name, &columns)?;
        let name = spec.name.clone();
        self.collection = Some(Collection {
            index_name: index_name(&spec.name),
            name,
            table,
            dim: spec.dim,
            distance: spec.distance,
            build,
            index: None,
            probe: None,
            plans: Map::new(),
            attributes: spec.attributes.clone(),
        });
        session::lock(&self.filter_shapes).clear();
        self.generation += 1;
        Ok(())
    }

    /// Binary `COPY`, split into up to `upload_parallel` concurrent streams.
    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let col = self.collection("bulk insert")?;
        rows::check(ENGINE, "bulk insert", col.dim, ids.len(), vectors.len())?;
        if ids.is_empty() {
            return Ok(());
        }
        let dim = col.dim;
        let sql = format!(
            "COPY {} (id, embedding{}) FROM STDIN (FORMAT BINARY)",
            col.table,
            filter::column_list(col.attributes.as_deref())
        );
        self.parallel_ranges(ids.len(), "bulk insert", |range| {
            let rows = &vectors[range.start * dim..range.end * dim];
            self.copy_rows(&sql, &ids[range], rows)
        })?;
        if let Some(col) = self.collection.as_mut()
            && col.probe.is_none()
        {
            col.probe = Some(vectors[..dim].to_vec());
        }
        Ok(())
    }

    /// Builds the index after the bulk load (`CREATE INDEX`, then `ANALYZE`); later calls
    /// (after mutations) find it maintained already. Either way it checks the search plans.
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        let col = self.collection("wait for index")?.clone();
        if col.index.is_none() {
            let info = self.build_index(&col)?;
            if let Some(c) = self.collection.as_mut() {
                c.index = Some(info);
            }
            // The B-trees that let the planner pre-filter, timed with the build.
            if let Some(attributes) = col.attributes.as_deref() {
                let ddl = format!(
                    "{} ANALYZE {}",
                    filter::index_ddl(&col.table, &col.index_name, attributes),
                    col.table
                );
                self.with_conn("create attribute indexes", |conn| {
                    Ok(conn.client.batch_execute(&ddl)?)
                })?;
            }
        }
        let points = self.count_rows(&col.table)?;
        let plans = self.explain_all(&col)?;
        let mut details = Map::new();
        let mut plan_map = Map::new();
        let mut scans = Vec::new();
        for (label, uses_index, plan) in &plans {
            if !uses_index {
                scans.push(label.clone());
            }
            plan_map.insert(
                label.clone(),
                json!({ "uses_index": uses_index, "plan": plan }),
            );
        }
        let may_full_scan = !scans.is_empty();
        if may_full_scan {
            details.insert(
                "full_scan_reason".into(),
                format!(
                    "PostgreSQL plans a scan without the {} index (exact results at scan speed) \
                     for search parameters: {}. Its cost estimate prefers a scan on small tables \
                     and at large ef_search/probes; search parameter seqscan=false makes it \
                     use the index",
                    col.build.index.method(),
                    scans.join("; ")
                )
                .into(),
            );
        }
        details.insert("index".into(), col.index_name.clone().into());
        details.insert("plans".into(), Value::Object(plan_map.clone()));
        details.insert("explain_k".into(), EXPLAIN_K.into());
        if let Some(c) = self.collection.as_mut() {
            c.plans = plan_map;
            if let Some(info) = &c.index {
                details.insert("index_build_s".into(), info.build_s.into());
                details.insert("notices".into(), json!(info.notices));
            }
        }
        Ok(IndexReport {
            // CREATE INDEX covers every row, and PostgreSQL maintains the index on each write.
            indexed_vectors: Some(points),
            points: Some(points),
            may_full_scan,
            details,
        })
    }

    /// Writes take a pooled connection of their own, so the writer and the searchers run
    /// side by side, each statement its own transaction (committed when it returns).
    fn concurrent_writes(&self) -> Option<&dyn ConcurrentWrites> {
        Some(self)
    }

    /// Validates and stores; sessions pick the values up (`SET`) on their next search.
    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        let parsed = SearchParams::parse(params)?;
        if let Some(col) = &self.collection {
            parsed.check_against(col.build.index)?;
        }
        let label = if params.is_empty() {
            "default".to_string()
        } else {
            params.label()
        };
        if !self.checked.iter().any(|(l, _)| *l == label) {
            self.checked.push((label, parsed.clone()));
        }
        self.search = parsed;
        self.generation += 1;
        Ok(())
    }

    fn search(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        match query.filter {
            None => self.unfiltered_search(query.vector, query.k, out),
            Some(filter) => self.filtered_search(query.vector, query.k, filter, out),
        }
    }

    /// Equality and ranges are plain SQL: every predicate ragdbeval makes is expressible.
    fn check_filter(
        &self,
        attributes: &crate::filter::Attributes,
        predicate: &crate::filter::Predicate,
    ) -> EngineResult<()> {
        self.check_predicate(attributes, predicate)
    }

    /// Index: `pg_relation_size` of the ANN index. Total: `pg_total_relation_size` of the
    /// table, which holds every vector: heap + TOAST + all its indexes (ANN and primary key).
    /// The server's WAL is shared by every table and is not counted.
    fn footprint(&self) -> EngineResult<Footprint> {
        self.measure_footprint()
    }

    fn server_pid(&self) -> Option<u32> {
        self.server_pid
    }

    fn describe(&self) -> Map<String, Value> {
        self.describe_engine()
    }

    /// Drops the table and closes every session.
    fn close(&mut self) -> EngineResult<()> {
        let result = match self.collection.take() {
            Some(col) => {
                let sql = format!("DROP TABLE IF EXISTS {}", col.table);
                self.with_conn("close", |conn| Ok(conn.client.batch_execute(&sql)?))
            }
            None => Ok(()),
        };
        self.pool.clear();
        self.wire_pool.clear();
        result
    }
}
