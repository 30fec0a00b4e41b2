//! big-ann-benchmarks' binary formats (the NeurIPS'21 and '23 tracks: BIGANN, DEEP1B,
//! MSTuring, Text-to-Image, ...), as `benchmark/dataset_io.py` reads and writes them.
//!
//! A vector file is an 8-byte header, the row count `n` and the dimension `d` as little-endian
//! `u32`, followed by `n × d` components row-major: `f32` in `.fbin`, `u8` in `.u8bin`, `i8` in
//! `.i8bin`. A ground-truth file (`GT.public.1B.ibin`, `groundtruth.public.10K.ibin`) has the
//! header `n, k`, then `n × k` `i32` neighbour ids, then `n × k` `f32` distances.
//!
//! A dataset is a directory holding one `*base*` vector file, one `*query*` vector file and
//! optionally one ground-truth file. The files carry no metric.
//!
//! One rule holds throughout: a header is checked against the file's size before
//! anything is allocated, and only the rows that `--limit` / `--max-queries` keep are read, so
//! a prefix of a billion-row file costs what the prefix costs.

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

mod directory;
mod write;

pub(super) use directory::load;
pub use directory::{BigannFiles, find_files};
pub use write::{dataset_file_names, write_dataset, write_truth, write_vectors};

use super::DatasetError;
use super::spill::{SpillNote, SpillTarget};
use crate::vectors::Vectors;

/// Bytes of the `n, d` header every big-ann file starts with.
const HEADER_BYTES: u64 = 8;

/// Bytes read per call while streaming rows (a multiple of every element size).
const CHUNK_BYTES: usize = 1 << 20;

fn bad(path: &Path, message: String) -> DatasetError {
    DatasetError::Format {
        path: path.to_path_buf(),
        message,
    }
}

pub use crate::types::ElementType;

/// The element type a file's extension names, if it is a big-ann vector file.
pub fn file_type(path: &Path) -> Option<ElementType> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("fbin") => Some(ElementType::Float32),
        Some("u8bin") => Some(ElementType::Uint8),
        Some("i8bin") => Some(ElementType::Int8),
        _ => None,
    }
}

/// The file extension of vectors of `elem`, without the dot. The format has no file type
/// for float16 (`f16bin` names the one it would be; [`write_vectors`] refuses it).
pub fn extension(elem: ElementType) -> &'static str {
    match elem {
        ElementType::Float32 => "fbin",
        ElementType::Float16 => "f16bin",
        ElementType::Uint8 => "u8bin",
        ElementType::Int8 => "i8bin",
    }
}

/// One component from its `bytes()` little-endian bytes.
fn decode(elem: ElementType, bytes: &[u8]) -> f32 {
    match (elem, bytes) {
        (ElementType::Float32, [a, b, c, d]) => f32::from_le_bytes([*a, *b, *c, *d]),
        (ElementType::Uint8, [a]) => f32::from(*a),
        (ElementType::Int8, [a]) => f32::from(*a as i8),
        // `chunks_exact(bytes())` never hands over another length, and `file_type` never
        // names float16.
        _ => f32::NAN,
    }
}

/// A checked header: the file's size is exactly what it announces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BinHeader {
    /// Rows in the file (`n`).
    pub rows: usize,
    /// Components per row (`d`), or neighbours per row (`k`) in a ground-truth file.
    pub cols: usize,
}

/// Reads the 8-byte header of a file of `len` bytes.
fn read_header(reader: &mut impl Read, len: u64, path: &Path) -> Result<(u32, u32), DatasetError> {
    if len < HEADER_BYTES {
        return Err(bad(
            path,
            format!(
                "file of {len} bytes is shorter than the {HEADER_BYTES}-byte header (row count and \
                 dimension as u32): empty, truncated, or not a big-ann-benchmarks file"
            ),
        ));
    }
    let mut head = [0u8; 8];
    reader
        .read_exact(&mut head)
        .map_err(|e| DatasetError::io(path, e))?;
    let [a, b, c, d, e, f, g, h] = head;
    Ok((
        u32::from_le_bytes([a, b, c, d]),
        u32::from_le_bytes([e, f, g, h]),
    ))
}

