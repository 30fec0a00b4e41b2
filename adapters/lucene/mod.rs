//! `lucene`: Apache Lucene's HNSW vector search (the engine inside Elasticsearch, OpenSearch
//! and Solr), run by `LuceneServer.java` in this folder and driven over its binary protocol
//! ([`wire`]) on 127.0.0.1.
//!
//! Facts about the engine that shape this adapter (Lucene 9.9.1, the release inside
//! Anserini 1.7.1's jar, which `scripts/servers/lucene.sh` installs):
//!
//! - Every segment has its own HNSW graph (`Lucene99HnswVectorsFormat`: `m` links, a
//!   `beamWidth` of `ef_construction`), built as documents are indexed and rebuilt when
//!   segments merge. A search walks every segment's graph and merges the top hits, so the bulk
//!   load ends with a force merge to `merge_segments` segments (1 by default), as benchmark
//!   setups of Lucene do.
//! - A KNN query's `k` is its candidate list: the search asks for `max(ef, k)` and keeps the
//!   top k. With a filter, Lucene walks the graph keeping passing documents only, and scans
//!   the passing ones exactly when there are few of them.
//! - Writes after the build go through the same IndexWriter; the server reopens its searcher
//!   before it acknowledges one, so an acknowledged write is visible (Elasticsearch's
//!   `refresh=true`). Updates replace the document holding the point's id term.
//! - Lucene 9.9 uses the Java Vector API on Java 20 and 21 only; on the Java 25 runtime its
//!   distances run in plain Java (`describe` carries the server's versions).
//!
//! Without `--url` the adapter runs `scripts/servers/lucene.sh start` (idempotent) and uses
//! the URL it prints. The server is left running; `scripts/servers/lucene.sh stop` stops it.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::adapters::support::filter as support_filter;
use crate::adapters::support::pool::IdlePool;
use crate::adapters::support::process;
use crate::adapters::support::server::LocalServer;
use crate::adapters::support::{rows, upload};
use crate::engine::{
    Batch, CollectionSpec, ConcurrentWrites, ConnectOptions, EngineError, EngineResult,
    Footprint, IndexHolds, IndexReport, Neighbor, PointId, Query, SourcedBytes, VectorEngine,
};
use crate::filter::{Attributes, Column, Condition, FieldKind, Predicate, Value as AttrValue};
use crate::params::ParamMap;

mod settings;
mod wire;

use settings::{BuildSettings, SearchSettings};
use wire::{Answer, CallError, Conn, Request, op};

const ENGINE: &str = crate::adapters::meta::lucene::NAME;

/// Points per write request when `--batch-size` is not given.
const DEFAULT_BATCH: usize = 1_000;
/// Idle connections kept for the searching threads.
const MAX_IDLE_CONNECTIONS: usize = 64;

const LOCAL_SERVER: LocalServer = LocalServer {
    engine: ENGINE,
    schemes: &["lucene://"],
    url_example: "lucene://HOST:PORT",
};

/// Connects to the Lucene server at `opts.url`, or starts the project's local one when no URL
/// is given, and asks it for its versions.
pub fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(LuceneEngine::connect(opts)?))
}

/// A Lucene server and the collection under test.
pub struct LuceneEngine {
    addr: SocketAddr,
    /// `HOST:PORT` as given, for messages.
    target: String,
    timeout: Duration,
    pool: IdlePool<Conn>,
    /// Lucene's and Java's versions as the server reports them.
    versions: Value,
    recreate: bool,
    batch_size: usize,
    upload_parallel: usize,
    server_pid: Option<u32>,
    search: SearchSettings,
    collection: Option<Collection>,
}

/// The collection under test.
struct Collection {
    name: String,
    dim: usize,
    settings: BuildSettings,
    attributes: Option<Arc<Attributes>>,
    /// Whether the bulk load was merged: later waits keep the segments the writes made.
    merged: bool,
}

