//! The base as the kernel reads it: a whole matrix or selected rows, entry by entry or block
//! by block, optionally translated by a centre.

use rayon::prelude::*;

use super::{BaseSet, RowSelection, StridedBase};
use crate::types::PointId;

/// The base of an exact search in any of its forms ([`super::exact_knn`] takes each).
pub enum Base<'a> {
    /// A whole matrix, row after row.
    All(&'a BaseSet<'a>),
    /// A whole matrix whose rows are `stride` values apart.
    Strided(&'a StridedBase<'a>),
    /// Selected rows of a matrix.
    Rows(&'a RowSelection<'a>),
}

impl<'a> From<&'a BaseSet<'a>> for Base<'a> {
    fn from(base: &'a BaseSet<'a>) -> Self {
        Base::All(base)
    }
}

impl<'a> From<&'a StridedBase<'a>> for Base<'a> {
    fn from(base: &'a StridedBase<'a>) -> Self {
        Base::Strided(base)
    }
}

impl<'a> From<&'a RowSelection<'a>> for Base<'a> {
    fn from(base: &'a RowSelection<'a>) -> Self {
        Base::Rows(base)
    }
}

impl Base<'_> {
    pub(super) fn len(&self) -> usize {
        match self {
            Base::All(b) => b.vectors.len() / b.dim,
            Base::Strided(b) => b.rows,
            Base::Rows(r) => r.rows.len(),
        }
    }

    pub(super) fn dim(&self) -> usize {
        match self {
            Base::All(b) => b.dim,
            Base::Strided(b) => b.dim,
            Base::Rows(r) => r.dim,
        }
    }

    #[inline]
    pub(super) fn id(&self, entry: usize) -> PointId {
        match self {
            Base::All(b) => b.ids.map_or(entry as PointId, |ids| ids[entry]),
            Base::Strided(_) => entry as PointId,
            Base::Rows(r) => r.ids[entry],
        }
    }

    #[inline]
    pub(super) fn vector(&self, entry: usize) -> &[f32] {
        let (data, start, dim) = match self {
            Base::All(b) => (b.vectors, entry * b.dim, b.dim),
            Base::Strided(b) => (b.vectors, entry * b.stride, b.dim),
            Base::Rows(r) => (r.vectors, r.rows[entry] * r.dim, r.dim),
        };
        &data[start..start + dim]
    }
}

/// Appends `x - centre` (or `x`) to `out`. The same f32 subtraction everywhere, so a centred
/// vector is bit-identical wherever it is recomputed.
#[inline]
pub(super) fn push_centred(out: &mut Vec<f32>, x: &[f32], centre: Option<&[f32]>) {
    match centre {
        Some(c) => out.extend(x.iter().zip(c).map(|(a, b)| a - b)),
        None => out.extend_from_slice(x),
    }
}

/// Entries averaged by [`sampled_mean`] (and by `rows_centre`): the mean of 8k entries spread
/// evenly over the base is within about 1 % of the data's spread from the full mean (the
/// centred norms, and with them the candidate margin, grow by about 10⁻⁴ of themselves), and
/// reading them takes about a millisecond where the full mean reads the whole base once more
/// (100 MB at 200k × 128, a pass over the disk for a mapped base).
pub(super) const CENTRE_SAMPLE: usize = 1 << 13;

/// [`sampled_rows_mean`] of the base's entries: the euclidean centre where the caller gives
/// none.
pub(super) fn sampled_mean(base: &Base<'_>) -> Vec<f32> {
    match base {
        Base::All(b) => sampled_rows_mean(b.vectors, b.dim, b.dim, 0..base.len()),
        Base::Strided(b) => sampled_rows_mean(b.vectors, b.dim, b.stride, 0..base.len()),
        Base::Rows(r) => sampled_rows_mean(r.vectors, r.dim, r.dim, r.rows.iter().copied()),
    }
}

/// The per-dimension mean of at most [`CENTRE_SAMPLE`] of `rows` (of `vectors`, `dim` wide,
/// each `stride` values after the last), spread evenly over them: the translation applied before the euclidean scoring. Any centre
/// is correct (distances are translation invariant, and the rounding of the subtraction is
/// part of the error bound); a mean makes the norms, and with them the rounding of the
/// scores, about as small as the spread of the data allows.
pub(super) fn sampled_rows_mean(
    vectors: &[f32],
    dim: usize,
    stride: usize,
    rows: impl ExactSizeIterator<Item = usize>,
) -> Vec<f32> {
    let step = rows.len().div_ceil(CENTRE_SAMPLE).max(1);
    let sample: Vec<usize> = rows.step_by(step).collect();
    let sums = sample
        .par_iter()
        .fold(
            || vec![0.0f64; dim],
            |mut acc, &row| {
                for (a, v) in acc
                    .iter_mut()
                    .zip(&vectors[row * stride..row * stride + dim])
                {
                    *a += *v as f64;
                }
                acc
            },
        )
        .reduce(
            || vec![0.0f64; dim],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    *x += y;
                }
                a
            },
        );
    mean_of_sums(&sums, sample.len())
}

/// The mean from per-dimension sums over `n` vectors, as an f32 centre.
pub(super) fn mean_of_sums(sums: &[f64], n: usize) -> Vec<f32> {
    sums.iter()
        .map(|s| {
            let m = (s / n.max(1) as f64) as f32;
            // A non-finite coordinate in the data must not poison every other vector.
            if m.is_finite() { m } else { 0.0 }
        })
        .collect()
}
