//! big-ann-benchmarks' streaming runbooks (NeurIPS'23 streaming track, `neurips23/runbooks/`):
//! a YAML file with one entry per dataset, each a numbered list of operations.
//!
//! ```yaml
//! msturing-10M-clustered:
//!   max_pts: 10000000
//!   1:
//!     operation: "insert"
//!     start: 0
//!     end: 500000
//!   2:
//!     operation: "search"
//!   3:
//!     operation: "delete"
//!     start: 0
//!     end: 250000
//!   4:
//!     operation: "replace"
//!     tags_start: 250000
//!     tags_end: 300000
//!     ids_start: 600000
//!     ids_end: 650000
//!   gt_url: "https://…"
//! ```
//!
//! Their semantics map onto ragdbeval's steps one to one: a *tag* is ragdbeval's point id and
//! a vector *id* a train row; `insert start..end` adds tags = rows `start..end` (the first
//! insert is the build), `delete` removes tags `start..end`, `replace` gives tags
//! `tags_start..tags_end` the rows `ids_start..ids_end` (an update), and `search` searches.
//!
//! The files are read with `yaml-rust2` (without its encoding feature: the files are UTF-8
//! text). Aliases are refused before the document is built: big-ann's files have none, and
//! each alias is a copy, so a few nested ones make a small file expand without bound.

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::yaml::Hash;
use yaml_rust2::{Yaml, YamlLoader};

use super::{IdSelection, OpMode, Position, Runbook, RunbookError, StepSpec};

fn invalid(message: String) -> RunbookError {
    RunbookError::Invalid(message)
}

/// The file's top-level mapping: entry name → the entry's mapping.
fn document(text: &str) -> Result<Hash, RunbookError> {
    let not_yaml = |e: yaml_rust2::ScanError| invalid(format!("not YAML: {e}"));
    let mut parser = Parser::new_from_str(text);
    loop {
        match parser.next_token().map_err(not_yaml)? {
            (Event::StreamEnd, _) => break,
            (Event::Alias(_), mark) => {
                return Err(invalid(format!(
                    "line {}: YAML aliases (`*name`) are not part of big-ann runbooks",
                    mark.line()
                )));
            }
            _ => {}
        }
    }
    let mut docs = YamlLoader::load_from_str(text).map_err(not_yaml)?;
    if docs.len() > 1 {
        return Err(invalid(format!(
            "{} YAML documents; a big-ann runbook is one",
            docs.len()
        )));
    }
    match docs.pop() {
        None | Some(Yaml::Null) => Ok(Hash::new()),
        Some(Yaml::Hash(entries)) => Ok(entries),
        Some(_) => Err(invalid(
            "the file is not `key: value` mappings (a big-ann runbook maps each dataset to \
             its operations)"
                .into(),
        )),
    }
}

/// A mapping key or scalar as text (big-ann's keys are names and step numbers).
fn scalar_text(value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Real(r) => Some(r.clone()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

/// One operation as written: its number and its fields.
struct Operation<'a> {
    number: u64,
    fields: &'a Hash,
}

impl Operation<'_> {
    fn get(&self, name: &str) -> Option<&Yaml> {
        self.fields.get(&Yaml::String(name.to_string()))
    }

    fn kind(&self) -> Result<String, RunbookError> {
        self.get("operation").and_then(scalar_text).ok_or_else(|| {
            invalid(format!(
                "operation {} has no `operation` (insert, delete, replace or search)",
                self.number
            ))
        })
    }

    fn number_field(&self, name: &str) -> Result<u64, RunbookError> {
        let value = self.get(name).ok_or_else(|| {
            invalid(format!(
                "operation {}: `{}` needs `{name}`",
                self.number,
                self.kind().unwrap_or_else(|_| "?".into())
            ))
        })?;
        let parsed = match value {
            Yaml::Integer(i) => u64::try_from(*i).ok(),
            Yaml::String(s) => s.trim().parse().ok(),
            _ => None,
        };
        parsed.ok_or_else(|| {
            invalid(format!(
                "operation {}: `{name}: {}` is not a whole number ≥ 0",
                self.number,
                scalar_text(value).unwrap_or_else(|| "(not a number)".into())
            ))
        })
    }
}

/// The entries (dataset names) of a big-ann runbook file.
pub fn entries(text: &str) -> Result<Vec<String>, RunbookError> {
    entry_names(&document(text)?)
}

fn entry_names(document: &Hash) -> Result<Vec<String>, RunbookError> {
    document
        .keys()
        .map(|k| {
            scalar_text(k).ok_or_else(|| invalid("an entry's name is not a plain name".into()))
        })
        .collect()
}

