//! Rows and queries in Milvus' column form: the fields of an insert, the placeholder group
//! and parameters of a search, and the hits of its answer.

use super::proto::{
    self, FieldData, FloatArray, LongArray, PlaceholderGroup, PlaceholderValue, ScalarField,
    SearchRequest, SearchResultData, StringArray, VectorField, data_type, field_data, ids,
    kv, scalar_field, vector_field,
};
use super::*;
use crate::filter::{FieldKind, Value as AttrValue};

/// The primary key field and the vector field of every collection the adapter creates.
pub(super) const ID_FIELD: &str = "id";
pub(super) const VECTOR_FIELD: &str = "vector";

/// Milvus keys are signed 64-bit: a larger id is refused, not wrapped.
pub(super) fn key_of(operation: &str, id: PointId) -> EngineResult<i64> {
    i64::try_from(id).map_err(|_| {
        EngineError::op(
            ENGINE,
            operation,
            format!("point id {id} is beyond Milvus' INT64 primary key"),
        )
    })
}

/// The columns of `ids` with their vectors and, when the collection has them, attributes.
pub(super) fn columns(
    operation: &str,
    coll: &Collection,
    ids: &[PointId],
    vectors: &[f32],
) -> EngineResult<Vec<FieldData>> {
    rows::check(ENGINE, operation, coll.dim, ids.len(), vectors.len())?;
    let keys = ids
        .iter()
        .map(|id| key_of(operation, *id))
        .collect::<EngineResult<Vec<i64>>>()?;
    let mut fields = vec![
        FieldData {
            r#type: data_type::INT64,
            field_name: ID_FIELD.into(),
            field: Some(field_data::Field::Scalars(ScalarField {
                data: Some(scalar_field::Data::LongData(LongArray { data: keys })),
            })),
        },
        FieldData {
            r#type: data_type::FLOAT_VECTOR,
            field_name: VECTOR_FIELD.into(),
            field: Some(field_data::Field::Vectors(VectorField {
                dim: coll.dim as i64,
                data: Some(vector_field::Data::FloatVector(FloatArray {
                    data: vectors.to_vec(),
                })),
            })),
        },
    ];
    if let Some(attributes) = &coll.attributes {
        if let Some(id) = ids.iter().find(|id| !attributes.covers(**id)) {
            return Err(EngineError::op(
                ENGINE,
                operation,
                format!("point {id} has no attributes"),
            ));
        }
        for (f, field) in attributes.fields().iter().enumerate() {
            let values = ids.iter().map(|id| attributes.value(f, *id));
            let (ty, data) = match field.kind {
                FieldKind::Keyword => (
                    data_type::VAR_CHAR,
                    scalar_field::Data::StringData(StringArray {
                        data: values
                            .map(|v| match v {
                                AttrValue::Keyword(s) => s.to_string(),
                                AttrValue::Integer(x) => x.to_string(),
                            })
                            .collect(),
                    }),
                ),
                FieldKind::Integer => (
                    data_type::INT64,
                    scalar_field::Data::LongData(LongArray {
                        data: values
                            .map(|v| match v {
                                AttrValue::Integer(x) => x,
                                AttrValue::Keyword(_) => 0,
                            })
                            .collect(),
                    }),
                ),
            };
            fields.push(FieldData {
                r#type: ty,
                field_name: field.name.clone(),
                field: Some(field_data::Field::Scalars(ScalarField { data: Some(data) })),
            });
        }
    }
    Ok(fields)
}

/// A search of `queries` (rows of the collection's dimension) for the `k` nearest, under
/// `expr` (empty: no filter), with the search parameters `params`.
pub(super) fn search_request(
    coll: &Collection,
    queries: &[f32],
    k: usize,
    expr: String,
    params: &Map<String, Json>,
) -> SearchRequest {
    let values: Vec<Vec<u8>> = queries
        .chunks_exact(coll.dim)
        .map(|q| q.iter().flat_map(|x| x.to_le_bytes()).collect())
        .collect();
    let nq = values.len() as i64;
    let group = PlaceholderGroup {
        placeholders: vec![PlaceholderValue {
            tag: "$0".into(),
            r#type: proto::PLACEHOLDER_FLOAT_VECTOR,
            values,
        }],
    };
    SearchRequest {
        collection_name: coll.name.clone(),
        dsl: expr,
        placeholder_group: prost::Message::encode_to_vec(&group),
        dsl_type: proto::DSL_BOOL_EXPR,
        search_params: vec![
            kv("anns_field", VECTOR_FIELD),
            kv("topk", k.to_string()),
            kv("metric_type", coll.build.metric),
            kv("params", Json::Object(params.clone()).to_string()),
            kv("round_decimal", "-1"),
        ],
        nq,
        // The collection's level (Strong unless the build parameters said otherwise).
        use_default_consistency: true,
    }
}

/// The hits of each of `nq` queries, best first, as Milvus ranks them.
pub(super) fn hits(
    operation: &str,
    data: Option<SearchResultData>,
    nq: usize,
) -> EngineResult<Vec<Vec<Neighbor>>> {
    let bad = |m: String| EngineError::op(ENGINE, operation, m);
    let Some(data) = data else {
        // No result data: no query found anything (an empty collection).
        return Ok(vec![Vec::new(); nq]);
    };
    let keys = match data.ids.and_then(|i| i.id_field) {
        Some(ids::IdField::IntId(a)) => a.data,
        None => Vec::new(),
    };
    if keys.len() != data.scores.len() {
        return Err(bad(format!(
            "the answer has {} ids and {} scores",
            keys.len(),
            data.scores.len()
        )));
    }
    let topks: Vec<usize> = if data.topks.is_empty() && keys.is_empty() {
        vec![0; nq]
    } else {
        data.topks.iter().map(|t| (*t).max(0) as usize).collect()
    };
    if topks.len() != nq || topks.iter().sum::<usize>() != keys.len() {
        return Err(bad(format!(
            "the answer has {} result lists holding {} hits for {nq} queries and {} ids",
            topks.len(),
            topks.iter().sum::<usize>(),
            keys.len()
        )));
    }
    let mut out = Vec::with_capacity(nq);
    let mut rows = keys.into_iter().zip(data.scores);
    for n in topks {
        let mut list = Vec::with_capacity(n);
        for (key, score) in rows.by_ref().take(n) {
            let id = PointId::try_from(key)
                .map_err(|_| bad(format!("negative id {key} in the answer")))?;
            list.push(Neighbor { id, score });
        }
        out.push(list);
    }
    Ok(out)
}
