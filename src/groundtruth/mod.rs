//! Exact k-nearest-neighbour ground truth: the computation every benchmark figure rests on.
//!
//! Formulation: for a block of queries and a block of base vectors, a blocked matrix product
//! gives all inner products; a ranking score is derived per metric (`|x|² - 2q·x` for euclidean, on vectors
//! centred on the base mean; `-q·x/|x|` for angular; `-q·x` for dot), and each query keeps its
//! candidates in a threshold buffer. The f32 scores are only used to *select*: with a
//! proven bound on their rounding (see `ErrorBounds`) every item that could belong to the
//! top-k is kept, however many that is, the kept distances are recomputed with
//! [`Distance::between`] on the original vectors, and the final top-k is sorted by
//! (distance, id). The result is therefore identical to a brute force with
//! `Distance::between` over every item ([`naive_knn`]): ties are broken by id, and stored
//! distances compare exactly with the distances the harness recomputes for engine results.
//!
//! Layout: [`GroundTruth`] and the inputs ([`BaseSet`], [`RowSelection`]) are here with the
//! public entry points; `base` is the kernel's view of either input, `kernel` the chunked
//! scan and exact re-rank, `tile` the packed layout and the fused product-and-selection tile,
//! `bounds` the rounding bound that decides what is kept, and `top` the per-query buffer of
//! kept candidates.

mod base;
mod bounds;
mod kernel;
mod tile;
mod top;

pub mod difficulty;
pub mod sparse;
pub mod stream;

use crate::distance::Distance;
use crate::types::PointId;

pub use base::Base;
use kernel::{Blocking, KnnOptions, knn};
use tile::PackedBase;
pub use tile::prefetch;

/// True neighbours of each query: `ids` and `distances` are `queries × k`, best first.
#[derive(Debug, Clone, PartialEq)]
pub struct GroundTruth {
    pub k: usize,
    pub ids: Vec<PointId>,
    pub distances: Vec<f32>,
}

impl GroundTruth {
    pub fn queries(&self) -> usize {
        self.ids.len().checked_div(self.k).unwrap_or(0)
    }

    pub fn ids_of(&self, q: usize) -> &[PointId] {
        &self.ids[q * self.k..(q + 1) * self.k]
    }

    pub fn distances_of(&self, q: usize) -> &[f32] {
        &self.distances[q * self.k..(q + 1) * self.k]
    }

    /// Checks what any truth must hold, so that one from a file or a cache is never used when
    /// it cannot be right: ids accepted by `id_known` and unique in their row, distances
    /// finite, ascending, and not negative where the metric has no negative distances. The
    /// error names the first query (0-based) that breaks a rule.
    pub fn check(
        &self,
        distance: Distance,
        id_known: impl Fn(PointId) -> bool,
    ) -> Result<(), String> {
        if self.k == 0
            || self.ids.len() != self.distances.len()
            || !self.ids.len().is_multiple_of(self.k)
        {
            return Err(format!(
                "{} ids and {} distances do not make rows of {}",
                self.ids.len(),
                self.distances.len(),
                self.k
            ));
        }
        // 1 − cos of a vector with itself can come out a rounding error below 0.
        let floor = match distance {
            Distance::Dot => f32::NEG_INFINITY,
            Distance::Euclidean | Distance::Angular => -1e-5,
        };
        let mut row: Vec<PointId> = Vec::with_capacity(self.k);
        for q in 0..self.queries() {
            // A row may end in padding (id MAX at +inf) where fewer than k points exist or
            // pass a filter; the rules apply to the points before it.
            let (ids, dists) = (self.ids_of(q), self.distances_of(q));
            let depth = ids.iter().take_while(|id| **id != PointId::MAX).count();
            if ids[depth..]
                .iter()
                .zip(&dists[depth..])
                .any(|(id, d)| *id != PointId::MAX || *d != f32::INFINITY)
            {
                return Err(format!(
                    "query {q}: padding (id {} at +inf) is followed by a point",
                    PointId::MAX
                ));
            }
            let (ids, dists) = (&ids[..depth], &dists[..depth]);
            if let Some(id) = ids.iter().find(|&&id| !id_known(id)) {
                return Err(format!(
                    "query {q}: neighbour id {id} is not in the dataset"
                ));
            }
            if let Some(d) = dists.iter().find(|d| !d.is_finite() || **d < floor) {
                return Err(format!(
                    "query {q}: distance {d} is impossible under {distance}"
                ));
            }
            if dists.windows(2).any(|w| w[1] < w[0]) {
                return Err(format!("query {q}: distances are not in ascending order"));
            }
            row.clear();
            row.extend_from_slice(ids);
            row.sort_unstable();
            if let Some(w) = row.windows(2).find(|w| w[0] == w[1]) {
                return Err(format!("query {q}: neighbour id {} is listed twice", w[0]));
            }
        }
        Ok(())
    }

