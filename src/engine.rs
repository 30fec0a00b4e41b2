//! The adapter contract: the one trait every engine implements.
//!
//! The shape follows ann-benchmarks (`fit`, `set_query_arguments`, `query`, `batch_query`,
//! `get_memory_usage`, `done`), widened to the five phases ragdbeval measures: build, insert,
//! update, delete and query. An adapter knows its engine and nothing else: it never sees
//! ground truth, metrics or result files. The runner owns timing; an adapter only does the
//! work it is asked to do and reports facts about the engine.

pub mod hybrid;
mod query;
pub mod rows;

pub use query::{Batch, Query};

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::distance::Distance;
use crate::engine_meta::EngineMeta;
use crate::filter::{Attributes, Predicate};
use crate::params::ParamMap;
use crate::types::ElementType;

/// Stable point identifier: the row number of the vector in the dataset's `train` array.
/// Engines that need another id type (UUIDs, strings) map to and from it inside the adapter.
pub use crate::types::PointId;

/// One search hit as the engine reported it. `score` is the engine's own number (distance or
/// similarity, whatever the engine uses); the harness never trusts it for quality metrics and
/// recomputes distances from the dataset vectors.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Neighbor {
    pub id: PointId,
    pub score: f32,
}

/// What the engine is asked to create.
#[derive(Debug, Clone)]
pub struct CollectionSpec {
    /// Collection / table / index name to use inside the engine.
    pub name: String,
    pub dim: usize,
    pub distance: Distance,
    /// How many vectors the build phase will load (engines size thresholds from it).
    pub expected_points: usize,
    /// Index parameters (`m`, `ef_construct`, quantization, ...), already merged from the
    /// engine config and the command line.
    pub build_params: ParamMap,
    /// A directory the engine may use for its files; removed by the runner afterwards unless
    /// the user asked to keep it.
    pub work_dir: PathBuf,
    /// Attributes of the points, indexed by point id, when the run searches with filters.
    /// An adapter stores each point's attributes with it on every insert and upsert (looking
    /// them up by id), and creates during `create`/`wait_until_ready` the index that makes
    /// its engine filter fast (payload index, B-tree, ...): that time is build time.
    pub attributes: Option<std::sync::Arc<Attributes>>,
    /// What the dataset's components are. The vectors handed over are `f32` whatever it is
    /// (exact for 8-bit integers); an engine with a native type stores them as that type
    /// (Qdrant's `uint8`), and [`VectorEngine::stored_element_type`] says what it stored.
    pub element_type: ElementType,
}

/// Facts reported when the index has become ready after a bulk load.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct IndexReport {
    /// Vectors covered by an ANN index (as opposed to answered by a plain scan), if known.
    pub indexed_vectors: Option<u64>,
    /// Points the engine holds after the build, if it can tell.
    pub points: Option<u64>,
    /// True when some searches may be answered by a brute-force scan instead of the index
    /// (for example segments below Qdrant's full-scan threshold). Marks the run.
    pub may_full_scan: bool,
    /// Engine-specific facts worth keeping in the result (segments, thresholds, plans).
    pub details: serde_json::Map<String, serde_json::Value>,
}

/// A measured engine-side figure and where it came from (file system, telemetry, process).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourcedBytes {
    pub bytes: u64,
    pub source: String,
}

/// The two size figures every engine reports, so that they compare the same things across
/// engines. Each is measured (bytes plus where they came from) or `None` with the reason it
/// could not be measured: never an estimate.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Footprint {
    /// The index structure alone (HNSW graph, IVF lists): what a tuning parameter such as
    /// `m` grows. Engines whose index and vectors are one structure report that structure.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub index: Option<SourcedBytes>,
    /// Why `index` is `None`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub index_unmeasured: Option<String>,
    /// Everything that belongs to this collection and nothing else: vectors, index, WAL or
    /// log, metadata; on disk, or in memory for in-memory engines. At least `index`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub total: Option<SourcedBytes>,
    /// Why `total` is `None`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub total_unmeasured: Option<String>,
    /// What `index` holds for this engine, so that a report can say it beside the figure
    /// (absent with no index, and in files written before it was recorded).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub index_holds: Option<IndexHolds>,
}

