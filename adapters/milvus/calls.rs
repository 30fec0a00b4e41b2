//! The engine's calls: connecting, the collection's life, writes in batches, readiness and
//! searches.

use std::time::Instant;

use prost::Message;

use super::data::{self, ID_FIELD, VECTOR_FIELD};
use super::proto::{
    self, BoolResponse, CollectionRequest, CollectionSchema, CreateCollectionRequest,
    CreateIndexRequest, FieldSchema, GetLoadStateRequest, GetLoadStateResponse, InsertRequest,
    MutationResult, QueryRequest, QueryResults, SearchResults, Status, StatusResponse, data_type,
    kv,
};
use super::rpc::{self, CallError, method};
use super::server::{self, LOCAL_SERVER};
use crate::adapters::support::poll;
use super::*;

/// Answers that carry a `common.Status`.
pub(super) trait HasStatus {
    fn status(&self) -> Option<&Status>;
}

macro_rules! has_status {
    ($($t:ty),*) => {$(
        impl HasStatus for $t {
            fn status(&self) -> Option<&Status> {
                self.status.as_ref()
            }
        }
    )*};
}
has_status!(
    BoolResponse,
    StatusResponse,
    GetLoadStateResponse,
    MutationResult,
    SearchResults,
    QueryResults,
    proto::DescribeIndexResponse,
    proto::GetVersionResponse
);

impl HasStatus for Status {
    fn status(&self) -> Option<&Status> {
        Some(self)
    }
}

/// How long `wait_until_ready` waits for the index to be built and the collection loaded.
const READY_LIMIT: Duration = Duration::from_secs(6 * 3600);

