//! `chroma`: a Chroma server driven over its HTTP API v2 (blocking `ureq`).
//!
//! Facts about the engine that shape this adapter (checked against chromadb 1.5.9, whose
//! single-node server is the Rust frontend behind `chroma run`):
//!
//! - Index settings live in the collection `configuration.hnsw` (`space`, `max_neighbors`,
//!   `ef_construction`, `ef_search`, `batch_size`, `sync_threshold`, `num_threads`), fixed at
//!   creation. The legacy `hnsw:*` metadata keys are not used.
//! - `ef_search` can be *stored* after creation (`PUT .../collections/{id}` with
//!   `new_configuration`) but the running server keeps searching with the value its cached
//!   HNSW index was loaded with, until it restarts. Changing it between searches would
//!   silently measure the old value, so `ef_search` is a build parameter here and a search
//!   parameter only when it equals the collection's value; anything else is
//!   [`EngineError::Unsupported`].
//! - New writes first go to a brute-force buffer of up to `batch_size` vectors (default
//!   100) that is searched exactly next to the graph, then into HNSW; the graph is persisted
//!   every `sync_threshold` (default 1000) writes. Writes are applied before the HTTP call
//!   returns, so `count` is exact right away.
//! - Ids are strings: a [`PointId`] travels as its decimal form and is parsed back.
//! - Distances are Chroma's own: squared L2 for `l2`, `1 - cos` for `cosine`, `1 - dot`
//!   for `ip`. They order like ragdbeval's metrics, which is all the harness relies on.
//!
//! Without `--url` the adapter runs `scripts/servers/chroma.sh start` (idempotent) and uses
//! the URL it prints, so `ragdbeval bench --db chroma` needs no manual setup. The server is
//! left running for the next run; `scripts/servers/chroma.sh stop` stops it.
//!
//! Files: `wire` (API bodies),
//! `calls` (the engine's requests), `footprint` (on-disk size); the trait impl is here.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::adapters::support::poll;
use crate::distance::Distance;
use crate::engine::{Batch, CollectionSpec, ConcurrentWrites, ConnectOptions, EngineError, EngineResult, Footprint, IndexReport, Neighbor, PointId, Query, SourcedBytes, VectorEngine};
use crate::params::{ParamMap, ParamMapExt};

mod calls;
mod filter;
mod footprint;
mod wire;

use crate::adapters::support::http::Http;
use wire::{BuildSettings, Collection, CollectionModel, DeleteBody, effective_hnsw, space_of};

const ENGINE: &str = crate::adapters::meta::chroma::NAME;

/// The local server `scripts/servers/chroma.sh` starts.
const LOCAL_SERVER: crate::adapters::support::server::LocalServer =
    crate::adapters::support::server::LocalServer {
        engine: ENGINE,
        schemes: &["http://", "https://"],
        url_example: "http://HOST:PORT",
    };

/// Collections of the default tenant and database (what the Python client uses).
const COLLECTIONS: &str = "/api/v2/tenants/default_tenant/databases/default_database/collections";

/// Build parameters, mapped onto `configuration.hnsw` at creation.
const BUILD_PARAMS: &[&str] = &[
    "m",
    "ef_construction",
    "ef_search",
    "batch_size",
    "sync_threshold",
    "num_threads",
];

/// Search parameters. `ef_search` only restates the value fixed at creation (module doc).
const SEARCH_PARAMS: &[&str] = &["ef_search"];

/// Chroma's own default `ef_search`, used when neither the build nor the search set names one.
const DEFAULT_EF_SEARCH: u64 = 100;

/// Connects to the Chroma server at `opts.url`, or starts the project's local one when no URL
/// is given, and checks that it answers, so that a wrong address fails here rather than in
/// the middle of a timed phase.
pub fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(ChromaEngine::connect(opts)?))
}

/// A Chroma server and the collection under test.
pub struct ChromaEngine {
    http: Http,
    url: String,
    /// What `/api/v2/version` says (the API version, 1.0.0 on chromadb 1.5).
    api_version: String,
    /// The chromadb release, when the server is the script's (it records it).
    release: Option<String>,
    max_batch_size: Option<usize>,
    base64: bool,
    recreate: bool,
    batch_size: usize,
    upload_parallel: usize,
    server_pid: Option<u32>,
    server_storage: Option<PathBuf>,
    /// State dir of the script's server when `url` is that server's.
    script_state: Option<PathBuf>,
    started_by_adapter: bool,
    /// `ef_search` named by the search parameters checked before `create`.
    pending_ef_search: Option<u64>,
    search_label: String,
    collection: Option<Collection>,
    /// A write after the build (an upsert or a delete, all through `&self`) keeps no count:
    /// `wait_until_ready` then reports the count as it is.
    written_concurrently: AtomicBool,
}