fn to_usize(value: u32, path: &Path) -> Result<usize, DatasetError> {
    usize::try_from(value).map_err(|_| bad(path, format!("{value} does not fit this machine")))
}

/// Checks a vector file's header against its size: every later count comes from here.
fn check_vector_header(
    path: &Path,
    len: u64,
    (rows, dim): (u32, u32),
    elem: ElementType,
) -> Result<BinHeader, DatasetError> {
    if dim == 0 {
        return Err(bad(
            path,
            format!("header gives dimension 0 ({rows} rows): not a usable vector file"),
        ));
    }
    if rows == 0 {
        return Err(bad(
            path,
            "header gives 0 rows: the file holds no vector".into(),
        ));
    }
    let expected =
        u128::from(HEADER_BYTES) + u128::from(rows) * u128::from(dim) * elem.bytes() as u128;
    let actual = u128::from(len);
    if actual < expected {
        return Err(bad(
            path,
            format!(
                "header claims {rows} rows × {dim} dimensions of {} ({expected} bytes with the \
                 header) but the file has {len} bytes: truncated, or not a .{} file",
                elem.name(),
                extension(elem)
            ),
        ));
    }
    if actual > expected {
        return Err(bad(
            path,
            format!(
                "the file has {len} bytes but its header's {rows} rows × {dim} dimensions of {} \
                 make {expected} ({} bytes too many): a wrong header, or not a .{} file",
                elem.name(),
                actual - expected,
                extension(elem)
            ),
        ));
    }
    Ok(BinHeader {
        rows: to_usize(rows, path)?,
        cols: to_usize(dim, path)?,
    })
}

/// Checks a ground-truth file's header (`n, k`, then ids and distances) against its size.
fn check_truth_header(
    path: &Path,
    len: u64,
    (rows, k): (u32, u32),
) -> Result<BinHeader, DatasetError> {
    if k == 0 || rows == 0 {
        return Err(bad(
            path,
            format!("header gives {rows} rows of k = {k} neighbours: the file holds no truth"),
        ));
    }
    // Per row: k i32 ids and k f32 distances.
    let row_bytes = u128::from(k) * 8;
    let expected = u128::from(HEADER_BYTES) + u128::from(rows) * row_bytes;
    if u128::from(len) != expected {
        let body = u128::from(len.saturating_sub(HEADER_BYTES));
        let per_row = u128::from(rows) * 8;
        let implied = if len >= HEADER_BYTES && body.is_multiple_of(per_row) {
            format!("; its size fits k = {}", body / per_row)
        } else {
            String::new()
        };
        return Err(bad(
            path,
            format!(
                "header gives {rows} rows of k = {k} neighbours, which take {expected} bytes \
                 (header, {rows} × {k} int32 ids, as many float32 distances), but the file has \
                 {len} bytes{implied}: k disagrees with the size, or the file is truncated"
            ),
        ));
    }
    Ok(BinHeader {
        rows: to_usize(rows, path)?,
        cols: to_usize(k, path)?,
    })
}

/// Reads `count` components of `elem_size` bytes each from `reader`. `count` must come from a
/// checked header, so it is bounded by the file's size.
fn read_components<T: Copy + Default>(
    reader: &mut impl Read,
    path: &Path,
    count: usize,
    elem_size: usize,
    decode: impl FnMut(&[u8]) -> T,
) -> Result<Vec<T>, DatasetError> {
    let mut out = Vec::new();
    out.try_reserve_exact(count)
        .map_err(|_| bad(path, format!("{count} components do not fit in memory")))?;
    out.resize(count, T::default());
    fill_components(reader, path, &mut out, elem_size, decode)?;
    Ok(out)
}

