//! The ground truth a dataset arrives with or gets: stored neighbours rescored and
//! spot-checked against the vectors, or computed exactly.

use rayon::prelude::*;

use super::DatasetError;
use crate::distance::Distance;
use crate::groundtruth::{BaseSet, GroundTruth, StridedBase, exact_knn, prefetch};
use crate::types::{PointId, Progress, ProgressUnit};
use crate::vectors::Vectors;

/// How many neighbours ahead [`rescore_stored`] requests a row.
const RESCORE_AHEAD: usize = 8;

/// Recomputes the distances of stored neighbours with ragdbeval's conventions, and re-sorts
/// each row by (distance, id) so ties follow the same rule as computed ground truth.
///
/// Queries are spread over the cores: each row reads k train rows scattered over the whole
/// matrix (1M of them for 10k queries at k = 100); on one core that was about 40 % of the
/// CPU samples of loading a 1M × 128 HDF5 file with 10k queries (`perf record`).
pub(super) fn rescore_stored(
    train: &Vectors,
    test: &Vectors,
    distance: Distance,
    k: usize,
    ids: &[i64],
) -> GroundTruth {
    // Whole rows only, as the stored array is read (a ragged tail is dropped).
    let len = ids.len().checked_div(k).unwrap_or(0) * k;
    let mut out_ids: Vec<PointId> = vec![0; len];
    let mut out_d = vec![0.0f32; len];
    if k > 0 {
        ids.par_chunks_exact(k)
            .zip(out_ids.par_chunks_exact_mut(k))
            .zip(out_d.par_chunks_exact_mut(k))
            .enumerate()
            .for_each_init(
                || Vec::with_capacity(k),
                |row: &mut Vec<(f32, PointId)>, (q, ((stored, ids_out), d_out))| {
                    let query = test.row(q);
                    row.clear();
                    row.extend(stored.iter().enumerate().map(|(j, &id)| {
                        // The neighbours are rows anywhere in the base: the one a few places
                        // ahead is requested now (rescoring a 1M × 128 file's truth waited on
                        // memory for most of its time).
                        if let Some(&ahead) = stored.get(j + RESCORE_AHEAD) {
                            prefetch(train.row(ahead as usize));
                        }
                        (
                            distance.between(query, train.row(id as usize)),
                            id as PointId,
                        )
                    }));
                    row.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                    for ((id_out, d_out), (d, id)) in ids_out.iter_mut().zip(d_out).zip(&*row) {
                        *id_out = *id;
                        *d_out = *d;
                    }
                },
            );
    }
    GroundTruth {
        k,
        ids: out_ids,
        distances: out_d,
    }
}

/// Queries whose stored neighbours are recomputed by brute force on every load.
const SPOT_CHECK_QUERIES: usize = 8;

/// Whether a stored truth belongs to these vectors: for a few queries spread over the test
/// set, the stored neighbours' distances (recomputed, sorted) must equal the exact top-k's
/// position by position, within float tolerance. A truth from other vectors, another metric
/// or a swapped array fails here instead of silently scoring recall against the wrong set.
/// Costs a brute-force scan for [`SPOT_CHECK_QUERIES`] queries (a fraction of a second on
/// 1M × 128).
pub(super) fn spot_check_stored(
    train: &Vectors,
    test: &Vectors,
    distance: Distance,
    truth: &GroundTruth,
) -> Result<(), String> {
    let nq = test.len().min(truth.queries());
    let picks: Vec<usize> = (0..SPOT_CHECK_QUERIES.min(nq))
        .map(|i| i * nq / SPOT_CHECK_QUERIES.min(nq))
        .collect();
    let mut queries = Vec::with_capacity(picks.len() * test.dim());
    for &q in &picks {
        queries.extend_from_slice(test.row(q));
    }
    let k = truth.k.min(train.len());
    let exact = exact_knn(
        &BaseSet {
            vectors: train.as_flat(),
            ids: None,
            dim: train.dim(),
        },
        &queries,
        distance,
        k,
        &|_| {},
    );
    for (i, &q) in picks.iter().enumerate() {
        let stored = &truth.distances_of(q)[..k];
        let want = exact.distances_of(i);
        // Relative to the row's largest distance: f32 sums over many dimensions differ in
        // their last bits between implementations, and near-ties swap places.
        let scale = want
            .iter()
            .fold(0f32, |m, d| m.max(d.abs()))
            .max(f32::MIN_POSITIVE);
        if let Some(pos) = (0..k).find(|&j| (stored[j] - want[j]).abs() > 1e-3 * scale + 1e-6) {
            return Err(format!(
                "for query {q}, its neighbour {} is at distance {} but the true one at {}: \
                 it does not belong to these vectors under {distance} (recompute it with \
                 `ragdbeval dataset gt`, or give the right --distance)",
                pos + 1,
                stored[pos],
                want[pos]
            ));
        }
    }
    Ok(())
}

/// Exact top-`k` of every test vector over the train set, with a progress bar.
pub fn compute_ground_truth(
    train: &Vectors,
    test: &Vectors,
    distance: Distance,
    k: usize,
    progress: &dyn Progress,
) -> Result<GroundTruth, DatasetError> {
    if k == 0 || k > 1000 {
        return Err(DatasetError::BadK { k });
    }
    let k = k.min(train.len());
    let bar = progress.task("ground truth", Some(test.len() as u64), ProgressUnit::Items);
    // Where the rows are (in place, for a `.fvecs` file read without a copy).
    let (vectors, stride) = train.strided();
    let gt = exact_knn(
        &StridedBase {
            vectors,
            rows: train.len(),
            stride,
            dim: train.dim(),
        },
        test.as_flat(),
        distance,
        k,
        &|done| bar.set(done as u64),
    );
    Ok(gt)
}
