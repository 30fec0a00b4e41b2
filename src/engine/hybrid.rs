//! The contract of an engine that retrieves lexically (by sparse vectors, or by text it
//! analyses itself) and, where it also stores dense vectors, fuses the two: what
//! `bench --retrieval sparse|hybrid` drives. An engine that has it registers an opener beside
//! its dense one (`adapters/engines.rs`, the `hybrid` list); the dense contract
//! ([`super::VectorEngine`]) is untouched.
//!
//! Scores returned by the searches here grow with relevance (a similarity, a BM25 score): the
//! client-side fusion of a hybrid run combines them as a retriever in an application would.
//! Quality is never judged by them: the runner recomputes every returned row's exact score.

use std::ops::Range;
use std::path::PathBuf;

use serde_json::{Map, Value};

use super::{ConnectOptions, EngineError, EngineResult, Footprint, IndexReport, Neighbor};
use crate::distance::Distance;
use crate::params::ParamMap;
use crate::sparse::fusion::Fusion;
use crate::sparse::{Csr, SparseRow};
use crate::vectors::Vectors;

/// A registered engine with lexical retrieval (`adapters/lexical.rs`).
pub struct LexicalEntry {
    pub name: &'static str,
    /// One line for `ragdbeval engines`: what its lexical side is.
    pub summary: &'static str,
    pub open: fn(&ConnectOptions) -> EngineResult<Box<dyn HybridEngine>>,
}

/// What an engine's lexical side reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LexicalInput {
    /// The dataset's sparse vectors (BM25 weights, SPLADE), scored by dot product.
    SparseVectors,
    /// The rows' texts, tokenised and scored by the engine itself (its BM25).
    Text,
}

/// What an engine can do beyond dense search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HybridCapabilities {
    pub lexical: LexicalInput,
    /// It stores dense vectors beside the lexical side (client-side hybrid is possible).
    pub dense: bool,
    /// It fuses its two searches itself with RRF (engine-side hybrid).
    pub engine_rrf: bool,
}

/// The dense side of a hybrid collection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DenseSide {
    pub dim: usize,
    pub distance: Distance,
}

/// What the engine is asked to create.
#[derive(Debug, Clone)]
pub struct HybridSpec {
    pub name: String,
    /// `None`: lexical retrieval only.
    pub dense: Option<DenseSide>,
    /// Dimensions of the sparse vectors (a BM25 encoding's vocabulary).
    pub sparse_dim: usize,
    pub expected_points: usize,
    pub build_params: ParamMap,
    /// A directory the engine may use for its files.
    pub work_dir: PathBuf,
}

/// Everything the points are made of; a batch is a range of its rows (row = point id).
#[derive(Clone, Copy)]
pub struct HybridData<'a> {
    pub sparse: &'a Csr,
    /// Each row's text, when the dataset has them.
    pub texts: Option<&'a [String]>,
    /// Each row's dense vector, for a hybrid collection.
    pub dense: Option<&'a Vectors>,
}

/// One query in every form the engine may read.
#[derive(Clone, Copy)]
pub struct HybridQuery<'a> {
    pub sparse: SparseRow<'a>,
    pub text: Option<&'a str>,
    pub dense: Option<&'a [f32]>,
}

/// An engine under test for lexical and hybrid retrieval. Mutating calls take `&mut self`,
/// searches `&self`, as for [`super::VectorEngine`].
pub trait HybridEngine: Send + Sync {
    /// Registry name (`bm25`, `qdrant-edge`, ...).
    fn name(&self) -> &str;
    fn version(&self) -> String;
    fn capabilities(&self) -> HybridCapabilities;
    /// Validates and stores the search parameters (as [`super::VectorEngine::set_search_params`];
    /// the runner's own fusion parameters are taken out before).
    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()>;
    fn create(&mut self, spec: &HybridSpec) -> EngineResult<()>;
    /// Loads rows `rows` of `data` as points with ids equal to their rows.
    fn insert(&mut self, data: &HybridData<'_>, rows: Range<usize>) -> EngineResult<()>;
    /// Blocks until the indexes cover the loaded points.
    fn wait_until_ready(&mut self) -> EngineResult<IndexReport>;
    /// The lexical top-`k`, best first, scores growing with relevance.
    fn search_lexical(
        &self,
        query: &HybridQuery<'_>,
        k: usize,
        out: &mut Vec<Neighbor>,
    ) -> EngineResult<()>;
    /// The dense top-`k`, best first, scores growing with similarity.
    fn search_dense(&self, query: &[f32], k: usize, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        let _ = (query, k, out);
        Err(self.unsupported("dense search beside its lexical index"))
    }
    /// Both searches, `depth` deep each, fused by the engine itself into its top-`k`.
    fn search_fused(
        &self,
        query: &HybridQuery<'_>,
        depth: usize,
        fusion: Fusion,
        k: usize,
        out: &mut Vec<Neighbor>,
    ) -> EngineResult<()> {
        let _ = (query, depth, fusion, k, out);
        Err(self.unsupported("fusion inside the engine"))
    }
    fn footprint(&self) -> EngineResult<Footprint>;
    fn in_process(&self) -> bool;
    fn server_pid(&self) -> Option<u32> {
        None
    }
    /// Engine facts worth keeping in the result (as [`super::VectorEngine::describe`]).
    fn describe(&self) -> Map<String, Value> {
        Map::new()
    }
    fn close(&mut self) -> EngineResult<()>;

    fn unsupported(&self, what: &str) -> EngineError {
        EngineError::Unsupported {
            engine: self.name().to_string(),
            what: what.to_string(),
        }
    }
}
