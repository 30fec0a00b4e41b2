//! `seekdb`: OceanBase seekdb, a MySQL-protocol server with vector indexes built by VSAG
//! (HNSW, HNSW with scalar or binary quantization, IVF-Flat/SQ8/PQ), driven through the
//! `mysql` crate with prepared statements and one pooled connection per searching thread.
//!
//! Facts about the engine that shape this adapter (seekdb 1.4, the release
//! `scripts/servers/seekdb.sh` installs):
//!
//! - A collection is a table `(id BIGINT PRIMARY KEY, embedding VECTOR(dim), attributes...)`.
//!   The rows are loaded first and the vector index is created after the load
//!   (`CREATE VECTOR INDEX ... WITH (distance=..., type=...)`), the vendor's advice for bulk
//!   loads: `wait_until_ready` times that build.
//! - A search is `SELECT id, l2_distance(embedding, ?) AS d FROM t ORDER BY d APPROXIMATE
//!   LIMIT k`: `APPROXIMATE` sends it through the vector index (`EXPLAIN` says `VECTOR INDEX
//!   SCAN`); with a `WHERE` clause seekdb picks an adaptive scan that filters before or
//!   after the index.
//! - Search effort is a session variable (`ob_hnsw_ef_search`, `ob_ivf_nprobes`): each pooled
//!   connection is set again when the settings change.
//! - Writes after the build enter the index when they commit (an incremental index beside
//!   the built one, merged in the background): a search after the write sees it.
//!
//! Without `--url` the adapter runs `scripts/servers/seekdb.sh start` (idempotent) and uses
//! the unix socket it prints. The server is left running; `scripts/servers/seekdb.sh stop`
//! stops it.
//!
//! Files: `conn` (URL, sessions, errors), `sql` (statements), `params` (build and search
//! parameters), `size` (the footprint); the trait impl is here.

use mysql::prelude::Queryable;
use mysql::{Opts, Value as Sql};
use serde_json::{Map, Value, json};

use crate::adapters::support::filter as support_filter;
use crate::adapters::support::pool::IdlePool;
use crate::adapters::support::{process, rows, upload};
use crate::engine::{
    CollectionSpec, ConcurrentWrites, ConnectOptions, EngineError, EngineResult, Footprint,
    IndexReport, Neighbor, PointId, Query, VectorEngine,
};
use crate::filter::{Attributes, Predicate};
use crate::params::ParamMap;

mod conn;
mod params;
mod size;
mod sql;

use conn::{LOCAL_SERVER, Session};
use params::{BuildSettings, SearchSettings};
use sql::Table;

const ENGINE: &str = crate::adapters::meta::seekdb::NAME;

/// The vector index's name: index names are per table (and at most 25 characters).
const INDEX_NAME: &str = "embedding_vi";

/// Rows per `INSERT` when `--batch-size` is not given.
const DEFAULT_BATCH: usize = 500;

/// Connects to the seekdb server at `opts.url`, or starts the project's local one when no
/// URL is given.
pub fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(SeekDb::connect(opts)?))
}

/// A seekdb server and the collection under test.
pub struct SeekDb {
    opts: Opts,
    url: String,
    version: String,
    recreate: bool,
    batch_size: usize,
    upload_parallel: usize,
    server_pid: Option<u32>,
    started_by_adapter: bool,
    pool: IdlePool<Session>,
    search: SearchSettings,
    /// Bumped by every change of `search`: a session set to an older one is set again.
    generation: u64,
    table: Option<Table>,
    /// Whether the vector index of `table` exists.
    indexed: bool,
}

impl SeekDb {
    fn connect(opts: &ConnectOptions) -> EngineResult<SeekDb> {
        let (url, started_by_adapter) = match &opts.url {
            Some(u) => (u.trim().to_string(), false),
            None => (LOCAL_SERVER.start()?, true),
        };
        let mysql_opts = conn::options(&url, opts.api_key.as_deref(), opts.timeout)?;
        let mut first = conn::first_connection(&mysql_opts, &url)?;
        let version: String = first
            .query_first("SELECT version()")
            .map_err(|e| conn::failed("connect", &e))?
            .unwrap_or_default();
        if !version.contains("OceanBase") {
            return Err(EngineError::op(
                ENGINE,
                "connect",
                format!("the server is `{version}`, not OceanBase seekdb"),
            ));
        }
        let pool = IdlePool::new(64);
        pool.give_back(Session {
            conn: first,
            generation: u64::MAX,
        });
        Ok(SeekDb {
            server_pid: opts.server_pid.or_else(|| script_pid(&url)),
            opts: mysql_opts,
            url,
            version,
            recreate: opts.recreate,
            batch_size: opts.batch_size_or(DEFAULT_BATCH),
            upload_parallel: opts.upload_parallel.max(1),
            started_by_adapter,
            pool,
            search: SearchSettings::default(),
            generation: 0,
            table: None,
            indexed: false,
        })
    }

