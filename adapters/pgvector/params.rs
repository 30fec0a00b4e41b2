//! Build and search parameters: parsing, range checks and the `SET` statements they become.

use super::sql::{IndexKind, VecType, quote_literal};
use super::*;

/// Parsed build parameters.
#[derive(Debug, Clone)]
pub(super) struct BuildParams {
    pub(super) index: IndexKind,
    pub(super) m: u64,
    pub(super) ef_construction: u64,
    /// IVFFlat lists; `None` picks pgvector's recommendation from the row count.
    pub(super) lists: Option<u64>,
    pub(super) vec_type: VecType,
    /// Index `binary_quantize(embedding)::bit(dim)` and re-rank candidates exactly.
    pub(super) binary: bool,
    pub(super) maintenance_work_mem: Option<String>,
    pub(super) parallel_workers: Option<u64>,
}

pub(super) fn bad_param(param: &str, message: impl std::fmt::Display) -> EngineError {
    EngineError::bad_param(ENGINE, param, message)
}

impl BuildParams {
    pub(super) fn parse(params: &ParamMap) -> EngineResult<BuildParams> {
        params
            .reject_unknown(BUILD_PARAMS)
            .map_err(|e| bad_param("build", e))?;
        let get_u64 = |name: &str| params.get_u64(name).map_err(|e| bad_param(name, e));
        let get_str = |name: &str| params.get_str(name).map_err(|e| bad_param(name, e));
        let index = match get_str("index")?.unwrap_or("hnsw") {
            "hnsw" => IndexKind::Hnsw,
            "ivfflat" => IndexKind::IvfFlat,
            other => {
                return Err(bad_param(
                    "index",
                    format!("`{other}`: expected hnsw or ivfflat"),
                ));
            }
        };
        let m = get_u64("m")?;
        let ef_construction = get_u64("ef_construction")?;
        let lists = get_u64("lists")?;
        match index {
            IndexKind::Hnsw if lists.is_some() => {
                return Err(bad_param("lists", "applies to index = \"ivfflat\" only"));
            }
            IndexKind::IvfFlat if m.is_some() || ef_construction.is_some() => {
                let name = if m.is_some() { "m" } else { "ef_construction" };
                return Err(bad_param(name, "applies to index = \"hnsw\" only"));
            }
            _ => {}
        }
        // pgvector's defaults.
        let m = m.unwrap_or(16);
        let ef_construction = ef_construction.unwrap_or(64);
        if index == IndexKind::Hnsw {
            check_hnsw_params(m, ef_construction)?;
        }
        if let Some(l) = lists
            && !IVFFLAT_LISTS.contains(&l)
        {
            return Err(bad_param(
                "lists",
                format!("{l} is outside pgvector's range 1..=32768"),
            ));
        }
        let vec_type = match get_str("type")?.unwrap_or("vector") {
            "vector" => VecType::Vector,
            "halfvec" => VecType::HalfVec,
            other => {
                return Err(bad_param(
                    "type",
                    format!("`{other}`: expected vector or halfvec"),
                ));
            }
        };
        let binary = match get_str("quantization")?.unwrap_or("none") {
            "none" => false,
            "binary" => true,
            other => {
                return Err(bad_param(
                    "quantization",
                    format!("`{other}`: expected none or binary"),
                ));
            }
        };
        let maintenance_work_mem = match params.get("maintenance_work_mem") {
            None => None,
            Some(crate::params::ParamValue::Str(s)) => Some(s.clone()),
            Some(other) => {
                return Err(bad_param(
                    "maintenance_work_mem",
                    format!("`{other}`: write a size with its unit, e.g. \"1GB\" or \"512MB\""),
                ));
            }
        };
        let parallel_workers = get_u64("parallel_workers")?;
        if let Some(w) = parallel_workers
            && w > 1024
        {
            return Err(bad_param(
                "parallel_workers",
                format!("{w} is more than 1024"),
            ));
        }
        Ok(BuildParams {
            index,
            m,
            ef_construction,
            lists,
            vec_type,
            binary,
            maintenance_work_mem,
            parallel_workers,
        })
    }

    pub(super) fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("index".into(), self.index.method().into());
        match self.index {
            IndexKind::Hnsw => {
                m.insert("m".into(), self.m.into());
                m.insert("ef_construction".into(), self.ef_construction.into());
            }
            IndexKind::IvfFlat => {
                m.insert(
                    "lists".into(),
                    self.lists.map_or(Value::from("auto"), Value::from),
                );
            }
        }
        m.insert("type".into(), self.vec_type.name().into());
        m.insert(
            "quantization".into(),
            if self.binary { "binary" } else { "none" }.into(),
        );
        Value::Object(m)
    }
}

/// An HNSW index's `m` and `ef_construction` within pgvector's ranges, and
/// `ef_construction >= 2 * m` as pgvector requires.
fn check_hnsw_params(m: u64, ef_construction: u64) -> EngineResult<()> {
    if !HNSW_M.contains(&m) {
        return Err(bad_param(
            "m",
            format!("{m} is outside pgvector's range 2..=100"),
        ));
    }
    if !HNSW_EF_CONSTRUCTION.contains(&ef_construction) {
        return Err(bad_param(
            "ef_construction",
            format!("{ef_construction} is outside pgvector's range 4..=1000"),
        ));
    }
    if ef_construction < 2 * m {
        return Err(bad_param(
            "ef_construction",
            format!(
                "pgvector needs ef_construction >= 2 * m ({ef_construction} < {})",
                2 * m
            ),
        ));
    }
    Ok(())
}

