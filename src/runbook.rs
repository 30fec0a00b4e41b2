//! Runbooks: the sequence of build, insert, update, delete and search steps of a run, in the
//! spirit of big-ann-benchmarks' streaming runbooks, for every engine.
//!
//! A runbook is written against the dataset's train rows: point `i` is train row `i` when it
//! is first inserted; an update gives existing ids the vectors of other train rows. Before
//! anything runs, the runbook is *resolved*: simulated step by step against the dataset size,
//! which rejects overlapping inserts, updates or deletes of ids that are not live, and ranges
//! beyond the dataset, and yields the exact ids and vector rows of every operation plus the
//! live set at every search, from which the ground truth is computed.
//!
//! ```toml
//! name = "my-runbook"
//! [[steps]]
//! kind = "build"
//! end = "90%"
//! [[steps]]
//! kind = "search"
//! [[steps]]
//! kind = "insert"
//! start = "90%"
//! end = "100%"
//! mode = "single"          # one timed call per point (default: batch)
//! [[steps]]
//! kind = "update"
//! ids = { start = 0, end = "5%" }
//! from = "50%"             # new vectors: train rows from here on
//! [[steps]]
//! kind = "delete"
//! ids = { fraction = 0.05, seed = 7 }
//! ```

use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::rng::SplitMix64;
use crate::types::PointId;

/// A position in the train set: an absolute row or a percentage of the train size.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Position {
    Row(u64),
    Percent(String),
}

/// Written by hand rather than derived as untagged, so the error names the field and the
/// value (`end = -5`) instead of "data did not match any variant of untagged enum Position".
/// (The TOML position still points at `[[steps]]`: steps are an internally tagged enum, which
/// buffers its fields.)
impl<'de> Deserialize<'de> for Position {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Position, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Position;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a row number (0 or more) or a percentage like \"90%\"")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Position, E> {
                Ok(Position::Row(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Position, E> {
                u64::try_from(v).map(Position::Row).map_err(|_| {
                    E::custom(format!(
                        "`start`/`end` = {v} is not a position: use a row number (0 or more) \
                         or a percentage like \"90%\""
                    ))
                })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Position, E> {
                Ok(Position::Percent(v.to_string()))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

impl Position {
    fn resolve(&self, n: usize) -> Result<usize, RunbookError> {
        match self {
            Position::Row(r) => Ok(*r as usize),
            Position::Percent(text) => {
                let p: f64 = text
                    .trim()
                    .strip_suffix('%')
                    .and_then(|v| v.trim().parse().ok())
                    .filter(|p: &f64| (0.0..=100.0).contains(p))
                    .ok_or_else(|| {
                        RunbookError::Invalid(format!(
                            "`{text}` is neither a row number nor a percentage like \"90%\""
                        ))
                    })?;
                Ok(((n as f64) * p / 100.0).round() as usize)
            }
        }
    }
}

/// How a mutation step sends its points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OpMode {
    /// One timed call per point: per-operation latency.
    Single,
    /// Batches of `batch_size`: throughput.
    #[default]
    Batch,
}

/// Which ids an update or delete touches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    untagged,
    deny_unknown_fields,
    expecting = "a step's `ids`: either `start`/`end` positions or `fraction` and `seed`"
)]
pub enum IdSelection {
    /// Ids `start..end` (all must be live).
    Range {
        #[serde(default = "zero")]
        start: Position,
        end: Position,
    },
    /// A seeded random share of the ids live at that step.
    Fraction { fraction: f64, seed: u64 },
}

fn zero() -> Position {
    Position::Row(0)
}

/// One step as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum StepSpec {
    Build {
        #[serde(default = "zero")]
        start: Position,
        end: Position,
    },
    Insert {
        start: Position,
        end: Position,
        #[serde(default)]
        mode: OpMode,
        #[serde(default)]
        batch_size: Option<usize>,
    },
    Update {
        ids: IdSelection,
        /// First train row of the new vectors (one row per updated id, in id order).
        from: Position,
        #[serde(default)]
        mode: OpMode,
        #[serde(default)]
        batch_size: Option<usize>,
    },
    Delete {
        ids: IdSelection,
        #[serde(default)]
        mode: OpMode,
        #[serde(default)]
        batch_size: Option<usize>,
    },
    Search,
    /// Writes and searches at the same time: a writer applies the inserts, updates and
    /// deletes (interleaved evenly, in calls of `batch_size` points, at `rate` points per
    /// second or as fast as the engine takes them) while `searchers` threads search in a
    /// closed loop until the writer is done.
    Stream {
        #[serde(default)]
        insert: Option<StreamInsert>,
        #[serde(default)]
        update: Option<StreamUpdate>,
        #[serde(default)]
        delete: Option<StreamDelete>,
        /// Points per second (`"2000/s"` or a number); absent: as fast as possible.
        #[serde(default)]
        rate: Option<Rate>,
        /// Points per write call (default 1).
        #[serde(default)]
        batch_size: Option<usize>,
        /// Closed-loop search threads (default 2).
        #[serde(default)]
        searchers: Option<usize>,
    },
}

/// The inserts of a stream step: ids (= train rows) `start..end`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamInsert {
    pub start: Position,
    pub end: Position,
}

