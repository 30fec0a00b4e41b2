//! The `VectorEngine` impl: the bulk load is kept until `wait_until_ready`, which builds the
//! index (its time is build time): the in-memory [`Graph`], which later writes go to, or the
//! static [`DiskIndex`], which refuses them.

use std::path::PathBuf;
use std::sync::Arc;

use diskann::graph::search_output_buffer::IdDistance;
use diskann::provider::DefaultContext;
use diskann_providers::model::graph::provider::async_::common::FullPrecision;
use serde_json::{Map, Value, json};

use super::disk::DiskIndex;
use super::graph::{Graph, engine_error, last_rows};
use super::settings::{BuildSettings, SearchSettings, Storage};
use super::{DISKANN_VERSION, NAME};
use crate::adapters::support::filter;
use crate::adapters::support::rows;
use crate::engine::{Query, CollectionSpec, ConcurrentWrites, EngineError, EngineResult, Footprint, IndexHolds, IndexReport, Neighbor, PointId, VectorEngine};
use crate::filter::{Attributes, Predicate};
use crate::params::ParamMap;

/// The built index: DiskANN's in-memory graph or its on-disk index.
enum Index {
    Memory(Graph),
    Disk(Box<DiskIndex>),
}

/// A created collection: its settings, the bulk load until the build, then the index.
struct Collection {
    dim: usize,
    settings: BuildSettings,
    expected: usize,
    work_dir: PathBuf,
    pending_ids: Vec<PointId>,
    pending_rows: Vec<f32>,
    index: Option<Index>,
}

impl Collection {
    /// Builds the index from the bulk load, if that has not happened yet and there is one.
    fn ensure_built(&mut self) -> EngineResult<()> {
        if self.index.is_some() || self.pending_ids.is_empty() {
            return Ok(());
        }
        let ids = std::mem::take(&mut self.pending_ids);
        let rows = std::mem::take(&mut self.pending_rows);
        self.index = Some(self.build(&ids, &rows)?);
        Ok(())
    }

    fn build(&self, ids: &[PointId], rows: &[f32]) -> EngineResult<Index> {
        Ok(match self.settings.storage {
            Storage::Memory => Index::Memory(Graph::build(
                self.dim,
                self.settings.clone(),
                ids,
                rows,
                self.expected,
            )?),
            Storage::Disk(disk) => {
                rows::check(NAME, "build", self.dim, ids.len(), rows.len())?;
                let rows = last_rows(ids, rows, self.dim);
                let index = DiskIndex::build(self.dim, &self.settings, disk, &rows, &self.work_dir)?;
                Index::Disk(Box::new(index))
            }
        })
    }
}

/// The refusal of a write to the on-disk index, which DiskANN builds once.
fn static_index(operation: &str) -> EngineError {
    EngineError::Unsupported {
        engine: NAME.into(),
        what: format!(
            "{operation} after the build with storage = \"disk\": DiskANN's on-disk index is \
             static (built once from the bulk load); run it with `--runbook build-search`, or \
             a runbook that writes with an in-memory set (storage = \"memory\")"
        ),
    }
}

/// DiskANN under test.
#[derive(Default)]
pub struct DiskAnn {
    collection: Option<Collection>,
    /// The points' attributes (by id), when the run searches with filters.
    attributes: Option<Arc<Attributes>>,
    search: SearchSettings,
}

impl DiskAnn {
    fn collection(&mut self, operation: &str) -> EngineResult<&mut Collection> {
        self.collection.as_mut().ok_or_else(|| {
            EngineError::op(NAME, operation, "no collection: create() was not called")
        })
    }

    /// The index, once built. Before `wait_until_ready` there is none to search or write to
    /// from several threads.
    fn index(&self, operation: &str) -> EngineResult<Option<&Index>> {
        let collection = self.collection.as_ref().ok_or_else(|| {
            EngineError::op(NAME, operation, "no collection: create() was not called")
        })?;
        match &collection.index {
            Some(index) => Ok(Some(index)),
            None if collection.pending_ids.is_empty() => Ok(None),
            None => Err(engine_error(
                operation,
                "the bulk load is not built yet: wait_until_ready() builds the index",
            )),
        }
    }

    /// The in-memory graph, once built, for a write; the on-disk index refuses writes.
    fn graph(&self, operation: &str) -> EngineResult<Option<&Graph>> {
        match self.index(operation)? {
            Some(Index::Memory(graph)) => Ok(Some(graph)),
            Some(Index::Disk(_)) => Err(static_index(operation)),
            None => Ok(None),
        }
    }

