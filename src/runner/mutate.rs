//! Insert, update and delete steps: per-call latency, throughput, read-after-write
//! visibility, then the engine's index-ready wait.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::search::LiveState;
use super::{RunError, RunScope};
use crate::dataset::Dataset;
use crate::engine::{Neighbor, PointId, Query, VectorEngine};
use crate::metrics::latency::{LatencySummary, new_histogram, record};
use crate::resources::{Sampler, Watch};
use crate::results::{MutationStep, Visibility};
use crate::runbook::OpMode;
use crate::types::ProgressUnit;

/// What a mutation writes.
pub enum Write<'a> {
    /// Give `ids[i]` the vector of train row `rows[i]` (insert or update).
    Upsert {
        ids: &'a [PointId],
        rows: &'a [usize],
    },
    Delete {
        ids: &'a [PointId],
    },
}

impl Write<'_> {
    fn ids(&self) -> &[PointId] {
        match self {
            Write::Upsert { ids, .. } | Write::Delete { ids } => ids,
        }
    }
}

/// Sampled operations polled for read-after-write visibility, per step.
const VISIBILITY_SAMPLES: usize = 8;

/// What a mutation step writes, how, and the live set around it.
pub struct MutationTarget<'a> {
    /// `insert`, `update` or `delete`.
    pub kind: &'static str,
    /// 1-based position in the runbook.
    pub runbook_step: usize,
    pub write: Write<'a>,
    pub mode: OpMode,
    pub batch_size: Option<usize>,
    pub live_before: &'a LiveState,
    /// The live count after the step, for bytes per live vector.
    pub live_after: usize,
}

/// What the write loop measured: call latencies, time in write calls, and the visibility
/// samples with what their probes saw.
struct Written {
    hist: Histogram<u64>,
    busy: Duration,
    vis_times: Vec<Option<Duration>>,
    unobservable: usize,
    stale_hits: usize,
}

/// Runs one mutation step.
pub fn run_mutation(
    engine: &mut dyn VectorEngine,
    scope: RunScope<'_>,
    target: MutationTarget<'_>,
) -> Result<MutationStep, RunError> {
    let plan = scope.plan;
    let n = target.write.ids().len();
    let batch = match target.mode {
        OpMode::Single => 1,
        OpMode::Batch => target.batch_size.unwrap_or(plan.connect.batch_size).max(1),
    };
    let sampler = Sampler::start(
        Watch::with_engine(engine.server_pid()),
        plan.sample_interval,
    );
    let written = write_all(engine, scope, &target, batch)?;

    let ready_start = Instant::now();
    let index = engine
        .wait_until_ready()
        .map_err(RunError::engine("wait for index"))?;
    let ready = ready_start.elapsed();
    let resources = sampler.stop();
    let footprint = engine.footprint().map_err(RunError::engine("footprint"))?;

    let busy_s = written.busy.as_secs_f64();
    // Same definition as the build's: points per second until the written data is indexed
    // (write calls plus the index-ready wait). The write calls alone are `write_vectors_per_s`.
    let total_s = busy_s + ready.as_secs_f64();
    Ok(MutationStep {
        kind: target.kind.to_string(),
        runbook_step: target.runbook_step,
        points: n,
        mode: match target.mode {
            OpMode::Single => "single".into(),
            OpMode::Batch => "batch".into(),
        },
        batch_size: batch,
        latency: LatencySummary::from_histogram(&written.hist),
        total_s,
        vectors_per_s: if total_s > 0.0 {
            n as f64 / total_s
        } else {
            f64::NAN
        },
        write_s: busy_s,
        write_vectors_per_s: if busy_s > 0.0 {
            n as f64 / busy_s
        } else {
            f64::NAN
        },
        stale_hits: written.stale_hits,
        visibility: visibility(&written, plan.visibility_timeout),
        ready_wait_s: ready.as_secs_f64(),
        index,
        total_bytes_per_live_vector: super::build::per_vector(
            footprint.total.as_ref(),
            target.live_after,
        ),
        footprint,
        index_size: None,
        bytes_per_live_vector: None,
        live_points: target.live_after,
        resources,
    })
}

/// The visibility figures of the samples.
fn visibility(written: &Written, bound: Duration) -> Visibility {
    let seen: Vec<Duration> = written.vis_times.iter().flatten().copied().collect();
    Visibility {
        samples: written.vis_times.len(),
        visible: seen.len(),
        mean_ms: if seen.is_empty() {
            0.0
        } else {
            seen.iter().map(|d| d.as_secs_f64() * 1000.0).sum::<f64>() / seen.len() as f64
        },
        max_ms: seen
            .iter()
            .map(|d| d.as_secs_f64() * 1000.0)
            .fold(0.0, f64::max),
        bound_s: bound.as_secs_f64(),
        unobservable: written.unobservable,
    }
}

