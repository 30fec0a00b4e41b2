//! `pgvector` for sparse and hybrid runs: one table `(id bigint PRIMARY KEY, sparse
//! sparsevec(V) NOT NULL[, embedding vector(dim) NOT NULL])`, loaded with binary `COPY`, then
//! indexed: the sparse column by HNSW over the inner product (`sparsevec_ip_ops`, pgvector's
//! only `sparsevec` index; `sparse_index = none` leaves it unindexed, every search an exact
//! sequential scan), the vector column as the dense engine indexes it.
//!
//! The dense side is the dense engine itself ([`PgVector`], holding the vector column as its
//! collection): its connections and pool, its index build and plan check, its search (over
//! the wire client) and its search settings, which apply to both HNSW indexes of the table
//! (`ef_search`, `iterative_scan`, `max_scan_tuples`, `seqscan`; `m` and `ef_construction`
//! build both). HNSW over sparse vectors is approximate, and without `iterative_scan` a scan
//! returns at most `ef_search` rows.
//!
//! The sparse search is a prepared `ORDER BY sparse <#> $1 LIMIT k` with the query as a binary
//! `sparsevec` parameter; `<#>` is the negated inner product, turned back into the inner
//! product for the score; rows of product 0 (no dimension in common with the query) are
//! dropped, as an inverted index never returns them. Engine-side hybrid is RRF in one
//! statement (`sparse::fused_sql`).

mod sparse;

use std::ops::Range;

use pgvector::Vector;
use serde_json::{Map, Value, json};

use self::sparse::{MAX_SPARSE_DIM, SparseParam, SparseTable, check_rows, encode_rows};
use super::params::bad_param;
use super::sql::{IndexKind, index_name, quote_ident};
use super::{ENGINE, EXPLAIN_K, PgVector};
use crate::engine::hybrid::{
    HybridCapabilities, HybridData, HybridEngine, HybridQuery, HybridSpec,
};
use crate::engine::{ConnectOptions, EngineError, EngineResult, Footprint, IndexHolds, IndexReport, Neighbor, SourcedBytes, VectorEngine, Query};
use crate::params::ParamMap;
use crate::sparse::fusion::Fusion;

pub const SUMMARY: &str = "pgvector's sparsevec (HNSW, inner product) beside its vector column; \
                           hybrid by RRF in one SQL statement, or in the client";

pub fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn HybridEngine>> {
    Ok(Box::new(PgHybrid {
        pg: super::server::connect(opts)?,
        table: None,
    }))
}

struct PgHybrid {
    /// The connections, settings and, in a hybrid table, the vector column.
    pg: PgVector,
    table: Option<SparseTable>,
}

impl PgHybrid {
    fn table(&self, operation: &str) -> EngineResult<&SparseTable> {
        self.table
            .as_ref()
            .ok_or_else(|| EngineError::op(ENGINE, operation, "no table: create() was not called"))
    }

