//! Exact scoring of searches that ran while writes were in flight (the runbook's `stream`
//! step).
//!
//! Every search records when it was sent and when its answer arrived; the writer records when
//! each write was issued and when it was acknowledged. A correct engine may linearise a search
//! at any instant of its interval, and each write at any instant of its own, so the scoring
//! asks what *some* such instant allows:
//!
//! - the writer is one thread, so the writes of one id never overlap in time; of an id's
//!   writes, those acknowledged before the search was sent have certainly applied, and those
//!   issued before its answer arrived may have. The id's **possible states** over the search
//!   are its states after each of those;
//! - a returned id is **correct** when one of its possible states holds a vector (it could
//!   have been live) and, for the nearest such vector, its distance is within the K-th
//!   distance of the **least favourable live set** (plus ann-benchmarks' 1e-3 tolerance);
//! - the least favourable live set holds the ids live in *every* possible state (acknowledged
//!   live at send time, not deleted by any write issued before receipt, not an in-flight
//!   insert), each at the *farther* of its possible vectors (an update in flight);
//! - a returned id whose delete was acknowledged before the search was sent, and not
//!   re-inserted since, is a **stale hit**.
//!
//! So an engine that linearises every search scores recall 1 and no stale hit, whether or not
//! it already shows the writes in flight, and an engine serving an old snapshot is caught.
//!
//! The K-th distances come from one pass of the exact kernel over every row that is ever live
//! during the step, keeping each query's nearest rows to a depth of `2K + 16`; a search walks
//! its query's rows in order, counting the ids of its least favourable set at their farther
//! vector. A query whose candidates run out before K are counted (a burst of deletes near it)
//! is recomputed deeper, until the depth covers every row.

use std::collections::HashMap;

use super::{RowSelection, exact_knn};
use crate::distance::Distance;
use crate::types::PointId;
use crate::vectors::Vectors;

/// The tolerance added to the K-th distance, as ann-benchmarks and the static recall do.
pub const DISTANCE_TOLERANCE: f32 = 1e-3;

/// What a write did to one id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOp {
    /// The id gets the vector of train row `row` (an insert or an update).
    Put {
        row: usize,
    },
    Delete,
}

/// One id's write, as the writer saw it (a batch gives each of its ids the batch's times).
/// Times are nanoseconds from one common origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteEvent {
    pub id: PointId,
    pub op: WriteOp,
    pub issued: u64,
    pub acked: u64,
}

/// One search: the query (row of the test set), its interval and what it returned.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchEvent {
    pub query: usize,
    pub sent: u64,
    pub received: u64,
    pub ids: Vec<PointId>,
}

/// How one search scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SearchScore {
    /// Distinct returned ids (within the first K) that a correct engine could have returned.
    pub correct: usize,
    /// What a perfect answer scores: K, or the size of the least favourable set when smaller.
    pub expected: usize,
    /// Returned ids deleted (acknowledged) before the search was sent.
    pub stale: usize,
}

impl SearchScore {
    pub fn recall(&self) -> f64 {
        if self.expected == 0 {
            1.0
        } else {
            self.correct.min(self.expected) as f64 / self.expected as f64
        }
    }
}

/// Everything the scoring needs.
pub struct StreamLog<'a> {
    /// The train rows (every vector a point can have).
    pub train: &'a Vectors,
    pub queries: &'a Vectors,
    pub distance: Distance,
    /// The live set when the step started: (id, train row).
    pub initial: &'a [(PointId, usize)],
    /// Every write of the step, in the order the writer issued them.
    pub writes: &'a [WriteEvent],
    pub k: usize,
}

/// The states one id passes through: its initial row, then one state per write.
struct History {
    /// `states[0]` is the state before the step's first write of the id.
    states: Vec<Option<usize>>,
    /// `(issued, acked)` of the write leading to `states[j + 1]`.
    writes: Vec<(u64, u64)>,
}

impl History {
    /// Indices of the states the id may be in at some instant of `[sent, received]`.
    fn possible(&self, sent: u64, received: u64) -> std::ops::RangeInclusive<usize> {
        let applied = self.writes.iter().filter(|(_, a)| *a < sent).count();
        let maybe = self.writes.iter().filter(|(i, _)| *i < received).count();
        applied..=maybe.max(applied)
    }
}

/// The step's writes, indexed for scoring.
pub struct StreamTruth<'a> {
    log: &'a StreamLog<'a>,
    histories: HashMap<PointId, History>,
    /// Rows that are ever some id's vector, and the ids that ever have each.
    row_ids: HashMap<usize, Vec<PointId>>,
    rows: Vec<usize>,
    /// Per query: nearest rows (ascending distance, ties by row) to some depth; computed on
    /// first use.
    candidates: HashMap<usize, Vec<(f32, usize)>>,
}

