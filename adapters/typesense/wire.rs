//! Request and answer bodies of Typesense's HTTP API (0.24), and the vector query string.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The document field that holds each point's vector. Attribute fields of filtered runs
/// take the dataset's names; this one is refused as an attribute name.
pub(super) const VECTOR_FIELD: &str = "ragdbeval_vector";

/// Hits Typesense returns per page at most (`PER_PAGE_MAX`).
pub(super) const MAX_PER_PAGE: usize = 250;

/// Searches one `multi_search` request may carry (the server's `limit_multi_searches`
/// default).
pub(super) const MAX_SEARCHES_PER_REQUEST: usize = 50;

/// One document of an import: `{"id": "17", "ragdbeval_vector": [...], attributes...}`.
#[derive(Serialize)]
pub(super) struct Document<'a> {
    pub(super) id: String,
    #[serde(rename = "ragdbeval_vector")]
    pub(super) vector: &'a [f32],
    #[serde(flatten)]
    pub(super) attributes: Map<String, Value>,
}

/// One line of an import's answer (JSON lines, one per document, in order).
#[derive(Deserialize)]
pub(super) struct ImportLine {
    pub(super) success: bool,
    #[serde(default)]
    pub(super) error: Option<String>,
}

/// A `multi_search` body: the parameters every search shares travel in the URL.
#[derive(Serialize)]
pub(super) struct MultiSearch<'a> {
    pub(super) searches: Vec<OneSearch<'a>>,
}

#[derive(Serialize)]
pub(super) struct OneSearch<'a> {
    pub(super) vector_query: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) filter_by: Option<&'a str>,
}

/// A `multi_search` answer: one result per search, each hits or an error of its own (the
/// request itself answers 200 either way).
#[derive(Deserialize)]
pub(super) struct MultiAnswer {
    pub(super) results: Vec<SearchAnswer>,
}

#[derive(Deserialize)]
pub(super) struct SearchAnswer {
    #[serde(default)]
    pub(super) hits: Vec<Hit>,
    #[serde(default)]
    pub(super) error: Option<String>,
    #[serde(default)]
    pub(super) code: Option<u16>,
}

#[derive(Deserialize)]
pub(super) struct Hit {
    pub(super) document: HitDocument,
    #[serde(default)]
    pub(super) vector_distance: Option<f32>,
}

#[derive(Deserialize)]
pub(super) struct HitDocument {
    pub(super) id: String,
}

/// `GET /collections/{name}` (the fields used here).
#[derive(Deserialize)]
pub(super) struct CollectionModel {
    pub(super) num_documents: u64,
    #[serde(default)]
    pub(super) fields: Vec<Value>,
}

/// `GET /debug`.
#[derive(Deserialize)]
pub(super) struct Debug {
    pub(super) version: String,
}

/// The vector query of one search: `ragdbeval_vector:([0.1,-2.5e-3,...], k:64)`, plus
/// `flat_search_cutoff` when set. The floats are written as serde_json writes them (the
/// shortest text that reads back to the same `f32`), which Typesense's parser accepts.
pub(super) fn vector_query(query: &[f32], ef: usize, flat_search_cutoff: Option<u64>) -> String {
    let mut text = String::with_capacity(32 + query.len() * 12);
    text.push_str(VECTOR_FIELD);
    text.push_str(":(");
    // Serialising a slice of finite floats cannot fail; a NaN would become `null`, which
    // the server refuses with its own message.
    text.push_str(&serde_json::to_string(query).unwrap_or_default());
    let _ = write!(text, ", k:{ef}");
    if let Some(cutoff) = flat_search_cutoff {
        let _ = write!(text, ", flat_search_cutoff:{cutoff}");
    }
    text.push(')');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_query_reads_back_every_float() {
        let q = [1.0f32, -2.5e-3, 1e-7, 0.1];
        let text = vector_query(&q, 64, None);
        assert_eq!(text, "ragdbeval_vector:([1.0,-0.0025,1e-7,0.1], k:64)");
        let floats = &text[text.find('[').unwrap() + 1..text.find(']').unwrap()];
        let back: Vec<f32> = floats.split(',').map(|f| f.parse().unwrap()).collect();
        assert_eq!(back, q);
        assert!(vector_query(&q, 10, Some(500)).ends_with(", k:10, flat_search_cutoff:500)"));
    }
}