    fn table(&self, operation: &str) -> EngineResult<&Table> {
        self.table
            .as_ref()
            .ok_or_else(|| EngineError::op(ENGINE, operation, "no collection: call create first"))
    }

    fn exists(&self, name: &str) -> EngineResult<bool> {
        let found: Option<String> = self.with_session("create", |c| {
            c.exec_first("SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?", (name,))
        })?;
        Ok(found.is_some())
    }

    /// `INSERT` or `REPLACE` of the rows, in statements of `batch_size` rows sent
    /// `upload_parallel` at a time.
    fn write(
        &self,
        verb: &str,
        operation: &str,
        ids: &[PointId],
        vectors: &[f32],
    ) -> EngineResult<()> {
        let table = self.table(operation)?;
        rows::check(ENGINE, operation, table.dim, ids.len(), vectors.len())?;
        let rows = rows_per_statement(self.batch_size, table.dim);
        let requests: Vec<(&[PointId], &[f32])> = ids
            .chunks(rows)
            .zip(vectors.chunks(rows * table.dim))
            .collect();
        upload::in_parallel(
            ENGINE,
            operation,
            self.upload_parallel,
            &requests,
            |(ids, vectors)| {
                let params = table.write_params(operation, ids, vectors)?;
                let statement = table.write_sql(verb, ids.len());
                self.with_session(operation, |c| c.exec_drop(&statement, params))
            },
        )
    }

    fn count(&self, operation: &str) -> EngineResult<u64> {
        let table = self.table(operation)?;
        let sql = format!("SELECT COUNT(*) FROM {}", sql::quote(&table.name));
        let n: Option<u64> = self.with_session(operation, |c| c.query_first(&sql))?;
        Ok(n.unwrap_or(0))
    }

    /// The vector index and the attribute indexes, on a connection without a read timeout.
    fn build_index(&self, table: &Table) -> EngineResult<()> {
        let mut c = conn::connect(&conn::untimed(&self.opts))
            .map_err(|e| conn::failed("build index", &e))?;
        // A DDL of another table on the same server can hold a lock past seekdb's lock wait
        // timeout (error 1205, seen with tests building side by side): tried three times.
        let mut attempt = 1;
        while let Err(e) = c.query_drop(table.create_index_sql()) {
            let lock_wait = matches!(&e, mysql::Error::MySqlError(m) if m.code == 1205);
            if !lock_wait || attempt == 3 {
                return Err(conn::failed("build index", &e));
            }
            attempt += 1;
        }
        for statement in table.attribute_index_sql() {
            c.query_drop(statement)
                .map_err(|e| conn::failed("build attribute index", &e))?;
        }
        // The built index is persisted, and read into memory by the first search that needs
        // it: one search here, so that the index is ready to serve when the build ends.
        c.exec_drop(
            &table.knn_sql,
            (sql::vector_text(&vec![0.0; table.dim]), 1u64),
        )
        .map_err(|e| conn::failed("load index", &e))
    }

    fn search_into(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        let op = query.operation();
        let table = self.table(op)?;
        query.check(ENGINE, table.dim)?;
        out.clear();
        if query.k == 0 {
            return Ok(());
        }
        let filtered = query.filter.map(sql::where_clause);
        let filtered_sql;
        let statement = match &filtered {
            Some((where_sql, _)) => {
                filtered_sql = table.search_sql(Some(where_sql));
                &filtered_sql
            }
            None => &table.knn_sql,
        };
        let mut params = Vec::with_capacity(2 + filtered.as_ref().map_or(0, |(_, v)| v.len()));
        params.push(Sql::Bytes(sql::vector_text(query.vector)));
        params.extend(filtered.into_iter().flat_map(|(_, values)| values));
        params.push(Sql::UInt(query.k as u64));
        self.with_session(op, |c| {
            c.exec_fold(statement, params, (), |(), (id, d): (i64, Option<f64>)| {
                out.push(Neighbor {
                    id: id as PointId,
                    score: d.map_or(f32::NAN, |d| d as f32),
                });
            })
        })
    }
}

/// Rows per `INSERT`: `batch_size`, fewer when their text would pass half of seekdb's
/// default `max_allowed_packet` (16 MiB; a float is at most 15 characters of text).
fn rows_per_statement(batch_size: usize, dim: usize) -> usize {
    const STATEMENT_BYTES: usize = 8 << 20;
    batch_size.min(STATEMENT_BYTES / (dim * 15 + 64)).max(1)
}

/// The pid of the script's server when `url` is the URL the script printed.
fn script_pid(url: &str) -> Option<u32> {
    let state = crate::adapters::support::http::script_state(ENGINE, url)?;
    process::pid_from_file(&state.join("pid")).filter(|&pid| process::is_alive(pid))
}

