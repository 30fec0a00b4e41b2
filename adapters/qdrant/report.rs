//! What the engine reports about itself: its size on disk ([`VectorEngine::footprint`]) and
//! the settings and server facts recorded in the result file ([`VectorEngine::describe`]).

use super::*;

impl QdrantEngine {
    /// [`VectorEngine::footprint`].
    pub(super) fn measure_footprint(&self) -> EngineResult<Footprint> {
        let Some(storage) = &self.server_storage else {
            return Ok(Footprint::unmeasured(
                "needs --server-storage (the server's storage directory on this machine); the \
                 gRPC API reports no sizes",
            ));
        };
        let col = self.collection("footprint")?;
        let dir = storage.join("collections").join(&col.name);
        if !dir.is_dir() {
            return Err(EngineError::op(
                ENGINE,
                "footprint",
                format!(
                    "{} does not exist: --server-storage must be the server's storage directory \
                     (the one holding `collections/`), on this machine",
                    dir.display()
                ),
            ));
        }
        let index = crate::storage::dirs_bytes(
            ENGINE,
            &dir,
            |name| name.starts_with("vector_index"),
            "collections/<name>/**/segments/*/vector_index* (HNSW graph files)",
        )?
        .ok_or_else(|| "no segment has a vector_index directory".to_string());
        let total = crate::storage::dir_bytes(
            ENGINE,
            &dir,
            "collections/<name> directory: segments (vectors, index, payload) + WAL",
        )?;
        Ok(Footprint::new(index, Ok(total)).holding(crate::engine::IndexHolds::GraphOnly))
    }
}

impl QdrantEngine {
    /// [`VectorEngine::describe`].
    pub(super) fn describe_engine(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("server_version".into(), json!(self.server_version));
        out.insert("server_commit".into(), json!(self.server_commit));
        out.insert("url".into(), json!(self.url));
        out.insert("transport".into(), json!("gRPC (qdrant-client)"));
        out.insert("tls".into(), json!(self.endpoint.https));
        out.insert(
            "api_key".into(),
            json!(if self.api_key_set { "set" } else { "none" }),
        );
        out.insert("batch_size".into(), json!(self.batch_size));
        out.insert("upload_parallel".into(), json!(self.upload_parallel));
        out.insert("search_params".into(), self.search.to_json());
        if let Some(col) = &self.collection {
            self.describe_collection(col, &mut out);
            if col.attributes.is_some() {
                out.insert(
                    "filter_strategy".into(),
                    qfilter::strategy(
                        col.settings.full_scan_threshold.kb,
                        col.dim,
                        &col.payload_indexes,
                    ),
                );
            }
        }
        if let Some(dir) = &self.server_storage {
            out.insert("server_storage".into(), json!(dir.display().to_string()));
        }
        out.insert(
            "memory".into(),
            json!({
                "source": "none",
                "note": "qdrant-client's gRPC API exposes no telemetry; server memory comes from \
                         sampling the server process (--server-pid or a local listener)",
            }),
        );
        out
    }
}
