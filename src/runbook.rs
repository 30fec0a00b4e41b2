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
use crate::vectors::Vectors;

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

/// Restricts a build or insert range to one cluster of the train rows (drift runbooks: the
/// data arrives cluster by cluster). `of` clusters by seeded k-means (see [`clusters`]),
/// numbered by size, largest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterPick {
    pub index: usize,
    pub of: usize,
    #[serde(default)]
    pub seed: u64,
}

/// Cluster labels of the train rows, per (`of`, `seed`) a runbook names.
pub type ClusterLabels = std::collections::HashMap<(usize, u64), Vec<u32>>;

/// One step as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum StepSpec {
    Build {
        #[serde(default = "zero")]
        start: Position,
        end: Position,
        /// Only the rows of this cluster within `start..end`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cluster: Option<ClusterPick>,
    },
    Insert {
        start: Position,
        end: Position,
        /// Only the rows of this cluster within `start..end`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cluster: Option<ClusterPick>,
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
    /// Only the rows of this cluster within `start..end`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterPick>,
    /// Expiry: each inserted point is deleted this long after its insert, within the step
    /// (big-ann-benchmarks' expiration-time runbooks). Several lifetimes are given to the
    /// inserts in turn (`["1s", "4s", "never"]`: a third of the points each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expire_after: Option<Lifetimes>,
}

/// How long an inserted point lives: `"2s"` (needs the step's `rate`: the delete is issued
/// that many seconds of writes later), a number of writes (`5000`: issued 5,000 writes after
/// the insert, any rate), or `"never"`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Lifetime {
    Writes(u64),
    Seconds(#[serde(serialize_with = "seconds_text")] f64),
    Never(#[serde(serialize_with = "never_text")] ()),
}

fn seconds_text<S: serde::Serializer>(s: &f64, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(&format!("{s}s"))
}

fn never_text<S: serde::Serializer>(_: &(), ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str("never")
}

impl<'de> Deserialize<'de> for Lifetime {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Lifetime, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u64),
            Text(String),
        }
        let bad = || {
            serde::de::Error::custom(
                "`expire_after` takes lifetimes like \"2s\" (with a `rate`), a number of \
                 writes like 5000, or \"never\"",
            )
        };
        match Raw::deserialize(deserializer).map_err(|_| bad())? {
            Raw::Number(0) => Err(bad()),
            Raw::Number(n) => Ok(Lifetime::Writes(n)),
            Raw::Text(t) if t.trim() == "never" => Ok(Lifetime::Never(())),
            Raw::Text(t) => t
                .trim()
                .strip_suffix('s')
                .and_then(|v| v.trim().parse::<f64>().ok())
                .filter(|v| v.is_finite() && *v > 0.0)
                .map(Lifetime::Seconds)
                .ok_or_else(bad),
        }
    }
}

/// One lifetime or a list of them, given to the inserts in turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Lifetimes {
    One(Lifetime),
    Each(Vec<Lifetime>),
}

impl Lifetimes {
    fn list(&self) -> Vec<Lifetime> {
        match self {
            Lifetimes::One(l) => vec![*l],
            Lifetimes::Each(v) => v.clone(),
        }
    }
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
                    cluster: None,
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
                    cluster: None,
                },
                StepSpec::Search,
                StepSpec::Insert {
                    start: pct("90%"),
                    end: pct("100%"),
                    cluster: None,
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
            let text = crate::text::read_to_string(file).map_err(|e| RunbookError::Read {
                path: file.display().to_string(),
                message: e.to_string(),
            })?;
            return bigann::parse(&text, entry).map_err(|e| RunbookError::Read {
                path: file.display().to_string(),
                message: e.to_string(),
            });
        }
        let text = crate::text::read_to_string(path).map_err(|e| RunbookError::Read {
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

    /// The clusterings (`of`, `seed`) the runbook's `cluster` selectors name.
    pub fn clusterings(&self) -> Vec<(usize, u64)> {
        let mut out: Vec<(usize, u64)> = self
            .steps
            .iter()
            .filter_map(|s| match s {
                StepSpec::Build { cluster, .. } | StepSpec::Insert { cluster, .. } => *cluster,
                StepSpec::Stream {
                    insert: Some(i), ..
                } => i.cluster,
                _ => None,
            })
            .map(|c| (c.of, c.seed))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

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
            // The rows of `s..e` in the cluster, when one is named.
            let in_cluster = |s: usize,
                              e: usize,
                              cluster: &Option<ClusterPick>|
             -> Result<Vec<usize>, RunbookError> {
                let Some(c) = cluster else {
                    return Ok((s..e).collect());
                };
                let of = labels.get(&(c.of, c.seed)).ok_or_else(|| {
                    err(format!(
                        "names cluster {} of {}: resolve it on the dataset (its rows are \
                         clustered first)",
                        c.index, c.of
                    ))
                })?;
                if c.index >= c.of {
                    return Err(err(format!(
                        "cluster index {} is not below `of` = {}",
                        c.index, c.of
                    )));
                }
                let rows: Vec<usize> = (s..e).filter(|&r| of[r] as usize == c.index).collect();
                if rows.is_empty() {
                    return Err(err(format!(
                        "cluster {} of {} has no rows in {s}..{e}",
                        c.index, c.of
                    )));
                }
                Ok(rows)
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
                StepSpec::Build {
                    start,
                    end,
                    cluster,
                } => {
                    if i != 0 {
                        return Err(err("build must be the first step".into()));
                    }
                    let (s, e) = range(start, end)?;
                    let rows = in_cluster(s, e, cluster)?;
                    for &id in &rows {
                        row_of[id] = Some(id);
                    }
                    Resolved::Build {
                        ids: rows.into_iter().map(|id| id as PointId).collect(),
                    }
                }
                _ if i == 0 => return Err(err("the first step must be a build".into())),
                StepSpec::Insert {
                    start,
                    end,
                    cluster,
                    mode,
                    batch_size,
                } => {
                    let (s, e) = range(start, end)?;
                    let rows = in_cluster(s, e, cluster)?;
                    if let Some(id) = rows.iter().find(|id| row_of[**id].is_some()) {
                        return Err(err(format!(
                            "range {s}..{e} overlaps live ids (id {id} is already inserted)"
                        )));
                    }
                    for &id in &rows {
                        row_of[id] = Some(id);
                    }
                    Resolved::Insert {
                        ids: rows.into_iter().map(|id| id as PointId).collect(),
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
                        let rows = in_cluster(s, e, &ins.cluster)?;
                        if let Some(id) = rows.iter().find(|id| row_of[**id].is_some()) {
                            return Err(err(format!(
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
                    let mut ops = interleave(lists);
                    if let Some(lifetimes) = insert.as_ref().and_then(|i| i.expire_after.as_ref()) {
                        ops = with_expiry(ops, &initial, lifetimes, rate.as_ref().map(|r| r.0))
                            .map_err(err)?;
                    }
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

pub mod bigann;
pub mod clusters;
pub mod generated;

#[cfg(test)]
mod tests;
