//! The build phase: create the collection, bulk-load the points in batches, and wait until the
//! index is ready. Load time and index wait are measured separately. Dense runs and sparse or
//! hybrid runs share it ([`timed_build`]); only their write call differs.

use std::ops::Range;
use std::time::{Duration, Instant};

use super::{RunError, RunScope};
use crate::engine::hybrid::HybridEngine;
use crate::engine::{
    CollectionSpec, EngineResult, Footprint, IndexReport, PointId, SourcedBytes, VectorEngine,
};
use crate::metrics::latency::{LatencySummary, new_histogram, record};
use crate::resources::{Sampler, Watch};
use crate::results::BuildStep;
use crate::types::{Progress, ProgressUnit};

/// What a build needs of an engine beside its writes, whatever kind of engine it is (a dense
/// one, or a sparse or hybrid one): the same build phase measures both.
pub(crate) trait Buildable {
    fn server_pid(&self) -> Option<u32>;
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport>;
    fn footprint(&self) -> EngineResult<Footprint>;
}

impl Buildable for dyn VectorEngine + '_ {
    fn server_pid(&self) -> Option<u32> {
        VectorEngine::server_pid(self)
    }
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        VectorEngine::wait_until_ready(self)
    }
    fn footprint(&self) -> EngineResult<Footprint> {
        VectorEngine::footprint(self)
    }
}

impl Buildable for dyn HybridEngine + '_ {
    fn server_pid(&self) -> Option<u32> {
        HybridEngine::server_pid(self)
    }
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        HybridEngine::wait_until_ready(self)
    }
    fn footprint(&self) -> EngineResult<Footprint> {
        HybridEngine::footprint(self)
    }
}

/// How a phase reports and samples: the plan's settings that every kind of run has.
#[derive(Clone, Copy)]
pub(crate) struct Phase<'a> {
    pub observer: &'a dyn Progress,
    pub quiet: bool,
    pub sample_interval: Duration,
}

/// One write call of a build: how long the call took, and time spent before it (copying
/// rows) that counts neither as the call nor as load time.
pub(crate) struct TimedWrite {
    pub call: Duration,
    pub untimed: Duration,
}

/// The build phase of a created collection: `n` points written `chunk` at a time by
/// `write` (given the point range), then the index-ready wait, each timed, with the
/// resources sampled throughout and the footprint read at the end.
pub(crate) fn timed_build<E: Buildable + ?Sized>(
    engine: &mut E,
    phase: Phase<'_>,
    n: usize,
    chunk: usize,
    mut write: impl FnMut(&mut E, Range<usize>) -> Result<TimedWrite, RunError>,
) -> Result<BuildStep, RunError> {
    let sampler = Sampler::start(
        Watch::with_engine(engine.server_pid()),
        phase.sample_interval,
    );
    let bar = phase
        .observer
        .task("build", Some(n as u64), ProgressUnit::Items);
    let mut batch_hist = new_histogram();
    let mut untimed = Duration::ZERO;
    let load_start = Instant::now();
    let mut start = 0;
    while start < n {
        super::check_interrupt()?;
        let end = (start + chunk).min(n);
        let timed = write(engine, start..end)?;
        record(&mut batch_hist, timed.call);
        untimed += timed.untimed;
        bar.set(end as u64);
        start = end;
    }
    let insert = load_start.elapsed().saturating_sub(untimed);
    drop(bar);
    let (index, ready) = wait_for_index(engine, phase)?;
    let resources = sampler.stop();

    let footprint = engine.footprint().map_err(RunError::engine("footprint"))?;
    let total = insert + ready;
    Ok(BuildStep {
        points: n,
        batch_size: chunk,
        total_s: total.as_secs_f64(),
        insert_s: insert.as_secs_f64(),
        ready_wait_s: ready.as_secs_f64(),
        vectors_per_s: per_second(n, total),
        write_vectors_per_s: per_second(n, insert),
        batch_latency: LatencySummary::from_histogram(&batch_hist),
        total_bytes_per_vector: per_vector(footprint.total.as_ref(), n),
        index_bytes_per_vector: per_vector(footprint.index.as_ref(), n),
        footprint,
        index_size: None,
        bytes_per_vector: None,
        index,
        resources,
        rebuild_s: Vec::new(),
    })
}

