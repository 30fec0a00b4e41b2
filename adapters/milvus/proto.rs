//! The messages of the Milvus gRPC API (`milvus.proto.milvus.MilvusService`) this adapter
//! sends and reads, written out with `prost` derives: the field numbers and types are those of
//! milvus-proto's `milvus.proto`, `common.proto` and `schema.proto`. Only the fields the
//! adapter uses are declared; prost skips the others when it decodes an answer, and a field
//! left out of a request is absent on the wire, as its default is.
//!
//! Enumerations are carried as their `int32` numbers (the same varint on the wire); the
//! values used are the constants below.

#![allow(missing_docs)]

use prost::Message;

/// `common.DataType`.
pub mod data_type {
    pub const INT64: i32 = 5;
    pub const VAR_CHAR: i32 = 21;
    pub const FLOAT_VECTOR: i32 = 101;
}

/// `common.DslType.BoolExprV1`: the `dsl` of a search is a boolean expression.
pub const DSL_BOOL_EXPR: i32 = 1;
/// `common.PlaceholderType.FloatVector`.
pub const PLACEHOLDER_FLOAT_VECTOR: i32 = 101;
/// `common.LoadState.LoadStateLoaded`.
pub const LOAD_STATE_LOADED: i32 = 3;
/// `common.IndexState`: `Finished` and `Failed`.
pub const INDEX_FINISHED: i32 = 3;
pub const INDEX_FAILED: i32 = 4;

#[derive(Clone, PartialEq, Message)]
pub struct Status {
    /// Deprecated `ErrorCode`; older servers set only this one.
    #[prost(int32, tag = "1")]
    pub error_code: i32,
    #[prost(string, tag = "2")]
    pub reason: String,
    #[prost(int32, tag = "3")]
    pub code: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct KeyValuePair {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `key = value` as a [`KeyValuePair`].
pub fn kv(key: &str, value: impl Into<String>) -> KeyValuePair {
    KeyValuePair {
        key: key.into(),
        value: value.into(),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct FieldSchema {
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(bool, tag = "3")]
    pub is_primary_key: bool,
    #[prost(int32, tag = "5")]
    pub data_type: i32,
    #[prost(message, repeated, tag = "6")]
    pub type_params: Vec<KeyValuePair>,
    #[prost(bool, tag = "8")]
    pub auto_id: bool,
}

#[derive(Clone, PartialEq, Message)]
pub struct CollectionSchema {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(message, repeated, tag = "4")]
    pub fields: Vec<FieldSchema>,
}

#[derive(Clone, PartialEq, Message)]
pub struct CreateCollectionRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    /// A serialised [`CollectionSchema`].
    #[prost(bytes = "vec", tag = "4")]
    pub schema: Vec<u8>,
    #[prost(int32, tag = "5")]
    pub shards_num: i32,
    #[prost(int32, tag = "6")]
    pub consistency_level: i32,
}

/// The request of DropCollection, HasCollection, LoadCollection and GetCollectionStatistics:
/// the collection's name is field 3 in each.
#[derive(Clone, PartialEq, Message)]
pub struct CollectionRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct BoolResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(bool, tag = "2")]
    pub value: bool,
}

/// An answer read for its status only.
#[derive(Clone, PartialEq, Message)]
pub struct StatusResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
}

#[derive(Clone, PartialEq, Message)]
pub struct GetLoadStateRequest {
    #[prost(string, tag = "2")]
    pub collection_name: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct GetLoadStateResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(int32, tag = "2")]
    pub state: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct FlushRequest {
    #[prost(string, repeated, tag = "3")]
    pub collection_names: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct CreateIndexRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    #[prost(string, tag = "4")]
    pub field_name: String,
    #[prost(message, repeated, tag = "5")]
    pub extra_params: Vec<KeyValuePair>,
    #[prost(string, tag = "6")]
    pub index_name: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct DescribeIndexRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    #[prost(string, tag = "4")]
    pub field_name: String,
    #[prost(string, tag = "5")]
    pub index_name: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct IndexDescription {
    #[prost(string, tag = "1")]
    pub index_name: String,
    #[prost(message, repeated, tag = "3")]
    pub params: Vec<KeyValuePair>,
    #[prost(string, tag = "4")]
    pub field_name: String,
    #[prost(int64, tag = "5")]
    pub indexed_rows: i64,
    #[prost(int64, tag = "6")]
    pub total_rows: i64,
    #[prost(int32, tag = "7")]
    pub state: i32,
    #[prost(string, tag = "8")]
    pub index_state_fail_reason: String,
    #[prost(int64, tag = "9")]
    pub pending_index_rows: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct DescribeIndexResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, repeated, tag = "2")]
    pub index_descriptions: Vec<IndexDescription>,
}

