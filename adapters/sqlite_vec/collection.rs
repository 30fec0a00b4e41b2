//! One collection: a database file in the run's work directory holding one `vec0` table,
//! its writer connection and the idle reader connections of the searching threads.
//!
//! Writes go through the writer connection (SQLite has one writer at a time), one
//! transaction per call, with prepared statements. Searches take a reader connection of
//! their own from the pool, so client threads search side by side, and a writer can commit
//! while they read (WAL).

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, params, params_from_iter};
use serde_json::{Map, Value, json};

use super::params::{BuildSettings, MAX_K, SearchSettings};
use super::sql::{self, KnnShape};
use super::{ENGINE, conn};
use crate::adapters::support::pool::IdlePool;
use crate::adapters::support::rows;
use crate::engine::{EngineError, EngineResult, Neighbor, PointId, Query};
use crate::filter::{Attributes, Predicate, Value as AttrValue};

/// Idle reader connections kept for reuse; more concurrent searchers open their own.
const MAX_IDLE_READERS: usize = 64;

pub(super) struct Collection {
    /// The directory that holds the database and its WAL, and nothing else.
    pub dir: PathBuf,
    pub path: PathBuf,
    pub dim: usize,
    pub settings: BuildSettings,
    pub attributes: Option<Arc<Attributes>>,
    writer: Mutex<Connection>,
    readers: IdlePool<Connection>,
}

/// What a write does to each row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Write {
    /// New rows (bulk load): a plain `INSERT`; an id already there is an error.
    Insert,
    /// Replace the vector where the row exists, else `INSERT`. Float32 tables update the row
    /// in place; quantized ones delete it and insert it anew, because vec0's `UPDATE` reads
    /// every new vector as float32 (the subtype that marks `int8` or `bit` is lost on the
    /// way), so it refuses the quantized copy.
    Upsert,
}

fn sql_err(operation: &str) -> impl Fn(rusqlite::Error) -> EngineError + '_ {
    move |e| EngineError::op(ENGINE, operation, e)
}

/// The rowid of point `id` (SQLite rowids are signed 64-bit).
fn rowid(id: PointId) -> EngineResult<i64> {
    i64::try_from(id)
        .map_err(|_| EngineError::op(ENGINE, "write", format!("id {id} exceeds SQLite's rowid range")))
}

/// A float32 vector as the little-endian blob vec0 reads.
fn blob_into(buf: &mut Vec<u8>, vector: &[f32]) {
    buf.clear();
    buf.extend(vector.iter().flat_map(|x| x.to_le_bytes()));
}

impl Collection {
    /// Creates the database file and its vec0 table.
    pub fn create(
        dir: PathBuf,
        dim: usize,
        settings: BuildSettings,
        attributes: Option<Arc<Attributes>>,
    ) -> EngineResult<Collection> {
        std::fs::create_dir_all(&dir).map_err(|e| {
            EngineError::op(ENGINE, "create", format!("creating {}: {e}", dir.display()))
        })?;
        let path = dir.join("collection.db");
        let writer = conn::open(&path, &settings).map_err(|e| EngineError::op(ENGINE, "create", e))?;
        let ddl = sql::create_table(dim, &settings, attributes.as_deref())?;
        writer.execute_batch(&ddl).map_err(sql_err("create"))?;
        Ok(Collection {
            dir,
            path,
            dim,
            settings,
            attributes,
            writer: Mutex::new(writer),
            readers: IdlePool::new(MAX_IDLE_READERS),
        })
    }

