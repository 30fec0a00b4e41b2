//! Filtered search: the attributes of points, the predicates of queries, and the check of one
//! against the other.
//!
//! Attributes are a column table indexed by point id (ids are train rows when first inserted,
//! so one row per train vector covers every id a runbook can use). A point keeps its
//! attributes when a runbook update gives it another vector: metadata belongs to the document,
//! the vector to its current embedding. Two kinds of field exist, because they are the two
//! every engine can index: keywords (string equality) and integers (ranges).
//!
//! A predicate is a conjunction of conditions, one per query: `label = "7"`,
//! `num ∈ [lo, hi)`, or both. [`generate`] makes attributes and predicates with a chosen
//! selectivity and correlation; [`file`] reads attributes from a JSONL side file.

pub mod file;
pub mod generate;
mod parquet;

pub use parquet::guard_reader_panics;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::types::PointId;

/// What a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FieldKind {
    /// A string matched by equality (a label, a tenant, a category).
    Keyword,
    /// A 64-bit integer matched by ranges (a date, a price).
    Integer,
}

/// A named attribute of every point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Field {
    pub name: String,
    pub kind: FieldKind,
}

/// One field's values, indexed by point id.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    /// `codes[id]` indexes `dictionary`.
    Keyword {
        dictionary: Vec<String>,
        codes: Vec<u32>,
    },
    Integer(Vec<i64>),
}

/// One value of one point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Value<'a> {
    Keyword(&'a str),
    Integer(i64),
}

/// Errors of attribute tables and predicates.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FilterError {
    #[error("{0}")]
    Invalid(String),
}

fn invalid(msg: impl Into<String>) -> FilterError {
    FilterError::Invalid(msg.into())
}

/// Field names every engine accepts as a column, payload key or metadata key.
pub fn check_field_name(name: &str) -> Result<(), FilterError> {
    let ok = !name.is_empty()
        && name.len() <= 48
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(invalid(format!(
            "attribute name `{name}` must be 1 to 48 lowercase letters, digits or underscores, \
             starting with a letter or underscore (every engine must accept it as a column name)"
        )))
    }
}

/// The attributes of every point: one column per field, each `len` long.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attributes {
    fields: Vec<Field>,
    columns: Vec<Column>,
    len: usize,
}

impl Attributes {
    /// An empty table for `len` points.
    pub fn new(len: usize) -> Attributes {
        Attributes {
            fields: Vec::new(),
            columns: Vec::new(),
            len,
        }
    }

    /// Points covered (ids `0..len`).
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }

    /// Adds a column; its name must be new and valid, its length `len`.
    pub fn push(&mut self, name: &str, column: Column) -> Result<(), FilterError> {
        check_field_name(name)?;
        if self.field_index(name).is_some() {
            return Err(invalid(format!("attribute `{name}` is defined twice")));
        }
        let (kind, n) = match &column {
            Column::Keyword { dictionary, codes } => {
                if let Some(c) = codes.iter().find(|c| **c as usize >= dictionary.len()) {
                    return Err(invalid(format!(
                        "attribute `{name}`: code {c} beyond its {} values",
                        dictionary.len()
                    )));
                }
                (FieldKind::Keyword, codes.len())
            }
            Column::Integer(v) => (FieldKind::Integer, v.len()),
        };
        if n != self.len {
            return Err(invalid(format!(
                "attribute `{name}` has {n} values for {} points",
                self.len
            )));
        }
        self.fields.push(Field {
            name: name.to_string(),
            kind,
        });
        self.columns.push(column);
        Ok(())
    }

    /// The first `n` points' attributes (all of them when there are fewer).
    pub fn truncated(mut self, n: usize) -> Attributes {
        let n = n.min(self.len);
        for column in &mut self.columns {
            match column {
                Column::Keyword { codes, .. } => codes.truncate(n),
                Column::Integer(v) => v.truncate(n),
            }
        }
        self.len = n;
        self
    }

    /// The values of field `field`.
    pub fn column(&self, field: usize) -> &Column {
        &self.columns[field]
    }

    /// Value of field `field` for point `id`.
    pub fn value(&self, field: usize, id: PointId) -> Value<'_> {
        let i = id as usize;
        match &self.columns[field] {
            Column::Keyword { dictionary, codes } => {
                Value::Keyword(dictionary[codes[i] as usize].as_str())
            }
            Column::Integer(v) => Value::Integer(v[i]),
        }
    }

    /// Every field of point `id` with its value, in field order: what an adapter stores with
    /// the point.
    pub fn values_of(&self, id: PointId) -> impl Iterator<Item = (&Field, Value<'_>)> {
        self.fields
            .iter()
            .enumerate()
            .map(move |(f, field)| (field, self.value(f, id)))
    }

    /// True when `id` has attributes (is within the table).
    pub fn covers(&self, id: PointId) -> bool {
        (id as usize) < self.len
    }

    /// SHA-256 of the fields `names` (names, kinds and every value): what a ground truth under
    /// predicates on them depends on.
    pub fn fingerprint(&self, names: &[&str]) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update((self.len as u64).to_le_bytes());
        for name in names {
            h.update(name.as_bytes());
            let Some(f) = self.field_index(name) else {
                h.update(b"<absent>");
                continue;
            };
            match &self.columns[f] {
                Column::Keyword { dictionary, codes } => {
                    h.update(b"k");
                    for c in codes {
                        let s = dictionary[*c as usize].as_bytes();
                        h.update((s.len() as u64).to_le_bytes());
                        h.update(s);
                    }
                }
                Column::Integer(v) => {
                    h.update(b"i");
                    for x in v {
                        h.update(x.to_le_bytes());
                    }
                }
            }
        }
        h.finalize().into()
    }
}

