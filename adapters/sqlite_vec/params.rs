//! The build and search parameters of the sqlite-vec adapter: parsed, range-checked and
//! recorded, before anything is built.

use serde_json::{Map, Value, json};

use super::ENGINE;
use crate::distance::Distance;
use crate::engine::{CollectionSpec, EngineError, EngineResult};
use crate::params::{ParamMap, ParamMapExt};

/// Build parameters accepted by `create`.
pub(super) const BUILD_PARAMS: &[&str] = &["quantization", "chunk_size", "cache_mb", "mmap_mb"];
/// Search parameters accepted by `set_search_params`.
pub(super) const SEARCH_PARAMS: &[&str] = &["rescore", "oversample"];

/// sqlite-vec's own default rows per chunk (`chunk_size` table option).
const DEFAULT_CHUNK_SIZE: u64 = 1024;
/// The largest `chunk_size` the vec0 constructor accepts.
const MAX_CHUNK_SIZE: u64 = 4096;
/// Page cache of each connection, in MiB, unless set.
const DEFAULT_CACHE_MB: u64 = 64;
/// Bytes of the database file mapped into memory, in MiB, unless set. SQLite caps it at its
/// compile-time limit (2 GiB less 64 KiB in the bundled build); `describe` says the value
/// in force.
const DEFAULT_MMAP_MB: u64 = 2048;
/// The largest `k` a vec0 KNN query accepts (`SQLITE_VEC_VEC0_K_MAX`).
pub(super) const MAX_K: usize = 4096;

/// A second, quantized copy of every vector that the KNN scan reads instead of the float one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Quantization {
    None,
    /// `int8[dim]` from `vec_quantize_int8(v, 'unit')`: components in [-1, 1] mapped to
    /// 256 steps, values outside clamped.
    Int8,
    /// `bit[dim]` from `vec_quantize_binary(v)`: the sign of each component, compared by
    /// Hamming distance.
    Bit,
}

impl Quantization {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Quantization::None => "none",
            Quantization::Int8 => "int8",
            Quantization::Bit => "bit",
        }
    }
}

/// How the collection is built and every connection to it is set up.
#[derive(Debug, Clone)]
pub(super) struct BuildSettings {
    pub quantization: Quantization,
    pub chunk_size: u64,
    pub cache_mb: u64,
    pub mmap_mb: u64,
    /// vec0's `distance_metric` of the float column (and of an int8 one).
    pub metric: &'static str,
}

impl BuildSettings {
    /// The settings of `spec`, or the one parameter that is wrong and why.
    pub fn for_collection(spec: &CollectionSpec) -> EngineResult<BuildSettings> {
        let params = &spec.build_params;
        params
            .reject_unknown(BUILD_PARAMS)
            .map_err(|e| EngineError::bad_param(ENGINE, "build", e))?;
        let metric = metric(spec.distance)?;
        let quantization = match get_str(params, "quantization")? {
            None | Some("none") => Quantization::None,
            Some("int8") => Quantization::Int8,
            Some("bit") => Quantization::Bit,
            Some(other) => {
                return Err(EngineError::bad_param(
                    ENGINE,
                    "quantization",
                    format!("`{other}`: expected none, int8 or bit"),
                ));
            }
        };
        if quantization == Quantization::Bit && !spec.dim.is_multiple_of(8) {
            return Err(EngineError::bad_param(
                ENGINE,
                "quantization",
                format!(
                    "bit needs a dimension divisible by 8 (vec_quantize_binary), not {}",
                    spec.dim
                ),
            ));
        }
        let chunk_size = get_u64(params, "chunk_size")?.unwrap_or(DEFAULT_CHUNK_SIZE);
        if chunk_size == 0 || !chunk_size.is_multiple_of(8) || chunk_size > MAX_CHUNK_SIZE {
            return Err(EngineError::bad_param(
                ENGINE,
                "chunk_size",
                format!("{chunk_size}: must be a multiple of 8 from 8 to {MAX_CHUNK_SIZE}"),
            ));
        }
        Ok(BuildSettings {
            quantization,
            chunk_size,
            cache_mb: get_u64(params, "cache_mb")?.unwrap_or(DEFAULT_CACHE_MB),
            mmap_mb: get_u64(params, "mmap_mb")?.unwrap_or(DEFAULT_MMAP_MB),
            metric,
        })
    }

