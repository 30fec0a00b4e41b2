//! Ground truth of filtered searches: for every filter level and search step, each query's
//! exact top-k among the live points that pass its predicate.
//!
//! Queries with the same predicate (a label, a tenant, a range window) form a group; each
//! group's passing points are selected once and searched with the same exact kernel as
//! unfiltered truth ([`exact_knn`]), so the cost is that of an unfiltered truth over the
//! passing points, not over the whole set. A query with fewer than k passing points gets its
//! row padded with id `PointId::MAX` at +inf, which the metrics ignore (the relevant set is
//! what passes). Each level's truths are cached like unfiltered ones, under a key that adds
//! the predicates and the attribute values they read.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use sha2::{Digest, Sha256};

use super::RunError;
use super::ground_truth::{self, GtCache, StepTruths};
use crate::dataset::Dataset;
use rayon::prelude::*;

use crate::filter::{
    Attributes, Column, CompiledPredicate, Condition, FilterLevel, FilterSetup, Predicate,
};
use crate::groundtruth::{
    GroundTruth, GroupScratch, RowSelection, exact_knn, exact_knn_rows_group, rows_centre,
};
use crate::runbook::Resolved;
use crate::types::{PointId, Progress, ProgressTask, ProgressUnit};

/// The truths and measured selectivities of every level, `[level][step]`.
pub struct FilteredTruths {
    pub truths: Vec<StepTruths>,
    pub selectivity: Vec<Vec<f64>>,
    /// Time spent computing truths (not finding or writing their cache; zero when every
    /// level came from the cache).
    pub computed: std::time::Duration,
}

/// Queries a group may have to be searched as one query block (the kernel's block size).
const GROUP_BLOCK: usize = 256;

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
    let mut computed = std::time::Duration::ZERO;
    for level in &setup.levels {
        let cache = cache_dir.map(|d| cache_of(d, dataset, steps, k, setup, level));
        let cached = cache
            .as_ref()
            .and_then(|c| ground_truth::read_cache(c, steps, dataset).ok());
        let started = std::time::Instant::now();
        let (level_truths, level_selectivity) =
            level_truth(dataset, steps, setup, level, k, cached.is_none(), progress)?;
        if cached.is_none() {
            computed += started.elapsed();
        }
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
        computed,
    })
}

/// A level's queries grouped by predicate (a query's position in the group order is its
/// group's index), with each predicate compiled.
struct PredicateGroups<'a> {
    queries: BTreeMap<&'a Predicate, Vec<usize>>,
    predicates: Vec<&'a Predicate>,
    compiled: Vec<CompiledPredicate<'a>>,
}

impl<'a> PredicateGroups<'a> {
    /// Groups the queries of `level`, which must have one predicate per query.
    fn of(
        setup: &'a FilterSetup,
        level: &'a FilterLevel,
        nq: usize,
    ) -> Result<PredicateGroups<'a>, RunError> {
        if level.predicates.len() != nq {
            return Err(RunError::Setup(format!(
                "filter level {}: {} predicates for {nq} queries",
                level.name,
                level.predicates.len()
            )));
        }
        let mut queries: BTreeMap<&Predicate, Vec<usize>> = BTreeMap::new();
        for (q, p) in level.predicates.iter().enumerate() {
            queries.entry(p).or_default().push(q);
        }
        let predicates: Vec<&Predicate> = queries.keys().copied().collect();
        let compiled = queries
            .keys()
            .map(|p| p.compile(&setup.attributes))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| RunError::Setup(format!("filter level {}: {e}", level.name)))?;
        Ok(PredicateGroups {
            queries,
            predicates,
            compiled,
        })
    }
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
    let groups = PredicateGroups::of(setup, level, nq)?;
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
        // Filled on all cores: the first writes to fresh memory are what this costs.
        let mut ids: Vec<PointId> = (0..nq * k).into_par_iter().map(|_| PointId::MAX).collect();
        let mut distances: Vec<f32> = (0..nq * k).into_par_iter().map(|_| f32::INFINITY).collect();
        let passing = passing_sets(
            live,
            &groups.predicates,
            &groups.compiled,
            &setup.attributes,
        );
        let passing_sum: f64 = groups
            .queries
            .values()
            .enumerate()
            .map(|(g, queries)| {
                let (rows, _) = passing.group(g);
                queries.len() as f64 * rows.len() as f64 / live.len().max(1) as f64
            })
            .sum();
        if compute {
            let search = GroupSearch {
                dataset,
                k,
                groups: &groups.queries,
                passing: &passing,
                bar: bar.as_deref(),
            };
            search.run(live, (&mut ids, &mut distances));
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

/// The exact search of every predicate group among its passing points at one step.
struct GroupSearch<'a> {
    dataset: &'a Dataset,
    k: usize,
    groups: &'a BTreeMap<&'a Predicate, Vec<usize>>,
    passing: &'a PassingSets,
    bar: Option<&'a dyn ProgressTask>,
}

