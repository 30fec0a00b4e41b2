//! `qdrant-edge` for sparse and hybrid runs: one shard with a named sparse vector (`sparse`,
//! Qdrant's inverted index: an exact dot product, `Memory::Pinned`) beside the unnamed dense
//! vector of a dense run (HNSW, the same build and search parameters).
//!
//! Queries carry their weights (a BM25 query is IDF-weighted by the dataset), so the shard has
//! no IDF modifier: every engine scores the same vectors. Engine-side hybrid is Qdrant's query
//! API: two prefetches, `depth` deep (the dense one with the search parameters), fused by
//! `Fusion::Rrf`. Qdrant's RRF scores `1 / (k + position)` with positions from 0, so the
//! textbook `1 / (k + rank)` (ranks from 1) is Qdrant's with `k + 1`, which is what is sent.

use std::ops::Range;

use qdrant_edge::{
    EdgeConfig, EdgeShard, EdgeSparseVectorParams, Fusion as EdgeFusion, Memory, NamedQuery,
    PointId as QdrantPointId, PointInsertOperations, PointOperations, PointStructPersisted,
    PrefetchBuilder, QueryEnum, QueryRequestBuilder, ScoringQuery, SparseVector, UpdateOperation,
    VectorInternal, VectorPersisted, VectorStructPersisted,
};
use serde_json::{Map, Value, json};

use super::shard::{bad_param, collect_neighbors, edge_config, search_params};
use super::{ENGINE, SHARD_DIR, VERSION};
use crate::adapters::qdrant_settings::{BuildSettings, SearchSettings, Target};
use crate::distance::Distance;
use crate::engine::hybrid::{
    HybridCapabilities, HybridData, HybridEngine, HybridQuery, HybridSpec,
};
use crate::engine::{
    CollectionSpec, ConnectOptions, EngineError, EngineResult, Footprint, IndexReport, Neighbor,
};
use crate::params::ParamMap;
use crate::sparse::SparseRow;
use crate::sparse::fusion::Fusion;
use crate::types::ElementType;

pub const SUMMARY: &str = "Qdrant's sparse vectors (inverted index) beside its HNSW; hybrid by \
                           prefetch + RRF in the engine, or in the client";

/// The sparse vector's name in the shard.
const SPARSE: &str = "sparse";

pub fn open(opts: &ConnectOptions) -> EngineResult<Box<dyn HybridEngine>> {
    Ok(Box::new(EdgeHybrid {
        recreate: opts.recreate,
        shard: None,
        search: SearchSettings::default(),
    }))
}

struct Built {
    shard: EdgeShard,
    path: std::path::PathBuf,
    dense: Option<(usize, Distance)>,
    settings: Option<BuildSettings>,
}

struct EdgeHybrid {
    recreate: bool,
    shard: Option<Built>,
    search: SearchSettings,
}

fn op(operation: &str) -> impl Fn(qdrant_edge::OperationError) -> EngineError + '_ {
    move |e| EngineError::op(ENGINE, operation, e)
}

fn sparse_vector(row: SparseRow<'_>) -> EngineResult<SparseVector> {
    SparseVector::new(row.indices.to_vec(), row.values.to_vec())
        .map_err(|e| EngineError::op(ENGINE, "sparse vector", e))
}

impl EdgeHybrid {
    fn built(&self, operation: &str) -> EngineResult<&Built> {
        self.shard.as_ref().ok_or_else(|| {
            EngineError::op(ENGINE, operation, "no collection: create() was not called")
        })
    }

