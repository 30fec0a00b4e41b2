//! `exact`: brute-force search over the live set, in process.
//!
//! It is the reference engine: distances come from the same [`Distance::between`] the ground
//! truth uses and ties are broken by id, so its recall must be exactly 1.000 on every dataset
//! and after every mutation. Anything less is a bug in the ground truth, the bookkeeping of
//! live points, or the metrics.
//!
//! Bulk-loaded rows are kept as references into the harness's shared train matrix (no copy);
//! vectors written later by upserts are stored here.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;

use crate::adapters::support::{filter, rows};
use crate::distance::Distance;
use crate::types::ElementType;
use crate::engine::{Batch, Query, CollectionSpec, ConnectOptions, EngineError, EngineResult, Footprint, IndexReport, Neighbor, PointId, SourcedBytes, VectorEngine};
use crate::filter::{Attributes, Predicate};
use crate::groundtruth::{BaseSet, RowSelection, exact_knn};
use crate::params::{ParamMap, ParamMapExt};
use crate::vectors::Vectors;

const NAME: &str = crate::adapters::meta::exact::NAME;

/// Sparse and hybrid runs (`bench --retrieval sparse|hybrid`).
pub mod hybrid;

/// Writes and searches from several threads at once, linearisable (see [`locked`]).
mod locked;

/// Opens an empty engine; `create` sets its dimension and metric.
pub fn open(_opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(locked::LockedExact::default()))
}

/// Where a live point's vector is.
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// Row of shared block `block`.
    Shared { block: usize, row: usize },
    /// Row of the engine's own storage.
    Own(usize),
}

/// A range of rows of the harness's shared matrix, with per-row liveness.
struct SharedBlock {
    rows: Arc<Vectors>,
    start: usize,
    ids: Vec<PointId>,
    live: Vec<bool>,
}

#[derive(Default)]
pub struct ExactEngine {
    distance: Option<Distance>,
    dim: usize,
    shared: Vec<SharedBlock>,
    own: Vec<f32>,
    own_ids: Vec<PointId>,
    own_live: Vec<bool>,
    slots: HashMap<PointId, Slot>,
    /// The points' attributes (by id), for filtered search.
    attributes: Option<Arc<Attributes>>,
    /// The dataset's element type: its values are kept exactly (as f32, which holds every
    /// 8-bit integer and every f16), and scored with `Distance::between`, exact on them.
    element_type: ElementType,
}

/// Max-heap entry ordered by (distance, id): the worst candidate sits on top.
#[derive(PartialEq)]
struct Candidate(f32, PointId);
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

fn push_top(heap: &mut BinaryHeap<Candidate>, k: usize, c: Candidate) {
    if heap.len() < k {
        heap.push(c);
    } else if heap.peek().is_some_and(|worst| c < *worst) {
        heap.pop();
        heap.push(c);
    }
}

impl ExactEngine {
    fn metric(&self) -> EngineResult<Distance> {
        self.distance
            .ok_or_else(|| EngineError::op(NAME, "search", "collection not created"))
    }

    fn check_dim(&self, len: usize, count: usize, op: &str) -> EngineResult<()> {
        if self.dim == 0 {
            // No collection yet: nothing has a dimension to match.
            return Err(rows::mismatch(NAME, op, self.dim, count, len));
        }
        rows::check(NAME, op, self.dim, count, len)
    }

    /// The one matrix every live point is a row of, if there is one: no live vector of the
    /// engine's own and every shared block from the same matrix.
    fn single_shared_matrix(&self) -> Option<&Arc<Vectors>> {
        if self.own_live.iter().any(|live| *live) {
            return None;
        }
        let first = &self.shared.first()?.rows;
        self.shared
            .iter()
            .all(|b| Arc::ptr_eq(&b.rows, first))
            .then_some(first)
    }

    /// Marks the current vector of `id` dead, if any.
    fn retire(&mut self, id: PointId) -> bool {
        match self.slots.remove(&id) {
            Some(Slot::Shared { block, row }) => {
                self.shared[block].live[row] = false;
                true
            }
            Some(Slot::Own(i)) => {
                self.own_live[i] = false;
                true
            }
            None => false,
        }
    }

    fn live_points(&self) -> usize {
        self.slots.len()
    }

