//! The usearch adapter's parameters, named after usearch's own (`connectivity`,
//! `expansion_add`, `expansion_search`, `quantization`), parsed and checked before anything is
//! built, and the dataset's metric mapped to usearch's.

use serde_json::{Value, json};
use usearch::{IndexOptions, MetricKind, ScalarKind};

use super::NAME;
use crate::distance::Distance;
use crate::engine::{EngineError, EngineResult};
use crate::params::{ParamMap, ParamMapExt};
use crate::types::ElementType;

/// Build parameters this engine takes.
const BUILD_PARAMS: &[&str] = &["connectivity", "expansion_add", "quantization"];
/// Search parameters this engine takes.
const SEARCH_PARAMS: &[&str] = &["expansion_search", "exact"];

/// usearch's own defaults (`index_dense_config_t`), used when a parameter is unset.
pub const DEFAULT_CONNECTIVITY: usize = 16;
pub const DEFAULT_EXPANSION_ADD: usize = 128;
pub const DEFAULT_EXPANSION_SEARCH: usize = 64;

/// Bounds that keep a typo from allocating gigabytes per node: usearch itself needs
/// `connectivity >= 2` and `expansion >= 1`, and has no useful setting beyond these.
const MAX_CONNECTIVITY: u64 = 1_024;
const MAX_EXPANSION: u64 = 1 << 20;

/// How usearch stores the vectors (its `quantization`, a `ScalarKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantization {
    F32,
    F16,
    I8,
}

impl Quantization {
    fn parse(text: &str) -> EngineResult<Quantization> {
        match text {
            "f32" => Ok(Quantization::F32),
            "f16" => Ok(Quantization::F16),
            "i8" => Ok(Quantization::I8),
            other => Err(EngineError::bad_param(
                NAME,
                "quantization",
                format!("`{other}` is not one of f32, f16, i8"),
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Quantization::F32 => "f32",
            Quantization::F16 => "f16",
            Quantization::I8 => "i8",
        }
    }

    pub fn scalar_kind(self) -> ScalarKind {
        match self {
            Quantization::F32 => ScalarKind::F32,
            Quantization::F16 => ScalarKind::F16,
            Quantization::I8 => ScalarKind::I8,
        }
    }

    /// The element type the vectors are stored as, for the result file.
    pub fn element_type(self) -> ElementType {
        match self {
            Quantization::F32 => ElementType::Float32,
            Quantization::F16 => ElementType::Float16,
            Quantization::I8 => ElementType::Int8,
        }
    }
}

/// usearch's metric for a dataset's distance: squared L2 for euclidean (same order), cosine
/// distance for angular, `1 - dot` for dot (same order as the negated dot product).
pub fn metric_kind(distance: Distance) -> MetricKind {
    match distance {
        Distance::Euclidean => MetricKind::L2sq,
        Distance::Angular => MetricKind::Cos,
        Distance::Dot => MetricKind::IP,
    }
}

fn metric_name(distance: Distance) -> &'static str {
    match distance {
        Distance::Euclidean => "l2sq",
        Distance::Angular => "cos",
        Distance::Dot => "ip",
    }
}

/// The parsed build parameters of one collection.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildSettings {
    pub connectivity: usize,
    pub expansion_add: usize,
    pub quantization: Quantization,
    pub distance: Distance,
}

fn bounded(params: &ParamMap, name: &str, min: u64, max: u64) -> EngineResult<Option<usize>> {
    params
        .get_within(name, min..=max)
        .map(|v| v.map(|v| v as usize))
        .map_err(|e| EngineError::bad_param(NAME, name, e))
}

impl BuildSettings {
    /// Parses and checks `params` for a collection of `distance`.
    pub fn parse(params: &ParamMap, distance: Distance) -> EngineResult<BuildSettings> {
        params
            .reject_unknown(BUILD_PARAMS)
            .map_err(|e| EngineError::bad_param(NAME, "build", e))?;
        let quantization = match params
            .get_str("quantization")
            .map_err(|e| EngineError::bad_param(NAME, "quantization", e))?
        {
            Some(text) => Quantization::parse(text)?,
            None => Quantization::F32,
        };
        // usearch casts floats to i8 by scaling each vector to unit length first: the
        // lengths that euclidean and dot distances depend on are lost.
        if quantization == Quantization::I8 && distance != Distance::Angular {
            return Err(EngineError::bad_param(
                NAME,
                "quantization",
                format!(
                    "i8 scales every vector to unit length, which changes {distance} distances; \
                     it fits angular data only"
                ),
            ));
        }
        Ok(BuildSettings {
            connectivity: bounded(params, "connectivity", 2, MAX_CONNECTIVITY)?
                .unwrap_or(DEFAULT_CONNECTIVITY),
            expansion_add: bounded(params, "expansion_add", 1, MAX_EXPANSION)?
                .unwrap_or(DEFAULT_EXPANSION_ADD),
            quantization,
            distance,
        })
    }

    /// usearch's options for an index of `dim` dimensions with these settings.
    pub fn options(&self, dim: usize, expansion_search: usize) -> IndexOptions {
        IndexOptions {
            dimensions: dim,
            metric: metric_kind(self.distance),
            quantization: self.quantization.scalar_kind(),
            connectivity: self.connectivity,
            expansion_add: self.expansion_add,
            expansion_search,
            multi: false,
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "connectivity": self.connectivity,
            "expansion_add": self.expansion_add,
            "quantization": self.quantization.name(),
            "metric": metric_name(self.distance),
        })
    }
}

/// The parsed search parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchSettings {
    pub expansion_search: usize,
    /// usearch's brute-force `exact_search` instead of the graph.
    pub exact: bool,
}

impl Default for SearchSettings {
    fn default() -> Self {
        SearchSettings {
            expansion_search: DEFAULT_EXPANSION_SEARCH,
            exact: false,
        }
    }
}

impl SearchSettings {
    pub fn parse(params: &ParamMap) -> EngineResult<SearchSettings> {
        params
            .reject_unknown(SEARCH_PARAMS)
            .map_err(|e| EngineError::bad_param(NAME, "search", e))?;
        Ok(SearchSettings {
            expansion_search: bounded(params, "expansion_search", 1, MAX_EXPANSION)?
                .unwrap_or(DEFAULT_EXPANSION_SEARCH),
            exact: params
                .get_bool("exact")
                .map_err(|e| EngineError::bad_param(NAME, "exact", e))?
                .unwrap_or(false),
        })
    }

    pub fn to_json(self) -> Value {
        json!({ "expansion_search": self.expansion_search, "exact": self.exact })
    }
}
