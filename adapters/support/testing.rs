//! What the adapters' unit tests share: parameter maps, a collection to create, points on a
//! line whose nearest neighbours are known, and a search that returns ids.

use std::path::Path;

use crate::distance::Distance;
use crate::engine::{CollectionSpec, PointId, Query, VectorEngine};
use crate::params::{ParamMap, ParamValue};

/// A parameter map of `pairs`.
pub fn map(pairs: &[(&str, ParamValue)]) -> ParamMap {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

/// Collection `t`: `n` points of `dim` in `distance`, built with `build_params` in `work_dir`.
pub fn spec(
    n: usize,
    dim: usize,
    distance: Distance,
    build_params: ParamMap,
    work_dir: &Path,
) -> CollectionSpec {
    CollectionSpec {
        name: "t".into(),
        dim,
        distance,
        expected_points: n,
        build_params,
        work_dir: work_dir.to_path_buf(),
        attributes: None,
        element_type: Default::default(),
    }
}

/// Point `i` sits at `(i, 0, 0, 0)`: its nearest neighbours are its neighbours on the line.
pub fn line(ids: std::ops::Range<u64>) -> (Vec<PointId>, Vec<f32>) {
    let ids: Vec<PointId> = ids.collect();
    let vectors = ids
        .iter()
        .flat_map(|&i| [i as f32, 0.0, 0.0, 0.0])
        .collect();
    (ids, vectors)
}

/// The ids of the `k` nearest points to `query`, as the engine answers.
pub fn nearest(engine: &dyn VectorEngine, query: [f32; 4], k: usize) -> Vec<PointId> {
    let mut out = Vec::new();
    engine
        .search(Query::new(&query, k), &mut out)
        .expect("search");
    out.iter().map(|n| n.id).collect()
}
