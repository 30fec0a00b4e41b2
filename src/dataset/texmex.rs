//! The TEXMEX formats of the original SIFT1M / GIST1M / BIGANN distribution.
//!
//! Each vector is stored as a little-endian `i32` dimension followed by that many components:
//! `f32` in `.fvecs`, `i32` in `.ivecs` (ground-truth ids), `u8` in `.bvecs`. A dataset is a
//! directory holding `*base.{f,b}vecs`, `*query.{f,b}vecs` and optionally `*groundtruth.ivecs`.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use super::DatasetError;
use crate::atomic::AtomicFile;
use crate::vectors::Vectors;

fn bad(path: &Path, message: String) -> DatasetError {
    DatasetError::Format {
        path: path.to_path_buf(),
        message,
    }
}

/// Parses the records of `bytes` (`mapped`, when they are a mapped file); `path` names the
/// source in errors. Every count comes from the input's length, so nothing is allocated beyond
/// what the input holds.
fn parse_records<T: Copy + Default + Send + Sync>(
    bytes: &[u8],
    mapped: Option<&memmap2::Mmap>,
    path: &Path,
    elem: usize,
    limit: Option<usize>,
    conv: impl Fn(&[u8]) -> T + Sync,
) -> Result<(Vec<T>, usize), DatasetError> {
    let (count, dim, record) = record_shape(bytes, path, elem, limit)?;
    let records = &bytes[..count * record];
    // Converted on all cores (a zeroed allocation costs nothing until its pages are written),
    // a window at a time: a mapped file's window is read in before and let go after, so
    // that the file's pages never add more than a window to the resident memory.
    let mut out: Vec<T> = crate::vectors::zeroed_matrix(count * dim);
    let per_window = (PARSE_WINDOW_BYTES / record).max(1);
    let mut all_ok = true;
    for (w, (rows, recs)) in out
        .chunks_mut(per_window * dim)
        .zip(records.chunks(per_window * record))
        .enumerate()
    {
        let offset = w * per_window * record;
        if let Some(map) = mapped {
            // Hints only: a kernel without them reads the pages as they are touched.
            let _ = map.advise_range(memmap2::Advice::PopulateRead, offset, recs.len());
        }
        all_ok &= rows
            .par_chunks_mut(dim)
            .zip(recs.par_chunks_exact(record))
            .with_min_len(PARSE_MIN_RECORDS)
            .all(|(row, rec)| {
                for (x, b) in row.iter_mut().zip(rec[4..].chunks_exact(elem)) {
                    *x = conv(b);
                }
                header_is(rec, dim)
            });
        if let Some(map) = mapped {
            // SAFETY: the map is a read-only file mapping, so dropping its pages loses
            // nothing (reading them again would read the file); they are not read again.
            let _ = unsafe {
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, offset, recs.len())
            };
        }
        if !all_ok {
            break;
        }
    }
    if !all_ok {
        return Err(wrong_header(records, path, record, dim));
    }
    Ok((out, dim))
}

/// Records per task of [`parse_records`]'s parallel conversion.
const PARSE_MIN_RECORDS: usize = 1024;

/// Bytes of a file parsed per window by [`parse_records`].
const PARSE_WINDOW_BYTES: usize = 32 << 20;

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
    vectors_from(bytes, None, label, format, limit)
}

/// `.ivecs` from bytes in memory: (k, ids row-major).
pub fn parse_ivecs(bytes: &[u8], label: &Path) -> Result<(usize, Vec<i64>), DatasetError> {
    ivecs_from(bytes, None, label)
}

fn vectors_from(
    bytes: &[u8],
    mapped: Option<&memmap2::Mmap>,
    path: &Path,
    format: VectorFormat,
    limit: Option<usize>,
) -> Result<Vectors, DatasetError> {
    let (data, dim) = match format {
        VectorFormat::Bvecs => parse_records(bytes, mapped, path, 1, limit, |b| b[0] as f32)?,
        VectorFormat::Fvecs => parse_records(bytes, mapped, path, 4, limit, |b| {
            f32::from_le_bytes([b[0], b[1], b[2], b[3]])
        })?,
    };
    Vectors::new(data, dim).map_err(|e| bad(path, e.to_string()))
}

fn ivecs_from(
    bytes: &[u8],
    mapped: Option<&memmap2::Mmap>,
    path: &Path,
) -> Result<(usize, Vec<i64>), DatasetError> {
    let (ids, k) = parse_records(bytes, mapped, path, 4, None, |b| {
        i32::from_le_bytes([b[0], b[1], b[2], b[3]]) as i64
    })?;
    Ok((k, ids))
}