/// Reads entry `entry` of a big-ann runbook (the only one when `None` and the file has one).
pub fn parse(text: &str, entry: Option<&str>) -> Result<Runbook, RunbookError> {
    let document = document(text)?;
    let names = entry_names(&document)?;
    let chosen = choose_entry(&names, entry)?;
    let body = match document.get(&Yaml::String(chosen.clone())) {
        Some(Yaml::Hash(body)) => body,
        _ => {
            return Err(invalid(format!(
                "entry `{chosen}` is not a mapping of numbered operations"
            )));
        }
    };
    let mut operations = operations(body)?;
    operations.sort_by_key(|o| o.number);
    if let Some(w) = operations.windows(2).find(|w| w[0].number == w[1].number) {
        return Err(invalid(format!("operation {} appears twice", w[0].number)));
    }
    let mut steps = Vec::with_capacity(operations.len());
    for op in &operations {
        let step = step_of(op, steps.is_empty())?;
        if steps.is_empty() && !matches!(step, StepSpec::Build { .. }) {
            return Err(invalid(format!(
                "operation {}: the first operation must be an insert",
                op.number
            )));
        }
        steps.push(step);
    }
    Ok(Runbook {
        name: chosen,
        steps,
    })
}

/// The entry `entry` names (case aside), or the file's only one.
fn choose_entry(names: &[String], entry: Option<&str>) -> Result<String, RunbookError> {
    match (entry, names) {
        (Some(e), _) => names
            .iter()
            .find(|n| n.eq_ignore_ascii_case(e))
            .cloned()
            .ok_or_else(|| {
                invalid(format!(
                    "no entry `{e}` in this big-ann runbook; it has: {}",
                    names.join(", ")
                ))
            }),
        (None, [only]) => Ok(only.clone()),
        (None, []) => Err(invalid("the big-ann runbook has no entries".into())),
        (None, many) => Err(invalid(format!(
            "the big-ann runbook has {} entries ({}): name one as FILE.yaml#ENTRY",
            many.len(),
            many.join(", ")
        ))),
    }
}

/// The numbered operations of an entry, in file order.
fn operations(body: &Hash) -> Result<Vec<Operation<'_>>, RunbookError> {
    let mut operations = Vec::new();
    for (key, value) in body {
        let name = scalar_text(key).unwrap_or_default();
        let Ok(number) = name.parse::<u64>() else {
            if matches!(name.as_str(), "max_pts" | "gt_url") {
                continue;
            }
            return Err(invalid(format!(
                "unknown key `{name}` (expected max_pts, gt_url or a step number)"
            )));
        };
        let Yaml::Hash(fields) = value else {
            return Err(invalid(format!(
                "operation {number} must be a mapping (operation, start, end)"
            )));
        };
        operations.push(Operation { number, fields });
    }
    Ok(operations)
}

/// The step an operation maps to; the first insert (`first`: no step yet) is the build.
fn step_of(op: &Operation, first: bool) -> Result<StepSpec, RunbookError> {
    let row = |v: u64| Position::Row(v);
    let kind = op.kind()?;
    Ok(match kind.as_str() {
        "insert" if first => StepSpec::Build {
            start: row(op.number_field("start")?),
            end: row(op.number_field("end")?),
            cluster: None,
        },
        "insert" => StepSpec::Insert {
            start: row(op.number_field("start")?),
            end: row(op.number_field("end")?),
            cluster: None,
            mode: OpMode::Batch,
            batch_size: None,
        },
        "delete" => StepSpec::Delete {
            ids: IdSelection::Range {
                start: row(op.number_field("start")?),
                end: row(op.number_field("end")?),
            },
            mode: OpMode::Batch,
            batch_size: None,
        },
        "replace" => {
            let (tags, ids) = (
                (op.number_field("tags_start")?, op.number_field("tags_end")?),
                (op.number_field("ids_start")?, op.number_field("ids_end")?),
            );
            if tags.1.checked_sub(tags.0) != ids.1.checked_sub(ids.0) {
                return Err(invalid(format!(
                    "operation {}: replace of {}..{} tags with {}..{} ids: the ranges must \
                     have the same length",
                    op.number, tags.0, tags.1, ids.0, ids.1
                )));
            }
            StepSpec::Update {
                ids: IdSelection::Range {
                    start: row(tags.0),
                    end: row(tags.1),
                },
                from: row(ids.0),
                mode: OpMode::Batch,
                batch_size: None,
            }
        }
        "search" => StepSpec::Search,
        other => {
            return Err(invalid(format!(
                "operation {}: unknown operation `{other}` (big-ann's are insert, delete, \
                 replace and search)",
                op.number
            )));
        }
    })
}

