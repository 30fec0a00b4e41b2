//! One DiskANN in-memory index (a Vamana graph over full-precision f32 vectors) and the
//! bookkeeping that maps ragdbeval's point ids onto DiskANN's slots.
//!
//! DiskANN's in-memory provider has a fixed number of slots, chosen when it is created, plus
//! one start point (the medoid of the bulk load, a slot of its own that is never returned).
//! Its ids are the slots themselves, so the adapter keeps which point each slot holds. A write
//! takes a slot that was never used, else one freed by a consolidation, else the index grows:
//! a new index with more slots is built from the live vectors, as DiskANN's fixed-size
//! provider offers no resize. Deletes are DiskANN's in-place deletes: the point is marked
//! deleted (searches never return it) and its neighbours are relinked around it; a deleted
//! slot is reused only after a consolidation (`drop_deleted_neighbors` over the graph, then
//! `release`), so no edge points at a slot that holds another vector.
//!
//! An update is a delete and an insert into another slot, as DiskANN's dynamic index does it;
//! while it runs, a concurrent search may find neither vector. Writers are serialised by a
//! mutex; searches run on any number of threads at once beside them (DiskANN's graph locks
//! each adjacency list). Growing swaps in the new index as a whole: a search holds the
//! generation (index and slot table) it started with.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard};

use diskann::graph::{DiskANNIndex, InplaceDeleteMethod, StartPointStrategy};
use diskann::provider::{DefaultContext, Delete};
use diskann_providers::index::diskann_async::new_index;
use diskann_providers::model::graph::provider::async_::TableDeleteProviderAsync;
use diskann_providers::model::graph::provider::async_::common::{
    FullPrecision, NoStore, TableBasedDeletes,
};
use diskann_providers::model::graph::provider::async_::inmem::{
    DefaultProviderParameters, FullPrecisionProvider, SetStartPoints,
};
use diskann_utils::views::rowmajor::{self, Matrix};
use rayon::prelude::*;

use super::NAME;
use super::settings::{BuildSettings, metric};
use crate::adapters::support::rows;
use crate::engine::{EngineError, EngineResult, PointId};

/// DiskANN's in-memory provider: f32 vectors, no quantized copy, a delete table.
pub type Provider = FullPrecisionProvider<f32, NoStore, TableDeleteProviderAsync>;
pub type Index = DiskANNIndex<Provider>;

/// Slots kept free beyond the points present, at least this many: the inserts of a runbook
/// after the build need no growth.
const MIN_HEADROOM: usize = 1_024;
/// Neighbours of a deleted point relinked to each other (DiskANN's `num_to_replace`).
const DELETE_REPLACE: usize = 3;
/// How an in-place delete finds the points that link to the deleted one.
const DELETE_METHOD: InplaceDeleteMethod = InplaceDeleteMethod::TwoHopAndOneHop;

/// A DiskANN error as the engine's error for `operation`.
pub fn engine_error(operation: &str, e: impl std::fmt::Display) -> EngineError {
    EngineError::op(NAME, operation, e)
}

/// Slots for `points` points and room to grow.
pub fn capacity_for(points: usize) -> usize {
    points + (points / 4).max(MIN_HEADROOM)
}

/// Which point each slot holds.
#[derive(Debug, Default)]
pub struct Slots {
    /// The point in each slot; `None` for a slot never used, deleted or released.
    id_of: Vec<Option<PointId>>,
    slot_of: HashMap<PointId, u32>,
    /// Slots below this were used at some time.
    next_unused: u32,
    /// Deleted in DiskANN, not yet released (edges may still lead to them).
    retired: Vec<u32>,
    /// Released by a consolidation: free for new points.
    free: Vec<u32>,
}

impl Slots {
    fn new(capacity: usize) -> Slots {
        Slots {
            id_of: vec![None; capacity],
            ..Slots::default()
        }
    }

    /// The point in `slot`, if it holds a live one.
    pub fn id(&self, slot: u32) -> Option<PointId> {
        self.id_of.get(slot as usize).copied().flatten()
    }

    pub fn used(&self) -> u32 {
        self.next_unused
    }

    pub fn retired(&self) -> usize {
        self.retired.len()
    }

    pub fn free(&self) -> usize {
        self.free.len()
    }

