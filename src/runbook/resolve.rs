//! Resolution of a runbook: the steps simulated one by one against the train set, which checks
//! them and yields the exact ids and vector rows of every operation and the live set at every
//! search.

use crate::rng::SplitMix64;
use crate::types::PointId;
use crate::vectors::Vectors;

use super::{
    ClusterLabels, ClusterPick, IdSelection, Lifetime, Lifetimes, OpMode, Position, Runbook,
    RunbookError, StepSpec, StreamDelete, StreamInsert, StreamUpdate, clusters,
};

/// One write of a stream step: `id` gets train row `row`, or is deleted (`None`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamOp {
    pub id: PointId,
    pub row: Option<usize>,
}

/// A resolved stream step.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedStream {
    /// The live set when the step starts: (id, train row), ascending id.
    pub initial: Vec<(PointId, usize)>,
    /// The writes in the order the writer issues them.
    pub ops: Vec<StreamOp>,
    pub batch_size: usize,
    /// Points per second; `None`: as fast as possible.
    pub rate: Option<f64>,
    pub searchers: usize,
}

/// A resolved operation: the ids it touches and, for inserts and updates, the train rows whose
/// vectors they get (same length as `ids`).
#[derive(Debug, Clone, PartialEq)]
pub enum Resolved {
    Build {
        ids: Vec<PointId>,
    },
    Insert {
        ids: Vec<PointId>,
        mode: OpMode,
        batch_size: Option<usize>,
    },
    Update {
        ids: Vec<PointId>,
        rows: Vec<usize>,
        mode: OpMode,
        batch_size: Option<usize>,
    },
    Delete {
        ids: Vec<PointId>,
        mode: OpMode,
        batch_size: Option<usize>,
    },
    /// A search over the live set: `live` lists (id, train row) in ascending id order.
    Search {
        live: Vec<(PointId, usize)>,
    },
    Stream(ResolvedStream),
}

impl Resolved {
    pub fn kind(&self) -> &'static str {
        match self {
            Resolved::Build { .. } => "build",
            Resolved::Insert { .. } => "insert",
            Resolved::Update { .. } => "update",
            Resolved::Delete { .. } => "delete",
            Resolved::Search { .. } => "search",
            Resolved::Stream(_) => "stream",
        }
    }
}

impl Runbook {
    /// Resolves the runbook on a dataset's train rows, clustering them first when the
    /// runbook names clusters.
    pub fn resolve_on(&self, train: &Vectors) -> Result<Vec<Resolved>, RunbookError> {
        let mut labels = ClusterLabels::new();
        for (of, seed) in self.clusterings() {
            if of == 0 || of > train.len().max(1) {
                return Err(RunbookError::Invalid(format!(
                    "`cluster.of = {of}`: the train set has {} rows",
                    train.len()
                )));
            }
            labels.insert((of, seed), clusters::labels(train, of, seed));
        }
        self.resolve_with(train.len(), &labels)
    }

    /// Simulates the runbook over a train set of `n` rows (a runbook without `cluster`
    /// selectors; see [`Runbook::resolve_on`]).
    pub fn resolve(&self, n: usize) -> Result<Vec<Resolved>, RunbookError> {
        self.resolve_with(n, &ClusterLabels::new())
    }

    /// Simulates the runbook over a train set of `n` rows whose clusters are `labels`.
    pub fn resolve_with(
        &self,
        n: usize,
        labels: &ClusterLabels,
    ) -> Result<Vec<Resolved>, RunbookError> {
        if self.steps.is_empty() {
            return Err(RunbookError::Invalid("it has no steps".into()));
        }
        let mut sim = Simulation {
            n,
            labels,
            row_of: vec![None; n],
        };
        let mut out = Vec::with_capacity(self.steps.len());
        for (i, step) in self.steps.iter().enumerate() {
            let at = StepAt {
                step: i + 1,
                kind: step.kind(),
            };
            let resolved = match step {
                StepSpec::Build {
                    start,
                    end,
                    cluster,
                } => {
                    if i != 0 {
                        return Err(at.err("build must be the first step".into()));
                    }
                    Resolved::Build {
                        ids: sim.build(at, start, end, cluster)?,
                    }
                }
                _ if i == 0 => return Err(at.err("the first step must be a build".into())),
                StepSpec::Insert {
                    start,
                    end,
                    cluster,
                    mode,
                    batch_size,
                } => Resolved::Insert {
                    ids: sim.insert(at, start, end, cluster)?,
                    mode: *mode,
                    batch_size: *batch_size,
                },
                StepSpec::Update {
                    ids,
                    from,
                    mode,
                    batch_size,
                } => {
                    let (ids, rows) = sim.update(at, ids, from)?;
                    Resolved::Update {
                        ids,
                        rows,
                        mode: *mode,
                        batch_size: *batch_size,
                    }
                }
                StepSpec::Delete {
                    ids,
                    mode,
                    batch_size,
                } => Resolved::Delete {
                    ids: sim.delete(at, ids)?,
                    mode: *mode,
                    batch_size: *batch_size,
                },
                StepSpec::Stream {
                    insert,
                    update,
                    delete,
                    rate,
                    batch_size,
                    searchers,
                } => {
                    let writes = StreamWrites {
                        insert: insert.as_ref(),
                        update: update.as_ref(),
                        delete: delete.as_ref(),
                    };
                    let calls = StreamCalls {
                        rate: rate.as_ref().map(|r| r.0),
                        batch_size: *batch_size,
                        searchers: *searchers,
                    };
                    Resolved::Stream(sim.stream(at, writes, calls)?)
                }
                StepSpec::Search => Resolved::Search { live: sim.live() },
            };
            out.push(resolved);
        }
        Ok(out)
    }
}

