//! The `VectorEngine` impl: the bulk load is kept until `wait_until_ready`, which builds the
//! graph (its time is build time); later writes and searches go to the [`Graph`].

use std::path::PathBuf;
use std::sync::Arc;

use diskann::graph::search_output_buffer::IdDistance;
use diskann::provider::DefaultContext;
use diskann_providers::model::graph::provider::async_::common::FullPrecision;
use serde_json::{Map, Value, json};

use super::graph::{Graph, engine_error};
use super::settings::{BuildSettings, SearchSettings};
use super::{DISKANN_VERSION, NAME};
use crate::adapters::support::rows;
use crate::engine::{
    CollectionSpec, ConcurrentWrites, EngineError, EngineResult, Footprint, IndexHolds,
    IndexReport, Neighbor, PointId, VectorEngine,
};
use crate::filter::{Attributes, Predicate};
use crate::params::ParamMap;

/// A created collection: its settings, the bulk load until the build, then the graph.
struct Collection {
    dim: usize,
    settings: BuildSettings,
    expected: usize,
    work_dir: PathBuf,
    pending_ids: Vec<PointId>,
    pending_rows: Vec<f32>,
    graph: Option<Graph>,
}

impl Collection {
    /// Builds the graph from the bulk load, if that has not happened yet and there is one.
    fn ensure_built(&mut self) -> EngineResult<()> {
        if self.graph.is_some() || self.pending_ids.is_empty() {
            return Ok(());
        }
        let ids = std::mem::take(&mut self.pending_ids);
        let rows = std::mem::take(&mut self.pending_rows);
        self.graph = Some(Graph::build(
            self.dim,
            self.settings.clone(),
            &ids,
            &rows,
            self.expected,
        )?);
        Ok(())
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

    /// The graph, once built. Before `wait_until_ready` there is none to search or write to
    /// from several threads.
    fn graph(&self, operation: &str) -> EngineResult<Option<&Graph>> {
        let collection = self.collection.as_ref().ok_or_else(|| {
            EngineError::op(NAME, operation, "no collection: create() was not called")
        })?;
        match &collection.graph {
            Some(g) => Ok(Some(g)),
            None if collection.pending_ids.is_empty() => Ok(None),
            None => Err(engine_error(
                operation,
                "the bulk load is not built yet: wait_until_ready() builds the graph",
            )),
        }
    }

    fn built_graph(&self, operation: &str) -> EngineResult<&Graph> {
        self.graph(operation)?
            .ok_or_else(|| engine_error(operation, "no graph: nothing was loaded"))
    }

    /// The engine's own search loop, with no adapter around it: one DiskANN k-NN search per
    /// row of `queries` at the current `l_search`, results dropped. `benches/diskann_overhead.rs`
    /// compares ragdbeval's single-client loop with it.
    pub fn native_query_loop(&self, queries: &[f32], k: usize) -> EngineResult<usize> {
        let graph = self.built_graph("search")?;
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

    /// The settings and, once built, the library's figures about the graph.
    fn index_facts(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("search_params".into(), self.search.to_json());
        let Some(collection) = &self.collection else {
            return out;
        };
        out.insert("build_settings".into(), collection.settings.to_json());
        if let Some(graph) = &collection.graph {
            match graph.facts() {
                Ok(facts) => out.extend(facts),
                Err(e) => {
                    out.insert("info_error".into(), json!(e.to_string()));
                }
            }
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
    fn name(&self) -> &str {
        NAME
    }

    fn version(&self) -> String {
        format!("diskann {DISKANN_VERSION}")
    }

    fn check_build_params(&self, spec: &CollectionSpec) -> EngineResult<()> {
        BuildSettings::parse(&spec.build_params, spec.distance).map(|_| ())
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        let settings = BuildSettings::parse(&spec.build_params, spec.distance)?;
        // Drop the graph of an earlier create before the next one is loaded.
        self.collection = None;
        self.collection = Some(Collection {
            dim: spec.dim,
            settings,
            expected: spec.expected_points,
            work_dir: spec.work_dir.clone(),
            pending_ids: Vec::new(),
            pending_rows: Vec::new(),
            graph: None,
        });
        self.attributes = spec.attributes.clone();
        Ok(())
    }

    /// Before the build the rows are kept (DiskANN's start point is the medoid of the whole
    /// load); after it they are inserted into the graph.
    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        let collection = self.collection("insert")?;
        rows::check(NAME, "insert", collection.dim, ids.len(), vectors.len())?;
        match &collection.graph {
            Some(graph) => graph.put("insert", ids, vectors),
            None => {
                collection.pending_ids.extend_from_slice(ids);
                collection.pending_rows.extend_from_slice(vectors);
                Ok(())
            }
        }
    }

    /// Builds the graph over the bulk load, then reports the library's own counts: points
    /// in the graph, nodes reachable from the start point, degree statistics. Indexed
    /// vectors are the reachable nodes but the start point, at most the live points (after
    /// deletes, slots not yet released are reachable too).
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        self.collection("build")?.ensure_built()?;
        let details = self.index_facts();
        if let Some(e) = details.get("info_error") {
            return Err(engine_error("index report", e));
        }
        // No graph: nothing was loaded, so the graph holds no point.
        let built = self.graph("build")?.is_some();
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
        match &collection.graph {
            Some(graph) => graph.put("upsert", ids, vectors),
            None => {
                rows::check(NAME, "upsert", collection.dim, ids.len(), vectors.len())?;
                collection.graph = Some(Graph::build(
                    collection.dim,
                    collection.settings.clone(),
                    ids,
                    vectors,
                    collection.expected,
                )?);
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

    fn search(&self, query: &[f32], k: usize, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        match self.graph("search")? {
            Some(graph) => graph.search(query, k, self.search, None, out),
            None => {
                out.clear();
                Ok(())
            }
        }
    }

    /// DiskANN filters with a label callback on its ids during the graph search: any
    /// predicate over the points' attributes can be one.
    fn check_filter(&self, attributes: &Attributes, predicate: &Predicate) -> EngineResult<()> {
        predicate
            .compile(attributes)
            .map(|_| ())
            .map_err(|e| EngineError::bad_param(NAME, "filter", e))
    }

    fn search_filtered(
        &self,
        query: &[f32],
        k: usize,
        filter: &Predicate,
        out: &mut Vec<Neighbor>,
    ) -> EngineResult<()> {
        let attributes = self.attributes.as_deref().ok_or_else(|| {
            EngineError::op(NAME, "filtered search", "the collection has no attributes")
        })?;
        let compiled = filter
            .compile(attributes)
            .map_err(|e| EngineError::bad_param(NAME, "filter", e))?;
        match self.graph("filtered search")? {
            Some(graph) => graph.search(query, k, self.search, Some(&compiled), out),
            None => {
                out.clear();
                Ok(())
            }
        }
    }

    /// The index as DiskANN saves it: the graph file is the index, graph and vector files
    /// the total (the vector file holds every slot, as memory does).
    fn footprint(&self) -> EngineResult<Footprint> {
        let Some(collection) = &self.collection else {
            return Ok(Footprint::unmeasured("no collection created"));
        };
        let Some(graph) = &collection.graph else {
            return Ok(Footprint::unmeasured("no graph built (nothing was loaded)"));
        };
        let (index, total) = graph.saved_sizes(&collection.work_dir)?;
        Ok(Footprint::new(Ok(index), Ok(total)).holding(IndexHolds::GraphOnly))
    }

    fn in_process(&self) -> bool {
        true
    }

    /// Inserts, deletes and searches run at once: DiskANN locks each adjacency list, and the
    /// adapter serialises writers only (see [`super::graph`]).
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