impl<'a> StreamTruth<'a> {
    pub fn new(log: &'a StreamLog<'a>) -> StreamTruth<'a> {
        let mut histories: HashMap<PointId, History> = HashMap::new();
        for &(id, row) in log.initial {
            histories.insert(
                id,
                History {
                    states: vec![Some(row)],
                    writes: Vec::new(),
                },
            );
        }
        for w in log.writes {
            let h = histories.entry(w.id).or_insert_with(|| History {
                states: vec![None],
                writes: Vec::new(),
            });
            h.states.push(match w.op {
                WriteOp::Put { row } => Some(row),
                WriteOp::Delete => None,
            });
            h.writes.push((w.issued, w.acked));
        }
        let mut row_ids: HashMap<usize, Vec<PointId>> = HashMap::new();
        for (id, h) in &histories {
            for row in h.states.iter().flatten() {
                let ids = row_ids.entry(*row).or_default();
                if !ids.contains(id) {
                    ids.push(*id);
                }
            }
        }
        let mut rows: Vec<usize> = row_ids.keys().copied().collect();
        rows.sort_unstable();
        StreamTruth {
            log,
            histories,
            row_ids,
            rows,
            candidates: HashMap::new(),
        }
    }

    /// Computes the candidate rows of `queries` in one pass of the kernel, to depth `depth`.
    pub fn prepare(&mut self, queries: &[usize]) {
        let depth = (2 * self.log.k + 16).min(self.rows.len());
        self.compute(queries, depth);
    }

    fn compute(&mut self, queries: &[usize], depth: usize) {
        if queries.is_empty() || depth == 0 {
            for &q in queries {
                self.candidates.insert(q, Vec::new());
            }
            return;
        }
        let dim = self.log.train.dim();
        let mut flat = Vec::with_capacity(queries.len() * dim);
        for &q in queries {
            flat.extend_from_slice(self.log.queries.row(q));
        }
        let ids: Vec<PointId> = self.rows.iter().map(|&r| r as PointId).collect();
        let selection = RowSelection {
            vectors: self.log.train.as_flat(),
            rows: &self.rows,
            ids: &ids,
            dim,
        };
        let truth = exact_knn(&selection, &flat, self.log.distance, depth, &|_| {});
        for (i, &q) in queries.iter().enumerate() {
            let list = truth.ids[i * depth..(i + 1) * depth]
                .iter()
                .zip(&truth.distances[i * depth..(i + 1) * depth])
                .filter(|(id, _)| **id != PointId::MAX)
                .map(|(id, d)| (*d, *id as usize))
                .collect();
            self.candidates.insert(q, list);
        }
    }

    fn distance_to(&self, query: usize, row: usize) -> f32 {
        self.log
            .distance
            .between(self.log.queries.row(query), self.log.train.row(row))
    }

    /// The K-th distance of the least favourable live set of a search, `None` when that set
    /// holds fewer than K ids; and that set's size, capped at K.
    fn kth(&mut self, query: usize, sent: u64, received: u64) -> (Option<f32>, usize) {
        let k = self.log.k;
        loop {
            if !self.candidates.contains_key(&query) {
                self.prepare(&[query]);
            }
            let list = &self.candidates[&query];
            let mut counted = 0usize;
            for &(d, row) in list {
                for id in &self.row_ids[&row] {
                    if self.counts_at(*id, row, query, sent, received) {
                        counted += 1;
                        if counted == k {
                            return (Some(d), k);
                        }
                    }
                }
            }
            if list.len() >= self.rows.len() {
                return (None, counted);
            }
            let deeper = (list.len() * 2).max(k).min(self.rows.len());
            self.compute(&[query], deeper);
        }
    }

    /// Whether `id` belongs to the least favourable set and `row` is its farther possible
    /// vector (so that it is counted once, at that distance).
    fn counts_at(&self, id: PointId, row: usize, query: usize, sent: u64, received: u64) -> bool {
        let Some(h) = self.histories.get(&id) else {
            return false;
        };
        let mut farthest: Option<(f32, usize)> = None;
        for j in h.possible(sent, received) {
            let Some(r) = h.states[j] else {
                return false;
            };
            let d = self.distance_to(query, r);
            // Ties between two vectors at the same distance: the larger row is "farther", so
            // exactly one of them counts.
            if farthest.is_none_or(|(fd, fr)| d > fd || (d == fd && r > fr)) {
                farthest = Some((d, r));
            }
        }
        farthest.is_some_and(|(_, r)| r == row)
    }

    /// Scores one search (its first K returned ids).
    pub fn score(&mut self, search: &SearchEvent) -> SearchScore {
        let (kth, expected) = self.kth(search.query, search.sent, search.received);
        let limit = kth.map_or(f32::INFINITY, |d| d + DISTANCE_TOLERANCE);
        let mut seen: Vec<PointId> = Vec::with_capacity(self.log.k);
        let mut score = SearchScore {
            expected,
            ..SearchScore::default()
        };
        for &id in search.ids.iter().take(self.log.k) {
            if seen.contains(&id) {
                continue;
            }
            seen.push(id);
            let Some(h) = self.histories.get(&id) else {
                continue;
            };
            let possible = h.possible(search.sent, search.received);
            let nearest = possible
                .clone()
                .filter_map(|j| h.states[j])
                .map(|r| self.distance_to(search.query, r))
                .min_by(f32::total_cmp);
            match nearest {
                Some(d) if d <= limit => score.correct += 1,
                Some(_) => {}
                None => {
                    // Never live in the interval: stale when a delete acknowledged before the
                    // search was sent took it away.
                    let applied = *possible.start();
                    if applied > 0 && h.states[applied].is_none() {
                        score.stale += 1;
                    }
                }
            }
        }
        score
    }
}

#[cfg(test)]
mod tests;