impl LuceneEngine {
    fn connect(opts: &ConnectOptions) -> EngineResult<LuceneEngine> {
        let url = match &opts.url {
            Some(url) => url.trim_end_matches('/').to_string(),
            None => LOCAL_SERVER.start()?,
        };
        let target = url.strip_prefix("lucene://").unwrap_or_default().to_string();
        let addr = resolve(&url, &target)?;
        let mut engine = LuceneEngine {
            addr,
            server_pid: opts
                .server_pid
                .or_else(|| addr.ip().is_loopback().then(|| process::listener_pid(addr.port()))?),
            target,
            timeout: opts.timeout,
            pool: IdlePool::new(MAX_IDLE_CONNECTIONS),
            versions: Value::Null,
            recreate: opts.recreate,
            batch_size: opts.batch_size_or(DEFAULT_BATCH),
            upload_parallel: opts.upload_parallel.max(1),
            search: SearchSettings::default(),
            collection: None,
        };
        let hello = engine.call("connect", &mut Request::new(op::HELLO, None), |a| Ok(a.text()))?;
        engine.versions = serde_json::from_str(&hello).map_err(|e| {
            EngineError::op(ENGINE, "connect", format!("not a Lucene server's answer ({e}): {hello}"))
        })?;
        Ok(engine)
    }

