//! VectorDBBench's dataset layout: a directory of Parquet files, as VectorDBBench downloads
//! them (`vectordb_bench/backend/dataset.py`):
//!
//! - train vectors in `train.parquet`, or in shards `train-00-of-10.parquet` …, or the same
//!   with the prefix `shuffle_train` (rows in random order): columns `id` (integer) and `emb`
//!   (a list of floats);
//! - queries in `test.parquet`, same columns;
//! - optionally the true neighbours in `neighbors.parquet`: `id` (the query's) and
//!   `neighbors_id` (a list of train ids, nearest first);
//! - optionally `scalar_labels.parquet` (`id` + label columns), read as point attributes.
//!
//! Ids must be `0..n` (in any order): a point's id is its row in ragdbeval, and the
//! neighbour lists name train ids. Rows are placed by id, so a shuffled layout loads to the
//! same dataset as the ordered one. The `emb` column is read with the Parquet column reader
//! (no per-value records): the list's values arrive flat and its repetition levels say where
//! each row starts.

use std::path::{Path, PathBuf};

use parquet::column::reader::{ColumnReader, ColumnReaderImpl};
use parquet::data_type::DataType;
use parquet::file::reader::{FileReader, SerializedFileReader};

mod directory;
mod write;

pub use directory::{VdbFiles, find_files, metric_of};
pub use write::{ListData, write_dir, write_list_file};

use super::DatasetError;
use super::spill::{RowSink, SpillTarget};

/// Lists read from one or more files: `rows × dim`, row `i` holding id `i`. `S` holds the
/// values: a `Vec`, or for train vectors a [`RowSink`] that may be a spill file.
#[derive(Debug)]
pub struct Table<S> {
    pub dim: usize,
    pub values: S,
    /// Rows kept (ids `0..kept`).
    pub kept: usize,
    /// Rows the files hold (all ids), of which the first `kept` were kept.
    pub total_rows: usize,
    /// Some component was a double and is now the nearest f32.
    pub rounded: bool,
}

/// Reads the id column `id_column` and the list column `list_column` of `files` and keeps the
/// rows with id `< keep` (all when `None`), placed by id.
pub fn read_vectors(
    files: &[PathBuf],
    list_column: &str,
    keep: Option<usize>,
) -> Result<Table<Vec<f32>>, DatasetError> {
    read_table(
        files,
        list_column,
        keep,
        |row, out| row.write_f32(out),
        alloc_vec,
    )
}

/// [`read_vectors`] for train vectors, which may be too many for memory: above
/// [`super::spill::threshold`] they are placed straight into the spill file at `spill_path`.
pub fn read_train(
    files: &[PathBuf],
    list_column: &str,
    spill: SpillTarget<'_>,
) -> Result<Table<RowSink>, DatasetError> {
    let what = files.first().cloned().unwrap_or_default();
    read_table(
        files,
        list_column,
        spill.limit,
        |row, out| row.write_f32(out),
        |rows, dim| RowSink::new(rows, dim, &spill, &what).map_err(|e| e.to_string()),
    )
}

/// Room for `rows × dim` values in memory. The size comes from the files' footers: it is
/// reserved fallibly, so a footer that claims more rows than memory holds is an error, not an
/// abort.
fn alloc_vec<T: Copy + Default>(rows: usize, dim: usize) -> Result<Vec<T>, String> {
    let size = rows
        .checked_mul(dim)
        .ok_or_else(|| format!("{rows} rows × {dim} overflow"))?;
    let mut values = Vec::new();
    values.try_reserve_exact(size).map_err(|_| {
        format!(
            "{rows} rows × {dim} components ({:.1} GB) do not fit in memory",
            (size * std::mem::size_of::<T>()) as f64 / 1e9
        )
    })?;
    values.resize(size, T::default());
    Ok(values)
}