    /// Live slots, in slot order.
    pub fn live_slots(&self) -> Vec<u32> {
        let mut slots: Vec<u32> = self.slot_of.values().copied().collect();
        slots.sort_unstable();
        slots
    }

    /// `n` slots for new points, or `None` when there are not that many.
    fn take(&mut self, n: usize) -> Option<Vec<u32>> {
        let unused = self.id_of.len() - self.next_unused as usize;
        if n > unused + self.free.len() {
            return None;
        }
        let from_free = n.min(self.free.len());
        let mut out = self.free.split_off(self.free.len() - from_free);
        let start = self.next_unused;
        self.next_unused += (n - from_free) as u32;
        out.extend(start..self.next_unused);
        Some(out)
    }

    fn publish(&mut self, id: PointId, slot: u32) {
        self.id_of[slot as usize] = Some(id);
        self.slot_of.insert(id, slot);
    }

    /// Forgets `id`; its slot waits for a consolidation.
    fn retire(&mut self, id: PointId) -> Option<u32> {
        let slot = self.slot_of.remove(&id)?;
        self.id_of[slot as usize] = None;
        self.retired.push(slot);
        Some(slot)
    }
}

/// One DiskANN index with its slot table: replaced as a whole when the index grows.
pub struct Generation {
    pub index: Arc<Index>,
    pub slots: RwLock<Slots>,
    pub capacity: usize,
    /// The start point's vector (the medoid of the bulk load).
    start: Vec<f32>,
}

impl Generation {
    fn new(settings: &BuildSettings, dim: usize, capacity: usize, start: Vec<f32>) -> EngineResult<Generation> {
        let config = settings.config()?;
        let params = DefaultProviderParameters::simple(
            capacity,
            dim,
            metric(settings.distance),
            config.max_degree_u32().get(),
        );
        let index = new_index::<f32, _>(config, params, TableBasedDeletes)
            .map_err(|e| engine_error("create", e))?;
        index
            .provider()
            .set_start_points(std::iter::once(start.as_slice()))
            .map_err(|e| engine_error("create", format!("setting the start point: {e}")))?;
        Ok(Generation {
            index,
            slots: RwLock::new(Slots::new(capacity)),
            capacity,
            start,
        })
    }

    pub fn slots(&self) -> EngineResult<RwLockReadGuard<'_, Slots>> {
        self.slots
            .read()
            .map_err(|_| engine_error("search", "a thread panicked holding the slot table"))
    }

    fn slots_mut(&self) -> EngineResult<std::sync::RwLockWriteGuard<'_, Slots>> {
        self.slots
            .write()
            .map_err(|_| engine_error("write", "a thread panicked holding the slot table"))
    }

    /// The start point's slot (after the last regular slot).
    pub fn start_slot(&self) -> u32 {
        self.capacity as u32
    }
}

/// The collection: the current generation, the runtime DiskANN's async calls run on, and the
/// writer lock.
pub struct Graph {
    runtime: tokio::runtime::Runtime,
    current: RwLock<Arc<Generation>>,
    writer: Mutex<()>,
    pub dim: usize,
    pub settings: BuildSettings,
    pub grows: AtomicU64,
    pub consolidations: AtomicU64,
}

/// The medoid of `rows` (DiskANN's own start point choice for an in-memory build).
fn medoid(rows: &[f32], dim: usize) -> EngineResult<Vec<f32>> {
    let view = rowmajor::Ref::try_from_data(rows, rows.len() / dim, dim)
        .map_err(|e| engine_error("build", format!("viewing the vectors: {e}")))?;
    let start = StartPointStrategy::Medoid
        .compute(view)
        .map_err(|e| engine_error("build", format!("computing the medoid: {e}")))?;
    Ok(start.row(0).to_vec())
}

/// The last row of each id, in first-seen order: the same id twice in one batch is one point
/// with its later vector.
pub fn last_rows<'a>(ids: &[PointId], vectors: &'a [f32], dim: usize) -> Vec<(PointId, &'a [f32])> {
    let mut at: HashMap<PointId, usize> = HashMap::with_capacity(ids.len());
    let mut out: Vec<(PointId, &[f32])> = Vec::with_capacity(ids.len());
    for (&id, row) in ids.iter().zip(vectors.chunks_exact(dim)) {
        match at.get(&id) {
            Some(&i) => out[i].1 = row,
            None => {
                at.insert(id, out.len());
                out.push((id, row));
            }
        }
    }
    out
}

