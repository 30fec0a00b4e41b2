//! How soon the stream's writes show in searches: a sample of the writes is probed, each by
//! searching with the written vector (an insert or update) or the deleted one (a delete) until
//! the point shows up or is gone.
//!
//! Only a write a search can reveal is sampled: the point must rank in the top `k` for its own
//! vector among the points live at that moment (under `dot` a vector is rarely its own nearest
//! neighbour; among duplicates it may lose the tie on id). And a sample that a later write
//! overtakes before it is seen is dropped: a write of the same point (a delete, an update, an
//! insert again), from which on the search answers for that write, or for a put, the write that
//! makes `k` other points rank ahead of it, after which no search with its vector returns it.

use std::collections::{HashMap, HashSet};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::dataset::Dataset;
use crate::distance::Distance;
use crate::engine::{EngineError, Neighbor, PointId, Query, VectorEngine};
use crate::metrics::latency::LatencySummary;
use crate::results::StreamFreshness;
use crate::runbook::{ResolvedStream, StreamOp};
use crate::vectors::Vectors;

/// Most writes sampled for freshness per step.
const FRESHNESS_SAMPLES: usize = 100;

/// A sampled write to watch: the point, the row of the vector to search with (its new vector,
/// or for a delete the one it had), and when the write was acknowledged.
pub(super) struct Probe {
    pub id: PointId,
    pub row: usize,
    pub delete: bool,
    pub acked: Instant,
}

/// What the writer tells the prober, in the order it writes.
pub(super) enum ProbeNote {
    /// A sampled write was acknowledged: watch it.
    Watch(Probe),
    /// A write that overtakes the sample of this point is about to be sent: drop the sample
    /// if it is not seen yet.
    Overtaken(PointId),
}

/// One sampled write: the row its probe searches with, and the first later op that
/// overtakes it (the point written again, or for a put the k-th point to rank ahead of it
/// for its own vector), if any.
#[derive(Clone, Copy)]
pub(super) struct Sample {
    pub row: usize,
    pub overtaken_at: Option<usize>,
}

/// The writes to sample, chosen before the stream starts.
#[derive(Default)]
pub(super) struct Samples {
    /// Op index → its sample.
    pub at: HashMap<usize, Sample>,
    /// Op index → the points whose samples that op overtakes.
    pub overtakes: HashMap<usize, Vec<PointId>>,
    /// Ops chosen but left out: a search with their vector cannot reveal them.
    pub unobservable: usize,
}

/// The writer's side: announces sampled writes and the writes that overtake them.
pub(super) struct Announcer<'a> {
    notes: Sender<ProbeNote>,
    samples: &'a Samples,
    /// Points with a sample announced and not overtaken yet.
    watched: HashSet<PointId>,
}

impl<'a> Announcer<'a> {
    pub fn new(notes: Sender<ProbeNote>, samples: &'a Samples) -> Self {
        Self {
            notes,
            samples,
            watched: HashSet::new(),
        }
    }

    /// Before the call holding ops `ops` is sent: the samples its ops overtake are dropped.
    pub fn before_call(&mut self, ops: std::ops::Range<usize>) {
        for i in ops {
            for &id in self.samples.overtakes.get(&i).into_iter().flatten() {
                self.overtake(id);
            }
        }
    }

    /// After the call holding ops `ops` is acknowledged at `acked`: its sampled writes are
    /// watched (and dropped at once if a later op of the same call overtakes them).
    pub fn after_call(&mut self, ops: std::ops::Range<usize>, stream: &[StreamOp], acked: Instant) {
        let end = ops.end;
        for i in ops {
            let Some(sample) = self.samples.at.get(&i) else {
                continue;
            };
            let id = stream[i].id;
            self.watched.insert(id);
            // The prober has stopped only if it failed; that failure is reported.
            let _ = self.notes.send(ProbeNote::Watch(Probe {
                id,
                row: sample.row,
                delete: stream[i].row.is_none(),
                acked,
            }));
            if sample.overtaken_at.is_some_and(|j| j < end) {
                self.overtake(id);
            }
        }
    }

    fn overtake(&mut self, id: PointId) {
        if self.watched.remove(&id) {
            let _ = self.notes.send(ProbeNote::Overtaken(id));
        }
    }
}

/// The vectors the stream writes, and how they are compared.
#[derive(Clone, Copy)]
pub(super) struct Space<'a> {
    pub metric: Distance,
    pub train: &'a Vectors,
}