    /// The shard's configuration: a dense run's, plus the sparse vector.
    fn config(spec: &HybridSpec) -> EngineResult<(EdgeConfig, Option<BuildSettings>)> {
        let sparse = EdgeSparseVectorParams::builder()
            .memory(Memory::Pinned)
            .build();
        let Some(dense) = spec.dense else {
            if let Some(p) = spec.build_params.keys().next() {
                return Err(EngineError::bad_param(
                    ENGINE,
                    p,
                    "a sparse-only collection takes no build parameters (they are the dense \
                     side's: use --retrieval hybrid)",
                ));
            }
            return Ok((EdgeConfig::builder().sparse_vector(SPARSE, sparse).build(), None));
        };
        let collection = CollectionSpec {
            name: spec.name.clone(),
            dim: dense.dim,
            distance: dense.distance,
            expected_points: spec.expected_points,
            build_params: spec.build_params.clone(),
            work_dir: spec.work_dir.clone(),
            attributes: None,
            element_type: ElementType::Float32,
        };
        let settings = BuildSettings::for_collection(&collection, Target::Edge)?;
        let mut config = edge_config(&settings, dense.distance);
        config.sparse_vectors.insert(SPARSE.into(), sparse);
        Ok((config, Some(settings)))
    }

    fn dense_leg(&self, query: &[f32]) -> ScoringQuery {
        ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery {
            query: VectorInternal::Dense(query.to_vec()),
            using: None,
        }))
    }

    fn sparse_leg(row: SparseRow<'_>) -> EngineResult<ScoringQuery> {
        Ok(ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery {
            query: VectorInternal::Sparse(sparse_vector(row)?),
            using: Some(SPARSE.into()),
        })))
    }

    /// Scores that grow with similarity: Qdrant's euclidean score is a distance.
    fn similarities(&self, out: &mut [Neighbor]) {
        let euclid = self
            .shard
            .as_ref()
            .and_then(|b| b.dense)
            .is_some_and(|(_, d)| d == Distance::Euclidean);
        if euclid {
            out.iter_mut().for_each(|n| n.score = -n.score);
        }
    }
}

impl HybridEngine for EdgeHybrid {
    fn name(&self) -> &str {
        ENGINE
    }

    fn version(&self) -> String {
        VERSION.to_string()
    }

    fn capabilities(&self) -> HybridCapabilities {
        HybridCapabilities::SPARSE_AND_DENSE_FUSED
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        let quantized = self
            .shard
            .as_ref()
            .and_then(|b| b.settings.as_ref())
            .map(BuildSettings::quantized);
        self.search = SearchSettings::parse(params, quantized).map_err(bad_param)?;
        Ok(())
    }

    fn create(&mut self, spec: &HybridSpec) -> EngineResult<()> {
        let (config, settings) = Self::config(spec)?;
        let path = spec.work_dir.join(SHARD_DIR);
        if path.exists() {
            if !self.recreate {
                return Err(EngineError::op(
                    ENGINE,
                    "create",
                    format!("{} already exists; use --recreate to replace it", path.display()),
                ));
            }
            self.shard = None;
            std::fs::remove_dir_all(&path).map_err(|e| {
                EngineError::op(ENGINE, "create", format!("removing {}: {e}", path.display()))
            })?;
        }
        let shard = EdgeShard::new(&path, config).map_err(op("create"))?;
        self.shard = Some(Built {
            shard,
            path,
            dense: spec.dense.map(|d| (d.dim, d.distance)),
            settings,
        });
        Ok(())
    }

