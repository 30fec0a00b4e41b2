//! Filtered search in Milvus: each attribute is a scalar field of the collection (`VARCHAR`
//! for keywords, `INT64` for integers) with an `INVERTED` index, and each predicate is a
//! boolean expression (`label == "3" && num >= 10 && num < 20`) that Milvus evaluates into a
//! bitset before the vector index is searched (a pre-filter).

use super::data::{ID_FIELD, VECTOR_FIELD};
use super::*;
use crate::filter::{Attributes, Condition, Predicate};

/// Whether `value` can be written in a Milvus string literal without escapes: quotes,
/// backslashes and control characters are refused rather than escaped.
pub(super) fn literal_ok(value: &str) -> bool {
    !value.chars().any(|c| c == '"' || c == '\\' || c.is_control())
}

/// The attribute names the adapter's own fields take.
pub(super) fn name_ok(name: &str) -> bool {
    name != ID_FIELD && name != VECTOR_FIELD
}

/// Checks that every attribute can be a field and every value a literal.
pub(super) fn check(attributes: &Attributes, predicate: &Predicate) -> EngineResult<()> {
    predicate
        .compile(attributes)
        .map_err(|e| EngineError::bad_param(ENGINE, "filter", e))?;
    if let Some(f) = attributes.fields().iter().find(|f| !name_ok(&f.name)) {
        return Err(EngineError::Unsupported {
            engine: ENGINE.into(),
            what: format!(
                "an attribute named `{}` (the collection's own field has that name)",
                f.name
            ),
        });
    }
    for c in &predicate.all {
        if let Condition::Equals { value, .. } = c
            && !literal_ok(value)
        {
            return Err(EngineError::Unsupported {
                engine: ENGINE.into(),
                what: format!(
                    "the filter value {value:?} (quotes, backslashes and control characters are \
                     not written into a Milvus string literal)"
                ),
            });
        }
    }
    Ok(())
}

/// The boolean expression of `predicate` (empty when it has no condition).
pub(super) fn expr(predicate: &Predicate) -> String {
    let atoms: Vec<String> = predicate
        .all
        .iter()
        .map(|c| match c {
            Condition::Equals { field, value } => format!("{field} == \"{value}\""),
            Condition::Range { field, gte, lt } => format!("({field} >= {gte} && {field} < {lt})"),
        })
        .collect();
    atoms.join(" && ")
}

/// `id in [1, 2, 3]`: the points of a delete.
pub(super) fn ids_in(keys: &[i64]) -> String {
    let list: Vec<String> = keys.iter().map(i64::to_string).collect();
    format!("{ID_FIELD} in [{}]", list.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expressions() {
        let p = Predicate {
            all: vec![
                Condition::equals("label", "3"),
                Condition::range("num", -5..20),
            ],
        };
        assert_eq!(expr(&p), r#"label == "3" && (num >= -5 && num < 20)"#);
        assert_eq!(expr(&Predicate::default()), "");
        assert_eq!(ids_in(&[1, 22]), "id in [1, 22]");
        assert!(literal_ok("a b-c"));
        assert!(!literal_ok("a\"b") && !literal_ok("a\\b") && !literal_ok("a\nb"));
        assert!(!name_ok("id") && !name_ok("vector") && name_ok("label"));
    }
}