/// What an engine's `index` figure holds. The same word covers different things: Qdrant's
/// index is its HNSW graph alone (the vectors lie beside it and count in `total` only), while
/// pgvector's, Chroma's and Redis's index structures hold the vectors too. Index figures of
/// two engines compare only when they hold the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexHolds {
    /// The HNSW graph's links alone.
    GraphOnly,
    /// An HNSW graph whose nodes carry the vectors.
    GraphAndVectors,
    /// IVF lists that carry the vectors.
    ListsAndVectors,
}

impl IndexHolds {
    /// How reports name it: `graph only`, `graph + vectors`, `IVF lists + vectors`.
    pub fn label(self) -> &'static str {
        match self {
            IndexHolds::GraphOnly => "graph only",
            IndexHolds::GraphAndVectors => "graph + vectors",
            IndexHolds::ListsAndVectors => "IVF lists + vectors",
        }
    }
}

impl Footprint {
    /// Both figures, each measured (`Ok`) or not with its reason (`Err`).
    pub fn new(index: Result<SourcedBytes, String>, total: Result<SourcedBytes, String>) -> Self {
        let (index, index_unmeasured) = match index {
            Ok(b) => (Some(b), None),
            Err(why) => (None, Some(why)),
        };
        let (total, total_unmeasured) = match total {
            Ok(b) => (Some(b), None),
            Err(why) => (None, Some(why)),
        };
        Footprint {
            index,
            index_unmeasured,
            total,
            total_unmeasured,
            index_holds: None,
        }
    }

    /// States what the index figure holds (kept only when the index was measured).
    pub fn holding(mut self, holds: IndexHolds) -> Self {
        self.index_holds = self.index.as_ref().map(|_| holds);
        self
    }

    /// Neither figure could be measured, for one reason.
    pub fn unmeasured(why: impl Into<String>) -> Self {
        let why = why.into();
        Footprint::new(Err(why.clone()), Err(why))
    }
}

/// Errors an engine adapter can raise. Each carries the engine's own message so the user
/// can act on it.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot reach {engine} at {target}: {message}")]
    Unreachable {
        engine: String,
        target: String,
        message: String,
    },
    #[error("{engine} rejected parameter `{param}`: {message}")]
    BadParameter {
        engine: String,
        param: String,
        message: String,
    },
    #[error("{engine} does not support {what}")]
    Unsupported { engine: String, what: String },
    #[error("{engine} failed during {operation}: {message}")]
    Operation {
        engine: String,
        operation: String,
        message: String,
    },
}

impl EngineError {
    /// Shorthand for the most common case: an engine call that failed.
    pub fn op(engine: &str, operation: &str, message: impl std::fmt::Display) -> Self {
        EngineError::Operation {
            engine: engine.to_string(),
            operation: operation.to_string(),
            message: message.to_string(),
        }
    }

    pub fn bad_param(engine: &str, param: &str, message: impl std::fmt::Display) -> Self {
        EngineError::BadParameter {
            engine: engine.to_string(),
            param: param.to_string(),
            message: message.to_string(),
        }
    }

    /// Refuses the first of `params` (an engine that takes none), saying `why`.
    pub fn refuse_any(engine: &str, params: &ParamMap, why: &str) -> Result<(), Self> {
        match params.keys().next() {
            Some(p) => Err(Self::bad_param(engine, p, why)),
            None => Ok(()),
        }
    }
}

pub type EngineResult<T> = Result<T, EngineError>;