    /// Runs the prepared statement `sql` with `params` on a pooled session set up for the
    /// current search settings.
    fn query(
        &self,
        operation: &str,
        sql: &str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> EngineResult<Vec<postgres::Row>> {
        self.pg.with_conn(operation, |conn| {
            let stmt = self.pg.prepared(conn, IndexKind::Hnsw, sql)?;
            Ok(conn.client.query(&stmt, params)?)
        })
    }

    /// A sparse table has no vector column, so no re-ranking of one.
    fn check_rerank(&self, label: &str, rerank: Option<u64>) -> EngineResult<()> {
        match (&self.table, rerank) {
            (Some(t), Some(_)) if !t.dense => Err(bad_param(
                "rerank",
                format!(
                    "({label}) re-ranks the candidates of a binary-quantized vector index; a \
                     sparse table has none (--retrieval hybrid)"
                ),
            )),
            _ => Ok(()),
        }
    }

    /// The vector column's part of the table, given to the dense engine as its collection.
    fn dense_collection(&mut self, spec: &HybridSpec, t: &SparseTable) -> EngineResult<()> {
        self.pg.collection = match spec.dense {
            None => None,
            Some(d) => {
                if d.dim == 0 || d.dim > super::MAX_DIM {
                    return Err(EngineError::op(
                        ENGINE,
                        "create",
                        format!(
                            "dimension {} is outside pgvector's range 1..={}",
                            d.dim,
                            super::MAX_DIM
                        ),
                    ));
                }
                Some(super::sql::Collection {
                    name: t.name.clone(),
                    table: t.table.clone(),
                    index_name: index_name(&t.name),
                    dim: d.dim,
                    distance: d.distance,
                    build: t.build.clone(),
                    index: None,
                    probe: None,
                    plans: Map::new(),
                    attributes: None,
                })
            }
        };
        Ok(())
    }

    /// Builds the sparse index (or, with none and no vector index to do it, `ANALYZE`s).
    fn build_sparse_index(&mut self, t: &SparseTable) -> EngineResult<()> {
        if t.hnsw && t.index.is_none() {
            let info = self
                .pg
                .create_index(&t.build, &t.table, |_| Ok((t.index_sql(), None)))?;
            if let Some(table) = self.table.as_mut() {
                table.index = Some(info);
            }
        } else if !t.hnsw && !t.dense {
            let sql = format!("ANALYZE {}", t.table);
            self.pg
                .with_conn("analyze", |conn| Ok(conn.client.batch_execute(&sql)?))?;
        }
        Ok(())
    }

    /// The plan check of the sparse search: label → (uses the index, plan) as a JSON map, and
    /// the labels whose plan scans the table.
    fn sparse_plans(&self, t: &SparseTable) -> EngineResult<(Map<String, Value>, Vec<String>)> {
        let probe = t.probe();
        let plans = self.pg.explain_sets(
            IndexKind::Hnsw,
            &t.index_name,
            |_| t.search_sql(1, EXPLAIN_K),
            &[&probe],
        )?;
        let mut map = Map::new();
        let mut scans = Vec::new();
        for (label, uses_index, plan) in plans {
            if !uses_index {
                scans.push(label.clone());
            }
            map.insert(label, json!({ "uses_index": uses_index, "plan": plan }));
        }
        Ok((map, scans))
    }
}

impl HybridEngine for PgHybrid {
    fn name(&self) -> &str {
        ENGINE
    }

    fn version(&self) -> String {
        self.pg.version.clone()
    }

    fn capabilities(&self) -> HybridCapabilities {
        HybridCapabilities::SPARSE_AND_DENSE_FUSED
    }

    /// The dense engine's parameters, which set both indexes' scans; IVFFlat's `probes` has
    /// no index here.
    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        if params.contains_key("probes") {
            return Err(bad_param(
                "probes",
                "an IVFFlat setting; the indexes of a sparse or hybrid table are HNSW",
            ));
        }
        VectorEngine::set_search_params(&mut self.pg, params)?;
        self.check_rerank("search", self.pg.search.rerank)
    }

