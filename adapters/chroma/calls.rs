//! The engine's requests: connecting, collection lookup, writes in batches and queries.

use crate::adapters::support::http::{self, CallError, Http};
use super::wire::{
    AnswerId, Collection, CollectionModel, Embeddings, PreFlight, QueryAnswer, QueryBody,
    RecordsBody,
};
use super::*;
use crate::adapters::support::rows;
use crate::adapters::support::{process, upload};

/// A failed call as an [`EngineError`] that says what to do.
pub(super) fn engine_error(url: &str, operation: &str, err: CallError) -> EngineError {
    http::engine_error(&LOCAL_SERVER, url, operation, err)
}

impl ChromaEngine {
    pub(super) fn connect(opts: &ConnectOptions) -> EngineResult<ChromaEngine> {
        let (url, started_by_adapter) = http::server_url(&LOCAL_SERVER, opts.url.as_deref())?;
        let http = Http::new(&url, opts.timeout, "x-chroma-token", opts.api_key.clone());

        let _: Value = http
            .json("GET", "/api/v2/heartbeat", None::<&()>)
            .map_err(|e| engine_error(&url, "connect", e))?;
        let api_version: String = http
            .json("GET", "/api/v2/version", None::<&()>)
            .map_err(|e| engine_error(&url, "connect", e))?;
        // Older servers may lack the pre-flight endpoint: then no cap and plain floats.
        let preflight: Option<PreFlight> = http
            .json("GET", "/api/v2/pre-flight-checks", None::<&()>)
            .ok();
        // The credentials are checked by a call that needs them (the heartbeat does not).
        let _: Value = http
            .json(
                "GET",
                "/api/v2/tenants/default_tenant/databases/default_database/collections_count",
                None::<&()>,
            )
            .map_err(|e| engine_error(&url, "connect", e))?;

        let script_state = http::script_state(ENGINE, &url);
        let release = script_state
            .as_ref()
            .and_then(|s| fs::read_to_string(s.join("version")).ok())
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty());

