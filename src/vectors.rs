//! A dense row-major matrix of `f32` vectors: the one representation every phase shares.
//!
//! The dataset is held once and borrowed by every phase and client; nothing in the hot path
//! copies it. The rows live either in memory or in a read-only memory map of the file they
//! came from (a `.fbin` base): a mapped dataset can be larger than the machine's memory,
//! since the kernel pages rows in as they are read and drops clean pages under pressure. For
//! `dataset gt` a `.fvecs` base is mapped too, its rows a record apart ([`Vectors::strided`]).

use std::sync::{Arc, OnceLock};

use rayon::prelude::*;

/// `len()` vectors of `dim` floats each, stored contiguously (or, read in place from a record
/// file, a fixed stride apart: see [`Vectors::mapped_records`]).
#[derive(Debug, Clone, Default)]
pub struct Vectors {
    storage: Storage,
    dim: usize,
}

/// Where the rows are.
#[derive(Debug, Clone)]
enum Storage {
    Owned(Vec<f32>),
    /// `len` little-endian f32 values at byte `offset` of the map (4-byte aligned, checked
    /// when the map is wrapped).
    Mapped {
        map: Arc<memmap2::Mmap>,
        offset: usize,
        len: usize,
    },
    /// `rows` rows of `dim` little-endian f32 values read in place from records that carry a
    /// header each (TEXMEX `.fvecs`): row `i` starts `4·stride·i` bytes after byte `offset`
    /// of the map. `flat` is the contiguous copy, made only if a caller asks for one.
    Records {
        map: Arc<memmap2::Mmap>,
        offset: usize,
        rows: usize,
        stride: usize,
        flat: OnceLock<Vec<f32>>,
    },
}

impl Default for Storage {
    fn default() -> Storage {
        Storage::Owned(Vec::new())
    }
}

impl PartialEq for Vectors {
    fn eq(&self, other: &Vectors) -> bool {
        self.dim == other.dim && self.as_flat() == other.as_flat()
    }
}

/// Why a memory map cannot be read as rows of f32.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MapError {
    #[error(
        "{rows} rows of {dim} floats at byte {offset} do not fit in the {map_len} bytes mapped"
    )]
    OutOfBounds {
        rows: usize,
        dim: usize,
        offset: usize,
        map_len: usize,
    },
    #[error("the rows start at byte {offset}, which is not 4-byte aligned")]
    Misaligned { offset: usize },
    #[error("memory-mapped f32 rows need a little-endian machine")]
    BigEndian,
    #[error(transparent)]
    Vectors(#[from] VectorsError),
}

/// What is wrong with a matrix of vectors.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum VectorsError {
    #[error("dimension must be at least 1")]
    ZeroDim,
    #[error("{len} floats do not divide into rows of dimension {dim}")]
    Ragged { len: usize, dim: usize },
    #[error("{what} vector {row} has a non-finite value ({value}) at position {col}")]
    NonFinite {
        what: String,
        row: usize,
        col: usize,
        value: f32,
    },
    #[error(
        "{what} vector {row} has zero length, so its angular (cosine) distance is undefined; \
         remove it or use --distance euclidean or dot"
    )]
    ZeroNorm { what: String, row: usize },
}

/// Values per task of [`Vectors::check_finite`]'s parallel pass.
const FINITE_CHUNK: usize = 1 << 16;

impl Vectors {
    /// Wraps a flat buffer; fails if it is not a whole number of rows.
    pub fn new(data: Vec<f32>, dim: usize) -> Result<Vectors, VectorsError> {
        if dim == 0 {
            return Err(VectorsError::ZeroDim);
        }
        if !data.len().is_multiple_of(dim) {
            return Err(VectorsError::Ragged {
                len: data.len(),
                dim,
            });
        }
        Ok(Vectors {
            storage: Storage::Owned(data),
            dim,
        })
    }

