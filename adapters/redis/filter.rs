//! Filtered search in Redis vector sets: each element's attributes as its JSON attribute
//! (`VADD … SETATTR '{"label":"3","num":5}'`), each predicate as a `VSIM … FILTER`
//! expression (`.label == "3" and .num >= 10 and .num < 20`). Redis checks the filter on the
//! candidates of its graph search; `FILTER-EF` (search parameter `filter_ef`) bounds how many
//! candidates it examines for a query (Redis' default: COUNT × 100), so a very selective
//! filter can leave an answer short.

use serde_json::Value;

use crate::filter::{Attributes, Condition, Predicate};
use crate::types::PointId;

/// The `SETATTR` JSON of element `id` (`None` beyond the table).
pub(super) fn attributes_json(attributes: &Attributes, id: PointId) -> Option<String> {
    attributes.covers(id).then(|| {
        Value::Object(crate::adapters::support::filter::json_fields(attributes, id)).to_string()
    })
}

/// Whether a keyword value can be written as a filter string literal: the expression
/// language has no escapes documented, so values with quotes or backslashes are refused
/// before the build rather than risked.
pub(super) fn literal_ok(value: &str) -> bool {
    !value.contains(['"', '\\', '\n', '\r'])
}

/// The `FILTER` expression of a predicate.
pub(super) fn expression(predicate: &Predicate) -> String {
    let parts: Vec<String> = predicate
        .all
        .iter()
        .map(|c| match c {
            Condition::Equals { field, value } => format!(".{field} == \"{value}\""),
            Condition::Range { field, gte, lt } => format!(".{field} >= {gte} and .{field} < {lt}"),
        })
        .collect();
    if parts.is_empty() {
        "1".into()
    } else {
        parts.join(" and ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn predicates_become_filter_expressions() {
        let p = Predicate {
            all: vec![
                Condition::equals("label", "3"),
                Condition::range("num", -2..20),
            ],
        };
        assert_eq!(
            expression(&p),
            ".label == \"3\" and .num >= -2 and .num < 20"
        );
        assert!(literal_ok("shoes"));
        assert!(!literal_ok("say \"hi\""));
        assert!(!literal_ok("a\\b"));
        let mut a = Attributes::new(1);
        a.push(
            "label",
            crate::filter::Column::Keyword {
                dictionary: vec!["x\"y".into()],
                codes: vec![0],
            },
        )
        .unwrap();
        assert_eq!(attributes_json(&a, 0).unwrap(), "{\"label\":\"x\\\"y\"}");
    }
}