/// The timed write calls, `batch` ids each, with a read-after-write visibility sample polled
/// after some of them.
fn write_all(
    engine: &mut dyn VectorEngine,
    scope: RunScope<'_>,
    target: &MutationTarget<'_>,
    batch: usize,
) -> Result<Written, RunError> {
    let (plan, dataset) = (scope.plan, scope.dataset);
    let (write, kind) = (&target.write, target.kind);
    let ids = write.ids();
    let n = ids.len();
    let dim = dataset.train.dim();
    let sample_every = (n.div_ceil(batch) / VISIBILITY_SAMPLES).max(1);
    let mut written = Written {
        hist: new_histogram(),
        busy: Duration::ZERO,
        vis_times: Vec::new(),
        unobservable: 0,
        stale_hits: 0,
    };
    let mut buf: Vec<f32> = Vec::with_capacity(batch * dim);
    let bar = plan
        .observer()
        .task(kind, Some(n as u64), ProgressUnit::Items);
    // Ids written by this step: a probe may see them before or after the write lands. Any other
    // id that a probe returns and that is not live was deleted earlier: a stale hit.
    let this_step: HashMap<PointId, usize> =
        ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let mut sampling = Sampling {
        due: false,
        attempts: 0,
        probe: Vec::with_capacity(plan.k),
        this_step: &this_step,
    };

    for (call, start) in (0..n).step_by(batch).enumerate() {
        super::check_interrupt()?;
        let end = (start + batch).min(n);
        let chunk = &ids[start..end];
        // Gather the vectors before the clock starts: only the engine call is timed.
        if let Write::Upsert { rows, .. } = write {
            buf.clear();
            for r in &rows[start..end] {
                buf.extend_from_slice(dataset.train.row(*r));
            }
        }
        let t = Instant::now();
        match write {
            Write::Upsert { .. } => engine.upsert_batch(chunk, &buf),
            Write::Delete { .. } => engine.delete_batch(chunk),
        }
        .map_err(RunError::engine(match kind {
            "insert" => "insert",
            "update" => "update",
            _ => "delete",
        }))?;
        let took = t.elapsed();
        record(&mut written.hist, took);
        written.busy += took;
        bar.set(end as u64);

        if call % sample_every == 0 {
            sampling.due = true;
        }
        if sampling.due
            && written.vis_times.len() < VISIBILITY_SAMPLES
            && sampling.attempts < MAX_PROBE_ATTEMPTS
        {
            let vector = match write {
                Write::Upsert { .. } => &buf[..dim],
                Write::Delete { .. } => deleted_vector(dataset, target, chunk[0])?,
            };
            sampling.sample(engine, scope, target, (chunk[0], vector, end), &mut written)?;
        }
    }
    drop(bar);
    Ok(written)
}

/// A deleted point is looked for with the vector it had when it was deleted (after an
/// update, not its original row): the one a stale index would still hold and return.
fn deleted_vector<'d>(
    dataset: &'d Dataset,
    target: &MutationTarget<'_>,
    id: PointId,
) -> Result<&'d [f32], RunError> {
    let row = target
        .live_before
        .row_of
        .get(id as usize)
        .copied()
        .flatten()
        .ok_or_else(|| {
            RunError::Setup(format!(
                "runbook step {}: id {id} is deleted but was not live",
                target.runbook_step
            ))
        })?;
    Ok(dataset.train.row(row))
}

/// The state of the visibility sampling across a step's write calls.
struct Sampling<'a> {
    /// A sample is due; it waits for the next write whose effect a probe can observe.
    due: bool,
    attempts: usize,
    /// The probe searches' answer buffer.
    probe: Vec<Neighbor>,
    /// Ids written by this step, with their position in it.
    this_step: &'a HashMap<PointId, usize>,
}