/// Reads `out.len()` components, decoding each from `elem_size` bytes.
fn fill_components<T>(
    reader: &mut impl Read,
    path: &Path,
    out: &mut [T],
    elem_size: usize,
    mut decode: impl FnMut(&[u8]) -> T,
) -> Result<(), DatasetError> {
    let per_chunk = (CHUNK_BYTES / elem_size).max(1);
    let mut buf = vec![0u8; per_chunk.min(out.len()) * elem_size];
    for part in out.chunks_mut(per_chunk) {
        let bytes = buf
            .get_mut(..part.len() * elem_size)
            .ok_or_else(|| bad(path, "read buffer smaller than a chunk".into()))?;
        reader
            .read_exact(bytes)
            .map_err(|e| DatasetError::io(path, e))?;
        for (o, b) in part.iter_mut().zip(bytes.chunks_exact(elem_size)) {
            *o = decode(b);
        }
    }
    Ok(())
}

/// Vectors read from a big-ann file, with how many the file holds.
#[derive(Debug)]
pub struct BinVectors {
    /// The rows kept (at most `limit`), converted to f32.
    pub vectors: Vectors,
    /// Rows in the file, kept or not.
    pub rows_in_file: usize,
}

/// A vector file whose header has been checked, positioned at its first row.
struct VectorSource<R> {
    reader: R,
    path: PathBuf,
    elem: ElementType,
    header: BinHeader,
}

impl<R: Read> VectorSource<R> {
    fn open(mut reader: R, len: u64, path: &Path, elem: ElementType) -> Result<Self, DatasetError> {
        let raw = read_header(&mut reader, len, path)?;
        let header = check_vector_header(path, len, raw, elem)?;
        Ok(VectorSource {
            reader,
            path: path.to_path_buf(),
            elem,
            header,
        })
    }

    /// Reads the first `limit` rows (all without a limit).
    fn read(mut self, limit: Option<usize>) -> Result<BinVectors, DatasetError> {
        let BinHeader { rows, cols } = self.header;
        let keep = limit.map_or(rows, |l| l.min(rows));
        // keep × cols × size ≤ the checked file size, which is a u64 the OS gave us.
        let count = keep
            .checked_mul(cols)
            .ok_or_else(|| bad(&self.path, format!("{keep} × {cols} components overflow")))?;
        let elem = self.elem;
        let data = read_components(&mut self.reader, &self.path, count, elem.bytes(), |b| {
            decode(elem, b)
        })?;
        let vectors = Vectors::new(data, cols).map_err(|e| bad(&self.path, e.to_string()))?;
        Ok(BinVectors {
            vectors,
            rows_in_file: rows,
        })
    }
}

impl<R: Read> VectorSource<R> {
    /// The rows `target` keeps, decoded to f32: mapped from an earlier spill, or read into a
    /// new spill file when they are too many for memory, else read into memory.
    fn read_or_spill(mut self, target: SpillTarget<'_>) -> Result<BinVectors, DatasetError> {
        let BinHeader { rows, cols } = self.header;
        let keep = target.kept(rows);
        if !target.needed(keep, cols) {
            return self.read(target.limit);
        }
        if let Some((vectors, _)) = target.find(rows) {
            return Ok(BinVectors {
                vectors,
                rows_in_file: rows,
            });
        }
        let mut spill = target.create(keep, cols)?;
        let elem = self.elem;
        fill_components(
            &mut self.reader,
            &self.path,
            spill.as_mut_slice(),
            elem.bytes(),
            |b| decode(elem, b),
        )?;
        let vectors = spill.finish(&SpillNote {
            rows_in_source: rows,
            rounded: false,
        })?;
        Ok(BinVectors {
            vectors,
            rows_in_file: rows,
        })
    }
}

/// Stored neighbours read from a ground-truth file. The distances that follow the ids are not
/// read: [`assemble`](super::assemble) recomputes them with ragdbeval's conventions anyway.
#[derive(Debug)]
pub struct BinTruth {
    /// Neighbours per row.
    pub k: usize,
    /// The ids of the rows kept, row-major.
    pub ids: Vec<i64>,
    /// Rows in the file, kept or not.
    pub rows_in_file: usize,
}