#[derive(Clone, PartialEq, Message)]
pub struct LongArray {
    #[prost(int64, repeated, tag = "1")]
    pub data: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct FloatArray {
    #[prost(float, repeated, tag = "1")]
    pub data: Vec<f32>,
}

#[derive(Clone, PartialEq, Message)]
pub struct StringArray {
    #[prost(string, repeated, tag = "1")]
    pub data: Vec<String>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ScalarField {
    #[prost(oneof = "scalar_field::Data", tags = "3, 6")]
    pub data: Option<scalar_field::Data>,
}

pub mod scalar_field {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Data {
        #[prost(message, tag = "3")]
        LongData(super::LongArray),
        #[prost(message, tag = "6")]
        StringData(super::StringArray),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct VectorField {
    #[prost(int64, tag = "1")]
    pub dim: i64,
    #[prost(oneof = "vector_field::Data", tags = "2")]
    pub data: Option<vector_field::Data>,
}

pub mod vector_field {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Data {
        #[prost(message, tag = "2")]
        FloatVector(super::FloatArray),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct FieldData {
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    #[prost(string, tag = "2")]
    pub field_name: String,
    #[prost(oneof = "field_data::Field", tags = "3, 4")]
    pub field: Option<field_data::Field>,
}

pub mod field_data {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum Field {
        #[prost(message, tag = "3")]
        Scalars(super::ScalarField),
        #[prost(message, tag = "4")]
        Vectors(super::VectorField),
    }
}

/// The request of Insert and of Upsert (the fields used have the same numbers in both).
#[derive(Clone, PartialEq, Message)]
pub struct InsertRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    #[prost(message, repeated, tag = "5")]
    pub fields_data: Vec<FieldData>,
    #[prost(uint32, tag = "7")]
    pub num_rows: u32,
}

#[derive(Clone, PartialEq, Message)]
pub struct DeleteRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    #[prost(string, tag = "5")]
    pub expr: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct MutationResult {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(int64, tag = "6")]
    pub insert_cnt: i64,
    #[prost(int64, tag = "7")]
    pub delete_cnt: i64,
    #[prost(int64, tag = "8")]
    pub upsert_cnt: i64,
}

#[derive(Clone, PartialEq, Message)]
pub struct PlaceholderValue {
    #[prost(string, tag = "1")]
    pub tag: String,
    #[prost(int32, tag = "2")]
    pub r#type: i32,
    #[prost(bytes = "vec", repeated, tag = "3")]
    pub values: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
pub struct PlaceholderGroup {
    #[prost(message, repeated, tag = "1")]
    pub placeholders: Vec<PlaceholderValue>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SearchRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    /// The filter expression (empty: none).
    #[prost(string, tag = "5")]
    pub dsl: String,
    /// A serialised [`PlaceholderGroup`] holding the query vectors.
    #[prost(bytes = "vec", tag = "6")]
    pub placeholder_group: Vec<u8>,
    #[prost(int32, tag = "7")]
    pub dsl_type: i32,
    #[prost(message, repeated, tag = "9")]
    pub search_params: Vec<KeyValuePair>,
    #[prost(int64, tag = "12")]
    pub nq: i64,
    #[prost(bool, tag = "15")]
    pub use_default_consistency: bool,
}

#[derive(Clone, PartialEq, Message)]
pub struct Ids {
    #[prost(oneof = "ids::IdField", tags = "1")]
    pub id_field: Option<ids::IdField>,
}

pub mod ids {
    #[derive(Clone, PartialEq, prost::Oneof)]
    pub enum IdField {
        #[prost(message, tag = "1")]
        IntId(super::LongArray),
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct SearchResultData {
    #[prost(int64, tag = "1")]
    pub num_queries: i64,
    #[prost(float, repeated, tag = "4")]
    pub scores: Vec<f32>,
    #[prost(message, optional, tag = "5")]
    pub ids: Option<Ids>,
    #[prost(int64, repeated, tag = "6")]
    pub topks: Vec<i64>,
}

#[derive(Clone, PartialEq, Message)]
pub struct SearchResults {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, optional, tag = "2")]
    pub results: Option<SearchResultData>,
}

#[derive(Clone, PartialEq, Message)]
pub struct QueryRequest {
    #[prost(string, tag = "3")]
    pub collection_name: String,
    #[prost(string, tag = "4")]
    pub expr: String,
    #[prost(string, repeated, tag = "5")]
    pub output_fields: Vec<String>,
    #[prost(bool, tag = "12")]
    pub use_default_consistency: bool,
}

#[derive(Clone, PartialEq, Message)]
pub struct QueryResults {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(message, repeated, tag = "2")]
    pub fields_data: Vec<FieldData>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Empty {}

#[derive(Clone, PartialEq, Message)]
pub struct GetVersionResponse {
    #[prost(message, optional, tag = "1")]
    pub status: Option<Status>,
    #[prost(string, tag = "2")]
    pub version: String,
}
