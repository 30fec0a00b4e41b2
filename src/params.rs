//! Engine parameters: typed maps, named parameter sets and sweeps.
//!
//! Every engine folder carries a `config.toml` in the spirit of ann-benchmarks' `config.yml`:
//! named sets, each with `build` and `search` tables. A value that is a list is a sweep axis;
//! the cartesian product of all axes gives the points of a recall/QPS curve.
//!
//! ```toml
//! [sets.default]
//! build = { m = 16, ef_construct = 128 }
//! search = { hnsw_ef = 128 }
//!
//! [sets.ef-sweep]
//! build = { m = 16, ef_construct = 128 }
//! search = { hnsw_ef = [16, 32, 64, 128, 256, 512] }
//! ```

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// One parameter value. Kept small on purpose: engines take numbers, flags and names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Bool(b) => write!(f, "{b}"),
            ParamValue::Int(i) => write!(f, "{i}"),
            ParamValue::Float(x) => write!(f, "{x}"),
            ParamValue::Str(s) => write!(f, "{s}"),
        }
    }
}

impl ParamValue {
    /// Parses a command-line value: `true`/`false`, an integer, a float, else a string.
    pub fn parse(text: &str) -> ParamValue {
        let t = text.trim();
        if t.eq_ignore_ascii_case("true") {
            ParamValue::Bool(true)
        } else if t.eq_ignore_ascii_case("false") {
            ParamValue::Bool(false)
        } else if let Ok(i) = t.parse::<i64>() {
            ParamValue::Int(i)
        } else if let Ok(x) = t.parse::<f64>() {
            ParamValue::Float(x)
        } else {
            ParamValue::Str(t.to_string())
        }
    }
}

/// A resolved set of parameters for one build or one search configuration.
pub type ParamMap = BTreeMap<String, ParamValue>;

/// Error for a parameter of the wrong type or an unknown name.
#[derive(Debug, thiserror::Error)]
pub enum ParamError {
    #[error("parameter `{name}` must be {expected}, got `{got}`")]
    WrongType {
        name: String,
        expected: &'static str,
        got: String,
    },
    #[error("parameter `{name}` must be within {min}..={max}, got `{got}`")]
    OutOfRange {
        name: String,
        got: u64,
        min: u64,
        max: u64,
    },
    #[error("unknown parameter `{name}`; this engine knows: {known}")]
    Unknown { name: String, known: String },
    #[error("bad parameter override `{0}`: expected NAME=VALUE or NAME=V1,V2,...")]
    BadOverride(String),
    #[error("engine config: {0}")]
    Config(String),
}

/// Typed reads from a [`ParamMap`] with clear errors.
pub trait ParamMapExt {
    fn get_u64(&self, name: &str) -> Result<Option<u64>, ParamError>;
    /// A count that cannot be 0 (`ef`, `threads`, `rerank`).
    fn get_count(&self, name: &str) -> Result<Option<u64>, ParamError>;
    /// A whole number within `range`, the engine's own limits.
    fn get_within(
        &self,
        name: &str,
        range: std::ops::RangeInclusive<u64>,
    ) -> Result<Option<u64>, ParamError>;
    fn get_f64(&self, name: &str) -> Result<Option<f64>, ParamError>;
    fn get_bool(&self, name: &str) -> Result<Option<bool>, ParamError>;
    fn get_str(&self, name: &str) -> Result<Option<&str>, ParamError>;
    /// Fails on any key not in `known`, so that a typo is never silently ignored.
    fn reject_unknown(&self, known: &[&str]) -> Result<(), ParamError>;
    /// `name=value` pairs joined by spaces, for labels and tables.
    fn label(&self) -> String;
}

impl ParamMapExt for ParamMap {
    fn get_u64(&self, name: &str) -> Result<Option<u64>, ParamError> {
        match self.get(name) {
            None => Ok(None),
            Some(ParamValue::Int(i)) if *i >= 0 => Ok(Some(*i as u64)),
            Some(v) => Err(ParamError::WrongType {
                name: name.to_string(),
                expected: "a non-negative integer",
                got: v.to_string(),
            }),
        }
    }

