//! Ground truth of filtered searches: for every filter level and search step, each query's
//! exact top-k among the live points that pass its predicate.
//!
//! Queries with the same predicate (a label, a tenant, a range window) form a group; each
//! group's passing points are selected once and searched with the same exact kernel as
//! unfiltered truth ([`exact_knn_rows`]), so the cost is that of an unfiltered truth over the
//! passing points, not over the whole set. A query with fewer than k passing points gets its
//! row padded with id `PointId::MAX` at +inf, which the metrics ignore (the relevant set is
//! what passes). Each level's truths are cached like unfiltered ones, under a key that adds
//! the predicates and the attribute values they read.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::RunError;
use super::ground_truth::{self, GtCache, StepTruths};
use crate::dataset::Dataset;
use crate::filter::{FilterLevel, FilterSetup, Predicate};
use crate::groundtruth::{GroundTruth, RowSelection, exact_knn_rows};
use crate::runbook::Resolved;
use crate::types::{PointId, Progress, ProgressUnit};

/// The truths and measured selectivities of every level, `[level][step]`.
pub struct FilteredTruths {
    pub truths: Vec<StepTruths>,
    pub selectivity: Vec<Vec<f64>>,
}

/// Where the cached truth of one level lives.
fn cache_of(
    cache_dir: &Path,
    dataset: &Dataset,
    steps: &[Resolved],
    k: usize,
    setup: &FilterSetup,
    level: &FilterLevel,
) -> GtCache {
    let mut h = Sha256::new();
    h.update(ground_truth::cache_key(dataset, steps, k).as_bytes());
    let mut fields: Vec<&str> = level
        .predicates
        .iter()
        .flat_map(Predicate::field_names)
        .collect();
    fields.sort_unstable();
    fields.dedup();
    h.update(setup.attributes.fingerprint(&fields));
    for p in &level.predicates {
        h.update(p.to_string().as_bytes());
        h.update(b"\n");
    }
    let key: String = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    GtCache {
        path: cache_dir
            .join("groundtruth")
            .join(format!("{}-k{k}-filtered.gt", &key[..32])),
        key,
    }
}

/// Computes (or loads from the cache in `cache_dir`) the truth of every level at every
/// search step, and the mean fraction of live points passing a query's predicate.
pub fn filtered_truths(
    dataset: &Dataset,
    steps: &[Resolved],
    setup: &FilterSetup,
    k: usize,
    cache_dir: Option<&Path>,
    progress: &dyn Progress,
) -> Result<FilteredTruths, RunError> {
    let mut truths = Vec::with_capacity(setup.levels.len());
    let mut selectivity = Vec::with_capacity(setup.levels.len());
    for level in &setup.levels {
        let cache = cache_dir.map(|d| cache_of(d, dataset, steps, k, setup, level));
        let cached = cache
            .as_ref()
            .and_then(|c| ground_truth::read_cache(c, steps, dataset).ok());
        let (level_truths, level_selectivity) =
            level_truth(dataset, steps, setup, level, k, cached.is_none(), progress)?;
        let level_truths = match cached {
            Some(found) => found,
            None => {
                if let Some(c) = &cache {
                    // The cache is an optimisation: a read-only directory is not an error.
                    let _ = ground_truth::write_cache(c, &level_truths);
                }
                level_truths
            }
        };
        truths.push(level_truths);
        selectivity.push(level_selectivity);
    }
    Ok(FilteredTruths {
        truths,
        selectivity,
    })
}

/// One level: the passing points of each predicate group at each search step, their truth
/// when `compute` (else only the selectivity).
fn level_truth(
    dataset: &Dataset,
    steps: &[Resolved],
    setup: &FilterSetup,
    level: &FilterLevel,
    k: usize,
    compute: bool,
    progress: &dyn Progress,
) -> Result<(StepTruths, Vec<f64>), RunError> {
    let nq = dataset.test.len();
    if level.predicates.len() != nq {
        return Err(RunError::Setup(format!(
            "filter level {}: {} predicates for {nq} queries",
            level.name,
            level.predicates.len()
        )));
    }
    let mut groups: BTreeMap<&Predicate, Vec<usize>> = BTreeMap::new();
    for (q, p) in level.predicates.iter().enumerate() {
        groups.entry(p).or_default().push(q);
    }
    let compiled = groups
        .keys()
        .map(|p| p.compile(&setup.attributes))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| RunError::Setup(format!("filter level {}: {e}", level.name)))?;
    let dim = dataset.train.dim();
    let mut out: StepTruths = vec![None; steps.len()];
    let mut selectivity = vec![0.0; steps.len()];
    for (si, step) in steps.iter().enumerate() {
        let Resolved::Search { live } = step else {
            continue;
        };
        // Reuse an identical live set of an earlier step.
        if let Some(prev) = (0..si)
            .rev()
            .find(|j| matches!(&steps[*j], Resolved::Search { live: l } if l == live))
        {
            out[si] = out[prev].clone();
            selectivity[si] = selectivity[prev];
            continue;
        }
        let bar = compute.then(|| {
            progress.task(
                &format!("truth {} step {}", level.name, si + 1),
                Some(nq as u64),
                ProgressUnit::Items,
            )
        });
        let mut ids = vec![PointId::MAX; nq * k];
        let mut distances = vec![f32::INFINITY; nq * k];
        let mut passing_sum = 0.0;
        let mut done = 0usize;
        for ((_, queries), predicate) in groups.iter().zip(&compiled) {
            let (rows, pass_ids): (Vec<usize>, Vec<PointId>) = live
                .iter()
                .filter(|(id, _)| predicate.passes(*id))
                .map(|(id, row)| (*row, *id))
                .unzip();
            passing_sum += queries.len() as f64 * rows.len() as f64 / live.len().max(1) as f64;
            if !compute || rows.is_empty() {
                done += queries.len();
                continue;
            }
            let mut flat = Vec::with_capacity(queries.len() * dim);
            for q in queries {
                flat.extend_from_slice(dataset.test.row(*q));
            }
            let base = done;
            let gt = exact_knn_rows(
                &RowSelection {
                    vectors: dataset.train.as_flat(),
                    rows: &rows,
                    ids: &pass_ids,
                    dim,
                },
                &flat,
                dataset.distance,
                k,
                &|n| {
                    if let Some(b) = &bar {
                        b.set((base + n) as u64);
                    }
                },
            );
            for (j, q) in queries.iter().enumerate() {
                ids[q * k..(q + 1) * k].copy_from_slice(gt.ids_of(j));
                distances[q * k..(q + 1) * k].copy_from_slice(gt.distances_of(j));
            }
            done += queries.len();
        }
        drop(bar);
        selectivity[si] = passing_sum / nq.max(1) as f64;
        if compute {
            out[si] = Some(Arc::new(GroundTruth { k, ids, distances }));
        }
        super::check_interrupt()?;
    }
    Ok((out, selectivity))
}
