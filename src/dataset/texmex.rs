//! The TEXMEX formats of the original SIFT1M / GIST1M / BIGANN distribution.
//!
//! Each vector is stored as a little-endian `i32` dimension followed by that many components:
//! `f32` in `.fvecs`, `i32` in `.ivecs` (ground-truth ids), `u8` in `.bvecs`. A dataset is a
//! directory holding `*base.{f,b}vecs`, `*query.{f,b}vecs` and optionally `*groundtruth.ivecs`.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use super::DatasetError;
use crate::atomic::AtomicFile;
use crate::vectors::Vectors;

fn bad(path: &Path, message: String) -> DatasetError {
    DatasetError::Format {
        path: path.to_path_buf(),
        message,
    }
}

/// Reads `len` bytes of records from `reader`; `path` names the source in errors. Every count
/// comes from `len`, so nothing is allocated beyond what the input holds.
fn parse_records<T>(
    mut reader: impl Read,
    len: u64,
    path: &Path,
    elem: usize,
    limit: Option<usize>,
    mut conv: impl FnMut(&[u8]) -> T,
) -> Result<(Vec<T>, usize), DatasetError> {
    let len = usize::try_from(len).map_err(|_| {
        bad(
            path,
            format!("{len} bytes do not fit this machine's memory"),
        )
    })?;
    let mut head = [0u8; 4];
    if len < 4 {
        return Err(bad(path, format!("file of {len} bytes holds no vector")));
    }
    reader
        .read_exact(&mut head)
        .map_err(|e| DatasetError::io(path, e))?;
    let dim = i32::from_le_bytes(head);
    if dim <= 0 || dim > 1 << 20 {
        return Err(bad(path, format!("first record has dimension {dim}")));
    }
    let dim = dim as usize;
    let record = 4 + dim * elem;
    if !len.is_multiple_of(record) {
        return Err(bad(
            path,
            format!(
                "{len} bytes is not a whole number of {dim}-dimensional records ({record} bytes each): truncated or not this format"
            ),
        ));
    }
    let mut count = len / record;
    if let Some(l) = limit {
        count = count.min(l);
    }
    let mut out = Vec::with_capacity(count * dim);
    let mut buf = vec![0u8; dim * elem];
    for i in 0..count {
        if i > 0 {
            reader
                .read_exact(&mut head)
                .map_err(|e| DatasetError::io(path, e))?;
            let d = i32::from_le_bytes(head);
            if d as usize != dim {
                return Err(bad(
                    path,
                    format!("record {i} has dimension {d}, expected {dim}"),
                ));
            }
        }
        reader
            .read_exact(&mut buf)
            .map_err(|e| DatasetError::io(path, e))?;
        out.extend(buf.chunks_exact(elem).map(&mut conv));
    }
    Ok((out, dim))
}

/// The element type of a TEXMEX vector file, from its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorFormat {
    /// `.fvecs`: little-endian `f32` components.
    Fvecs,
    /// `.bvecs`: `u8` components, converted to floats.
    Bvecs,
}

impl VectorFormat {
    fn of(path: &Path) -> VectorFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some("bvecs") => VectorFormat::Bvecs,
            _ => VectorFormat::Fvecs,
        }
    }
}

/// Vectors from bytes in memory (`label` names them in errors): what [`read_vectors`] does
/// with a file, for the fuzz target `texmex`.
pub fn parse_vectors(
    bytes: &[u8],
    label: &Path,
    format: VectorFormat,
    limit: Option<usize>,
) -> Result<Vectors, DatasetError> {
    vectors_from(bytes, bytes.len() as u64, label, format, limit)
}

/// `.ivecs` from bytes in memory: (k, ids row-major).
pub fn parse_ivecs(bytes: &[u8], label: &Path) -> Result<(usize, Vec<i64>), DatasetError> {
    ivecs_from(bytes, bytes.len() as u64, label)
}

fn vectors_from(
    reader: impl Read,
    len: u64,
    path: &Path,
    format: VectorFormat,
    limit: Option<usize>,
) -> Result<Vectors, DatasetError> {
    let (data, dim) = match format {
        VectorFormat::Bvecs => parse_records(reader, len, path, 1, limit, |b| b[0] as f32)?,
        VectorFormat::Fvecs => parse_records(reader, len, path, 4, limit, |b| {
            f32::from_le_bytes([b[0], b[1], b[2], b[3]])
        })?,
    };
    Vectors::new(data, dim).map_err(|e| bad(path, e.to_string()))
}