/// The cause of a failed connection in words, read from a client library's message (which
/// can be a `Debug` dump of nested transport errors); `None` when no known cause is in it.
pub fn connection_cause(raw: &str) -> Option<&'static str> {
    let m = raw.to_ascii_lowercase();
    let has = |needles: &[&str]| needles.iter().any(|n| m.contains(n));
    let cause = if has(&["connection refused", "connectionrefused", "os error 111"]) {
        "connection refused (nothing listens on that port)"
    } else if has(&[
        "failed to lookup address",
        "dns error",
        "name or service not known",
        "no such host",
        "hostnotfound",
        "host not found",
        "temporary failure in name resolution",
        "nodename nor servname",
        "could not translate host name",
    ]) {
        "no such host (the name does not resolve)"
    } else if has(&["network is unreachable", "os error 101", "no route to host"]) {
        "the network or host is unreachable"
    } else if has(&[
        "timed out",
        "timedout",
        "deadline has elapsed",
        "elapsed(())",
    ]) {
        "timed out (no answer)"
    } else if has(&["connection reset", "connectionreset", "broken pipe"]) {
        "the server closed the connection"
    } else if has(&[
        "invalid authority",
        "invalid uri",
        "invalid url",
        "invalid port",
    ]) {
        "invalid URL"
    } else {
        return None;
    };
    Some(cause)
}

/// A client library's connection failure as one line: the cause in words when it is a known
/// one, else the message's first line.
pub fn worded_connection_failure(raw: &str) -> String {
    match connection_cause(raw) {
        Some(cause) => cause.to_string(),
        None => raw.lines().next().unwrap_or(raw).to_string(),
    }
}

/// The engine's own count of points and of vectors in its index (see
/// [`VectorEngine::index_progress`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexProgress {
    pub points: u64,
    pub indexed_vectors: u64,
}

/// Writes that may run on one thread while other threads search the same collection (the
/// runbook's `stream` step). Each call returns when the engine has acknowledged the write:
/// the runner takes that instant as the write's acknowledgement.
pub trait ConcurrentWrites: Send + Sync {
    /// Insert or replace points, as [`VectorEngine::upsert_batch`].
    fn upsert(&self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()>;
    /// Remove points, as [`VectorEngine::delete_batch`].
    fn delete(&self, ids: &[PointId]) -> EngineResult<()>;
}

/// A vector engine under test.
///
/// Mutating calls take `&mut self`; searches take `&self` so that several client threads can
/// query one engine at once (`Sync`). Adapters over async clients keep their own runtime and
/// block on it: the timed loop stays plain and synchronous.
pub trait VectorEngine: Send + Sync {
    /// Registry name of the engine (`exact`, `qdrant-edge`, ...).
    fn name(&self) -> &str;

    /// Engine version as the engine reports it (crate version or server version).
    fn version(&self) -> String;

    /// Create the collection (dropping an old one only if the adapter was told to).
    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()>;

    /// Bulk load during the build phase. `vectors` holds `ids.len()` rows of `dim` floats.
    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()>;

    /// Bulk load of rows `start..start + ids.len()` of a shared matrix (the dataset's train set,
    /// held once by the harness). In-process engines that can search the caller's memory
    /// directly override this to keep a reference instead of a copy, the way an engine over a
    /// memory-mapped file would; the default copies the rows through
    /// [`VectorEngine::insert_batch`].
    fn insert_shared(
        &mut self,
        ids: &[PointId],
        rows: &std::sync::Arc<crate::vectors::Vectors>,
        start: usize,
    ) -> EngineResult<()> {
        self.insert_batch(ids, rows.rows(start, start + ids.len()))
    }

    /// Block until the index covers the loaded points (optimize, `CREATE INDEX`, wait for
    /// green). Its time is reported separately from the load.
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport>;

    /// The library's own search call in a bare loop, with no adapter around it: one search of
    /// `k` per row of `queries` (row-major) under the current search parameters, results
    /// dropped; returns the hits read. `benches/engine_overhead.rs` holds ragdbeval's
    /// single-client loop to it. `None`: the engine has no library of its own to compare with
    /// (a server engine's native client is its folder's `client_bench.rs`).
    fn native_query_loop(&self, _queries: &[f32], _k: usize) -> Option<EngineResult<usize>> {
        None
    }

    /// Insert or replace points after the build (insert and update phases). The default: the
    /// engine's [`VectorEngine::concurrent_writes`], for an engine that writes through `&self`.
    fn upsert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        match self.concurrent_writes() {
            Some(writes) => writes.upsert(ids, vectors),
            None => Err(self.takes_no_writes()),
        }
    }

