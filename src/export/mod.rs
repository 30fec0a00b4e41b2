//! Output formats: one file per format behind one small trait (the hyperfine pattern).
//! Every tabular format takes its columns from the metric registry.

pub mod compare;
pub mod csv;
pub mod eval;
pub mod eval_compare;
pub mod eval_pairwise;
pub mod gate;
pub mod html;
pub mod json;
pub mod lines;
pub mod markdown;
pub mod ranking;
pub mod registry;
pub mod report;
pub mod results_csv;
pub mod sizes;
pub mod streams_csv;
pub mod trec;

use crate::params::ParamMapExt;
use crate::results::RunResult;

/// Failure to render a report.
#[derive(Debug, thiserror::Error)]
#[error("cannot render {format}: {message}")]
pub struct ExportError {
    pub format: &'static str,
    pub message: String,
}

/// Renders one or more run results in one format.
pub trait Exporter {
    /// Format name as given to `--format`.
    fn name(&self) -> &'static str;
    /// File extension, without the dot.
    fn extension(&self) -> &'static str;
    fn render(&self, runs: &[RunResult]) -> Result<String, ExportError>;
}

/// All formats, by name.
pub fn exporters() -> Vec<Box<dyn Exporter>> {
    vec![
        Box::new(json::JsonExporter),
        Box::new(csv::CsvExporter),
        Box::new(markdown::MarkdownExporter),
        Box::new(ranking::RankingExporter),
    ]
}

/// Looks a format up by name (`json`, `csv`, `markdown`/`md`).
pub fn find(name: &str) -> Option<Box<dyn Exporter>> {
    let name = if name == "md" { "markdown" } else { name };
    exporters().into_iter().find(|e| e.name() == name)
}

/// The identifying columns every tabular format starts with.
/// A CSV text of `header` and `records`; `file` names it in an error.
pub(crate) fn csv_text(
    file: &'static str,
    header: &[&str],
    records: impl IntoIterator<Item = Vec<String>>,
) -> Result<String, ExportError> {
    let err = |e: &dyn std::fmt::Display| ExportError {
        format: file,
        message: e.to_string(),
    };
    let mut w = ::csv::Writer::from_writer(Vec::new());
    w.write_record(header).map_err(|e| err(&e))?;
    for record in records {
        w.write_record(&record).map_err(|e| err(&e))?;
    }
    let bytes = w.into_inner().map_err(|e| err(&e))?;
    String::from_utf8(bytes).map_err(|e| err(&e))
}

pub(crate) fn identity_columns(
    run: &RunResult,
    row: &crate::export::registry::Row<'_>,
) -> Vec<String> {
    vec![
        run.engine.name.clone(),
        run.engine.version.clone(),
        run.dataset.name.clone(),
        row.search.runbook_step.to_string(),
        row.search.after.clone(),
        row.search.live_points.to_string(),
        row.config.build_params.label(),
        row.search.search_params.label(),
        row.search.quality.k.to_string(),
        row.search.quality.queries.to_string(),
        row.search.mode.clone(),
    ]
}

/// The filter level of a row (`label 1%`), empty for an unfiltered search: the last column
/// of both CSV exports (columns are only ever appended).
pub(crate) fn filter_name(row: &crate::export::registry::Row<'_>) -> String {
    row.search
        .filter
        .as_ref()
        .map_or(String::new(), |f| f.name.clone())
}

pub(crate) const IDENTITY_HEADERS: &[&str] = &[
    "engine",
    "engine_version",
    "dataset",
    "runbook_step",
    "after",
    "live_points",
    "build_params",
    "search_params",
    "k",
    "queries",
    "mode",
];
