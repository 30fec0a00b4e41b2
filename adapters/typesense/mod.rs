//! `typesense`: a Typesense server driven over its HTTP API (blocking `ureq`).
//!
//! Facts about the engine that shape this adapter (read in the source of Typesense 0.24.1,
//! the release `scripts/servers/typesense.sh` installs):
//!
//! - A `float[]` field with `num_dim` gets an hnswlib graph with M = 16 and ef_construction
//!   = 200, fixed in the source: there are no build parameters. The distance is cosine
//!   (vectors normalised on insert, `vector_distance` = 1 − cos) or inner product (`vec_dist:
//!   ip`, 1 − dot); Euclidean is not offered. A restarted 0.24 server reloads every vector
//!   field as cosine, whatever it was created with (`describe` says so for `dot` runs).
//! - hnswlib's `ef` is never set, so a search runs with max(10, k), where k is the larger
//!   of the vector query's `k` and the page size. The `ef` search parameter is therefore sent
//!   as the vector query's `k`, with the requested k as the page size (at most 250).
//! - The graph lives in memory only and is rebuilt from the stored documents when the server
//!   starts; an import is indexed before its HTTP call returns.
//! - Deletes only mark nodes; an upsert of a changed vector marks the old node deleted and
//!   reuses a deleted slot for the new one.
//! - Writes while the collection is searched crash the 0.24.1 server (SIGSEGV in hnswlib's
//!   `insertPoint`, from the streaming runbook within a minute): the adapter offers no
//!   concurrent writes, so a stream step refuses it before the run. Writes between searches
//!   (the insert, update and delete steps) are fine.
//! - `multi_search` is the batch call: up to 50 searches per request, one answer each.
//! - Ids are strings: a [`PointId`] travels as its decimal form and is parsed back.
//!
//! Without `--url` the adapter runs `scripts/servers/typesense.sh start` (idempotent) and
//! uses the URL it prints and the API key it made up. The server is left running;
//! `scripts/servers/typesense.sh stop` stops it.
//!
//! Files: `calls` (connecting and the engine's requests), `wire` (API bodies), `filter`
//! (attributes and `filter_by`); the trait impl is here.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::adapters::support::http::Http;
use crate::adapters::support::server::LocalServer;
use crate::adapters::support::filter as support_filter;
use crate::adapters::support::{poll, rows};
use crate::distance::Distance;
use crate::engine::{Batch, Query, CollectionSpec, ConnectOptions, EngineError, EngineResult, Footprint, IndexReport, Neighbor, PointId, VectorEngine};
use crate::filter::{Attributes, Predicate};
use crate::params::{ParamMap, ParamMapExt};

mod calls;
mod filter;
mod wire;

const ENGINE: &str = crate::adapters::meta::typesense::NAME;

/// Search parameters (module doc).
const SEARCH_PARAMS: &[&str] = &["ef", "flat_search_cutoff"];

/// The local server `scripts/servers/typesense.sh` starts.
const LOCAL_SERVER: LocalServer = LocalServer {
    engine: ENGINE,
    schemes: &["http://", "https://"],
    url_example: "http://HOST:PORT",
};

/// Connects to the Typesense server at `opts.url`, or starts the project's local one when no
/// URL is given, and checks that it answers and accepts the key.
pub fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(TypesenseEngine::connect(opts)?))
}

/// A Typesense server and the collection under test.
pub struct TypesenseEngine {
    http: Http,
    url: String,
    /// What `/debug` says (`0.24.1`).
    version: String,
    recreate: bool,
    batch_size: usize,
    upload_parallel: usize,
    server_pid: Option<u32>,
    server_storage: Option<PathBuf>,
    /// State dir of the script's server when `url` is that server's.
    script_state: Option<PathBuf>,
    started_by_adapter: bool,
    search: SearchSettings,
    collection: Option<Collection>,
}

/// The search parameters in force.
#[derive(Debug, Clone, Copy, Default)]
struct SearchSettings {
    ef: Option<u64>,
    flat_search_cutoff: Option<u64>,
}