    fn writer(&self) -> EngineResult<MutexGuard<'_, Connection>> {
        self.writer
            .lock()
            .map_err(|_| EngineError::op(ENGINE, "write", "a writer panicked holding the connection"))
    }

    /// Runs `f` on a reader connection of this thread's own (an idle one, or a new one).
    pub fn with_reader<T>(
        &self,
        operation: &str,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> EngineResult<T> {
        let reader = match self.readers.take() {
            Some(c) => c,
            None => conn::open(&self.path, &self.settings)
                .map_err(|e| EngineError::op(ENGINE, operation, e))?,
        };
        let result = f(&reader).map_err(sql_err(operation));
        // A failed statement leaves the connection usable: SQLite rolls the statement back.
        self.readers.give_back(reader);
        result
    }

    /// Inserts or upserts `ids` with `vectors`, in one transaction.
    pub fn write(&self, mode: Write, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let operation = match mode {
            Write::Insert => "insert",
            Write::Upsert => "upsert",
        };
        rows::check(ENGINE, operation, self.dim, ids.len(), vectors.len())?;
        let mut writer = self.writer()?;
        let tx = writer.transaction().map_err(sql_err(operation))?;
        {
            let mut insert = tx
                .prepare_cached(&sql::insert(&self.settings, self.attributes.as_deref()))
                .map_err(sql_err(operation))?;
            let replace_sql = if self.settings.quantized() {
                sql::delete()
            } else {
                sql::update(&self.settings)
            };
            let mut replace = tx.prepare_cached(&replace_sql).map_err(sql_err(operation))?;
            let mut blob = Vec::with_capacity(self.dim * 4);
            let mut values: Vec<SqlValue> = Vec::new();
            for (&id, vector) in ids.iter().zip(vectors.chunks_exact(self.dim)) {
                let rowid = rowid(id)?;
                blob_into(&mut blob, vector);
                if mode == Write::Upsert {
                    if self.settings.quantized() {
                        replace.execute([rowid]).map_err(sql_err(operation))?;
                    } else if replace
                        .execute(params![rowid, blob])
                        .map_err(sql_err(operation))?
                        > 0
                    {
                        continue;
                    }
                }
                values.clear();
                values.push(SqlValue::Integer(rowid));
                values.push(SqlValue::Blob(blob.clone()));
                self.push_attributes(&mut values, id, operation)?;
                insert
                    .execute(params_from_iter(values.iter()))
                    .map_err(sql_err(operation))?;
            }
        }
        tx.commit().map_err(sql_err(operation))
    }

    /// Appends point `id`'s attribute values, in field order.
    fn push_attributes(&self, values: &mut Vec<SqlValue>, id: PointId, operation: &str) -> EngineResult<()> {
        let Some(attributes) = self.attributes.as_deref() else {
            return Ok(());
        };
        if !attributes.covers(id) {
            return Err(EngineError::op(ENGINE, operation, format!("point {id} has no attributes")));
        }
        values.extend(attributes.values_of(id).map(|(_, v)| match v {
            AttrValue::Keyword(s) => SqlValue::Text(s.to_string()),
            AttrValue::Integer(x) => SqlValue::Integer(x),
        }));
        Ok(())
    }

    /// Deletes `ids` (absent ones are no-ops), in one transaction.
    pub fn delete(&self, ids: &[PointId]) -> EngineResult<()> {
        let mut writer = self.writer()?;
        let tx = writer.transaction().map_err(sql_err("delete"))?;
        {
            let mut delete = tx.prepare_cached(&sql::delete()).map_err(sql_err("delete"))?;
            for &id in ids {
                delete.execute([rowid(id)?]).map_err(sql_err("delete"))?;
            }
        }
        tx.commit().map_err(sql_err("delete"))
    }

    pub fn shape(&self, search: SearchSettings) -> KnnShape {
        KnnShape {
            quantization: self.settings.quantization,
            rescore: self.settings.quantized() && search.rescore,
            metric: self.settings.metric,
        }
    }

    /// Top-`k` among the rows that pass `filter`, best first.
    pub fn search(
        &self,
        search: SearchSettings,
        query: Query<'_>,
        out: &mut Vec<Neighbor>,
    ) -> EngineResult<()> {
        if !query.start(ENGINE, self.dim, out)? {
            return Ok(());
        }
        let operation = query.operation();
        let unfiltered = Predicate::default();
        let filter = query.filter.unwrap_or(&unfiltered);
        let Query { vector: query, k, .. } = query;
        let shape = self.shape(search);
        let candidates = if shape.rescore { k.saturating_mul(search.oversample as usize) } else { k };
        if candidates > MAX_K {
            return Err(EngineError::bad_param(
                ENGINE,
                "k",
                format!("{candidates} candidates (k × oversample): vec0 returns at most {MAX_K}"),
            ));
        }
        let mut blob = Vec::with_capacity(self.dim * 4);
        blob_into(&mut blob, query);
        let mut values = vec![SqlValue::Blob(blob), SqlValue::Integer(candidates as i64)];
        if shape.rescore {
            values.push(SqlValue::Integer(k as i64));
        }
        values.extend(sql::filter_values(filter));
        let text = sql::knn(shape, filter);
        self.with_reader(operation, |reader| {
            let mut stmt = reader.prepare_cached(&text)?;
            let mut rows = stmt.query(params_from_iter(values.iter()))?;
            while let Some(row) = rows.next()? {
                let rowid: i64 = row.get(0)?;
                let score: f64 = row.get(1)?;
                let id = PointId::try_from(rowid)
                    .map_err(|_| rusqlite::Error::IntegralValueOutOfRange(0, rowid))?;
                out.push(Neighbor { id, score: score as f32 });
            }
            Ok(())
        })
    }

    /// Rows in vec0's rowid table: the points the collection holds.
    pub fn rows(&self) -> EngineResult<u64> {
        let count: i64 = self
            .writer()?
            .query_row(&format!("SELECT count(*) FROM {}_rowids", sql::TABLE), [], |r| r.get(0))
            .map_err(sql_err("count"))?;
        Ok(count as u64)
    }

    /// The query plan of the unfiltered KNN statement, one line per plan step.
    pub fn query_plan(&self, search: SearchSettings) -> EngineResult<String> {
        let text = format!("EXPLAIN QUERY PLAN {}", sql::knn(self.shape(search), &Predicate::default()));
        let writer = self.writer()?;
        let mut stmt = writer.prepare(&text).map_err(sql_err("query plan"))?;
        // Planning needs no values: every parameter is bound to NULL.
        let unbound = std::iter::repeat_n(SqlValue::Null, stmt.parameter_count());
        let lines = stmt
            .query_map(params_from_iter(unbound), |r| r.get::<_, String>(3))
            .map_err(sql_err("query plan"))?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(sql_err("query plan"))?;
        Ok(lines.join("; "))
    }

    /// Whether `plan` scans the vec0 table with its KNN plan: SQLite shows a virtual table's
    /// plan as `VIRTUAL TABLE INDEX <idxNum>:<idxStr>`, and vec0's idxStr starts with `3`
    /// for a KNN query (`1` full scan, `2` point lookup).
    pub fn plan_is_knn(plan: &str) -> bool {
        plan.split("VIRTUAL TABLE INDEX ")
            .skip(1)
            .any(|rest| rest.split_once(':').is_some_and(|(_, s)| s.starts_with('3')))
    }

    /// Facts of the database: versions, pages, journal and mapping in force.
    pub fn details(&self) -> EngineResult<Map<String, Value>> {
        let writer = self.writer()?;
        let pragma = |name: &str| conn::pragma_i64(&writer, name).map_err(sql_err("pragma"));
        let mut m = Map::new();
        m.insert("database".into(), json!(self.path.display().to_string()));
        m.insert("page_size".into(), json!(pragma("page_size")?));
        m.insert("page_count".into(), json!(pragma("page_count")?));
        m.insert("freelist_count".into(), json!(pragma("freelist_count")?));
        m.insert("mmap_size_in_force".into(), json!(pragma("mmap_size")?));
        let journal: String = writer
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .map_err(sql_err("pragma"))?;
        m.insert("journal_mode".into(), json!(journal));
        let chunks: i64 = writer
            .query_row(&format!("SELECT count(*) FROM {}_chunks", sql::TABLE), [], |r| r.get(0))
            .map_err(sql_err("count"))?;
        m.insert("vec0_chunks".into(), json!(chunks));
        Ok(m)
    }

    /// Closes every idle reader (the writer closes when the collection is dropped).
    pub fn close_readers(&self) {
        self.readers.clear();
    }
}
