//! One usearch index and the locking that lets a writer and searchers use it at once.
//!
//! usearch's `add`, `remove` and `search` are safe to call from several threads at once (each
//! call takes one of the thread slots reserved with the capacity), but `reserve` reallocates the
//! node table and must run alone. So searches and writes hold a read lock on the index, and only
//! growing the capacity takes the write lock. Writers are serialised among themselves by a
//! mutex, so that the capacity checked before a batch still holds while it is added.

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard};

use rayon::prelude::*;
use usearch::Index;

use super::NAME;
use super::settings::{BuildSettings, SearchSettings};
use crate::adapters::support::rows;
use crate::engine::{EngineError, EngineResult, Neighbor, PointId, Query};
use crate::filter::CompiledPredicate;

/// Thread slots usearch reserves with the capacity: each concurrent add or search takes one,
/// and a call that finds none free fails. Many more than any client concurrency run here.
pub const THREAD_SLOTS: usize = 256;

/// The smallest capacity reserved: a few small writes need not grow the table one by one.
const MIN_CAPACITY: usize = 1_024;

pub struct Collection {
    index: RwLock<Index>,
    writer: Mutex<()>,
    pub dim: usize,
    pub settings: BuildSettings,
}

/// A usearch error as the engine's error for `operation`.
fn engine_error(operation: &str, e: impl std::fmt::Display) -> EngineError {
    EngineError::op(NAME, operation, e)
}

impl Collection {
    /// A new, empty index with room for `expected` points.
    pub fn new(
        dim: usize,
        settings: BuildSettings,
        search: SearchSettings,
        expected: usize,
    ) -> EngineResult<Collection> {
        let index = Index::new(&settings.options(dim, search.expansion_search))
            .map_err(|e| engine_error("create", e))?;
        index
            .reserve_capacity_and_threads(expected.max(MIN_CAPACITY), THREAD_SLOTS)
            .map_err(|e| engine_error("create", format!("reserving {expected} points: {e}")))?;
        Ok(Collection {
            index: RwLock::new(index),
            writer: Mutex::new(()),
            dim,
            settings,
        })
    }

    /// The index for adds, removes and searches (shared with other threads).
    pub fn read(&self) -> EngineResult<RwLockReadGuard<'_, Index>> {
        self.index
            .read()
            .map_err(|_| engine_error("search", "a thread panicked holding the index lock"))
    }

    fn writer(&self) -> EngineResult<MutexGuard<'_, ()>> {
        self.writer
            .lock()
            .map_err(|_| engine_error("write", "a thread panicked while writing"))
    }

    /// Grows the capacity, doubling it, until `extra` more points fit.
    fn make_room(&self, extra: usize) -> EngineResult<()> {
        let (size, capacity) = {
            let index = self.read()?;
            (index.size(), index.capacity())
        };
        if size + extra <= capacity {
            return Ok(());
        }
        let wanted = (capacity * 2).max(size + extra).max(MIN_CAPACITY);
        let index = self
            .index
            .write()
            .map_err(|_| engine_error("reserve", "a thread panicked holding the index lock"))?;
        index
            .reserve_capacity_and_threads(wanted, THREAD_SLOTS)
            .map_err(|e| engine_error("reserve", format!("growing to {wanted} points: {e}")))
    }

    /// Inserts or replaces points. usearch has no in-place update: a replaced point is removed
    /// and added again, as an application does. Rows are added from rayon's threads, as
    /// usearch's own bindings add a batch from several threads.
    pub fn put(&self, operation: &str, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        rows::check(NAME, operation, self.dim, ids.len(), vectors.len())?;
        let _writer = self.writer()?;
        self.make_room(ids.len())?;
        let index = self.read()?;
        let put_one = |id: PointId, vector: &[f32]| -> EngineResult<()> {
            if index.contains(id) {
                index
                    .remove(id)
                    .map_err(|e| engine_error(operation, format!("removing {id}: {e}")))?;
            }
            index
                .add(id, vector)
                .map_err(|e| engine_error(operation, format!("adding {id}: {e}")))
        };
        let rows = ids.iter().copied().zip(vectors.chunks_exact(self.dim));
        let mut seen = HashSet::with_capacity(ids.len());
        if ids.iter().all(|id| seen.insert(*id)) {
            rows.collect::<Vec<_>>()
                .into_par_iter()
                .try_for_each(|(id, v)| put_one(id, v))
        } else {
            // The same id twice in one batch: the later row wins, so order matters.
            for (id, v) in rows {
                put_one(id, v)?;
            }
            Ok(())
        }
    }

    /// Removes points; an id that is not there is no error.
    pub fn delete(&self, ids: &[PointId]) -> EngineResult<()> {
        let _writer = self.writer()?;
        let index = self.read()?;
        for &id in ids {
            index
                .remove(id)
                .map_err(|e| engine_error("delete", format!("removing {id}: {e}")))?;
        }
        Ok(())
    }

    /// Top-`k` for one query: the graph, usearch's brute force (`exact`), or the graph with
    /// `filter` as usearch's predicate on keys.
    pub fn search(
        &self,
        query: Query<'_>,
        search: SearchSettings,
        filter: Option<&CompiledPredicate<'_>>,
        out: &mut Vec<Neighbor>,
    ) -> EngineResult<()> {
        if !query.start(NAME, self.dim, out)? {
            return Ok(());
        }
        let Query { vector: query, k, .. } = query;
        let index = self.read()?;
        let matches = match (filter, search.exact) {
            (None, false) => index.search(query, k),
            (None, true) => index.exact_search(query, k),
            (Some(f), false) => index.filtered_search(query, k, |key| f.passes(key)),
            (Some(_), true) => {
                return Err(engine_error(
                    "filtered search",
                    "usearch's exact search takes no filter: use the graph (exact=false)",
                ));
            }
        }
        .map_err(|e| engine_error("search", e))?;
        out.extend(
            matches
                .keys
                .iter()
                .zip(&matches.distances)
                .map(|(&id, &score)| Neighbor { id, score }),
        );
        Ok(())
    }
}
