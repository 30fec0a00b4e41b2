//! Attributes from a Parquet side file (the layout of [`super::file`], as columns): read row
//! by row with the `parquet` crate's record reader, every row through the same checks as a
//! JSONL line.

use std::path::Path;

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;

use super::file::{RawValue, TableBuilder};
use super::{Attributes, FilterError, invalid};

/// An integer column's value, whatever its width and signedness; `None` for anything else.
fn integer(field: &Field) -> Option<i64> {
    Some(match field {
        Field::Byte(x) => i64::from(*x),
        Field::Short(x) => i64::from(*x),
        Field::Int(x) => i64::from(*x),
        Field::Long(x) => *x,
        Field::UByte(x) => i64::from(*x),
        Field::UShort(x) => i64::from(*x),
        Field::UInt(x) => i64::from(*x),
        Field::ULong(x) => i64::try_from(*x).ok()?,
        _ => return None,
    })
}

/// Reads the Parquet file `path` for points `0..n`, under [`guard_reader_panics`].
pub fn read_parquet(path: &Path, n: usize) -> Result<Attributes, FilterError> {
    guard_reader_panics(|| read_parquet_unguarded(path, n)).unwrap_or_else(|why| {
        Err(invalid(format!(
            "{}: a corrupt Parquet file (its reader failed: {why})",
            path.display()
        )))
    })
}

/// Runs a reading of Parquet data, returning `Err(message)` if it panics.
///
/// The `parquet` crate's decoders index out of bounds on some corrupt pages (a flipped byte in
/// an RLE run is enough, found by `corrupt_parquet_files_are_errors`), so every reading of a
/// user's Parquet file runs under `catch_unwind` with the panic message silenced, and the
/// caller reports a panic as a corrupt file.
pub fn guard_reader_panics<T>(read: impl FnOnce() -> T) -> Result<T, String> {
    let previous_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    // The reading only builds values it returns: nothing half-updated outlives a panic.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(read));
    std::panic::set_hook(previous_hook);
    outcome.map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default()
    })
}

fn read_parquet_unguarded(path: &Path, n: usize) -> Result<Attributes, FilterError> {
    let shown = path.display();
    let bad = |msg: String| invalid(format!("{shown}: {msg}"));
    let file = std::fs::File::open(path)
        .map_err(|e| invalid(format!("cannot open attribute file {shown}: {e}")))?;
    let reader = SerializedFileReader::new(file)
        .map_err(|e| bad(format!("not a readable Parquet file: {e}")))?;
    let rows = reader
        .get_row_iter(None)
        .map_err(|e| bad(format!("cannot read its rows: {e}")))?;
    let mut table = TableBuilder::new(n);
    for (row_no, row) in rows.enumerate() {
        let at = |msg: String| bad(format!("row {}: {msg}", row_no + 1));
        let row = row.map_err(|e| at(format!("unreadable: {e}")))?;
        let mut id = None;
        let mut members = Vec::with_capacity(row.len());
        for (name, field) in row.get_column_iter() {
            if name == "id" {
                id = integer(field).and_then(|x| u64::try_from(x).ok());
                continue;
            }
            let raw = match (field, integer(field)) {
                (_, Some(x)) => RawValue::Integer(x),
                (Field::Str(s), None) => RawValue::Keyword(s),
                (other, None) => RawValue::Other(format!("{other} (a {other:?} value)")),
            };
            members.push((name.as_str(), raw));
        }
        table.record(id, &members).map_err(at)?;
    }
    table.finish(&shown.to_string())
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use parquet::basic::Compression;
    use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int32Type, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;

    use super::super::Value;
    use super::super::file::read_attributes;

    /// A file as pandas writes VectorDBBench's `scalar_labels.parquet`: `id` int64, a string
    /// column, here also an int32 and (for the error) a double column.
    fn write(path: &Path, ids: &[i64], labels: &[&str], prices: &[i32], with_double: bool) {
        let mut schema = String::from(
            "message schema { REQUIRED INT64 id; REQUIRED BYTE_ARRAY labels (UTF8); \
             REQUIRED INT32 price;",
        );
        if with_double {
            schema.push_str(" REQUIRED DOUBLE score;");
        }
        schema.push_str(" }");
        let schema = Arc::new(parse_message_type(&schema).unwrap());
        let props = Arc::new(
            WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .build(),
        );
        let file = std::fs::File::create(path).unwrap();
        let mut writer = SerializedFileWriter::new(file, schema, props).unwrap();
        let mut group = writer.next_row_group().unwrap();
        let labels: Vec<ByteArray> = labels.iter().map(|l| ByteArray::from(*l)).collect();
        let scores = vec![0.5f64; ids.len()];
        let mut column = 0;
        while let Some(mut w) = group.next_column().unwrap() {
            match column {
                0 => w.typed::<Int64Type>().write_batch(ids, None, None),
                1 => w.typed::<ByteArrayType>().write_batch(&labels, None, None),
                2 => w.typed::<Int32Type>().write_batch(prices, None, None),
                _ => w.typed::<DoubleType>().write_batch(&scores, None, None),
            }
            .unwrap();
            w.close().unwrap();
            column += 1;
        }
        group.close().unwrap();
        writer.close().unwrap();
    }

    #[test]
    fn parquet_attributes_are_read_with_the_jsonl_checks() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("scalar_labels.parquet");
        // Out of order, and one id beyond the dataset (skipped).
        write(
            &path,
            &[2, 0, 1, 7],
            &["b", "a", "b", "z"],
            &[30, -1, 5, 9],
            false,
        );
        let a = read_attributes(&path, 3).unwrap();
        assert_eq!(a.value(0, 0), Value::Keyword("a"));
        assert_eq!(a.value(0, 2), Value::Keyword("b"));
        assert_eq!(a.value(1, 0), Value::Integer(-1));
        assert_eq!(a.value(1, 2), Value::Integer(30));

        let err = read_attributes(&path, 5).unwrap_err().to_string();
        assert!(err.contains("point 3 has no record"), "{err}");
        write(&path, &[0, 0], &["a", "b"], &[1, 2], false);
        let err = read_attributes(&path, 2).unwrap_err().to_string();
        assert!(err.contains("row 2: id 0 appears twice"), "{err}");
        write(&path, &[0], &["a"], &[1], true);
        let err = read_attributes(&path, 1).unwrap_err().to_string();
        assert!(err.contains("`score`") && err.contains("neither"), "{err}");
        // Parquet's magic bytes and nothing else: an error, not a panic.
        std::fs::write(&path, b"PAR1 truncated").unwrap();
        let err = read_attributes(&path, 1).unwrap_err().to_string();
        assert!(err.contains("not a readable Parquet file"), "{err}");
    }

    /// Corrupt files (every byte of a valid one changed in turn, and every truncation) are
    /// errors or, where the change hits only data, values: never a panic or an abort.
    #[test]
    fn corrupt_parquet_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.parquet");
        write(&path, &[0, 1, 2], &["a", "b", "c"], &[1, 2, 3], false);
        let good = std::fs::read(&path).unwrap();
        for i in 0..good.len() {
            for (bytes, what) in [
                (
                    {
                        let mut b = good.clone();
                        b[i] ^= 0xff;
                        b
                    },
                    "flipped",
                ),
                (good[..i].to_vec(), "truncated"),
            ] {
                std::fs::write(&path, &bytes).unwrap();
                let outcome =
                    std::panic::catch_unwind(|| read_attributes(&path, 3).map(|a| a.len()));
                assert!(outcome.is_ok(), "byte {i} {what}: panicked");
            }
        }
    }
}