/// Reads `.fvecs` (or `.bvecs`, converted to floats), keeping at most `limit` vectors.
pub fn read_vectors(path: &Path, limit: Option<usize>) -> Result<Vectors, DatasetError> {
    let map = map(path)?;
    vectors_from(&map, Some(&map), path, VectorFormat::of(path), limit)
}

/// [`read_vectors`] for a caller that reads the rows only one at a time or through
/// [`Vectors::strided`] (the exact ground truth of `dataset gt`): an `.fvecs` file's rows are
/// read in place from the mapped file, its headers checked but nothing copied (the copy into
/// fresh memory cost 0.04-0.14 s of a 0.65 s `dataset gt` at 200k × 128, the spread of the
/// whole run on a VM whose fresh pages are host faults). `.bvecs` (converted), a big-endian
/// machine and an unaligned map are read as [`read_vectors`] does.
pub fn read_vectors_in_place(path: &Path, limit: Option<usize>) -> Result<Vectors, DatasetError> {
    if VectorFormat::of(path) != VectorFormat::Fvecs {
        return read_vectors(path, limit);
    }
    let map = std::sync::Arc::new(map(path)?);
    let (count, dim) = check_records(&map, path, 4, limit)?;
    match Vectors::mapped_records(map.clone(), 4, count, dim, dim + 1) {
        Ok(v) => Ok(v),
        Err(_) => vectors_from(&map, Some(&map), path, VectorFormat::Fvecs, limit),
    }
}

/// Checks that `bytes` are whole records of one dimension (`elem` bytes per value) without
/// converting them; returns how many (at most `limit`) and the dimension. The same errors as
/// [`parse_records`].
fn check_records(
    bytes: &[u8],
    path: &Path,
    elem: usize,
    limit: Option<usize>,
) -> Result<(usize, usize), DatasetError> {
    let (count, dim, record) = record_shape(bytes, path, elem, limit)?;
    let records = &bytes[..count * record];
    if records
        .par_chunks_exact(record)
        .with_min_len(PARSE_MIN_RECORDS)
        .all(|rec| header_is(rec, dim))
    {
        return Ok((count, dim));
    }
    Err(wrong_header(records, path, record, dim))
}

/// The number of records (at most `limit`), their dimension and their size in bytes, from
/// the first header and the input's length.
fn record_shape(
    bytes: &[u8],
    path: &Path,
    elem: usize,
    limit: Option<usize>,
) -> Result<(usize, usize, usize), DatasetError> {
    let len = bytes.len();
    let Some(head) = bytes.first_chunk::<4>() else {
        return Err(bad(path, format!("file of {len} bytes holds no vector")));
    };
    let dim = i32::from_le_bytes(*head);
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
    Ok((count, dim, record))
}

/// Whether the record `rec` starts with the header of a `dim`-dimensional vector.
fn header_is(rec: &[u8], dim: usize) -> bool {
    i32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]) == dim as i32
}

/// The error naming the first record of `records` whose header is not `dim`.
fn wrong_header(records: &[u8], path: &Path, record: usize, dim: usize) -> DatasetError {
    let found = records
        .chunks_exact(record)
        .enumerate()
        .find(|(_, rec)| !header_is(rec, dim))
        .map(|(i, rec)| (i, i32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]])));
    match found {
        Some((i, d)) => bad(
            path,
            format!("record {i} has dimension {d}, expected {dim}"),
        ),
        None => bad(path, format!("a record's dimension is not {dim}")),
    }
}

/// Reads `.ivecs`: returns (k, ids row-major).
pub fn read_ivecs(path: &Path) -> Result<(usize, Vec<i64>), DatasetError> {
    let map = map(path)?;
    ivecs_from(&map, Some(&map), path)
}

