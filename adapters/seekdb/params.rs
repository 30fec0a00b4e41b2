//! Build and search parameters (the folder's `config.toml` lists them) and the SQL they
//! become: the `WITH (...)` of `CREATE VECTOR INDEX`, and the session variables of a search.

use std::fmt::Write as _;

use super::ENGINE;
use crate::distance::Distance;
use crate::engine::{EngineError, EngineResult};
use crate::params::{ParamMap, ParamMapExt};

const BUILD_PARAMS: &[&str] = &["type", "m", "ef_construction", "nlist", "parallel"];
const SEARCH_PARAMS: &[&str] = &["ef_search", "nprobes"];
const INDEX_TYPES: &[&str] = &[
    "hnsw", "hnsw_sq", "hnsw_bq", "ivf_flat", "ivf_sq8", "ivf_pq",
];

/// The vector index to build.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct BuildSettings {
    pub index_type: &'static str,
    pub m: Option<u64>,
    pub ef_construction: Option<u64>,
    pub nlist: Option<u64>,
    pub parallel: Option<u64>,
}

fn bad(param: &str, e: impl std::fmt::Display) -> EngineError {
    EngineError::bad_param(ENGINE, param, e)
}

impl BuildSettings {
    pub fn parse(params: &ParamMap) -> EngineResult<BuildSettings> {
        params
            .reject_unknown(BUILD_PARAMS)
            .map_err(|e| bad("build", e))?;
        let index_type = match params.get_str("type").map_err(|e| bad("type", e))? {
            None => "hnsw",
            Some(t) => INDEX_TYPES
                .iter()
                .copied()
                .find(|known| known.eq_ignore_ascii_case(t))
                .ok_or_else(|| {
                    bad(
                        "type",
                        format!("`{t}`: expected one of {}", INDEX_TYPES.join(", ")),
                    )
                })?,
        };
        let count = |name: &str| params.get_count(name).map_err(|e| bad(name, e));
        let settings = BuildSettings {
            index_type,
            m: count("m")?,
            ef_construction: count("ef_construction")?,
            nlist: count("nlist")?,
            parallel: count("parallel")?,
        };
        if settings.is_ivf() && settings.ef_construction.is_some() {
            return Err(bad(
                "ef_construction",
                format!("an {index_type} index has no graph"),
            ));
        }
        if !settings.is_ivf() && settings.nlist.is_some() {
            return Err(bad("nlist", format!("an {index_type} index has no lists")));
        }
        if settings.index_type.starts_with("ivf")
            && settings.index_type != "ivf_pq"
            && settings.m.is_some()
        {
            return Err(bad(
                "m",
                format!("an {index_type} index has no graph or sub-vectors"),
            ));
        }
        Ok(settings)
    }

    pub fn is_ivf(&self) -> bool {
        self.index_type.starts_with("ivf")
    }

    /// `CREATE /*+ PARALLEL(n) */ VECTOR INDEX name ON table(embedding) WITH (...)`.
    pub fn create_index_sql(&self, table: &str, index: &str, distance: Distance) -> String {
        let mut with = format!(
            "distance={}, type={}",
            distance_name(distance),
            self.index_type
        );
        let mut add = |name: &str, value: Option<u64>| {
            if let Some(v) = value {
                let _ = write!(with, ", {name}={v}");
            }
        };
        add("m", self.m);
        add("ef_construction", self.ef_construction);
        add("nlist", self.nlist);
        let hint = self
            .parallel
            .map(|n| format!("/*+ PARALLEL({n}) */ "))
            .unwrap_or_default();
        format!("CREATE {hint}VECTOR INDEX {index} ON {table}(embedding) WITH ({with})")
    }
}

/// The index's `distance`.
fn distance_name(distance: Distance) -> &'static str {
    match distance {
        Distance::Euclidean => "l2",
        Distance::Angular => "cosine",
        Distance::Dot => "inner_product",
    }
}

/// The SQL function the search orders by: the one the index's distance serves.
pub(super) fn distance_function(distance: Distance) -> &'static str {
    match distance {
        Distance::Euclidean => "l2_distance",
        Distance::Angular => "cosine_distance",
        Distance::Dot => "negative_inner_product",
    }
}

/// The search parameters in force.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct SearchSettings {
    pub ef_search: Option<u64>,
    pub nprobes: Option<u64>,
}

impl SearchSettings {
    pub fn parse(params: &ParamMap) -> EngineResult<SearchSettings> {
        params
            .reject_unknown(SEARCH_PARAMS)
            .map_err(|e| bad("search", e))?;
        let count = |name: &str| params.get_count(name).map_err(|e| bad(name, e));
        let ef_search = count("ef_search")?;
        // seekdb refuses ob_hnsw_ef_search above 160,000 when it is set.
        if let Some(ef) = ef_search.filter(|&ef| ef > 160_000) {
            return Err(bad("ef_search", format!("{ef}: at most 160000")));
        }
        Ok(SearchSettings {
            ef_search,
            nprobes: count("nprobes")?,
        })
    }

    /// `SET ob_hnsw_ef_search = 64, ob_ivf_nprobes = 8`: seekdb's defaults for the ones not
    /// given, so that a pooled session set by an earlier configuration is reset.
    pub fn session_sql(&self) -> String {
        format!(
            "SET ob_hnsw_ef_search = {}, ob_ivf_nprobes = {}",
            self.ef_search.unwrap_or(64),
            self.nprobes.unwrap_or(8)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapters::support::testing::map as params;
    use crate::params::ParamValue;

    #[test]
    fn the_index_statement_carries_the_given_parameters_only() {
        let b = BuildSettings::parse(&params(&[
            ("m", ParamValue::Int(24)),
            ("parallel", ParamValue::Int(2)),
        ]))
        .unwrap();
        assert_eq!(
            b.create_index_sql("t", "t_vi", Distance::Angular),
            "CREATE /*+ PARALLEL(2) */ VECTOR INDEX t_vi ON t(embedding) WITH \
             (distance=cosine, type=hnsw, m=24)"
        );
        let ivf = BuildSettings::parse(&params(&[
            ("type", ParamValue::Str("IVF_FLAT".into())),
            ("nlist", ParamValue::Int(64)),
        ]))
        .unwrap();
        assert_eq!(
            ivf.create_index_sql("t", "i", Distance::Dot),
            "CREATE VECTOR INDEX i ON t(embedding) WITH (distance=inner_product, type=ivf_flat, nlist=64)"
        );
    }

    #[test]
    fn parameters_of_another_index_kind_are_refused() {
        let err = |pairs: &[(&str, ParamValue)]| {
            BuildSettings::parse(&params(pairs))
                .unwrap_err()
                .to_string()
        };
        assert!(err(&[("type", ParamValue::Str("diskann".into()))]).contains("ivf_pq"));
        assert!(
            err(&[
                ("type", ParamValue::Str("ivf_flat".into())),
                ("ef_construction", ParamValue::Int(8))
            ])
            .contains("no graph")
        );
        assert!(err(&[("nlist", ParamValue::Int(8))]).contains("no lists"));
        assert!(err(&[("bogus", ParamValue::Int(8))]).contains("bogus"));
        let s = SearchSettings::parse(&params(&[("ef_search", ParamValue::Int(200))])).unwrap();
        assert_eq!(
            s.session_sql(),
            "SET ob_hnsw_ef_search = 200, ob_ivf_nprobes = 8"
        );
        assert!(SearchSettings::parse(&params(&[("ef_search", ParamValue::Int(0))])).is_err());
    }
}