impl Graph {
    /// Builds the index over a bulk load: the medoid as start point, then every point
    /// inserted from rayon's threads at once (DiskANN's inserts are concurrent).
    pub fn build(
        dim: usize,
        settings: BuildSettings,
        ids: &[PointId],
        vectors: &[f32],
        expected: usize,
    ) -> EngineResult<Graph> {
        rows::check(NAME, "build", dim, ids.len(), vectors.len())?;
        if ids.is_empty() {
            return Err(engine_error("build", "no vectors to build the graph from"));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("diskann")
            .build()
            .map_err(|e| engine_error("create", format!("starting the async runtime: {e}")))?;
        let rows = last_rows(ids, vectors, dim);
        let capacity = capacity_for(rows.len().max(expected));
        check_slots(capacity)?;
        let generation = Generation::new(&settings, dim, capacity, medoid(vectors, dim)?)?;
        let graph = Graph {
            runtime,
            current: RwLock::new(Arc::new(generation)),
            writer: Mutex::new(()),
            dim,
            settings,
            grows: AtomicU64::new(0),
            consolidations: AtomicU64::new(0),
        };
        let generation = graph.generation()?;
        graph.add(&generation, "build", &rows)?;
        Ok(graph)
    }

    /// The current generation, for one search or write.
    pub fn generation(&self) -> EngineResult<Arc<Generation>> {
        self.current
            .read()
            .map(|g| Arc::clone(&g))
            .map_err(|_| engine_error("search", "a thread panicked holding the index"))
    }

    /// Runs one of DiskANN's async calls to completion on this thread.
    pub fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
        self.runtime.handle().block_on(future)
    }

