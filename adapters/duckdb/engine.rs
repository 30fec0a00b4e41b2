//! The `duckdb` engine: [`VectorEngine`] over a [`Store`], searches on pooled per-thread
//! connections.

use std::path::{Path, PathBuf};

use ::duckdb::Connection;
use ::duckdb::types::Value as SqlValue;
use serde_json::{Map, Value, json};

use super::params::{BuildSettings, SearchSettings};
use super::sql::{Table, vector_text, where_clause};
use super::store::{Store, op_err, open_database};
use super::{ENGINE, report};
use crate::adapters::support::pool::IdlePool;
use crate::adapters::support::filter;
use crate::adapters::support::rows;
use crate::engine::{Query, CollectionSpec, ConcurrentWrites, ConnectOptions, EngineError, EngineResult, Footprint, IndexReport, Neighbor, PointId, VectorEngine};
use crate::filter::{Attributes, Predicate};
use crate::params::ParamMap;

/// The variable that names the vss extension file.
pub(super) const VSS_ENV: &str = "RAGDBEVAL_DUCKDB_VSS";

/// Where `scripts/install/duckdb.sh` puts the extension, in the clone this was built from.
const VSS_INSTALLED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/.deps/duckdb/vss.duckdb_extension"
);

/// The vss extension to load: `$RAGDBEVAL_DUCKDB_VSS`, else the installed one; an error
/// naming the install command when the file is not there.
pub(super) fn vss_path() -> EngineResult<PathBuf> {
    vss_path_from(std::env::var_os(VSS_ENV))
}

/// [`vss_path`] with `$RAGDBEVAL_DUCKDB_VSS` given.
pub(super) fn vss_path_from(var: Option<std::ffi::OsString>) -> EngineResult<PathBuf> {
    let (path, from) = match var.filter(|v| !v.is_empty()) {
        Some(p) => (PathBuf::from(p), format!("{VSS_ENV} names")),
        None => (
            PathBuf::from(VSS_INSTALLED),
            "the installed one,".to_string(),
        ),
    };
    if path.is_file() {
        Ok(path)
    } else {
        Err(EngineError::op(
            ENGINE,
            "open",
            format!(
                "the vss extension is missing: {from} {} is not a file; install it with \
                 `scripts/install/duckdb.sh` (or set {VSS_ENV} to a vss.duckdb_extension \
                 built for DuckDB 1.5.5)",
                path.display()
            ),
        ))
    }
}

pub(super) fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(DuckDb::open(opts)?))
}

impl DuckDb {
    /// The engine, with the vss extension found and loaded once to check it.
    pub fn open(_opts: &ConnectOptions) -> EngineResult<DuckDb> {
        let vss = vss_path()?;
        let conn = open_database(None, &vss)?;
        let version = conn
            .query_row(
                "SELECT version() || ', vss ' || coalesce((SELECT extension_version \
                 FROM duckdb_extensions() WHERE extension_name = 'vss'), '?')",
                [],
                |row| row.get::<_, String>(0),
            )
            .map_err(op_err("open"))?;
        Ok(DuckDb {
            vss,
            version: format!("DuckDB {version}"),
            search: SearchSettings::default(),
            store: None,
            pool: IdlePool::new(256),
            ready: Map::new(),
        })
    }

    /// The bare client loop the overhead bench holds ragdbeval's to: each of `queries` (rows
    /// of the collection's dimension) through one prepared `SELECT id … ORDER BY <distance>
    /// LIMIT k` on one search connection, the ids read; returns the rows read.
    fn library_search_loop(&self, queries: &[f32], k: usize) -> EngineResult<usize> {
        let store = self.store("search")?;
        let t = &store.table;
        let sql = format!(
            "SELECT id FROM {} ORDER BY {}(v, ?::FLOAT[{}]) LIMIT {k}",
            t.name,
            super::params::function(t.distance),
            t.dim
        );
        let sc = match self.pool.take() {
            Some(c) => c,
            None => self.new_search_conn(store)?,
        };
        let mut returned = 0;
        {
            let mut stmt = sc.conn.prepare_cached(&sql).map_err(op_err("search"))?;
            for q in queries.chunks_exact(t.dim) {
                let mut rows = stmt.query([vector_text(q)]).map_err(op_err("search"))?;
                while let Some(row) = rows.next().map_err(op_err("search"))? {
                    std::hint::black_box(row.get::<_, i64>(0).map_err(op_err("search"))?);
                    returned += 1;
                }
            }
        }
        self.pool.give_back(sc);
        Ok(returned)
    }
}

