//! Stub engines: test doubles of a `VectorEngine`, never registered as engines.
//!
//! One configurable [`Stub`] serves every test and the harness benchmark (which includes this
//! file with `#[path]`), so the trait's boilerplate is written once. A stub either wraps a
//! real engine and passes every call through, or stands alone: then writes are accepted and
//! dropped, and a search answers `k` fixed ids after an optional sleep. On top of either, a
//! fault can be injected: deletes silently dropped, or every search failing after the build.

#![allow(
    dead_code,
    reason = "compiled into the test binary and the harness bench, each using a part"
)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use ragdbeval::engine::{
    CollectionSpec, EngineError, EngineResult, Footprint, IndexReport, Neighbor, PointId, Query,
    VectorEngine,
};
use ragdbeval::params::ParamMap;

/// How long a standalone stub takes per search.
#[derive(Debug, Clone, Copy)]
pub enum Timing {
    /// At once, without touching any shared state: measures the harness alone.
    Immediate,
    /// `service` per call, except call number `stall_at` (from 0), which takes `stall`.
    /// Calls are counted in [`Stub::calls`].
    Sleeps {
        service: Duration,
        stall_at: u64,
        stall: Duration,
    },
}

/// A configurable test engine; see the module documentation.
pub struct Stub {
    name: &'static str,
    /// The real engine every call goes to, if any.
    inner: Option<Box<dyn VectorEngine>>,
    /// Standalone searches only.
    timing: Timing,
    /// Standalone searches so far (counted with [`Timing::Sleeps`] only).
    pub calls: AtomicU64,
    /// Deletes are acknowledged and dropped: what a broken adapter does.
    ignores_deletes: bool,
    /// Every search after `wait_until_ready` fails, as on a crashed server.
    dies_after_build: bool,
    /// Filtered searches are answered unfiltered: what qdrant's vector-db-benchmark does on
    /// pgvector, and what an adapter that forgets the filter would do.
    drops_filters: bool,
    built: AtomicBool,
}

impl Stub {
    fn new(name: &'static str, inner: Option<Box<dyn VectorEngine>>, timing: Timing) -> Stub {
        Stub {
            name,
            inner,
            timing,
            calls: AtomicU64::new(0),
            ignores_deletes: false,
            dies_after_build: false,
            drops_filters: false,
            built: AtomicBool::new(false),
        }
    }

    /// Answers `k` fixed neighbours at once, doing no work.
    pub fn noop() -> Stub {
        Stub::new("noop", None, Timing::Immediate)
    }

    /// Answers every search in `service`, except call number `stall_at`, which takes `stall`.
    pub fn stalling(service: Duration, stall_at: u64, stall: Duration) -> Stub {
        let timing = Timing::Sleeps {
            service,
            stall_at,
            stall,
        };
        Stub::new("stalling-stub", None, timing)
    }

    /// Answers every search in `service`, without a stall.
    pub fn steady(service: Duration) -> Stub {
        Stub::stalling(service, u64::MAX, Duration::ZERO)
    }

    /// Passes every call to `inner`, reporting itself as `name`.
    pub fn wrapping(name: &'static str, inner: Box<dyn VectorEngine>) -> Stub {
        Stub::new(name, Some(inner), Timing::Immediate)
    }

    /// Drops deletes silently.
    pub fn ignoring_deletes(mut self) -> Stub {
        self.ignores_deletes = true;
        self
    }

    /// Answers filtered searches without the filter.
    pub fn dropping_filters(mut self) -> Stub {
        self.drops_filters = true;
        self
    }

    /// Fails every search once the build is done.
    pub fn dying_after_build(mut self) -> Stub {
        self.dies_after_build = true;
        self
    }
}

impl VectorEngine for Stub {
    fn name(&self) -> &str {
        self.name
    }
    fn version(&self) -> String {
        self.inner
            .as_ref()
            .map_or_else(|| "test".into(), |e| e.version())
    }
    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        self.inner.as_mut().map_or(Ok(()), |e| e.create(spec))
    }
    fn insert_batch(&mut self, ids: &[PointId], v: &[f32]) -> EngineResult<()> {
        self.inner
            .as_mut()
            .map_or(Ok(()), |e| e.insert_batch(ids, v))
    }
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        if self.dies_after_build {
            self.built.store(true, Ordering::Relaxed);
        }
        self.inner
            .as_mut()
            .map_or(Ok(IndexReport::default()), |e| e.wait_until_ready())
    }
    fn upsert_batch(&mut self, ids: &[PointId], v: &[f32]) -> EngineResult<()> {
        self.inner
            .as_mut()
            .map_or(Ok(()), |e| e.upsert_batch(ids, v))
    }
    fn delete_batch(&mut self, ids: &[PointId]) -> EngineResult<()> {
        match &mut self.inner {
            Some(e) if !self.ignores_deletes => e.delete_batch(ids),
            _ => Ok(()),
        }
    }
    fn set_search_params(&mut self, p: &ParamMap) -> EngineResult<()> {
        self.inner
            .as_mut()
            .map_or(Ok(()), |e| e.set_search_params(p))
    }
    // Not inlined into the harness benchmark's loop, as a real engine's call would not be.
    #[inline(never)]
    fn search(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        if self.built.load(Ordering::Relaxed) {
            return Err(EngineError::Unreachable {
                engine: self.name.into(),
                target: "127.0.0.1:1".into(),
                message: "connection refused".into(),
            });
        }
        if let Some(e) = &self.inner {
            // An engine that "drops" filters searches unfiltered: what the filter checks catch.
            let filter = query.filter.filter(|_| !self.drops_filters);
            return e.search(query.filtered(filter), out);
        }
        if let Timing::Sleeps {
            service,
            stall_at,
            stall,
        } = self.timing
        {
            let n = self.calls.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(if n == stall_at { stall } else { service });
        }
        out.clear();
        out.extend((0..query.k as u64).map(|id| Neighbor { id, score: 0.0 }));
        Ok(())
    }
    fn check_filter(
        &self,
        attributes: &ragdbeval::filter::Attributes,
        predicate: &ragdbeval::filter::Predicate,
    ) -> EngineResult<()> {
        match &self.inner {
            Some(e) => e.check_filter(attributes, predicate),
            None => Ok(()),
        }
    }
    fn footprint(&self) -> EngineResult<Footprint> {
        self.inner.as_ref().map_or_else(
            || Ok(Footprint::unmeasured("test engine")),
            |e| e.footprint(),
        )
    }
}
