//! Filtered search in Chroma: each point's attributes as its metadata (strings and
//! integers), each predicate as a `where` filter. Chroma evaluates `where` on its metadata
//! segment first and hands the HNSW search the ids that pass (a pre-filter); when few pass it
//! answers by brute force over them.

use serde_json::{Value, json};

use crate::filter::{Condition, Predicate};

/// The `where` filter: `{"label": {"$eq": "3"}}` for one condition, `{"$and": [...]}` for
/// more (a range is two: `$gte` and `$lt`). Chroma refuses `$and` with fewer than two
/// operands, so a single condition is never wrapped.
pub(super) fn where_json(predicate: &Predicate) -> Value {
    let mut atoms: Vec<Value> = Vec::new();
    for c in &predicate.all {
        match c {
            Condition::Equals { field, value } => atoms.push(json!({ field: { "$eq": value } })),
            Condition::Range { field, gte, lt } => {
                atoms.push(json!({ field: { "$gte": gte } }));
                atoms.push(json!({ field: { "$lt": lt } }));
            }
        }
    }
    match atoms.len() {
        0 => json!({}),
        1 => atoms.remove(0),
        _ => json!({ "$and": atoms }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_condition_is_bare_and_more_are_a_conjunction() {
        let label = Condition::equals("label", "3");
        let range = Condition::range("num", 10..20);
        assert_eq!(
            where_json(&Predicate {
                all: vec![label.clone()]
            }),
            json!({"label": {"$eq": "3"}})
        );
        assert_eq!(
            where_json(&Predicate {
                all: vec![label, range]
            }),
            json!({"$and": [
                {"label": {"$eq": "3"}},
                {"num": {"$gte": 10}},
                {"num": {"$lt": 20}},
            ]})
        );
    }
}