/// Parsed search parameters; `None` leaves the server's setting at its default.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct SearchParams {
    pub(super) ef_search: Option<u64>,
    pub(super) probes: Option<u64>,
    pub(super) iterative_scan: Option<String>,
    /// `hnsw.max_scan_tuples`: with iterative scans, the most tuples an HNSW scan visits
    /// before it stops (pgvector's default 20 000).
    pub(super) max_scan_tuples: Option<u64>,
    /// Candidates fetched by the binary index before exact re-ranking (default 4 × k).
    pub(super) rerank: Option<u64>,
    /// `enable_seqscan`: `false` makes the planner use the index even where it estimates a
    /// scan to be cheaper (small tables, large `ef_search`).
    pub(super) seqscan: Option<bool>,
}

impl SearchParams {
    pub(super) fn parse(params: &ParamMap) -> EngineResult<SearchParams> {
        params
            .reject_unknown(SEARCH_PARAMS)
            .map_err(|e| bad_param("search", e))?;
        let get_u64 = |name: &str| params.get_u64(name).map_err(|e| bad_param(name, e));
        let ef_search = get_u64("ef_search")?;
        if let Some(ef) = ef_search
            && !HNSW_EF_SEARCH.contains(&ef)
        {
            return Err(bad_param(
                "ef_search",
                format!("{ef} is outside pgvector's range 1..=1000"),
            ));
        }
        let probes = get_u64("probes")?;
        if let Some(p) = probes
            && !IVFFLAT_LISTS.contains(&p)
        {
            return Err(bad_param(
                "probes",
                format!("{p} is outside pgvector's range 1..=32768"),
            ));
        }
        let iterative_scan = params
            .get_str("iterative_scan")
            .map_err(|e| bad_param("iterative_scan", e))?;
        if let Some(mode) = iterative_scan
            && !matches!(mode, "off" | "relaxed_order" | "strict_order")
        {
            return Err(bad_param(
                "iterative_scan",
                format!("`{mode}`: expected off, relaxed_order or strict_order"),
            ));
        }
        let max_scan_tuples = get_u64("max_scan_tuples")?;
        if max_scan_tuples == Some(0) || max_scan_tuples.is_some_and(|t| t > i32::MAX as u64) {
            return Err(bad_param(
                "max_scan_tuples",
                "must be between 1 and 2147483647",
            ));
        }
        let rerank = params
            .get_count("rerank")
            .map_err(|e| bad_param("rerank", e))?;
        let seqscan = params
            .get_bool("seqscan")
            .map_err(|e| bad_param("seqscan", e))?;
        Ok(SearchParams {
            ef_search,
            probes,
            iterative_scan: iterative_scan.map(str::to_string),
            max_scan_tuples,
            rerank,
            seqscan,
        })
    }

    /// Checks what only makes sense once the index kind is known.
    pub(super) fn check_against(&self, index: IndexKind) -> EngineResult<()> {
        if index == IndexKind::IvfFlat && self.iterative_scan.as_deref() == Some("strict_order") {
            return Err(bad_param(
                "iterative_scan",
                "IVFFlat supports off and relaxed_order only (strict_order is HNSW-only)",
            ));
        }
        if index == IndexKind::IvfFlat && self.max_scan_tuples.is_some() {
            return Err(bad_param(
                "max_scan_tuples",
                "an HNSW setting (IVFFlat bounds iterative scans with ivfflat.max_probes)",
            ));
        }
        Ok(())
    }

    /// Session settings for these parameters. Unset ones are reset, so a value of an earlier
    /// parameter set never lingers on a pooled connection.
    pub(super) fn settings_sql(&self, index: IndexKind) -> String {
        let mut sql = String::new();
        match self.ef_search {
            Some(ef) => {
                let _ = write!(sql, "SET hnsw.ef_search = {ef};");
            }
            None => sql.push_str("RESET hnsw.ef_search;"),
        }
        match self.probes {
            Some(p) => {
                let _ = write!(sql, "SET ivfflat.probes = {p};");
            }
            None => sql.push_str("RESET ivfflat.probes;"),
        }
        let (this, other) = match index {
            IndexKind::Hnsw => ("hnsw.iterative_scan", "ivfflat.iterative_scan"),
            IndexKind::IvfFlat => ("ivfflat.iterative_scan", "hnsw.iterative_scan"),
        };
        match &self.iterative_scan {
            Some(mode) => {
                let _ = write!(sql, "SET {this} = {};", quote_literal(mode));
            }
            None => {
                let _ = write!(sql, "RESET {this};");
            }
        }
        let _ = write!(sql, "RESET {other};");
        match (self.max_scan_tuples, index) {
            (Some(t), IndexKind::Hnsw) => {
                let _ = write!(sql, "SET hnsw.max_scan_tuples = {t};");
            }
            _ => sql.push_str("RESET hnsw.max_scan_tuples;"),
        }
        match self.seqscan {
            Some(on) => {
                let _ = write!(
                    sql,
                    "SET enable_seqscan = {};",
                    if on { "on" } else { "off" }
                );
            }
            None => sql.push_str("RESET enable_seqscan;"),
        }
        sql
    }

    pub(super) fn to_json(&self) -> Value {
        json!({
            "ef_search": self.ef_search,
            "probes": self.probes,
            "iterative_scan": self.iterative_scan,
            "max_scan_tuples": self.max_scan_tuples,
            "rerank": self.rerank,
            "seqscan": self.seqscan,
        })
    }
}