    fn get_count(&self, name: &str) -> Result<Option<u64>, ParamError> {
        match self.get_u64(name)? {
            Some(0) => Err(ParamError::WrongType {
                name: name.to_string(),
                expected: "a whole number of at least 1",
                got: "0".into(),
            }),
            n => Ok(n),
        }
    }

    fn get_within(
        &self,
        name: &str,
        range: std::ops::RangeInclusive<u64>,
    ) -> Result<Option<u64>, ParamError> {
        match self.get_u64(name)? {
            Some(got) if !range.contains(&got) => Err(ParamError::OutOfRange {
                name: name.to_string(),
                got,
                min: *range.start(),
                max: *range.end(),
            }),
            v => Ok(v),
        }
    }

    fn get_f64(&self, name: &str) -> Result<Option<f64>, ParamError> {
        match self.get(name) {
            None => Ok(None),
            Some(ParamValue::Int(i)) => Ok(Some(*i as f64)),
            Some(ParamValue::Float(x)) => Ok(Some(*x)),
            Some(v) => Err(ParamError::WrongType {
                name: name.to_string(),
                expected: "a number",
                got: v.to_string(),
            }),
        }
    }

    fn get_bool(&self, name: &str) -> Result<Option<bool>, ParamError> {
        match self.get(name) {
            None => Ok(None),
            Some(ParamValue::Bool(b)) => Ok(Some(*b)),
            Some(v) => Err(ParamError::WrongType {
                name: name.to_string(),
                expected: "true or false",
                got: v.to_string(),
            }),
        }
    }

    fn get_str(&self, name: &str) -> Result<Option<&str>, ParamError> {
        match self.get(name) {
            None => Ok(None),
            Some(ParamValue::Str(s)) => Ok(Some(s)),
            Some(v) => Err(ParamError::WrongType {
                name: name.to_string(),
                expected: "a string",
                got: v.to_string(),
            }),
        }
    }

    fn reject_unknown(&self, known: &[&str]) -> Result<(), ParamError> {
        for key in self.keys() {
            if !known.contains(&key.as_str()) {
                return Err(ParamError::Unknown {
                    name: key.clone(),
                    known: known.join(", "),
                });
            }
        }
        Ok(())
    }

    fn label(&self) -> String {
        if self.is_empty() {
            return "-".to_string();
        }
        self.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A parameter table where each value is one value or a list of values (a sweep axis).
pub type SweepTable = BTreeMap<String, SweepValue>;

/// One value, or the list of values of a sweep axis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SweepValue {
    One(ParamValue),
    Many(Vec<ParamValue>),
}

/// A named parameter set of an engine config.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamSet {
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub build: SweepTable,
    #[serde(default)]
    pub search: SweepTable,
}

/// An engine's `config.toml`: its named parameter sets. Its `[engine]` table, the engine's
/// declaration, is read by `build.rs` (`build/engines.rs`) and skipped here.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EngineConfig {
    #[serde(default)]
    pub sets: BTreeMap<String, ParamSet>,
    #[serde(default, rename = "engine", skip_serializing)]
    _engine: Option<serde::de::IgnoredAny>,
}

impl EngineConfig {
    pub fn parse(text: &str) -> Result<EngineConfig, ParamError> {
        toml::from_str(text).map_err(|e| ParamError::Config(e.to_string()))
    }

    /// The named set, or an error listing the sets that exist.
    pub fn set(&self, name: &str) -> Result<&ParamSet, ParamError> {
        self.sets.get(name).ok_or_else(|| {
            ParamError::Config(format!(
                "no parameter set `{name}`; available: {}",
                self.sets.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        })
    }
}

/// Parses a command-line override `name=value` or `name=v1,v2,v3` (a sweep axis).
pub fn parse_override(text: &str) -> Result<(String, SweepValue), ParamError> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| ParamError::BadOverride(text.to_string()))?;
    let name = name.trim();
    if name.is_empty() || value.trim().is_empty() {
        return Err(ParamError::BadOverride(text.to_string()));
    }
    let values: Vec<ParamValue> = value.split(',').map(ParamValue::parse).collect();
    let sweep = if values.len() == 1 {
        SweepValue::One(values.into_iter().next().unwrap_or(ParamValue::Bool(false)))
    } else {
        SweepValue::Many(values)
    };
    Ok((name.to_string(), sweep))
}