    /// Top-`k` of the live points `keep` accepts, by (distance, id).
    fn scan(
        &self,
        query: Query<'_>,
        keep: impl Fn(PointId) -> bool + Sync,
        out: &mut Vec<Neighbor>,
    ) -> EngineResult<()> {
        let distance = self.metric()?;
        if !query.start(NAME, self.dim, out)? {
            return Ok(());
        }
        let Query { vector: query, k, .. } = query;
        // Scan shared blocks in chunks (in parallel when the set is large enough to pay for
        // the threads), then merge the per-chunk heaps.
        let dim = self.dim;
        let chunk_rows = 16_384;
        let chunks: Vec<(&SharedBlock, usize, usize)> = self
            .shared
            .iter()
            .flat_map(|b| {
                let n = b.ids.len();
                (0..n.div_ceil(chunk_rows))
                    .map(move |c| (b, c * chunk_rows, ((c + 1) * chunk_rows).min(n)))
            })
            .collect();
        let scan = |&(b, lo, hi): &(&SharedBlock, usize, usize)| {
            let mut heap = BinaryHeap::with_capacity(k + 1);
            let data = b.rows.rows(b.start + lo, b.start + hi);
            for (i, x) in data.chunks_exact(dim).enumerate() {
                if b.live[lo + i] && keep(b.ids[lo + i]) {
                    push_top(
                        &mut heap,
                        k,
                        Candidate(distance.between(query, x), b.ids[lo + i]),
                    );
                }
            }
            heap
        };
        let merge = |mut a: BinaryHeap<Candidate>, b: BinaryHeap<Candidate>| {
            for c in b {
                push_top(&mut a, k, c);
            }
            a
        };
        let mut heap = if chunks.len() > 2 {
            chunks.par_iter().map(scan).reduce(BinaryHeap::new, merge)
        } else {
            chunks.iter().map(scan).fold(BinaryHeap::new(), merge)
        };
        for (i, x) in self.own.chunks_exact(dim).enumerate() {
            if self.own_live[i] && keep(self.own_ids[i]) {
                push_top(
                    &mut heap,
                    k,
                    Candidate(distance.between(query, x), self.own_ids[i]),
                );
            }
        }
        let mut best = heap.into_vec();
        best.sort();
        out.extend(
            best.into_iter()
                .map(|Candidate(d, id)| Neighbor { id, score: d }),
        );
        Ok(())
    }
}

impl VectorEngine for ExactEngine {
    fn name(&self) -> &str {
        NAME
    }

    fn version(&self) -> String {
        format!("ragdbeval {}", env!("CARGO_PKG_VERSION"))
    }

