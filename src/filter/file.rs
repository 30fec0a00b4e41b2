//! Attributes from a side file, JSONL or Parquet: one record per point, `id` (the point's
//! train row) and one member or column per attribute, strings for keywords and integers for
//! ranges:
//!
//! ```text
//! {"id": 0, "category": "shoes", "price": 120}
//! {"id": 1, "category": "hats", "price": 35}
//! ```
//!
//! A Parquet file holds the same table as columns (VectorDBBench's `scalar_labels.parquet`:
//! `id`, `labels`): integer columns of any width become integer attributes, UTF-8 string
//! columns keyword attributes. Every point of the dataset must appear exactly once with every
//! attribute (ids beyond the dataset, e.g. of rows `--limit` dropped, are skipped), and a
//! field keeps one kind throughout.

use std::collections::HashMap;
use std::io::{BufRead, Read};
use std::path::Path;

use super::{Attributes, Column, FieldKind, FilterError, check_field_name, invalid};

enum Building {
    Keyword {
        dictionary: Vec<String>,
        index: HashMap<String, u32>,
        codes: Vec<u32>,
    },
    Integer(Vec<i64>),
}

/// One attribute value of one record, as the file holds it.
pub(super) enum RawValue<'a> {
    Keyword(&'a str),
    Integer(i64),
    /// Anything else, described for the error message.
    Other(String),
}

/// The attribute table of points `0..n`, filled record by record (in any order) by a reader
/// of one of the file formats; the checks are the same for all of them.
pub(super) struct TableBuilder {
    n: usize,
    fields: Vec<(String, Building)>,
    seen: Vec<bool>,
}

impl TableBuilder {
    pub(super) fn new(n: usize) -> TableBuilder {
        TableBuilder {
            n,
            fields: Vec::new(),
            seen: vec![false; n],
        }
    }

    /// One record: its `id` (`None` when it has none or it is not a non-negative integer)
    /// and its other members. The first record fixes the fields and their kinds.
    pub(super) fn record(
        &mut self,
        id: Option<u64>,
        members: &[(&str, RawValue<'_>)],
    ) -> Result<(), String> {
        let id = id.ok_or("`id` must be a non-negative integer (the point's train row)")?;
        let Ok(id) = usize::try_from(id) else {
            return Ok(());
        };
        if id >= self.n {
            return Ok(());
        }
        if std::mem::replace(&mut self.seen[id], true) {
            return Err(format!("id {id} appears twice"));
        }
        if self.fields.is_empty() {
            for (name, v) in members {
                check_field_name(name).map_err(|e| e.to_string())?;
                let building = match v {
                    RawValue::Keyword(_) => Building::Keyword {
                        dictionary: Vec::new(),
                        index: HashMap::new(),
                        codes: vec![0; self.n],
                    },
                    RawValue::Integer(_) => Building::Integer(vec![0; self.n]),
                    RawValue::Other(v) => {
                        return Err(format!(
                            "attribute `{name}`: {v} is neither a string (keyword) nor an \
                             integer"
                        ));
                    }
                };
                self.fields.push((name.to_string(), building));
            }
            if self.fields.is_empty() {
                return Err("no attribute besides `id`".into());
            }
        }
        if members.len() != self.fields.len() {
            return Err(format!(
                "expected `id` and the attributes of the first record ({}), found {} members",
                self.fields
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                members.len() + 1
            ));
        }
        for (name, building) in &mut self.fields {
            let v = members
                .iter()
                .find(|(m, _)| m == name)
                .map(|(_, v)| v)
                .ok_or_else(|| format!("attribute `{name}` is missing"))?;
            match (building, v) {
                (
                    Building::Keyword {
                        dictionary,
                        index,
                        codes,
                    },
                    RawValue::Keyword(s),
                ) => {
                    let code = match index.get(*s) {
                        Some(code) => *code,
                        None => {
                            let code = dictionary.len() as u32;
                            dictionary.push(s.to_string());
                            index.insert(s.to_string(), code);
                            code
                        }
                    };
                    codes[id] = code;
                }
                (Building::Integer(values), RawValue::Integer(x)) => values[id] = *x,
                (b, v) => {
                    let kind = match b {
                        Building::Keyword { .. } => FieldKind::Keyword,
                        Building::Integer(_) => FieldKind::Integer,
                    };
                    let found = match v {
                        RawValue::Keyword(s) => format!("{s:?}"),
                        RawValue::Integer(x) => x.to_string(),
                        RawValue::Other(d) => d.clone(),
                    };
                    return Err(format!(
                        "attribute `{name}` is {kind:?} on the first record, here it is {found}"
                    ));
                }
            }
        }
        Ok(())
    }

    pub(super) fn finish(self, shown: &str) -> Result<Attributes, FilterError> {
        if let Some(missing) = self.seen.iter().position(|s| !s) {
            return Err(invalid(format!(
                "{shown}: point {missing} has no record (every point of the dataset needs its \
                 attributes)"
            )));
        }
        let mut attributes = Attributes::new(self.n);
        for (name, building) in self.fields {
            let column = match building {
                Building::Keyword {
                    dictionary, codes, ..
                } => Column::Keyword { dictionary, codes },
                Building::Integer(v) => Column::Integer(v),
            };
            attributes.push(&name, column)?;
        }
        Ok(attributes)
    }
}

/// Reads an attribute file for points `0..n`: Parquet when it starts with Parquet's magic
/// bytes, JSONL otherwise.
pub fn read_attributes(path: &Path, n: usize) -> Result<Attributes, FilterError> {
    let shown = path.display();
    let mut magic = [0u8; 4];
    let is_parquet = std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut magic))
        .is_ok()
        && &magic == b"PAR1";
    if is_parquet {
        super::parquet::read_parquet(path, n)
    } else {
        read_jsonl(path, n).map_err(|e| match e {
            FilterError::Invalid(m)
                if m.contains("not JSON") && !shown.to_string().ends_with(".jsonl") =>
            {
                invalid(format!("{m} (attribute files are JSONL or Parquet)"))
            }
            other => other,
        })
    }
}

/// Reads the JSONL `path` for points `0..n`.
pub fn read_jsonl(path: &Path, n: usize) -> Result<Attributes, FilterError> {
    let shown = path.display();
    let file = crate::text::open(path)
        .map_err(|e| invalid(format!("cannot open attribute file {shown}: {e}")))?;
    let mut table = TableBuilder::new(n);
    for (line_no, line) in file.lines().enumerate() {
        let at = |msg: String| invalid(format!("{shown}:{}: {msg}", line_no + 1));
        let line = line.map_err(|e| at(format!("cannot read: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| at(format!("not JSON: {e}")))?;
        let serde_json::Value::Object(map) = value else {
            return Err(at("each line must be a JSON object".into()));
        };
        let id = map.get("id").and_then(serde_json::Value::as_u64);
        let members: Vec<(&str, RawValue<'_>)> = map
            .iter()
            .filter(|(k, _)| *k != "id")
            .map(|(k, v)| {
                let raw = match v {
                    serde_json::Value::String(s) => RawValue::Keyword(s),
                    serde_json::Value::Number(x) => match x.as_i64() {
                        Some(i) => RawValue::Integer(i),
                        None => RawValue::Other(x.to_string()),
                    },
                    other => RawValue::Other(other.to_string()),
                };
                (k.as_str(), raw)
            })
            .collect();
        table.record(id, &members).map_err(at)?;
    }
    table.finish(&shown.to_string())
}