impl MilvusEngine {
    pub(super) fn connect(opts: &ConnectOptions) -> EngineResult<MilvusEngine> {
        let url = match &opts.url {
            Some(url) => url.trim().trim_end_matches('/').to_string(),
            None => LOCAL_SERVER.start()?,
        };
        let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
        if !scheme_ok || url.len() <= "https://".len() {
            return Err(EngineError::bad_param(
                ENGINE,
                "url",
                format!(
                    "`{}` is not a URL: expected http://HOST:PORT (Milvus' gRPC port, 19530 by \
                     default)",
                    crate::secret::redact(&url)
                ),
            ));
        }
        let timeout = if opts.timeout.is_zero() {
            DEFAULT_REQUEST_TIMEOUT
        } else {
            opts.timeout
        };
        let endpoint = rpc::endpoint(&url, timeout)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| EngineError::op(ENGINE, "connect", format!("cannot start tokio: {e}")))?;
        let shown = crate::secret::redact(&url);
        let unreachable = |message: String| EngineError::Unreachable {
            engine: ENGINE.into(),
            target: shown.clone(),
            message: format!("{message}; {}", LOCAL_SERVER.hint()),
        };
        let channel = rt
            .block_on(endpoint.connect())
            .map_err(|e| unreachable(worded(&format!("{e:?}"))))?;
        let script = server::script_state(&url);
        let version = match rt.block_on(rpc::call::<proto::Empty, proto::GetVersionResponse>(
            &channel,
            method!("GetVersion"),
            proto::Empty {},
        )) {
            Ok(v) if !v.version.is_empty() => v.version,
            Ok(_) => "not reported (GetVersion answered no version)".into(),
            Err(e) if e.is_unimplemented() => script
                .as_deref()
                .and_then(server::script_release)
                .unwrap_or_else(|| "not reported (GetVersion is not implemented)".into()),
            Err(e) if e.is_unreachable() => return Err(unreachable(e.to_string())),
            Err(e) => return Err(EngineError::op(ENGINE, "connect", e)),
        };
        let engine = MilvusEngine {
            rt,
            channel,
            endpoint,
            owner: crate::adapters::support::per_thread::new_owner(),
            url: shown.clone(),
            version,
            server_pid: opts
                .server_pid
                .or_else(|| script.as_deref().and_then(server::script_pid)),
            recreate: opts.recreate,
            batch_size: opts.batch_size_or(DEFAULT_BATCH),
            upload_parallel: opts.upload_parallel.max(1),
            search: SearchSettings::default(),
            collection: None,
        };
        // A call every Milvus answers: proves the server speaks the Milvus API.
        engine
            .has_collection("connect", "ragdbeval_connect_check")
            .map_err(|e| match e {
                EngineError::Unreachable { message, .. } => unreachable(message),
                other => other,
            })?;
        Ok(engine)
    }

    /// A call's failure as an engine error: unreachable when no answer came back.
    pub(super) fn error(&self, operation: &str, e: CallError) -> EngineError {
        if e.is_unreachable() {
            EngineError::Unreachable {
                engine: ENGINE.into(),
                target: self.url.clone(),
                message: format!("{operation}: {e}"),
            }
        } else {
            EngineError::op(ENGINE, operation, e)
        }
    }

    /// One call on the shared channel, its status checked.
    pub(super) fn admin<Req, Resp>(
        &self,
        operation: &str,
        path: &'static str,
        request: Req,
    ) -> EngineResult<Resp>
    where
        Req: Message + Send + Sync + 'static,
        Resp: Message + Default + Send + Sync + HasStatus + 'static,
    {
        self.rt
            .block_on(rpc::call::<Req, Resp>(&self.channel, path, request))
            .and_then(|r| rpc::check(r.status()).map(|()| r))
            .map_err(|e| self.error(operation, e))
    }

    pub(super) fn coll(&self, operation: &str) -> EngineResult<&Collection> {
        self.collection
            .as_ref()
            .ok_or_else(|| EngineError::op(ENGINE, operation, "no collection: call create first"))
    }

    fn has_collection(&self, operation: &str, name: &str) -> EngineResult<bool> {
        let r: BoolResponse = self.admin(
            operation,
            method!("HasCollection"),
            CollectionRequest {
                collection_name: name.into(),
            },
        )?;
        Ok(r.value)
    }

    pub(super) fn drop_if_exists(&self, operation: &str, name: &str) -> EngineResult<()> {
        if self.has_collection(operation, name)? {
            let _: Status = self.admin(
                operation,
                method!("DropCollection"),
                CollectionRequest {
                    collection_name: name.into(),
                },
            )?;
        }
        Ok(())
    }

    /// Creates the collection, its indexes, and loads it; an existing one is dropped only
    /// with `--recreate`. An index the server refuses leaves no collection behind.
    pub(super) fn create_collection(&self, coll: &Collection) -> EngineResult<()> {
        if self.has_collection("create", &coll.name)? {
            if !self.recreate {
                return Err(EngineError::op(
                    ENGINE,
                    "create",
                    format!(
                        "collection `{}` already exists on {}; pass --recreate to drop it",
                        coll.name, self.url
                    ),
                ));
            }
            self.drop_if_exists("create", &coll.name)?;
        }
        let _: Status = self.admin(
            "create",
            method!("CreateCollection"),
            CreateCollectionRequest {
                collection_name: coll.name.clone(),
                schema: schema(coll).encode_to_vec(),
                shards_num: coll.build.num_shards,
                consistency_level: coll.build.consistency.1,
            },
        )?;
        if let Err(e) = self.create_indexes(coll) {
            let _ = self.drop_if_exists("create", &coll.name);
            return Err(e);
        }
        let _: Status = self.admin(
            "load",
            method!("LoadCollection"),
            CollectionRequest {
                collection_name: coll.name.clone(),
            },
        )?;
        self.wait_loaded(&coll.name)
    }

    fn create_indexes(&self, coll: &Collection) -> EngineResult<()> {
        let b = &coll.build;
        let vector = CreateIndexRequest {
            collection_name: coll.name.clone(),
            field_name: VECTOR_FIELD.into(),
            extra_params: vec![
                kv("index_type", b.index_type.as_str()),
                kv("metric_type", b.metric),
                kv("params", Json::Object(b.index_params.clone()).to_string()),
            ],
            index_name: VECTOR_FIELD.into(),
        };
        let r = self
            .rt
            .block_on(rpc::call::<_, Status>(&self.channel, method!("CreateIndex"), vector))
            .and_then(|s| rpc::check(Some(&s)));
        match r {
            Ok(()) => {}
            Err(e @ CallError::Milvus { .. }) => {
                return Err(EngineError::bad_param(
                    ENGINE,
                    "index_type",
                    format!("the server refused {} {}: {e}", b.index_type, Json::Object(b.index_params.clone())),
                ));
            }
            Err(e) => return Err(self.error("create index", e)),
        }
        for field in coll.attributes.iter().flat_map(|a| a.fields()) {
            let _: Status = self.admin(
                "create attribute index",
                method!("CreateIndex"),
                CreateIndexRequest {
                    collection_name: coll.name.clone(),
                    field_name: field.name.clone(),
                    extra_params: vec![kv("index_type", "INVERTED")],
                    index_name: field.name.clone(),
                },
            )?;
        }
        Ok(())
    }

    /// Waits until the collection is loaded.
    fn wait_loaded(&self, name: &str) -> EngineResult<()> {
        let started = Instant::now();
        loop {
            let r: GetLoadStateResponse = self.admin(
                "load",
                method!("GetLoadState"),
                GetLoadStateRequest {
                    collection_name: name.into(),
                },
            )?;
            if r.state == proto::LOAD_STATE_LOADED {
                return Ok(());
            }
            if started.elapsed() > READY_LIMIT {
                return Err(EngineError::op(
                    ENGINE,
                    "load",
                    format!("collection `{name}` not loaded after {READY_LIMIT:?} (state {})", r.state),
                ));
            }
            std::thread::sleep(poll::pause(started));
        }
    }

    /// `Insert` or `Upsert` of `ids`, in requests of `batch_size` rows, `upload_parallel` at
    /// a time.
    pub(super) fn write(
        &self,
        path: &'static str,
        operation: &str,
        ids: &[PointId],
        vectors: &[f32],
    ) -> EngineResult<()> {
        let coll = self.coll(operation)?;
        rows::check(ENGINE, operation, coll.dim, ids.len(), vectors.len())?;
        let mut requests = Vec::new();
        for (chunk, rows) in ids
            .chunks(self.batch_size)
            .zip(vectors.chunks(self.batch_size * coll.dim))
        {
            requests.push(InsertRequest {
                collection_name: coll.name.clone(),
                fields_data: data::columns(operation, coll, chunk, rows)?,
                num_rows: chunk.len() as u32,
            });
        }
        for wave in requests.chunks(self.upload_parallel) {
            let calls = wave.iter().cloned().map(|req| {
                let channel = self.channel.clone();
                self.rt
                    .spawn(async move { rpc::call::<_, MutationResult>(&channel, path, req).await })
            });
            let handles: Vec<_> = calls.collect();
            for h in handles {
                self.rt
                    .block_on(h)
                    .map_err(|e| EngineError::op(ENGINE, operation, e))?
                    .and_then(|r| rpc::check(r.status()))
                    .map_err(|e| self.error(operation, e))?;
            }
        }
        Ok(())
    }

    pub(super) fn delete_points(&self, ids: &[PointId]) -> EngineResult<()> {
        let coll = self.coll("delete")?;
        for chunk in ids.chunks(self.batch_size) {
            let keys = chunk
                .iter()
                .map(|id| data::key_of("delete", *id))
                .collect::<EngineResult<Vec<i64>>>()?;
            let _: MutationResult = self.admin(
                "delete",
                method!("Delete"),
                proto::DeleteRequest {
                    collection_name: coll.name.clone(),
                    expr: filter::ids_in(&keys),
                },
            )?;
        }
        Ok(())
    }

    /// The server's `count(*)` of the collection, at the collection's consistency level.
    fn count(&self, name: &str) -> EngineResult<u64> {
        let r: QueryResults = self.admin(
            "count",
            method!("Query"),
            QueryRequest {
                collection_name: name.into(),
                expr: String::new(),
                output_fields: vec!["count(*)".into()],
                use_default_consistency: true,
            },
        )?;
        let n = r.fields_data.first().and_then(|f| match &f.field {
            Some(proto::field_data::Field::Scalars(s)) => match &s.data {
                Some(proto::scalar_field::Data::LongData(a)) => a.data.first().copied(),
                _ => None,
            },
            _ => None,
        });
        n.and_then(|n| u64::try_from(n).ok())
            .ok_or_else(|| EngineError::op(ENGINE, "count", "the count(*) answer holds no count"))
    }

    /// Searches `queries` (one or more rows) on this thread's connection.
    pub(super) fn search_rows(
        &self,
        operation: &str,
        queries: &[f32],
        k: usize,
        expr: String,
    ) -> EngineResult<Vec<Vec<Neighbor>>> {
        let coll = self.coll(operation)?;
        let nq = queries.len() / coll.dim.max(1);
        let req = data::search_request(coll, queries, k, expr, &self.search.params);
        let answer = self.on_local(operation, |rt, channel| {
            rt.block_on(rpc::call::<_, SearchResults>(channel, method!("Search"), req))
                .and_then(|r| rpc::check(r.status()).map(|()| r))
                .map_err(|e| self.error(operation, e))
        })?;
        data::hits(operation, answer.results, nq)
    }

    /// Waits for the vector index to cover the flushed rows and the collection to be loaded,
    /// and reports what the server says.
    pub(super) fn ready_report(&self) -> EngineResult<IndexReport> {
        let coll = self.coll("wait until ready")?;
        let index = self.wait_index(&coll.name)?;
        self.wait_loaded(&coll.name)?;
        let points = self.count(&coll.name)?;
        // A server that reports no row totals (milvus-lite) leaves the indexed count unknown.
        let indexed = if index.total_rows > 0 {
            Some(index.indexed_rows.max(0) as u64)
        } else if points == 0 {
            Some(0)
        } else {
            None
        };
        let mut details = Map::new();
        details.insert("index_type".into(), coll.build.index_type.clone().into());
        details.insert("index_params".into(), Json::Object(coll.build.index_params.clone()));
        details.insert("metric_type".into(), coll.build.metric.into());
        details.insert("index_total_rows".into(), index.total_rows.into());
        details.insert("index_indexed_rows".into(), index.indexed_rows.into());
        details.insert("index_pending_rows".into(), index.pending_index_rows.into());
        details.insert("num_shards".into(), coll.build.num_shards.into());
        details.insert("consistency".into(), coll.build.consistency.0.into());
        if let Some(reason) = unindexed_reason(indexed, points) {
            details.insert("full_scan_reason".into(), reason.into());
        }
        Ok(IndexReport {
            indexed_vectors: indexed,
            points: Some(points),
            may_full_scan: indexed != Some(points),
            details,
        })
    }

    /// Polls `DescribeIndex` until the vector index is `Finished` with every row it counts
    /// indexed; a `Failed` index is an error with the server's reason.
    fn wait_index(&self, name: &str) -> EngineResult<proto::IndexDescription> {
        let started = Instant::now();
        loop {
            let r: proto::DescribeIndexResponse = self.admin(
                "describe index",
                method!("DescribeIndex"),
                proto::DescribeIndexRequest {
                    collection_name: name.into(),
                    field_name: VECTOR_FIELD.into(),
                    index_name: VECTOR_FIELD.into(),
                },
            )?;
            let Some(d) = r.index_descriptions.into_iter().find(|d| d.field_name == VECTOR_FIELD)
            else {
                return Err(EngineError::op(ENGINE, "describe index", "the vector field has no index"));
            };
            if d.state == proto::INDEX_FAILED {
                return Err(EngineError::op(
                    ENGINE,
                    "build index",
                    format!("the index failed: {}", d.index_state_fail_reason),
                ));
            }
            if d.state == proto::INDEX_FINISHED && d.indexed_rows >= d.total_rows {
                return Ok(d);
            }
            if started.elapsed() > READY_LIMIT {
                return Err(EngineError::op(
                    ENGINE,
                    "build index",
                    format!("not finished after {READY_LIMIT:?}: {} of {} rows indexed", d.indexed_rows, d.total_rows),
                ));
            }
            std::thread::sleep(poll::pause(started));
        }
    }
}

