//! The build phase: create the collection, bulk-load the train vectors in batches, and wait
//! until the index is ready. Load time and index wait are measured separately.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::{BenchPlan, RunError, RunScope};
use crate::dataset::Dataset;
use crate::engine::{CollectionSpec, IndexReport, PointId, SourcedBytes, VectorEngine};
use crate::metrics::latency::{LatencySummary, new_histogram, record};
use crate::resources::{Sampler, Watch};
use crate::results::BuildStep;
use crate::types::{ProgressTask, ProgressUnit};

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
    let n = build_ids.len();
    // Server adapters split a chunk into `upload_parallel` concurrent requests.
    let chunk = (plan.connect.batch_size * plan.connect.upload_parallel.max(1)).max(1);
    let sampler = Sampler::start(
        Watch::with_engine(engine.server_pid()),
        plan.sample_interval,
    );
    let bar = plan
        .observer()
        .task("build", Some(n as u64), ProgressUnit::Items);
    let (insert, batch_hist) = load_vectors(engine, scope.dataset, build_ids, chunk, &*bar)?;
    drop(bar);
    let (index, ready) = wait_for_index(engine, plan)?;
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

/// The timed insert calls, `chunk` points each; returns the time spent in them and their
/// latencies.
fn load_vectors(
    engine: &mut dyn VectorEngine,
    dataset: &Dataset,
    build_ids: &[PointId],
    chunk: usize,
    bar: &dyn ProgressTask,
) -> Result<(Duration, Histogram<u64>), RunError> {
    let first = build_ids.first().map_or(0, |id| *id as usize);
    let n = build_ids.len();
    let mut batch_hist = new_histogram();

    // Scattered ids cannot be passed as a slice of the shared matrix: their rows are copied
    // into a buffer before each timed call, and the copying is not counted as load time.
    let contiguous = build_ids.windows(2).all(|w| w[1] == w[0] + 1);
    let dim = dataset.train.dim();
    let mut gathered: Vec<f32> = Vec::new();
    let mut gathering = Duration::ZERO;
    let load_start = Instant::now();
    let mut start = 0;
    while start < n {
        super::check_interrupt()?;
        let end = (start + chunk).min(n);
        let ids = &build_ids[start..end];
        if contiguous {
            let t = Instant::now();
            engine
                .insert_shared(ids, &dataset.train, first + start)
                .map_err(RunError::engine("bulk insert"))?;
            record(&mut batch_hist, t.elapsed());
        } else {
            let g = Instant::now();
            gathered.clear();
            gathered.reserve(ids.len() * dim);
            for id in ids {
                gathered.extend_from_slice(dataset.train.row(*id as usize));
            }
            gathering += g.elapsed();
            let t = Instant::now();
            engine
                .insert_batch(ids, &gathered)
                .map_err(RunError::engine("bulk insert"))?;
            record(&mut batch_hist, t.elapsed());
        }
        bar.set(end as u64);
        start = end;
    }
    let insert = load_start.elapsed().saturating_sub(gathering);
    Ok((insert, batch_hist))
}

/// The engine's index-ready wait, timed.
fn wait_for_index(
    engine: &mut dyn VectorEngine,
    plan: &BenchPlan,
) -> Result<(IndexReport, Duration), RunError> {
    let spinner = plan
        .observer()
        .task("index build", None, ProgressUnit::Wait);
    // The engine builds its index in one call that a stop request cannot cut short: a
    // Ctrl-C meanwhile is answered at once with what it waits for.
    let busy = (!plan.quiet).then(|| crate::interrupt::busy("finishing the index build"));
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