    /// Remove points. The default, as for [`VectorEngine::upsert_batch`]: the engine's
    /// [`VectorEngine::concurrent_writes`].
    fn delete_batch(&mut self, ids: &[PointId]) -> EngineResult<()> {
        match self.concurrent_writes() {
            Some(writes) => writes.delete(ids),
            None => Err(self.takes_no_writes()),
        }
    }

    /// The error of an engine that takes no writes after its build.
    fn takes_no_writes(&self) -> EngineError {
        EngineError::Unsupported {
            engine: self.name().to_string(),
            what: "writes after the build".into(),
        }
    }

    /// Set the search-time parameters (`hnsw_ef`, `exact`, `probes`, ...) for the following
    /// searches. Unknown parameters must be rejected, not ignored. The runner also calls it
    /// once per search configuration right after `open`, before `create`, to reject bad
    /// parameters before a long build: it must validate and store, not touch the collection.
    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()>;

    /// Checks the build parameters of `spec` as `create` would, without creating anything.
    /// The runner calls it for every configuration of a sweep right after `open`, so a bad
    /// value in the third build fails before the first build runs. The default accepts
    /// everything (then `create` is the check).
    fn check_build_params(&self, spec: &CollectionSpec) -> EngineResult<()> {
        let _ = spec;
        Ok(())
    }

    /// Checks that the collection of `spec` takes writes after its build (the insert, update,
    /// delete and stream steps of a runbook), before anything is built. An engine or a mode
    /// that cannot (a static index) refuses with [`EngineError::Unsupported`], saying which
    /// parameter decides it. The default: writes are taken.
    fn check_writes(&self, spec: &CollectionSpec) -> EngineResult<()> {
        let _ = spec;
        Ok(())
    }

    /// Top-`k` search for one query, among the points that satisfy its filter when it has
    /// one: with the engine's own filtering mechanism, never a post-filter in the adapter
    /// (the runner has had the predicate through [`VectorEngine::check_filter`] first).
    /// Results go into `out` (cleared first), best first.
    fn search(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()>;

    /// Checks that the engine can express `predicate` over `attributes` natively, before
    /// anything is built. An engine that cannot must refuse with
    /// [`EngineError::Unsupported`], never search unfiltered. The default refuses filters.
    fn check_filter(&self, attributes: &Attributes, predicate: &Predicate) -> EngineResult<()> {
        let _ = (attributes, predicate);
        Err(EngineError::Unsupported {
            engine: self.name().to_string(),
            what: "filtered search".into(),
        })
    }

    /// [`VectorEngine::search`] for many queries at once. Engines with a batch API override
    /// this; the default loops.
    fn batch_search(&self, batch: Batch<'_>) -> EngineResult<Vec<Vec<Neighbor>>> {
        search_each(self, batch)
    }

    /// The collection's two size figures, the index structure and the total footprint (see
    /// [`Footprint`]), each with its source or the reason it cannot be measured. An error
    /// means a measurement that should have worked failed.
    fn footprint(&self) -> EngineResult<Footprint>;

    /// PID of the engine's server process when it runs on this host, for RSS/CPU sampling.
    fn server_pid(&self) -> Option<u32> {
        None
    }

    /// True when the engine promises exact answers under ragdbeval's conventions: the true
    /// top-k, distances from [`crate::distance::Distance::between`], ties broken by id. The
    /// runner then checks every answer against the ground truth id for id and bit for bit,
    /// which verifies the ground truth itself (only `exact` says yes).
    fn answers_are_exact(&self) -> bool {
        false
    }

    /// The type the engine stores the vectors of the collection last created as, recorded in
    /// the result next to the dataset's (`element_type`), so that a conversion is stated.
    /// The default is what most engines do: `float32`, converting whatever the dataset is.
    fn stored_element_type(&self) -> ElementType {
        ElementType::Float32
    }

    /// The writes of this engine that may run while it is searched from other threads, when
    /// its client can do both at once. `None` (the default): a `stream` step refuses the
    /// engine before the run, rather than serialising writes and searches silently.
    fn concurrent_writes(&self) -> Option<&dyn ConcurrentWrites> {
        None
    }

    /// How much of the collection the engine has indexed so far, where it reports it
    /// (Qdrant's indexed vs total vectors). Polled once a second while a `stream` step runs,
    /// to record the index lag; `None` (the default): the engine has no such figure (an
    /// engine that indexes every write before acknowledging it has no lag to report).
    fn index_progress(&self) -> Option<IndexProgress> {
        None
    }

    /// Engine-specific facts for the result file (collection info, telemetry, plans).
    fn describe(&self) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }

