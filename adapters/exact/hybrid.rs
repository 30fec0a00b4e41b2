//! `exact` for sparse and hybrid runs: the reference. Its lexical search is the exact top-k by
//! dot product over posting lists (the code of the sparse ground truth), its dense search a
//! brute force with [`Distance::between`], ties by id both; a hybrid run fuses them in the
//! client. Its recall against the exact counterpart is 1.000 by construction.

use std::ops::Range;

use crate::distance::Distance;
use crate::engine::hybrid::{
    HybridCapabilities, HybridData, HybridEngine, HybridQuery, HybridSpec,
};
use crate::engine::{
    ConnectOptions, EngineError, EngineResult, Footprint, IndexReport, Neighbor, PointId,
    SourcedBytes,
};
use crate::groundtruth::sparse::SparseIndex;
use crate::params::ParamMap;
use crate::sparse::Csr;

pub const SUMMARY: &str = "exact top-k over posting lists (sparse) and brute force (dense): the reference";

const NAME: &str = crate::adapters::meta::exact::NAME;

pub fn open(_opts: &ConnectOptions) -> EngineResult<Box<dyn HybridEngine>> {
    Ok(Box::new(ExactHybrid::default()))
}

#[derive(Default)]
struct ExactHybrid {
    rows: Vec<Vec<(u32, f32)>>,
    sparse_dim: usize,
    dense: Vec<f32>,
    dense_side: Option<(usize, Distance)>,
    index: Option<SparseIndex>,
}

impl HybridEngine for ExactHybrid {
    fn name(&self) -> &str {
        NAME
    }

    fn version(&self) -> String {
        format!("ragdbeval {}", env!("CARGO_PKG_VERSION"))
    }

    fn capabilities(&self) -> HybridCapabilities {
        HybridCapabilities::SPARSE_AND_DENSE
    }

    fn set_search_params(&mut self, params: &ParamMap) -> EngineResult<()> {
        EngineError::refuse_any(NAME, params, "exact takes no search parameters")
    }

    fn create(&mut self, spec: &HybridSpec) -> EngineResult<()> {
        EngineError::refuse_any(NAME, &spec.build_params, "exact takes no build parameters")?;
        *self = ExactHybrid {
            sparse_dim: spec.sparse_dim,
            dense_side: spec.dense.map(|d| (d.dim, d.distance)),
            ..ExactHybrid::default()
        };
        Ok(())
    }

    fn insert(&mut self, data: &HybridData<'_>, rows: Range<usize>) -> EngineResult<()> {
        if rows.start != self.rows.len() {
            return Err(EngineError::op(NAME, "insert", "rows must arrive in order"));
        }
        for r in rows {
            let row = data.sparse.entries(r);
            self.rows
                .push(row.indices.iter().copied().zip(row.values.iter().copied()).collect());
            if let (Some(_), Some(dense)) = (self.dense_side, data.dense) {
                self.dense.extend_from_slice(dense.row(r));
            }
        }
        Ok(())
    }

    fn wait_until_ready(&mut self) -> EngineResult<IndexReport> {
        let base = Csr::from_rows(self.sparse_dim, &self.rows);
        self.index = Some(SparseIndex::new(&base));
        Ok(IndexReport {
            indexed_vectors: Some(self.rows.len() as u64),
            points: Some(self.rows.len() as u64),
            ..IndexReport::default()
        })
    }

    fn search_lexical(
        &self,
        query: &HybridQuery<'_>,
        k: usize,
        out: &mut Vec<Neighbor>,
    ) -> EngineResult<()> {
        out.clear();
        let index = self
            .index
            .as_ref()
            .ok_or_else(|| EngineError::op(NAME, "search", "the collection is not built"))?;
        out.extend(index.top(query.sparse, k).into_iter().map(|(id, score)| Neighbor {
            id,
            score: score as f32,
        }));
        Ok(())
    }

    fn search_dense(&self, query: &[f32], k: usize, out: &mut Vec<Neighbor>) -> EngineResult<()> {
        out.clear();
        let Some((dim, distance)) = self.dense_side else {
            return Err(self.unsupported("dense search in a sparse-only collection"));
        };
        let mut scored: Vec<(f32, PointId)> = self
            .dense
            .chunks_exact(dim)
            .enumerate()
            .map(|(i, v)| (distance.between(query, v), i as PointId))
            .collect();
        let k = k.min(scored.len());
        if k == 0 {
            return Ok(());
        }
        let by = |a: &(f32, PointId), b: &(f32, PointId)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
        scored.select_nth_unstable_by(k - 1, by);
        scored.truncate(k);
        scored.sort_unstable_by(by);
        out.extend(scored.into_iter().map(|(d, id)| Neighbor { id, score: -d }));
        Ok(())
    }

    fn footprint(&self) -> EngineResult<Footprint> {
        let sparse: usize = self.rows.iter().map(|r| r.len() * 8).sum();
        let postings = self.index.as_ref().map_or(0, SparseIndex::bytes);
        let dense = self.dense.len() * 4;
        Ok(Footprint::new(
            Ok(SourcedBytes {
                bytes: postings,
                source: "posting lists: starts × 8 B + entries × 8 B (in memory, from counts)"
                    .into(),
            }),
            Ok(SourcedBytes {
                bytes: postings + (sparse + dense) as u64,
                source: "posting lists + sparse entries × 8 B + dense vectors × 4 B (in memory, \
                         from counts)"
                    .into(),
            }),
        ))
    }

    fn close(&mut self) -> EngineResult<()> {
        *self = ExactHybrid::default();
        Ok(())
    }
}
