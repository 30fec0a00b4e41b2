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
//! The files use a small, fixed subset of YAML (mappings by indentation, integers and quoted
//! or bare strings, `#` comments), which this reader parses itself: the YAML crates would turn
//! on a feature of `hashbrown` and rebuild the embedded engine's whole dependency chain.

use super::{IdSelection, OpMode, Position, Runbook, RunbookError, StepSpec};

/// One line of the file: its indentation, key and value (empty for a mapping).
struct Line<'a> {
    number: usize,
    indent: usize,
    key: &'a str,
    value: String,
}

fn invalid(message: String) -> RunbookError {
    RunbookError::Invalid(message)
}

/// The text before an unquoted `#`.
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') => return &line[..i],
            _ => {}
        }
    }
    line
}

fn lines(text: &str) -> Result<Vec<Line<'_>>, RunbookError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let number = i + 1;
        let line = strip_comment(raw).trim_end();
        if line.trim().is_empty() || line.trim() == "---" {
            continue;
        }
        if line.contains('\t') {
            return Err(invalid(format!(
                "line {number}: tabs are not YAML indentation"
            )));
        }
        let indent = line.len() - line.trim_start().len();
        let (key, value) = line.trim_start().split_once(':').ok_or_else(|| {
            invalid(format!(
                "line {number}: `{}` is not `key: value` (big-ann runbooks are mappings)",
                line.trim()
            ))
        })?;
        let value = value.trim();
        let unquoted = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        out.push(Line {
            number,
            indent,
            key: key.trim().trim_matches('"'),
            value: unquoted.to_string(),
        });
    }
    Ok(out)
}

/// One operation as written.
#[derive(Default)]
struct Operation {
    number: u64,
    line: usize,
    fields: Vec<(String, String, usize)>,
}

impl Operation {
    fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _, _)| k == name)
            .map(|(_, v, _)| v.as_str())
    }

    fn number_field(&self, name: &str) -> Result<u64, RunbookError> {
        let value = self.get(name).ok_or_else(|| {
            invalid(format!(
                "operation {} (line {}): `{}` needs `{name}`",
                self.number,
                self.line,
                self.get("operation").unwrap_or("?")
            ))
        })?;
        value.parse().map_err(|_| {
            invalid(format!(
                "operation {} (line {}): `{name}: {value}` is not a whole number ≥ 0",
                self.number, self.line
            ))
        })
    }
}

/// The entries (dataset names) of a big-ann runbook file.
pub fn entries(text: &str) -> Result<Vec<String>, RunbookError> {
    Ok(lines(text)?
        .into_iter()
        .filter(|l| l.indent == 0)
        .map(|l| l.key.to_string())
        .collect())
}

/// Reads entry `entry` of a big-ann runbook (the only one when `None` and the file has one).
pub fn parse(text: &str, entry: Option<&str>) -> Result<Runbook, RunbookError> {
    let lines = lines(text)?;
    let chosen = choose_entry(&lines, entry)?;
    // The lines of the chosen entry.
    let start = lines
        .iter()
        .position(|l| l.indent == 0 && l.key == chosen)
        .unwrap_or(0);
    let body: Vec<&Line> = lines[start + 1..]
        .iter()
        .take_while(|l| l.indent > 0)
        .collect();
    let mut operations = operations(&body)?;
    operations.sort_by_key(|o| o.number);
    if let Some(w) = operations.windows(2).find(|w| w[0].number == w[1].number) {
        return Err(invalid(format!("operation {} appears twice", w[0].number)));
    }
    let mut steps = Vec::with_capacity(operations.len());
    for op in &operations {
        let step = step_of(op, steps.is_empty())?;
        if steps.is_empty() && !matches!(step, StepSpec::Build { .. }) {
            return Err(invalid(format!(
                "operation {} (line {}): the first operation must be an insert",
                op.number, op.line
            )));
        }
        steps.push(step);
    }
    Ok(Runbook {
        name: chosen.to_string(),
        steps,
    })
}

/// The entry `entry` names (case aside), or the file's only one.
fn choose_entry<'a>(lines: &[Line<'a>], entry: Option<&str>) -> Result<&'a str, RunbookError> {
    let names: Vec<&str> = lines
        .iter()
        .filter(|l| l.indent == 0)
        .map(|l| l.key)
        .collect();
    match (entry, names.as_slice()) {
        (Some(e), _) => names
            .iter()
            .copied()
            .find(|n| n.eq_ignore_ascii_case(e))
            .ok_or_else(|| {
                invalid(format!(
                    "no entry `{e}` in this big-ann runbook; it has: {}",
                    names.join(", ")
                ))
            }),
        (None, [only]) => Ok(*only),
        (None, []) => Err(invalid("the big-ann runbook has no entries".into())),
        (None, many) => Err(invalid(format!(
            "the big-ann runbook has {} entries ({}): name one as FILE.yaml#ENTRY",
            many.len(),
            many.join(", ")
        ))),
    }
}

/// The numbered operations of an entry's lines, in file order.
fn operations(body: &[&Line]) -> Result<Vec<Operation>, RunbookError> {
    let step_indent = body.first().map_or(2, |l| l.indent);
    let mut operations: Vec<Operation> = Vec::new();
    for line in body {
        if line.indent == step_indent {
            if let Ok(number) = line.key.parse::<u64>() {
                if !line.value.is_empty() {
                    return Err(invalid(format!(
                        "line {}: operation {number} must be a mapping (operation, start, end)",
                        line.number
                    )));
                }
                operations.push(Operation {
                    number,
                    line: line.number,
                    fields: Vec::new(),
                });
            } else if !matches!(line.key, "max_pts" | "gt_url") {
                return Err(invalid(format!(
                    "line {}: unknown key `{}` (expected max_pts, gt_url or a step number)",
                    line.number, line.key
                )));
            }
        } else if line.indent > step_indent {
            let op = operations.last_mut().ok_or_else(|| {
                invalid(format!(
                    "line {}: a field outside any operation",
                    line.number
                ))
            })?;
            op.fields
                .push((line.key.to_string(), line.value.clone(), line.number));
        } else {
            return Err(invalid(format!(
                "line {}: indentation does not match the entry's",
                line.number
            )));
        }
    }
    Ok(operations)
}

/// The step an operation maps to; the first insert (`first`: no step yet) is the build.
fn step_of(op: &Operation, first: bool) -> Result<StepSpec, RunbookError> {
    let row = |v: u64| Position::Row(v);
    let kind = op.get("operation").ok_or_else(|| {
        invalid(format!(
            "operation {} (line {}) has no `operation`",
            op.number, op.line
        ))
    })?;
    Ok(match kind {
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
                    "operation {} (line {}): replace of {}..{} tags with {}..{} ids: the \
                     ranges must have the same length",
                    op.number, op.line, tags.0, tags.1, ids.0, ids.1
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
                "operation {} (line {}): unknown operation `{other}` (big-ann's are \
                 insert, delete, replace and search)",
                op.number, op.line
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