/// The updates of a stream step: `ids` get train rows from `from` on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamUpdate {
    pub ids: IdSelection,
    pub from: Position,
}

/// The deletes of a stream step (chosen among the ids live when it starts and not updated in it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamDelete {
    pub ids: IdSelection,
}

/// A write rate: `"2000/s"` or `2000` (points per second).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Rate(pub f64);

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Rate, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        let value = match Raw::deserialize(deserializer)? {
            Raw::Number(n) => Some(n),
            Raw::Text(t) => t
                .trim()
                .strip_suffix("/s")
                .and_then(|n| n.trim().parse::<f64>().ok()),
        };
        value
            .filter(|v| v.is_finite() && *v > 0.0)
            .map(Rate)
            .ok_or_else(|| {
                serde::de::Error::custom(
                    "`rate` must be a positive number of points per second, like \"2000/s\"",
                )
            })
    }
}

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

/// A runbook as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Runbook {
    #[serde(default)]
    pub name: String,
    pub steps: Vec<StepSpec>,
}

/// What is wrong with a runbook.
#[derive(Debug, thiserror::Error)]
pub enum RunbookError {
    #[error("cannot read runbook {path}: {message}")]
    Read { path: String, message: String },
    #[error("runbook step {step} ({kind}): {message}")]
    Step {
        step: usize,
        kind: &'static str,
        message: String,
    },
    #[error("runbook: {0}")]
    Invalid(String),
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

impl StepSpec {
    fn kind(&self) -> &'static str {
        match self {
            StepSpec::Build { .. } => "build",
            StepSpec::Insert { .. } => "insert",
            StepSpec::Update { .. } => "update",
            StepSpec::Delete { .. } => "delete",
            StepSpec::Search => "search",
            StepSpec::Stream { .. } => "stream",
        }
    }
}

impl Runbook {
    /// The plain benchmark: build on everything, then search.
    pub fn build_and_search() -> Runbook {
        Runbook {
            name: "build-search".into(),
            steps: vec![
                StepSpec::Build {
                    start: Position::Row(0),
                    end: Position::Percent("100%".into()),
                },
                StepSpec::Search,
            ],
        }
    }

    /// The default mutation runbook: build on 90 %, search, insert the other 10 % in batches
    /// (throughput), search, update 5 % one point at a time (per-operation latency; new
    /// vectors from other rows), search, delete a random 5 % one at a time, search.
    pub fn default_mutations() -> Runbook {
        let pct = |p: &str| Position::Percent(p.into());
        Runbook {
            name: "default-mutations".into(),
            steps: vec![
                StepSpec::Build {
                    start: Position::Row(0),
                    end: pct("90%"),
                },
                StepSpec::Search,
                StepSpec::Insert {
                    start: pct("90%"),
                    end: pct("100%"),
                    mode: OpMode::Batch,
                    batch_size: None,
                },
                StepSpec::Search,
                StepSpec::Update {
                    ids: IdSelection::Range {
                        start: Position::Row(0),
                        end: pct("5%"),
                    },
                    from: pct("50%"),
                    mode: OpMode::Single,
                    batch_size: None,
                },
                StepSpec::Search,
                StepSpec::Delete {
                    ids: IdSelection::Fraction {
                        fraction: 0.05,
                        seed: 7,
                    },
                    mode: OpMode::Single,
                    batch_size: None,
                },
                StepSpec::Search,
            ],
        }
    }

    pub fn parse_toml(text: &str) -> Result<Runbook, RunbookError> {
        toml::from_str(text).map_err(|e| RunbookError::Invalid(e.to_string()))
    }

