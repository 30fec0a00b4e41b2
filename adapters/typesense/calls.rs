//! The engine's requests: connecting, the collection, imports, deletes and searches.

use std::fs;

use super::wire::{
    self, CollectionModel, Document, HitDocument, ImportLine, MultiAnswer, MultiSearch,
    OneSearch, VECTOR_FIELD,
};
use super::*;
use crate::adapters::support::http::{self, CallError};
use crate::adapters::support::{process, upload};
use crate::engine::SourcedBytes;

/// A failed call as an [`EngineError`] that says what to do.
fn engine_error(url: &str, operation: &str, err: CallError) -> EngineError {
    http::engine_error(&LOCAL_SERVER, url, operation, err)
}

impl TypesenseEngine {
    pub(super) fn connect(opts: &ConnectOptions) -> EngineResult<TypesenseEngine> {
        let (url, started_by_adapter) = http::server_url(&LOCAL_SERVER, opts.url.as_deref())?;
        let script_state = http::script_state(ENGINE, &url);
        // The script's server has the key the script made up; any other needs --api-key-env.
        let api_key = opts.api_key.clone().or_else(|| {
            let key = fs::read_to_string(script_state.as_ref()?.join("api_key")).ok()?;
            Some(key.trim().to_string()).filter(|k| !k.is_empty())
        });
        let http = Http::new(&url, opts.timeout, "x-typesense-api-key", api_key);
        let health: Value = http
            .json("GET", "/health", None::<&()>)
            .map_err(|e| engine_error(&url, "connect", e))?;
        if health.get("ok") != Some(&Value::Bool(true)) {
            return Err(EngineError::op(
                ENGINE,
                "connect",
                format!("the server is not healthy yet ({health}); wait for it and retry"),
            ));
        }
        // `/debug` needs the key: a wrong one fails here, not in the middle of a run.
        let debug: wire::Debug = http
            .json("GET", "/debug", None::<&()>)
            .map_err(|e| engine_error(&url, "connect", e))?;
        Ok(TypesenseEngine {
            http,
            url,
            version: debug.version,
            recreate: opts.recreate,
            batch_size: opts.batch_size.max(1),
            upload_parallel: opts.upload_parallel.max(1),
            server_pid: opts.server_pid,
            server_storage: opts.server_storage.clone(),
            script_state,
            started_by_adapter,
            search: SearchSettings::default(),
            collection: None,
        })
    }

