//! Build and search parameters: which index, its parameters, shards and consistency, and the
//! search effort, checked before anything is created.

use super::*;

/// Index types Milvus builds on a `FLOAT_VECTOR` field. A server may accept fewer (the
/// milvus-lite server: FLAT, IVF_FLAT and AUTOINDEX), and says so when it refuses one.
pub(super) const INDEX_TYPES: &[&str] = &[
    "FLAT", "IVF_FLAT", "IVF_SQ8", "IVF_PQ", "IVF_RABITQ", "HNSW", "HNSW_SQ", "HNSW_PQ",
    "HNSW_PRQ", "SCANN", "DISKANN", "AUTOINDEX",
];

/// Build parameters accepted by [`VectorEngine::create`].
pub(super) const BUILD_PARAMS: &[&str] = &[
    "index_type",
    "nlist",
    "m",
    "ef_construction",
    "pq_m",
    "nbits",
    "num_shards",
    "consistency",
];
/// Search parameters accepted by [`VectorEngine::set_search_params`].
pub(super) const SEARCH_PARAMS: &[&str] = &["nprobe", "ef", "search_list"];

/// Consistency levels by name, with their `common.ConsistencyLevel` numbers.
const CONSISTENCY: &[(&str, i32)] = &[
    ("strong", 0),
    ("session", 1),
    ("bounded", 2),
    ("eventually", 3),
];

/// The collection and index the build parameters describe.
#[derive(Debug, Clone)]
pub(super) struct BuildSettings {
    pub index_type: String,
    /// The index's own parameters, as Milvus names them (`nlist`, `M`, `efConstruction`).
    pub index_params: Map<String, Json>,
    pub num_shards: i32,
    pub consistency: (&'static str, i32),
    /// Milvus' metric for the dataset's distance.
    pub metric: &'static str,
}

/// The search-time parameters, as Milvus names them in a search's `params`.
#[derive(Debug, Clone, Default)]
pub(super) struct SearchSettings {
    pub params: Map<String, Json>,
}

fn bad(param: &str, e: impl std::fmt::Display) -> EngineError {
    EngineError::bad_param(ENGINE, param, e)
}

/// A positive integer parameter within `range`, if given.
fn bounded(
    params: &ParamMap,
    name: &str,
    range: std::ops::RangeInclusive<u64>,
) -> EngineResult<Option<u64>> {
    params.get_within(name, range).map_err(|e| bad(name, e))
}

/// The IVF list count for `n` points when none is given: 4·√n, Milvus' own sizing advice,
/// within 1..=65536.
pub(super) fn auto_nlist(n: usize) -> u64 {
    ((4.0 * (n.max(1) as f64).sqrt()).round() as u64).clamp(1, 65_536)
}

/// The build settings of `spec`, checked. Shared by `create` and the sweep check.
pub(super) fn build_settings(spec: &CollectionSpec) -> EngineResult<BuildSettings> {
    let params = &spec.build_params;
    params
        .reject_unknown(BUILD_PARAMS)
        .map_err(|e| bad("build", e))?;
    if spec.dim == 0 || spec.dim > 32_768 {
        return Err(bad("dim", format!("{} is outside 1..=32768", spec.dim)));
    }
    let index_type = params
        .get_str("index_type")
        .map_err(|e| bad("index_type", e))?
        .unwrap_or("IVF_FLAT")
        .to_ascii_uppercase();
    if !INDEX_TYPES.contains(&index_type.as_str()) {
        return Err(bad(
            "index_type",
            format!("`{index_type}` is not one of {}", INDEX_TYPES.join(", ")),
        ));
    }
    let mut index_params = Map::new();
    let ivf = index_type.starts_with("IVF") || index_type == "SCANN";
    let nlist = bounded(params, "nlist", 1..=65_536)?;
    if ivf {
        let nlist = nlist.unwrap_or_else(|| auto_nlist(spec.expected_points));
        index_params.insert("nlist".into(), nlist.into());
    } else if nlist.is_some() {
        return Err(bad("nlist", format!("{index_type} has no IVF lists")));
    }
    let hnsw = index_type.starts_with("HNSW");
    for (name, milvus, range) in [("m", "M", 2..=2048), ("ef_construction", "efConstruction", 1..=u64::from(u32::MAX))] {
        if let Some(v) = bounded(params, name, range)? {
            if !hnsw {
                return Err(bad(name, format!("{index_type} is not an HNSW index")));
            }
            index_params.insert(milvus.into(), v.into());
        }
    }
    for (name, milvus) in [("pq_m", "m"), ("nbits", "nbits")] {
        if let Some(v) = bounded(params, name, 1..=65_536)? {
            if !index_type.ends_with("PQ") {
                return Err(bad(name, format!("{index_type} is not a PQ index")));
            }
            if name == "pq_m" && !spec.dim.is_multiple_of(v as usize) {
                return Err(bad(name, format!("{v} does not divide the dimension {}", spec.dim)));
            }
            index_params.insert(milvus.into(), v.into());
        }
    }
    let num_shards = bounded(params, "num_shards", 1..=64)?.unwrap_or(1) as i32;
    let consistency = match params.get_str("consistency").map_err(|e| bad("consistency", e))? {
        None => CONSISTENCY[0],
        Some(c) => *CONSISTENCY
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(c))
            .ok_or_else(|| {
                bad("consistency", format!("`{c}` is not one of strong, session, bounded, eventually"))
            })?,
    };
    let metric = match spec.distance {
        Distance::Euclidean => "L2",
        Distance::Angular => "COSINE",
        Distance::Dot => "IP",
    };
    Ok(BuildSettings {
        index_type,
        index_params,
        num_shards,
        consistency,
        metric,
    })
}

/// The search settings of `params`, checked.
pub(super) fn search_settings(params: &ParamMap) -> EngineResult<SearchSettings> {
    params
        .reject_unknown(SEARCH_PARAMS)
        .map_err(|e| bad("search", e))?;
    let mut out = Map::new();
    for (name, range) in [("nprobe", 1..=65_536), ("ef", 1..=32_768), ("search_list", 1..=65_536)] {
        if let Some(v) = bounded(params, name, range)? {
            out.insert(name.into(), v.into());
        }
    }
    Ok(SearchSettings { params: out })
}
