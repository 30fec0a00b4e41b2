//! The DiskANN adapter's parameters, parsed and checked before anything is built: the Vamana
//! graph's build parameters (`max_degree` R, `l_build` L, `alpha`), checked by DiskANN's own
//! config builder too, where the index lives (`storage`: `memory` or `disk`) and the on-disk
//! index's own (`pq_chunks`, `num_nodes_to_cache`), and the search parameters (`l_search`,
//! `beam_width`). The dataset's metric maps to DiskANN's.

use diskann::graph::config::{Builder, MaxDegree};
use diskann::graph::search::Knn;
use diskann_vector::distance::Metric;
use serde_json::{Value, json};

use super::NAME;
use crate::distance::Distance;
use crate::engine::{EngineError, EngineResult};
use crate::params::{ParamMap, ParamMapExt};

/// Build parameters this engine takes.
const BUILD_PARAMS: &[&str] = &[
    "max_degree",
    "l_build",
    "alpha",
    "storage",
    "pq_chunks",
    "num_nodes_to_cache",
];
/// Build parameters that only the on-disk index takes.
const DISK_PARAMS: &[&str] = &["pq_chunks", "num_nodes_to_cache"];
/// Search parameters this engine takes.
const SEARCH_PARAMS: &[&str] = &["l_search", "beam_width"];

/// The defaults of DiskANN's in-memory build (`build_memory_index`: R=64, L=100,
/// alpha=1.2) and a search list of 100.
pub const DEFAULT_MAX_DEGREE: usize = 64;
pub const DEFAULT_L_BUILD: usize = 100;
pub const DEFAULT_ALPHA: f64 = 1.2;
pub const DEFAULT_L_SEARCH: usize = 100;

/// Bounds that keep a typo from allocating gigabytes per node or searching forever.
const MAX_DEGREE_BOUND: u64 = 1_024;
const MAX_LIST: u64 = 1 << 16;
const MAX_BEAM_WIDTH: u64 = 64;
/// Alpha below 1 prunes away long edges the graph needs; DiskANN uses 1.0..=2.0 in practice.
const ALPHA_RANGE: (f64, f64) = (1.0, 4.0);
/// Most nodes the on-disk searcher may keep in memory (DiskANN caches them by BFS from the
/// medoid when the index is loaded).
const MAX_CACHED_NODES: u64 = 1 << 24;

/// DiskANN's metric for a dataset's distance: squared L2 for euclidean (same order), cosine
/// distance for angular, negated inner product for dot.
pub fn metric(distance: Distance) -> Metric {
    match distance {
        Distance::Euclidean => Metric::L2,
        Distance::Angular => Metric::Cosine,
        Distance::Dot => Metric::InnerProduct,
    }
}

fn bounded(params: &ParamMap, name: &str, min: u64, max: u64) -> EngineResult<Option<usize>> {
    params
        .get_within(name, min..=max)
        .map(|v| v.map(|v| v as usize))
        .map_err(|e| EngineError::bad_param(NAME, name, e))
}

/// The parsed build parameters of one collection.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildSettings {
    /// R: the degree the pruning keeps (DiskANN's `pruned_degree`).
    pub max_degree: usize,
    /// L: the search list of the searches that find each point's neighbors.
    pub l_build: usize,
    /// The pruning's distance factor.
    pub alpha: f32,
    pub distance: Distance,
    /// Where the index lives: DiskANN's in-memory graph, or its on-disk index.
    pub storage: Storage,
}

/// Where the index lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// The Vamana graph and full-precision vectors in memory (`diskann-providers`).
    Memory,
    /// DiskANN's on-disk index (`diskann-disk`): graph and full vectors in one file read
    /// with direct I/O, PQ codes in memory.
    Disk(DiskSettings),
}

/// The on-disk index's own build parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskSettings {
    /// PQ chunks, each one byte of the compressed vector kept in memory (1..=dim).
    pub pq_chunks: usize,
    /// Nodes (vector and adjacency list) cached in memory, by BFS from the medoid.
    pub num_nodes_to_cache: usize,
}

impl DiskSettings {
    /// Default PQ chunks: a quarter of the dimension (16x smaller than f32 vectors), at
    /// least one.
    pub fn default_pq_chunks(dim: usize) -> usize {
        dim.div_ceil(4).max(1)
    }

    fn parse(params: &ParamMap, dim: usize) -> EngineResult<DiskSettings> {
        let dim_bound = (dim as u64).max(1);
        Ok(DiskSettings {
            pq_chunks: bounded(params, "pq_chunks", 1, dim_bound)?
                .unwrap_or(DiskSettings::default_pq_chunks(dim)),
            num_nodes_to_cache: bounded(params, "num_nodes_to_cache", 0, MAX_CACHED_NODES)?
                .unwrap_or(0),
        })
    }
}