    /// `rows` rows of `dim` little-endian f32 values at byte `offset` of `map`, read in place.
    /// Nothing is copied: a row is paged in when it is first read.
    pub fn mapped(
        map: Arc<memmap2::Mmap>,
        offset: usize,
        rows: usize,
        dim: usize,
    ) -> Result<Vectors, MapError> {
        let len = mapped_values(&map, offset, rows, dim, dim)?;
        Ok(Vectors {
            storage: Storage::Mapped { map, offset, len },
            dim,
        })
    }

    /// `rows` rows of `dim` little-endian f32 values read in place from a record file:
    /// row `i` is the `dim` values at byte `offset + 4·stride·i` of `map` (the values between
    /// rows, the records' headers, are not the caller's to check here). Nothing is copied
    /// until a caller asks for the rows as one contiguous slice ([`Vectors::as_flat`]): the
    /// exact ground truth ([`Vectors::strided`]) and the rows' bytes
    /// ([`Vectors::copy_bytes`]) read them where they are.
    pub fn mapped_records(
        map: Arc<memmap2::Mmap>,
        offset: usize,
        rows: usize,
        dim: usize,
        stride: usize,
    ) -> Result<Vectors, MapError> {
        // A stride below `dim` would make rows overlap, which no record file does.
        let stride = stride.max(dim);
        mapped_values(&map, offset, rows, dim, stride)?;
        Ok(Vectors {
            storage: Storage::Records {
                map,
                offset,
                rows,
                stride,
                flat: OnceLock::new(),
            },
            dim,
        })
    }