/// Loads `dataset.train` into a freshly created collection.
/// `build_ids` are train rows (id = row) in ascending order: contiguous as a range resolves,
/// or scattered when a runbook builds on one cluster (drift).
pub fn run_build(
    engine: &mut dyn VectorEngine,
    spec: &CollectionSpec,
    scope: RunScope<'_>,
    build_ids: &[PointId],
) -> Result<BuildStep, RunError> {
    let plan = scope.plan;
    engine.create(spec).map_err(RunError::engine("create"))?;
    // Server adapters split a chunk into `upload_parallel` concurrent requests.
    let chunk = (plan.connect.batch_size * plan.connect.upload_parallel.max(1)).max(1);
    let phase = Phase {
        observer: plan.observer(),
        quiet: plan.quiet,
        sample_interval: plan.sample_interval,
    };
    let dataset = scope.dataset;
    let first = build_ids.first().map_or(0, |id| *id as usize);
    // Scattered ids cannot be passed as a slice of the shared matrix: their rows are copied
    // into a buffer before each timed call, and the copying is not counted as load time.
    let contiguous = build_ids.windows(2).all(|w| w[1] == w[0] + 1);
    let mut gathered: Vec<f32> = Vec::new();
    timed_build(engine, phase, build_ids.len(), chunk, |engine, range| {
        let ids = &build_ids[range.clone()];
        if contiguous {
            let t = Instant::now();
            engine
                .insert_shared(ids, &dataset.train, first + range.start)
                .map_err(RunError::engine("bulk insert"))?;
            return Ok(TimedWrite {
                call: t.elapsed(),
                untimed: Duration::ZERO,
            });
        }
        let g = Instant::now();
        gathered.clear();
        gathered.reserve(ids.len() * dataset.train.dim());
        for id in ids {
            gathered.extend_from_slice(dataset.train.row(*id as usize));
        }
        let untimed = g.elapsed();
        let t = Instant::now();
        engine
            .insert_batch(ids, &gathered)
            .map_err(RunError::engine("bulk insert"))?;
        Ok(TimedWrite {
            call: t.elapsed(),
            untimed,
        })
    })
}

/// The engine's index-ready wait, timed.
fn wait_for_index<E: Buildable + ?Sized>(
    engine: &mut E,
    phase: Phase<'_>,
) -> Result<(IndexReport, Duration), RunError> {
    let spinner = phase.observer.task("index build", None, ProgressUnit::Wait);
    // The engine builds its index in one call that a stop request cannot cut short: a
    // Ctrl-C meanwhile is answered at once with what it waits for.
    let busy = (!phase.quiet).then(|| crate::interrupt::busy("finishing the index build"));
    let ready_start = Instant::now();
    let index = engine
        .wait_until_ready()
        .map_err(RunError::engine("wait for index"))?;
    let ready = ready_start.elapsed();
    drop(busy);
    drop(spinner);
    Ok((index, ready))
}

/// Bytes per point of a measured size; `None` when unmeasured or when there are no points
/// (a per-vector cost of an empty collection means nothing).
pub(crate) fn per_vector(size: Option<&SourcedBytes>, points: usize) -> Option<f64> {
    size.filter(|_| points > 0)
        .map(|s| s.bytes as f64 / points as f64)
}

fn per_second(count: usize, d: Duration) -> f64 {
    let s = d.as_secs_f64();
    // No time measured: the rate is undefined, not 0.
    if s > 0.0 { count as f64 / s } else { f64::NAN }
}