fn truth_from(
    mut reader: impl Read,
    len: u64,
    path: &Path,
    max_rows: Option<usize>,
) -> Result<BinTruth, DatasetError> {
    let raw = read_header(&mut reader, len, path)?;
    let BinHeader { rows, cols: k } = check_truth_header(path, len, raw)?;
    let keep = max_rows.map_or(rows, |m| m.min(rows));
    let count = keep
        .checked_mul(k)
        .ok_or_else(|| bad(path, format!("{keep} × {k} ids overflow")))?;
    let ids = read_components(&mut reader, path, count, 4, |b| match b {
        [a, b, c, d] => i64::from(i32::from_le_bytes([*a, *b, *c, *d])),
        _ => -1,
    })?;
    Ok(BinTruth {
        k,
        ids,
        rows_in_file: rows,
    })
}

/// Vectors from bytes in memory (`label` names them in errors): what [`read_vectors`] does
/// with a file, for the fuzz target `bigann`.
pub fn parse_vectors(
    bytes: &[u8],
    label: &Path,
    elem: ElementType,
    limit: Option<usize>,
) -> Result<BinVectors, DatasetError> {
    VectorSource::open(bytes, bytes.len() as u64, label, elem)?.read(limit)
}

/// A ground-truth file from bytes in memory, for the fuzz target `bigann`.
pub fn parse_truth(
    bytes: &[u8],
    label: &Path,
    max_rows: Option<usize>,
) -> Result<BinTruth, DatasetError> {
    truth_from(bytes, bytes.len() as u64, label, max_rows)
}

fn open(path: &Path) -> Result<(BufReader<File>, u64), DatasetError> {
    let file = File::open(path).map_err(|e| DatasetError::io(path, e))?;
    let len = file
        .metadata()
        .map_err(|e| DatasetError::io(path, e))?
        .len();
    Ok((BufReader::with_capacity(CHUNK_BYTES, file), len))
}

/// Reads the first `limit` rows (all without one) of a `.fbin`, `.u8bin` or `.i8bin` file.
pub fn read_vectors(
    path: &Path,
    elem: ElementType,
    limit: Option<usize>,
) -> Result<BinVectors, DatasetError> {
    let (reader, len) = open(path)?;
    VectorSource::open(reader, len, path, elem)?.read(limit)
}

/// The first `limit` rows (all without one) of a `.fbin` file, memory-mapped instead of read:
/// nothing is copied, rows are paged in when first used, and rows past `limit` are never
/// touched. The header is checked against the file's size as by [`read_vectors`].
pub fn map_vectors(path: &Path, limit: Option<usize>) -> Result<BinVectors, DatasetError> {
    let (reader, len) = open(path)?;
    let source = VectorSource::open(reader, len, path, ElementType::Float32)?;
    let BinHeader { rows, cols } = source.header;
    let keep = limit.map_or(rows, |l| l.min(rows));
    let map = super::map_file(path)?;
    let vectors = Vectors::mapped(std::sync::Arc::new(map), HEADER_BYTES as usize, keep, cols)
        .map_err(|e| bad(path, e.to_string()))?;
    Ok(BinVectors {
        vectors,
        rows_in_file: rows,
    })
}

/// Reads the ids of the first `max_rows` rows (all without one) of a ground-truth file.
pub fn read_truth(path: &Path, max_rows: Option<usize>) -> Result<BinTruth, DatasetError> {
    let (reader, len) = open(path)?;
    truth_from(reader, len, path, max_rows)
}

