//! Request and answer bodies of Chroma's API v2, and the HNSW settings a collection is created with.

use super::*;

/// Parameters fixed when the collection is created.
#[derive(Debug, Clone, Serialize)]
pub(super) struct BuildSettings {
    pub(super) space: &'static str,
    pub(super) max_neighbors: Option<u64>,
    pub(super) ef_construction: Option<u64>,
    pub(super) ef_search: u64,
    pub(super) batch_size: Option<u64>,
    pub(super) sync_threshold: Option<u64>,
    pub(super) num_threads: Option<u64>,
}

impl BuildSettings {
    /// The `configuration.hnsw` object sent at creation: unset values are left to the server.
    pub(super) fn hnsw_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("space".into(), json!(self.space));
        m.insert("ef_search".into(), json!(self.ef_search));
        let optional = [
            ("max_neighbors", self.max_neighbors),
            ("ef_construction", self.ef_construction),
            ("batch_size", self.batch_size),
            ("sync_threshold", self.sync_threshold),
            ("num_threads", self.num_threads),
        ];
        for (key, value) in optional {
            if let Some(v) = value {
                m.insert(key.into(), json!(v));
            }
        }
        Value::Object(m)
    }
}

/// The collection under test.
pub(super) struct Collection {
    pub(super) name: String,
    pub(super) id: String,
    /// The whole URL of the collection's `query` endpoint.
    pub(super) query_url: String,
    pub(super) dim: usize,
    pub(super) settings: BuildSettings,
    /// Points the collection must hold after the bulk load (upserts and deletes make it
    /// unknowable without tracking every id: see `ChromaEngine::written_concurrently`).
    pub(super) expected_points: u64,
    /// The points' attributes, written as metadata, when the run searches with filters.
    pub(super) attributes: Option<std::sync::Arc<crate::filter::Attributes>>,
}

/// Chroma's collection model (the fields used here).
#[derive(Deserialize)]
pub(super) struct CollectionModel {
    pub(super) id: String,
    #[serde(default)]
    pub(super) configuration_json: Value,
    #[serde(default)]
    pub(super) schema: Value,
}

/// `/api/v2/pre-flight-checks`.
#[derive(Deserialize)]
pub(super) struct PreFlight {
    pub(super) max_batch_size: Option<usize>,
    #[serde(default)]
    pub(super) supports_base64_encoding: bool,
}

/// `add` / `upsert` body. Embeddings go as base64 of little-endian f32 when the server
/// supports it, like the official client: less to encode and parse than decimal text.
#[derive(Serialize)]
pub(super) struct RecordsBody {
    pub(super) ids: Vec<String>,
    pub(super) embeddings: Embeddings,
    /// Each point's attributes (filtered runs only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) metadatas: Option<Vec<Map<String, Value>>>,
}

#[derive(Serialize)]
#[serde(untagged)]
pub(super) enum Embeddings {
    Base64(Vec<String>),
    Floats(Vec<Vec<f32>>),
}

#[derive(Serialize)]
pub(super) struct DeleteBody {
    pub(super) ids: Vec<String>,
}

#[derive(Serialize)]
pub(super) struct QueryBody<'a> {
    pub(super) query_embeddings: Vec<&'a [f32]>,
    pub(super) n_results: usize,
    pub(super) include: [&'static str; 1],
    /// The metadata filter every query of the call is restricted by.
    #[serde(rename = "where", skip_serializing_if = "Option::is_none")]
    pub(super) filter: Option<&'a Value>,
}

#[derive(Deserialize)]
pub(super) struct QueryAnswer {
    pub(super) ids: Vec<Vec<AnswerId>>,
    #[serde(default)]
    pub(super) distances: Option<Vec<Vec<Option<f32>>>>,
}

/// One id of a query answer, read as a ragdbeval point id while the answer is parsed: a
/// `String` per neighbour was the largest cost of reading an answer in a profile of the
/// Chroma client bench. An id that is no point id is kept for the error message.
pub(super) enum AnswerId {
    Point(PointId),
    Foreign(String),
}

impl<'de> Deserialize<'de> for AnswerId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdText;
        impl serde::de::Visitor<'_> for IdText {
            type Value = AnswerId;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string id")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<AnswerId, E> {
                Ok(match text.parse::<PointId>() {
                    Ok(id) => AnswerId::Point(id),
                    Err(_) => AnswerId::Foreign(text.to_owned()),
                })
            }
        }
        deserializer.deserialize_str(IdText)
    }
}

/// Chroma's name for a metric.
pub(super) fn space_of(distance: Distance) -> &'static str {
    match distance {
        Distance::Euclidean => "l2",
        Distance::Angular => "cosine",
        Distance::Dot => "ip",
    }
}

/// The effective HNSW settings the server reports: the schema holds all of them (with
/// `batch_size` and `num_threads`), `configuration_json` the older subset.
pub(super) fn effective_hnsw(model: &CollectionModel) -> Value {
    let from_schema = model
        .schema
        .pointer("/keys/#embedding/float_list/vector_index/config/hnsw")
        .cloned();
    from_schema
        .or_else(|| model.configuration_json.get("hnsw").cloned())
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answer_ids_are_read_as_point_ids_and_foreign_ones_kept() {
        let text = r#"{"ids": [["17", "0", "x-1"], []], "embeddings": null,
            "distances": [[0.5, 1.25, null], []], "included": ["distances"]}"#;
        let answer: QueryAnswer = serde_json::from_str(text).unwrap();
        let ids: Vec<Vec<String>> = answer
            .ids
            .iter()
            .map(|row| {
                row.iter()
                    .map(|id| match id {
                        AnswerId::Point(p) => format!("point {p}"),
                        AnswerId::Foreign(s) => format!("foreign {s}"),
                    })
                    .collect()
            })
            .collect();
        assert_eq!(ids, [vec!["point 17", "point 0", "foreign x-1"], vec![]]);
        assert_eq!(
            answer.distances,
            Some(vec![vec![Some(0.5), Some(1.25), None], vec![]])
        );
        // An id that is not a string is a malformed answer, not a foreign id.
        assert!(serde_json::from_str::<QueryAnswer>(r#"{"ids": [[17]]}"#).is_err());
    }
}