    /// Keeps the first `k` neighbours of each query.
    pub fn truncated(&self, k: usize) -> GroundTruth {
        let k = k.min(self.k);
        let mut ids = Vec::with_capacity(self.queries() * k);
        let mut distances = Vec::with_capacity(self.queries() * k);
        for q in 0..self.queries() {
            ids.extend_from_slice(&self.ids_of(q)[..k]);
            distances.extend_from_slice(&self.distances_of(q)[..k]);
        }
        GroundTruth { k, ids, distances }
    }
}

/// The base set to search: flat row-major vectors plus, optionally, the id of each row
/// (its row number when absent). Ids must be ascending, so that tie-breaking by id and by
/// scan order agree.
pub struct BaseSet<'a> {
    pub vectors: &'a [f32],
    pub ids: Option<&'a [PointId]>,
    pub dim: usize,
}

/// Rows `vectors[i·stride..i·stride + dim]` for `i < rows`, with id `i`: a base read in
/// place from a file whose records carry a header each (TEXMEX `.fvecs`, stride `dim + 1`).
pub struct StridedBase<'a> {
    pub vectors: &'a [f32],
    pub rows: usize,
    pub stride: usize,
    pub dim: usize,
}

/// Selected rows of a matrix: entry `i` is vector `rows[i]` with id `ids[i]`. A live set is
/// searched in place, without copying the dataset. Ids must be ascending.
pub struct RowSelection<'a> {
    pub vectors: &'a [f32],
    pub rows: &'a [usize],
    pub ids: &'a [PointId],
    pub dim: usize,
}

/// Computes the exact top-`k` of every query against `base`: a whole matrix
/// ([`BaseSet`]), one whose rows are `stride` values apart ([`StridedBase`]; panics if its
/// vectors are shorter than its rows, like slice indexing), or selected rows of a matrix
/// ([`RowSelection`], a live set after mutations).
///
/// `on_progress` is called with the number of queries finished so far (from worker threads).
/// If the base has fewer than `k` points, each row is padded with id `u64::MAX` and
/// distance `+inf`.
pub fn exact_knn<'a>(
    base: impl Into<Base<'a>>,
    queries: &[f32],
    distance: Distance,
    k: usize,
    on_progress: &(dyn Fn(usize) + Sync),
) -> GroundTruth {
    knn(
        &base.into(),
        queries,
        distance,
        k,
        KnnOptions::default(),
        on_progress,
    )
}

/// The packing buffer that [`exact_knn_rows_group`] reuses from one group to the next (one
/// per thread).
#[derive(Default)]
pub struct GroupScratch {
    packed: PackedBase,
}

/// [`exact_knn`] over a [`RowSelection`] for one of many small query groups that the caller searches in
/// parallel (filtered truth: one group per predicate), all centred on one `centre`
/// ([`rows_centre`]). The queries are one block (up to 256), and the whole call runs on the
/// calling thread: each chunk of the selected rows is packed straight from the matrix and
/// scanned by all of them while it is in L2, and the next chunk's rows, scattered over the
/// matrix, are requested from memory during that scan.
pub fn exact_knn_rows_group(
    base: &RowSelection<'_>,
    queries: &[f32],
    distance: Distance,
    k: usize,
    centre: &[f32],
    scratch: &mut GroupScratch,
) -> GroundTruth {
    let options = KnnOptions {
        blocks: Blocking::OneThread,
        chunk_bytes: GROUP_CHUNK_BYTES,
        centre: Some(centre),
        packed: Some(&mut scratch.packed),
        read_ahead: true,
    };
    knn(&Base::Rows(base), queries, distance, k, options, &|_| {})
}

/// Bytes of packed base per chunk in [`exact_knn_rows_group`]: one query block scans each
/// chunk right after it is packed, so the chunk stays in L2.
const GROUP_CHUNK_BYTES: usize = 256 << 10;

/// The euclidean centre for [`exact_knn_rows_group`]: the mean of at most
/// `base::CENTRE_SAMPLE` of `rows` (of `vectors`, `dim` wide) spread evenly over them (the
/// rows of all groups). Any centre keeps the truth exact (see `base::sampled_rows_mean`); a sample's
/// mean keeps the norms about as small as the mean does, and reads a few MB instead of the
/// whole matrix.
pub fn rows_centre(
    vectors: &[f32],
    dim: usize,
    rows: impl ExactSizeIterator<Item = usize>,
) -> Vec<f32> {
    base::sampled_rows_mean(vectors, dim, dim, rows)
}

/// Brute force over explicit ids, used where the base is small or scattered (tests, live sets
/// in mutation steps): distance to every vector, sorted by (distance, id).
pub fn naive_knn(
    base: &[f32],
    ids: &[PointId],
    dim: usize,
    query: &[f32],
    distance: Distance,
    k: usize,
) -> Vec<(PointId, f32)> {
    let mut all: Vec<(PointId, f32)> = base
        .chunks_exact(dim)
        .zip(ids)
        .map(|(x, id)| (*id, distance.between(query, x)))
        .collect();
    all.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    all.truncate(k);
    all
}

#[cfg(test)]
mod tests;