impl<'a> Space<'a> {
    pub fn of(dataset: &'a Dataset) -> Self {
        Space {
            metric: dataset.distance,
            train: &dataset.train,
        }
    }
}

/// A write chosen as a sample, followed through the ops to decide whether a search can
/// reveal it and which later op overtakes it.
struct Chosen {
    op: usize,
    id: PointId,
    row: usize,
    delete: bool,
    /// `metric.between` of its vector with itself.
    own: f32,
    /// Live points other than itself ranking ahead of it for its own vector.
    ahead: usize,
}

/// The ops to sample with the row each probe searches with: evenly spaced among the puts and
/// among the deletes separately (half the samples each when there are both), since the
/// interleaving is periodic and one stride over all ops could land on one kind only; of
/// those, the ones a search can reveal, each with the op that overtakes it (see the
/// module's note). One pass over the live set at the start for all samples together, then
/// one over the ops.
pub(super) fn freshness_samples(stream: &ResolvedStream, space: Space<'_>, k: usize) -> Samples {
    let (mut chosen, old_rows) = choose(stream, space);
    let initial = ahead_in(space, &stream.initial, &chosen);
    for (c, ahead) in chosen.iter_mut().zip(initial) {
        c.ahead = ahead;
    }
    let mut samples = Samples::default();
    // Samples not reached yet, and puts not yet overtaken: each op moves their counts.
    let mut active: Vec<Chosen> = chosen;
    for (j, op) in stream.ops.iter().enumerate() {
        let old_row = old_rows[j];
        active.retain_mut(|c| {
            if j < c.op {
                if op.id != c.id {
                    c.ahead = (c.ahead + ahead_of(space, c, op.id, op.row))
                        .saturating_sub(ahead_of(space, c, op.id, old_row));
                }
                return true;
            }
            if j == c.op {
                if c.ahead >= k.max(1) {
                    samples.unobservable += 1;
                    return false;
                }
                let sample = Sample {
                    row: c.row,
                    overtaken_at: None,
                };
                samples.at.insert(j, sample);
                return true;
            }
            let overtaken = op.id == c.id || (!c.delete && pushed_out(space, c, op, old_row, k));
            if overtaken {
                samples.overtakes.entry(j).or_default().push(c.id);
                if let Some(s) = samples.at.get_mut(&c.op) {
                    s.overtaken_at = Some(j);
                }
            }
            !overtaken
        });
    }
    samples
}

/// The samples (ascending op), and each op's row of its point before it (`None`: not live).
fn choose(stream: &ResolvedStream, space: Space<'_>) -> (Vec<Chosen>, Vec<Option<usize>>) {
    let wanted = evenly_spaced(stream);
    let mut live: HashMap<PointId, usize> = stream.initial.iter().copied().collect();
    let mut chosen = Vec::new();
    let mut old_rows = Vec::with_capacity(stream.ops.len());
    for (i, op) in stream.ops.iter().enumerate() {
        let old_row = live.get(&op.id).copied();
        old_rows.push(old_row);
        // A put's probe searches with its new vector, a delete's with the one it had.
        if wanted.contains(&i)
            && let Some(row) = op.row.or(old_row)
        {
            let vector = space.train.row(row);
            chosen.push(Chosen {
                op: i,
                id: op.id,
                row,
                delete: op.row.is_none(),
                own: space.metric.between(vector, vector),
                ahead: 0,
            });
        }
        match op.row {
            Some(row) => live.insert(op.id, row),
            None => live.remove(&op.id),
        };
    }
    (chosen, old_rows)
}

/// For each sample, the points of `live` other than itself ranking ahead of it: the rows
/// read once, in parallel chunks, each against every sample.
fn ahead_in(space: Space<'_>, live: &[(PointId, usize)], chosen: &[Chosen]) -> Vec<usize> {
    let zero = || vec![0usize; chosen.len()];
    live.par_chunks(4096)
        .map(|chunk| {
            let mut counts = zero();
            for &(id, row) in chunk {
                for (count, c) in counts.iter_mut().zip(chosen) {
                    *count += ahead_of(space, c, id, Some(row));
                }
            }
            counts
        })
        .reduce(zero, |mut a, b| {
            a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
            a
        })
}