/// The step being resolved, to name it in errors.
#[derive(Clone, Copy)]
struct StepAt {
    /// 1-based, as the user counts steps.
    step: usize,
    kind: &'static str,
}

impl StepAt {
    fn err(self, message: String) -> RunbookError {
        RunbookError::Step {
            step: self.step,
            kind: self.kind,
            message,
        }
    }
}

/// The writes a stream step asks for, as written.
struct StreamWrites<'a> {
    insert: Option<&'a StreamInsert>,
    update: Option<&'a StreamUpdate>,
    delete: Option<&'a StreamDelete>,
}

/// How a stream step's writer and searchers call the engine, as written.
struct StreamCalls {
    /// Points per second; `None`: as fast as possible.
    rate: Option<f64>,
    batch_size: Option<usize>,
    searchers: Option<usize>,
}

/// The state of a runbook simulated step by step over a train set of `n` rows.
struct Simulation<'a> {
    n: usize,
    labels: &'a ClusterLabels,
    /// row_of[id] = train row of the id's current vector, None when not live.
    row_of: Vec<Option<usize>>,
}

impl Simulation<'_> {
    /// The live set: (id, train row), ascending id.
    fn live(&self) -> Vec<(PointId, usize)> {
        self.row_of
            .iter()
            .enumerate()
            .filter_map(|(id, r)| r.map(|r| (id as PointId, r)))
            .collect()
    }

    fn range(
        &self,
        at: StepAt,
        start: &Position,
        end: &Position,
    ) -> Result<(usize, usize), RunbookError> {
        let n = self.n;
        let (s, e) = (start.resolve(n)?, end.resolve(n)?);
        if s >= e {
            return Err(at.err(format!("empty range {s}..{e}")));
        }
        if e > n {
            return Err(at.err(format!(
                "range {s}..{e} goes beyond the dataset ({n} train vectors)"
            )));
        }
        Ok((s, e))
    }

    /// The rows of `s..e` in the cluster, when one is named.
    fn in_cluster(
        &self,
        at: StepAt,
        (s, e): (usize, usize),
        cluster: &Option<ClusterPick>,
    ) -> Result<Vec<usize>, RunbookError> {
        let Some(c) = cluster else {
            return Ok((s..e).collect());
        };
        let of = self.labels.get(&(c.of, c.seed)).ok_or_else(|| {
            at.err(format!(
                "names cluster {} of {}: resolve it on the dataset (its rows are \
                 clustered first)",
                c.index, c.of
            ))
        })?;
        if c.index >= c.of {
            return Err(at.err(format!(
                "cluster index {} is not below `of` = {}",
                c.index, c.of
            )));
        }
        let rows: Vec<usize> = (s..e).filter(|&r| of[r] as usize == c.index).collect();
        if rows.is_empty() {
            return Err(at.err(format!(
                "cluster {} of {} has no rows in {s}..{e}",
                c.index, c.of
            )));
        }
        Ok(rows)
    }

    /// The ids `sel` picks among those live in `row_of` (the simulation's, or a narrower set).
    fn live_ids(
        &self,
        at: StepAt,
        row_of: &[Option<usize>],
        sel: &IdSelection,
    ) -> Result<Vec<PointId>, RunbookError> {
        match sel {
            IdSelection::Range { start, end } => {
                let (s, e) = self.range(at, start, end)?;
                if let Some(id) = (s..e).find(|id| row_of[*id].is_none()) {
                    return Err(at.err(format!("id {id} is not live at this step")));
                }
                Ok((s as PointId..e as PointId).collect())
            }
            IdSelection::Fraction { fraction, seed } => {
                if !(*fraction > 0.0 && *fraction <= 1.0) {
                    return Err(at.err(format!("fraction {fraction} must be in (0, 1]")));
                }
                let mut live: Vec<PointId> = row_of
                    .iter()
                    .enumerate()
                    .filter(|(_, r)| r.is_some())
                    .map(|(id, _)| id as PointId)
                    .collect();
                let take = ((live.len() as f64) * fraction).round() as usize;
                if take == 0 {
                    return Err(at.err("selects no ids".into()));
                }
                // Seeded partial Fisher-Yates, then ascending order.
                let mut rng = SplitMix64::new(*seed);
                for j in 0..take {
                    let pick = j + rng.below((live.len() - j) as u64) as usize;
                    live.swap(j, pick);
                }
                live.truncate(take);
                live.sort_unstable();
                Ok(live)
            }
        }
    }

    /// The first step: the rows of `start..end` (in the cluster) go live under their own ids.
    fn build(
        &mut self,
        at: StepAt,
        start: &Position,
        end: &Position,
        cluster: &Option<ClusterPick>,
    ) -> Result<Vec<PointId>, RunbookError> {
        let range = self.range(at, start, end)?;
        let rows = self.in_cluster(at, range, cluster)?;
        for &id in &rows {
            self.row_of[id] = Some(id);
        }
        Ok(rows.into_iter().map(|id| id as PointId).collect())
    }

    /// Like a build, but none of the ids may be live yet.
    fn insert(
        &mut self,
        at: StepAt,
        start: &Position,
        end: &Position,
        cluster: &Option<ClusterPick>,
    ) -> Result<Vec<PointId>, RunbookError> {
        let (s, e) = self.range(at, start, end)?;
        let rows = self.in_cluster(at, (s, e), cluster)?;
        if let Some(id) = rows.iter().find(|id| self.row_of[**id].is_some()) {
            return Err(at.err(format!(
                "range {s}..{e} overlaps live ids (id {id} is already inserted)"
            )));
        }
        for &id in &rows {
            self.row_of[id] = Some(id);
        }
        Ok(rows.into_iter().map(|id| id as PointId).collect())
    }

    /// The updated ids and the train rows they now carry.
    fn update(
        &mut self,
        at: StepAt,
        ids: &IdSelection,
        from: &Position,
    ) -> Result<(Vec<PointId>, Vec<usize>), RunbookError> {
        let n = self.n;
        let ids = self.live_ids(at, &self.row_of, ids)?;
        let from = from.resolve(n)?;
        if from + ids.len() > n {
            return Err(at.err(format!(
                "new vectors from row {from} need {} rows, beyond the dataset ({n})",
                ids.len()
            )));
        }
        let rows: Vec<usize> = (from..from + ids.len()).collect();
        for (id, row) in ids.iter().zip(&rows) {
            self.row_of[*id as usize] = Some(*row);
        }
        Ok((ids, rows))
    }

    fn delete(&mut self, at: StepAt, ids: &IdSelection) -> Result<Vec<PointId>, RunbookError> {
        let ids = self.live_ids(at, &self.row_of, ids)?;
        for id in &ids {
            self.row_of[*id as usize] = None;
        }
        Ok(ids)
    }

    fn stream(
        &mut self,
        at: StepAt,
        writes: StreamWrites<'_>,
        calls: StreamCalls,
    ) -> Result<ResolvedStream, RunbookError> {
        let initial = self.live();
        let lists = self.stream_lists(at, &writes)?;
        if lists.iter().all(Vec::is_empty) {
            return Err(at.err("has no writes: give `insert`, `update` or `delete`".into()));
        }
        if calls.batch_size.is_some_and(|b| b == 0) {
            return Err(at.err("batch_size must be at least 1".into()));
        }
        if calls.searchers.is_some_and(|s| s == 0) {
            return Err(at.err("searchers must be at least 1".into()));
        }
        let mut ops = interleave(lists);
        if let Some(lifetimes) = writes.insert.and_then(|i| i.expire_after.as_ref()) {
            ops = with_expiry(ops, &initial, lifetimes, calls.rate).map_err(|m| at.err(m))?;
        }
        for op in &ops {
            self.row_of[op.id as usize] = op.row;
        }
        Ok(ResolvedStream {
            initial,
            ops,
            batch_size: calls.batch_size.unwrap_or(1),
            rate: calls.rate,
            searchers: calls.searchers.unwrap_or(2),
        })
    }

    /// A stream step's updates, deletes and inserts, each list in id order (not yet
    /// interleaved).
    fn stream_lists(
        &self,
        at: StepAt,
        writes: &StreamWrites<'_>,
    ) -> Result<Vec<Vec<StreamOp>>, RunbookError> {
        let n = self.n;
        let mut lists: Vec<Vec<StreamOp>> = Vec::new();
        let mut touched = std::collections::HashSet::new();
        if let Some(u) = writes.update {
            let ids = self.live_ids(at, &self.row_of, &u.ids)?;
            let from = u.from.resolve(n)?;
            if from + ids.len() > n {
                return Err(at.err(format!(
                    "updates from row {from} need {} rows, beyond the dataset ({n})",
                    ids.len()
                )));
            }
            touched.extend(ids.iter().copied());
            lists.push(
                ids.iter()
                    .zip(from..)
                    .map(|(id, row)| StreamOp {
                        id: *id,
                        row: Some(row),
                    })
                    .collect(),
            );
        }
        if let Some(d) = writes.delete {
            // Chosen among the live ids that this step does not update.
            let mut candidates = self.row_of.clone();
            for id in &touched {
                candidates[*id as usize] = None;
            }
            let ids = self
                .live_ids(at, &candidates, &d.ids)
                .map_err(|e| match e {
                    RunbookError::Step { message, .. } => at.err(format!(
                        "deletes: {message} (a stream step's deletes are live ids it \
                         does not also update)"
                    )),
                    other => other,
                })?;
            lists.push(
                ids.iter()
                    .map(|id| StreamOp { id: *id, row: None })
                    .collect(),
            );
        }
        if let Some(ins) = writes.insert {
            let (s, e) = self.range(at, &ins.start, &ins.end)?;
            let rows = self.in_cluster(at, (s, e), &ins.cluster)?;
            if let Some(id) = rows.iter().find(|id| self.row_of[**id].is_some()) {
                return Err(at.err(format!(
                    "inserts {s}..{e} overlap live ids (id {id} is already inserted)"
                )));
            }
            lists.push(
                rows.into_iter()
                    .map(|id| StreamOp {
                        id: id as PointId,
                        row: Some(id),
                    })
                    .collect(),
            );
        }
        Ok(lists)
    }
}