    fn writer(&self) -> EngineResult<MutexGuard<'_, ()>> {
        self.writer
            .lock()
            .map_err(|_| engine_error("write", "a thread panicked while writing"))
    }

    /// Inserts or replaces points.
    pub fn put(&self, operation: &str, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        rows::check(NAME, operation, self.dim, ids.len(), vectors.len())?;
        let _writer = self.writer()?;
        let rows = last_rows(ids, vectors, self.dim);
        let generation = self.generation()?;
        let replaced: Vec<PointId> = {
            let slots = generation.slots()?;
            rows.iter()
                .map(|(id, _)| *id)
                .filter(|id| slots.slot_of.contains_key(id))
                .collect()
        };
        self.remove(&generation, operation, &replaced)?;
        let generation = self.make_room(generation, rows.len())?;
        self.add(&generation, operation, &rows)
    }

    /// Removes points; an id that is not there is no error.
    pub fn delete(&self, ids: &[PointId]) -> EngineResult<()> {
        let _writer = self.writer()?;
        let generation = self.generation()?;
        self.remove(&generation, "delete", ids)
    }

    /// Inserts `rows` into fresh slots (the writer lock held, or during the build). A slot
    /// is published (searches map it to its id) once DiskANN has linked it into the graph.
    fn add(
        &self,
        generation: &Generation,
        operation: &str,
        rows: &[(PointId, &[f32])],
    ) -> EngineResult<()> {
        let slots = generation.slots_mut()?.take(rows.len()).ok_or_else(|| {
            engine_error(operation, "no free slot although room was made: a bug in the adapter")
        })?;
        let context = DefaultContext;
        let index = &generation.index;
        slots
            .par_iter()
            .zip(rows.par_iter())
            .try_for_each(|(slot, (id, vector))| {
                self.block_on(index.insert(&FullPrecision, &context, slot, *vector))
                    .map_err(|e| engine_error(operation, format!("inserting point {id}: {e}")))
            })?;
        let mut table = generation.slots_mut()?;
        for (slot, (id, _)) in slots.iter().zip(rows) {
            table.publish(*id, *slot);
        }
        Ok(())
    }

    /// Deletes `ids` in DiskANN (in place) after unpublishing them.
    fn remove(&self, generation: &Generation, operation: &str, ids: &[PointId]) -> EngineResult<()> {
        let context = DefaultContext;
        for &id in ids {
            let Some(slot) = generation.slots_mut()?.retire(id) else {
                continue;
            };
            self.block_on(generation.index.inplace_delete(
                FullPrecision,
                &context,
                &slot,
                DELETE_REPLACE,
                DELETE_METHOD,
            ))
            .map_err(|e| engine_error(operation, format!("deleting point {id}: {e}")))?;
        }
        Ok(())
    }

    /// Makes room for `n` new points: deleted slots are consolidated and released first;
    /// when that is not enough, the index grows. Returns the generation to write to.
    fn make_room(&self, generation: Arc<Generation>, n: usize) -> EngineResult<Arc<Generation>> {
        let (fits, retired) = {
            let slots = generation.slots()?;
            let unused = generation.capacity - slots.next_unused as usize;
            (n <= unused + slots.free.len(), slots.retired.len())
        };
        if fits {
            return Ok(generation);
        }
        if retired > 0 {
            self.consolidate(&generation)?;
            let slots = generation.slots()?;
            let unused = generation.capacity - slots.next_unused as usize;
            if n <= unused + slots.free.len() {
                drop(slots);
                return Ok(generation);
            }
        }
        self.grow(&generation, n)
    }

    /// DiskANN's consolidation: every used slot drops its edges to deleted points, then the
    /// deleted slots are released for reuse.
    fn consolidate(&self, generation: &Generation) -> EngineResult<()> {
        let context = DefaultContext;
        let provider = generation.index.provider();
        let (used, retired) = {
            let slots = generation.slots()?;
            (slots.next_unused, slots.retired.clone())
        };
        let start = generation.start_slot();
        (0..used)
            .chain(std::iter::once(start))
            .collect::<Vec<u32>>()
            .par_iter()
            .try_for_each(|&slot| {
                let mut neighbors = provider.neighbors();
                self.block_on(generation.index.drop_deleted_neighbors(
                    &context,
                    &mut neighbors,
                    slot,
                    false,
                ))
                .map(|_| ())
                .map_err(|e| engine_error("consolidate", format!("slot {slot}: {e}")))
            })?;
        for &slot in &retired {
            self.block_on(provider.release(&context, slot))
                .map_err(|e| engine_error("consolidate", format!("releasing slot {slot}: {e}")))?;
        }
        let mut slots = generation.slots_mut()?;
        slots.retired.retain(|s| !retired.contains(s));
        slots.free.extend(retired);
        self.consolidations.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Builds a larger index from the live points of `old` (same start point, same
    /// settings) and makes it the current one.
    fn grow(&self, old: &Generation, n: usize) -> EngineResult<Arc<Generation>> {
        let live: Vec<(PointId, u32)> = {
            let slots = old.slots()?;
            let mut live: Vec<_> = slots.slot_of.iter().map(|(&id, &s)| (id, s)).collect();
            live.sort_unstable_by_key(|&(_, s)| s);
            live
        };
        let capacity = capacity_for(live.len() + n).max(old.capacity * 2);
        check_slots(capacity)?;
        let new = Generation::new(&self.settings, self.dim, capacity, old.start.clone())?;
        let store = &old.index.provider().base_vectors;
        // SAFETY: `get_vector_sync` needs no concurrent write to the slot it reads; writes
        // are serialised by the writer lock, which the caller holds.
        let rows: Vec<(PointId, &[f32])> = live
            .iter()
            .map(|&(id, slot)| (id, unsafe { store.get_vector_sync(slot as usize) }))
            .collect();
        self.add(&new, "grow", &rows)?;
        let new = Arc::new(new);
        *self
            .current
            .write()
            .map_err(|_| engine_error("grow", "a thread panicked holding the index"))? =
            Arc::clone(&new);
        self.grows.fetch_add(1, Ordering::Relaxed);
        Ok(new)
    }

    /// Holds the writer lock for a read of the whole index (saving it).
    pub fn quiet(&self) -> EngineResult<MutexGuard<'_, ()>> {
        self.writer()
    }
}

/// DiskANN's slots are `u32`, the start point after the last one.
fn check_slots(capacity: usize) -> EngineResult<()> {
    if capacity >= u32::MAX as usize {
        return Err(engine_error(
            "create",
            format!("{capacity} slots exceed DiskANN's u32 ids"),
        ));
    }
    Ok(())
}
