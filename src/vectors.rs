//! A dense row-major matrix of `f32` vectors: the one representation every phase shares.
//!
//! The dataset is held once and borrowed by every phase and client; nothing in the hot path
//! copies it.

/// `len()` vectors of `dim` floats each, stored contiguously.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Vectors {
    data: Vec<f32>,
    dim: usize,
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
        Ok(Vectors { data, dim })
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.data.len().checked_div(self.dim).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Row `i`. Panics if out of range, like slice indexing.
    #[inline]
    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }

    /// Rows `start..end` as one flat slice.
    pub fn rows(&self, start: usize, end: usize) -> &[f32] {
        &self.data[start * self.dim..end * self.dim]
    }

    pub fn as_flat(&self) -> &[f32] {
        &self.data
    }

    pub fn into_flat(self) -> Vec<f32> {
        self.data
    }

    pub fn iter(&self) -> std::slice::ChunksExact<'_, f32> {
        self.data.chunks_exact(self.dim)
    }

    /// Keeps the first `n` rows.
    pub fn truncate(&mut self, n: usize) {
        self.data.truncate(n * self.dim);
        self.data.shrink_to_fit();
    }

    /// Fails on the first NaN or infinite value, naming the row and column.
    pub fn check_finite(&self, what: &str) -> Result<(), VectorsError> {
        // Fast path: a sum over the whole buffer is finite iff (almost always) every value is;
        // only when it is not do we look for the culprit.
        let quick: f64 = self.data.iter().map(|v| *v as f64 * 0.0).sum();
        if quick == 0.0 {
            return Ok(());
        }
        for (i, v) in self.data.iter().enumerate() {
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
        self.data.len() * std::mem::size_of::<f32>()
    }
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
}