    pub fn quantized(&self) -> bool {
        self.quantization != Quantization::None
    }

    pub fn to_json(&self) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("quantization".into(), json!(self.quantization.as_str()));
        m.insert("chunk_size".into(), json!(self.chunk_size));
        m.insert("cache_mb".into(), json!(self.cache_mb));
        m.insert("mmap_mb".into(), json!(self.mmap_mb));
        m.insert("distance_metric".into(), json!(self.metric));
        m
    }
}

/// vec0's metric for a dataset's distance. Dot product is refused: vec0 has no inner-product
/// metric, and ranking by cosine or L2 instead would answer a different question.
pub(super) fn metric(distance: Distance) -> EngineResult<&'static str> {
    match distance {
        Distance::Euclidean => Ok("l2"),
        Distance::Angular => Ok("cosine"),
        Distance::Dot => Err(EngineError::Unsupported {
            engine: ENGINE.into(),
            what: "the dot distance (vec0 ranks by l2, cosine or L1 only)".into(),
        }),
    }
}

/// How quantized collections are searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SearchSettings {
    /// Re-rank the quantized candidates by the float vectors (sqlite-vec's documented
    /// re-scoring); false returns the quantized ranking as it is.
    pub rescore: bool,
    /// Candidates taken from the quantized scan per result wanted (`k × oversample`).
    pub oversample: u64,
}

impl Default for SearchSettings {
    fn default() -> Self {
        SearchSettings {
            rescore: true,
            oversample: 1,
        }
    }
}

impl SearchSettings {
    /// `quantized`: whether the collection is (`None` before it exists: anything goes).
    pub fn parse(params: &ParamMap, quantized: Option<bool>) -> EngineResult<SearchSettings> {
        params
            .reject_unknown(SEARCH_PARAMS)
            .map_err(|e| EngineError::bad_param(ENGINE, "search", e))?;
        let rescore = params
            .get_bool("rescore")
            .map_err(|e| EngineError::bad_param(ENGINE, "rescore", e))?;
        let oversample = get_u64(params, "oversample")?;
        if quantized == Some(false) && (rescore.is_some() || oversample.is_some()) {
            return Err(EngineError::bad_param(
                ENGINE,
                if rescore.is_some() {
                    "rescore"
                } else {
                    "oversample"
                },
                "applies to quantized collections only (build parameter quantization=int8|bit)",
            ));
        }
        let defaults = SearchSettings::default();
        let settings = SearchSettings {
            rescore: rescore.unwrap_or(defaults.rescore),
            oversample: oversample.unwrap_or(defaults.oversample),
        };
        if settings.oversample == 0 || settings.oversample > MAX_K as u64 {
            return Err(EngineError::bad_param(
                ENGINE,
                "oversample",
                format!("{}: must be from 1 to {MAX_K}", settings.oversample),
            ));
        }
        if !settings.rescore && settings.oversample > 1 {
            return Err(EngineError::bad_param(
                ENGINE,
                "oversample",
                "more candidates than results need rescore=true to rank them",
            ));
        }
        Ok(settings)
    }

    pub fn to_json(self) -> Value {
        json!({ "rescore": self.rescore, "oversample": self.oversample })
    }
}

fn get_u64(params: &ParamMap, name: &str) -> EngineResult<Option<u64>> {
    params
        .get_u64(name)
        .map_err(|e| EngineError::bad_param(ENGINE, name, e))
}

fn get_str<'a>(params: &'a ParamMap, name: &str) -> EngineResult<Option<&'a str>> {
    params
        .get_str(name)
        .map_err(|e| EngineError::bad_param(ENGINE, name, e))
}