    /// Sends `request` on an idle connection (or a new one) and reads its answer with `read`.
    fn call<T>(
        &self,
        operation: &str,
        request: &mut Request,
        read: impl FnOnce(&mut Answer<'_>) -> Result<T, CallError>,
    ) -> EngineResult<T> {
        let mut conn = match self.pool.take() {
            Some(conn) => conn,
            None => Conn::connect(&self.addr, self.timeout).map_err(|e| self.io_error(operation, &e))?,
        };
        let outcome = conn.call(request).and_then(|mut answer| read(&mut answer));
        match outcome {
            Ok(value) => {
                self.pool.give_back(conn);
                Ok(value)
            }
            // The server answered: the connection is still in step.
            Err(CallError::Server(message) | CallError::Refused(message)) => {
                self.pool.give_back(conn);
                Err(EngineError::op(ENGINE, operation, message))
            }
            Err(CallError::Io(e)) => Err(self.io_error(operation, &e)),
        }
    }

    /// A failed connection: a timeout says which option to raise, the rest that the server is
    /// not there and how to get one.
    fn io_error(&self, operation: &str, e: &std::io::Error) -> EngineError {
        use std::io::ErrorKind::{TimedOut, WouldBlock};
        if matches!(e.kind(), TimedOut | WouldBlock) {
            return EngineError::op(
                ENGINE,
                operation,
                format!(
                    "no answer within {:?} (--timeout); raise it if the server is just slow",
                    self.timeout
                ),
            );
        }
        EngineError::Unreachable {
            engine: ENGINE.into(),
            target: self.target.clone(),
            message: format!("{operation}: {e}; {}", LOCAL_SERVER.hint()),
        }
    }

    fn collection(&self, operation: &str) -> EngineResult<&Collection> {
        self.collection
            .as_ref()
            .ok_or_else(|| EngineError::op(ENGINE, operation, "no collection: call create first"))
    }

    /// Writes `ids` (rows of `vectors`) in requests of `batch_size` points, `upload_parallel`
    /// at a time; `upsert` replaces the documents of ids already there.
    fn write(&self, operation: &str, upsert: bool, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let c = self.collection(operation)?;
        rows::check(ENGINE, operation, c.dim, ids.len(), vectors.len())?;
        let parts: Vec<(&[PointId], &[f32])> = ids
            .chunks(self.batch_size)
            .zip(vectors.chunks(self.batch_size * c.dim))
            .collect();
        upload::in_parallel(ENGINE, operation, self.upload_parallel, &parts, |(ids, vectors)| {
            let room = 5 + ids.len() * (8 + 4 * c.dim);
            let mut request = Request::with_capacity(op::WRITE, Some(&c.name), room);
            request.u8(u8::from(upsert)).u32(ids.len() as u32);
            for (id, vector) in ids.iter().zip(vectors.chunks_exact(c.dim)) {
                request.u64(*id).floats(vector);
                attributes_of(&mut request, c.attributes.as_deref(), *id);
            }
            self.call(operation, &mut request, |_| Ok(()))
        })
    }

    fn stats(&self, operation: &str) -> EngineResult<Value> {
        let c = self.collection(operation)?;
        let text = self.call(operation, &mut Request::new(op::STATS, Some(&c.name)), |a| Ok(a.text()))?;
        serde_json::from_str(&text).map_err(|e| EngineError::op(ENGINE, operation, format!("{e}: {text}")))
    }
}

/// The socket address of `lucene://HOST:PORT`; anything else is a bad `url`.
fn resolve(url: &str, target: &str) -> EngineResult<SocketAddr> {
    let bad = |why: &str| {
        EngineError::bad_param(
            ENGINE,
            "url",
            format!("`{}` {why}: expected {}", crate::secret::redact(url), LOCAL_SERVER.url_example),
        )
    };
    if !url.starts_with("lucene://") || target.is_empty() || target.contains('/') {
        return Err(bad("is not a Lucene server's URL"));
    }
    let mut addrs = target.to_socket_addrs().map_err(|e| bad(&format!("does not resolve ({e})")))?;
    addrs.next().ok_or_else(|| bad("does not resolve"))
}

/// Point `id`'s attributes in the collection's field order: per field, present or not, then
/// its value.
fn attributes_of(request: &mut Request, attributes: Option<&Attributes>, id: PointId) {
    let Some(attributes) = attributes else {
        return;
    };
    if !attributes.covers(id) {
        request.absent(attributes.fields().len());
        return;
    }
    for (_, value) in attributes.values_of(id) {
        request.u8(1);
        match value {
            AttrValue::Keyword(s) => request.str(s),
            AttrValue::Integer(x) => request.i64(x),
        };
    }
}

/// Refuses keyword values the protocol cannot carry, before anything is loaded.
fn check_keywords(attributes: &Attributes) -> EngineResult<()> {
    for (index, field) in attributes.fields().iter().enumerate() {
        if let Column::Keyword { dictionary, .. } = attributes.column(index) {
            for value in dictionary {
                wire::check_str(&format!("a value of attribute `{}`", field.name), value)
                    .map_err(|e| EngineError::op(ENGINE, "create", e))?;
            }
        }
    }
    Ok(())
}

/// The predicate's conditions, each an equality (a string) or a range (two i64).
fn encode_filter(request: &mut Request, filter: Option<&Predicate>) {
    let conditions = filter.map_or(&[][..], |p| &p.all);
    request.u16(conditions.len() as u16);
    for condition in conditions {
        match condition {
            Condition::Equals { field, value } => request.u8(0).str(field).str(value),
            Condition::Range { field, gte, lt } => request.u8(1).str(field).i64(*gte).i64(*lt),
        };
    }
}

/// The size of [`encode_filter`]'s bytes.
fn filter_bytes(filter: Option<&Predicate>) -> usize {
    let conditions = filter.map_or(&[][..], |p| &p.all);
    2 + conditions
        .iter()
        .map(|c| match c {
            Condition::Equals { field, value } => 5 + field.len() + value.len(),
            Condition::Range { field, .. } => 19 + field.len(),
        })
        .sum::<usize>()
}

/// `n` hits of (u64 id, f32 score).
fn read_hits(answer: &mut Answer<'_>, out: &mut Vec<Neighbor>) -> Result<(), CallError> {
    let n = answer.u32()?;
    out.reserve(n as usize);
    for _ in 0..n {
        let id = answer.u64()?;
        let score = answer.f32()?;
        out.push(Neighbor { id, score });
    }
    Ok(())
}

impl VectorEngine for LuceneEngine {
    fn name(&self) -> &str {
        ENGINE
    }

