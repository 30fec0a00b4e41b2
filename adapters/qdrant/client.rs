//! The engine's calls: connecting, uploading in parallel chunks, collection info.

use super::endpoint::Endpoint;
use super::errors::{classify, open_error, start_hint};
use super::info::info_json;
use super::requests::check_update;
use super::*;
use crate::adapters::support::rows;
use crate::secret::redact;
use crate::filter::FieldKind;
use crate::engine::Batch;

impl QdrantEngine {
    pub(super) fn connect(opts: &ConnectOptions) -> EngineResult<QdrantEngine> {
        let raw_url = opts
            .url
            .as_deref()
            .unwrap_or(DEFAULT_URL)
            .trim()
            .to_string();
        let url = redact(&raw_url);
        let endpoint = Endpoint::parse(&raw_url).map_err(|e| {
            EngineError::bad_param(ENGINE, "url", format!("`{url}` is not a server URL: {e}"))
        })?;
        let request_timeout = if opts.timeout.is_zero() {
            DEFAULT_REQUEST_TIMEOUT
        } else {
            opts.timeout
        };
        let connect_timeout = request_timeout.min(MAX_CONNECT_TIMEOUT);
        let workers = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2)
            .clamp(2, 16);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(workers)
            .thread_name("qdrant-client")
            .enable_all()
            .build()
            .map_err(|e| EngineError::op(ENGINE, "connect", format!("cannot start tokio: {e}")))?;

        // The client's own compatibility check is skipped: it prints to stdout and runs on a
        // throwaway runtime. The health check below does the same job and reports the version.
        let mut config = Qdrant::from_url(&raw_url)
            .api_key(opts.api_key.clone())
            .timeout(request_timeout)
            .connect_timeout(connect_timeout)
            .skip_compatibility_check();
        // Several connections so that parallel uploads and client threads do not all queue
        // on one HTTP/2 connection.
        config.set_pool_size(opts.upload_parallel.clamp(4, 32));
        let client_config = config.clone();
        let client = config.build().map_err(|e| {
            EngineError::bad_param(ENGINE, "url", format!("`{url}` is not usable: {e}"))
        })?;

        let health = rt.block_on(async {
            tokio::time::timeout(connect_timeout * 3, client.health_check()).await
        });
        let reply = match health {
            Err(_) => {
                return Err(EngineError::Unreachable {
                    engine: ENGINE.into(),
                    target: url.clone(),
                    message: format!(
                        "no answer within {}s. {}",
                        (connect_timeout * 3).as_secs(),
                        start_hint(&endpoint)
                    ),
                });
            }
            Ok(Err(e)) => return Err(open_error(&url, &endpoint, e)),
            Ok(Ok(reply)) => reply,
        };
        // The health check needs no key, so probe a call that does: a wrong or missing key
        // must fail here, not after the dataset has been loaded.
        rt.block_on(client.list_collections())
            .map_err(|e| open_error(&url, &endpoint, e))?;