    fn insert(&mut self, data: &HybridData<'_>, rows: Range<usize>) -> EngineResult<()> {
        let built = self.built("insert")?;
        let mut points = Vec::with_capacity(rows.len());
        for r in rows {
            let mut named = std::collections::HashMap::new();
            named.insert(
                SPARSE.to_string(),
                VectorPersisted::Sparse(sparse_vector(data.sparse.entries(r))?),
            );
            if let (Some(_), Some(dense)) = (built.dense, data.dense) {
                named.insert(String::new(), VectorPersisted::Dense(dense.row(r).to_vec()));
            }
            points.push(PointStructPersisted {
                id: QdrantPointId::NumId(r as u64),
                vector: VectorStructPersisted::Named(named),
                payload: None,
            });
        }
        built
            .shard
            .update(UpdateOperation::PointOperation(PointOperations::UpsertPoints(
                PointInsertOperations::PointsList(points),
            )))
            .map_err(op("insert"))?;
        Ok(())
    }

    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        let built = self.built("optimize")?;
        let mut rounds = 0;
        while rounds < super::MAX_OPTIMIZE_ROUNDS {
            rounds += 1;
            if !built.shard.optimize().map_err(op("optimize"))? {
                break;
            }
        }
        built.shard.flush().map_err(op("flush"))?;
        let info = built.shard.info().map_err(op("info"))?;
        let mut details = Map::new();
        details.insert("optimize_rounds".into(), json!(rounds));
        details.insert("segments_count".into(), json!(info.segments_count));
        details.insert("sparse_vector".into(), json!({"name": SPARSE, "memory": "pinned", "modifier": "none"}));
        Ok(IndexReport {
            indexed_vectors: Some(info.indexed_vectors_count as u64),
            points: Some(info.points_count as u64),
            may_full_scan: built.dense.is_some() && info.points_count > info.indexed_vectors_count,
            details,
        })
    }

    fn search_lexical(
        &self,
        query: &HybridQuery<'_>,
        k: usize,
        out: &mut Vec<Neighbor>,
    ) -> EngineResult<()> {
        out.clear();
        let built = self.built("sparse search")?;
        let request = QueryRequestBuilder::new(k)
            .query(Self::sparse_leg(query.sparse)?)
            .build();
        let points = built.shard.query(request).map_err(op("sparse search"))?;
        collect_neighbors(&points, out)
    }

    fn search_dense(&self, query: &[f32], k: usize, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        out.clear();
        let built = self.built("dense search")?;
        let mut builder = QueryRequestBuilder::new(k).query(self.dense_leg(query));
        if let Some(params) = search_params(&self.search) {
            builder = builder.params(params);
        }
        let points = built.shard.query(builder.build()).map_err(op("dense search"))?;
        collect_neighbors(&points, out)?;
        self.similarities(out);
        Ok(())
    }

    fn search_fused(
        &self,
        query: &HybridQuery<'_>,
        depth: usize,
        fusion: Fusion,
        k: usize,
        out: &mut Vec<Neighbor>,
    ) -> EngineResult<()> {
        out.clear();
        let built = self.built("fused search")?;
        let (Fusion::Rrf { k: c }, Some(dense)) = (fusion, query.dense) else {
            return Err(self.unsupported("fusion other than RRF inside the engine"));
        };
        let mut dense_leg = PrefetchBuilder::new(depth).query(self.dense_leg(dense));
        if let Some(params) = search_params(&self.search) {
            dense_leg = dense_leg.params(params);
        }
        let sparse_leg = PrefetchBuilder::new(depth).query(Self::sparse_leg(query.sparse)?);
        let request = QueryRequestBuilder::new(k)
            .add_prefetch(dense_leg.build())
            .add_prefetch(sparse_leg.build())
            .query(ScoringQuery::Fusion(EdgeFusion::Rrf {
                // Qdrant's positions count from 0: its k is the textbook k + 1.
                k: (c + 1.0).round() as usize,
                weights: None,
            }))
            .build();
        let points = built.shard.query(request).map_err(op("fused search"))?;
        collect_neighbors(&points, out)
    }

    fn footprint(&self) -> EngineResult<Footprint> {
        let built = self.built("footprint")?;
        built.shard.flush().map_err(op("flush"))?;
        let index = crate::storage::dirs_bytes(
            ENGINE,
            &built.path.join("segments"),
            |name| name.starts_with("vector_index") || name.starts_with("sparse"),
            "segments/*/vector_index* and sparse index files",
        )?
        .ok_or_else(|| "no segment has an index directory".to_string());
        let total = crate::storage::dir_bytes(
            ENGINE,
            &built.path,
            "shard directory: segments (vectors, indexes) + WAL",
        )?;
        Ok(Footprint::new(index, Ok(total)))
    }

    fn describe(&self) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("search_params".into(), self.search.to_json());
        if let Some(Ok(info)) = self.shard.as_ref().map(|b| b.shard.info()) {
            out.insert("points".into(), json!(info.points_count));
            out.insert("indexed_vectors".into(), json!(info.indexed_vectors_count));
        }
        out
    }

    fn close(&mut self) -> EngineResult<()> {
        if let Some(built) = self.shard.take() {
            built.shard.flush().map_err(op("close"))?;
        }
        Ok(())
    }
}