/// Turns every insert, update and delete step after the build into a stream step of the same
/// writes, searched while they run by `searchers` threads: big-ann's runbooks run "concurrently
/// with the next operation" instead of between operations.
pub fn concurrent(runbook: Runbook, searchers: usize) -> Runbook {
    use super::{StreamDelete, StreamInsert, StreamUpdate};
    let stream = |insert, update, delete, batch_size: Option<usize>| StepSpec::Stream {
        insert,
        update,
        delete,
        rate: None,
        batch_size: Some(batch_size.unwrap_or(100)),
        searchers: Some(searchers),
    };
    let steps = runbook
        .steps
        .into_iter()
        .map(|step| match step {
            StepSpec::Insert {
                start,
                end,
                cluster,
                batch_size,
                ..
            } => stream(
                Some(StreamInsert {
                    start,
                    end,
                    cluster,
                    expire_after: None,
                }),
                None,
                None,
                batch_size,
            ),
            StepSpec::Update {
                ids,
                from,
                batch_size,
                ..
            } => stream(None, Some(StreamUpdate { ids, from }), None, batch_size),
            StepSpec::Delete {
                ids, batch_size, ..
            } => stream(None, None, Some(StreamDelete { ids }), batch_size),
            other => other,
        })
        .collect();
    Runbook {
        name: format!("{} (concurrent)", runbook.name),
        steps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUNBOOK: &str = r#"
# two entries, as big-ann's files have
random-xs:
  max_pts: 10000
  1:
    operation: "insert"
    start: 0
    end: 6000
  2:
    operation: "search"
  3:
    operation: delete   # bare strings too
    start: 0
    end: 1000
  4:
    operation: "replace"
    tags_start: 2000
    tags_end: 2500
    ids_start: 6000
    ids_end: 6500
  5:
    operation: "insert"
    start: 0
    end: 1000
  6:
    operation: "search"
  gt_url: "https://example.org/gt#not-a-comment"
other-set:
  1:
    operation: "insert"
    start: 0
    end: 10
"#;

    #[test]
    fn an_entry_maps_onto_steps_and_resolves() {
        let rb = parse(RUNBOOK, Some("random-xs")).unwrap();
        assert_eq!(rb.name, "random-xs");
        let kinds: Vec<&str> = rb.steps.iter().map(StepSpec::kind).collect();
        assert_eq!(
            kinds,
            ["build", "search", "delete", "update", "insert", "search"]
        );
        // Re-inserting deleted tags is allowed, as in big-ann.
        let resolved = rb.resolve(10_000).unwrap();
        let super::super::Resolved::Search { live } = &resolved[5] else {
            panic!("a search");
        };
        assert_eq!(live.len(), 6000);
        assert!(live.contains(&(2000, 6000)), "tag 2000 now holds row 6000");
        assert_eq!(entries(RUNBOOK).unwrap(), ["random-xs", "other-set"]);
    }

    #[test]
    fn malformed_runbooks_name_the_problem() {
        let err = |text: &str, entry: Option<&str>| parse(text, entry).unwrap_err().to_string();
        assert!(err(RUNBOOK, None).contains("FILE.yaml#ENTRY"));
        assert!(err(RUNBOOK, Some("nope")).contains("random-xs, other-set"));
        let bad_op = "a:\n  1:\n    operation: \"upsert\"\n    start: 0\n    end: 5\n";
        assert!(err(bad_op, None).contains("unknown operation `upsert`"));
        let no_end = "a:\n  1:\n    operation: insert\n    start: 0\n";
        assert!(err(no_end, None).contains("needs `end`"));
        let negative = "a:\n  1:\n    operation: insert\n    start: -3\n    end: 5\n";
        assert!(err(negative, None).contains("not a whole number"));
        let uneven = "a:\n  1:\n    operation: insert\n    start: 0\n    end: 5\n  2:\n    operation: replace\n    tags_start: 0\n    tags_end: 2\n    ids_start: 3\n    ids_end: 4\n";
        assert!(err(uneven, None).contains("same length"));
        let search_first = "a:\n  1:\n    operation: search\n";
        assert!(err(search_first, None).contains("must be an insert"));
        assert!(err("a:\n  foo: 3\n", None).contains("unknown key `foo`"));
        assert!(err("just text\n", None).contains("not `key: value`"));
        assert!(err("a:\n\t1: 2\n", None).contains("not YAML"));
        let dup = "a:\n  1:\n    operation: insert\n    start: 0\n    end: 5\n  1:\n    operation: search\n";
        assert!(err(dup, None).contains("duplicated key"));
        let alias = "a: &x\n  1: {operation: insert, start: 0, end: 5}\nb: *x\n";
        assert!(err(alias, None).contains("aliases"));
    }

    #[test]
    fn concurrent_turns_writes_into_stream_steps() {
        let rb = concurrent(parse(RUNBOOK, Some("random-xs")).unwrap(), 2);
        let kinds: Vec<&str> = rb.steps.iter().map(StepSpec::kind).collect();
        assert_eq!(
            kinds,
            ["build", "search", "stream", "stream", "stream", "search"]
        );
        assert!(rb.resolve(10_000).is_ok());
    }
}