        Ok(QdrantEngine {
            rt,
            client,
            client_config,
            owner: crate::adapters::support::per_thread::new_owner(),
            url,
            endpoint,
            api_key_set: opts.api_key.is_some(),
            server_version: reply.version,
            server_commit: reply.commit,
            recreate: opts.recreate,
            batch_size: opts.batch_size.max(1),
            upload_parallel: opts.upload_parallel.max(1),
            request_timeout,
            server_pid: opts.server_pid,
            server_storage: opts.server_storage.clone(),
            discovered_pid: OnceLock::new(),
            collection: None,
            search_params: None,
            search: SearchSettings::default(),
        })
    }

    /// Runs one client call on the runtime and maps its error.
    pub(super) fn run<T>(
        &self,
        operation: &str,
        fut: impl Future<Output = Result<T, QdrantError>>,
    ) -> EngineResult<T> {
        self.rt
            .block_on(fut)
            .map_err(|e| classify(&self.url, operation, e))
    }

    pub(super) fn collection(&self, operation: &str) -> EngineResult<&Collection> {
        self.collection.as_ref().ok_or_else(|| {
            EngineError::op(ENGINE, operation, "no collection: create() was not called")
        })
    }

    pub(super) fn timeout_secs(&self) -> u64 {
        self.request_timeout.as_secs().max(1)
    }

    /// Upserts with `wait=true`, split into requests of `batch_size` points of which up to
    /// `upload_parallel` are in flight at once (spawned, so they encode on worker threads).
    pub(super) fn upload(
        &self,
        operation: &str,
        ids: &[PointId],
        vectors: &[f32],
    ) -> EngineResult<()> {
        let col = self.collection(operation)?;
        rows::check(ENGINE, operation, col.dim, ids.len(), vectors.len())?;
        let wave = self.batch_size * self.upload_parallel;
        let mut start = 0;
        while start < ids.len() {
            let end = (start + wave).min(ids.len());
            let mut requests = Vec::with_capacity(self.upload_parallel);
            let mut chunk_start = start;
            while chunk_start < end {
                let chunk_end = (chunk_start + self.batch_size).min(end);
                let points: Vec<PointStruct> = ids[chunk_start..chunk_end]
                    .iter()
                    .zip(vectors[chunk_start * col.dim..chunk_end * col.dim].chunks_exact(col.dim))
                    .map(|(&id, v)| {
                        // Qdrant's upsert replaces the whole point: the payload goes every time.
                        let payload = qfilter::payload(col.attributes.as_deref(), id)
                            .map_or_else(Payload::new, Payload::from);
                        PointStruct::new(id, v, payload)
                    })
                    .collect();
                requests.push(
                    UpsertPointsBuilder::new(col.name.clone(), points)
                        .wait(true)
                        .timeout(self.timeout_secs()),
                );
                chunk_start = chunk_end;
            }
            let client = self.client.clone();
            let results = self.rt.block_on(async move {
                let mut set = JoinSet::new();
                for request in requests {
                    let client = client.clone();
                    set.spawn(async move { client.upsert_points(request).await });
                }
                // Join every request before reporting, so none is left running behind an error.
                let mut results = Vec::new();
                while let Some(joined) = set.join_next().await {
                    results.push(joined);
                }
                results
            });
            for joined in results {
                let response = joined.map_err(|e| {
                    EngineError::op(ENGINE, operation, format!("upload task failed: {e}"))
                })?;
                let response = response.map_err(|e| classify(&self.url, operation, e))?;
                check_update(operation, &response)?;
            }
            start = end;
        }
        Ok(())
    }

    /// One query-API request for `query` with the current search parameters, restricted to
    /// the points that pass `filter` when given.
    pub(super) fn query_request(
        &self,
        name: &str,
        query: &[f32],
        k: usize,
        filter: Option<Filter>,
    ) -> QueryPoints {
        let mut request = QueryPointsBuilder::new(name)
            .query(query.to_vec())
            .limit(k as u64)
            .with_payload(false)
            .with_vectors(false);
        if let Some(params) = &self.search_params {
            request = request.params(params.clone());
        }
        if let Some(filter) = filter {
            request = request.filter(filter);
        }
        request.build()
    }

    /// Answers a checked batch with `query_batch` calls of up to [`BATCH_QUERY_CHUNK`]
    /// queries, each query with its own filter when given.
    pub(super) fn query_batches(
        &self,
        operation: &str,
        batch: Batch<'_>,
    ) -> EngineResult<Vec<Vec<Neighbor>>> {
        let col = self.collection(operation)?;
        let (queries, k) = (batch.queries().collect::<Vec<_>>(), batch.k);
        let mut results = Vec::with_capacity(queries.len());
        if k == 0 {
            results.resize_with(queries.len(), Vec::new);
            return Ok(results);
        }
        for chunk in queries.chunks(BATCH_QUERY_CHUNK) {
            let requests: Vec<QueryPoints> = chunk
                .iter()
                .map(|q| self.query_request(&col.name, q.vector, k, q.filter.map(grpc_filter)))
                .collect();
            let sent = requests.len();
            let response = self.run(
                operation,
                self.client
                    .query_batch(QueryBatchPointsBuilder::new(col.name.as_str(), requests)),
            )?;
            if response.result.len() != sent {
                return Err(EngineError::op(
                    ENGINE,
                    operation,
                    format!("sent {sent} queries, got {} results", response.result.len()),
                ));
            }
            for batch in response.result {
                let mut out = Vec::with_capacity(k);
                to_neighbors(batch.result, &mut out)?;
                results.push(out);
            }
        }
        Ok(results)
    }

    /// One payload index per attribute (keyword or integer), created before the points
    /// arrive so that Qdrant indexes payloads as they are written and the index's cost is in
    /// the build's load time.
    pub(super) fn create_payload_indexes(
        &self,
        name: &str,
        attributes: Option<&Attributes>,
    ) -> EngineResult<Vec<(String, &'static str)>> {
        let mut created = Vec::new();
        for field in attributes.iter().flat_map(|a| a.fields()) {
            let schema = qfilter::index_schema(field.kind);
            let field_type = match field.kind {
                FieldKind::Keyword => FieldType::Keyword,
                FieldKind::Integer => FieldType::Integer,
            };
            let request =
                CreateFieldIndexCollectionBuilder::new(name, field.name.as_str(), field_type)
                    .wait(true)
                    .timeout(self.timeout_secs());
            let response = self.run(
                "create payload index",
                self.client.create_field_index(request),
            )?;
            check_update("create payload index", &response)?;
            created.push((field.name.clone(), schema));
        }
        Ok(created)
    }

    pub(super) fn info(&self, operation: &str, name: &str) -> EngineResult<CollectionInfo> {
        let response = self.run(operation, self.client.collection_info(name))?;
        response
            .result
            .ok_or_else(|| EngineError::op(ENGINE, operation, "server returned no collection info"))
    }

    pub(super) fn describe_collection(&self, col: &Collection, out: &mut Map<String, Value>) {
        out.insert("collection".into(), json!(col.name));
        out.insert("build_settings".into(), col.settings.to_json());
        match self.info("describe", &col.name) {
            Ok(info) => {
                out.insert("collection_info".into(), info_json(&info));
            }
            Err(e) => {
                out.insert("collection_info_error".into(), json!(e.to_string()));
            }
        }
    }
}