    fn create(&mut self, spec: &HybridSpec) -> EngineResult<()> {
        let (hnsw, build) = sparse::parse_build(&spec.build_params, spec.dense.is_some())?;
        let dim = match i32::try_from(spec.sparse_dim) {
            Ok(d) if (1..=MAX_SPARSE_DIM).contains(&spec.sparse_dim) => d,
            _ => {
                return Err(EngineError::op(
                    ENGINE,
                    "create",
                    format!(
                        "{} sparse dimensions are outside pgvector's range 1..={MAX_SPARSE_DIM}",
                        spec.sparse_dim
                    ),
                ));
            }
        };
        let mut t = SparseTable {
            name: spec.name.clone(),
            table: quote_ident(&spec.name),
            dim,
            hnsw,
            index_name: index_name(&format!("{}_sparse", spec.name)),
            build,
            index: None,
            probe: None,
            plans: Map::new(),
            dense: spec.dense.is_some(),
        };
        self.table = Some(t.clone());
        for (label, params) in &self.pg.checked {
            self.check_rerank(label, params.rerank)?;
        }
        self.pg.check_maintenance_work_mem(&t.build)?;
        self.dense_collection(spec, &t)?;
        let mut columns = t.column_ddl();
        if let Some(col) = &self.pg.collection {
            columns.push_str(&format!(
                ", embedding {}({}) NOT NULL",
                col.build.vec_type.name(),
                col.dim
            ));
        }
        t.table = self.pg.create_table(&spec.name, &columns)?;
        self.table = Some(t);
        // Sessions prepare their statements again, for this table.
        self.pg.generation += 1;
        Ok(())
    }

    /// Binary `COPY` of `(id, sparse[, embedding])`, split into up to `upload_parallel`
    /// concurrent streams as the dense engine loads.
    fn insert(&mut self, data: &HybridData<'_>, rows: Range<usize>) -> EngineResult<()> {
        let t = self.table("bulk insert")?;
        if rows.is_empty() {
            return Ok(());
        }
        check_rows(data.sparse, rows.clone(), t.hnsw)?;
        let dense = match (&self.pg.collection, data.dense) {
            (None, _) => None,
            (Some(col), Some(vectors)) if vectors.dim() == col.dim => {
                Some((vectors, col.build.vec_type))
            }
            (Some(col), other) => {
                return Err(EngineError::op(
                    ENGINE,
                    "bulk insert",
                    format!(
                        "the table's vector column has {} dimensions, the data {}",
                        col.dim,
                        other.map_or("no vectors".into(), |v| format!("{}-d vectors", v.dim()))
                    ),
                ));
            }
        };
        let sql = format!(
            "COPY {} (id, sparse{}) FROM STDIN (FORMAT BINARY)",
            t.table,
            if dense.is_some() { ", embedding" } else { "" }
        );
        let start = rows.start;
        self.pg
            .parallel_ranges(rows.len(), "bulk insert", |range| {
                let part = start + range.start..start + range.end;
                let encoded = encode_rows(data.sparse, t.dim, dense, part)?;
                self.pg.copy_in(&sql, &encoded)
            })?;
        let probe = rows
            .clone()
            .map(|r| data.sparse.entries(r))
            .find(|row| row.values.iter().any(|v| *v != 0.0));
        if let Some(t) = self.table.as_mut()
            && t.probe.is_none()
            && let Some(row) = probe
        {
            t.probe = Some((row.indices.to_vec(), row.values.to_vec()));
        }
        if let (Some(col), Some((vectors, _))) = (self.pg.collection.as_mut(), dense)
            && col.probe.is_none()
        {
            col.probe = Some(vectors.row(rows.start).to_vec());
        }
        Ok(())
    }

