//! A dense row-major matrix of `f32` vectors: the one representation every phase shares.
//!
//! The dataset is held once and borrowed by every phase and client; nothing in the hot path
//! copies it. The rows live either in memory or in a read-only memory map of the file they
//! came from (a `.fbin` base): a mapped dataset can be larger than the machine's memory,
//! since the kernel pages rows in as they are read and drops clean pages under pressure.

use std::sync::Arc;

use rayon::prelude::*;

/// `len()` vectors of `dim` floats each, stored contiguously.
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
        let len = rows.checked_mul(dim).ok_or_else(out_of_bounds)?;
        len.checked_mul(4)
            .and_then(|bytes| bytes.checked_add(offset))
            .filter(|&end| end <= map_len)
            .ok_or_else(out_of_bounds)?;
        // A map starts on a page boundary, so the offset decides the alignment.
        if !(map.as_ptr() as usize + offset).is_multiple_of(std::mem::align_of::<f32>()) {
            return Err(MapError::Misaligned { offset });
        }
        Ok(Vectors {
            storage: Storage::Mapped { map, offset, len },
            dim,
        })
    }

    /// Whether the rows are read in place from a memory-mapped file.
    pub fn is_mapped(&self) -> bool {
        matches!(self.storage, Storage::Mapped { .. })
    }

    /// Tells the kernel how the rows will be read (a no-op for rows in memory): sequential
    /// passes let it read ahead and drop pages behind.
    pub fn advise_sequential(&self) {
        if let Storage::Mapped { map, .. } = &self.storage {
            // Advice only: a refusal changes speed, never a result.
            let _ = map.advise(memmap2::Advice::Sequential);
        }
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.as_flat().len().checked_div(self.dim).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.as_flat().is_empty()
    }

    /// Row `i`. Panics if out of range, like slice indexing.
    #[inline]
    pub fn row(&self, i: usize) -> &[f32] {
        &self.as_flat()[i * self.dim..(i + 1) * self.dim]
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
        }
    }

    /// The rows as an owned buffer (a copy when they are mapped).
    pub fn into_flat(self) -> Vec<f32> {
        match self.storage {
            Storage::Owned(data) => data,
            Storage::Mapped { .. } => self.as_flat().to_vec(),
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
        }
    }

    /// Fails on the first NaN or infinite value, naming the row and column.
    pub fn check_finite(&self, what: &str) -> Result<(), VectorsError> {
        // Fast path: a pass without early exit that the compiler vectorises (the sum of
        // `v * 0.0` that stood here is one chain of dependent additions: 35 ms for 100 MB);
        // only when it fails do we look for the culprit.
        let data = self.as_flat();
        let all_finite = data
            .par_chunks(FINITE_CHUNK)
            .all(|chunk| chunk.iter().fold(true, |ok, v| ok & v.is_finite()));
        if all_finite {
            return Ok(());
        }
        for (i, v) in data.iter().enumerate() {
            if !v.is_finite() {
                return Err(VectorsError::NonFinite {
                    what: what.to_string(),
                    row: i / self.dim,
                    col: i % self.dim,
                    value: *v,
                });
            }
        }
        Ok(())
    }

    /// Fails on the first all-zero row: under the angular metric its distance is undefined
    /// (engines normalise vectors and would divide by zero, each in its own way).
    pub fn check_nonzero_norm(&self, what: &str) -> Result<(), VectorsError> {
        match self.iter().position(|row| row.iter().all(|v| *v == 0.0)) {
            Some(row) => Err(VectorsError::ZeroNorm {
                what: what.to_string(),
                row,
            }),
            None => Ok(()),
        }
    }

    /// Size of the vector payload in bytes.
    pub fn byte_len(&self) -> usize {
        std::mem::size_of_val(self.as_flat())
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