/// The collection under test.
struct Collection {
    name: String,
    dim: usize,
    distance: Distance,
    /// `multi_search?collection=…&q=*&include_fields=id`: the URL every search of this
    /// collection extends with its page size.
    search_url: String,
    /// Points the collection must hold after the bulk load; `None` once upserts or deletes
    /// make it unknowable without tracking every id.
    expected_points: Option<u64>,
    attributes: Option<Arc<Attributes>>,
    /// The server's allocated bytes just before the collection was created.
    allocated_before: Option<u64>,
}

impl VectorEngine for TypesenseEngine {
    fn name(&self) -> &str {
        ENGINE
    }

    fn version(&self) -> String {
        self.version.clone()
    }

    fn check_build_params(&self, spec: &CollectionSpec) -> EngineResult<()> {
        check_spec(spec)
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        check_spec(spec)?;
        if self.lookup("create", &spec.name)?.is_some() {
            if !self.recreate {
                return Err(EngineError::op(
                    ENGINE,
                    "create",
                    format!(
                        "collection `{}` already exists at {}; pass --recreate to drop it",
                        spec.name,
                        crate::secret::redact(&self.url)
                    ),
                ));
            }
            self.drop_collection("create", &spec.name)?;
        }
        let allocated_before = self.allocated_bytes().ok();
        self.create_collection(spec)?;
        self.collection = Some(Collection {
            name: spec.name.clone(),
            dim: spec.dim,
            distance: spec.distance,
            search_url: format!(
                "{}/multi_search?collection={}&q=*&include_fields=id",
                self.http.base, spec.name
            ),
            expected_points: Some(0),
            attributes: spec.attributes.clone(),
            allocated_before,
        });
        Ok(())
    }

    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.import("insert", "create", ids, vectors)?;
        if let Some(col) = self.collection.as_mut() {
            col.expected_points = col.expected_points.map(|n| n + ids.len() as u64);
        }
        Ok(())
    }

    /// Imports are indexed before their call returns, so the count is right at once; it is
    /// polled for a while all the same, in case a server behind a proxy answers early.
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        let col = self.collection("wait for index")?;
        let expected = col.expected_points;
        let started = Instant::now();
        let points = loop {
            let n = self.document_count("wait for index", &col.name)?;
            match expected {
                Some(expected) if n != expected => {
                    if started.elapsed() > Duration::from_secs(120) {
                        return Err(EngineError::op(
                            ENGINE,
                            "wait for index",
                            format!(
                                "collection `{}` holds {n} documents, {expected} were imported",
                                col.name
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
        details.insert(
            "hnsw".into(),
            json!("M=16, ef_construction=200 (fixed in typesense 0.24)"),
        );
        Ok(IndexReport {
            indexed_vectors: Some(points),
            points: Some(points),
            // Every search walks the graph unless flat_search_cutoff sends a filtered one to
            // a scan of the documents that pass.
            may_full_scan: self.search.flat_search_cutoff.is_some_and(|c| c > 0),
            details,
        })
    }

    fn upsert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.import("upsert", "upsert", ids, vectors)?;
        if let Some(col) = self.collection.as_mut() {
            col.expected_points = None;
        }
        Ok(())
    }

    fn delete_batch(&mut self, ids: &[PointId]) -> EngineResult<()> {
        self.delete_points(ids)?;
        if let Some(col) = self.collection.as_mut() {
            col.expected_points = None;
        }
        Ok(())
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        params
            .reject_unknown(SEARCH_PARAMS)
            .map_err(|e| EngineError::bad_param(ENGINE, "search", e))?;
        let get = |name: &str| {
            params
                .get_u64(name)
                .map_err(|e| EngineError::bad_param(ENGINE, name, e))
        };
        let ef = params
            .get_count("ef")
            .map_err(|e| EngineError::bad_param(ENGINE, "ef", e))?;
        self.search = SearchSettings {
            ef,
            flat_search_cutoff: get("flat_search_cutoff")?,
        };
        Ok(())
    }

    fn search(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        let op = query.operation();
        query.check(ENGINE, self.collection(op)?.dim)?;
        let filter = query.filter.and_then(filter::filter_by);
        let mut answers = self.multi_search(query.vector, query.k, &[filter.as_deref()], op)?;
        *out = answers.pop().unwrap_or_default();
        Ok(())
    }

    /// `multi_search` requests of up to 50 searches each. Each search of a request has its
    /// own `filter_by`, so filtered queries go in their order too.
    fn batch_search(&self, batch: Batch<'_>) -> EngineResult<Vec<Vec<Neighbor>>> {
        let op = batch.operation();
        batch.check(ENGINE, self.collection(op)?.dim)?;
        let texts: Vec<Option<String>> = batch
            .queries()
            .map(|q| q.filter.and_then(filter::filter_by))
            .collect();
        let filters: Vec<Option<&str>> = texts.iter().map(Option::as_deref).collect();
        self.multi_search(batch.rows, batch.k, &filters, op)
    }

    fn check_filter(&self, attributes: &Attributes, predicate: &Predicate) -> EngineResult<()> {
        support_filter::check(ENGINE, attributes, predicate)?;
        filter::check(predicate).map_err(|e| EngineError::bad_param(ENGINE, "filter", e))
    }

    /// Index: the growth of the server's allocated memory since the collection was created
    /// (Typesense keeps the graph, its vectors and the in-memory indexes of the documents
    /// there, and reports no per-collection figure). Total: the server's data directory
    /// (documents in RocksDB, the Raft log), when it is known and holds this collection only.
    fn footprint(&self) -> EngineResult<Footprint> {
        self.measure_footprint()
    }

    fn server_pid(&self) -> Option<u32> {
        self.server_pid.or_else(|| self.script_pid())
    }

    fn describe(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("server_version".into(), json!(self.version));
        out.insert("url".into(), json!(crate::secret::redact(&self.url)));
        out.insert("transport".into(), json!("HTTP API (ureq), multi_search"));
        out.insert("started_by_adapter".into(), json!(self.started_by_adapter));
        out.insert("api_key".into(), json!(if self.http.has_key() { "set" } else { "none" }));
        out.insert("batch_size".into(), json!(self.batch_size));
        out.insert("upload_parallel".into(), json!(self.upload_parallel));
        out.insert("ef".into(), json!(self.search.ef));
        out.insert(
            "ef_note".into(),
            json!(
                "hnswlib searches with max(10, ef, k): ef travels as the vector query's k, \
                 the requested k as the page size"
            ),
        );
        out.insert("flat_search_cutoff".into(), json!(self.search.flat_search_cutoff));
        if let Some(col) = &self.collection {
            out.insert("collection".into(), json!(col.name));
            match self.lookup("describe", &col.name) {
                Ok(Some(model)) => {
                    out.insert("documents".into(), json!(model.num_documents));
                    out.insert("fields".into(), json!(model.fields));
                }
                Ok(None) => {
                    out.insert("collection_error".into(), json!("collection not found"));
                }
                Err(e) => {
                    out.insert("collection_error".into(), json!(e.to_string()));
                }
            }
            if col.distance == Distance::Dot {
                out.insert(
                    "distance_note".into(),
                    json!(
                        "typesense 0.24 reloads every vector field as cosine when the server \
                         restarts: an inner-product collection is only one until then"
                    ),
                );
            }
        }
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

/// Refuses what Typesense 0.24 cannot build: any build parameter (none exist), Euclidean
/// distance, a zero dimension, attribute names its documents already use.
fn check_spec(spec: &CollectionSpec) -> EngineResult<()> {
    spec.build_params.reject_unknown(&[]).map_err(|e| {
        EngineError::bad_param(
            ENGINE,
            "build",
            format!("{e}; typesense 0.24 fixes M=16 and ef_construction=200"),
        )
    })?;
    if spec.distance == Distance::Euclidean {
        return Err(EngineError::Unsupported {
            engine: ENGINE.into(),
            what: "Euclidean distance: typesense 0.24 searches by cosine or inner product only \
                   (use an angular or dot dataset)"
                .into(),
        });
    }
    if spec.dim == 0 {
        return Err(EngineError::bad_param(ENGINE, "dim", "dimension must be at least 1"));
    }
    if let Some(attributes) = &spec.attributes {
        filter::check_fields(attributes).map_err(|e| EngineError::bad_param(ENGINE, "filter", e))?;
    }
    Ok(())
}