/// One condition on one field.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Condition {
    /// Keyword field equals `value`.
    Equals { field: String, value: String },
    /// Integer field within `[gte, lt)`.
    Range { field: String, gte: i64, lt: i64 },
}

impl Condition {
    /// Keyword `field` equals `value`.
    pub fn equals(field: impl Into<String>, value: impl Into<String>) -> Condition {
        Condition::Equals {
            field: field.into(),
            value: value.into(),
        }
    }

    /// Integer `field` within `values` (`gte..lt`).
    pub fn range(field: impl Into<String>, values: std::ops::Range<i64>) -> Condition {
        Condition::Range {
            field: field.into(),
            gte: values.start,
            lt: values.end,
        }
    }
}

/// A predicate of one condition.
impl From<Condition> for Predicate {
    fn from(condition: Condition) -> Predicate {
        Predicate {
            all: vec![condition],
        }
    }
}

impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Condition::Equals { field, value } => write!(f, "{field} = {value:?}"),
            Condition::Range { field, gte, lt } => write!(f, "{gte} <= {field} < {lt}"),
        }
    }
}

/// A query's predicate: every condition must hold. Empty: everything passes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Predicate {
    pub all: Vec<Condition>,
}

impl std::fmt::Display for Predicate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.all.is_empty() {
            return f.write_str("true");
        }
        for (i, c) in self.all.iter().enumerate() {
            if i > 0 {
                f.write_str(" AND ")?;
            }
            write!(f, "{c}")?;
        }
        Ok(())
    }
}

/// A condition resolved against one table: a column and a code or a range.
#[derive(Debug, Clone, Copy)]
enum Compiled {
    /// `None`: the value occurs nowhere, nothing passes.
    Code {
        column: usize,
        code: Option<u32>,
    },
    Range {
        column: usize,
        gte: i64,
        lt: i64,
    },
}

/// A predicate resolved against an attribute table, for fast checks.
#[derive(Debug, Clone)]
pub struct CompiledPredicate<'a> {
    attributes: &'a Attributes,
    conditions: Vec<Compiled>,
}

impl Predicate {
    /// The names of the fields it reads, sorted and unique.
    pub fn field_names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .all
            .iter()
            .map(|c| match c {
                Condition::Equals { field, .. } | Condition::Range { field, .. } => field.as_str(),
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Resolves field names and keyword values; a field that does not exist or has the other
    /// kind is an error.
    pub fn compile<'a>(
        &self,
        attributes: &'a Attributes,
    ) -> Result<CompiledPredicate<'a>, FilterError> {
        let mut conditions = Vec::with_capacity(self.all.len());
        for c in &self.all {
            let (name, want) = match c {
                Condition::Equals { field, .. } => (field, FieldKind::Keyword),
                Condition::Range { field, .. } => (field, FieldKind::Integer),
            };
            let column = attributes.field_index(name).ok_or_else(|| {
                let known: Vec<&str> = attributes.fields.iter().map(|f| f.name.as_str()).collect();
                invalid(format!(
                    "the filter names attribute `{name}`, which the points do not have (they \
                     have: {})",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                ))
            })?;
            if attributes.fields[column].kind != want {
                return Err(invalid(format!(
                    "attribute `{name}` is {:?}, the condition `{c}` needs {want:?}",
                    attributes.fields[column].kind
                )));
            }
            conditions.push(match (c, &attributes.columns[column]) {
                (Condition::Equals { value, .. }, Column::Keyword { dictionary, .. }) => {
                    Compiled::Code {
                        column,
                        code: dictionary.iter().position(|d| d == value).map(|p| p as u32),
                    }
                }
                (Condition::Range { gte, lt, .. }, Column::Integer(_)) => Compiled::Range {
                    column,
                    gte: *gte,
                    lt: *lt,
                },
                _ => return Err(invalid(format!("attribute `{name}` cannot take `{c}`"))),
            });
        }
        Ok(CompiledPredicate {
            attributes,
            conditions,
        })
    }
}

