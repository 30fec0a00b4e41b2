//! JSON: the result documents themselves (an array when several are combined).

use super::{ExportError, Exporter};
use crate::results::RunResult;

pub struct JsonExporter;

impl Exporter for JsonExporter {
    fn name(&self) -> &'static str {
        "json"
    }
    fn extension(&self) -> &'static str {
        "json"
    }
    fn render(&self, runs: &[RunResult]) -> Result<String, ExportError> {
        let out = match runs {
            [one] => serde_json::to_string_pretty(one),
            many => serde_json::to_string_pretty(many),
        };
        out.map_err(|e| ExportError {
            format: "json",
            message: e.to_string(),
        })
    }
}