    /// Reads a runbook file: TOML, or a big-ann-benchmarks streaming runbook (`.yaml`/`.yml`,
    /// `FILE.yaml#ENTRY` to pick one of its datasets' entries; see [`bigann`]).
    pub fn load(path: &Path) -> Result<Runbook, RunbookError> {
        let spec = path.to_string_lossy();
        let (file, entry) = match spec.rsplit_once('#') {
            Some((file, entry)) if !Path::new(&*spec).exists() => (Path::new(file), Some(entry)),
            _ => (path, None),
        };
        let is_yaml = file
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"));
        if is_yaml {
            let text = std::fs::read_to_string(file).map_err(|e| RunbookError::Read {
                path: file.display().to_string(),
                message: e.to_string(),
            })?;
            return bigann::parse(&text, entry).map_err(|e| RunbookError::Read {
                path: file.display().to_string(),
                message: e.to_string(),
            });
        }
        let text = std::fs::read_to_string(path).map_err(|e| RunbookError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        let mut rb = Runbook::parse_toml(&text).map_err(|e| RunbookError::Read {
            path: path.display().to_string(),
            message: e.to_string(),
        })?;
        if rb.name.is_empty() {
            rb.name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
        }
        Ok(rb)
    }

    /// A stable hash of the steps (not the name), to key cached ground truth.
    pub fn hash(&self) -> String {
        let text = serde_json::to_string(&self.steps).unwrap_or_default();
        let digest = Sha256::digest(text.as_bytes());
        digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
    }

    /// True when the runbook has any insert, update, delete or stream step.
    pub fn mutates(&self) -> bool {
        self.steps.iter().any(|s| {
            matches!(
                s,
                StepSpec::Insert { .. }
                    | StepSpec::Update { .. }
                    | StepSpec::Delete { .. }
                    | StepSpec::Stream { .. }
            )
        })
    }

    /// Simulates the runbook over a train set of `n` rows.
    pub fn resolve(&self, n: usize) -> Result<Vec<Resolved>, RunbookError> {
        if self.steps.is_empty() {
            return Err(RunbookError::Invalid("it has no steps".into()));
        }
        // row_of[id] = train row of the id's current vector, None when not live.
        let mut row_of: Vec<Option<usize>> = vec![None; n];
        let mut out = Vec::with_capacity(self.steps.len());
        for (i, step) in self.steps.iter().enumerate() {
            let kind = step.kind();
            let err = |message: String| RunbookError::Step {
                step: i + 1,
                kind,
                message,
            };
            let range =
                |start: &Position, end: &Position| -> Result<(usize, usize), RunbookError> {
                    let (s, e) = (start.resolve(n)?, end.resolve(n)?);
                    if s >= e {
                        return Err(err(format!("empty range {s}..{e}")));
                    }
                    if e > n {
                        return Err(err(format!(
                            "range {s}..{e} goes beyond the dataset ({n} train vectors)"
                        )));
                    }
                    Ok((s, e))
                };
            let live_ids = |row_of: &[Option<usize>],
                            sel: &IdSelection|
             -> Result<Vec<PointId>, RunbookError> {
                match sel {
                    IdSelection::Range { start, end } => {
                        let (s, e) = range(start, end)?;
                        if let Some(id) = (s..e).find(|id| row_of[*id].is_none()) {
                            return Err(err(format!("id {id} is not live at this step")));
                        }
                        Ok((s as PointId..e as PointId).collect())
                    }
                    IdSelection::Fraction { fraction, seed } => {
                        if !(*fraction > 0.0 && *fraction <= 1.0) {
                            return Err(err(format!("fraction {fraction} must be in (0, 1]")));
                        }
                        let mut live: Vec<PointId> = row_of
                            .iter()
                            .enumerate()
                            .filter(|(_, r)| r.is_some())
                            .map(|(id, _)| id as PointId)
                            .collect();
                        let take = ((live.len() as f64) * fraction).round() as usize;
                        if take == 0 {
                            return Err(err("selects no ids".into()));
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
            };
            let resolved = match step {
                StepSpec::Build { start, end } => {
                    if i != 0 {
                        return Err(err("build must be the first step".into()));
                    }
                    let (s, e) = range(start, end)?;
                    for (id, slot) in row_of.iter_mut().enumerate().take(e).skip(s) {
                        *slot = Some(id);
                    }
                    Resolved::Build {
                        ids: (s as PointId..e as PointId).collect(),
                    }
                }
                _ if i == 0 => return Err(err("the first step must be a build".into())),
                StepSpec::Insert {
                    start,
                    end,
                    mode,
                    batch_size,
                } => {
                    let (s, e) = range(start, end)?;
                    if let Some(id) = (s..e).find(|id| row_of[*id].is_some()) {
                        return Err(err(format!(
                            "range {s}..{e} overlaps live ids (id {id} is already inserted)"
                        )));
                    }
                    for (id, slot) in row_of.iter_mut().enumerate().take(e).skip(s) {
                        *slot = Some(id);
                    }
                    Resolved::Insert {
                        ids: (s as PointId..e as PointId).collect(),
                        mode: *mode,
                        batch_size: *batch_size,
                    }
                }
                StepSpec::Update {
                    ids,
                    from,
                    mode,
                    batch_size,
                } => {
                    let ids = live_ids(&row_of, ids)?;
                    let from = from.resolve(n)?;
                    if from + ids.len() > n {
                        return Err(err(format!(
                            "new vectors from row {from} need {} rows, beyond the dataset ({n})",
                            ids.len()
                        )));
                    }
                    let rows: Vec<usize> = (from..from + ids.len()).collect();
                    for (id, row) in ids.iter().zip(&rows) {
                        row_of[*id as usize] = Some(*row);
                    }
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
                } => {
                    let ids = live_ids(&row_of, ids)?;
                    for id in &ids {
                        row_of[*id as usize] = None;
                    }
                    Resolved::Delete {
                        ids,
                        mode: *mode,
                        batch_size: *batch_size,
                    }
                }
                StepSpec::Stream {
                    insert,
                    update,
                    delete,
                    rate,
                    batch_size,
                    searchers,
                } => {
                    let initial: Vec<(PointId, usize)> = row_of
                        .iter()
                        .enumerate()
                        .filter_map(|(id, r)| r.map(|r| (id as PointId, r)))
                        .collect();
                    let mut lists: Vec<Vec<StreamOp>> = Vec::new();
                    let mut touched = std::collections::HashSet::new();
                    if let Some(u) = update {
                        let ids = live_ids(&row_of, &u.ids)?;
                        let from = u.from.resolve(n)?;
                        if from + ids.len() > n {
                            return Err(err(format!(
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
                    if let Some(d) = delete {
                        // Chosen among the live ids that this step does not update.
                        let mut candidates = row_of.clone();
                        for id in &touched {
                            candidates[*id as usize] = None;
                        }
                        let ids = live_ids(&candidates, &d.ids).map_err(|e| match e {
                            RunbookError::Step { message, .. } => err(format!(
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
                    if let Some(ins) = insert {
                        let (s, e) = range(&ins.start, &ins.end)?;
                        if let Some(id) = (s..e).find(|id| row_of[*id].is_some()) {
                            return Err(err(format!(
                                "inserts {s}..{e} overlap live ids (id {id} is already inserted)"
                            )));
                        }
                        lists.push(
                            (s..e)
                                .map(|id| StreamOp {
                                    id: id as PointId,
                                    row: Some(id),
                                })
                                .collect(),
                        );
                    }
                    if lists.iter().all(Vec::is_empty) {
                        return Err(err(
                            "has no writes: give `insert`, `update` or `delete`".into()
                        ));
                    }
                    if batch_size.is_some_and(|b| b == 0) {
                        return Err(err("batch_size must be at least 1".into()));
                    }
                    if searchers.is_some_and(|s| s == 0) {
                        return Err(err("searchers must be at least 1".into()));
                    }
                    let ops = interleave(lists);
                    for op in &ops {
                        row_of[op.id as usize] = op.row;
                    }
                    Resolved::Stream(ResolvedStream {
                        initial,
                        ops,
                        batch_size: batch_size.unwrap_or(1),
                        rate: rate.as_ref().map(|r| r.0),
                        searchers: searchers.unwrap_or(2),
                    })
                }
                StepSpec::Search => Resolved::Search {
                    live: row_of
                        .iter()
                        .enumerate()
                        .filter_map(|(id, r)| r.map(|r| (id as PointId, r)))
                        .collect(),
                },
            };
            out.push(resolved);
        }
        Ok(out)
    }
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

pub mod bigann;

#[cfg(test)]
mod tests;