/// The file's bytes, mapped: parsing straight from the page cache saves the copy that `read`
/// makes (70 ms of CPU for 100 MB of `.fvecs` in a profile of `dataset gt`).
fn map(path: &Path) -> Result<memmap2::Mmap, DatasetError> {
    super::map_file(path)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn fvecs(rows: &[&[f32]]) -> Vec<u8> {
        let mut out = Vec::new();
        for row in rows {
            out.extend((row.len() as i32).to_le_bytes());
            out.extend(row.iter().flat_map(|x| x.to_le_bytes()));
        }
        out
    }

    fn label() -> &'static Path {
        Path::new("x.fvecs")
    }

    #[test]
    fn records_parse_in_order_up_to_the_limit() {
        let rows: Vec<Vec<f32>> = (0..3000)
            .map(|i| (0..3).map(|j| (i * 3 + j) as f32).collect())
            .collect();
        let refs: Vec<&[f32]> = rows.iter().map(|r| r.as_slice()).collect();
        let bytes = fvecs(&refs);
        let all = parse_vectors(&bytes, label(), VectorFormat::Fvecs, None).unwrap();
        assert_eq!((all.len(), all.dim()), (3000, 3));
        assert_eq!(all.as_flat(), rows.concat().as_slice());
        let two = parse_vectors(&bytes, label(), VectorFormat::Fvecs, Some(2)).unwrap();
        assert_eq!(two.as_flat(), &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        let bvecs = [2i32.to_le_bytes().as_slice(), &[7, 255]].concat();
        let b = parse_vectors(&bvecs, label(), VectorFormat::Bvecs, None).unwrap();
        assert_eq!(b.as_flat(), &[7.0, 255.0]);
        let ivecs = [1i32.to_le_bytes(), 42i32.to_le_bytes()].concat();
        assert_eq!(parse_ivecs(&ivecs, label()).unwrap(), (1, vec![42]));
    }

    #[test]
    fn a_bad_record_is_named() {
        let rows: Vec<Vec<f32>> = (0..5000).map(|i| vec![i as f32; 4]).collect();
        let mut refs: Vec<&[f32]> = rows.iter().map(|r| r.as_slice()).collect();
        // Records 3000 and 3001 hold 6 and 2 components: together as long as two records of
        // 4, so only the header check finds them, and the first one in the file is named.
        let short = [1.0f32, 2.0];
        let long = [1.0f32; 6];
        refs[3000] = &long;
        refs[3001] = &short;
        let err = parse_vectors(&fvecs(&refs), label(), VectorFormat::Fvecs, None)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("record 3000 has dimension 6, expected 4"),
            "{err}"
        );
        let err = parse_vectors(&[1, 0], label(), VectorFormat::Fvecs, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("file of 2 bytes holds no vector"), "{err}");
        let err = parse_vectors(&fvecs(&refs[..2])[..30], label(), VectorFormat::Fvecs, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a whole number"), "{err}");
        let err = parse_vectors(&[], label(), VectorFormat::Fvecs, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("holds no vector"), "{err}");
    }

    /// Read in place, an `.fvecs` file gives the rows (and errors) that the copying reader
    /// gives, without a copy; a `.bvecs` file is converted as before.
    #[test]
    fn fvecs_read_in_place_match_the_copy() {
        let dir = tempfile::tempdir().unwrap();
        let rows: Vec<Vec<f32>> = (0..3000)
            .map(|i| (0..5).map(|j| (i * 5 + j) as f32 * 0.25 - 7.0).collect())
            .collect();
        let mut refs: Vec<&[f32]> = rows.iter().map(|r| r.as_slice()).collect();
        let path = dir.path().join("x_base.fvecs");
        std::fs::write(&path, fvecs(&refs)).unwrap();
        let copied = read_vectors(&path, None).unwrap();
        let in_place = read_vectors_in_place(&path, None).unwrap();
        assert!(in_place.is_mapped() && !copied.is_mapped());
        assert_eq!(
            in_place.strided().1,
            6,
            "rows read where they are, headers between"
        );
        assert_eq!((in_place.len(), in_place.dim()), (3000, 5));
        assert_eq!(in_place.row(2999), copied.row(2999));
        assert_eq!(in_place, copied);
        let two = read_vectors_in_place(&path, Some(2)).unwrap();
        assert_eq!(two.into_flat(), rows[..2].concat());
        // A wrong header is named as the copying reader names it.
        let long = [1.0f32; 7];
        let short = [1.0f32; 3];
        refs[1000] = &long;
        refs[1001] = &short;
        std::fs::write(&path, fvecs(&refs)).unwrap();
        let err = read_vectors_in_place(&path, None).unwrap_err().to_string();
        assert!(
            err.contains("record 1000 has dimension 7, expected 5"),
            "{err}"
        );
        std::fs::write(&path, &fvecs(&refs[..2])[..30]).unwrap();
        let err = read_vectors_in_place(&path, None).unwrap_err().to_string();
        assert!(err.contains("not a whole number"), "{err}");
        // `.bvecs` is converted, so copied.
        let bpath = dir.path().join("x_base.bvecs");
        std::fs::write(&bpath, [2i32.to_le_bytes().as_slice(), &[7, 255]].concat()).unwrap();
        let b = read_vectors_in_place(&bpath, None).unwrap();
        assert!(!b.is_mapped());
        assert_eq!(b.as_flat(), &[7.0, 255.0]);
    }
}
