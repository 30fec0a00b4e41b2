//! CSV: one row per search step, identity columns, every registry metric, the filter, then
//! the size columns of [`crate::export::sizes`].

use super::{ExportError, Exporter, IDENTITY_HEADERS, filter_name, identity_columns};
use crate::export::registry::{METRICS, format_value, rows};
use crate::results::RunResult;

pub struct CsvExporter;

impl Exporter for CsvExporter {
    fn name(&self) -> &'static str {
        "csv"
    }
    fn extension(&self) -> &'static str {
        "csv"
    }
    fn render(&self, runs: &[RunResult]) -> Result<String, ExportError> {
        let err = |e: &dyn std::fmt::Display| ExportError {
            format: "csv",
            message: e.to_string(),
        };
        let mut w = csv::Writer::from_writer(Vec::new());
        let header: Vec<&str> = IDENTITY_HEADERS
            .iter()
            .copied()
            .chain(METRICS.iter().map(|m| m.key))
            .chain(["filter"])
            .chain(super::sizes::HEADERS.iter().copied())
            .collect();
        w.write_record(&header).map_err(|e| err(&e))?;
        for run in runs {
            for row in rows(&run.configs) {
                let mut record = identity_columns(run, &row);
                record.extend(METRICS.iter().map(|m| match (m.value)(&row) {
                    // Full precision in CSV: it is for machines.
                    Some(v) if v.is_finite() => v.to_string(),
                    v => format_value(m, v),
                }));
                record.push(filter_name(&row));
                // Absent figures are `-` here, as the registry's columns write them.
                record.extend(
                    super::sizes::columns(run, &row)
                        .into_iter()
                        .map(|c| if c.is_empty() { "-".to_string() } else { c }),
                );
                w.write_record(&record).map_err(|e| err(&e))?;
            }
        }
        let bytes = w.into_inner().map_err(|e| err(&e))?;
        String::from_utf8(bytes).map_err(|e| err(&e))
    }
}
