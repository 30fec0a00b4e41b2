//! Sparse vectors: the rows of a CSR matrix (big-ann-benchmarks' sparse track stores its
//! SPLADE vectors so; ragdbeval's BM25 encoding of a text dataset writes the same), their dot
//! product, the BM25 encoding of text ([`bm25`]) and the fusion of two ranked lists ([`fusion`]).
//!
//! A row's indices are strictly ascending and its values finite: what every engine's sparse
//! type accepts (Qdrant refuses repeated indices, pgvector and Milvus want them sorted), checked
//! once when a dataset is loaded ([`Csr::check_rows`]).

pub mod bm25;
pub mod fusion;

/// A sparse matrix in compressed sparse row form.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Csr {
    pub rows: usize,
    /// Dimensions (the vocabulary size of a BM25 encoding).
    pub cols: usize,
    /// Row `r`'s entries are `indptr[r]..indptr[r + 1]`.
    pub indptr: Vec<usize>,
    pub indices: Vec<u32>,
    pub data: Vec<f32>,
}

/// One sparse vector: parallel indices (ascending) and values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SparseRow<'a> {
    pub indices: &'a [u32],
    pub values: &'a [f32],
}

impl Csr {
    /// The columns (tags) of row `r`.
    pub fn row(&self, r: usize) -> &[u32] {
        &self.indices[self.indptr[r]..self.indptr[r + 1]]
    }

    /// Row `r` as a sparse vector.
    pub fn entries(&self, r: usize) -> SparseRow<'_> {
        let span = self.indptr[r]..self.indptr[r + 1];
        SparseRow {
            indices: &self.indices[span.clone()],
            values: &self.data[span],
        }
    }

    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.indices.len()
    }

    /// The matrix of `rows`, each given as (index, value) pairs in ascending index order.
    pub fn from_rows(cols: usize, rows: &[Vec<(u32, f32)>]) -> Csr {
        let mut m = Csr {
            rows: rows.len(),
            cols,
            indptr: Vec::with_capacity(rows.len() + 1),
            indices: Vec::new(),
            data: Vec::new(),
        };
        m.indptr.push(0);
        for row in rows {
            for &(i, v) in row {
                m.indices.push(i);
                m.data.push(v);
            }
            m.indptr.push(m.indices.len());
        }
        m
    }

    /// The first row whose indices are not strictly ascending or whose values are not all
    /// finite, with what is wrong with it.
    pub fn check_rows(&self) -> Result<(), String> {
        for r in 0..self.rows {
            let row = self.entries(r);
            if let Some(w) = row.indices.windows(2).position(|w| w[0] >= w[1]) {
                return Err(format!(
                    "row {r}: index {} follows {} (indices must be strictly ascending)",
                    row.indices[w + 1],
                    row.indices[w]
                ));
            }
            if let Some(v) = row.values.iter().find(|v| !v.is_finite()) {
                return Err(format!("row {r}: value {v} is not finite"));
            }
        }
        Ok(())
    }
}

impl SparseRow<'_> {
    /// The dot product of two rows (a merge of their ascending indices), summed in f64.
    pub fn dot(&self, other: &SparseRow<'_>) -> f64 {
        let (mut i, mut j, mut sum) = (0, 0, 0f64);
        while i < self.indices.len() && j < other.indices.len() {
            match self.indices[i].cmp(&other.indices[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    sum += f64::from(self.values[i]) * f64::from(other.values[j]);
                    i += 1;
                    j += 1;
                }
            }
        }
        sum
    }

    /// Whether the two rows share an index (an inverted index finds the other row at all).
    pub fn overlaps(&self, other: &SparseRow<'_>) -> bool {
        let (mut i, mut j) = (0, 0);
        while i < self.indices.len() && j < other.indices.len() {
            match self.indices[i].cmp(&other.indices[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => return true,
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_dot_and_checks_by_hand() {
        let m = Csr::from_rows(
            6,
            &[vec![(0, 1.0), (3, 2.0)], vec![], vec![(3, 0.5), (5, 4.0)]],
        );
        assert_eq!(m.nnz(), 4);
        assert_eq!(m.row(2), &[3, 5]);
        // (0:1, 3:2) · (3:0.5, 5:4) = 2 · 0.5 = 1.
        assert_eq!(m.entries(0).dot(&m.entries(2)), 1.0);
        assert!(m.entries(0).overlaps(&m.entries(2)));
        assert!(!m.entries(0).overlaps(&m.entries(1)));
        assert_eq!(m.entries(1).dot(&m.entries(2)), 0.0);
        assert!(m.check_rows().is_ok());
        let unsorted = Csr::from_rows(6, &[vec![(3, 1.0), (3, 1.0)]]);
        assert!(
            unsorted
                .check_rows()
                .unwrap_err()
                .contains("row 0: index 3 follows 3")
        );
        let nan = Csr::from_rows(6, &[vec![(1, f32::NAN)]]);
        assert!(nan.check_rows().unwrap_err().contains("not finite"));
    }
}
