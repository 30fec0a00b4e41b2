//! The Lucene adapter's parameters, named after Lucene's own where it has a name (`m` is its
//! `maxConn`, `ef_construction` its `beamWidth`), parsed and checked before anything is built.

use serde_json::{Value, json};

use super::ENGINE;
use crate::distance::Distance;
use crate::engine::{EngineError, EngineResult};
use crate::params::{ParamMap, ParamMapExt};

const BUILD_PARAMS: &[&str] = &[
    "m",
    "ef_construction",
    "quantization",
    "merge_segments",
    "ram_buffer_mb",
];
const SEARCH_PARAMS: &[&str] = &["ef"];

/// Lucene's own defaults (`Lucene99HnswVectorsFormat`'s maxConn and beamWidth), and the
/// limits its constructor enforces.
const DEFAULT_M: u64 = 16;
const DEFAULT_EF_CONSTRUCTION: u64 = 100;
const MAX_M: u64 = 512;
const MAX_EF_CONSTRUCTION: u64 = 3_200;
/// The candidate list of a search when none is given.
const DEFAULT_EF: u64 = 100;
/// IndexWriter's RAM buffer: Lucene refuses more than 2047 MB per indexing thread.
const DEFAULT_RAM_BUFFER_MB: u64 = 1_024;

/// The parsed build parameters of one collection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BuildSettings {
    pub m: u32,
    pub ef_construction: u32,
    /// Lucene's scalar quantization (`Lucene99HnswScalarQuantizedVectorsFormat`): int8 codes
    /// beside the float vectors, which the graph search scores with.
    pub int8: bool,
    /// Segments left after the bulk load's force merge; 0 keeps what the writer flushed.
    pub merge_segments: u32,
    pub ram_buffer_mb: u32,
    pub distance: Distance,
}

impl BuildSettings {
    pub fn parse(params: &ParamMap, distance: Distance) -> EngineResult<BuildSettings> {
        params
            .reject_unknown(BUILD_PARAMS)
            .map_err(|e| EngineError::bad_param(ENGINE, "build", e))?;
        let within = |name: &str, range, default| {
            params
                .get_within(name, range)
                .map(|v| v.unwrap_or(default) as u32)
                .map_err(|e| EngineError::bad_param(ENGINE, name, e))
        };
        let int8 = match params
            .get_str("quantization")
            .map_err(|e| EngineError::bad_param(ENGINE, "quantization", e))?
        {
            None | Some("none") => false,
            Some("int8") => true,
            Some(other) => {
                return Err(EngineError::bad_param(
                    ENGINE,
                    "quantization",
                    format!("`{other}` is not one of none, int8"),
                ));
            }
        };
        Ok(BuildSettings {
            m: within("m", 2..=MAX_M, DEFAULT_M)?,
            ef_construction: within("ef_construction", 1..=MAX_EF_CONSTRUCTION, DEFAULT_EF_CONSTRUCTION)?,
            int8,
            merge_segments: within("merge_segments", 0..=1_000, 1)?,
            ram_buffer_mb: within("ram_buffer_mb", 16..=2_047, DEFAULT_RAM_BUFFER_MB)?,
            distance,
        })
    }

    /// Lucene's similarity for the dataset's distance (the protocol's code): EUCLIDEAN,
    /// COSINE, MAXIMUM_INNER_PRODUCT (DOT_PRODUCT would need unit vectors).
    pub fn similarity(&self) -> (u8, &'static str) {
        match self.distance {
            Distance::Euclidean => (0, "EUCLIDEAN"),
            Distance::Angular => (1, "COSINE"),
            Distance::Dot => (2, "MAXIMUM_INNER_PRODUCT"),
        }
    }

    pub fn to_json(self) -> Value {
        json!({
            "m": self.m,
            "ef_construction": self.ef_construction,
            "quantization": if self.int8 { "int8" } else { "none" },
            "merge_segments": self.merge_segments,
            "ram_buffer_mb": self.ram_buffer_mb,
            "similarity": self.similarity().1,
        })
    }
}

/// The parsed search parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchSettings {
    /// The KNN query's candidate list (its `k`, at least the search's k).
    pub ef: u32,
}

impl Default for SearchSettings {
    fn default() -> Self {
        SearchSettings {
            ef: DEFAULT_EF as u32,
        }
    }
}

impl SearchSettings {
    pub fn parse(params: &ParamMap) -> EngineResult<SearchSettings> {
        params
            .reject_unknown(SEARCH_PARAMS)
            .map_err(|e| EngineError::bad_param(ENGINE, "search", e))?;
        let ef = params
            .get_within("ef", 1..=100_000)
            .map_err(|e| EngineError::bad_param(ENGINE, "ef", e))?;
        Ok(SearchSettings {
            ef: ef.unwrap_or(DEFAULT_EF) as u32,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamValue;

    #[test]
    fn defaults_and_limits() {
        let s = BuildSettings::parse(&ParamMap::new(), Distance::Angular).unwrap();
        assert_eq!((s.m, s.ef_construction, s.int8, s.merge_segments), (16, 100, false, 1));
        assert_eq!(s.similarity(), (1, "COSINE"));
        let p = |name: &str, v: ParamValue| ParamMap::from([(name.to_string(), v)]);
        let err = BuildSettings::parse(&p("m", ParamValue::Int(600)), Distance::Euclidean);
        assert!(err.unwrap_err().to_string().contains("2..=512"));
        let err = BuildSettings::parse(&p("quantization", ParamValue::Str("pq".into())), Distance::Dot);
        assert!(err.unwrap_err().to_string().contains("none, int8"));
        assert!(SearchSettings::parse(&p("hnsw_ef", ParamValue::Int(5))).is_err());
        assert_eq!(SearchSettings::parse(&p("ef", ParamValue::Int(5))).unwrap().ef, 5);
    }
}
