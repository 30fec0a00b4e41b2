//! Searches over a [`Graph`] (DiskANN's k-NN search, and its multi-hop filtered search with
//! the predicate as DiskANN's label callback), the library's own figures about the graph, and
//! the index's size as DiskANN saves it.

use std::cell::RefCell;
use std::path::Path;

use diskann::graph::ext::labeled::{Filtered, QueryLabelProvider};
use diskann::graph::search::{Knn, MultihopFilterSearch};
use diskann::graph::search_output_buffer::IdDistance;
use diskann::provider::DefaultContext;
use diskann_providers::model::graph::provider::async_::common::FullPrecision;
use diskann_providers::storage::{AsyncIndexMetadata, FileStorageProvider, SaveWith};
use serde_json::{Map, Value, json};

use super::NAME;
use super::graph::{Generation, Graph, Slots, engine_error};
use super::settings::SearchSettings;
use crate::engine::{EngineResult, Neighbor, Query, SourcedBytes};
use crate::filter::CompiledPredicate;

thread_local! {
    /// Each search thread's result buffers (ids, distances), reused from search to search
    /// as a bare loop over DiskANN's search reuses its own.
    static SCRATCH: RefCell<(Vec<u32>, Vec<f32>)> = const { RefCell::new((Vec::new(), Vec::new())) };
}

/// The predicate as DiskANN's label provider: a slot matches when it holds a live point that
/// passes. The start point holds none, so it never matches.
struct Labels<'a> {
    slots: &'a Slots,
    predicate: &'a CompiledPredicate<'a>,
}

impl std::fmt::Debug for Labels<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ragdbeval predicate over point attributes")
    }
}

impl QueryLabelProvider<u32> for Labels<'_> {
    fn is_match(&self, slot: u32) -> bool {
        self.slots
            .id(slot)
            .is_some_and(|id| self.predicate.passes(id))
    }
}

impl Graph {
    /// Top-`k` for one query: DiskANN's greedy search with search list `l_search`, or with
    /// `filter` its multi-hop filtered search, which walks through non-matching points and
    /// keeps the matching ones.
    pub fn search(
        &self,
        query: Query<'_>,
        search: SearchSettings,
        filter: Option<&CompiledPredicate<'_>>,
        out: &mut Vec<Neighbor>,
    ) -> EngineResult<()> {
        if !query.start(NAME, self.dim, out)? {
            return Ok(());
        }
        let Query { vector: query, k, .. } = query;
        let knn = search.knn(k)?;
        let generation = self.generation()?;
        let slots = generation.slots()?;
        SCRATCH.with_borrow_mut(|(ids, distances)| {
            ids.resize(k, 0);
            distances.resize(k, 0.0);
            self.search_into(&generation, &slots, (knn, query, filter), ids, distances, out)
        })
    }