    fn check_build_params(&self, spec: &CollectionSpec) -> EngineResult<()> {
        spec.build_params
            .reject_unknown(&[])
            .map_err(|e| EngineError::bad_param(NAME, "build", e))
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        self.check_build_params(spec)?;
        *self = ExactEngine {
            distance: Some(spec.distance),
            dim: spec.dim,
            attributes: spec.attributes.clone(),
            element_type: spec.element_type,
            ..ExactEngine::default()
        };
        Ok(())
    }

    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.upsert_batch(ids, vectors)
    }

    fn insert_shared(
        &mut self,
        ids: &[PointId],
        rows: &Arc<Vectors>,
        start: usize,
    ) -> EngineResult<()> {
        if rows.dim() != self.dim || start + ids.len() > rows.len() {
            return Err(EngineError::op(
                NAME,
                "bulk insert",
                "rows out of range or wrong dimension",
            ));
        }
        let block = self.shared.len();
        for (row, id) in ids.iter().enumerate() {
            self.retire(*id);
            self.slots.insert(*id, Slot::Shared { block, row });
        }
        self.shared.push(SharedBlock {
            rows: rows.clone(),
            start,
            ids: ids.to_vec(),
            live: vec![true; ids.len()],
        });
        Ok(())
    }

    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        Ok(IndexReport {
            indexed_vectors: Some(0),
            points: Some(self.live_points() as u64),
            may_full_scan: false,
            details: serde_json::Map::new(),
        })
    }

    fn upsert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.check_dim(vectors.len(), ids.len(), "upsert")?;
        for (id, v) in ids.iter().zip(vectors.chunks_exact(self.dim)) {
            self.retire(*id);
            self.slots.insert(*id, Slot::Own(self.own_ids.len()));
            self.own.extend_from_slice(v);
            self.own_ids.push(*id);
            self.own_live.push(true);
        }
        Ok(())
    }

    fn delete_batch(&mut self, ids: &[PointId]) -> EngineResult<()> {
        for id in ids {
            self.retire(*id);
        }
        Ok(())
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        params
            .reject_unknown(&[])
            .map_err(|e| EngineError::bad_param(NAME, "search", e))
    }

    /// The scan over the points that pass: exact, ties by id, like the filtered truth.
    fn search(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        match query.filter {
            None => self.scan(query, |_| true, out),
            Some(predicate) => {
                let compiled = filter::compile(NAME, self.attributes.as_deref(), predicate)?;
                self.scan(query, |id| compiled.passes(id), out)
            }
        }
    }

    /// Any predicate over the points' attributes: the reference for every other engine.
    fn check_filter(&self, attributes: &Attributes, predicate: &Predicate) -> EngineResult<()> {
        filter::check(NAME, attributes, predicate)
    }

    /// The whole batch through the blocked SGEMM kernel of the ground truth: same ordering
    /// rule, much faster than one scan per query. Filtered batches scan query by query.
    fn batch_search(&self, batch: Batch<'_>) -> EngineResult<Vec<Vec<Neighbor>>> {
        if batch.filters.is_some() {
            return crate::engine::search_each(self, batch);
        }
        let distance = self.metric()?;
        batch.check(NAME, self.dim)?;
        let Batch {
            rows: queries,
            dim,
            k,
            ..
        } = batch;
        let gt = match self.single_shared_matrix() {
            // Every live point is a row of one shared matrix (the dataset after a bulk
            // build, mapped or in memory): the kernel reads those rows in place. Copying
            // them would double the memory, and a mapped dataset may not fit at all.
            Some(matrix) => {
                let mut live: Vec<(PointId, usize)> = Vec::with_capacity(self.live_points());
                for b in &self.shared {
                    for (i, id) in b.ids.iter().enumerate() {
                        if b.live[i] {
                            live.push((*id, b.start + i));
                        }
                    }
                }
                live.sort_unstable();
                let ids: Vec<PointId> = live.iter().map(|(id, _)| *id).collect();
                let rows: Vec<usize> = live.iter().map(|(_, row)| *row).collect();
                exact_knn(
                    &RowSelection {
                        vectors: matrix.as_flat(),
                        rows: &rows,
                        ids: &ids,
                        dim,
                    },
                    queries,
                    distance,
                    k,
                    &|_| {},
                )
            }
            None => {
                // Gather live vectors in id order so that ties resolve by id, as in the
                // ground truth.
                let mut live: Vec<(PointId, &[f32])> = Vec::with_capacity(self.live_points());
                for b in &self.shared {
                    for (i, id) in b.ids.iter().enumerate() {
                        if b.live[i] {
                            live.push((*id, b.rows.row(b.start + i)));
                        }
                    }
                }
                for (i, id) in self.own_ids.iter().enumerate() {
                    if self.own_live[i] {
                        live.push((*id, &self.own[i * dim..(i + 1) * dim]));
                    }
                }
                live.sort_by_key(|(id, _)| *id);
                let ids: Vec<PointId> = live.iter().map(|(id, _)| *id).collect();
                let mut flat = Vec::with_capacity(live.len() * dim);
                for (_, v) in &live {
                    flat.extend_from_slice(v);
                }
                exact_knn(
                    &BaseSet {
                        vectors: &flat,
                        ids: Some(&ids),
                        dim,
                    },
                    queries,
                    distance,
                    k,
                    &|_| {},
                )
            }
        };
        Ok((0..gt.queries())
            .map(|q| {
                gt.ids_of(q)
                    .iter()
                    .zip(gt.distances_of(q))
                    .filter(|(id, _)| **id != PointId::MAX)
                    .map(|(id, d)| Neighbor { id: *id, score: *d })
                    .collect()
            })
            .collect())
    }

    /// No index structure: exact scans its vectors. The total is what it holds in memory.
    fn footprint(&self) -> EngineResult<Footprint> {
        // Vectors it holds (shared rows are the dataset's memory, counted once) plus ids.
        let vectors = self.live_points() * self.dim * std::mem::size_of::<f32>();
        let ids = self.live_points() * std::mem::size_of::<PointId>();
        Ok(Footprint::new(
            Err("no index structure: exact scans every vector".into()),
            Ok(SourcedBytes {
                bytes: (vectors + ids) as u64,
                source: "live vectors × dim × 4 B + ids × 8 B (in memory, computed from counts)"
                    .into(),
            }),
        ))
    }

    fn answers_are_exact(&self) -> bool {
        true
    }

    fn stored_element_type(&self) -> ElementType {
        self.element_type
    }

    fn describe(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        m.insert("live_points".into(), self.live_points().into());
        m.insert("own_vectors".into(), self.own_ids.len().into());
        m
    }
}