/// Expands a sweep table into the cartesian product of its axes, in a stable order
/// (keys sorted, values in the order given). An empty table yields one empty map.
pub fn expand(table: &SweepTable) -> Vec<ParamMap> {
    let mut out = vec![ParamMap::new()];
    for (key, value) in table {
        let values: Vec<&ParamValue> = match value {
            SweepValue::One(v) => vec![v],
            SweepValue::Many(vs) => vs.iter().collect(),
        };
        let mut next = Vec::with_capacity(out.len() * values.len().max(1));
        for partial in &out {
            for v in &values {
                let mut m = partial.clone();
                m.insert(key.clone(), (*v).clone());
                next.push(m);
            }
        }
        out = next;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_of_zero_is_refused_by_name() {
        let mut m = ParamMap::new();
        m.insert("ef".into(), ParamValue::Int(0));
        m.insert("m".into(), ParamValue::Int(16));
        let e = m.get_count("ef").unwrap_err().to_string();
        assert!(e.contains("`ef`") && e.contains("at least 1"), "{e}");
        assert_eq!(m.get_count("m").unwrap(), Some(16));
        assert_eq!(m.get_count("absent").unwrap(), None);
    }

    #[test]
    fn expand_is_cartesian_and_ordered() {
        let mut t = SweepTable::new();
        t.insert(
            "ef".into(),
            SweepValue::Many(vec![ParamValue::Int(16), ParamValue::Int(32)]),
        );
        t.insert("exact".into(), SweepValue::One(ParamValue::Bool(false)));
        t.insert(
            "a".into(),
            SweepValue::Many(vec![ParamValue::Int(1), ParamValue::Int(2)]),
        );
        let maps = expand(&t);
        assert_eq!(maps.len(), 4);
        assert_eq!(maps[0].label(), "a=1 ef=16 exact=false");
        assert_eq!(maps[1].label(), "a=1 ef=32 exact=false");
        assert_eq!(maps[3].label(), "a=2 ef=32 exact=false");
        assert_eq!(expand(&SweepTable::new()), vec![ParamMap::new()]);
    }

    #[test]
    fn overrides_parse_scalars_and_lists() {
        let (k, v) = parse_override("hnsw_ef=16,32").unwrap();
        assert_eq!(k, "hnsw_ef");
        assert_eq!(
            v,
            SweepValue::Many(vec![ParamValue::Int(16), ParamValue::Int(32)])
        );
        let (_, v) = parse_override("on_disk=true").unwrap();
        assert_eq!(v, SweepValue::One(ParamValue::Bool(true)));
        let (_, v) = parse_override("quantization=int8").unwrap();
        assert_eq!(v, SweepValue::One(ParamValue::Str("int8".into())));
        assert!(parse_override("nonsense").is_err());
        assert!(parse_override("=3").is_err());
    }

    #[test]
    fn typed_reads_and_unknown_keys() {
        let mut m = ParamMap::new();
        m.insert("m".into(), ParamValue::Int(16));
        m.insert("exact".into(), ParamValue::Bool(true));
        assert_eq!(m.get_u64("m").unwrap(), Some(16));
        assert_eq!(m.get_bool("exact").unwrap(), Some(true));
        assert!(m.get_bool("m").is_err());
        assert!(m.reject_unknown(&["m", "exact"]).is_ok());
        let err = m.reject_unknown(&["m"]).unwrap_err().to_string();
        assert!(err.contains("exact"), "{err}");
    }

    #[test]
    fn config_parses_sets() {
        let cfg = EngineConfig::parse(
            r#"
            [sets.default]
            build = { m = 16 }
            search = { hnsw_ef = [16, 64] }
            "#,
        )
        .unwrap();
        let set = cfg.set("default").unwrap();
        assert_eq!(expand(&set.search).len(), 2);
        assert!(cfg.set("missing").is_err());
    }
}
