//! The build and search parameters of the `duckdb` engine (see its config.toml), parsed and
//! checked before anything is built.

use serde_json::{Value, json};

use super::ENGINE;
use crate::distance::Distance;
use crate::engine::{EngineError, EngineResult};
use crate::params::{ParamMap, ParamMapExt};

/// vss's defaults (`M`, `ef_construction`, `ef_search`).
pub(super) const DEFAULT_M: u64 = 16;
pub(super) const DEFAULT_EF_CONSTRUCTION: u64 = 128;
pub(super) const DEFAULT_EF_SEARCH: u64 = 64;

/// The HNSW graph's parameters.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Hnsw {
    pub m: u64,
    /// `None`: vss's own default (2 × `m`).
    pub m0: Option<u64>,
    pub ef_construction: u64,
}

/// What `create` builds.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct BuildSettings {
    /// `None`: no index, every search scans the table.
    pub hnsw: Option<Hnsw>,
    /// The database is a file in the work directory instead of memory.
    pub on_disk: bool,
}

/// What every search uses.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct SearchSettings {
    pub ef_search: u64,
}

impl Default for SearchSettings {
    fn default() -> Self {
        SearchSettings {
            ef_search: DEFAULT_EF_SEARCH,
        }
    }
}

fn bad(param: &str, message: impl std::fmt::Display) -> EngineError {
    EngineError::bad_param(ENGINE, param, message)
}

/// A positive integer parameter, at most `max` (vss stores them in narrower integers).
fn positive(params: &ParamMap, name: &str, max: u64) -> EngineResult<Option<u64>> {
    match params.get_count(name).map_err(|e| bad(name, e))? {
        Some(v) if v > max => Err(bad(name, format!("must be at most {max}, got {v}"))),
        v => Ok(v),
    }
}

impl BuildSettings {
    pub(super) fn parse(params: &ParamMap) -> EngineResult<BuildSettings> {
        params
            .reject_unknown(&["index", "m", "m0", "ef_construction", "on_disk"])
            .map_err(|e| bad("build", e))?;
        let on_disk = params
            .get_bool("on_disk")
            .map_err(|e| bad("on_disk", e))?
            .unwrap_or(false);
        let index = params.get_str("index").map_err(|e| bad("index", e))?;
        let m = positive(params, "m", 65_535)?;
        let m0 = positive(params, "m0", 65_535)?;
        let ef_construction = positive(params, "ef_construction", 1 << 20)?;
        let hnsw = match index.unwrap_or("hnsw") {
            "hnsw" => Some(Hnsw {
                m: m.unwrap_or(DEFAULT_M),
                m0,
                ef_construction: ef_construction.unwrap_or(DEFAULT_EF_CONSTRUCTION),
            }),
            "none" => {
                if let Some(name) = ["m", "m0", "ef_construction"]
                    .into_iter()
                    .find(|n| params.contains_key(*n))
                {
                    return Err(bad(name, "applies to index = \"hnsw\" only, not \"none\""));
                }
                None
            }
            other => return Err(bad("index", format!("`{other}`: expected hnsw or none"))),
        };
        Ok(BuildSettings { hnsw, on_disk })
    }

    /// The parameters as recorded in the result.
    pub(super) fn to_json(&self, distance: Distance) -> Value {
        match &self.hnsw {
            Some(h) => json!({
                "index": "hnsw",
                "metric": metric(distance),
                "m": h.m,
                "m0": h.m0,
                "ef_construction": h.ef_construction,
                "on_disk": self.on_disk,
            }),
            None => json!({ "index": "none", "on_disk": self.on_disk }),
        }
    }
}

impl SearchSettings {
    pub(super) fn parse(params: &ParamMap) -> EngineResult<SearchSettings> {
        params
            .reject_unknown(&["ef_search"])
            .map_err(|e| bad("search", e))?;
        let ef_search = positive(params, "ef_search", 1 << 20)?.unwrap_or(DEFAULT_EF_SEARCH);
        Ok(SearchSettings { ef_search })
    }
}

/// vss's metric for a distance.
pub(super) fn metric(distance: Distance) -> &'static str {
    match distance {
        Distance::Euclidean => "l2sq",
        Distance::Angular => "cosine",
        Distance::Dot => "ip",
    }
}

/// The distance function a query must order by for vss to use an index of
/// [`metric`]`(distance)`; its value is ragdbeval's distance (`Distance::between`).
pub(super) fn function(distance: Distance) -> &'static str {
    match distance {
        Distance::Euclidean => "array_distance",
        Distance::Angular => "array_cosine_distance",
        Distance::Dot => "array_negative_inner_product",
    }
}