    pub(super) fn call<T: serde::de::DeserializeOwned>(
        &self,
        operation: &str,
        method: &str,
        path: &str,
        body: Option<&impl serde::Serialize>,
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
    pub(super) fn lookup(&self, operation: &str, name: &str) -> EngineResult<Option<CollectionModel>> {
        match self
            .http
            .json::<CollectionModel>("GET", &format!("/collections/{name}"), None::<&()>)
        {
            Ok(model) => Ok(Some(model)),
            Err(CallError::Status { code: 404, .. }) => Ok(None),
            Err(e) => Err(engine_error(&self.url, operation, e)),
        }
    }

    pub(super) fn document_count(&self, operation: &str, name: &str) -> EngineResult<u64> {
        match self.lookup(operation, name)? {
            Some(model) => Ok(model.num_documents),
            None => Err(EngineError::op(
                ENGINE,
                operation,
                format!("collection `{name}` disappeared from the server"),
            )),
        }
    }

    /// Drops the collection `name`; a missing one is not an error.
    pub(super) fn drop_collection(&self, operation: &str, name: &str) -> EngineResult<()> {
        match self.http.send("DELETE", &format!("/collections/{name}"), None) {
            Ok(_) | Err(CallError::Status { code: 404, .. }) => Ok(()),
            Err(e) => Err(engine_error(&self.url, operation, e)),
        }
    }

    /// The collection of `spec`: its vector field, and a field per attribute of a filtered run.
    pub(super) fn create_collection(&self, spec: &CollectionSpec) -> EngineResult<()> {
        let distance = if spec.distance == Distance::Dot { "ip" } else { "cosine" };
        let mut fields = vec![json!({
            "name": VECTOR_FIELD,
            "type": "float[]",
            "num_dim": spec.dim,
            "vec_dist": distance,
        })];
        if let Some(attributes) = &spec.attributes {
            fields.extend(filter::schema_fields(attributes));
        }
        let body = json!({ "name": spec.name, "fields": fields });
        self.call::<Value>("create", "POST", "/collections", Some(&body))
            .map(|_| ())
    }

    /// Imports `ids` with `action` (`create` or `upsert`) in requests of `batch_size`
    /// documents, `upload_parallel` at a time; every document's answer line is checked.
    pub(super) fn import(&self, operation: &str, action: &str, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let col = self.collection(operation)?;
        rows::check(ENGINE, operation, col.dim, ids.len(), vectors.len())?;
        let dim = col.dim;
        // Typesense's own `batch_size` (documents indexed per step inside the server) keeps
        // its default, as the official clients leave it.
        let path = format!("/collections/{}/documents/import?action={action}", col.name);
        let requests: Vec<(&[PointId], &[f32])> = ids
            .chunks(self.batch_size)
            .zip(vectors.chunks(self.batch_size * dim))
            .collect();
        upload::in_parallel(ENGINE, operation, self.upload_parallel, &requests, |(ids, vectors)| {
            let body = self.documents(col, ids, vectors)?;
            let answer = self
                .http
                .send("POST", &path, Some(body))
                .map_err(|e| engine_error(&self.url, operation, e))?;
            check_import(operation, ids.len(), &answer)
        })
    }

    /// The JSON lines of an import.
    fn documents(&self, col: &Collection, ids: &[PointId], vectors: &[f32]) -> EngineResult<Vec<u8>> {
        let mut body = Vec::with_capacity(ids.len() * (col.dim * 12 + 48));
        for (id, vector) in ids.iter().zip(vectors.chunks_exact(col.dim)) {
            let attributes = col
                .attributes
                .as_deref()
                .map(|a| crate::adapters::support::filter::json_fields(a, *id))
                .unwrap_or_default();
            let document = Document {
                id: id.to_string(),
                vector,
                attributes,
            };
            serde_json::to_writer(&mut body, &document)
                .map_err(|e| EngineError::op(ENGINE, "import", e))?;
            body.push(b'\n');
        }
        Ok(body)
    }

    /// Deletes `ids` with `filter_by=id:[…]`, `batch_size` ids per request.
    pub(super) fn delete_points(&self, ids: &[PointId]) -> EngineResult<()> {
        let col = self.collection("delete")?;
        for chunk in ids.chunks(self.batch_size) {
            let list: Vec<String> = chunk.iter().map(u64::to_string).collect();
            // `[` and `]` percent-encoded: the list is one query parameter.
            let path = format!(
                "/collections/{}/documents?filter_by=id:%5B{}%5D",
                col.name,
                list.join(",")
            );
            self.call::<Value>("delete", "DELETE", &path, None::<&()>)?;
        }
        Ok(())
    }

    /// One search per row of `queries`, each with its `filters` entry, in `multi_search`
    /// requests of up to 50; the answers in query order.
    pub(super) fn multi_search(
        &self,
        queries: &[f32],
        k: usize,
        filters: &[Option<&str>],
        operation: &str,
    ) -> EngineResult<Vec<Vec<Neighbor>>> {
        let col = self.collection(operation)?;
        if k == 0 || filters.is_empty() {
            return Ok(vec![Vec::new(); filters.len()]);
        }
        if k > wire::MAX_PER_PAGE {
            return Err(EngineError::Unsupported {
                engine: ENGINE.into(),
                what: format!(
                    "k = {k}: typesense returns at most {} hits per page",
                    wire::MAX_PER_PAGE
                ),
            });
        }
        let url = format!("{}&per_page={k}", col.search_url);
        let ef = self.search.ef.map_or(k, |ef| ef as usize);
        let mut all = Vec::with_capacity(filters.len());
        for (rows, filters) in queries
            .chunks(wire::MAX_SEARCHES_PER_REQUEST * col.dim)
            .zip(filters.chunks(wire::MAX_SEARCHES_PER_REQUEST))
        {
            let body = MultiSearch {
                searches: rows
                    .chunks_exact(col.dim)
                    .zip(filters)
                    .map(|(q, f)| OneSearch {
                        vector_query: wire::vector_query(q, ef, self.search.flat_search_cutoff),
                        filter_by: *f,
                    })
                    .collect(),
            };
            let answer: MultiAnswer = self
                .http
                .json_to("POST", &url, Some(&body))
                .map_err(|e| engine_error(&self.url, operation, e))?;
            self.push_answers(answer, filters.len(), operation, &mut all)?;
        }
        Ok(all)
    }

    /// Appends the hits of each search of `answer` (which must hold `expected` results).
    fn push_answers(
        &self,
        answer: MultiAnswer,
        expected: usize,
        operation: &str,
        all: &mut Vec<Vec<Neighbor>>,
    ) -> EngineResult<()> {
        if answer.results.len() != expected {
            return Err(EngineError::op(
                ENGINE,
                operation,
                format!("asked {expected} searches, got {} results", answer.results.len()),
            ));
        }
        for result in answer.results {
            if let Some(error) = result.error {
                let code = result.code.map_or(String::new(), |c| format!(" (HTTP {c})"));
                return Err(EngineError::op(ENGINE, operation, format!("{error}{code}")));
            }
            let hits = result
                .hits
                .into_iter()
                .map(|hit| {
                    Ok(Neighbor {
                        id: self.point_id(&hit.document, operation)?,
                        score: hit.vector_distance.unwrap_or(f32::NAN),
                    })
                })
                .collect::<EngineResult<Vec<Neighbor>>>()?;
            all.push(hits);
        }
        Ok(())
    }

    fn point_id(&self, document: &HitDocument, operation: &str) -> EngineResult<PointId> {
        document.id.parse().map_err(|_| {
            let name = self.collection.as_ref().map_or("?", |c| c.name.as_str());
            EngineError::op(
                ENGINE,
                operation,
                format!(
                    "id `{}` is not a ragdbeval point id: collection `{name}` holds documents \
                     ragdbeval did not write",
                    document.id
                ),
            )
        })
    }

    /// The server's allocated bytes (`typesense_memory_allocated_bytes` of `/metrics.json`).
    pub(super) fn allocated_bytes(&self) -> EngineResult<u64> {
        let metrics: Map<String, Value> = self.call("footprint", "GET", "/metrics.json", None::<&()>)?;
        metrics
            .get("typesense_memory_allocated_bytes")
            .and_then(|v| v.as_str().and_then(|s| s.parse().ok()).or_else(|| v.as_u64()))
            .ok_or_else(|| {
                EngineError::op(ENGINE, "footprint", "/metrics.json has no typesense_memory_allocated_bytes")
            })
    }

    pub(super) fn measure_footprint(&self) -> EngineResult<Footprint> {
        let Some(col) = &self.collection else {
            return Ok(Footprint::unmeasured("no collection created"));
        };
        let index = match col.allocated_before {
            None => Err("the server's allocated memory could not be read before the build".into()),
            Some(before) => self.allocated_bytes().map(|now| SourcedBytes {
                bytes: now.saturating_sub(before),
                source: "growth of the server's allocated memory since the collection was \
                         created (/metrics.json typesense_memory_allocated_bytes): the HNSW \
                         graph with its vectors and the documents' in-memory indexes"
                    .into(),
            }).map_err(|e| e.to_string()),
        };
        Ok(Footprint::new(index, self.data_dir_bytes()))
        .map(|f| f.holding(crate::engine::IndexHolds::GraphAndVectors))
    }

    /// The data directory's size, when it is known and holds no other collection.
    fn data_dir_bytes(&self) -> Result<SourcedBytes, String> {
        let dir = self
            .server_storage
            .clone()
            .or_else(|| self.script_state.as_ref().map(|s| s.join("data")))
            .ok_or("the server's data directory is unknown: pass --server-storage")?;
        let collections: Vec<Value> = self
            .call("footprint", "GET", "/collections", None::<&()>)
            .map_err(|e| e.to_string())?;
        if collections.len() != 1 {
            return Err(format!(
                "the data directory {} holds {} collections, and typesense does not say which \
                 bytes are whose",
                dir.display(),
                collections.len()
            ));
        }
        crate::storage::dir_bytes(
            ENGINE,
            &dir,
            "the server's data directory: documents in RocksDB and the Raft log",
        )
        .map_err(|e| e.to_string())
    }

    /// The live server process of the script's state dir, if any.
    pub(super) fn script_pid(&self) -> Option<u32> {
        let state = self.script_state.as_ref()?;
        let pid = process::pid_from_file(&state.join("pid"))?;
        process::is_alive(pid).then_some(pid)
    }
}

/// Checks an import's answer: one `{"success": true}` line per document.
fn check_import(operation: &str, documents: usize, answer: &[u8]) -> EngineResult<()> {
    let text = String::from_utf8_lossy(answer);
    let mut lines = 0;
    let mut failed = 0;
    let mut first: Option<String> = None;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        lines += 1;
        let parsed: ImportLine = http::parse_answer(line.as_bytes())
            .map_err(|e| engine_error("", operation, e))?;
        if !parsed.success {
            failed += 1;
            first.get_or_insert(parsed.error.unwrap_or_else(|| line.to_string()));
        }
    }
    if let Some(first) = first {
        return Err(EngineError::op(
            ENGINE,
            operation,
            format!("{failed} of {documents} documents refused; the first: {first}"),
        ));
    }
    if lines != documents {
        return Err(EngineError::op(
            ENGINE,
            operation,
            format!("sent {documents} documents, the server answered for {lines}"),
        ));
    }
    Ok(())
}