/// Adds the deletes of expiring inserts to a stream's writes. Writes are the clock: at a fixed
/// `rate` the writer issues write `i` at `i / rate` seconds, so a lifetime of `t` seconds is
/// `t × rate` writes. Each position takes the oldest due expiry if there is one, else the next
/// planned write; expiries still pending when the planned writes run out are not issued (the
/// points outlive the step).
fn with_expiry(
    planned: Vec<StreamOp>,
    initial: &[(PointId, usize)],
    lifetimes: &Lifetimes,
    rate: Option<f64>,
) -> Result<Vec<StreamOp>, String> {
    let lifetimes = lifetimes.list();
    if lifetimes.is_empty() {
        return Err("`expire_after` is an empty list".into());
    }
    let writes: Vec<Option<u64>> = lifetimes
        .iter()
        .map(|l| match l {
            Lifetime::Writes(n) => Ok(Some(*n)),
            Lifetime::Never(()) => Ok(None),
            Lifetime::Seconds(t) => match rate {
                Some(r) => Ok(Some(((t * r).round() as u64).max(1))),
                None => Err(format!(
                    "an expiry of {t}s needs the step's `rate` (writes are its clock); without \
                     one give the lifetime as a number of writes"
                )),
            },
        })
        .collect::<Result<_, _>>()?;
    let is_new = |op: &StreamOp| {
        op.row.is_some() && initial.binary_search_by_key(&op.id, |(id, _)| *id).is_err()
    };
    // (due position, insert order, id): the heap yields the earliest due first.
    let mut due: std::collections::BinaryHeap<std::cmp::Reverse<(u64, u64, PointId)>> =
        std::collections::BinaryHeap::new();
    let mut out = Vec::with_capacity(planned.len() * 2);
    let mut inserts = 0u64;
    let mut planned = planned.into_iter().peekable();
    while planned.peek().is_some() {
        let position = out.len() as u64;
        let op = match due.peek() {
            Some(std::cmp::Reverse((at, _, _))) if *at <= position => {
                let Some(std::cmp::Reverse((_, _, id))) = due.pop() else {
                    break;
                };
                StreamOp { id, row: None }
            }
            _ => match planned.next() {
                Some(op) => op,
                None => break,
            },
        };
        if is_new(&op) {
            if let Some(w) = writes[(inserts % writes.len() as u64) as usize] {
                due.push(std::cmp::Reverse((position + w, inserts, op.id)));
            }
            inserts += 1;
        }
        out.push(op);
    }
    Ok(out)
}

/// Merges the lists so that each is spread evenly over the whole stream (list `l`'s `i`-th op
/// at position `(i + 0.5) / len`), ties in list order.
fn interleave(lists: Vec<Vec<StreamOp>>) -> Vec<StreamOp> {
    let mut keyed: Vec<(f64, usize, StreamOp)> = lists
        .iter()
        .enumerate()
        .flat_map(|(l, ops)| {
            let len = ops.len() as f64;
            ops.iter()
                .enumerate()
                .map(move |(i, op)| ((i as f64 + 0.5) / len, l, *op))
        })
        .collect();
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    keyed.into_iter().map(|(_, _, op)| op).collect()
}
