//! One collection in DuckDB: the database (memory or a file), its table, the bulk load
//! through the Appender, upserts and deletes in transactions, and the connections searches
//! run on.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use ::duckdb::arrow::array::{ArrayRef, FixedSizeListArray, Float32Array, Int64Array, StringArray};
use ::duckdb::arrow::datatypes::{DataType, Field, Schema};
use ::duckdb::arrow::record_batch::RecordBatch;
use ::duckdb::{Config, Connection};

use super::ENGINE;
use super::params::BuildSettings;
use super::sql::{Table, quote_ident};
use crate::engine::{EngineError, EngineResult, PointId};
use crate::filter::{Attributes, FieldKind, Value as AttrValue};

/// A DuckDB error during `operation`, as the engine's error.
pub(super) fn op_err(operation: &'static str) -> impl Fn(::duckdb::Error) -> EngineError {
    move |e| EngineError::op(ENGINE, operation, e)
}

/// Opens a database (a file, or memory) with DuckDB's extension autoloading and
/// autoinstalling off, and loads the vss extension from `vss`.
pub(super) fn open_database(file: Option<&Path>, vss: &Path) -> EngineResult<Connection> {
    let config = Config::default()
        .enable_autoload_extension(false)
        .and_then(|c| c.with("autoinstall_known_extensions", "false"))
        .map_err(op_err("open"))?;
    let conn = match file {
        Some(path) => Connection::open_with_flags(path, config),
        None => Connection::open_in_memory_with_flags(config),
    }
    .map_err(op_err("open"))?;
    let literal = vss.display().to_string().replace('\'', "''");
    conn.execute_batch(&format!("LOAD '{literal}'"))
        .map_err(|e| {
            EngineError::op(
                ENGINE,
                "load the vss extension",
                format!("{}: {e}", vss.display()),
            )
        })?;
    Ok(conn)
}

/// The collection: its database, table and build settings.
pub(super) struct Store {
    pub table: Table,
    pub build: BuildSettings,
    pub attributes: Option<Arc<Attributes>>,
    /// The database file, when on disk.
    pub file: Option<PathBuf>,
    /// Loads, writes, index builds and reports; searches clone it (one connection each).
    main: Mutex<Connection>,
    /// Writes and HNSW index scans hold it exclusively, other searches (filtered: a scan of
    /// the table) shared. vss's index crashes the process (SIGSEGV in usearch's search, called
    /// from `HNSWIndex::InitializeScan`) when two connections scan it at once, so index scans
    /// run one at a time, and no write overlaps a search.
    index_access: RwLock<()>,
    /// Staging tables of upserts (same columns as the table) and deletes (`id`).
    stage: String,
    doomed: String,
}

impl Store {
    pub(super) fn new(
        conn: Connection,
        table: Table,
        build: BuildSettings,
        attributes: Option<Arc<Attributes>>,
        file: Option<PathBuf>,
    ) -> EngineResult<Store> {
        let stage = quote_ident(&format!("{}_stage", table.name.trim_matches('"')));
        let doomed = quote_ident(&format!("{}_doomed", table.name.trim_matches('"')));
        let mut ddl = table.create_sql(attributes.as_deref());
        ddl.push_str(&format!(
            "; CREATE TABLE {stage} AS SELECT * FROM {} LIMIT 0; CREATE TABLE {doomed} (id BIGINT)",
            table.name
        ));
        if file.is_some() && build.hnsw.is_some() {
            ddl.insert_str(0, "SET hnsw_enable_experimental_persistence = true; ");
        }
        conn.execute_batch(&ddl).map_err(op_err("create"))?;
        Ok(Store {
            table,
            build,
            attributes,
            file,
            main: Mutex::new(conn),
            index_access: RwLock::new(()),
            stage,
            doomed,
        })
    }

    /// The main connection. A panic elsewhere while it was held leaves DuckDB's own state
    /// consistent (each statement is atomic), so the poison is ignored.
    pub(super) fn conn(&self) -> MutexGuard<'_, Connection> {
        self.main.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Shared access for one search (see `index_access`).
    pub(super) fn searching(&self) -> RwLockReadGuard<'_, ()> {
        self.index_access
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Exclusive access for one write or one HNSW index scan (see `index_access`).
    pub(super) fn writing(&self) -> RwLockWriteGuard<'_, ()> {
        self.index_access
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A new connection to the same database, for one search thread.
    pub(super) fn clone_conn(&self) -> EngineResult<Connection> {
        self.conn().try_clone().map_err(op_err("connect"))
    }

