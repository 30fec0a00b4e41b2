//! `milvus`: Milvus (standalone or a distributed cluster) over its gRPC API.
//!
//! One collection per run: an `INT64` primary key `id` (the harness's point id), a
//! `FLOAT_VECTOR` field `vector`, and one scalar field per attribute when the run filters
//! (`VARCHAR` or `INT64`, each with an `INVERTED` index). The vector index is created with
//! the collection and the collection is loaded before the first write, so that writes are
//! searchable as soon as they are acknowledged. The index type, its parameters, the number of
//! shards and the consistency level are build parameters (config.toml); the collection's
//! consistency is Strong unless a set says otherwise, so a search sees every write
//! acknowledged before it, as the runbooks' read-after-write checks require.
//!
//! After the build, `wait_until_ready` flushes once (sealing the segments, which is what makes
//! Milvus build the index on them), then waits until `DescribeIndex` reports the index
//! `Finished` with every row indexed, and the collection loaded; the point count is the
//! server's `count(*)` under Strong consistency. Milvus rate-limits flushes, so later
//! mutation phases are not flushed: their rows are searched in growing segments, and the
//! report says so (`may_full_scan`).
//!
//! The client: tonic's gRPC channel (HTTP/2) with the messages of milvus-proto declared in
//! [`proto`] (see there why not the `milvus-sdk-rust` crate). Writes and administration run
//! on one private multi-thread runtime and one channel; batched inserts go out as
//! `upload_parallel` concurrent `Insert` calls of `batch_size` rows. Searches run on a
//! per-thread connection ([`local`]); `batch_search` sends `nq > 1` requests, and the
//! filtered batch groups the queries that share a predicate into one request.
//!
//! Without `--url` the adapter runs `scripts/servers/milvus.sh start` (the Milvus server
//! inside the milvus-lite wheel, which accepts FLAT, IVF_FLAT and AUTOINDEX only) and uses the
//! URL it prints. milvus-lite never seals a collection's segment: it answers every search
//! through its interim index whatever index and `nprobe` were asked for, reports no indexed
//! rows, and the run is marked with the reason (`full_scan_reason`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value as Json};
use tokio::runtime::Runtime;
use tonic::transport::{Channel, Endpoint};

use crate::adapters::support::rows;
use crate::distance::Distance;
use crate::engine::{Batch, Query, CollectionSpec, ConcurrentWrites, ConnectOptions, EngineError, EngineResult, Footprint, IndexReport, Neighbor, PointId, VectorEngine, connection_cause};
use crate::filter::{Attributes, Predicate};
use crate::params::{ParamMap, ParamMapExt};

mod calls;
mod data;
mod filter;
mod local;
/// The Milvus gRPC messages the adapter sends and reads (also used by its client bench).
pub mod proto;
mod rpc;
mod server;
mod settings;

use settings::{BuildSettings, SearchSettings};

const ENGINE: &str = crate::adapters::meta::milvus::NAME;
/// Used when the runner passes no per-request timeout (`ConnectOptions::default()`).
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Connecting is quick or hopeless; a short cap makes `open` fail fast on a dead address.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Rows per `Insert` when the runner passes no batch size.
const DEFAULT_BATCH: usize = 1000;
/// Queries per search request of a batch (Milvus caps `nq`; this keeps requests small).
const SEARCH_CHUNK: usize = 512;

/// Connects to the server named by `opts.url`, or starts the local one with
/// `scripts/servers/milvus.sh start`, and checks that it answers the Milvus API, so that a
/// wrong address fails here rather than in the middle of a timed phase.
pub fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(MilvusEngine::connect(opts)?))
}

/// The collection under test.
pub(super) struct Collection {
    name: String,
    dim: usize,
    build: BuildSettings,
    attributes: Option<Arc<Attributes>>,
    /// Flushed after the build (once: Milvus rate-limits flushes).
    flushed: bool,
}

/// A Milvus server and the collection under test.
pub struct MilvusEngine {
    /// Private runtime for writes and administration (the trait is synchronous).
    rt: Runtime,
    channel: Channel,
    /// How every search thread connects (its own connection, see [`local`]).
    endpoint: Endpoint,
    owner: u64,
    /// Server URL without credentials, for messages.
    url: String,
    version: String,
    server_pid: Option<u32>,
    recreate: bool,
    batch_size: usize,
    upload_parallel: usize,
    search: SearchSettings,
    collection: Option<Collection>,
}

impl ConcurrentWrites for MilvusEngine {
    fn upsert(&self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.write(rpc::method!("Upsert"), "upsert", ids, vectors)
    }

    fn delete(&self, ids: &[PointId]) -> EngineResult<()> {
        self.delete_points(ids)
    }
}

