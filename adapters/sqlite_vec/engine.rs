//! The engine: [`SqliteVec`] and its trait impls.

use std::path::PathBuf;

use serde_json::{Map, Value, json};

use crate::engine::{Query, CollectionSpec, ConcurrentWrites, ConnectOptions, EngineError, EngineResult, Footprint, IndexReport, Neighbor, PointId, VectorEngine};
use crate::filter::{Attributes, Predicate};
use crate::params::ParamMap;

use super::collection::{Collection, Write};
use super::params::{BuildSettings, SearchSettings};
use super::{ENGINE, conn, sql};

/// Subdirectory of the work directory that holds the database, its WAL and nothing else:
/// named after the engine.
const DB_DIR: &str = ENGINE;

/// sqlite-vec under test.
pub struct SqliteVec {
    recreate: bool,
    /// `vec_version()` and `sqlite_version()` of the linked library.
    versions: (String, String),
    collection: Option<Collection>,
    search: SearchSettings,
}

impl SqliteVec {
    /// The adapter as a concrete type (`open` boxes it); the overhead bench uses it to reach
    /// [`SqliteVec::library_search_loop`].
    pub fn new(opts: &ConnectOptions) -> EngineResult<SqliteVec> {
        let versions = conn::versions().map_err(|e| EngineError::op(ENGINE, "open", e))?;
        Ok(SqliteVec {
            recreate: opts.recreate,
            versions,
            collection: None,
            search: SearchSettings::default(),
        })
    }

    /// The engine's own query loop, with no adapter around it: one prepared
    /// `SELECT rowid, distance FROM vectors WHERE embedding MATCH ? AND k = ?` per row of
    /// `queries` on one connection, rows read and dropped. `benches/engine_overhead.rs`
    /// compares ragdbeval's single-client loop with it.
    fn library_search_loop(&self, queries: &[f32], k: usize) -> EngineResult<usize> {
        let c = self.collection("search")?;
        c.with_reader("search", |reader| {
            let mut stmt = reader.prepare_cached(&format!(
                "SELECT rowid, distance FROM {} WHERE embedding MATCH ?1 AND k = ?2",
                sql::TABLE
            ))?;
            let mut returned = 0;
            let mut blob = Vec::with_capacity(c.dim * 4);
            for q in queries.chunks_exact(c.dim) {
                blob.clear();
                blob.extend(q.iter().flat_map(|x| x.to_le_bytes()));
                let mut rows = stmt.query(rusqlite::params![blob, k as i64])?;
                while let Some(row) = rows.next()? {
                    let _: (i64, f64) = (row.get(0)?, row.get(1)?);
                    returned += 1;
                }
            }
            Ok(returned)
        })
    }

    pub(super) fn collection(&self, operation: &str) -> EngineResult<&Collection> {
        self.collection.as_ref().ok_or_else(|| {
            EngineError::op(ENGINE, operation, "no collection: create() was not called")
        })
    }

    /// Removes the database directory of an earlier run, when allowed.
    fn clear_dir(&mut self, dir: &PathBuf) -> EngineResult<()> {
        if !dir.exists() {
            return Ok(());
        }
        if !self.recreate {
            return Err(EngineError::op(
                ENGINE,
                "create",
                format!("{} already exists; use --recreate to replace it", dir.display()),
            ));
        }
        // Close our own connections to it before deleting its files.
        self.collection = None;
        std::fs::remove_dir_all(dir).map_err(|e| {
            EngineError::op(ENGINE, "create", format!("removing {}: {e}", dir.display()))
        })
    }
}

impl ConcurrentWrites for SqliteVec {
    fn upsert(&self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.collection("upsert")?.write(Write::Upsert, ids, vectors)
    }

    fn delete(&self, ids: &[PointId]) -> EngineResult<()> {
        self.collection("delete")?.delete(ids)
    }
}

impl VectorEngine for SqliteVec {
    fn native_query_loop(&self, queries: &[f32], k: usize) -> Option<EngineResult<usize>> {
        Some(self.library_search_loop(queries, k))
    }

