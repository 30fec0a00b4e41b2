//! Filtered search in Typesense: each point's attributes as fields of its document (`string`
//! and `int64`), each predicate as a `filter_by` expression. Typesense 0.24 evaluates
//! `filter_by` first and walks the HNSW graph with a functor that admits only the passing
//! documents (a filtered graph search); with `flat_search_cutoff` set, a filter that passes
//! fewer documents than that is scanned exactly instead.

use serde_json::{Value, json};

use crate::filter::{Attributes, Condition, FieldKind, Predicate};

use super::wire::VECTOR_FIELD;

/// The schema fields of the attributes (`string` for keywords, `int64` for integers).
pub(super) fn schema_fields(attributes: &Attributes) -> Vec<Value> {
    attributes
        .fields()
        .iter()
        .map(|f| {
            let kind = match f.kind {
                FieldKind::Keyword => "string",
                FieldKind::Integer => "int64",
            };
            json!({ "name": f.name, "type": kind })
        })
        .collect()
}

/// Why the attributes cannot be fields of a Typesense document, if they cannot.
pub(super) fn check_fields(attributes: &Attributes) -> Result<(), String> {
    match attributes.fields().iter().find(|f| f.name == VECTOR_FIELD || f.name == "id") {
        Some(f) => Err(format!(
            "attribute `{}` clashes with a field ragdbeval's Typesense documents use",
            f.name
        )),
        None => Ok(()),
    }
}

/// The `filter_by` expression of `predicate`: `label:=`3`` for a keyword, `n:>=10 && n:<20`
/// for a range, joined by `&&`; `None` for the empty predicate (everything passes). A keyword
/// goes between backticks, which Typesense reads verbatim, so one holding a backtick cannot
/// be written: [`check`] refuses it before the run.
pub(super) fn filter_by(predicate: &Predicate) -> Option<String> {
    let atoms: Vec<String> = predicate
        .all
        .iter()
        .map(|c| match c {
            Condition::Equals { field, value } => format!("{field}:=`{value}`"),
            Condition::Range { field, gte, lt } => format!("{field}:>={gte} && {field}:<{lt}"),
        })
        .collect();
    (!atoms.is_empty()).then(|| atoms.join(" && "))
}

/// Why `predicate` cannot be written as a `filter_by`, if it cannot.
pub(super) fn check(predicate: &Predicate) -> Result<(), String> {
    for c in &predicate.all {
        if let Condition::Equals { field, value } = c
            && value.contains('`')
        {
            return Err(format!(
                "the value {value:?} of `{field}` holds a backtick, which a Typesense filter \
                 cannot quote"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_join_with_and_and_keywords_are_quoted() {
        let label = Condition::equals("label", "a b");
        let range = Condition::range("num", -10..20);
        assert_eq!(filter_by(&Predicate::default()), None);
        assert_eq!(
            filter_by(&Predicate {
                all: vec![label, range]
            })
            .as_deref(),
            Some("label:=`a b` && num:>=-10 && num:<20")
        );
        let tick = Predicate::from(Condition::equals("label", "a`b"));
        assert!(check(&tick).is_err());
    }
}
