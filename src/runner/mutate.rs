//! Insert, update and delete steps: per-call latency, throughput, read-after-write
//! visibility, then the engine's index-ready wait.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::search::LiveState;
use super::{BenchPlan, RunError};
use crate::dataset::Dataset;
use crate::engine::{Neighbor, PointId, VectorEngine};
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

/// Runs one mutation step.
#[allow(clippy::too_many_arguments)]
pub fn run_mutation(
    engine: &mut dyn VectorEngine,
    dataset: &Dataset,
    plan: &BenchPlan,
    kind: &str,
    runbook_step: usize,
    write: Write<'_>,
    mode: OpMode,
    batch_size: Option<usize>,
    live_before: &LiveState,
    live_after: usize,
) -> Result<MutationStep, RunError> {
    let ids = write.ids();
    let n = ids.len();
    let batch = match mode {
        OpMode::Single => 1,
        OpMode::Batch => batch_size.unwrap_or(plan.connect.batch_size).max(1),
    };
    let dim = dataset.train.dim();
    let sample_every = (n.div_ceil(batch) / VISIBILITY_SAMPLES).max(1);
    let mut hist = new_histogram();
    let mut busy = Duration::ZERO;
    let mut vis_times: Vec<Option<Duration>> = Vec::new();
    let mut buf: Vec<f32> = Vec::with_capacity(batch * dim);
    let mut probe: Vec<Neighbor> = Vec::with_capacity(plan.k);
    let sampler = Sampler::start(
        Watch::with_engine(engine.server_pid()),
        plan.sample_interval,
    );
    let bar = plan
        .observer()
        .task(kind, Some(n as u64), ProgressUnit::Items);
    // Ids written by this step: a probe may see them before or after the write lands. Any other
    // id that a probe returns and that is not live was deleted earlier: a stale hit.
    let this_step: HashMap<PointId, usize> =
        ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let mut stale_hits = 0usize;
    // A sample is due; it waits for the next write whose effect a probe can observe.
    let mut sample_due = false;
    let mut attempts = 0usize;
    let mut unobservable = 0usize;

    for (call, start) in (0..n).step_by(batch).enumerate() {
        super::check_interrupt()?;
        let end = (start + batch).min(n);
        let chunk = &ids[start..end];
        // Gather the vectors before the clock starts: only the engine call is timed.
        if let Write::Upsert { rows, .. } = &write {
            buf.clear();
            for r in &rows[start..end] {
                buf.extend_from_slice(dataset.train.row(*r));
            }
        }
        let t = Instant::now();
        match &write {
            Write::Upsert { .. } => engine.upsert_batch(chunk, &buf),
            Write::Delete { .. } => engine.delete_batch(chunk),
        }
        .map_err(RunError::engine(match kind {
            "insert" => "insert",
            "update" => "update",
            _ => "delete",
        }))?;
        let took = t.elapsed();
        record(&mut hist, took);
        busy += took;
        bar.set(end as u64);

        if call % sample_every == 0 {
            sample_due = true;
        }
        if sample_due && vis_times.len() < VISIBILITY_SAMPLES && attempts < MAX_PROBE_ATTEMPTS {
            let id = chunk[0];
            let vector = match &write {
                Write::Upsert { .. } => &buf[..dim],
                // A deleted point is looked for with the vector it had when it was deleted
                // (after an update, not its original row): the one a stale index would still
                // hold and return.
                Write::Delete { .. } => {
                    let row = live_before
                        .row_of
                        .get(id as usize)
                        .copied()
                        .flatten()
                        .ok_or_else(|| {
                            RunError::Setup(format!(
                                "runbook step {runbook_step}: id {id} is deleted but was not live"
                            ))
                        })?;
                    dataset.train.row(row)
                }
            };
            let want_present = matches!(write, Write::Upsert { .. });
            // A probe can only see a point that ranks in the top k for its own vector (under
            // `dot` a vector is rarely its own nearest neighbour; among many duplicates it may
            // lose the tie on id). Probing any other point would report a delete as done, or
            // an insert as never visible, whatever the engine did.
            attempts += 1;
            let others = Others {
                live_before,
                this_step: &this_step,
                write: &write,
                written: end,
                skip: id,
            };
            if !observable(dataset, vector, id, &others, plan.k) {
                unobservable += 1;
                continue;
            }
            sample_due = false;
            vis_times.push(poll_visible(
                engine,
                vector,
                id,
                want_present,
                plan.k,
                plan.visibility_timeout,
                &mut probe,
                &|found| !live_before.contains(found) && !this_step.contains_key(&found),
                &mut stale_hits,
            )?);
        }
    }
    drop(bar);

    let ready_start = Instant::now();
    let index = engine
        .wait_until_ready()
        .map_err(RunError::engine("wait for index"))?;
    let ready = ready_start.elapsed();
    let resources = sampler.stop();
    let footprint = engine.footprint().map_err(RunError::engine("footprint"))?;

    let seen: Vec<Duration> = vis_times.iter().flatten().copied().collect();
    let visibility = Visibility {
        samples: vis_times.len(),
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
        bound_s: plan.visibility_timeout.as_secs_f64(),
        unobservable,
    };
    let busy_s = busy.as_secs_f64();
    // Same definition as the build's: points per second until the written data is indexed
    // (write calls plus the index-ready wait). The write calls alone are `write_vectors_per_s`.
    let total_s = busy_s + ready.as_secs_f64();
    Ok(MutationStep {
        kind: kind.to_string(),
        runbook_step,
        points: n,
        mode: match mode {
            OpMode::Single => "single".into(),
            OpMode::Batch => "batch".into(),
        },
        batch_size: batch,
        latency: LatencySummary::from_histogram(&hist),
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
        stale_hits,
        visibility,
        ready_wait_s: ready.as_secs_f64(),
        index,
        total_bytes_per_live_vector: super::build::per_vector(footprint.total.as_ref(), live_after),
        footprint,
        index_size: None,
        bytes_per_live_vector: None,
        live_points: live_after,
        resources,
    })
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

/// Searches with `vector` until `id` is (or, for deletes, is no longer) among the results;
/// returns how long that took, or `None` if it did not happen within the bound. Every id
/// returned by any probe for which `is_stale` holds is counted into `stale_hits`.
#[allow(clippy::too_many_arguments)]
fn poll_visible(
    engine: &dyn VectorEngine,
    vector: &[f32],
    id: PointId,
    want_present: bool,
    k: usize,
    bound: Duration,
    out: &mut Vec<Neighbor>,
    is_stale: &dyn Fn(PointId) -> bool,
    stale_hits: &mut usize,
) -> Result<Option<Duration>, RunError> {
    let start = Instant::now();
    loop {
        engine
            .search(vector, k.max(1), out)
            .map_err(RunError::engine("read-after-write search"))?;
        *stale_hits += out.iter().filter(|nb| is_stale(nb.id)).count();
        let present = out.iter().any(|nb| nb.id == id);
        if present == want_present {
            return Ok(Some(start.elapsed()));
        }
        if start.elapsed() > bound {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