        let max_batch_size = preflight.as_ref().and_then(|p| p.max_batch_size);
        let mut batch_size = opts.batch_size.max(1);
        if let Some(max) = max_batch_size {
            batch_size = batch_size.min(max.max(1));
        }
        Ok(ChromaEngine {
            http,
            url,
            api_version,
            release,
            max_batch_size,
            base64: preflight.is_some_and(|p| p.supports_base64_encoding),
            recreate: opts.recreate,
            batch_size,
            upload_parallel: opts.upload_parallel.max(1),
            server_pid: opts.server_pid,
            server_storage: opts.server_storage.clone(),
            script_state,
            started_by_adapter,
            pending_ef_search: None,
            search_label: "-".into(),
            collection: None,
            written_concurrently: Default::default(),
        })
    }

    pub(super) fn call<T: DeserializeOwned>(
        &self,
        operation: &str,
        method: &str,
        path: &str,
        body: Option<&impl Serialize>,
    ) -> EngineResult<T> {
        self.http
            .json(method, path, body)
            .map_err(|e| engine_error(&self.url, operation, e))
    }

    pub(super) fn collection(&self, operation: &str) -> EngineResult<&Collection> {
        self.collection
            .as_ref()
            .ok_or_else(|| EngineError::op(ENGINE, operation, "no collection: call create first"))
    }

    /// The collection named `name`, or `None` when it does not exist.
    pub(super) fn lookup(
        &self,
        operation: &str,
        name: &str,
    ) -> EngineResult<Option<CollectionModel>> {
        match self.http.json::<CollectionModel>(
            "GET",
            &format!("{COLLECTIONS}/{name}"),
            None::<&()>,
        ) {
            Ok(model) => Ok(Some(model)),
            Err(CallError::Status { code: 404, .. }) => Ok(None),
            Err(e) => Err(engine_error(&self.url, operation, e)),
        }
    }

    /// Drops the collection `name`; a missing one is not an error.
    pub(super) fn drop_collection(&self, operation: &str, name: &str) -> EngineResult<()> {
        match self
            .http
            .send("DELETE", &format!("{COLLECTIONS}/{name}"), None)
        {
            Ok(_) | Err(CallError::Status { code: 404, .. }) => Ok(()),
            Err(e) => Err(engine_error(&self.url, operation, e)),
        }
    }

    pub(super) fn count(&self, operation: &str, id: &str) -> EngineResult<u64> {
        self.call(
            operation,
            "GET",
            &format!("{COLLECTIONS}/{id}/count"),
            None::<&()>,
        )
    }

    pub(super) fn records_body(&self, dim: usize, ids: &[PointId], vectors: &[f32]) -> RecordsBody {
        let embeddings = if self.base64 {
            Embeddings::Base64(
                vectors
                    .chunks_exact(dim)
                    .map(|v| {
                        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                        base64::engine::general_purpose::STANDARD.encode(bytes)
                    })
                    .collect(),
            )
        } else {
            Embeddings::Floats(vectors.chunks_exact(dim).map(<[f32]>::to_vec).collect())
        };
        let metadatas = self
            .collection
            .as_ref()
            .and_then(|c| c.attributes.as_deref())
            .map(|a| {
                ids.iter()
                    .map(|id| crate::adapters::support::filter::json_fields(a, *id))
                    .collect()
            });
        RecordsBody {
            ids: ids.iter().map(u64::to_string).collect(),
            embeddings,
            metadatas,
        }
    }

    /// Sends `add` or `upsert` requests of `batch_size` points, `upload_parallel` at a time.
    pub(super) fn write_records(
        &self,
        operation: &str,
        endpoint: &str,
        ids: &[PointId],
        vectors: &[f32],
    ) -> EngineResult<()> {
        let col = self.collection(operation)?;
        rows::check(ENGINE, operation, col.dim, ids.len(), vectors.len())?;
        if ids.is_empty() {
            return Ok(());
        }
        let dim = col.dim;
        let path = format!("{COLLECTIONS}/{}/{endpoint}", col.id);
        let chunks: Vec<(&[PointId], &[f32])> = ids
            .chunks(self.batch_size)
            .zip(vectors.chunks(self.batch_size * dim))
            .collect();
        let send = |(chunk_ids, chunk): &(&[PointId], &[f32])| -> EngineResult<()> {
            let body = self.records_body(dim, chunk_ids, chunk);
            self.call::<Value>(operation, "POST", &path, Some(&body))
                .map(|_| ())
        };
        upload::in_parallel(ENGINE, operation, self.upload_parallel, &chunks, send)
    }

    /// One `query` call for all rows of `queries`.
    pub(super) fn query(
        &self,
        queries: &[f32],
        k: usize,
        filter: Option<&Value>,
        operation: &str,
    ) -> EngineResult<Vec<Vec<Neighbor>>> {
        let answer = self.query_answer(queries, k, filter, operation)?;
        (0..answer.ids.len())
            .map(|row| {
                let mut out = Vec::with_capacity(k);
                self.answer_row(&answer, row, &mut out, operation)?;
                Ok(out)
            })
            .collect()
    }

    /// The answer of one `query` call for all rows of `queries`: one id list per row
    /// (checked), empty when k or the rows are 0.
    pub(super) fn query_answer(
        &self,
        queries: &[f32],
        k: usize,
        filter: Option<&Value>,
        operation: &str,
    ) -> EngineResult<QueryAnswer> {
        let col = self.collection(operation)?;
        if !queries.len().is_multiple_of(col.dim) {
            return Err(EngineError::op(
                ENGINE,
                operation,
                format!(
                    "query has {} floats, not a multiple of the collection dimension {}",
                    queries.len(),
                    col.dim
                ),
            ));
        }
        let rows = queries.len() / col.dim;
        if k == 0 || rows == 0 {
            return Ok(QueryAnswer {
                ids: (0..rows).map(|_| Vec::new()).collect(),
                distances: None,
            });
        }
        let body = QueryBody {
            query_embeddings: queries.chunks_exact(col.dim).collect(),
            n_results: k,
            include: ["distances"],
            filter,
        };
        let answer: QueryAnswer = self
            .http
            .json_to("POST", &col.query_url, Some(&body))
            .map_err(|e| engine_error(&self.url, operation, e))?;
        if answer.ids.len() != rows {
            return Err(EngineError::op(
                ENGINE,
                operation,
                format!(
                    "asked {rows} queries, got {} result lists",
                    answer.ids.len()
                ),
            ));
        }
        Ok(answer)
    }

    /// Appends row `row` of `answer` to `out` as neighbours; an id ragdbeval did not write
    /// is an error.
    pub(super) fn answer_row(
        &self,
        answer: &QueryAnswer,
        row: usize,
        out: &mut Vec<Neighbor>,
        operation: &str,
    ) -> EngineResult<()> {
        let Some(ids) = answer.ids.get(row) else {
            return Ok(());
        };
        let scores = answer.distances.as_ref().and_then(|d| d.get(row));
        out.reserve(ids.len());
        for (i, id) in ids.iter().enumerate() {
            let id = match id {
                AnswerId::Point(id) => *id,
                AnswerId::Foreign(text) => {
                    let name = self.collection.as_ref().map_or("?", |c| c.name.as_str());
                    return Err(EngineError::op(
                        ENGINE,
                        operation,
                        format!(
                            "id `{text}` is not a ragdbeval point id: collection `{name}` \
                             holds points ragdbeval did not write"
                        ),
                    ));
                }
            };
            let score = scores
                .and_then(|s| s.get(i).copied().flatten())
                .unwrap_or(f32::NAN);
            out.push(Neighbor { id, score });
        }
        Ok(())
    }

    /// The persist directory to measure and where that knowledge came from.
    pub(super) fn storage_dir(&self) -> Option<PathBuf> {
        self.server_storage
            .clone()
            .or_else(|| self.script_state.as_ref().map(|s| s.join("data")))
    }

    /// The live server process of the script's state dir, if any.
    pub(super) fn script_pid(&self) -> Option<u32> {
        let state = self.script_state.as_ref()?;
        let pid = process::pid_from_file(&state.join("pid"))?;
        process::is_alive(pid).then_some(pid)
    }

    pub(super) fn unsupported_ef_change(&self, current: u64, wanted: u64) -> EngineError {
        EngineError::Unsupported {
            engine: ENGINE.into(),
            what: format!(
                "changing ef_search after the collection is created (it was created with \
                 ef_search={current}, asked for {wanted}): chroma stores a new value but the \
                 running server keeps searching with the one its HNSW index was loaded with. \
                 Sweep it as a build parameter instead (`--build ef_search=16,32,...`, one \
                 collection each; see the `ef-sweep` set)"
            ),
        }
    }
}