    fn built_graph(&self, operation: &str) -> EngineResult<&Graph> {
        self.graph(operation)?
            .ok_or_else(|| engine_error(operation, "no graph: nothing was loaded"))
    }

    /// Searches whichever index was built; nothing found before anything was loaded.
    fn search_index(
        &self,
        query: Query<'_>,
        filter: Option<&crate::filter::CompiledPredicate<'_>>,
        out: &mut Vec<Neighbor>,
    ) -> EngineResult<()> {
        match self.index(query.operation())? {
            Some(Index::Memory(graph)) => graph.search(query, self.search, filter, out),
            Some(Index::Disk(disk)) => disk.search(query, self.search, filter, out),
            None => {
                out.clear();
                Ok(())
            }
        }
    }

    /// The engine's own search loop, with no adapter around it: one DiskANN k-NN search per
    /// row of `queries` at the current `l_search`, results dropped. `benches/engine_overhead.rs`
    /// compares ragdbeval's single-client loop with it.
    fn library_search_loop(&self, queries: &[f32], k: usize) -> EngineResult<usize> {
        let Some(Index::Memory(graph)) = self.index("search")? else {
            return Err(engine_error("search", "the bare loop runs over a built in-memory graph"));
        };
        let generation = graph.generation()?;
        let knn = self.search.knn(k)?;
        let mut ids = vec![0u32; k];
        let mut distances = vec![0f32; k];
        let mut returned = 0;
        for q in queries.chunks_exact(graph.dim) {
            let mut buffer = IdDistance::new(&mut ids, &mut distances);
            let stats = graph
                .block_on(generation.index.search(
                    knn,
                    &FullPrecision,
                    &DefaultContext,
                    q,
                    &mut buffer,
                ))
                .map_err(|e| engine_error("search", e))?;
            returned += stats.result_count as usize;
        }
        Ok(returned)
    }

    /// The settings and, once built, the library's figures about the index.
    fn index_facts(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("search_params".into(), self.search.to_json());
        let Some(collection) = &self.collection else {
            return out;
        };
        out.insert("build_settings".into(), collection.settings.to_json());
        match &collection.index {
            Some(Index::Memory(graph)) => match graph.facts() {
                Ok(facts) => out.extend(facts),
                Err(e) => {
                    out.insert("info_error".into(), json!(e.to_string()));
                }
            },
            Some(Index::Disk(disk)) => out.extend(disk.facts()),
            None => {}
        }
        out
    }
}

impl ConcurrentWrites for DiskAnn {
    fn upsert(&self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.built_graph("upsert")?.put("upsert", ids, vectors)
    }

    fn delete(&self, ids: &[PointId]) -> EngineResult<()> {
        match self.graph("delete")? {
            Some(graph) => graph.delete(ids),
            None => Ok(()),
        }
    }
}

impl VectorEngine for DiskAnn {
    fn native_query_loop(&self, queries: &[f32], k: usize) -> Option<EngineResult<usize>> {
        Some(self.library_search_loop(queries, k))
    }

    fn name(&self) -> &str {
        NAME
    }

    fn version(&self) -> String {
        format!("diskann {DISKANN_VERSION}")
    }

    fn check_build_params(&self, spec: &CollectionSpec) -> EngineResult<()> {
        BuildSettings::parse(&spec.build_params, spec.distance, spec.dim).map(|_| ())
    }

    /// The on-disk index is static: a runbook that writes after the build is refused with
    /// it before the build.
    fn check_writes(&self, spec: &CollectionSpec) -> EngineResult<()> {
        match BuildSettings::parse(&spec.build_params, spec.distance, spec.dim)?.storage {
            Storage::Memory => Ok(()),
            Storage::Disk(_) => Err(static_index("insert, update, delete and stream steps")),
        }
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        let settings = BuildSettings::parse(&spec.build_params, spec.distance, spec.dim)?;
        // Drop the index (and the files) of an earlier create before the next one is loaded.
        self.collection = None;
        self.collection = Some(Collection {
            dim: spec.dim,
            settings,
            expected: spec.expected_points,
            work_dir: spec.work_dir.clone(),
            pending_ids: Vec::new(),
            pending_rows: Vec::new(),
            index: None,
        });
        self.attributes = spec.attributes.clone();
        Ok(())
    }