impl GroupSearch<'_> {
    /// Writes each query's top k among its group's passing points into `ids` and `distances`
    /// (`queries × k`).
    fn run(&self, live: &[(PointId, usize)], (ids, distances): (&mut Vec<PointId>, &mut Vec<f32>)) {
        let (dataset, k) = (self.dataset, self.k);
        let dim = dataset.train.dim();
        // Groups run in parallel; a group of up to 256 queries is one query block (its
        // passing points packed once, straight from the matrix), a larger one spreads over
        // the cores itself. All share one centre, sampled from the live points.
        let centre = rows_centre(
            dataset.train.as_flat(),
            dim,
            live.iter().map(|(_, row)| *row),
        );
        let done = AtomicUsize::new(0);
        // Each group's answers go into the output as soon as they are found (one short
        // lock per group): kept until the end, all groups' answers were another output's
        // worth of fresh memory, and first writes to fresh memory are slow on a VM.
        let output = std::sync::Mutex::new((ids, distances));
        self.groups
            .values()
            .enumerate()
            .collect::<Vec<_>>()
            .into_par_iter()
            .for_each_init(GroupScratch::default, |scratch, (g, queries)| {
                let (rows, pass_ids) = self.passing.group(g);
                let mut flat = Vec::with_capacity(queries.len() * dim);
                for q in queries {
                    flat.extend_from_slice(dataset.test.row(*q));
                }
                let base = RowSelection {
                    vectors: dataset.train.as_flat(),
                    rows,
                    ids: pass_ids,
                    dim,
                };
                let gt = if rows.is_empty() {
                    GroundTruth {
                        k,
                        ids: vec![PointId::MAX; queries.len() * k],
                        distances: vec![f32::INFINITY; queries.len() * k],
                    }
                } else if queries.len() <= GROUP_BLOCK {
                    exact_knn_rows_group(&base, &flat, dataset.distance, k, &centre, scratch)
                } else {
                    exact_knn(&base, &flat, dataset.distance, k, &|_| {})
                };
                let n = done.fetch_add(queries.len(), Ordering::Relaxed) + queries.len();
                if let Some(b) = self.bar {
                    b.set(n as u64);
                }
                // A panic elsewhere poisons the lock; the rows it guards are still
                // whole (each copy is of whole rows).
                let mut out = output.lock().unwrap_or_else(|e| e.into_inner());
                let (ids, distances) = &mut *out;
                for (j, q) in queries.iter().enumerate() {
                    ids[q * k..(q + 1) * k].copy_from_slice(gt.ids_of(j));
                    distances[q * k..(q + 1) * k].copy_from_slice(gt.distances_of(j));
                }
            });
    }
}

/// The live points that pass each group's predicate, all groups' lists in two flat buffers
/// (one allocation each: written in place by [`bucket_by_group`], concatenated from lists
/// made per group by the other shapes).
struct PassingSets {
    rows: Vec<usize>,
    ids: Vec<PointId>,
    /// Group `g`'s points are `starts[g]..starts[g + 1]`.
    starts: Vec<usize>,
}

impl PassingSets {
    /// Group `g`'s passing points: their matrix rows and ids.
    fn group(&self, g: usize) -> (&[usize], &[PointId]) {
        let range = self.starts[g]..self.starts[g + 1];
        (&self.rows[range.clone()], &self.ids[range])
    }