/// A search connection: its own prepared statements and settings, and the limits whose
/// plan it has checked.
pub(super) struct SearchConn {
    conn: Connection,
    checked: Vec<usize>,
}

pub struct DuckDb {
    vss: PathBuf,
    version: String,
    search: SearchSettings,
    store: Option<Store>,
    /// Idle search connections, all with the current search settings.
    pool: IdlePool<SearchConn>,
    /// What `wait_until_ready` found (index facts, the checked plan).
    ready: Map<String, Value>,
}

impl DuckDb {
    fn store(&self, op: &str) -> EngineResult<&Store> {
        self.store
            .as_ref()
            .ok_or_else(|| EngineError::op(ENGINE, op, "collection not created"))
    }

    /// A new search connection with the current search settings. Late materialization is
    /// off: with it DuckDB joins the index's top-k back to a scan of the whole table.
    fn new_search_conn(&self, store: &Store) -> EngineResult<SearchConn> {
        let conn = store.clone_conn()?;
        conn.execute_batch(&format!(
            "SET hnsw_ef_search = {}; SET late_materialization_max_rows = 0",
            self.search.ef_search
        ))
        .map_err(op_err("search settings"))?;
        Ok(SearchConn {
            conn,
            checked: Vec::new(),
        })
    }

    /// Runs `sql` with the query vector and `values` on an idle connection (or a new one).
    /// An unfiltered search with an index first checks, once per connection and `k`, that
    /// DuckDB answers it from the HNSW index.
    fn run(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        let op = query.operation();
        let store = self.store(op)?;
        if !query.start(ENGINE, store.table.dim, out)? {
            return Ok(());
        }
        let Query {
            vector: query,
            k,
            filter,
        } = query;
        let (where_sql, values) = match filter {
            Some(p) => {
                let (w, v) = where_clause(p);
                (Some(w), v)
            }
            None => (None, Vec::new()),
        };
        let sql = store.table.search_sql(k, where_sql.as_deref());
        let mut params = Vec::with_capacity(values.len() + 1);
        params.push(SqlValue::Text(vector_text(query)));
        params.extend(values);
        let mut sc = match self.pool.take() {
            Some(c) => c,
            None => self.new_search_conn(store)?,
        };
        if filter.is_none() && store.build.hnsw.is_some() && !sc.checked.contains(&k) {
            report::check_index_scan(&sc.conn, &sql, &params, &store.table)?;
            sc.checked.push(k);
        }
        let index_scan = filter.is_none() && store.build.hnsw.is_some();
        let result = if index_scan {
            let _exclusive = store.writing();
            query_into(&sc.conn, &sql, &params, out)
        } else {
            let _shared = store.searching();
            query_into(&sc.conn, &sql, &params, out)
        };
        result.map_err(op_err(op))?;
        self.pool.give_back(sc);
        Ok(())
    }
}

impl ConcurrentWrites for DuckDb {
    fn upsert(&self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let store = self.store("upsert")?;
        rows::check(ENGINE, "upsert", store.table.dim, ids.len(), vectors.len())?;
        store.upsert(ids, vectors)
    }

    fn delete(&self, ids: &[PointId]) -> EngineResult<()> {
        self.store("delete")?.delete(ids)
    }
}