    /// One search into the result buffers `ids` and `distances` (k long), mapped to points.
    fn search_into(
        &self,
        generation: &Generation,
        slots: &Slots,
        (knn, query, filter): (Knn, &[f32], Option<&CompiledPredicate<'_>>),
        ids: &mut [u32],
        distances: &mut [f32],
        out: &mut Vec<Neighbor>,
    ) -> EngineResult<()> {
        let k = ids.len();
        let mut buffer = IdDistance::new(ids, distances);
        let context = DefaultContext;
        let index = &generation.index;
        let stats = match filter {
            None => self.block_on(index.search(knn, &FullPrecision, &context, query, &mut buffer)),
            Some(predicate) => {
                let labels = Labels { slots, predicate };
                let strategy = Filtered::new(FullPrecision, &labels);
                self.block_on(index.search(
                    MultihopFilterSearch::new(knn),
                    &strategy,
                    &context,
                    query,
                    &mut buffer,
                ))
            }
        }
        .map_err(|e| engine_error("search", e))?;
        let found = (stats.result_count as usize).min(k);
        // A slot unpublished by a write that is still running maps to no point.
        out.extend(
            ids[..found]
                .iter()
                .zip(&distances[..found])
                .filter_map(|(&slot, &score)| slots.id(slot).map(|id| Neighbor { id, score })),
        );
        Ok(())
    }

    /// The library's own figures: live points, slots, the degree statistics of the live
    /// points' adjacency lists and how many nodes the start point reaches.
    pub fn facts(&self) -> EngineResult<Map<String, Value>> {
        let generation = self.generation()?;
        let (live_slots, used, retired, free) = {
            let slots = generation.slots()?;
            (slots.live_slots(), slots.used(), slots.retired(), slots.free())
        };
        let provider = generation.index.provider();
        let degrees = self
            .block_on(
                generation
                    .index
                    .get_degree_stats(&mut provider.neighbors(), live_slots.iter().copied()),
            )
            .map_err(|e| engine_error("index report", e))?;
        let start = [generation.start_slot()];
        let reachable = self
            .block_on(
                generation
                    .index
                    .count_reachable_nodes(&start, &mut provider.neighbors()),
            )
            .map_err(|e| engine_error("index report", e))?;
        let config = &generation.index.config;
        let mut out = Map::new();
        out.insert("points".into(), json!(live_slots.len()));
        out.insert("capacity".into(), json!(generation.capacity));
        out.insert("slots_used".into(), json!(used));
        out.insert("slots_deleted_unreleased".into(), json!(retired));
        out.insert("slots_released".into(), json!(free));
        out.insert("start_points".into(), json!(provider.num_start_points()));
        out.insert("reachable_from_start".into(), json!(reachable));
        out.insert("degree_max".into(), json!(degrees.max_degree));
        out.insert("degree_min".into(), json!(degrees.min_degree));
        out.insert("degree_avg".into(), json!(degrees.avg_degree));
        out.insert("degree_below_two".into(), json!(degrees.cnt_less_than_two));
        out.insert("pruned_degree".into(), json!(config.pruned_degree().get()));
        out.insert("max_degree_with_slack".into(), json!(config.max_degree().get()));
        out.insert("grows".into(), json!(self.grows.load(std::sync::atomic::Ordering::Relaxed)));
        out.insert(
            "consolidations".into(),
            json!(self.consolidations.load(std::sync::atomic::Ordering::Relaxed)),
        );
        Ok(out)
    }

    /// The index as DiskANN saves it (`save_with` to files in a directory under `dir`,
    /// removed afterwards): the graph file (each slot's adjacency list as it stands), and the
    /// graph with the vector file (every slot of the capacity, as memory holds them).
    pub fn saved_sizes(&self, dir: &Path) -> EngineResult<(SourcedBytes, SourcedBytes)> {
        std::fs::create_dir_all(dir)
            .map_err(|e| engine_error("footprint", format!("creating {}: {e}", dir.display())))?;
        let scratch = tempfile::Builder::new()
            .prefix("diskann-size")
            .tempdir_in(dir)
            .map_err(|e| engine_error("footprint", format!("in {}: {e}", dir.display())))?;
        let prefix = scratch.path().join("index");
        let metadata = AsyncIndexMetadata::new(prefix.to_string_lossy().into_owned());
        {
            let _quiet = self.quiet()?;
            let generation = self.generation()?;
            self.block_on(generation.index.save_with(&FileStorageProvider, &metadata))
                .map_err(|e| engine_error("footprint", format!("saving the index: {e}")))?;
        }
        let mut graph = 0;
        let mut total = 0;
        let entries = std::fs::read_dir(scratch.path())
            .map_err(|e| engine_error("footprint", format!("listing the saved index: {e}")))?;
        for entry in entries {
            let entry = entry.map_err(|e| engine_error("footprint", e))?;
            let len = entry
                .metadata()
                .map_err(|e| engine_error("footprint", e))?
                .len();
            total += len;
            if entry.path() == prefix {
                graph = len;
            }
        }
        if graph == 0 {
            return Err(engine_error(
                "footprint",
                format!("DiskANN saved no graph file at {}", prefix.display()),
            ));
        }
        let figure = |bytes, what: &str| SourcedBytes {
            bytes,
            source: format!("DiskANN save_with: {what}, file sizes"),
        };
        Ok((
            figure(graph, "the graph file"),
            figure(total, "graph and vector files"),
        ))
    }
}