impl CompiledPredicate<'_> {
    /// True when point `id` satisfies every condition. An id beyond the table has no
    /// attributes and passes nothing (unless the predicate is empty).
    #[inline]
    pub fn passes(&self, id: PointId) -> bool {
        let i = id as usize;
        if i >= self.attributes.len {
            return self.conditions.is_empty();
        }
        let columns = &self.attributes.columns;
        self.conditions.iter().all(|c| match *c {
            Compiled::Code { column, code } => {
                matches!(&columns[column], Column::Keyword { codes, .. } if Some(codes[i]) == code)
            }
            Compiled::Range { column, gte, lt } => {
                matches!(&columns[column], Column::Integer(v) if v[i] >= gte && v[i] < lt)
            }
        })
    }
}

/// One filtered search measurement: a predicate per query, all at one selectivity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilterLevel {
    /// What it is, for tables and plots: `label 1%`, `int-range 10% AND tenant 1/100`.
    pub name: String,
    /// The fraction of points meant to pass each query's predicate (`None` for predicates
    /// given literally, whose selectivity is only measured).
    pub target_selectivity: Option<f64>,
    /// One per query, in query order.
    pub predicates: Vec<Predicate>,
}

/// Attributes and the levels to measure, as the bench runs them.
#[derive(Debug, Clone)]
pub struct FilterSetup {
    pub attributes: std::sync::Arc<Attributes>,
    pub levels: Vec<FilterLevel>,
}

/// The filter options of a run as the user gave them (`--filter`, `--filter-sweep`,
/// `--filter-correlation`, `--filter-seed`, `--attributes`): stored in the result's settings,
/// and enough to make the same attributes and predicates again (`verify`, `--resume`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FilterSpec {
    pub filters: Vec<String>,
    #[serde(default)]
    pub sweep: bool,
    /// The selectivities of the sweep; empty: [`generate::SWEEP`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub levels: Vec<f64>,
    #[serde(default = "default_correlation")]
    pub correlation: String,
    #[serde(default)]
    pub seed: u64,
    /// A JSONL attribute file, as given (relative to the directory the run started in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attributes: Option<std::path::PathBuf>,
}

fn default_correlation() -> String {
    "none".into()
}

impl FilterSpec {
    /// Reads the attribute file, if any (else starts from the dataset's own attributes,
    /// `carried`), and generates attributes and predicates for the points of `train` and
    /// the `queries`.
    pub fn setup(
        &self,
        train: &crate::vectors::Vectors,
        queries: &crate::vectors::Vectors,
        carried: Option<&Attributes>,
    ) -> Result<FilterSetup, FilterError> {
        let request = generate::FilterRequest {
            args: self
                .filters
                .iter()
                .map(|f| {
                    f.parse()
                        .map_err(|e: String| invalid(format!("--filter {e}")))
                })
                .collect::<Result<_, _>>()?,
            sweep: self.sweep,
            levels: if self.levels.is_empty() {
                generate::SWEEP.to_vec()
            } else {
                self.levels.clone()
            },
            correlation: self
                .correlation
                .parse()
                .map_err(|e: String| invalid(format!("--filter-correlation: {e}")))?,
            seed: self.seed,
        };
        let base = match (&self.attributes, carried) {
            (Some(path), _) => file::read_attributes(path, train.len())?,
            (None, Some(a)) => a.clone(),
            (None, None) => Attributes::new(train.len()),
        };
        generate::generate(train, queries, &request, base)
    }
}

#[cfg(test)]
mod tests;