/// Executes the prepared (cached) search and collects `(id, distance)` rows.
fn query_into(
    conn: &Connection,
    sql: &str,
    params: &[SqlValue],
    out: &mut Vec<Neighbor>,
) -> ::duckdb::Result<()> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query(::duckdb::params_from_iter(params))?;
    while let Some(row) = rows.next()? {
        let id: i64 = row.get(0)?;
        let score: f32 = row.get(1)?;
        out.push(Neighbor {
            id: id as PointId,
            score,
        });
    }
    Ok(())
}

/// The database file of an on-disk collection, its leftovers from an earlier run removed.
fn fresh_file(dir: &Path) -> EngineResult<PathBuf> {
    let file = dir.join("duckdb.db");
    for f in [file.clone(), dir.join("duckdb.db.wal")] {
        if f.exists() {
            std::fs::remove_file(&f)
                .map_err(|e| EngineError::op(ENGINE, "create", format!("{}: {e}", f.display())))?;
        }
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| EngineError::op(ENGINE, "create", format!("{}: {e}", dir.display())))?;
    Ok(file)
}

impl VectorEngine for DuckDb {
    fn native_query_loop(&self, queries: &[f32], k: usize) -> Option<EngineResult<usize>> {
        Some(self.library_search_loop(queries, k))
    }

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
        self.pool.clear();
        self.store = None;
        self.ready = Map::new();
        let file = if build.on_disk {
            Some(fresh_file(&spec.work_dir)?)
        } else {
            None
        };
        let conn = open_database(file.as_deref(), &self.vss)?;
        let table = Table::new(&spec.name, spec.dim, spec.distance);
        self.store = Some(Store::new(
            conn,
            table,
            build,
            spec.attributes.clone(),
            file,
        )?);
        Ok(())
    }

    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let store = self.store("bulk insert")?;
        rows::check(
            ENGINE,
            "bulk insert",
            store.table.dim,
            ids.len(),
            vectors.len(),
        )?;
        store.insert(ids, vectors)
    }

    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        let store = self.store("build index")?;
        let (report, details) = report::build_index(store)?;
        self.ready = details;
        Ok(report)
    }

    fn upsert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let store = self.store("upsert")?;
        rows::check(ENGINE, "upsert", store.table.dim, ids.len(), vectors.len())?;
        store.upsert(ids, vectors)
    }

    fn delete_batch(&mut self, ids: &[PointId]) -> EngineResult<()> {
        self.store("delete")?.delete(ids)
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        self.search = SearchSettings::parse(params)?;
        // Idle connections carry the old settings.
        self.pool.clear();
        Ok(())
    }

    /// Under a filter, a `WHERE` on the attribute columns: DuckDB scans the rows that pass
    /// and keeps the top `k` by distance (vss's index is not used under a filter), so results
    /// never break the filter and are exact.
    fn search(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        self.run(query, out)
    }

    fn check_filter(&self, attributes: &Attributes, predicate: &Predicate) -> EngineResult<()> {
        filter::check(ENGINE, attributes, predicate)
    }

    fn footprint(&self) -> EngineResult<Footprint> {
        report::footprint(self.store("footprint")?)
    }

    /// Writes go through the main connection, each in its own transaction, while searches
    /// run on their own connections: DuckDB's MVCC gives each search a snapshot, and vss
    /// guards its graph against concurrent updates and scans.
    fn concurrent_writes(&self) -> Option<&dyn ConcurrentWrites> {
        Some(self)
    }

    fn describe(&self) -> Map<String, Value> {
        let mut m = self.ready.clone();
        if let Some(store) = &self.store {
            m.insert("build".into(), store.build.to_json(store.table.distance));
        }
        m.insert(
            "search".into(),
            json!({ "ef_search": self.search.ef_search, "late_materialization_max_rows": 0 }),
        );
        m.insert(
            "filtered_search".into(),
            json!("scan of the rows that pass the WHERE, top k by distance (exact)"),
        );
        m
    }

    fn close(&mut self) -> EngineResult<()> {
        self.pool.clear();
        self.store = None;
        Ok(())
    }
}