fn read_table<T, S: AsMut<[T]>>(
    files: &[PathBuf],
    list_column: &str,
    keep: Option<usize>,
    write: fn(&Row<'_>, &mut [T]) -> Result<bool, String>,
    alloc: impl FnOnce(usize, usize) -> Result<S, String>,
) -> Result<Table<S>, DatasetError> {
    let total_rows = files
        .iter()
        .map(|f| row_count(f))
        .sum::<Result<usize, _>>()?;
    let kept = keep.map_or(total_rows, |k| k.min(total_rows));
    let mut placed = Placed::new(kept, total_rows, write, alloc);
    for file in files {
        let done = for_each_row(file, list_column, |id, values| placed.put(id, values))?;
        if done || placed.complete() {
            break;
        }
    }
    placed.finish(files)
}

/// Reads the true neighbours: one list of train ids per query id `0..queries`, all of the
/// same length k. Returns (k, ids row-major).
pub fn read_neighbors(path: &Path, queries: usize) -> Result<(usize, Vec<i64>), DatasetError> {
    let table = read_table(
        &[path.to_path_buf()],
        "neighbors_id",
        None,
        |row, out| row.write_id(out),
        alloc_vec,
    )?;
    let bad = |message: String| DatasetError::Format {
        path: path.to_path_buf(),
        message,
    };
    if table.total_rows != queries {
        return Err(bad(format!(
            "neighbour lists for {} queries, but test.parquet has {queries}",
            table.total_rows
        )));
    }
    Ok((table.dim, table.values))
}

/// Rows a Parquet file says it holds (from its footer, nothing else read).
pub fn row_count(path: &Path) -> Result<usize, DatasetError> {
    guarded(path, || {
        let reader = open(path)?;
        let rows = reader.metadata().file_metadata().num_rows();
        usize::try_from(rows).map_err(|_| format!("its footer claims {rows} rows"))
    })
}

fn open(path: &Path) -> Result<SerializedFileReader<std::fs::File>, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot open: {e}"))?;
    SerializedFileReader::new(file).map_err(|e| format!("not a readable Parquet file: {e}"))
}

/// Runs `read` on a Parquet file, a panic of the reader (corrupt pages) included, and puts
/// the file's path in front of any error.
fn guarded<T>(path: &Path, read: impl FnOnce() -> Result<T, String>) -> Result<T, DatasetError> {
    let outcome = crate::filter::guard_reader_panics(read)
        .unwrap_or_else(|why| Err(format!("a corrupt Parquet file (its reader failed: {why})")));
    outcome.map_err(|message| DatasetError::Format {
        path: path.to_path_buf(),
        message,
    })
}