/// The collection's schema: the key, the vector, one scalar field per attribute.
fn schema(coll: &Collection) -> CollectionSchema {
    let mut fields = vec![
        FieldSchema {
            name: ID_FIELD.into(),
            is_primary_key: true,
            data_type: data_type::INT64,
            type_params: Vec::new(),
            auto_id: false,
        },
        FieldSchema {
            name: VECTOR_FIELD.into(),
            is_primary_key: false,
            data_type: data_type::FLOAT_VECTOR,
            type_params: vec![kv("dim", coll.dim.to_string())],
            auto_id: false,
        },
    ];
    for field in coll.attributes.iter().flat_map(|a| a.fields()) {
        let (ty, params) = match field.kind {
            crate::filter::FieldKind::Keyword => {
                (data_type::VAR_CHAR, vec![kv("max_length", "65535")])
            }
            crate::filter::FieldKind::Integer => (data_type::INT64, Vec::new()),
        };
        fields.push(FieldSchema {
            name: field.name.clone(),
            is_primary_key: false,
            data_type: ty,
            type_params: params,
            auto_id: false,
        });
    }
    CollectionSchema {
        name: coll.name.clone(),
        fields,
    }
}

/// A connection failure in words.
fn worded(raw: &str) -> String {
    crate::engine::worded_connection_failure(raw)
}

/// Why searches may not have gone through the index asked for: rows the server counts as not
/// indexed, or no count at all (milvus-lite keeps a collection in one growing segment and
/// answers every search through the server's interim index, whatever `index_type`, `nlist`
/// and `nprobe` say).
fn unindexed_reason(indexed: Option<u64>, points: u64) -> Option<String> {
    match indexed {
        None => Some(
            "the server reports no indexed rows (milvus-lite: the collection stays one growing \
             segment, searched through the server's interim index, so the index type and \
             search parameters asked for are not what answered)"
                .into(),
        ),
        Some(n) if n != points => Some(format!(
            "{n} of {points} points indexed: the others sit in growing segments, searched \
             without the index"
        )),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::unindexed_reason;

    #[test]
    fn a_run_is_marked_unless_every_point_is_indexed() {
        let lite = unindexed_reason(None, 1000).expect("no count is a reason");
        assert!(lite.contains("interim index"), "{lite}");
        let growing = unindexed_reason(Some(900), 1000).expect("missing rows are a reason");
        assert!(growing.starts_with("900 of 1000 points indexed"), "{growing}");
        assert_eq!(unindexed_reason(Some(1000), 1000), None);
        assert_eq!(unindexed_reason(Some(0), 0), None);
    }
}