impl ConcurrentWrites for ChromaEngine {
    fn upsert(&self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.written_concurrently.store(true, Ordering::Relaxed);
        self.write_records("upsert", "upsert", ids, vectors)
    }

    fn delete(&self, ids: &[PointId]) -> EngineResult<()> {
        self.written_concurrently.store(true, Ordering::Relaxed);
        self.delete_points(ids)
    }
}

impl VectorEngine for ChromaEngine {
    fn name(&self) -> &str {
        ENGINE
    }

    fn version(&self) -> String {
        match &self.release {
            Some(release) => format!("{release} (API {})", self.api_version),
            None => format!("API {}", self.api_version),
        }
    }

    fn check_build_params(&self, spec: &CollectionSpec) -> EngineResult<()> {
        self.build_settings(spec).map(|_| ())
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        let settings = self.build_settings(spec)?;
        let ef_search = settings.ef_search;

        if self.lookup("create", &spec.name)?.is_some() {
            if !self.recreate {
                return Err(EngineError::op(
                    ENGINE,
                    "create",
                    format!(
                        "collection `{}` already exists at {}; pass --recreate to drop it",
                        spec.name, self.url
                    ),
                ));
            }
            self.drop_collection("create", &spec.name)?;
        }
        let body = json!({
            "name": spec.name,
            "configuration": { "hnsw": settings.hnsw_json() },
            "get_or_create": false,
        });
        let model: CollectionModel = self.call("create", "POST", COLLECTIONS, Some(&body))?;
        self.collection = Some(Collection {
            name: spec.name.clone(),
            query_url: format!("{}{COLLECTIONS}/{}/query", self.http.base, model.id),
            id: model.id,
            dim: spec.dim,
            settings,
            expected_points: 0,
            attributes: spec.attributes.clone(),
        });
        self.written_concurrently.store(false, Ordering::Relaxed);
        self.search_label = format!("ef_search={ef_search}");
        Ok(())
    }

    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.write_records("insert", "add", ids, vectors)?;
        if let Some(col) = self.collection.as_mut() {
            col.expected_points += ids.len() as u64;
        }
        Ok(())
    }

    /// Polls `count` until it equals the points loaded (Chroma applies writes before the
    /// call returns, so this normally succeeds at once); after upserts or deletes, whose
    /// effect on the count is not tracked, it reports the count as it is.
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        let col = self.collection("wait for index")?;
        let limit = Duration::from_secs(120);
        let started = Instant::now();
        let points = loop {
            let n = self.count("wait for index", &col.id)?;
            let expected = if self.written_concurrently.load(Ordering::Relaxed) {
                None
            } else {
                Some(col.expected_points)
            };
            match expected {
                Some(expected) if n != expected => {
                    if started.elapsed() > limit {
                        return Err(EngineError::op(
                            ENGINE,
                            "wait for index",
                            format!(
                                "collection `{}` holds {n} points after {}s, {expected} were \
                                 loaded: chroma ignores `add` of an id it already holds, so \
                                 duplicate ids (or writes lost by the server) explain it",
                                col.name,
                                limit.as_secs()
                            ),
                        ));
                    }
                    std::thread::sleep(poll::pause(started));
                }
                _ => break n,
            }
        };
        let mut details = Map::new();
        details.insert("collection".into(), json!(col.name));
        details.insert("requested_hnsw".into(), json!(col.settings));
        match self.lookup("wait for index", &col.name)? {
            Some(model) => {
                details.insert("server_hnsw".into(), effective_hnsw(&model));
            }
            None => {
                return Err(EngineError::op(
                    ENGINE,
                    "wait for index",
                    format!("collection `{}` disappeared from the server", col.name),
                ));
            }
        }
        details.insert(
            "brute_force_buffer".into(),
            json!(
                "new writes sit in a brute-force buffer of up to hnsw batch_size vectors \
                 (searched exactly next to the graph) before they enter HNSW; the graph is \
                 persisted every sync_threshold writes"
            ),
        );
        Ok(IndexReport {
            // Chroma does not say how many vectors are in the graph rather than the buffer
            // (indexing_status is not implemented by the single-node server).
            indexed_vectors: None,
            points: Some(points),
            // At most batch_size recent writes are scanned; the rest goes through HNSW.
            may_full_scan: false,
            details,
        })
    }

    /// Each HTTP call is its own request on the shared agent, so the writer and the
    /// searchers run side by side. Every write after the build goes through here (the
    /// trait's `upsert_batch` and `delete_batch` too).
    fn concurrent_writes(&self) -> Option<&dyn ConcurrentWrites> {
        Some(self)
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        params
            .reject_unknown(SEARCH_PARAMS)
            .map_err(|e| EngineError::bad_param(ENGINE, "search", e))?;
        let wanted = params
            .get_count("ef_search")
            .map_err(|e| EngineError::bad_param(ENGINE, "ef_search", e))?;
        match (&self.collection, wanted) {
            (Some(col), Some(w)) if w != col.settings.ef_search => {
                Err(self.unsupported_ef_change(col.settings.ef_search, w))
            }
            (Some(col), _) => {
                self.search_label = format!("ef_search={}", col.settings.ef_search);
                Ok(())
            }
            // Before create: remember the value for the collection, and refuse a second,
            // different one now rather than after a long build.
            (None, Some(w)) => match self.pending_ef_search {
                Some(p) if p != w => Err(self.unsupported_ef_change(p, w)),
                _ => {
                    self.pending_ef_search = Some(w);
                    Ok(())
                }
            },
            (None, None) => Ok(()),
        }
    }

    fn search(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        let op = query.operation();
        let col = self.collection(op)?;
        query.check(ENGINE, col.dim)?;
        out.clear();
        let where_json = query.filter.map(filter::where_json);
        let answer = self.query_answer(query.vector, query.k, where_json.as_ref(), op)?;
        self.answer_row(&answer, 0, out, op)
    }

    /// A `query` call takes many embeddings but one `where`: the queries that share a
    /// predicate (a label, a tenant; all of them when unfiltered) go in one call, split only
    /// past the server's maximum batch size; the answers are put back in query order.
    fn batch_search(&self, batch: Batch<'_>) -> EngineResult<Vec<Vec<Neighbor>>> {
        let op = batch.operation();
        batch.check(ENGINE, self.collection(op)?.dim)?;
        let per_call = self.max_batch_size.unwrap_or(usize::MAX);
        batch.by_predicate(per_call, |rows, predicate| {
            let where_json = predicate.map(filter::where_json);
            self.query(rows, batch.k, where_json.as_ref(), op)
        })
    }

    /// Chroma's `where` expresses equality and ranges (`$eq`, `$gte`, `$lt`, `$and`).
    fn check_filter(
        &self,
        attributes: &crate::filter::Attributes,
        predicate: &crate::filter::Predicate,
    ) -> EngineResult<()> {
        predicate
            .compile(attributes)
            .map(|_| ())
            .map_err(|e| EngineError::bad_param(ENGINE, "filter", e))
    }

    /// From the server's persist directory (`--server-storage`, or the script's
    /// `$RAGDBEVAL_SERVER_DIR/chroma/data` when the URL is the script's server), which every
    /// collection shares: only this collection's part is counted. Index = its vector
    /// segment's directory (`<persist>/<segment id>/`, found in `chroma.sqlite3`'s `segments`
    /// table): the HNSW files, where vectors and graph are one structure. Total = that
    /// directory + the bytes of this collection's rows in `chroma.sqlite3` (see
    /// [`collection_sqlite_bytes`]).
    fn footprint(&self) -> EngineResult<Footprint> {
        self.measure_footprint()
    }

    fn server_pid(&self) -> Option<u32> {
        self.server_pid.or_else(|| self.script_pid())
    }

    fn describe(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("server_api_version".into(), json!(self.api_version));
        out.insert("server_version".into(), json!(self.version()));
        if let Some(release) = &self.release {
            out.insert("chromadb_release".into(), json!(release));
        }
        out.insert("url".into(), json!(crate::secret::redact(&self.url)));
        out.insert("transport".into(), json!("HTTP API v2 (ureq)"));
        out.insert("started_by_adapter".into(), json!(self.started_by_adapter));
        out.insert(
            "api_key".into(),
            json!(if self.http.has_key() {
                "set"
            } else {
                "none"
            }),
        );
        out.insert("batch_size".into(), json!(self.batch_size));
        out.insert("server_max_batch_size".into(), json!(self.max_batch_size));
        out.insert("upload_parallel".into(), json!(self.upload_parallel));
        out.insert(
            "embedding_encoding".into(),
            json!(if self.base64 {
                "base64 f32le"
            } else {
                "json floats"
            }),
        );
        out.insert("search_params".into(), json!(self.search_label));
        match self.call::<Value>(
            "describe",
            "GET",
            "/api/v2/tenants/default_tenant/databases/default_database/collections_count",
            None::<&()>,
        ) {
            Ok(n) => out.insert("collections_in_database".into(), n),
            Err(e) => out.insert("collections_in_database_error".into(), json!(e.to_string())),
        };
        if let Some(col) = &self.collection {
            out.insert("collection".into(), json!(col.name));
            out.insert("collection_id".into(), json!(col.id));
            out.insert("requested_hnsw".into(), json!(col.settings));
            match self.count("describe", &col.id) {
                Ok(n) => out.insert("points".into(), json!(n)),
                Err(e) => out.insert("points_error".into(), json!(e.to_string())),
            };
            match self.lookup("describe", &col.name) {
                Ok(Some(model)) => {
                    out.insert("configuration".into(), model.configuration_json.clone());
                    out.insert("server_hnsw".into(), effective_hnsw(&model));
                }
                Ok(None) => {
                    out.insert("configuration_error".into(), json!("collection not found"));
                }
                Err(e) => {
                    out.insert("configuration_error".into(), json!(e.to_string()));
                }
            }
        }
        if let Some(dir) = self.storage_dir() {
            out.insert("persist_directory".into(), json!(dir.display().to_string()));
            out.insert(
                "footprint_note".into(),
                json!(
                    "the persist directory is the whole server's; the footprint counts only this \
                     collection's vector segment directory and SQLite rows; the HNSW files are \
                     rewritten every sync_threshold writes"
                ),
            );
        }
        out.insert(
            "ef_search_note".into(),
            json!(
                "ef_search is fixed at collection creation: the server applies a changed value \
                 only after a restart"
            ),
        );
        out
    }

    /// Deletes the collection (the server keeps running).
    fn close(&mut self) -> EngineResult<()> {
        if let Some(col) = self.collection.take() {
            self.drop_collection("close", &col.name)?;
        }
        Ok(())
    }
}