impl Sampling<'_> {
    /// Samples the write of `id` (searched with `vector`; `written` ids of the step written
    /// so far) if a probe can observe it.
    fn sample(
        &mut self,
        engine: &dyn VectorEngine,
        scope: RunScope<'_>,
        target: &MutationTarget<'_>,
        (id, vector, written_ids): (PointId, &[f32], usize),
        written: &mut Written,
    ) -> Result<(), RunError> {
        let plan = scope.plan;
        let live_before = target.live_before;
        let want_present = matches!(target.write, Write::Upsert { .. });
        // A probe can only see a point that ranks in the top k for its own vector (under
        // `dot` a vector is rarely its own nearest neighbour; among many duplicates it may
        // lose the tie on id). Probing any other point would report a delete as done, or
        // an insert as never visible, whatever the engine did.
        self.attempts += 1;
        let others = Others {
            live_before,
            this_step: self.this_step,
            write: &target.write,
            written: written_ids,
            skip: id,
        };
        if !observable(scope.dataset, vector, id, &others, plan.k) {
            written.unobservable += 1;
            return Ok(());
        }
        self.due = false;
        let this_step = self.this_step;
        let poll = Poll {
            id,
            want_present,
            k: plan.k,
            bound: plan.visibility_timeout,
            is_stale: &|found| !live_before.contains(found) && !this_step.contains_key(&found),
        };
        let seen = poll_visible(
            engine,
            vector,
            &poll,
            &mut self.probe,
            &mut written.stale_hits,
        )?;
        written.vis_times.push(seen);
        Ok(())
    }
}

/// Writes tried as visibility samples per step, observable or not: bounds the cost of finding
/// observable ones (each check is one pass over the live set).
const MAX_PROBE_ATTEMPTS: usize = 64;

/// The points live while a probe runs, other than the probed one, as a correct engine holds
/// them: the live set before the step, with this step's writes up to `written` applied.
struct Others<'a> {
    live_before: &'a LiveState,
    this_step: &'a HashMap<PointId, usize>,
    write: &'a Write<'a>,
    written: usize,
    skip: PointId,
}

impl Others<'_> {
    /// Calls `f(id, row)` for every such point.
    fn for_each(&self, mut f: impl FnMut(PointId, usize) -> bool) {
        let row_now = |id: PointId, before: Option<usize>| -> Option<usize> {
            match (self.this_step.get(&id), self.write) {
                (Some(&i), Write::Upsert { rows, .. }) if i < self.written => Some(rows[i]),
                (Some(&i), Write::Delete { .. }) if i < self.written => None,
                _ => before,
            }
        };
        for (id, before) in self.live_before.row_of.iter().enumerate() {
            let id = id as PointId;
            if id == self.skip || before.is_none() {
                continue;
            }
            if let Some(row) = row_now(id, *before)
                && !f(id, row)
            {
                return;
            }
        }
        // Points this step inserted (not live before it).
        if let Write::Upsert { ids, rows } = self.write {
            for (i, id) in ids.iter().enumerate().take(self.written) {
                if *id != self.skip && !self.live_before.contains(*id) && !f(*id, rows[i]) {
                    return;
                }
            }
        }
    }
}

/// True when `id` at `vector` ranks within the top `k` for the query `vector` among `others`
/// (ties broken by id), so that a search with `vector` shows whether the engine holds it.
fn observable(
    dataset: &Dataset,
    vector: &[f32],
    id: PointId,
    others: &Others<'_>,
    k: usize,
) -> bool {
    let metric = dataset.distance;
    let own = metric.between(vector, vector);
    let mut ahead = 0usize;
    others.for_each(|other, row| {
        let d = metric.between(vector, dataset.train.row(row));
        if d < own || (d == own && other < id) {
            ahead += 1;
        }
        ahead < k.max(1)
    });
    ahead < k.max(1)
}

/// What a visibility poll looks for, and for how long.
struct Poll<'a> {
    id: PointId,
    /// Whether the write makes `id` present (insert, update) or absent (delete).
    want_present: bool,
    k: usize,
    bound: Duration,
    /// Returned ids that count as stale hits.
    is_stale: &'a dyn Fn(PointId) -> bool,
}

/// Searches with `vector` until `id` is (or, for deletes, is no longer) among the results;
/// returns how long that took, or `None` if it did not happen within the bound. Every id
/// returned by any probe for which `is_stale` holds is counted into `stale_hits`.
fn poll_visible(
    engine: &dyn VectorEngine,
    vector: &[f32],
    poll: &Poll<'_>,
    out: &mut Vec<Neighbor>,
    stale_hits: &mut usize,
) -> Result<Option<Duration>, RunError> {
    let start = Instant::now();
    loop {
        engine
            .search(Query::new(vector, poll.k.max(1)), out)
            .map_err(RunError::engine("read-after-write search"))?;
        *stale_hits += out.iter().filter(|nb| (poll.is_stale)(nb.id)).count();
        let present = out.iter().any(|nb| nb.id == poll.id);
        if present == poll.want_present {
            return Ok(Some(start.elapsed()));
        }
        if start.elapsed() > poll.bound {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