    /// Lists made group by group, concatenated.
    fn from_lists(lists: Vec<(Vec<usize>, Vec<PointId>)>) -> PassingSets {
        let total = lists.iter().map(|(rows, _)| rows.len()).sum();
        let mut out = PassingSets {
            rows: Vec::with_capacity(total),
            ids: Vec::with_capacity(total),
            starts: Vec::with_capacity(lists.len() + 1),
        };
        out.starts.push(0);
        for (rows, ids) in lists {
            out.rows.extend_from_slice(&rows);
            out.ids.extend_from_slice(&ids);
            out.starts.push(out.rows.len());
        }
        out
    }
}

/// The live points of each group, each point in at most one group (`group_at`), in the order
/// of `live`: counted, then written in place, both in parallel over slices of `live`. Pushing
/// onto growing lists on one thread took 20–24 ms for 1M points in 100 groups, 7 % of the
/// filtered truth at 10k queries (`scripts/filtered_gt_timing.sh`); here counting takes 1–2 ms
/// and writing 8–20 ms, nearly all of it the first writes to the lists' 16 MB of fresh memory
/// (huge pages for them were slower still on this VM: 12–27 ms).
fn bucket_by_group(
    live: &[(PointId, usize)],
    groups: usize,
    group_at: impl Fn(PointId) -> Option<usize> + Sync,
) -> PassingSets {
    let slice_len = live
        .len()
        .div_ceil(rayon::current_num_threads().max(1) * 4)
        .max(4096);
    let slices: Vec<&[(PointId, usize)]> = live.chunks(slice_len).collect();
    let counts: Vec<Vec<usize>> = slices
        .par_iter()
        .map(|slice| {
            let mut count = vec![0usize; groups];
            for (id, _) in slice.iter() {
                if let Some(g) = group_at(*id) {
                    count[g] += 1;
                }
            }
            count
        })
        .collect();
    let mut starts = Vec::with_capacity(groups + 1);
    starts.push(0);
    for g in 0..groups {
        starts.push(starts[g] + counts.iter().map(|c| c[g]).sum::<usize>());
    }
    let total = starts[groups];
    let mut rows = vec![0usize; total];
    let mut ids: Vec<PointId> = vec![0; total];
    // Each slice's share of every group's list: group-major, slices in order within a group.
    let mut shares: Vec<Vec<(&mut [usize], &mut [PointId])>> = (0..slices.len())
        .map(|_| Vec::with_capacity(groups))
        .collect();
    let (mut rows_rest, mut ids_rest) = (rows.as_mut_slice(), ids.as_mut_slice());
    for g in 0..groups {
        for (count, share) in counts.iter().zip(shares.iter_mut()) {
            let (rows_here, rows_after) = rows_rest.split_at_mut(count[g]);
            let (ids_here, ids_after) = ids_rest.split_at_mut(count[g]);
            share.push((rows_here, ids_here));
            (rows_rest, ids_rest) = (rows_after, ids_after);
        }
    }
    slices
        .into_par_iter()
        .zip(shares)
        .for_each(|(slice, mut share)| {
            let mut filled = vec![0usize; groups];
            for (id, row) in slice {
                if let Some(g) = group_at(*id) {
                    let (rows, ids) = &mut share[g];
                    rows[filled[g]] = *row;
                    ids[filled[g]] = *id;
                    filled[g] += 1;
                }
            }
        });
    PassingSets { rows, ids, starts }
}