/// 1 when point `id` at train row `row` ranks ahead of the sample `c` for its vector (ties
/// broken by id), else 0; 0 for no row and for the sample's own point.
fn ahead_of(space: Space<'_>, c: &Chosen, id: PointId, row: Option<usize>) -> usize {
    let Some(row) = row else {
        return 0;
    };
    if id == c.id {
        return 0;
    }
    let d = space
        .metric
        .between(space.train.row(c.row), space.train.row(row));
    usize::from(d < c.own || (d == c.own && id < c.id))
}

/// Applies `op` (another point, whose row was `old_row`) to the count of points ahead of the
/// followed put; true once `k` of them are.
fn pushed_out(
    space: Space<'_>,
    c: &mut Chosen,
    op: &StreamOp,
    old_row: Option<usize>,
    k: usize,
) -> bool {
    c.ahead = (c.ahead + ahead_of(space, c, op.id, op.row))
        .saturating_sub(ahead_of(space, c, op.id, old_row));
    c.ahead >= k.max(1)
}

/// Op indices evenly spaced among the puts and among the deletes.
fn evenly_spaced(stream: &ResolvedStream) -> HashSet<usize> {
    let (puts, deletes): (Vec<usize>, Vec<usize>) =
        (0..stream.ops.len()).partition(|&i| stream.ops[i].row.is_some());
    let per_kind = if puts.is_empty() || deletes.is_empty() {
        FRESHNESS_SAMPLES
    } else {
        FRESHNESS_SAMPLES / 2
    };
    let evenly = |of: &[usize]| -> Vec<usize> {
        let step = of.len().div_ceil(per_kind).max(1);
        of.iter().step_by(step).copied().collect()
    };
    evenly(&puts).into_iter().chain(evenly(&deletes)).collect()
}

/// What the prober has counted so far.
#[derive(Default)]
struct Tally {
    samples: usize,
    overtaken: usize,
    put_delays: Vec<Duration>,
    delete_delays: Vec<Duration>,
    not_seen: usize,
}

impl Tally {
    /// Takes in one note from the writer.
    fn note(&mut self, note: ProbeNote, pending: &mut Vec<Probe>) {
        match note {
            ProbeNote::Watch(p) => {
                self.samples += 1;
                pending.push(p);
            }
            ProbeNote::Overtaken(id) => {
                let before = pending.len();
                pending.retain(|p| p.id != id);
                self.overtaken += before - pending.len();
            }
        }
    }
}

