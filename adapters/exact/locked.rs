//! The `exact` engine behind a reader-writer lock, so that a writer thread and searcher threads
//! can use it at once (the runbook's `stream` step) and it stays the reference there.
//!
//! Every search holds the read lock for its whole scan and every write the write lock, so each
//! operation takes effect at one instant inside its call: searches see every write
//! acknowledged before they started and none that starts after they return (linearisable).
//! The phases that own the engine (`&mut self`) reach the state without locking.

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::{ExactEngine, NAME};
use crate::engine::{Batch, Query, CollectionSpec, ConcurrentWrites, EngineError, EngineResult, Footprint, IndexReport, Neighbor, PointId, VectorEngine};
use crate::filter::{Attributes, Predicate};
use crate::params::ParamMap;
use crate::types::ElementType;
use crate::vectors::Vectors;

#[derive(Default)]
pub struct LockedExact {
    state: RwLock<ExactEngine>,
}

impl LockedExact {
    fn read(&self) -> EngineResult<RwLockReadGuard<'_, ExactEngine>> {
        self.state
            .read()
            .map_err(|_| EngineError::op(NAME, "search", "a writer panicked holding the lock"))
    }

    fn write(&self) -> EngineResult<RwLockWriteGuard<'_, ExactEngine>> {
        self.state
            .write()
            .map_err(|_| EngineError::op(NAME, "write", "a thread panicked holding the lock"))
    }

    fn owned(&mut self) -> EngineResult<&mut ExactEngine> {
        self.state
            .get_mut()
            .map_err(|_| EngineError::op(NAME, "write", "a thread panicked holding the lock"))
    }
}

impl ConcurrentWrites for LockedExact {
    fn upsert(&self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.write()?.upsert_batch(ids, vectors)
    }

    fn delete(&self, ids: &[PointId]) -> EngineResult<()> {
        self.write()?.delete_batch(ids)
    }
}

impl VectorEngine for LockedExact {
    fn name(&self) -> &str {
        NAME
    }

    fn version(&self) -> String {
        format!("ragdbeval {}", env!("CARGO_PKG_VERSION"))
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        self.owned()?.create(spec)
    }

    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.owned()?.insert_batch(ids, vectors)
    }

    fn insert_shared(
        &mut self,
        ids: &[PointId],
        rows: &Arc<Vectors>,
        start: usize,
    ) -> EngineResult<()> {
        self.owned()?.insert_shared(ids, rows, start)
    }

    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        self.owned()?.wait_until_ready()
    }

    fn upsert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.owned()?.upsert_batch(ids, vectors)
    }

    fn delete_batch(&mut self, ids: &[PointId]) -> EngineResult<()> {
        self.owned()?.delete_batch(ids)
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        self.owned()?.set_search_params(params)
    }

    fn check_build_params(&self, spec: &CollectionSpec) -> EngineResult<()> {
        self.read()?.check_build_params(spec)
    }

    fn search(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        self.read()?.search(query, out)
    }

    fn check_filter(&self, attributes: &Attributes, predicate: &Predicate) -> EngineResult<()> {
        self.read()?.check_filter(attributes, predicate)
    }

    fn batch_search(&self, batch: Batch<'_>) -> EngineResult<Vec<Vec<Neighbor>>> {
        self.read()?.batch_search(batch)
    }

    fn footprint(&self) -> EngineResult<Footprint> {
        self.read()?.footprint()
    }

    fn answers_are_exact(&self) -> bool {
        true
    }

    fn stored_element_type(&self) -> ElementType {
        self.read()
            .map_or(ElementType::Float32, |s| s.stored_element_type())
    }

    fn concurrent_writes(&self) -> Option<&dyn ConcurrentWrites> {
        Some(self)
    }

    fn describe(&self) -> serde_json::Map<String, serde_json::Value> {
        self.read().map(|s| s.describe()).unwrap_or_default()
    }

    fn close(&mut self) -> EngineResult<()> {
        self.owned()?.close()
    }
}