    /// Release the collection and any resources. Called once at the end of a run.
    fn close(&mut self) -> EngineResult<()> {
        Ok(())
    }
}

/// [`VectorEngine::batch_search`] as one [`VectorEngine::search`] per query: the default, and
/// what an engine whose batch path covers only some searches falls back to.
pub fn search_each<E: VectorEngine + ?Sized>(
    engine: &E,
    batch: Batch<'_>,
) -> EngineResult<Vec<Vec<Neighbor>>> {
    batch
        .queries()
        .map(|query| {
            let mut out = Vec::with_capacity(query.k);
            engine.search(query, &mut out).map(|()| out)
        })
        .collect()
}

/// How to reach and drive an engine: the command-line options that are not index parameters.
/// Secrets (the API key) live here only; they are never written to result files or logs.
#[derive(Clone, Default)]
pub struct ConnectOptions {
    /// Server URL (`--url`); adapters fall back to their engine's usual local address.
    pub url: Option<String>,
    /// API key, read from the environment variable the user named.
    pub api_key: Option<String>,
    /// Drop an existing collection of the same name instead of failing (`--recreate`).
    pub recreate: bool,
    /// PID of a local server to sample (`--server-pid`).
    pub server_pid: Option<u32>,
    /// Local storage directory of the server, to measure index size (`--server-storage`).
    pub server_storage: Option<PathBuf>,
    /// Points per upload request (`--batch-size`).
    pub batch_size: usize,
    /// Concurrent upload requests (`--upload-parallel`). The runner hands
    /// [`VectorEngine::insert_batch`] up to `batch_size × upload_parallel` points at once;
    /// server adapters split that into parallel requests of `batch_size`.
    pub upload_parallel: usize,
    /// Per-request timeout for server engines.
    pub timeout: std::time::Duration,
}

impl ConnectOptions {
    /// Points per upload request: `--batch-size`, or the engine's own `default` when not
    /// given (0).
    pub fn batch_size_or(&self, default: usize) -> usize {
        if self.batch_size == 0 {
            default
        } else {
            self.batch_size
        }
    }
}

impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("url", &self.url.as_deref().map(crate::secret::redact))
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("recreate", &self.recreate)
            .field("server_pid", &self.server_pid)
            .field("server_storage", &self.server_storage)
            .field("batch_size", &self.batch_size)
            .field("upload_parallel", &self.upload_parallel)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// A registered engine: its name, what it is, its parameter sets and how to open it.
/// One per engine folder under `adapters/`, generated by `build.rs`.
#[derive(Clone, Copy)]
pub struct EngineEntry {
    pub name: &'static str,
    /// What the engine declares about itself (its `config.toml`'s `[engine]` table).
    pub meta: &'static EngineMeta,
    /// The engine folder's `config.toml` (named parameter sets and sweeps).
    pub config_toml: &'static str,
    pub open: fn(&ConnectOptions) -> EngineResult<Box<dyn VectorEngine>>,
    /// The cargo feature this build was made without, for an engine whose adapter it left
    /// out (its `open` then refuses).
    pub left_out: Option<&'static str>,
}

impl EngineEntry {
    /// One line for `ragdbeval engines`.
    pub fn summary(&self) -> &'static str {
        self.meta.summary
    }

    /// Whether it runs without any server (usable offline and in the default run).
    pub fn embedded(&self) -> bool {
        self.meta.embedded()
    }
}