fn ivecs_from(reader: impl Read, len: u64, path: &Path) -> Result<(usize, Vec<i64>), DatasetError> {
    let (ids, k) = parse_records(reader, len, path, 4, None, |b| {
        i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64
    })?;
    Ok((k, ids))
}

/// Reads `.fvecs` (or `.bvecs`, converted to floats), keeping at most `limit` vectors.
pub fn read_vectors(path: &Path, limit: Option<usize>) -> Result<Vectors, DatasetError> {
    let (reader, len) = open(path)?;
    vectors_from(reader, len, path, VectorFormat::of(path), limit)
}

/// Reads `.ivecs`: returns (k, ids row-major).
pub fn read_ivecs(path: &Path) -> Result<(usize, Vec<i64>), DatasetError> {
    let (reader, len) = open(path)?;
    ivecs_from(reader, len, path)
}

fn open(path: &Path) -> Result<(BufReader<File>, u64), DatasetError> {
    let file = File::open(path).map_err(|e| DatasetError::io(path, e))?;
    let len = file
        .metadata()
        .map_err(|e| DatasetError::io(path, e))?
        .len();
    Ok((BufReader::with_capacity(1 << 20, file), len))
}

pub fn write_fvecs(path: &Path, v: &Vectors) -> Result<(), DatasetError> {
    write_records(
        path,
        v.dim(),
        v.iter().map(|row| {
            row.iter()
                .flat_map(|x| x.to_le_bytes())
                .collect::<Vec<u8>>()
        }),
    )
}

pub fn write_ivecs(path: &Path, k: usize, ids: &[i64]) -> Result<(), DatasetError> {
    write_records(
        path,
        k,
        ids.chunks_exact(k).map(|row| {
            row.iter()
                .flat_map(|x| (*x as i32).to_le_bytes())
                .collect::<Vec<u8>>()
        }),
    )
}

fn write_records(
    path: &Path,
    dim: usize,
    rows: impl Iterator<Item = Vec<u8>>,
) -> Result<(), DatasetError> {
    let mut out = AtomicFile::create(path).map_err(|e| DatasetError::io(path, e))?;
    {
        let mut w = BufWriter::new(out.file());
        for row in rows {
            w.write_all(&(dim as i32).to_le_bytes())
                .and_then(|_| w.write_all(&row))
                .map_err(|e| DatasetError::io(path, e))?;
        }
        w.flush().map_err(|e| DatasetError::io(path, e))?;
    }
    out.commit().map_err(|e| DatasetError::io(path, e))
}

/// The files of a TEXMEX dataset directory.
#[derive(Debug)]
pub struct TexmexFiles {
    pub base: PathBuf,
    pub query: PathBuf,
    pub groundtruth: Option<PathBuf>,
}

/// Finds `*base.*vecs`, `*query.*vecs` and `*groundtruth.ivecs` in `dir`.
pub fn find_files(dir: &Path) -> Result<TexmexFiles, DatasetError> {
    let mut base = Vec::new();
    let mut query = Vec::new();
    let mut gt = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|e| DatasetError::io(dir, e))?;
    let mut names: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    names.sort();
    for p in names {
        let name = p
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        let vecs = name.ends_with(".fvecs") || name.ends_with(".bvecs");
        if vecs && name.contains("base") {
            base.push(p);
        } else if vecs && name.contains("query") {
            query.push(p);
        } else if name.ends_with(".ivecs") && name.contains("groundtruth") {
            gt.push(p);
        }
    }
    // Two candidates for one role (sift_base.fvecs next to a subset's base) would otherwise
    // be settled by sort order, silently benchmarking a set the user may not have meant.
    let one = |role: &str, found: Vec<PathBuf>| super::one_per_role(dir, role, found);
    match (
        one("base", base)?,
        one("query", query)?,
        one("ground-truth", gt)?,
    ) {
        (Some(base), Some(query), groundtruth) => Ok(TexmexFiles {
            base,
            query,
            groundtruth,
        }),
        _ => Err(bad(
            dir,
            "a TEXMEX dataset directory needs *base.fvecs (or .bvecs) and *query.fvecs files"
                .into(),
        )),
    }
}