    fn version(&self) -> String {
        self.versions["lucene"].as_str().unwrap_or("unknown").to_string()
    }

    fn check_build_params(&self, spec: &CollectionSpec) -> EngineResult<()> {
        BuildSettings::parse(&spec.build_params, spec.distance).map(|_| ())
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        let settings = BuildSettings::parse(&spec.build_params, spec.distance)?;
        if let Some(attributes) = &spec.attributes {
            check_keywords(attributes)?;
        }
        let mut request = Request::new(op::CREATE, Some(&spec.name));
        request
            .u8(settings.similarity().0)
            .u8(u8::from(settings.int8))
            .u32(spec.dim as u32)
            .u32(settings.m)
            .u32(settings.ef_construction)
            .u32(settings.ram_buffer_mb)
            .u8(u8::from(self.recreate));
        let fields = spec.attributes.as_ref().map_or(&[][..], |a| a.fields());
        request.u16(fields.len() as u16);
        for field in fields {
            request.str(&field.name).u8(u8::from(field.kind == FieldKind::Integer));
        }
        self.call("create", &mut request, |_| Ok(()))?;
        self.collection = Some(Collection {
            name: spec.name.clone(),
            dim: spec.dim,
            settings,
            attributes: spec.attributes.clone(),
            merged: false,
        });
        Ok(())
    }

    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.write("insert", false, ids, vectors)
    }