    fn name(&self) -> &str {
        ENGINE
    }

    fn version(&self) -> String {
        format!("sqlite-vec {} (SQLite {})", self.versions.0, self.versions.1)
    }

    fn check_build_params(&self, spec: &CollectionSpec) -> EngineResult<()> {
        let settings = BuildSettings::for_collection(spec)?;
        sql::create_table(spec.dim, &settings, spec.attributes.as_deref()).map(|_| ())
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        let settings = BuildSettings::for_collection(spec)?;
        let dir = spec.work_dir.join(DB_DIR);
        self.clear_dir(&dir)?;
        // Search settings checked against another collection do not carry over.
        self.search = SearchSettings::default();
        self.collection = Some(Collection::create(
            dir,
            spec.dim,
            settings,
            spec.attributes.clone(),
        )?);
        Ok(())
    }

    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.collection("insert")?.write(Write::Insert, ids, vectors)
    }

    /// vec0 has nothing to build: rows are searchable once committed. Reports the row count
    /// and the plan that shows the KNN goes through vec0.
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        let c = self.collection("ready")?;
        let points = c.rows()?;
        let mut details = self.describe();
        details.insert("rows".into(), json!(points));
        Ok(IndexReport {
            indexed_vectors: Some(0),
            points: Some(points),
            may_full_scan: false,
            details,
        })
    }

    fn upsert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.collection("upsert")?.write(Write::Upsert, ids, vectors)
    }

    fn delete_batch(&mut self, ids: &[PointId]) -> EngineResult<()> {
        self.collection("delete")?.delete(ids)
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        let quantized = self.collection.as_ref().map(|c| c.settings.quantized());
        self.search = SearchSettings::parse(params, quantized)?;
        Ok(())
    }

    fn search(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        let c = self.collection(query.operation())?;
        let filtered = query.filter.is_some_and(|f| !f.all.is_empty());
        if c.attributes.is_none() && filtered {
            return Err(EngineError::op(
                ENGINE,
                "filtered search",
                "the collection has no attributes",
            ));
        }
        c.search(self.search, query, out)
    }

    /// Keyword equality and integer ranges, as vec0 metadata constraints.
    fn check_filter(&self, attributes: &Attributes, predicate: &Predicate) -> EngineResult<()> {
        sql::check_filter(attributes, predicate)
    }

    /// Index: none, vec0 scans every vector. Total: the database directory (database file,
    /// WAL and its index), which holds this collection only.
    fn footprint(&self) -> EngineResult<Footprint> {
        let c = self.collection("footprint")?;
        let total = crate::storage::dir_bytes(
            ENGINE,
            &c.dir,
            "database directory: vec0 table (vectors, metadata, rowids) + WAL",
        )?;
        Ok(Footprint::new(
            Err("no index structure: vec0 scans every stored vector".into()),
            Ok(total),
        ))
    }

    /// Writes commit on the writer connection while searches read on their own (WAL).
    fn concurrent_writes(&self) -> Option<&dyn ConcurrentWrites> {
        Some(self)
    }

    fn describe(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("vec_version".into(), json!(self.versions.0));
        out.insert("sqlite_version".into(), json!(self.versions.1));
        let Some(c) = &self.collection else {
            return out;
        };
        out.insert("build".into(), Value::Object(c.settings.to_json()));
        out.insert("search_params".into(), self.search.to_json());
        let facts = c.details().and_then(|mut d| {
            d.insert("rows".into(), json!(c.rows()?));
            let plan = c.query_plan(self.search)?;
            d.insert("knn_plan_is_vec0".into(), json!(Collection::plan_is_knn(&plan)));
            d.insert("query_plan".into(), json!(plan));
            Ok(d)
        });
        match facts {
            Ok(d) => out.extend(d),
            Err(e) => {
                out.insert("details_error".into(), json!(e.to_string()));
            }
        }
        out
    }

    fn close(&mut self) -> EngineResult<()> {
        if let Some(c) = self.collection.take() {
            c.close_readers();
        }
        Ok(())
    }
}
