//! The shard's points: opening the shard for an operation, writes (upserts, deletes, also
//! from the concurrent writers of a streaming run), query requests and the library's own
//! search loop.

use super::*;
use crate::engine::Query;

impl QdrantEdge {
    /// The adapter as a concrete type (`open` boxes it); benchmarks use it to reach
    /// [`QdrantEdge::library_search_loop`].
    pub fn new(opts: &ConnectOptions) -> QdrantEdge {
        QdrantEdge {
            recreate: opts.recreate,
            batch_size: opts.batch_size_or(DEFAULT_BATCH),
            shard: None,
            search_params: None,
            search: SearchSettings::default(),
        }
    }

    /// The engine's own query loop, with no adapter and no harness around it: one
    /// `EdgeShard::query` per row of `queries`, results dropped. `benches/overhead.rs` compares
    /// ragdbeval's single-client loop with it.
    pub(super) fn library_search_loop(&self, queries: &[f32], k: usize) -> EngineResult<usize> {
        let shard = self.open_shard("search")?;
        let mut returned = 0;
        for q in queries.chunks_exact(shard.dim) {
            let points = shard
                .shard
                .query(self.request(q, k))
                .map_err(|e| EngineError::op(ENGINE, "search", e))?;
            returned += points.len();
        }
        Ok(returned)
    }

    pub(super) fn open_shard(&self, operation: &str) -> EngineResult<&Shard> {
        self.shard.as_ref().ok_or_else(|| {
            EngineError::op(ENGINE, operation, "no collection: create() was not called")
        })
    }

    /// Deletes `ids` in batches of `batch_size` points.
    pub(super) fn delete_points(&self, ids: &[PointId]) -> EngineResult<()> {
        let shard = self.open_shard("delete")?;
        for chunk in ids.chunks(self.batch_size.max(1)) {
            let ids = chunk.iter().map(|&id| QdrantPointId::NumId(id)).collect();
            shard
                .shard
                .update(UpdateOperation::PointOperation(
                    PointOperations::DeletePoints { ids },
                ))
                .map_err(|e| EngineError::op(ENGINE, "delete", e))?;
        }
        Ok(())
    }

    /// Upserts `ids`/`vectors` in batches of `batch_size` points.
    pub(super) fn upsert(&self, operation: &str, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let shard = self.open_shard(operation)?;
        let dim = shard.dim;
        if vectors.len() != ids.len() * dim {
            return Err(EngineError::op(
                ENGINE,
                operation,
                format!(
                    "{} floats for {} ids of dimension {dim}",
                    vectors.len(),
                    ids.len()
                ),
            ));
        }
        let step = self.batch_size.max(1);
        for (id_chunk, vector_chunk) in ids.chunks(step).zip(vectors.chunks(step * dim)) {
            let points = id_chunk
                .iter()
                .zip(vector_chunk.chunks_exact(dim))
                .map(|(&id, vector)| PointStructPersisted {
                    id: QdrantPointId::NumId(id),
                    vector: VectorStructPersisted::Single(vector.to_vec()),
                    // Qdrant's upsert replaces the whole point: the payload goes every time.
                    payload: qfilter::payload(shard.attributes.as_deref(), id).map(Payload),
                })
                .collect();
            shard
                .shard
                .update(UpdateOperation::PointOperation(
                    PointOperations::UpsertPoints(PointInsertOperations::PointsList(points)),
                ))
                .map_err(|e| EngineError::op(ENGINE, operation, e))?;
        }
        Ok(())
    }

    /// One nearest-neighbour request with the current search parameters, restricted to the
    /// points that pass `filter` when given.
    pub(super) fn request_filtered(&self, query: Query<'_>) -> EngineResult<QueryRequest> {
        let mut request = self.request(query.vector, query.k);
        if let Some(filter) = query.filter {
            let filter: Filter = serde_json::from_value(qfilter::filter_json(filter))
                .map_err(|e| EngineError::op(ENGINE, "filtered search", format!("filter: {e}")))?;
            request.filter = Some(filter);
        }
        Ok(request)
    }

    /// One nearest-neighbour request with the current search parameters.
    pub(super) fn request(&self, query: &[f32], k: usize) -> QueryRequest {
        let builder = QueryRequestBuilder::new(k).query(ScoringQuery::Vector(QueryEnum::Nearest(
            NamedQuery {
                query: VectorInternal::Dense(query.to_vec()),
                // The shard has one unnamed vector.
                using: None,
            },
        )));
        let builder = match &self.search_params {
            Some(params) => builder.params(params.clone()),
            None => builder,
        };
        builder.build()
    }
}

impl ConcurrentWrites for QdrantEdge {
    fn upsert(&self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        QdrantEdge::upsert(self, "upsert", ids, vectors)
    }

    fn delete(&self, ids: &[PointId]) -> EngineResult<()> {
        self.delete_points(ids)
    }
}