/// Polls every pending probe in turn until each is seen, overtaken, or `bound` has passed
/// since its acknowledgement; stops when the writer is done and nothing is pending.
pub(super) fn probe_writes(
    engine: &dyn VectorEngine,
    dataset: &Dataset,
    k: usize,
    notes: Receiver<ProbeNote>,
    (bound, unobservable): (Duration, usize),
) -> Result<StreamFreshness, EngineError> {
    let mut pending: Vec<Probe> = Vec::new();
    let mut tally = Tally::default();
    let mut out: Vec<Neighbor> = Vec::with_capacity(k);
    let mut rounds: Vec<Duration> = Vec::new();
    loop {
        let writer_done = loop {
            match notes.try_recv() {
                Ok(note) => tally.note(note, &mut pending),
                Err(TryRecvError::Empty) => break false,
                Err(TryRecvError::Disconnected) => break true,
            }
        };
        if pending.is_empty() {
            if writer_done {
                break;
            }
            match notes.recv_timeout(Duration::from_millis(1)) {
                Ok(note) => tally.note(note, &mut pending),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            continue;
        }
        let round = Instant::now();
        probe_round(
            engine,
            dataset,
            k,
            &mut pending,
            (bound, &mut tally),
            &mut out,
        )?;
        rounds.push(round.elapsed());
    }
    Ok(StreamFreshness {
        samples: tally.samples,
        puts_seen: tally.put_delays.len(),
        put_delay: LatencySummary::of(tally.put_delays),
        deletes_seen: tally.delete_delays.len(),
        delete_delay: LatencySummary::of(tally.delete_delays),
        not_seen: tally.not_seen,
        overtaken: tally.overtaken,
        unobservable,
        bound_s: bound.as_secs_f64(),
        probe_round_p50_ms: LatencySummary::of(rounds).p50_ms,
    })
}

/// One search for every pending probe: the seen ones and those past `bound` leave `pending`.
fn probe_round(
    engine: &dyn VectorEngine,
    dataset: &Dataset,
    k: usize,
    pending: &mut Vec<Probe>,
    (bound, tally): (Duration, &mut Tally),
    out: &mut Vec<Neighbor>,
) -> Result<(), EngineError> {
    let mut i = 0;
    while i < pending.len() {
        let p = &pending[i];
        engine.search(Query::new(dataset.train.row(p.row), k), out)?;
        let now = Instant::now();
        let present = out.iter().any(|n| n.id == p.id);
        let waited = now.saturating_duration_since(p.acked);
        if present != p.delete {
            if p.delete {
                tally.delete_delays.push(waited);
            } else {
                tally.put_delays.push(waited);
            }
            pending.swap_remove(i);
        } else if waited > bound {
            tally.not_seen += 1;
            pending.swap_remove(i);
        } else {
            i += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows in the plane: 0 = (1, 0), 1 = (2, 0), 2 = (0, 1), 3 = (1, 0) again.
    fn train() -> Vectors {
        Vectors::new(vec![1.0, 0.0, 2.0, 0.0, 0.0, 1.0, 1.0, 0.0], 2).unwrap()
    }

    fn stream(initial: &[(PointId, usize)], ops: &[(PointId, Option<usize>)]) -> ResolvedStream {
        ResolvedStream {
            initial: initial.to_vec(),
            ops: ops.iter().map(|&(id, row)| StreamOp { id, row }).collect(),
            batch_size: 1,
            rate: None,
            searchers: 1,
        }
    }

    fn samples(metric: Distance, s: &ResolvedStream, k: usize) -> Samples {
        let train = train();
        freshness_samples(
            s,
            Space {
                metric,
                train: &train,
            },
            k,
        )
    }

    /// Under dot, (1, 0) is not its own nearest beside (2, 0): no search with it can show it.
    #[test]
    fn a_write_no_search_can_reveal_is_left_out() {
        let s = stream(&[(10, 1)], &[(1, Some(0))]);
        let dot = samples(Distance::Dot, &s, 1);
        assert!(dot.at.is_empty());
        assert_eq!(dot.unobservable, 1);
        // With k = 2 it ranks second: it can be seen.
        assert_eq!(samples(Distance::Dot, &s, 2).at.len(), 1);
        // Under euclidean it is its own nearest.
        assert_eq!(samples(Distance::Euclidean, &s, 1).unobservable, 0);
        // A duplicate with a lower id wins the tie.
        let dup = stream(&[(0, 0)], &[(5, Some(3))]);
        assert_eq!(samples(Distance::Euclidean, &dup, 1).unobservable, 1);
    }

    /// A put is overtaken by the write that pushes it out of its own top k, and by the next
    /// write of the same point; a delete by the point written again.
    #[test]
    fn overtaking_writes_are_found() {
        let s = stream(
            &[],
            &[
                (1, Some(0)),
                (2, Some(1)),
                (3, Some(2)),
                (3, None),
                (3, Some(2)),
            ],
        );
        let got = samples(Distance::Dot, &s, 1);
        assert_eq!(got.unobservable, 0);
        // (2, 0) outranks (1, 0) under dot: the put of 1 is overtaken at op 1.
        assert_eq!(got.at[&0].overtaken_at, Some(1));
        assert_eq!(got.at[&1].overtaken_at, None);
        // Point 3's put is overtaken by its delete, the delete by the insert again.
        assert_eq!(got.at[&2].overtaken_at, Some(3));
        assert_eq!(got.at[&3].overtaken_at, Some(4));
        assert_eq!(got.at[&3].row, 2);
        assert_eq!(got.overtakes[&1], [1]);
        assert_eq!(got.overtakes[&3], [3]);
        assert_eq!(got.overtakes[&4], [3]);
    }

    /// The prober drops an overtaken sample it has not seen; one overtaken within its own
    /// call is announced and dropped at once.
    #[test]
    fn overtaken_samples_leave_the_prober() {
        let s = stream(&[], &[(1, Some(0)), (2, Some(1))]);
        let sampled = samples(Distance::Dot, &s, 1);
        let (tx, rx) = std::sync::mpsc::channel();
        let mut announcer = Announcer::new(tx, &sampled);
        announcer.before_call(0..2);
        announcer.after_call(0..2, &s.ops, Instant::now());
        drop(announcer);
        let mut tally = Tally::default();
        let mut pending = Vec::new();
        for note in rx {
            tally.note(note, &mut pending);
        }
        assert_eq!(tally.samples, 2);
        assert_eq!(tally.overtaken, 1);
        assert_eq!(pending.iter().map(|p| p.id).collect::<Vec<_>>(), [2]);
    }
}