    /// Force-merges the bulk load to `merge_segments` segments (after the build only: later
    /// waits keep the segments the writes made), commits and reopens the searcher.
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        let c = self.collection("wait_until_ready")?;
        let mut request = Request::new(op::READY, Some(&c.name));
        request.u32(if c.merged { 0 } else { c.settings.merge_segments });
        let (documents, segments) =
            self.call("wait_until_ready", &mut request, |a| Ok((a.u64()?, a.u32()?)))?;
        if let Some(c) = self.collection.as_mut() {
            c.merged = true;
        }
        let mut details = Map::new();
        details.insert("segments".into(), json!(segments));
        Ok(IndexReport {
            indexed_vectors: Some(documents),
            points: Some(documents),
            may_full_scan: false,
            details,
        })
    }

    /// The server takes writes through the same IndexWriter while it searches.
    fn concurrent_writes(&self) -> Option<&dyn ConcurrentWrites> {
        Some(self)
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        self.search = SearchSettings::parse(params)?;
        Ok(())
    }

    fn search(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        let op = query.operation();
        let c = self.collection(op)?;
        if !query.start(ENGINE, c.dim, out)? {
            return Ok(());
        }
        let room = 8 + 4 * query.vector.len() + filter_bytes(query.filter);
        let mut request = Request::with_capacity(op::SEARCH, Some(&c.name), room);
        request.u32(query.k as u32).u32(self.search.ef).floats(query.vector);
        encode_filter(&mut request, query.filter);
        self.call(op, &mut request, |a| read_hits(a, out))
    }

    /// Lucene's KNN query filters with any boolean query: keyword terms and long ranges.
    fn check_filter(&self, attributes: &Attributes, predicate: &Predicate) -> EngineResult<()> {
        support_filter::check(ENGINE, attributes, predicate)?;
        for condition in &predicate.all {
            if let Condition::Equals { field, value } = condition {
                wire::check_str(&format!("the value of `{field}`"), value)
                    .map_err(|e| EngineError::bad_param(ENGINE, "filter", e))?;
            }
        }
        Ok(())
    }

    fn batch_search(&self, batch: Batch<'_>) -> EngineResult<Vec<Vec<Neighbor>>> {
        batch.check(ENGINE, self.collection(batch.operation())?.dim)?;
        crate::engine::search_each(self, batch)
    }

    /// From the server's index directory: the HNSW graphs (`.vex`, `.vem`) are the index, every
    /// file of the collection (vectors, quantized codes, postings, doc values) the total.
    fn footprint(&self) -> EngineResult<Footprint> {
        let int8 = self.collection("footprint")?.settings.int8;
        let stats = self.stats("footprint")?;
        let bytes = |exts: &[&str]| -> u64 {
            exts.iter().map(|e| stats["bytes"][*e].as_u64().unwrap_or(0)).sum()
        };
        let total: u64 = stats["bytes"]
            .as_object()
            .map_or(0, |files| files.values().filter_map(Value::as_u64).sum());
        // With int8 the graph search scores the quantized codes (.veq), which are then part of
        // the index; the float vectors (.vec) are kept for merges either way.
        let (exts, holds, what): (&[&str], _, _) = if int8 {
            (&["vex", "vem", "veq", "vemq"], IndexHolds::GraphAndVectors, ".vex + .vem + .veq + .vemq (HNSW graphs and int8 codes)")
        } else {
            (&["vex", "vem"], IndexHolds::GraphOnly, ".vex + .vem (HNSW graphs)")
        };
        let index = SourcedBytes {
            bytes: bytes(exts),
            source: format!("Lucene index files {what}, as the server lists them"),
        };
        let total = SourcedBytes {
            bytes: total,
            source: "every file of the collection's Lucene index, as the server lists them".into(),
        };
        Ok(Footprint::new(Ok(index), Ok(total)).holding(holds))
    }

    fn server_pid(&self) -> Option<u32> {
        self.server_pid
    }

    fn describe(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("server".into(), self.versions.clone());
        out.insert("protocol".into(), json!("LuceneServer.java over TCP, one request per search"));
        if let Some(c) = &self.collection {
            out.insert("collection".into(), json!(c.name));
            out.insert("build".into(), c.settings.to_json());
        }
        out.insert("ef".into(), json!(self.search.ef));
        if let Ok(stats) = self.stats("describe") {
            out.insert("index".into(), stats);
        }
        out
    }

    /// Drops the collection: its index directory is removed.
    fn close(&mut self) -> EngineResult<()> {
        let result = match self.collection.take() {
            Some(c) => self.call("close", &mut Request::new(op::DROP, Some(&c.name)), |_| Ok(())),
            None => Ok(()),
        };
        self.pool.clear();
        result
    }
}

impl ConcurrentWrites for LuceneEngine {
    fn upsert(&self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.write("upsert", true, ids, vectors)
    }

    fn delete(&self, ids: &[PointId]) -> EngineResult<()> {
        let c = self.collection("delete")?;
        for part in ids.chunks(self.batch_size) {
            let mut request = Request::new(op::DELETE, Some(&c.name));
            request.u32(part.len() as u32);
            for id in part {
                request.u64(*id);
            }
            self.call("delete", &mut request, |_| Ok(()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keyword_value_too_long_for_the_protocol_is_refused_before_the_load() {
        let mut attributes = Attributes::new(2);
        let long = "x".repeat(wire::MAX_STR + 1);
        let column = Column::Keyword {
            dictionary: vec!["short".into(), long],
            codes: vec![0, 1],
        };
        attributes.push("title", column).unwrap();
        let message = check_keywords(&attributes).unwrap_err().to_string();
        assert!(message.contains("attribute `title`") && message.contains("65536 bytes"), "{message}");
    }

    #[test]
    fn a_filter_takes_the_bytes_it_was_given_room_for() {
        let p = Predicate {
            all: vec![Condition::equals("label", "odd"), Condition::range("n", 3..9)],
        };
        for filter in [None, Some(&p)] {
            let mut r = Request::new(op::SEARCH, None);
            encode_filter(&mut r, filter);
            assert_eq!(r.payload_len(), filter_bytes(filter));
        }
    }
}