impl VectorEngine for MilvusEngine {
    fn name(&self) -> &str {
        ENGINE
    }

    fn version(&self) -> String {
        self.version.clone()
    }

    fn check_build_params(&self, spec: &CollectionSpec) -> EngineResult<()> {
        settings::build_settings(spec).map(|_| ())
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        let build = settings::build_settings(spec)?;
        if let Some(f) = spec
            .attributes
            .iter()
            .flat_map(|a| a.fields())
            .find(|f| !filter::name_ok(&f.name))
        {
            return Err(EngineError::bad_param(
                ENGINE,
                "attributes",
                format!("`{}` is the name of the collection's own field", f.name),
            ));
        }
        self.collection = None;
        let coll = Collection {
            name: spec.name.clone(),
            dim: spec.dim,
            build,
            attributes: spec.attributes.clone(),
            flushed: false,
        };
        self.create_collection(&coll)?;
        self.collection = Some(coll);
        Ok(())
    }

    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.write(rpc::method!("Insert"), "bulk insert", ids, vectors)
    }

    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        if self.coll("wait until ready")?.flushed {
            return self.ready_report();
        }
        let name = self.coll("flush")?.name.clone();
        let _: proto::StatusResponse = self.admin(
            "flush",
            rpc::method!("Flush"),
            proto::FlushRequest {
                collection_names: vec![name],
            },
        )?;
        if let Some(c) = self.collection.as_mut() {
            c.flushed = true;
        }
        self.ready_report()
    }

    /// `Upsert` replaces the row of an existing key (a delete and an insert in one call).
    /// Writes run on the shared runtime and searches on each thread's own connection, so the
    /// writer and the searchers run side by side.
    fn concurrent_writes(&self) -> Option<&dyn ConcurrentWrites> {
        Some(self)
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        self.search = settings::search_settings(params)?;
        Ok(())
    }

    fn check_filter(&self, attributes: &Attributes, predicate: &Predicate) -> EngineResult<()> {
        filter::check(attributes, predicate)
    }

    fn search(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        out.clear();
        let op = query.operation();
        query.check(ENGINE, self.coll(op)?.dim)?;
        if query.k > 0 {
            let expr = query.filter.map(filter::expr).unwrap_or_default();
            *out = self.search_rows(op, query.vector, query.k, expr)?.remove(0);
        }
        Ok(())
    }

    /// Queries that share a predicate go in one request (Milvus takes one expression per
    /// search), [`SEARCH_CHUNK`] at the most; answers come back in the queries' order.
    fn batch_search(&self, batch: Batch<'_>) -> EngineResult<Vec<Vec<Neighbor>>> {
        let op = batch.operation();
        let nq = batch.check(ENGINE, self.coll(op)?.dim)?;
        if batch.k == 0 {
            return Ok(vec![Vec::new(); nq]);
        }
        batch.by_predicate(SEARCH_CHUNK, |rows, predicate| {
            let expr = predicate.map(filter::expr).unwrap_or_default();
            self.search_rows(op, rows, batch.k, expr)
        })
    }

    /// Milvus reports no size of a collection's index or storage over its API
    /// (`DescribeIndex` and `GetCollectionStatistics` give row counts only), and the
    /// milvus-lite server keeps every collection in one SQLite file with its indexes in
    /// memory: neither figure can be measured for one collection, and none is estimated.
    fn footprint(&self) -> EngineResult<Footprint> {
        Ok(Footprint::unmeasured(
            "Milvus reports no per-collection index or storage size over its API \
             (DescribeIndex and GetCollectionStatistics give row counts only)",
        ))
    }

    fn server_pid(&self) -> Option<u32> {
        self.server_pid
    }

    fn describe(&self) -> Map<String, Json> {
        let mut m = Map::new();
        m.insert("server_version".into(), self.version.clone().into());
        m.insert("url".into(), self.url.clone().into());
        if let Some(c) = &self.collection {
            m.insert("collection".into(), c.name.clone().into());
            m.insert("index_type".into(), c.build.index_type.clone().into());
            m.insert("index_params".into(), Json::Object(c.build.index_params.clone()));
            m.insert("metric_type".into(), c.build.metric.into());
            m.insert("num_shards".into(), c.build.num_shards.into());
            m.insert("consistency".into(), c.build.consistency.0.into());
        }
        m.insert(
            "search_params".into(),
            Json::Object(self.search.params.clone()),
        );
        m
    }

    /// Drops the collection: a benchmark collection should not outlive its run on a shared
    /// server.
    fn close(&mut self) -> EngineResult<()> {
        crate::adapters::support::per_thread::forget(self.owner);
        if let Some(c) = self.collection.take() {
            self.drop_if_exists("close", &c.name)?;
        }
        Ok(())
    }
}
