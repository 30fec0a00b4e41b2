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
    pub(super) dim: usize,
    pub(super) settings: BuildSettings,
    /// Points the collection must hold after the bulk load; `None` once upserts or deletes
    /// make it unknowable without tracking every id.
    pub(super) expected_points: Option<u64>,
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
    pub(super) ids: Vec<Vec<String>>,
    #[serde(default)]
    pub(super) distances: Option<Vec<Vec<Option<f32>>>>,
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