impl VectorEngine for SeekDb {
    fn name(&self) -> &str {
        ENGINE
    }

    fn version(&self) -> String {
        self.version.clone()
    }

    fn check_build_params(&self, spec: &CollectionSpec) -> EngineResult<()> {
        BuildSettings::parse(&spec.build_params).map(|_| ())
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        let build = BuildSettings::parse(&spec.build_params)?;
        if spec.dim == 0 {
            return Err(EngineError::bad_param(
                ENGINE,
                "dim",
                "dimension must be at least 1",
            ));
        }
        let mut table = Table {
            name: spec.name.clone(),
            index: INDEX_NAME.into(),
            dim: spec.dim,
            distance: spec.distance,
            build,
            attributes: spec.attributes.clone(),
            knn_sql: String::new(),
        };
        table.knn_sql = table.search_sql(None);
        if self.exists(&table.name)? {
            if !self.recreate {
                return Err(EngineError::op(
                    ENGINE,
                    "create",
                    format!(
                        "table `{}` already exists at {}; pass --recreate to drop it",
                        table.name,
                        crate::secret::redact(&self.url)
                    ),
                ));
            }
            let drop = format!("DROP TABLE {}", sql::quote(&table.name));
            self.with_session("create", |c| c.query_drop(&drop))?;
        }
        let create = table.create_sql();
        self.with_session("create", |c| c.query_drop(&create))?;
        self.table = Some(table);
        self.indexed = false;
        Ok(())
    }

    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.write("INSERT", "insert", ids, vectors)
    }

    /// Builds the vector index after the first load; afterwards only counts (writes enter
    /// the index as they commit).
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        if !self.indexed {
            self.build_index(self.table("build index")?)?;
            self.indexed = true;
        }
        let points = self.count("wait for index")?;
        let table = self.table("wait for index")?;
        let mut details = Map::new();
        details.insert("table".into(), json!(table.name));
        details.insert("index".into(), json!(table.create_index_sql()));
        Ok(IndexReport {
            indexed_vectors: Some(points),
            points: Some(points),
            may_full_scan: false,
            details,
        })
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        let search = SearchSettings::parse(params)?;
        if search != self.search {
            self.search = search;
            self.generation += 1;
        }
        Ok(())
    }

    fn search(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        self.search_into(query, out)
    }

    fn check_filter(&self, attributes: &Attributes, predicate: &Predicate) -> EngineResult<()> {
        support_filter::check(ENGINE, attributes, predicate)
    }

    fn footprint(&self) -> EngineResult<Footprint> {
        self.measure_footprint()
    }

    fn server_pid(&self) -> Option<u32> {
        self.server_pid
    }

    fn concurrent_writes(&self) -> Option<&dyn ConcurrentWrites> {
        Some(self)
    }

    fn describe(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("server_version".into(), json!(self.version));
        out.insert("url".into(), json!(crate::secret::redact(&self.url)));
        out.insert(
            "transport".into(),
            json!(format!(
                "MySQL protocol (mysql crate), {}",
                conn::target(&self.opts)
            )),
        );
        out.insert("started_by_adapter".into(), json!(self.started_by_adapter));
        out.insert("batch_size".into(), json!(self.batch_size));
        out.insert("upload_parallel".into(), json!(self.upload_parallel));
        out.insert("search_session".into(), json!(self.search.session_sql()));
        if let Some(table) = &self.table {
            out.insert("table".into(), json!(table.name));
            out.insert("index".into(), json!(table.create_index_sql()));
        }
        out
    }

    /// Drops the table (the server keeps running).
    fn close(&mut self) -> EngineResult<()> {
        if let Some(table) = self.table.take() {
            let drop = format!("DROP TABLE IF EXISTS {}", sql::quote(&table.name));
            self.with_session("close", |c| c.query_drop(&drop))?;
        }
        self.pool.clear();
        Ok(())
    }
}

impl ConcurrentWrites for SeekDb {
    fn upsert(&self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.write("REPLACE", "upsert", ids, vectors)
    }

    fn delete(&self, ids: &[PointId]) -> EngineResult<()> {
        let table = self.table("delete")?;
        let params: Vec<Sql> = ids
            .iter()
            .map(|id| sql::sql_id(*id).map(Sql::Int))
            .collect::<EngineResult<_>>()?;
        let requests: Vec<&[Sql]> = params.chunks(self.batch_size).collect();
        upload::in_parallel(ENGINE, "delete", self.upload_parallel, &requests, |chunk| {
            let statement = table.delete_sql(chunk.len());
            self.with_session("delete", |c| c.exec_drop(&statement, chunk.to_vec()))
        })
    }
}