/// The checked header of a file without reading its rows (`dataset info`): a vector file if
/// `elem` is given, a ground-truth file otherwise.
pub fn read_file_header(path: &Path, elem: Option<ElementType>) -> Result<BinHeader, DatasetError> {
    let (mut reader, len) = open(path)?;
    let raw = read_header(&mut reader, len, path)?;
    match elem {
        Some(elem) => check_vector_header(path, len, raw, elem),
        None => check_truth_header(path, len, raw),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::groundtruth::GroundTruth;

    fn file(rows: u32, dim: u32, body: &[u8]) -> Vec<u8> {
        let mut out = rows.to_le_bytes().to_vec();
        out.extend_from_slice(&dim.to_le_bytes());
        out.extend_from_slice(body);
        out
    }

    fn label() -> &'static Path {
        Path::new("x.fbin")
    }

    #[test]
    fn reads_every_element_type_row_major() {
        let f: Vec<u8> = [1.5f32, -2.0, 3.25, 4.0, 5.0, 6.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let v = parse_vectors(&file(3, 2, &f), label(), ElementType::Float32, None).unwrap();
        assert_eq!(v.rows_in_file, 3);
        assert_eq!(v.vectors.dim(), 2);
        assert_eq!(v.vectors.row(1), &[3.25, 4.0]);
        let u = parse_vectors(
            &file(2, 2, &[0, 255, 7, 128]),
            label(),
            ElementType::Uint8,
            None,
        )
        .unwrap();
        assert_eq!(u.vectors.as_flat(), &[0.0, 255.0, 7.0, 128.0]);
        let i = parse_vectors(
            &file(1, 3, &[0x80, 0xff, 0x7f]),
            label(),
            ElementType::Int8,
            None,
        )
        .unwrap();
        assert_eq!(i.vectors.as_flat(), &[-128.0, -1.0, 127.0]);
    }

    #[test]
    fn a_limit_reads_only_the_kept_rows() {
        let bytes = file(4, 1, &[1, 2, 3, 4]);
        let v = parse_vectors(&bytes, label(), ElementType::Uint8, Some(2)).unwrap();
        assert_eq!(v.vectors.as_flat(), &[1.0, 2.0]);
        assert_eq!(v.rows_in_file, 4);
        // A limit above the file keeps the file.
        let v = parse_vectors(&bytes, label(), ElementType::Uint8, Some(9)).unwrap();
        assert_eq!(v.vectors.len(), 4);
    }

    #[test]
    fn headers_that_disagree_with_the_size_are_refused_before_allocating() {
        let err = |bytes: &[u8], elem| {
            parse_vectors(bytes, label(), elem, None)
                .unwrap_err()
                .to_string()
        };
        // u32::MAX × u32::MAX floats: refused from the header, nothing allocated.
        let e = err(&file(u32::MAX, u32::MAX, &[0; 16]), ElementType::Float32);
        assert!(e.contains("x.fbin") && e.contains("4294967295 rows"), "{e}");
        assert!(e.contains("24 bytes"), "{e}");
        let e = err(&file(2, 2, &[0; 15]), ElementType::Float32);
        assert!(e.contains("truncated") && e.contains("23 bytes"), "{e}");
        let e = err(&file(1, 2, &[0; 3]), ElementType::Uint8);
        assert!(e.contains("1 bytes too many"), "{e}");
        let e = err(&file(5, 0, &[]), ElementType::Uint8);
        assert!(e.contains("dimension 0"), "{e}");
        let e = err(&file(0, 4, &[]), ElementType::Uint8);
        assert!(e.contains("0 rows"), "{e}");
        let e = err(&[], ElementType::Float32);
        assert!(e.contains("0 bytes") && e.contains("header"), "{e}");
        let e = err(&[1, 0, 0], ElementType::Float32);
        assert!(e.contains("3 bytes"), "{e}");
    }

    fn truth_file(rows: u32, k: u32, ids: &[i32], dists: &[f32]) -> Vec<u8> {
        let body: Vec<u8> = ids
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .chain(dists.iter().flat_map(|x| x.to_le_bytes()))
            .collect();
        file(rows, k, &body)
    }

    #[test]
    fn truth_reads_ids_of_the_kept_rows() {
        let bytes = truth_file(2, 2, &[3, 1, 0, 2], &[0.5, 0.7, 0.1, 0.2]);
        let t = parse_truth(&bytes, Path::new("gt.ibin"), None).unwrap();
        assert_eq!((t.k, t.rows_in_file), (2, 2));
        assert_eq!(t.ids, vec![3, 1, 0, 2]);
        let t = parse_truth(&bytes, Path::new("gt.ibin"), Some(1)).unwrap();
        assert_eq!(t.ids, vec![3, 1]);
    }

    #[test]
    fn truth_whose_k_disagrees_with_its_size_names_both() {
        // Written with k = 2 but the header says 3.
        let bytes = truth_file(2, 3, &[3, 1, 0, 2], &[0.5, 0.7, 0.1, 0.2]);
        let e = parse_truth(&bytes, Path::new("gt.ibin"), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("gt.ibin") && e.contains("k = 3"), "{e}");
        assert!(e.contains("56 bytes") && e.contains("40 bytes"), "{e}");
        assert!(e.contains("fits k = 2"), "{e}");
        let e = parse_truth(&truth_file(2, 0, &[], &[]), Path::new("gt.ibin"), None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("k = 0"), "{e}");
    }

    #[test]
    fn integer_types_refuse_what_they_cannot_hold() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.u8bin");
        for (bad_value, elem) in [
            (0.5, ElementType::Uint8),
            (256.0, ElementType::Uint8),
            (-1.0, ElementType::Uint8),
            (128.0, ElementType::Int8),
            (-129.0, ElementType::Int8),
        ] {
            let v = Vectors::new(vec![1.0, bad_value], 2).unwrap();
            let e = write_vectors(&path, &v, elem).unwrap_err().to_string();
            assert!(e.contains("vector 0") && e.contains("position 1"), "{e}");
            assert!(!path.exists(), "nothing written for {bad_value}");
        }
        let v = Vectors::new(vec![-128.0, 127.0, 0.0, -0.0], 2).unwrap();
        write_vectors(&path, &v, ElementType::Int8).unwrap();
        let back = read_vectors(&path, ElementType::Int8, None).unwrap();
        assert_eq!(back.vectors, v);
    }

    #[test]
    fn a_dataset_round_trips_through_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("set");
        let train = Vectors::new((0..24).map(|x| x as f32).collect(), 4).unwrap();
        let test = Vectors::new(vec![1.0, 2.0, 3.0, 4.0], 4).unwrap();
        let truth = GroundTruth {
            k: 2,
            ids: vec![0, 1],
            distances: vec![1.0, 7.0],
        };
        write_dataset(&out, ElementType::Uint8, &train, &test, &truth).unwrap();
        let files = find_files(&out).unwrap().unwrap();
        assert_eq!(files.base_type, ElementType::Uint8);
        let back = read_vectors(&files.base, files.base_type, None).unwrap();
        assert_eq!(back.vectors, train);
        let gt = read_truth(files.groundtruth.as_deref().unwrap(), None).unwrap();
        assert_eq!(gt.ids, vec![0, 1]);
        // Refused over an existing dataset, which is left alone.
        let e = write_dataset(&out, ElementType::Uint8, &train, &test, &truth).unwrap_err();
        assert!(e.to_string().contains("already exists"), "{e}");
        assert!(find_files(&out).unwrap().is_some());
        // Nothing but the output directory was left in the parent.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn directory_roles_and_ambiguity() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert!(
            find_files(d).unwrap().is_none(),
            "no big-ann file: not ours"
        );
        std::fs::write(d.join("base.1B.u8bin"), b"").unwrap();
        std::fs::write(d.join("query.public.10K.u8bin"), b"").unwrap();
        std::fs::write(d.join("query.learn.50M.u8bin"), b"").unwrap();
        std::fs::write(d.join("GT.public.1B.ibin"), b"").unwrap();
        std::fs::write(d.join("GT.public.1B.ibin.sha256"), b"").unwrap();
        let f = find_files(d).unwrap().unwrap();
        assert!(f.query.ends_with("query.public.10K.u8bin"));
        assert!(f.groundtruth.unwrap().ends_with("GT.public.1B.ibin"));
        std::fs::write(d.join("base.10M.fbin"), b"").unwrap();
        let e = find_files(d).unwrap_err().to_string();
        assert!(
            e.contains("more than one base file")
                && e.contains("base.1B.u8bin")
                && e.contains("base.10M.fbin"),
            "{e}"
        );
    }
}
