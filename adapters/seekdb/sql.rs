//! The statements: table, rows, search, filters. Every statement with values is prepared
//! (the client keeps each connection's prepared statements by their text), its values sent
//! as parameters: a vector travels as seekdb's text form `[x,y,...]`.

use std::fmt::Write as _;

use mysql::Value as Sql;

use super::ENGINE;
use super::params::{BuildSettings, distance_function};
use crate::distance::Distance;
use crate::engine::{EngineError, EngineResult, PointId};
use crate::filter::{Attributes, Condition, FieldKind, Predicate, Value as AttrValue};

/// The collection's table, its vector index and its statements.
pub(super) struct Table {
    pub name: String,
    pub index: String,
    pub dim: usize,
    pub distance: Distance,
    pub build: BuildSettings,
    pub attributes: Option<std::sync::Arc<Attributes>>,
    /// The unfiltered search, written once: a search sends it as it is.
    pub knn_sql: String,
}

/// `name` as a quoted identifier.
pub(super) fn quote(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// The vector's text form, `[0.5,1.0,-2.25]`: ryu's shortest round-trip digits (the server
/// parses back the same `f32`), several times faster than `Display` for floats.
pub(super) fn vector_text(vector: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(vector.len() * 12 + 2);
    let mut digits = ryu::Buffer::new();
    out.push(b'[');
    for (i, x) in vector.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(digits.format(*x).as_bytes());
    }
    out.push(b']');
    out
}

impl Table {
    /// `CREATE TABLE`: id, the vector, one column per attribute.
    pub fn create_sql(&self) -> String {
        let mut columns = format!("id BIGINT PRIMARY KEY, embedding VECTOR({})", self.dim);
        for field in self.attributes.iter().flat_map(|a| a.fields()) {
            let ty = match field.kind {
                FieldKind::Keyword => "VARCHAR(1024)",
                FieldKind::Integer => "BIGINT",
            };
            let _ = write!(columns, ", {} {ty} NOT NULL", quote(&field.name));
        }
        format!("CREATE TABLE {} ({columns})", quote(&self.name))
    }

    /// One B-tree index per attribute, for the filters.
    pub fn attribute_index_sql(&self) -> Vec<String> {
        self.attributes
            .iter()
            .flat_map(|a| a.fields())
            .enumerate()
            .map(|(i, f)| {
                format!(
                    "CREATE INDEX {} ON {} ({})",
                    quote(&format!("a{i}")),
                    quote(&self.name),
                    quote(&f.name)
                )
            })
            .collect()
    }

    pub fn create_index_sql(&self) -> String {
        self.build
            .create_index_sql(&quote(&self.name), &quote(&self.index), self.distance)
    }

    /// `INSERT` (or `REPLACE`) of `rows` rows.
    pub fn write_sql(&self, verb: &str, rows: usize) -> String {
        let columns = 2 + self.attributes.as_ref().map_or(0, |a| a.fields().len());
        let mut names = String::from("id, embedding");
        for f in self.attributes.iter().flat_map(|a| a.fields()) {
            let _ = write!(names, ", {}", quote(&f.name));
        }
        let one = format!("({})", vec!["?"; columns].join(", "));
        let values = vec![one.as_str(); rows].join(", ");
        format!(
            "{verb} INTO {} ({names}) VALUES {values}",
            quote(&self.name)
        )
    }

    /// The parameters of [`Table::write_sql`] for `ids` and their `vectors`.
    pub fn write_params(
        &self,
        operation: &str,
        ids: &[PointId],
        vectors: &[f32],
    ) -> EngineResult<Vec<Sql>> {
        let mut out = Vec::with_capacity(ids.len() * 4);
        for (id, vector) in ids.iter().zip(vectors.chunks_exact(self.dim)) {
            out.push(Sql::Int(sql_id(*id)?));
            out.push(Sql::Bytes(vector_text(vector)));
            if let Some(attributes) = &self.attributes {
                if !attributes.covers(*id) {
                    return Err(EngineError::op(
                        ENGINE,
                        operation,
                        format!("point {id} has no attributes"),
                    ));
                }
                for (_, value) in attributes.values_of(*id) {
                    out.push(match value {
                        AttrValue::Keyword(s) => Sql::Bytes(s.as_bytes().to_vec()),
                        AttrValue::Integer(x) => Sql::Int(x),
                    });
                }
            }
        }
        Ok(out)
    }

    /// `DELETE` of `n` ids.
    pub fn delete_sql(&self, n: usize) -> String {
        format!(
            "DELETE FROM {} WHERE id IN ({})",
            quote(&self.name),
            vec!["?"; n].join(", ")
        )
    }

    /// The search, restricted by `where_sql` when there is one: the query vector is the
    /// first parameter, `k` the last.
    pub fn search_sql(&self, where_sql: Option<&str>) -> String {
        let f = distance_function(self.distance);
        let filter = where_sql.map(|w| format!(" WHERE {w}")).unwrap_or_default();
        format!(
            "SELECT id, {f}(embedding, ?) AS d FROM {}{filter} ORDER BY d APPROXIMATE LIMIT ?",
            quote(&self.name)
        )
    }
}

/// A point id as the table's BIGINT.
pub(super) fn sql_id(id: PointId) -> EngineResult<i64> {
    i64::try_from(id)
        .map_err(|_| EngineError::bad_param(ENGINE, "id", format!("{id} is beyond BIGINT")))
}

/// `label = ? AND num >= ? AND num < ?` and its values, in order.
pub(super) fn where_clause(predicate: &Predicate) -> (String, Vec<Sql>) {
    let mut sql = Vec::new();
    let mut values = Vec::new();
    for c in &predicate.all {
        match c {
            Condition::Equals { field, value } => {
                sql.push(format!("{} = ?", quote(field)));
                values.push(Sql::Bytes(value.as_bytes().to_vec()));
            }
            Condition::Range { field, gte, lt } => {
                let col = quote(field);
                sql.push(format!("{col} >= ? AND {col} < ?"));
                values.push(Sql::Int(*gte));
                values.push(Sql::Int(*lt));
            }
        }
    }
    if sql.is_empty() {
        sql.push("TRUE".into());
    }
    (sql.join(" AND "), values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_travel_as_text_that_parses_back_exactly() {
        let v = [0.1f32, -2.5, 1e-7, 3.0];
        let text = String::from_utf8(vector_text(&v)).unwrap();
        assert_eq!(text, "[0.1,-2.5,1e-7,3.0]");
        let back: Vec<f32> = text[1..text.len() - 1]
            .split(',')
            .map(|x| x.parse().unwrap())
            .collect();
        assert_eq!(back, v);
    }

    #[test]
    fn predicates_become_parameterised_conditions() {
        let p = Predicate {
            all: vec![
                Condition::equals("label", "a'b"),
                Condition::range("num", 3..9),
            ],
        };
        let (sql, values) = where_clause(&p);
        assert_eq!(sql, "`label` = ? AND `num` >= ? AND `num` < ?");
        assert_eq!(
            values,
            vec![Sql::Bytes(b"a'b".to_vec()), Sql::Int(3), Sql::Int(9)]
        );
        assert_eq!(quote("a`b"), "`a``b`");
    }
}
