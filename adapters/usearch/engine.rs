//! The `VectorEngine` impl of usearch (see the module above for what it does).

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::adapters::support::filter;
use crate::engine::{Query, CollectionSpec, ConcurrentWrites, EngineError, EngineResult, Footprint, IndexHolds, IndexReport, Neighbor, PointId, SourcedBytes, VectorEngine};
use crate::filter::{Attributes, Predicate};
use crate::params::ParamMap;
use crate::types::ElementType;

use super::NAME;
use super::collection::{Collection, THREAD_SLOTS};
use super::settings::{BuildSettings, SearchSettings};

/// usearch under test.
#[derive(Default)]
pub struct USearch {
    collection: Option<Collection>,
    /// The points' attributes (by id), when the run searches with filters.
    attributes: Option<Arc<Attributes>>,
    search: SearchSettings,
}

impl USearch {
    fn collection(&self, operation: &str) -> EngineResult<&Collection> {
        self.collection.as_ref().ok_or_else(|| {
            EngineError::op(NAME, operation, "no collection: create() was not called")
        })
    }

    /// The engine's own search loop, with no adapter around it: one `Index::search` per row
    /// of `queries`, results dropped. `benches/engine_overhead.rs` compares ragdbeval's
    /// single-client loop with it.
    fn library_search_loop(&self, queries: &[f32], k: usize) -> EngineResult<usize> {
        let collection = self.collection("search")?;
        let index = collection.read()?;
        let mut returned = 0;
        for q in queries.chunks_exact(collection.dim) {
            let matches = index
                .search(q, k)
                .map_err(|e| EngineError::op(NAME, "search", e))?;
            returned += matches.keys.len();
        }
        Ok(returned)
    }

    /// The library's own figures about the index.
    fn index_facts(&self) -> Map<String, Value> {
        let Some(collection) = &self.collection else {
            return Map::new();
        };
        let mut out = Map::new();
        out.insert("build_settings".into(), collection.settings.to_json());
        out.insert("search_params".into(), self.search.to_json());
        match collection.read() {
            Ok(index) => {
                let stats = index.stats();
                out.insert("size".into(), json!(index.size()));
                out.insert("capacity".into(), json!(index.capacity()));
                out.insert("graph_nodes".into(), json!(stats.nodes));
                out.insert("graph_edges".into(), json!(stats.edges));
                out.insert("graph_max_edges".into(), json!(stats.max_edges));
                out.insert("memory_usage".into(), json!(index.memory_usage()));
                out.insert("serialized_length".into(), json!(index.serialized_length()));
                out.insert(
                    "hardware_acceleration".into(),
                    json!(index.hardware_acceleration()),
                );
                out.insert("thread_slots".into(), json!(THREAD_SLOTS));
            }
            Err(e) => {
                out.insert("info_error".into(), json!(e.to_string()));
            }
        }
        out
    }
}

impl ConcurrentWrites for USearch {
    fn upsert(&self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.collection("upsert")?.put("upsert", ids, vectors)
    }

    fn delete(&self, ids: &[PointId]) -> EngineResult<()> {
        self.collection("delete")?.delete(ids)
    }
}

impl VectorEngine for USearch {
    fn native_query_loop(&self, queries: &[f32], k: usize) -> Option<EngineResult<usize>> {
        Some(self.library_search_loop(queries, k))
    }

    fn name(&self) -> &str {
        NAME
    }

    fn version(&self) -> String {
        format!("usearch {}", ::usearch::version())
    }

    fn check_build_params(&self, spec: &CollectionSpec) -> EngineResult<()> {
        BuildSettings::parse(&spec.build_params, spec.distance).map(|_| ())
    }

    fn create(&mut self, spec: &CollectionSpec) -> EngineResult<()> {
        let settings = BuildSettings::parse(&spec.build_params, spec.distance)?;
        // Drop an index of an earlier create before reserving the next one.
        self.collection = None;
        self.collection = Some(Collection::new(
            spec.dim,
            settings,
            self.search,
            spec.expected_points,
        )?);
        self.attributes = spec.attributes.clone();
        Ok(())
    }

    fn insert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.collection("insert")?.put("insert", ids, vectors)
    }

    /// Nothing to wait for: every add is in the graph when it returns. The report holds the
    /// index's own counts, so that a result shows the graph really holds the points.
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        let collection = self.collection("index report")?;
        let (size, nodes) = {
            let index = collection.read()?;
            (index.size() as u64, index.stats().nodes as u64)
        };
        Ok(IndexReport {
            indexed_vectors: Some(nodes.min(size)),
            points: Some(size),
            may_full_scan: false,
            details: self.index_facts(),
        })
    }

    fn upsert_batch(&mut self, ids: &[PointId], vectors: &[f32]) -> EngineResult<()> {
        self.collection("upsert")?.put("upsert", ids, vectors)
    }

    fn delete_batch(&mut self, ids: &[PointId]) -> EngineResult<()> {
        self.collection("delete")?.delete(ids)
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        let search = SearchSettings::parse(params)?;
        if let Some(collection) = &self.collection {
            collection
                .read()?
                .change_expansion_search(search.expansion_search);
        }
        self.search = search;
        Ok(())
    }

    fn search(&self, query: Query<'_>, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        let attributes = self.attributes.as_deref();
        let compiled = filter::compile_optional(NAME, attributes, query.filter)?;
        self.collection(query.operation())?
            .search(query, self.search, compiled.as_ref(), out)
    }

    /// usearch filters with a predicate on keys during the graph search: any predicate over
    /// the points' attributes can be one.
    fn check_filter(&self, attributes: &Attributes, predicate: &Predicate) -> EngineResult<()> {
        filter::check(NAME, attributes, predicate)
    }

    /// Index and total are one figure: usearch keeps the vectors, the graph and the key table
    /// in one in-memory structure, and `memory_usage` is the library's count of its bytes.
    fn footprint(&self) -> EngineResult<Footprint> {
        let Some(collection) = &self.collection else {
            return Ok(Footprint::unmeasured("no index created"));
        };
        let bytes = collection.read()?.memory_usage() as u64;
        let figure = || SourcedBytes {
            bytes,
            source: "usearch Index::memory_usage (graph, vectors and key table, in memory)".into(),
        };
        Ok(Footprint::new(Ok(figure()), Ok(figure())).holding(IndexHolds::GraphAndVectors))
    }

    fn stored_element_type(&self) -> ElementType {
        self.collection
            .as_ref()
            .map_or(ElementType::Float32, |c| {
                c.settings.quantization.element_type()
            })
    }

    /// Adds, removes and searches run at once on usearch's own thread slots (see
    /// [`collection`]).
    fn concurrent_writes(&self) -> Option<&dyn ConcurrentWrites> {
        Some(self)
    }

    fn describe(&self) -> Map<String, Value> {
        let mut out = self.index_facts();
        out.insert(
            "hardware_acceleration_available".into(),
            json!(::usearch::hardware_acceleration_available()),
        );
        out
    }

    fn close(&mut self) -> EngineResult<()> {
        self.collection = None;
        Ok(())
    }
}