    /// Before the build the rows are kept (DiskANN's start point is the medoid of the whole
    /// load); after it they are inserted into the graph (the on-disk index refuses them).
    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let collection = self.collection("insert")?;
        rows::check(NAME, "insert", collection.dim, ids.len(), vectors.len())?;
        match &collection.index {
            Some(Index::Memory(graph)) => graph.put("insert", ids, vectors),
            Some(Index::Disk(_)) => Err(static_index("insert")),
            None => {
                collection.pending_ids.extend_from_slice(ids);
                collection.pending_rows.extend_from_slice(vectors);
                Ok(())
            }
        }
    }

    /// Builds the index over the bulk load, then reports the library's own counts. In
    /// memory: points in the graph, nodes reachable from the start point, degree statistics;
    /// indexed vectors are the reachable nodes but the start point, at most the live points
    /// (after deletes, slots not yet released are reachable too). On disk: the points of the
    /// disk file's header (all of them indexed), its PQ chunks and the nodes cached.
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        self.collection("build")?.ensure_built()?;
        let details = self.index_facts();
        if let Some(e) = details.get("info_error") {
            return Err(engine_error("index report", e));
        }
        // No index: nothing was loaded, so the index holds no point.
        let built = self.index("build")?;
        if let Some(Index::Disk(_)) = built {
            let points = details.get("points").and_then(Value::as_u64);
            return Ok(IndexReport {
                indexed_vectors: points,
                points,
                may_full_scan: false,
                details,
            });
        }
        let built = built.is_some();
        let count = |key: &str| {
            if built {
                details.get(key).and_then(Value::as_u64)
            } else {
                Some(0)
            }
        };
        let points = count("points");
        let indexed = match (count("reachable_from_start"), count("start_points"), points) {
            (Some(r), Some(s), Some(p)) => Some(r.saturating_sub(s).min(p)),
            _ => None,
        };
        Ok(IndexReport {
            indexed_vectors: indexed,
            points,
            may_full_scan: false,
            details,
        })
    }

    fn upsert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let collection = self.collection("upsert")?;
        collection.ensure_built()?;
        match &collection.index {
            Some(Index::Memory(graph)) => graph.put("upsert", ids, vectors),
            Some(Index::Disk(_)) => Err(static_index("upsert")),
            None => {
                rows::check(NAME, "upsert", collection.dim, ids.len(), vectors.len())?;
                collection.index = Some(collection.build(ids, vectors)?);
                Ok(())
            }
        }
    }

    fn delete_batch(&mut self, ids: &[PointId]) -> EngineResult<()> {
        self.collection("delete")?.ensure_built()?;
        ConcurrentWrites::delete(self, ids)
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        self.search = SearchSettings::parse(params)?;
        Ok(())
    }

    fn search(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        let attributes = self.attributes.as_deref();
        let compiled = filter::compile_optional(NAME, attributes, query.filter)?;
        self.search_index(query, compiled.as_ref(), out)
    }

    /// DiskANN filters with a label callback on its ids during the graph search, in memory
    /// and on disk: any predicate over the points' attributes can be one.
    fn check_filter(&self, attributes: &Attributes, predicate: &Predicate) -> EngineResult<()> {
        filter::check(NAME, attributes, predicate)
    }

    /// In memory, the index as DiskANN saves it: the graph file is the index, graph and
    /// vector files the total (the vector file holds every slot, as memory does). On disk,
    /// the index's files: the disk file (each node's full vector with its adjacency list)
    /// with the PQ pivots and codes is the index, every file the total.
    fn footprint(&self) -> EngineResult<Footprint> {
        let Some(collection) = &self.collection else {
            return Ok(Footprint::unmeasured("no collection created"));
        };
        match &collection.index {
            None => Ok(Footprint::unmeasured("no index built (nothing was loaded)")),
            Some(Index::Memory(graph)) => {
                let (index, total) = graph.saved_sizes(&collection.work_dir)?;
                Ok(Footprint::new(Ok(index), Ok(total)).holding(IndexHolds::GraphOnly))
            }
            Some(Index::Disk(disk)) => {
                let (index, total) = disk.sizes()?;
                Ok(Footprint::new(Ok(index), Ok(total)).holding(IndexHolds::GraphAndVectors))
            }
        }
    }

    /// Inserts, deletes and searches run at once: DiskANN locks each adjacency list, and the
    /// adapter serialises writers only (see [`super::graph`]). The on-disk index refuses
    /// the writes themselves.
    fn concurrent_writes(&self) -> Option<&dyn ConcurrentWrites> {
        Some(self)
    }

    fn describe(&self) -> Map<String, Value> {
        self.index_facts()
    }

    fn close(&mut self) -> EngineResult<()> {
        self.collection = None;
        Ok(())
    }
}
