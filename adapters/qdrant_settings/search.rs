//! Search settings: `hnsw_ef`, `exact` and the quantization rescoring knobs.

use super::*;

/// Validated search parameters. `None` fields leave the engine's default.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SearchSettings {
    pub hnsw_ef: Option<usize>,
    pub exact: Option<bool>,
    pub rescore: Option<bool>,
    pub oversampling: Option<f64>,
    pub indexed_only: Option<bool>,
}

impl SearchSettings {
    /// Parses search parameters. `quantized` is whether the collection was built with
    /// quantization, or `None` before it exists; `rescore` and `oversampling` on a collection
    /// without quantization would have no effect and are refused.
    pub fn parse(
        params: &ParamMap,
        quantized: Option<bool>,
    ) -> Result<SearchSettings, SettingsError> {
        params.reject_unknown(SEARCH_PARAMS)?;
        let hnsw_ef = match params.get_count("hnsw_ef")? {
            None => None,
            Some(ef) => {
                Some(usize::try_from(ef).map_err(|_| SettingsError::new("hnsw_ef", "too large"))?)
            }
        };
        let oversampling = params.get_f64("oversampling")?;
        if let Some(x) = oversampling
            && !(x.is_finite() && x >= 1.0)
        {
            return Err(SettingsError::new(
                "oversampling",
                format!("must be a number >= 1.0, got {x}"),
            ));
        }
        let settings = SearchSettings {
            hnsw_ef,
            exact: params.get_bool("exact")?,
            rescore: params.get_bool("rescore")?,
            oversampling,
            indexed_only: params.get_bool("indexed_only")?,
        };
        if quantized == Some(false) && settings.has_quantization_params() {
            let name = if settings.rescore.is_some() {
                "rescore"
            } else {
                "oversampling"
            };
            return Err(SettingsError::new(
                name,
                "has no effect: the collection was built without quantization",
            ));
        }
        Ok(settings)
    }

    /// True when nothing is set: the adapter sends no search parameters at all.
    pub fn is_default(&self) -> bool {
        *self == SearchSettings::default()
    }

    /// True when `rescore` or `oversampling` is set (sent as quantization search params).
    pub fn has_quantization_params(&self) -> bool {
        self.rescore.is_some() || self.oversampling.is_some()
    }

    /// The settings as recorded in results (`search_params` of the engine details).
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        out.insert("hnsw_ef".into(), json!(self.hnsw_ef));
        out.insert("exact".into(), json!(self.exact));
        out.insert("rescore".into(), json!(self.rescore));
        out.insert("oversampling".into(), json!(self.oversampling));
        out.insert("indexed_only".into(), json!(self.indexed_only));
        Value::Object(out)
    }
}