    /// Whether the rows are read in place from a memory-mapped file.
    pub fn is_mapped(&self) -> bool {
        matches!(
            self.storage,
            Storage::Mapped { .. } | Storage::Records { .. }
        )
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        match &self.storage {
            Storage::Records { rows, .. } => *rows,
            _ => self.as_flat().len().checked_div(self.dim).unwrap_or(0),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Row `i`. Panics if out of range, like slice indexing.
    #[inline]
    pub fn row(&self, i: usize) -> &[f32] {
        let (data, stride) = self.strided();
        &data[i * stride..i * stride + self.dim]
    }

    /// The rows where they are, and the distance in values from one row's start to the
    /// next: row `i` is `data[i·stride..i·stride + dim]`. The stride is `dim` except for rows
    /// read in place from a record file, whose headers sit between them; nothing is copied.
    #[inline]
    pub fn strided(&self) -> (&[f32], usize) {
        match &self.storage {
            Storage::Records {
                map,
                offset,
                rows,
                stride,
                ..
            } => {
                let values = rows
                    .checked_sub(1)
                    .map_or(0, |last| last * stride + self.dim);
                // SAFETY: `mapped_records` checked that `offset + 4·values` lies inside the
                // map and that the start is f32-aligned; every bit pattern is a valid f32;
                // the map is read-only and lives as long as `self` (the Arc).
                let data = unsafe {
                    std::slice::from_raw_parts(map.as_ptr().add(*offset).cast::<f32>(), values)
                };
                (data, *stride)
            }
            _ => (self.as_flat(), self.dim),
        }
    }

    /// Copies bytes `start..start + out.len()` of the rows' contiguous image in memory (what
    /// [`Vectors::as_flat`] holds, as native-endian bytes: little-endian wherever rows are
    /// read in place) into `out`, without making that image when the rows are read in place
    /// from a record file. Panics past the end, like slice indexing.
    pub fn copy_bytes(&self, start: usize, out: &mut [u8]) {
        let (data, stride) = self.strided();
        if stride == self.dim {
            out.copy_from_slice(&as_bytes(data)[start..start + out.len()]);
            return;
        }
        let row_bytes = self.dim * 4;
        let mut at = start;
        let mut done = 0;
        while done < out.len() {
            let (row, within) = (at / row_bytes, at % row_bytes);
            let bytes = as_bytes(self.row(row));
            let n = (row_bytes - within).min(out.len() - done);
            out[done..done + n].copy_from_slice(&bytes[within..within + n]);
            done += n;
            at += n;
        }
    }

    /// Rows `start..end` as one flat slice.
    pub fn rows(&self, start: usize, end: usize) -> &[f32] {
        &self.as_flat()[start * self.dim..end * self.dim]
    }

    #[inline]
    pub fn as_flat(&self) -> &[f32] {
        match &self.storage {
            Storage::Owned(data) => data,
            Storage::Mapped { map, offset, len } => {
                // SAFETY: `mapped` checked that `offset + 4·len` lies inside the map and that
                // the start is f32-aligned; every bit pattern is a valid f32; the map is
                // read-only and lives as long as `self` (the Arc). The file must not be
                // changed while it is mapped, as for any benchmark input.
                unsafe { std::slice::from_raw_parts(map.as_ptr().add(*offset).cast::<f32>(), *len) }
            }
            // Made once, on the first call: a caller that needs one slice (an engine's
            // batch, a test's comparison) pays the copy a loader would have made.
            Storage::Records { flat, .. } => flat.get_or_init(|| self.gather()),
        }
    }

    /// Whether rows read in place from a record file have been copied into one buffer (by a
    /// call of [`Vectors::as_flat`]): for tests that hold a path to reading them in place.
    #[cfg(test)]
    pub(crate) fn records_copied(&self) -> bool {
        matches!(&self.storage, Storage::Records { flat, .. } if flat.get().is_some())
    }

    /// The rows of a record file as one contiguous buffer.
    fn gather(&self) -> Vec<f32> {
        let mut out = matrix_with_capacity(self.len() * self.dim);
        for i in 0..self.len() {
            out.extend_from_slice(self.row(i));
        }
        out
    }

    /// The rows as an owned buffer (a copy when they are mapped).
    pub fn into_flat(self) -> Vec<f32> {
        match self.storage {
            Storage::Owned(data) => data,
            Storage::Mapped { .. } => self.as_flat().to_vec(),
            Storage::Records { ref flat, .. } => match flat.get() {
                Some(data) => data.clone(),
                None => self.gather(),
            },
        }
    }

    pub fn iter(&self) -> std::slice::ChunksExact<'_, f32> {
        self.as_flat().chunks_exact(self.dim)
    }

    /// Keeps the first `n` rows. Mapped rows past `n` are never read.
    pub fn truncate(&mut self, n: usize) {
        match &mut self.storage {
            Storage::Owned(data) => {
                data.truncate(n * self.dim);
                data.shrink_to_fit();
            }
            Storage::Mapped { len, .. } => *len = (*len).min(n * self.dim),
            Storage::Records { rows, flat, .. } => {
                *rows = (*rows).min(n);
                if let Some(data) = flat.get_mut() {
                    data.truncate(n * self.dim);
                }
            }
        }
    }

    /// Fails on the first NaN or infinite value, naming the row and column.
    pub fn check_finite(&self, what: &str) -> Result<(), VectorsError> {
        // Fast path: a pass without early exit that the compiler vectorises (the sum of
        // `v * 0.0` that stood here is one chain of dependent additions: 35 ms for 100 MB);
        // only when it fails do we look for the culprit.
        let finite = |values: &[f32]| values.iter().fold(true, |ok, v| ok & v.is_finite());
        let all_finite = match self.strided() {
            (data, stride) if stride == self.dim => data.par_chunks(FINITE_CHUNK).all(finite),
            _ => (0..self.len())
                .into_par_iter()
                .with_min_len(FINITE_CHUNK / self.dim + 1)
                .all(|i| finite(self.row(i))),
        };
        if all_finite {
            return Ok(());
        }
        for i in 0..self.len() {
            if let Some((col, v)) = self.row(i).iter().enumerate().find(|(_, v)| !v.is_finite()) {
                return Err(VectorsError::NonFinite {
                    what: what.to_string(),
                    row: i,
                    col,
                    value: *v,
                });
            }
        }
        Ok(())
    }

    /// Fails on the first all-zero row: under the angular metric its distance is undefined
    /// (engines normalise vectors and would divide by zero, each in its own way).
    pub fn check_nonzero_norm(&self, what: &str) -> Result<(), VectorsError> {
        match (0..self.len()).position(|i| self.row(i).iter().all(|v| *v == 0.0)) {
            Some(row) => Err(VectorsError::ZeroNorm {
                what: what.to_string(),
                row,
            }),
            None => Ok(()),
        }
    }

    /// Size of the vector payload in bytes.
    pub fn byte_len(&self) -> usize {
        self.len() * self.dim * std::mem::size_of::<f32>()
    }
}

/// Checks that `rows` rows of `dim` f32 values, each `stride` values after the last, fit in
/// `map` from byte `offset` and can be read there; returns how many values they span.
fn mapped_values(
    map: &memmap2::Mmap,
    offset: usize,
    rows: usize,
    dim: usize,
    stride: usize,
) -> Result<usize, MapError> {
    if dim == 0 {
        return Err(VectorsError::ZeroDim.into());
    }
    if cfg!(target_endian = "big") {
        return Err(MapError::BigEndian);
    }
    let map_len = map.len();
    let out_of_bounds = || MapError::OutOfBounds {
        rows,
        dim,
        offset,
        map_len,
    };
    // The last row ends `stride·(rows - 1) + dim` values after the first one starts.
    let values = match rows.checked_sub(1) {
        None => 0,
        Some(last) => last
            .checked_mul(stride)
            .and_then(|v| v.checked_add(dim))
            .ok_or_else(out_of_bounds)?,
    };
    values
        .checked_mul(4)
        .and_then(|bytes| bytes.checked_add(offset))
        .filter(|&end| end <= map_len)
        .ok_or_else(out_of_bounds)?;
    // A map starts on a page boundary, so the offset decides the alignment.
    if !(map.as_ptr() as usize + offset).is_multiple_of(std::mem::align_of::<f32>()) {
        return Err(MapError::Misaligned { offset });
    }
    Ok(values)
}

/// The bytes of `values` (an f32 has no padding and every byte is a valid u8).
fn as_bytes(values: &[f32]) -> &[u8] {
    // SAFETY: the length is the slice's size in bytes, within the same allocation.
    unsafe {
        std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
    }
}

/// A zeroed buffer of `len` values for a matrix's rows, to be filled by a loader.
///
/// A large one asks the kernel for transparent huge pages (Linux's default `madvise` mode
/// gives them only on request): rows read scattered over a large matrix (the passing points
/// of a filter, a live set, the candidates of the exact re-rank) then need no page-table walk
/// each (with 4 KB pages every 512-byte row of a 1M-row matrix is on a page of its own, far
/// more pages than the TLB holds), and loading faults the buffer in 2 MB at a time. A refusal
/// changes speed, never a value.
pub fn zeroed_matrix<T: Clone + Default>(len: usize) -> Vec<T> {
    // A large zeroed allocation is fresh, untouched memory: the advice applies when its pages
    // are first written.
    let buf = vec![T::default(); len];
    advise_huge_pages(buf.as_ptr().cast(), std::mem::size_of_val(buf.as_slice()));
    buf
}

/// An empty buffer with room for `len` values of a matrix, with [`zeroed_matrix`]'s advice.
pub fn matrix_with_capacity<T>(len: usize) -> Vec<T> {
    let buf: Vec<T> = Vec::with_capacity(len);
    advise_huge_pages(buf.as_ptr().cast(), len * std::mem::size_of::<T>());
    buf
}

/// Buffers smaller than this are left to the allocator (a huge page is 2 MB; a small buffer
/// may share pages with other allocations that were already written).
const HUGE_PAGE_MIN_BYTES: usize = 16 << 20;

fn advise_huge_pages(start: *const u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        if bytes < HUGE_PAGE_MIN_BYTES {
            return;
        }
        // The whole huge pages inside the buffer.
        let first = (start as usize).next_multiple_of(HUGE);
        let end = (start as usize + bytes) & !(HUGE - 1);
        if end > first {
            // SAFETY: [first, end) lies inside one live allocation of `bytes` bytes at
            // `start`; MADV_HUGEPAGE changes how its pages are backed, never their contents.
            let _ = unsafe {
                libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE)
            };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (start, bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_and_errors() {
        let v = Vectors::new(vec![1.0, 2.0, 3.0, 4.0], 2).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v.row(1), &[3.0, 4.0]);
        assert_eq!(
            Vectors::new(vec![1.0; 3], 2),
            Err(VectorsError::Ragged { len: 3, dim: 2 })
        );
        assert_eq!(Vectors::new(vec![], 0), Err(VectorsError::ZeroDim));
    }

    #[test]
    fn non_finite_is_located() {
        let v = Vectors::new(vec![0.0, 1.0, f32::NAN, 2.0], 2).unwrap();
        match v.check_finite("train") {
            Err(VectorsError::NonFinite { row, col, .. }) => assert_eq!((row, col), (1, 0)),
            other => panic!("expected NonFinite, got {other:?}"),
        }
        let v = Vectors::new(vec![0.0, f32::INFINITY], 2).unwrap();
        assert!(v.check_finite("test").is_err());
        let v = Vectors::new(vec![0.0, -1e30, 1e30, 5.0], 2).unwrap();
        assert!(v.check_finite("test").is_ok());
    }

    #[test]
    fn zero_rows_are_located() {
        let v = Vectors::new(vec![0.0, 1.0, 0.0, 0.0, 2.0, 0.0], 2).unwrap();
        match v.check_nonzero_norm("train") {
            Err(VectorsError::ZeroNorm { row, .. }) => assert_eq!(row, 1),
            other => panic!("expected ZeroNorm, got {other:?}"),
        }
        let v = Vectors::new(vec![0.0, 1e-30, -1.0, 0.0], 2).unwrap();
        assert!(v.check_nonzero_norm("test").is_ok());
    }

    fn map_of(floats: &[f32], lead: usize) -> Arc<memmap2::Mmap> {
        use std::io::Write;
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(&vec![0u8; lead]).unwrap();
        for f in floats {
            file.write_all(&f.to_le_bytes()).unwrap();
        }
        Arc::new(unsafe { memmap2::Mmap::map(&file) }.unwrap())
    }

    /// Rows read in place between records' headers: each row, the contiguous image, its bytes
    /// from any offset and the checks are those of the same rows in memory.
    #[test]
    fn records_read_in_place_match_the_rows_in_memory() {
        let (rows, dim, stride) = (5, 3, 4);
        // Each record: a header value (here -1, never a row's) then `dim` values.
        let file: Vec<f32> = (0..rows * stride)
            .map(|i| {
                if i % stride == 0 {
                    -1.0
                } else {
                    i as f32 * 0.5
                }
            })
            .collect();
        let flat: Vec<f32> = file.iter().copied().filter(|&x| x != -1.0).collect();
        let owned = Vectors::new(flat.clone(), dim).unwrap();
        let map = map_of(&file, 8);
        let mut v = Vectors::mapped_records(map.clone(), 12, rows, dim, stride).unwrap();
        assert!(v.is_mapped());
        assert_eq!((v.len(), v.byte_len()), (rows, rows * dim * 4));
        assert_eq!(v.row(4), owned.row(4));
        let (data, s) = v.strided();
        assert_eq!((s, data.len()), (stride, (rows - 1) * stride + dim));
        // Bytes from every start and length, across row boundaries.
        let image: Vec<u8> = flat.iter().flat_map(|x| x.to_le_bytes()).collect();
        for start in 0..image.len() {
            for len in [0, 1, 5, 12, 13, image.len() - start] {
                let len = len.min(image.len() - start);
                let mut out = vec![0u8; len];
                v.copy_bytes(start, &mut out);
                assert_eq!(out, image[start..start + len], "start {start}, len {len}");
            }
        }
        assert!(v.check_finite("train").is_ok());
        assert!(v.check_nonzero_norm("train").is_ok());
        assert!(
            !v.records_copied(),
            "nothing above needs the rows as one slice"
        );
        assert_eq!(v, owned);
        assert!(v.records_copied());
        assert_eq!(v.as_flat(), flat.as_slice());
        v.truncate(2);
        assert_eq!(v.len(), 2);
        assert_eq!(v.as_flat(), &flat[..6]);
        assert_eq!(v.clone().into_flat(), flat[..6].to_vec());
        // A non-finite value or an all-zero row is found where it is.
        let mut bad = file.clone();
        bad[2 * stride + 3] = f32::NAN;
        bad[3 * stride + 1..4 * stride].fill(0.0);
        let v = Vectors::mapped_records(map_of(&bad, 0), 4, rows, dim, stride).unwrap();
        match v.check_finite("train") {
            Err(VectorsError::NonFinite { row, col, .. }) => assert_eq!((row, col), (2, 2)),
            other => panic!("expected NonFinite, got {other:?}"),
        }
        match v.check_nonzero_norm("train") {
            Err(VectorsError::ZeroNorm { row, .. }) => assert_eq!(row, 3),
            other => panic!("expected ZeroNorm, got {other:?}"),
        }
        // Bounds: the last row must end inside the map; no rows is empty, not an error.
        assert!(matches!(
            Vectors::mapped_records(map.clone(), 12, rows + 1, dim, stride),
            Err(MapError::OutOfBounds { .. })
        ));
        assert!(matches!(
            Vectors::mapped_records(map.clone(), 12, usize::MAX / 2, dim, stride),
            Err(MapError::OutOfBounds { .. })
        ));
        assert!(
            Vectors::mapped_records(map.clone(), 12, 0, dim, stride)
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            Vectors::mapped_records(map, 10, 1, dim, stride).unwrap_err(),
            MapError::Misaligned { offset: 10 }
        );
    }

    #[test]
    fn mapped_rows_read_in_place_and_are_checked() {
        let floats: Vec<f32> = (0..12).map(|x| x as f32 * 0.5).collect();
        let map = map_of(&floats, 8);
        let mut v = Vectors::mapped(map.clone(), 8, 4, 3).unwrap();
        assert!(v.is_mapped());
        assert_eq!(v, Vectors::new(floats.clone(), 3).unwrap());
        assert_eq!(v.row(2), &[3.0, 3.5, 4.0]);
        v.truncate(2);
        assert_eq!(v.len(), 2);
        assert_eq!(v.clone().into_flat(), floats[..6].to_vec());
        // Fewer rows than the file holds: a prefix.
        assert_eq!(Vectors::mapped(map.clone(), 8, 1, 3).unwrap().len(), 1);
        assert!(matches!(
            Vectors::mapped(map.clone(), 8, 5, 3),
            Err(MapError::OutOfBounds { rows: 5, .. })
        ));
        assert!(matches!(
            Vectors::mapped(map.clone(), 8, usize::MAX / 2, 3),
            Err(MapError::OutOfBounds { .. })
        ));
        assert_eq!(
            Vectors::mapped(map.clone(), 6, 1, 3).unwrap_err(),
            MapError::Misaligned { offset: 6 }
        );
        assert_eq!(
            Vectors::mapped(map, 8, 1, 0).unwrap_err(),
            MapError::Vectors(VectorsError::ZeroDim)
        );
    }
}
