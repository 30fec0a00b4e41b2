//! The runbook as written: its steps, positions, id selections and stream settings, how they
//! are read from TOML (or a big-ann-benchmarks YAML file), and the questions asked of it before
//! it is resolved.

use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{RunbookError, bigann};

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
    pub(super) fn resolve(&self, n: usize) -> Result<usize, RunbookError> {
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
/// data arrives cluster by cluster). `of` clusters by seeded k-means (see
/// [`clusters`](super::clusters)), numbered by size, largest first.
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
    pub(super) fn list(&self) -> Vec<Lifetime> {
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

/// A runbook as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Runbook {
    #[serde(default)]
    pub name: String,
    pub steps: Vec<StepSpec>,
}

impl StepSpec {
    pub(super) fn kind(&self) -> &'static str {
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
}
