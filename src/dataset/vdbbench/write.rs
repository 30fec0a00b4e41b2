//! Writing VectorDBBench's Parquet files, with the schema pandas and pyarrow write.

use std::path::Path;
use std::sync::Arc;

use parquet::basic::Compression;
use parquet::data_type::{FloatType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::parser::parse_message_type;

use crate::dataset::DatasetError;

/// Rows per row group the writer makes (about 100 MB of 768-d f32 vectors per group: the
/// reader holds one batch at a time, so the size only matters to other readers).
const WRITE_ROW_GROUP: usize = 32_768;

/// Writes `train`, `test` and, if given, their true neighbours `(k, ids)` as a VectorDBBench
/// directory (`train.parquet`, `test.parquet`, `neighbors.parquet`), with the schema pandas
/// and pyarrow write: `id` int64, `emb` an optional list of optional floats (`neighbors_id`
/// of int64). Each file is written under a temporary name and renamed.
pub fn write_dir(
    dir: &Path,
    train: &crate::vectors::Vectors,
    test: &crate::vectors::Vectors,
    neighbors: Option<(usize, &[i64])>,
) -> Result<(), DatasetError> {
    std::fs::create_dir_all(dir).map_err(|e| DatasetError::io(dir, e))?;
    let ids = |n: usize| (0..n as i64).collect::<Vec<_>>();
    let train_ids = ids(train.len());
    write_list_file(
        &dir.join("train.parquet"),
        "emb",
        &train_ids,
        train.dim(),
        ListData::F32(train.as_flat()),
    )?;
    let test_ids = ids(test.len());
    write_list_file(
        &dir.join("test.parquet"),
        "emb",
        &test_ids,
        test.dim(),
        ListData::F32(test.as_flat()),
    )?;
    if let Some((k, neighbors)) = neighbors {
        let path = dir.join("neighbors.parquet");
        let queries = ids(neighbors.len() / k.max(1));
        write_list_file(&path, "neighbors_id", &queries, k, ListData::I64(neighbors))?;
    }
    Ok(())
}

/// The values of a list column, `rows × width` row-major.
pub enum ListData<'a> {
    F32(&'a [f32]),
    I64(&'a [i64]),
}

/// Writes one Parquet file of VectorDBBench's shape: an `id` column with `ids` and a list
/// column `column` with one list of `width` values per id.
pub fn write_list_file(
    path: &Path,
    column: &str,
    ids: &[i64],
    width: usize,
    data: ListData<'_>,
) -> Result<(), DatasetError> {
    let fail = |e: &dyn std::fmt::Display| DatasetError::Format {
        path: path.to_path_buf(),
        message: format!("cannot write: {e}"),
    };
    let len = match data {
        ListData::F32(v) => v.len(),
        ListData::I64(v) => v.len(),
    };
    if width == 0 || len != ids.len() * width {
        return Err(fail(&format!(
            "{len} values do not make {} rows of {width}",
            ids.len()
        )));
    }
    let value_type = match data {
        ListData::F32(_) => "FLOAT",
        ListData::I64(_) => "INT64",
    };
    let schema = parse_message_type(&format!(
        "message schema {{ OPTIONAL INT64 id; OPTIONAL GROUP {column} (LIST) {{ \
         REPEATED GROUP list {{ OPTIONAL {value_type} element; }} }} }}"
    ))
    .map_err(|e| fail(&e))?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let tmp = path.with_extension("parquet.tmp");
    let file = std::fs::File::create(&tmp).map_err(|e| DatasetError::io(&tmp, e))?;
    let written = SerializedFileWriter::new(file, Arc::new(schema), Arc::new(props))
        .and_then(|writer| write_row_groups(writer, ids, width, &data));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(fail(&e));
    }
    std::fs::rename(&tmp, path).map_err(|e| DatasetError::io(path, e))
}

/// Writes `ids` and their lists of `width` values in row groups of [`WRITE_ROW_GROUP`] rows,
/// and closes the file.
fn write_row_groups(
    mut writer: SerializedFileWriter<std::fs::File>,
    ids: &[i64],
    width: usize,
    data: &ListData<'_>,
) -> Result<(), parquet::errors::ParquetError> {
    let rows = ids.len();
    let mut start = 0;
    while start < rows {
        let end = (start + WRITE_ROW_GROUP).min(rows);
        let ids = &ids[start..end];
        let n = (end - start) * width;
        // Every level fully defined (3: list present, entry present, value not null); a
        // new row starts at repetition level 0.
        let def = vec![3i16; n];
        let rep: Vec<i16> = (0..n).map(|i| i16::from(i % width != 0)).collect();
        let mut group = writer.next_row_group()?;
        let mut column_no = 0;
        while let Some(mut w) = group.next_column()? {
            if column_no == 0 {
                w.typed::<Int64Type>()
                    .write_batch(ids, Some(&vec![1i16; ids.len()]), None)?;
            } else {
                let span = start * width..end * width;
                match *data {
                    ListData::F32(v) => {
                        w.typed::<FloatType>()
                            .write_batch(&v[span], Some(&def), Some(&rep))?
                    }
                    ListData::I64(v) => {
                        w.typed::<Int64Type>()
                            .write_batch(&v[span], Some(&def), Some(&rep))?
                    }
                };
            }
            w.close()?;
            column_no += 1;
        }
        group.close()?;
        start = end;
    }
    writer.close()?;
    Ok(())
}
