//! big-ann-benchmarks' sparse matrix files (`.spmat`, `benchmark/dataset_io.py`
//! `read_sparse_matrix`): a CSR matrix as int64 `nrow, ncol, nnz`, then int64
//! `indptr[nrow + 1]`, int32 `indices[nnz]`, float32 `data[nnz]`, all little-endian. YFCC-10M's
//! point and query tags come in it (row = point, column = tag), and the sparse track's SPLADE
//! vectors (`.csr`), as do the sparse vectors of a dataset directory (`sparse/base.csr`,
//! `sparse/queries.csr`: [`write`] writes them).
//!
//! ragdbeval reads and checks the tag files but does not use them for `--filter` yet: its
//! attributes hold one value per field, a tag set is many.

use std::io::Read;
use std::path::Path;

use super::DatasetError;

/// A checked `.spmat` (or `.csr`) file.
pub type Spmat = crate::sparse::Csr;

/// The header of a `.spmat` file, checked against its size: `(rows, cols, nnz)`.
pub fn read_header(path: &Path) -> Result<(usize, usize, usize), DatasetError> {
    let mut file = std::fs::File::open(path).map_err(|e| DatasetError::io(path, e))?;
    let len = file
        .metadata()
        .map_err(|e| DatasetError::io(path, e))?
        .len();
    let mut head = [0u8; 24];
    file.read_exact(&mut head).map_err(|_| {
        bad(
            path,
            format!("{len} bytes: shorter than the 24-byte header (nrow, ncol, nnz)"),
        )
    })?;
    check_header(&head, len, path)
}

fn bad(path: &Path, message: String) -> DatasetError {
    DatasetError::Format {
        path: path.to_path_buf(),
        message,
    }
}

fn check_header(head: &[u8], len: u64, path: &Path) -> Result<(usize, usize, usize), DatasetError> {
    let field = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&head[i * 8..i * 8 + 8]);
        i64::from_le_bytes(b)
    };
    let (nrow, ncol, nnz) = (field(0), field(1), field(2));
    if nrow < 0 || ncol < 0 || nnz < 0 {
        return Err(bad(
            path,
            format!("negative size in the header: nrow {nrow}, ncol {ncol}, nnz {nnz}"),
        ));
    }
    // Sizes in u128: a header of huge values must not overflow into a plausible length.
    let want = 24u128 + 8 * (nrow as u128 + 1) + 8 * nnz as u128;
    if want != u128::from(len) {
        return Err(bad(
            path,
            format!(
                "the header says {nrow} rows × {ncol} columns with {nnz} entries, which is \
                 {want} bytes, but the file has {len}"
            ),
        ));
    }
    Ok((nrow as usize, ncol as usize, nnz as usize))
}

/// Reads and checks a whole `.spmat` file: size, `indptr` from 0 to `nnz` and never
/// decreasing, every index below `ncol`.
pub fn read(path: &Path) -> Result<Spmat, DatasetError> {
    let bytes = std::fs::read(path).map_err(|e| DatasetError::io(path, e))?;
    parse(&bytes, path)
}

/// [`read`] of bytes in memory; `path` names them in errors.
pub fn parse(bytes: &[u8], path: &Path) -> Result<Spmat, DatasetError> {
    if bytes.len() < 24 {
        return Err(bad(
            path,
            format!(
                "{} bytes: shorter than the 24-byte header (nrow, ncol, nnz)",
                bytes.len()
            ),
        ));
    }
    let (rows, cols, nnz) = check_header(&bytes[..24], bytes.len() as u64, path)?;
    let mut at = 24;
    let mut indptr = Vec::with_capacity(rows + 1);
    for r in 0..=rows {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[at..at + 8]);
        at += 8;
        let v = i64::from_le_bytes(b);
        let prev = indptr.last().copied().unwrap_or(0);
        if v < 0 || (v as u64) > nnz as u64 || (r == 0 && v != 0) || (v as usize) < prev {
            return Err(bad(
                path,
                format!(
                    "indptr[{r}] = {v}: must start at 0, never decrease and end at nnz = {nnz}"
                ),
            ));
        }
        indptr.push(v as usize);
    }
    if indptr[rows] != nnz {
        return Err(bad(
            path,
            format!("indptr ends at {}, not at nnz = {nnz}", indptr[rows]),
        ));
    }
    let mut indices = Vec::with_capacity(nnz);
    for (i, c) in bytes[at..at + 4 * nnz].chunks_exact(4).enumerate() {
        let v = i32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        if v < 0 || v as usize >= cols {
            return Err(bad(
                path,
                format!("index {i} is {v}, outside the {cols} columns"),
            ));
        }
        indices.push(v as u32);
    }
    at += 4 * nnz;
    let data = bytes[at..at + 4 * nnz]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Ok(Spmat {
        rows,
        cols,
        indptr,
        indices,
        data,
    })
}

/// Writes `m` in the format [`read`] reads, whole or not at all (a temporary file renamed).
pub fn write(path: &Path, m: &Spmat) -> Result<(), DatasetError> {
    let mut out = Vec::with_capacity(24 + 8 * (m.rows + 1) + 8 * m.nnz());
    for v in [m.rows, m.cols, m.nnz()] {
        out.extend_from_slice(&(v as i64).to_le_bytes());
    }
    for &p in &m.indptr {
        out.extend_from_slice(&(p as i64).to_le_bytes());
    }
    for &i in &m.indices {
        out.extend_from_slice(&(i as i32).to_le_bytes());
    }
    for &v in &m.data {
        out.extend_from_slice(&v.to_le_bytes());
    }
    crate::atomic::write_atomic(path, &out).map_err(|e| DatasetError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes `write_sparse_matrix` writes for rows `[[1, 3], [], [0]]` over 4 columns.
    fn sample(indptr: &[i64], indices: &[i32], ncol: i64) -> Vec<u8> {
        let nnz = indices.len() as i64;
        let mut out = Vec::new();
        for v in [indptr.len() as i64 - 1, ncol, nnz] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in indptr {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in indices {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for _ in indices {
            out.extend_from_slice(&1.0f32.to_le_bytes());
        }
        out
    }

    #[test]
    fn reads_rows_of_tags_and_refuses_inconsistent_files() {
        let p = Path::new("x.spmat");
        let m = parse(&sample(&[0, 2, 2, 3], &[1, 3, 0], 4), p).unwrap();
        assert_eq!((m.rows, m.cols), (3, 4));
        assert_eq!(m.row(0), &[1, 3]);
        assert!(m.row(1).is_empty());
        assert_eq!(m.row(2), &[0]);
        assert_eq!(m.data, [1.0, 1.0, 1.0]);

        let err = |bytes: Vec<u8>| parse(&bytes, p).unwrap_err().to_string();
        let mut short = sample(&[0, 2, 2, 3], &[1, 3, 0], 4);
        short.pop();
        assert!(err(short).contains("but the file has"));
        assert!(err(sample(&[0, 2, 1, 3], &[1, 3, 0], 4)).contains("indptr[2] = 1"));
        assert!(err(sample(&[1, 2, 2, 3], &[1, 3, 0], 4)).contains("indptr[0] = 1"));
        assert!(err(sample(&[0, 2, 2, 3], &[1, 4, 0], 4)).contains("index 1 is 4"));
        assert!(err(vec![0u8; 10]).contains("shorter than the 24-byte header"));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.csr");
        write(&path, &m).unwrap();
        assert_eq!(read(&path).unwrap(), m);
        let mut huge = sample(&[0], &[], 1);
        huge[..8].copy_from_slice(&i64::MAX.to_le_bytes());
        assert!(err(huge).contains("but the file has"));
    }
}