/// The live points (rows and ids, ids ascending) that pass each group's predicate.
///
/// Two shapes are selected without testing every point against every predicate: one keyword
/// equality on one field for every group (one pass over the points, each to its value's
/// group) and one range on one integer field for every group (the points sorted by value
/// once, each range a binary search). Anything else tests each point against each group.
fn passing_sets(
    live: &[(PointId, usize)],
    predicates: &[&Predicate],
    compiled: &[CompiledPredicate<'_>],
    attributes: &Attributes,
) -> PassingSets {
    let conditions: Option<Vec<&Condition>> = predicates
        .iter()
        .map(|p| match p.all.as_slice() {
            [c] => Some(c),
            _ => None,
        })
        .collect();
    let covered = |id: PointId| attributes.covers(id);
    if let Some(conditions) = conditions
        && let Some(first) = conditions.first()
    {
        let field = match first {
            Condition::Equals { field, .. } | Condition::Range { field, .. } => field,
        };
        let same_field = conditions.iter().all(|c| match (c, first) {
            (Condition::Equals { field: f, .. }, Condition::Equals { .. })
            | (Condition::Range { field: f, .. }, Condition::Range { .. }) => f == field,
            _ => false,
        });
        let column = attributes.field_index(field).map(|f| attributes.column(f));
        match (same_field, column) {
            (true, Some(Column::Keyword { dictionary, codes })) => {
                let mut group_of = vec![usize::MAX; dictionary.len()];
                for (g, c) in conditions.iter().enumerate() {
                    if let Condition::Equals { value, .. } = c
                        && let Some(code) = dictionary.iter().position(|d| d == value)
                    {
                        group_of[code] = g;
                    }
                }
                let group_at = |id: PointId| {
                    let g = if covered(id) {
                        group_of[codes[id as usize] as usize]
                    } else {
                        usize::MAX
                    };
                    (g != usize::MAX).then_some(g)
                };
                return bucket_by_group(live, conditions.len(), group_at);
            }
            (true, Some(Column::Integer(values))) => {
                let mut by_value: Vec<(i64, PointId, usize)> = live
                    .iter()
                    .filter(|(id, _)| covered(*id))
                    .map(|(id, row)| (values[*id as usize], *id, *row))
                    .collect();
                by_value.par_sort_unstable();
                return PassingSets::from_lists(
                    conditions
                        .par_iter()
                        .map(|c| {
                            let Condition::Range { gte, lt, .. } = c else {
                                return (Vec::new(), Vec::new());
                            };
                            let lo = by_value.partition_point(|(v, _, _)| v < gte);
                            let hi = by_value.partition_point(|(v, _, _)| v < lt);
                            let mut hits: Vec<(PointId, usize)> = by_value[lo..hi.max(lo)]
                                .iter()
                                .map(|(_, id, row)| (*id, *row))
                                .collect();
                            hits.sort_unstable();
                            hits.into_iter().map(|(id, row)| (row, id)).unzip()
                        })
                        .collect(),
                );
            }
            _ => {}
        }
    }
    PassingSets::from_lists(
        compiled
            .par_iter()
            .map(|c| {
                live.iter()
                    .filter(|(id, _)| c.passes(*id))
                    .map(|(id, row)| (*row, *id))
                    .unzip()
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each group's points as `bucket_by_group` lists them, against a plain filter of `live`.
    fn check_buckets(live: &[(PointId, usize)], groups: usize) {
        let group_at = |id: PointId| (id % 7 != 3).then_some((id as usize * 31) % groups);
        let sets = bucket_by_group(live, groups, group_at);
        for g in 0..groups {
            let (want_rows, want_ids): (Vec<usize>, Vec<PointId>) = live
                .iter()
                .filter(|(id, _)| group_at(*id) == Some(g))
                .map(|(id, row)| (*row, *id))
                .unzip();
            let (rows, ids) = sets.group(g);
            assert_eq!(rows, want_rows.as_slice(), "rows of group {g}");
            assert_eq!(ids, want_ids.as_slice(), "ids of group {g}");
        }
    }

    #[test]
    fn buckets_hold_each_groups_points_in_live_order() {
        // More points than one slice (4096), so that slices fill their shares in parallel.
        let fresh: Vec<(PointId, usize)> = (0..20_000).map(|i| (i, i as usize)).collect();
        check_buckets(&fresh, 13);
        // After deletes and updates: ids skip, and some rows are not the id's own.
        let moved: Vec<(PointId, usize)> = (0..20_000u64)
            .filter(|i| i % 5 != 0)
            .map(|i| {
                (
                    i,
                    if i % 11 == 0 {
                        20_000 + i as usize
                    } else {
                        i as usize
                    },
                )
            })
            .collect();
        check_buckets(&moved, 13);
        check_buckets(&[], 4);
    }
}
