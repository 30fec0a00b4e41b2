//! Attributes from a JSONL side file: one object per line, `id` (the point's train row) and
//! one member per attribute, strings for keywords and integers for ranges:
//!
//! ```text
//! {"id": 0, "category": "shoes", "price": 120}
//! {"id": 1, "category": "hats", "price": 35}
//! ```
//!
//! Every point of the dataset must appear exactly once with every attribute (ids beyond the
//! dataset, e.g. of rows `--limit` dropped, are skipped), and a field keeps one kind
//! throughout.

use std::collections::HashMap;
use std::io::BufRead;
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

/// Reads `path` for points `0..n`.
pub fn read_jsonl(path: &Path, n: usize) -> Result<Attributes, FilterError> {
    let shown = path.display();
    let file = std::fs::File::open(path)
        .map_err(|e| invalid(format!("cannot open attribute file {shown}: {e}")))?;
    // Field name → (kind, values), values filled per id.
    let mut fields: Vec<(String, Building)> = Vec::new();
    let mut seen = vec![false; n];
    for (line_no, line) in std::io::BufReader::new(file).lines().enumerate() {
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
        let id = map
            .get("id")
            .and_then(serde_json::Value::as_u64)
            .ok_or_else(|| {
                at("`id` must be a non-negative integer (the point's train row)".into())
            })?;
        let Ok(id) = usize::try_from(id) else {
            continue;
        };
        if id >= n {
            continue;
        }
        if std::mem::replace(&mut seen[id], true) {
            return Err(at(format!("id {id} appears twice")));
        }
        if fields.is_empty() {
            for (name, v) in map.iter().filter(|(k, _)| *k != "id") {
                check_field_name(name).map_err(|e| at(e.to_string()))?;
                let building = match v {
                    serde_json::Value::String(_) => Building::Keyword {
                        dictionary: Vec::new(),
                        index: HashMap::new(),
                        codes: vec![0; n],
                    },
                    serde_json::Value::Number(x) if x.is_i64() => Building::Integer(vec![0; n]),
                    _ => {
                        return Err(at(format!(
                            "attribute `{name}`: {v} is neither a string (keyword) nor an \
                             integer"
                        )));
                    }
                };
                fields.push((name.clone(), building));
            }
            if fields.is_empty() {
                return Err(at("no attribute besides `id`".into()));
            }
        }
        if map.len() != fields.len() + 1 {
            return Err(at(format!(
                "expected `id` and the attributes of the first line ({}), found {} members",
                fields
                    .iter()
                    .map(|(n, _)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                map.len()
            )));
        }
        for (name, building) in &mut fields {
            let v = map
                .get(name.as_str())
                .ok_or_else(|| at(format!("attribute `{name}` is missing")))?;
            match (building, v) {
                (
                    Building::Keyword {
                        dictionary,
                        index,
                        codes,
                    },
                    serde_json::Value::String(s),
                ) => {
                    let next = dictionary.len() as u32;
                    let code = *index.entry(s.clone()).or_insert_with(|| {
                        dictionary.push(s.clone());
                        next
                    });
                    codes[id] = code;
                }
                (Building::Integer(values), serde_json::Value::Number(x)) if x.is_i64() => {
                    values[id] = x.as_i64().unwrap_or_default();
                }
                (b, _) => {
                    let kind = match b {
                        Building::Keyword { .. } => FieldKind::Keyword,
                        Building::Integer(_) => FieldKind::Integer,
                    };
                    return Err(at(format!(
                        "attribute `{name}` is {kind:?} on the first line, here it is {v}"
                    )));
                }
            }
        }
    }
    if let Some(missing) = seen.iter().position(|s| !s) {
        return Err(invalid(format!(
            "{shown}: point {missing} has no line (every point of the dataset needs its \
             attributes)"
        )));
    }
    let mut attributes = Attributes::new(n);
    for (name, building) in fields {
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