/// `storage` as given (`memory`, the default, or `disk`), with the on-disk parameters.
fn parse_storage(params: &ParamMap, dim: usize) -> EngineResult<Storage> {
    let storage = params
        .get_str("storage")
        .map_err(|e| EngineError::bad_param(NAME, "storage", e))?;
    match storage.unwrap_or("memory") {
        "memory" => match DISK_PARAMS.iter().find(|p| params.contains_key(**p)) {
            Some(p) => Err(EngineError::bad_param(
                NAME,
                p,
                "applies to the on-disk index only: add storage = \"disk\"",
            )),
            None => Ok(Storage::Memory),
        },
        "disk" => Ok(Storage::Disk(DiskSettings::parse(params, dim)?)),
        other => Err(EngineError::bad_param(
            NAME,
            "storage",
            format!("{other:?} is neither \"memory\" nor \"disk\""),
        )),
    }
}

impl BuildSettings {
    /// Parses and checks `params` for a collection of `distance`, then has DiskANN's config
    /// builder check them too, so that every refusal comes before the build.
    pub fn parse(params: &ParamMap, distance: Distance, dim: usize) -> EngineResult<BuildSettings> {
        params
            .reject_unknown(BUILD_PARAMS)
            .map_err(|e| EngineError::bad_param(NAME, "build", e))?;
        let alpha = params
            .get_f64("alpha")
            .map_err(|e| EngineError::bad_param(NAME, "alpha", e))?
            .unwrap_or(DEFAULT_ALPHA);
        let (lo, hi) = ALPHA_RANGE;
        if !alpha.is_finite() || !(lo..=hi).contains(&alpha) {
            return Err(EngineError::bad_param(
                NAME,
                "alpha",
                format!("{alpha} is outside {lo}..={hi}"),
            ));
        }
        let settings = BuildSettings {
            max_degree: bounded(params, "max_degree", 2, MAX_DEGREE_BOUND)?
                .unwrap_or(DEFAULT_MAX_DEGREE),
            l_build: bounded(params, "l_build", 1, MAX_LIST)?.unwrap_or(DEFAULT_L_BUILD),
            alpha: alpha as f32,
            distance,
            storage: parse_storage(params, dim)?,
        };
        settings.config()?;
        Ok(settings)
    }

    /// DiskANN's graph config for these settings: R with DiskANN's default slack (the graph
    /// holds up to 1.3 R edges a node between prunes), L, alpha and the pruning rule of the
    /// metric. Inserts run from several threads at once (`max_minibatch_par` is for batch
    /// inserts, which the adapter does not use).
    pub fn config(&self) -> EngineResult<diskann::graph::Config> {
        let mut builder = Builder::new(
            self.max_degree,
            MaxDegree::default_slack(),
            self.l_build,
            metric(self.distance).into(),
        );
        builder.alpha(self.alpha);
        builder
            .build()
            .map_err(|e| EngineError::bad_param(NAME, "build", e))
    }

    pub fn to_json(&self) -> Value {
        let mut out = json!({
            "max_degree": self.max_degree,
            "l_build": self.l_build,
            "alpha": self.alpha,
            "metric": metric(self.distance).as_str(),
            "storage": "memory",
        });
        if let Storage::Disk(disk) = self.storage {
            out["storage"] = json!("disk");
            out["pq_chunks"] = json!(disk.pq_chunks);
            out["num_nodes_to_cache"] = json!(disk.num_nodes_to_cache);
        }
        out
    }
}

/// The parsed search parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchSettings {
    /// L: the search list size.
    pub l_search: usize,
    /// Nodes expanded per step of the greedy search (1 in DiskANN's in-memory search).
    pub beam_width: usize,
}

impl Default for SearchSettings {
    fn default() -> Self {
        SearchSettings {
            l_search: DEFAULT_L_SEARCH,
            beam_width: 1,
        }
    }
}

impl SearchSettings {
    pub fn parse(params: &ParamMap) -> EngineResult<SearchSettings> {
        params
            .reject_unknown(SEARCH_PARAMS)
            .map_err(|e| EngineError::bad_param(NAME, "search", e))?;
        Ok(SearchSettings {
            l_search: bounded(params, "l_search", 1, MAX_LIST)?.unwrap_or(DEFAULT_L_SEARCH),
            beam_width: bounded(params, "beam_width", 1, MAX_BEAM_WIDTH)?.unwrap_or(1),
        })
    }

    /// DiskANN's k-NN search for the top `k`. A search list shorter than k cannot hold k
    /// results, so an L below k searches with L = k (the result records the L asked for).
    pub fn knn(self, k: usize) -> EngineResult<Knn> {
        Knn::new(self.l_search.max(k), Some(self.beam_width))
            .map_err(|e| EngineError::bad_param(NAME, "l_search", e))
    }

    pub fn to_json(self) -> Value {
        json!({ "l_search": self.l_search, "beam_width": self.beam_width })
    }
}