    /// The sparse index, then the vector one and its plan check (the dense engine's), then
    /// the plan check of the sparse search under every search-parameter set.
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        let t = self.table("wait for index")?.clone();
        self.build_sparse_index(&t)?;
        let dense = match self.pg.collection.is_some() {
            true => Some(VectorEngine::wait_until_ready(&mut self.pg)?),
            false => None,
        };
        let points = match dense.as_ref().and_then(|d| d.points) {
            Some(p) => p,
            None => self.pg.count_rows(&t.table)?,
        };
        let t = self.table("wait for index")?.clone();
        let mut sparse = Map::new();
        sparse.insert("column".into(), format!("sparsevec({})", t.dim).into());
        let mut may_full_scan = dense.as_ref().is_some_and(|d| d.may_full_scan);
        let mut details = Map::new();
        if t.hnsw {
            let (plans, scans) = self.sparse_plans(&t)?;
            if !scans.is_empty() {
                may_full_scan = true;
                details.insert(
                    "full_scan_reason".into(),
                    format!(
                        "PostgreSQL plans the sparse search without its HNSW index (exact \
                         results at scan speed) for search parameters: {}. Its cost estimate \
                         prefers a scan on small tables; search parameter seqscan=false makes \
                         it use the index",
                        scans.join("; ")
                    )
                    .into(),
                );
            }
            sparse.insert("index".into(), t.index_name.clone().into());
            sparse.insert("plans".into(), Value::Object(plans.clone()));
            sparse.insert("explain_k".into(), EXPLAIN_K.into());
            if let Some(info) = &t.index {
                sparse.insert("index_build_s".into(), info.build_s.into());
                sparse.insert("notices".into(), json!(info.notices));
            }
            if let Some(table) = self.table.as_mut() {
                table.plans = plans;
            }
        } else {
            sparse.insert("index".into(), "none: every search an exact sequential scan".into());
        }
        details.insert("sparse".into(), Value::Object(sparse));
        if let Some(d) = dense {
            details.insert("dense".into(), Value::Object(d.details));
        }
        Ok(IndexReport {
            // CREATE INDEX covers every row (of the sparse column, when it has one).
            indexed_vectors: Some(if t.hnsw { points } else { 0 }),
            points: Some(points),
            may_full_scan,
            details,
        })
    }

    fn search_lexical(
        &self,
        query: &HybridQuery<'_>,
        k: usize,
        out: &mut Vec<Neighbor>,
    ) -> EngineResult<()> {
        out.clear();
        let t = self.table("sparse search")?;
        if k == 0 {
            return Ok(());
        }
        let limit = i64::try_from(k).unwrap_or(i64::MAX);
        let param = SparseParam {
            dim: t.dim,
            row: query.sparse,
        };
        let rows = self.query("sparse search", &t.search_sql(1, limit), &[&param])?;
        // `<#>` is the negated inner product.
        super::neighbors_into(rows, -1.0, "sparse search", out)?;
        // A scan (or a graph walk) also yields rows of inner product 0, which share no
        // dimension with the query: an inverted index never returns them, and the exact
        // sparse truth holds none, so they are dropped here rather than fused as matches.
        out.retain(|n| n.score != 0.0);
        Ok(())
    }

    /// The dense engine's search; its distances (smaller is closer) negated into scores that
    /// grow with similarity.
    fn search_dense(&self, query: &[f32], k: usize, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        if self.pg.collection.is_none() {
            return Err(self.unsupported("dense search in a sparse-only table"));
        }
        VectorEngine::search(&self.pg, Query::new(query, k), out)?;
        out.iter_mut().for_each(|n| n.score = -n.score);
        Ok(())
    }

    fn search_fused(
        &self,
        query: &HybridQuery<'_>,
        depth: usize,
        fusion: Fusion,
        k: usize,
        out: &mut Vec<Neighbor>,
    ) -> EngineResult<()> {
        out.clear();
        let t = self.table("fused search")?;
        let col = self.pg.collection("fused search")?;
        let (Fusion::Rrf { k: c }, Some(dense)) = (fusion, query.dense) else {
            return Err(self.unsupported("fusion other than RRF inside the engine"));
        };
        crate::adapters::support::rows::check(ENGINE, "fused search", col.dim, 1, dense.len())?;
        if k == 0 {
            return Ok(());
        }
        let depth = i64::try_from(depth).unwrap_or(i64::MAX);
        let limit = i64::try_from(k).unwrap_or(i64::MAX);
        let rerank = col.rerank(&self.pg.search, depth as usize);
        let sql = t.fused_sql(col, (depth, rerank), c, limit);
        let vector = Vector::from(dense.to_vec());
        let sparse = SparseParam {
            dim: t.dim,
            row: query.sparse,
        };
        let rows = self.query("fused search", &sql, &[&vector, &sparse])?;
        super::neighbors_into(rows, 1.0, "fused search", out)
    }

    /// Index: `pg_relation_size` of the sparse HNSW index plus, in a hybrid table, the vector
    /// one. Total: `pg_total_relation_size` of the table (heap + TOAST + every index).
    fn footprint(&self) -> EngineResult<Footprint> {
        let t = self.table("footprint")?;
        let gone = |what: &str| format!("{what} not found in the catalog");
        let mut parts = Vec::new();
        if t.index.is_some() {
            parts.push(("sparse HNSW index", t.index_name.clone()));
        }
        if let Some(col) = self.pg.collection.as_ref().filter(|c| c.index.is_some()) {
            parts.push(("vector index", col.index_name.clone()));
        }
        let index = if parts.is_empty() {
            Err("no index: every sparse search is a sequential scan".to_string())
        } else {
            let mut bytes = 0;
            let mut found = Ok(());
            for (what, name) in &parts {
                match self.pg.relation_size("pg_relation_size", &quote_ident(name))? {
                    Some(b) => bytes += b,
                    None => found = Err(gone(what)),
                }
            }
            let names: Vec<String> = parts.iter().map(|(w, _)| format!("pg_relation_size({w})")).collect();
            found.map(|()| SourcedBytes {
                bytes,
                source: names.join(" + "),
            })
        };
        let total = self
            .pg
            .relation_size("pg_total_relation_size", &t.table)?
            .map(|bytes| SourcedBytes {
                bytes,
                source: "pg_total_relation_size(table): heap + TOAST + indexes (WAL excluded)"
                    .into(),
            })
            .ok_or_else(|| gone("the table"));
        let footprint = Footprint::new(index, total);
        // pgvector's HNSW pages carry each vector beside its links.
        Ok(if parts.is_empty() {
            footprint
        } else {
            footprint.holding(IndexHolds::GraphAndVectors)
        })
    }

    fn server_pid(&self) -> Option<u32> {
        self.pg.server_pid
    }

    /// The dense engine's facts (server, search settings, the vector column's index and
    /// plans), and the sparse column's under `sparse`.
    fn describe(&self) -> Map<String, Value> {
        let mut m = self.pg.describe_engine();
        let Some(t) = &self.table else {
            return m;
        };
        m.insert("table".into(), t.name.clone().into());
        let mut s = Map::new();
        s.insert("column".into(), format!("sparsevec({})", t.dim).into());
        s.insert("operator".into(), "<#> (negated inner product)".into());
        s.insert(
            "index".into(),
            if t.hnsw { t.index_name.clone() } else { "none".into() }.into(),
        );
        if let Some(info) = &t.index {
            s.insert("index_definition".into(), info.definition.clone().into());
            s.insert("index_build_s".into(), info.build_s.into());
            s.insert("index_notices".into(), json!(info.notices));
            match self.pg.relation_size("pg_relation_size", &quote_ident(&t.index_name)) {
                Ok(bytes) => s.insert("index_bytes".into(), json!(bytes)),
                Err(e) => s.insert("index_bytes_error".into(), e.to_string().into()),
            };
        }
        if !t.plans.is_empty() {
            s.insert("plans".into(), Value::Object(t.plans.clone()));
        }
        m.insert("sparse".into(), Value::Object(s));
        m
    }

    /// Drops the table and closes every session.
    fn close(&mut self) -> EngineResult<()> {
        let dropped = match self.table.take() {
            Some(t) => {
                let sql = format!("DROP TABLE IF EXISTS {}", t.table);
                self.pg
                    .with_conn("close", |conn| Ok(conn.client.batch_execute(&sql)?))
            }
            None => Ok(()),
        };
        // The table is gone: the dense engine has nothing left to drop, only sessions.
        self.pg.collection = None;
        let closed = VectorEngine::close(&mut self.pg);
        dropped.and(closed)
    }
}