    /// Appends rows to `table` through the Appender, as one Arrow batch.
    fn append(
        &self,
        conn: &Connection,
        table: &str,
        ids: &[PointId],
        vectors: &[f32],
        op: &'static str,
    ) -> EngineResult<()> {
        let batch = self.record_batch(ids, vectors, op)?;
        let mut app = conn.appender(table.trim_matches('"')).map_err(op_err(op))?;
        app.append_record_batch(batch).map_err(op_err(op))?;
        app.flush().map_err(op_err(op))
    }

    /// Bulk load into the table.
    pub(super) fn insert(&self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let _exclusive = self.writing();
        let conn = self.conn();
        self.append(&conn, &self.table.name, ids, vectors, "bulk insert")
    }

    /// Replaces or adds the points: staged, then one transaction deletes their old rows and
    /// inserts the new ones.
    pub(super) fn upsert(&self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let _exclusive = self.writing();
        let mut conn = self.conn();
        self.append(&conn, &self.stage, ids, vectors, "upsert")?;
        let t = &self.table.name;
        let stage = &self.stage;
        let tx = conn.transaction().map_err(op_err("upsert"))?;
        tx.execute_batch(&format!(
            "DELETE FROM {t} WHERE id IN (SELECT id FROM {stage}); \
             INSERT INTO {t} SELECT * FROM {stage}; DELETE FROM {stage}"
        ))
        .map_err(op_err("upsert"))?;
        tx.commit().map_err(op_err("upsert"))
    }

    /// Removes the points, in one transaction.
    pub(super) fn delete(&self, ids: &[PointId]) -> EngineResult<()> {
        let _exclusive = self.writing();
        let mut conn = self.conn();
        {
            let mut app = conn
                .appender(self.doomed.trim_matches('"'))
                .map_err(op_err("delete"))?;
            app.append_rows(ids.iter().map(|id| [*id as i64]))
                .map_err(op_err("delete"))?;
            app.flush().map_err(op_err("delete"))?;
        }
        let (t, doomed) = (&self.table.name, &self.doomed);
        let tx = conn.transaction().map_err(op_err("delete"))?;
        tx.execute_batch(&format!(
            "DELETE FROM {t} WHERE id IN (SELECT id FROM {doomed}); DELETE FROM {doomed}"
        ))
        .map_err(op_err("delete"))?;
        tx.commit().map_err(op_err("delete"))
    }

    /// `ids`, `vectors` and their attributes as an Arrow batch of the table's columns.
    fn record_batch(
        &self,
        ids: &[PointId],
        vectors: &[f32],
        op: &'static str,
    ) -> EngineResult<RecordBatch> {
        let dim = i32::try_from(self.table.dim)
            .map_err(|_| EngineError::op(ENGINE, op, "dimension too large"))?;
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        let values = Arc::new(Float32Array::from(vectors.to_vec()));
        let list = FixedSizeListArray::try_new(item.clone(), dim, values, None)
            .map_err(|e| EngineError::op(ENGINE, op, e))?;
        let mut fields = vec![
            Field::new("id", DataType::Int64, false),
            Field::new("v", DataType::FixedSizeList(item, dim), false),
        ];
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(
                ids.iter().map(|id| *id as i64),
            )),
            Arc::new(list),
        ];
        if let Some(attributes) = self.attributes.as_deref() {
            attribute_columns(attributes, ids, op, &mut fields, &mut columns)?;
        }
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
            .map_err(|e| EngineError::op(ENGINE, op, e))
    }
}

/// One Arrow column per attribute field, the values of `ids`.
fn attribute_columns(
    attributes: &Attributes,
    ids: &[PointId],
    op: &'static str,
    fields: &mut Vec<Field>,
    columns: &mut Vec<ArrayRef>,
) -> EngineResult<()> {
    if let Some(id) = ids.iter().find(|id| !attributes.covers(**id)) {
        return Err(EngineError::op(
            ENGINE,
            op,
            format!("point {id} has no attributes"),
        ));
    }
    for (f, field) in attributes.fields().iter().enumerate() {
        let column: ArrayRef = match field.kind {
            FieldKind::Keyword => Arc::new(StringArray::from_iter_values(ids.iter().map(|id| {
                match attributes.value(f, *id) {
                    AttrValue::Keyword(s) => s.to_string(),
                    AttrValue::Integer(x) => x.to_string(),
                }
            }))),
            FieldKind::Integer => Arc::new(Int64Array::from_iter_values(ids.iter().map(|id| {
                match attributes.value(f, *id) {
                    AttrValue::Integer(x) => x,
                    AttrValue::Keyword(_) => 0,
                }
            }))),
        };
        let ty = match field.kind {
            FieldKind::Keyword => DataType::Utf8,
            FieldKind::Integer => DataType::Int64,
        };
        fields.push(Field::new(field.name.clone(), ty, false));
        columns.push(column);
    }
    Ok(())
}