impl ChromaEngine {
    /// `delete` in requests of `batch_size` ids.
    fn delete_points(&self, ids: &[PointId]) -> EngineResult<()> {
        let col = self.collection("delete")?;
        let path = format!("{COLLECTIONS}/{}/delete", col.id);
        for chunk in ids.chunks(self.batch_size) {
            let body = DeleteBody {
                ids: chunk.iter().map(u64::to_string).collect(),
            };
            self.call::<Value>("delete", "POST", &path, Some(&body))?;
        }
        Ok(())
    }

    /// The build parameters of `spec`, checked, with the pending search `ef_search` (chroma
    /// fixes it at creation). Shared by `create` and the sweep check before the first build.
    fn build_settings(&self, spec: &CollectionSpec) -> EngineResult<BuildSettings> {
            let p = &spec.build_params;
            p.reject_unknown(BUILD_PARAMS)
                .map_err(|e| EngineError::bad_param(ENGINE, "build", e))?;
            let get = |name: &str| {
                p.get_u64(name)
                    .map_err(|e| EngineError::bad_param(ENGINE, name, e))
            };
            let build_ef = get("ef_search")?;
            let ef_search = match (build_ef, self.pending_ef_search) {
                (Some(b), Some(s)) if b != s => {
                    return Err(EngineError::bad_param(
                        ENGINE,
                        "ef_search",
                        format!(
                            "build ef_search={b} and search ef_search={s} differ; chroma fixes \
                             ef_search at creation, give one value"
                        ),
                    ));
                }
                (Some(v), _) | (None, Some(v)) => v,
                (None, None) => DEFAULT_EF_SEARCH,
            };
            let settings = BuildSettings {
                space: space_of(spec.distance),
                max_neighbors: get("m")?,
                ef_construction: get("ef_construction")?,
                ef_search,
                batch_size: get("batch_size")?,
                sync_threshold: get("sync_threshold")?,
                num_threads: get("num_threads")?,
            };
            if spec.dim == 0 {
                return Err(EngineError::bad_param(
                    ENGINE,
                    "dim",
                    "dimension must be at least 1",
                ));
            }
        Ok(settings)
    }
}
