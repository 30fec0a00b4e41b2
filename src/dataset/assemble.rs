//! The checks every dataset format goes through once its arrays are read: shapes, values,
//! stored neighbours, `--limit` / `--max-queries`, and where the ground truth comes from.

use std::sync::Arc;

use super::truth::{rescore_stored, spot_check_stored};
use super::{Dataset, DatasetError, GroundTruthSource, LoadOptions, compute_ground_truth};
use crate::distance::Distance;
use crate::groundtruth::GroundTruth;
use crate::types::ElementType;
use crate::vectors::Vectors;

/// A dataset's arrays as its format's reader found them, before [`assemble`] checks them.
#[derive(Debug)]
pub struct DatasetArrays<'a> {
    pub name: String,
    /// What the user gave to load it (path, registry name, `gen:` spec).
    pub source: &'a str,
    pub distance: Distance,
    pub train: Vectors,
    pub test: Vectors,
    /// The file's neighbours, if it stores them: depth `k` and `k` train row ids per query.
    pub stored_gt: Option<(usize, Vec<i64>)>,
    pub sha256: String,
}

/// Validates, applies `--limit` / `--max-queries`, and settles the ground truth: the checks
/// every dataset format goes through once its arrays are read (the fuzz target
/// `dataset_arrays` drives it with arrays of any shape and content).
pub fn assemble(arrays: DatasetArrays<'_>, opts: &LoadOptions) -> Result<Dataset, DatasetError> {
    let DatasetArrays {
        name,
        source,
        distance,
        mut train,
        mut test,
        stored_gt,
        sha256,
    } = arrays;
    check_vectors(&train, &test, distance)?;
    // Stored neighbours are checked against the full train set before any subsetting.
    if let Some((k, ids)) = &stored_gt {
        check_stored_gt(source, &train, &test, *k, ids)?;
    }

    let mut stored_gt = stored_gt;
    if let Some(limit) = opts.limit {
        if limit == 0 || limit > train.len() {
            return Err(DatasetError::BadLimit {
                limit,
                n: train.len(),
            });
        }
        if limit < train.len() {
            train.truncate(limit);
            // Stored neighbours refer to the full set: they must be recomputed.
            stored_gt = None;
        }
    }
    if let Some(q) = opts.max_queries
        && q > 0
        && q < test.len()
    {
        test.truncate(q);
        if let Some((k, ids)) = &mut stored_gt {
            ids.truncate(q * *k);
        }
    }

    let (ground_truth, ground_truth_source) =
        settle_ground_truth(source, &train, &test, distance, stored_gt, opts)?;
    Ok(Dataset {
        name,
        source: source.to_string(),
        distance,
        train: Arc::new(train),
        test,
        ground_truth,
        ground_truth_source,
        sha256,
        files: Vec::new(),
        limit: opts.limit,
        warnings: Vec::new(),
        attributes: None,
        element_type: ElementType::Float32,
        judgments: None,
        lexical: None,
    })
}

/// Both sets non-empty, of one dimension, finite, and of non-zero norm under `angular`.
fn check_vectors(train: &Vectors, test: &Vectors, distance: Distance) -> Result<(), DatasetError> {
    if train.is_empty() {
        return Err(DatasetError::Empty("train"));
    }
    if test.is_empty() {
        return Err(DatasetError::Empty("test"));
    }
    if train.dim() != test.dim() {
        return Err(DatasetError::DimMismatch {
            train: train.dim(),
            test: test.dim(),
        });
    }
    train.check_finite("train")?;
    test.check_finite("test")?;
    if distance == Distance::Angular {
        train.check_nonzero_norm("train")?;
        test.check_nonzero_norm("test")?;
    }
    Ok(())
}

/// Stored neighbours: `k` per query, every id a train row, none listed twice for a query.
fn check_stored_gt(
    source: &str,
    train: &Vectors,
    test: &Vectors,
    k: usize,
    ids: &[i64],
) -> Result<(), DatasetError> {
    // A stored truth of depth 0 (an HDF5 `neighbors` of shape [Q, 0]) holds nothing to
    // score against; found by the fuzz target `dataset_arrays`.
    if k == 0 {
        return Err(DatasetError::BadGroundTruth {
            dataset: source.to_string(),
            detail: "its neighbours have depth 0".into(),
        });
    }
    let rows = ids.len() / k;
    if rows != test.len() || !ids.len().is_multiple_of(k) {
        return Err(DatasetError::GroundTruthRows {
            gt: rows,
            test: test.len(),
        });
    }
    if let Some(pos) = ids
        .iter()
        .position(|&id| id < 0 || id as usize >= train.len())
    {
        return Err(DatasetError::NeighborOutOfRange {
            query: pos / k,
            id: ids[pos],
            n: train.len(),
        });
    }
    let mut row = Vec::with_capacity(k);
    for (q, chunk) in ids.chunks_exact(k).enumerate() {
        row.clear();
        row.extend_from_slice(chunk);
        row.sort_unstable();
        if let Some(w) = row.windows(2).find(|w| w[0] == w[1]) {
            return Err(DatasetError::BadGroundTruth {
                dataset: source.to_string(),
                detail: format!("query {q} lists neighbour {} twice", w[0]),
            });
        }
    }
    Ok(())
}

/// The stored neighbours rescored (and spot-checked), else the truth computed when the
/// options ask for it, else none.
fn settle_ground_truth(
    source: &str,
    train: &Vectors,
    test: &Vectors,
    distance: Distance,
    stored_gt: Option<(usize, Vec<i64>)>,
    opts: &LoadOptions,
) -> Result<(GroundTruth, GroundTruthSource), DatasetError> {
    Ok(match stored_gt {
        Some((k, ids)) => {
            let truth = rescore_stored(train, test, distance, k, &ids);
            spot_check_stored(train, test, distance, &truth).map_err(|detail| {
                DatasetError::BadGroundTruth {
                    dataset: source.to_string(),
                    detail,
                }
            })?;
            (truth, GroundTruthSource::File)
        }
        None if opts.compute_missing_gt => (
            compute_ground_truth(train, test, distance, opts.gt_k, opts.observer())?,
            GroundTruthSource::Computed,
        ),
        None => (
            GroundTruth {
                k: 0,
                ids: Vec::new(),
                distances: Vec::new(),
            },
            GroundTruthSource::Missing,
        ),
    })
}