/// Rows being placed by id into a `kept × dim` table, allocated by `alloc` once the first row
/// tells the dimension.
struct Placed<T, S, A> {
    kept: usize,
    total: usize,
    write: fn(&Row<'_>, &mut [T]) -> Result<bool, String>,
    alloc: Option<A>,
    dim: Option<usize>,
    values: Option<S>,
    filled: Vec<bool>,
    filled_count: usize,
    seen: usize,
    rounded: bool,
}

impl<T, S, A> Placed<T, S, A>
where
    S: AsMut<[T]>,
    A: FnOnce(usize, usize) -> Result<S, String>,
{
    fn new(
        kept: usize,
        total: usize,
        write: fn(&Row<'_>, &mut [T]) -> Result<bool, String>,
        alloc: A,
    ) -> Placed<T, S, A> {
        Placed {
            kept,
            total,
            write,
            alloc: Some(alloc),
            dim: None,
            values: None,
            filled: Vec::new(),
            filled_count: 0,
            seen: 0,
            rounded: false,
        }
    }

    fn complete(&self) -> bool {
        self.dim.is_some() && self.filled_count == self.kept
    }

    /// One row; `Ok(true)` when every kept row is in and reading may stop.
    fn put(&mut self, id: i64, row: Row<'_>) -> Result<bool, String> {
        self.seen += 1;
        let len = row.len();
        let dim = match self.dim {
            Some(d) => d,
            None => {
                if len == 0 {
                    return Err(format!("row with id {id} holds an empty list"));
                }
                let alloc = self.alloc.take().ok_or("the table was allocated twice")?;
                self.values = Some(alloc(self.kept, len)?);
                self.filled = vec![false; self.kept];
                self.dim = Some(len);
                len
            }
        };
        if len != dim {
            return Err(format!(
                "row with id {id} has {len} components, the first row {dim}"
            ));
        }
        let Ok(slot) = usize::try_from(id) else {
            return Err(format!(
                "id {id} is negative (ids must be 0..{})",
                self.total
            ));
        };
        if slot >= self.total {
            return Err(format!(
                "id {id} is out of range: the file(s) hold {} rows, so ids must be 0..{}",
                self.total, self.total
            ));
        }
        if slot >= self.kept {
            return Ok(false);
        }
        if std::mem::replace(&mut self.filled[slot], true) {
            return Err(format!("id {id} appears twice"));
        }
        let values = self.values.as_mut().ok_or("no table allocated")?.as_mut();
        let out = &mut values[slot * dim..(slot + 1) * dim];
        self.rounded |= (self.write)(&row, out).map_err(|e| format!("id {id}: {e}"))?;
        self.filled_count += 1;
        Ok(self.filled_count == self.kept)
    }

    fn finish(self, files: &[PathBuf]) -> Result<Table<S>, DatasetError> {
        let path = files.first().cloned().unwrap_or_default();
        let bad = |message: String| DatasetError::Format {
            path: path.clone(),
            message,
        };
        let (Some(dim), Some(values)) = (self.dim, self.values) else {
            return Err(bad("holds no rows".into()));
        };
        if self.filled_count < self.kept {
            // Every id below `kept` must be there: rows were counted from the footers, so a
            // missing one means a gap in the ids (a repeated id was caught on arrival).
            let first = self.filled.iter().position(|f| !f).unwrap_or(0);
            return Err(bad(format!(
                "no row has id {first}: ids must be 0..{} without gaps",
                self.total
            )));
        }
        Ok(Table {
            dim,
            values,
            kept: self.kept,
            total_rows: self.total,
            rounded: self.rounded,
        })
    }
}

/// One row's list, as stored.
enum Row<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
    I64(&'a [i64]),
    I32(&'a [i32]),
}

impl Row<'_> {
    fn len(&self) -> usize {
        match self {
            Row::F32(v) => v.len(),
            Row::F64(v) => v.len(),
            Row::I64(v) => v.len(),
            Row::I32(v) => v.len(),
        }
    }

    /// Writes the values as ids; an id must be a whole number ≥ 0.
    fn write_id(&self, out: &mut [i64]) -> Result<bool, String> {
        let whole = |x: f64| (x.fract() == 0.0 && (0.0..9.0e15).contains(&x)).then_some(x as i64);
        let put = |(o, v): (&mut i64, Option<i64>)| -> Result<(), String> {
            *o = v
                .filter(|v| *v >= 0)
                .ok_or("a neighbour id is not a whole number ≥ 0")?;
            Ok(())
        };
        match self {
            Row::I64(v) => out
                .iter_mut()
                .zip(v.iter().map(|x| Some(*x)))
                .try_for_each(put)?,
            Row::I32(v) => out
                .iter_mut()
                .zip(v.iter().map(|x| Some(i64::from(*x))))
                .try_for_each(put)?,
            Row::F32(v) => out
                .iter_mut()
                .zip(v.iter().map(|x| whole(f64::from(*x))))
                .try_for_each(put)?,
            Row::F64(v) => out
                .iter_mut()
                .zip(v.iter().map(|x| whole(*x)))
                .try_for_each(put)?,
        }
        Ok(false)
    }

    /// Writes the values as f32; true if one was rounded on the way.
    fn write_f32(&self, out: &mut [f32]) -> Result<bool, String> {
        let mut rounded = false;
        let mut put = |o: &mut f32, v: f64, f: f32| {
            rounded |= f64::from(f) != v;
            *o = f;
        };
        match self {
            Row::F32(v) => out.copy_from_slice(v),
            Row::F64(v) => out
                .iter_mut()
                .zip(*v)
                .for_each(|(o, x)| put(o, *x, *x as f32)),
            Row::I64(v) => out
                .iter_mut()
                .zip(*v)
                .for_each(|(o, x)| put(o, *x as f64, *x as f32)),
            Row::I32(v) => out
                .iter_mut()
                .zip(*v)
                .for_each(|(o, x)| put(o, f64::from(*x), *x as f32)),
        }
        Ok(rounded)
    }
}

/// Records read per call of the column readers.
const BATCH_ROWS: usize = 1024;

/// Calls `row(id, list)` for every row of `path` until it returns `Ok(true)`; returns whether
/// it did.
fn for_each_row(
    path: &Path,
    list_column: &str,
    mut row: impl FnMut(i64, Row<'_>) -> Result<bool, String>,
) -> Result<bool, DatasetError> {
    guarded(path, || {
        let reader = open(path)?;
        let schema = reader.metadata().file_metadata().schema_descr_ptr();
        let find = |name: &str, repeated: bool| {
            schema.columns().iter().position(|c| {
                c.path().parts().first().map(String::as_str) == Some(name)
                    && (c.max_rep_level() > 0) == repeated
            })
        };
        let id_index = find("id", false).ok_or("no `id` column")?;
        let list_index =
            find(list_column, true).ok_or_else(|| format!("no `{list_column}` column of lists"))?;
        let max_def = schema.column(list_index).max_def_level();
        if schema.column(list_index).max_rep_level() != 1 {
            return Err(format!("`{list_column}` is not a plain list"));
        }
        let mut ids = IdColumn::default();
        let mut list = ListColumn::default();
        let mut row_no = 0usize;
        for group in 0..reader.num_row_groups() {
            let group_reader = reader
                .get_row_group(group)
                .map_err(|e| format!("row group {group}: {e}"))?;
            let column = |i: usize| {
                group_reader
                    .get_column_reader(i)
                    .map_err(|e| format!("row group {group}: {e}"))
            };
            let mut id_reader = column(id_index)?;
            let mut list_reader = column(list_index)?;
            loop {
                let n = ids.read(&mut id_reader)?;
                let m = list.read(&mut list_reader, max_def)?;
                if n != m {
                    return Err(format!(
                        "row group {group}: {n} ids but {m} `{list_column}` lists"
                    ));
                }
                if n == 0 {
                    break;
                }
                for r in 0..n {
                    let id = ids.values[r];
                    let at = |e: String| format!("row {}: {e}", row_no + r + 1);
                    if row(id, list.row(r)).map_err(at)? {
                        return Ok(true);
                    }
                }
                row_no += n;
            }
        }
        Ok(false)
    })
}

/// Batches of the id column, as i64.
#[derive(Default)]
struct IdColumn {
    values: Vec<i64>,
    i32s: Vec<i32>,
    def: Vec<i16>,
}

impl IdColumn {
    fn read(&mut self, reader: &mut ColumnReader) -> Result<usize, String> {
        self.values.clear();
        self.def.clear();
        let (records, values) = match reader {
            ColumnReader::Int64ColumnReader(r) => {
                let (rec, val, _) = r
                    .read_records(BATCH_ROWS, Some(&mut self.def), None, &mut self.values)
                    .map_err(|e| format!("`id`: {e}"))?;
                (rec, val)
            }
            ColumnReader::Int32ColumnReader(r) => {
                self.i32s.clear();
                let (rec, val, _) = r
                    .read_records(BATCH_ROWS, Some(&mut self.def), None, &mut self.i32s)
                    .map_err(|e| format!("`id`: {e}"))?;
                self.values.extend(self.i32s.iter().map(|v| i64::from(*v)));
                (rec, val)
            }
            _ => return Err("`id` is not an integer column".into()),
        };
        if values != records {
            return Err("`id` has a null".into());
        }
        Ok(records)
    }
}

/// Batches of a list column: values flat, `starts[r]..starts[r + 1]` the values of row `r`.
#[derive(Default)]
struct ListColumn {
    f32s: Vec<f32>,
    f64s: Vec<f64>,
    i64s: Vec<i64>,
    i32s: Vec<i32>,
    kind: ListKind,
    def: Vec<i16>,
    rep: Vec<i16>,
    starts: Vec<usize>,
}

#[derive(Default, Clone, Copy)]
enum ListKind {
    #[default]
    F32,
    F64,
    I64,
    I32,
}

impl ListColumn {
    fn read(&mut self, reader: &mut ColumnReader, max_def: i16) -> Result<usize, String> {
        self.def.clear();
        self.rep.clear();
        let (records, values) = match reader {
            ColumnReader::FloatColumnReader(r) => {
                self.kind = ListKind::F32;
                read_list(r, &mut self.def, &mut self.rep, &mut self.f32s)?
            }
            ColumnReader::DoubleColumnReader(r) => {
                self.kind = ListKind::F64;
                read_list(r, &mut self.def, &mut self.rep, &mut self.f64s)?
            }
            ColumnReader::Int64ColumnReader(r) => {
                self.kind = ListKind::I64;
                read_list(r, &mut self.def, &mut self.rep, &mut self.i64s)?
            }
            ColumnReader::Int32ColumnReader(r) => {
                self.kind = ListKind::I32;
                read_list(r, &mut self.def, &mut self.rep, &mut self.i32s)?
            }
            _ => return Err("the list's values are not numbers".into()),
        };
        // Every level fully defined: no null list, no empty list, no null value (any of them
        // stops at a lower definition level), so values and levels pair one to one.
        if self.def.iter().any(|d| *d != max_def) || values != self.rep.len() {
            return Err("a null or empty list, or a null value in one".into());
        }
        self.starts.clear();
        self.starts.extend(
            self.rep
                .iter()
                .enumerate()
                .filter(|(_, r)| **r == 0)
                .map(|(i, _)| i),
        );
        self.starts.push(values);
        if self.starts.len() != records + 1 {
            return Err("list levels that do not make whole rows".into());
        }
        Ok(records)
    }

    fn row(&self, r: usize) -> Row<'_> {
        let span = self.starts[r]..self.starts[r + 1];
        match self.kind {
            ListKind::F32 => Row::F32(&self.f32s[span]),
            ListKind::F64 => Row::F64(&self.f64s[span]),
            ListKind::I64 => Row::I64(&self.i64s[span]),
            ListKind::I32 => Row::I32(&self.i32s[span]),
        }
    }
}

/// One batch of whole records of a list column; returns (records, values).
fn read_list<T: DataType>(
    reader: &mut ColumnReaderImpl<T>,
    def: &mut Vec<i16>,
    rep: &mut Vec<i16>,
    values: &mut Vec<T::T>,
) -> Result<(usize, usize), String> {
    values.clear();
    let (records, read, _) = reader
        .read_records(BATCH_ROWS, Some(def), Some(rep), values)
        .map_err(|e| e.to_string())?;
    Ok((records, read))
}
