//! `results.csv` of `report --out DIR`: one row per (run, step, setting), for notebooks.
//!
//! The first columns are the ones ann-benchmarks' `data_export.py` writes, in its order and
//! units, so notebooks written for it read this file: `dataset`, `mode` (`non-batch` or
//! `batch`), `algorithm`, `parameters`, `count` (k), `k-nn` (ann-benchmarks' recall: within
//! the K-th true distance + 1e-3, = our `recall_distance`), `epsilon`, `largeepsilon`, `rel`
//! (= our `recall_epsilon`, `recall_large_epsilon`, `relative_distance_error`; `inf` as
//! ann-benchmarks writes it), `qps`, `p50`, `p95`, `p99`, `p999` (milliseconds), `distcomps`,
//! `build` (seconds), `candidates`, `indexsize` (kB: the total footprint, which like
//! ann-benchmarks' figure includes the vectors), `queriessize`. Figures ragdbeval does
//! not measure (`distcomps`, `candidates`, `queriessize`, and the three above in files
//! written before they existed) are empty.
//! Then `run` (the result file's stem), `state`, ragdbeval's identity columns and every
//! registry metric under its key, then `filter` and the size columns of
//! [`crate::export::sizes`], as in `report --format csv`. Columns are only ever added at the end.

use std::path::Path;

use super::{ExportError, IDENTITY_HEADERS, identity_columns};
use crate::export::registry::{METRICS, Row, find, rows};
use crate::params::ParamMapExt;
use crate::results::RunResult;

/// ann-benchmarks' columns, in `data_export.py`'s order.
pub const ANN_BENCHMARKS_COLUMNS: &[&str] = &[
    "dataset",
    "mode",
    "algorithm",
    "parameters",
    "count",
    "k-nn",
    "epsilon",
    "largeepsilon",
    "rel",
    "qps",
    "p50",
    "p95",
    "p99",
    "p999",
    "distcomps",
    "build",
    "candidates",
    "indexsize",
    "queriessize",
];

fn value(key: &str, row: &Row<'_>) -> Option<f64> {
    find(key).and_then(|m| (m.value)(row))
}

fn cell(v: Option<f64>) -> String {
    match v {
        Some(x) if x.is_finite() => x.to_string(),
        _ => String::new(),
    }
}

/// The ann-benchmarks part of a row.
fn ann_benchmarks_cells(run: &RunResult, row: &Row<'_>) -> Vec<String> {
    let s = row.search;
    let parameters = format!(
        "{} {}",
        row.config.build_params.label(),
        s.search_params.label()
    );
    vec![
        run.dataset.name.clone(),
        if s.mode == "batch" {
            "batch"
        } else {
            "non-batch"
        }
        .to_string(),
        run.engine.name.clone(),
        parameters,
        s.quality.k.to_string(),
        cell(Some(s.quality.recall_distance)),
        cell(s.quality.recall_epsilon),
        cell(s.quality.recall_large_epsilon),
        match s.quality.relative_distance_error {
            Some(x) if x == f64::INFINITY => "inf".to_string(),
            other => cell(other),
        },
        cell(Some(s.qps)),
        cell(Some(s.latency.p50_ms)),
        cell(Some(s.latency.p95_ms)),
        cell(Some(s.latency.p99_ms)),
        cell(Some(s.latency.p999_ms)),
        String::new(),
        cell(value("build_s", row)),
        String::new(),
        // ann-benchmarks measures the memory an index adds to the process, vectors included:
        // the total footprint is that figure here, whatever the engine's index holds.
        cell(value("total_mb", row).map(|mb| mb * 1024.0)),
        String::new(),
    ]
}

/// Renders the runs (each with the path it was read from).
pub fn render(runs: &[(&Path, &RunResult)]) -> Result<String, ExportError> {
    let err = |e: &dyn std::fmt::Display| ExportError {
        format: "results.csv",
        message: e.to_string(),
    };
    let mut w = csv::Writer::from_writer(Vec::new());
    let header: Vec<&str> = ANN_BENCHMARKS_COLUMNS
        .iter()
        .copied()
        .chain(["run", "state"])
        .chain(IDENTITY_HEADERS.iter().copied())
        .chain(METRICS.iter().map(|m| m.key))
        .chain(["filter"])
        .chain(super::sizes::HEADERS.iter().copied())
        .collect();
    w.write_record(&header).map_err(|e| err(&e))?;
    for (path, run) in runs {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let state = format!("{:?}", run.status.state).to_lowercase();
        for row in rows(&run.configs) {
            let mut record = ann_benchmarks_cells(run, &row);
            record.push(stem.clone());
            record.push(state.clone());
            record.extend(identity_columns(run, &row));
            record.extend(METRICS.iter().map(|m| cell((m.value)(&row))));
            record.push(super::filter_name(&row));
            record.extend(super::sizes::columns(run, &row));
            w.write_record(&record).map_err(|e| err(&e))?;
        }
    }
    let bytes = w.into_inner().map_err(|e| err(&e))?;
    String::from_utf8(bytes).map_err(|e| err(&e))
}

#[cfg(test)]
mod tests {
    use crate::export::registry::METRICS;

    /// docs/reports.md documents every column: a metric added to the registry without a
    /// line there fails here.
    #[test]
    fn the_docs_document_every_column() {
        let docs = include_str!("../../docs/reports.md");
        let section = docs
            .split("## `results.csv` columns")
            .nth(1)
            .expect("the results.csv section of docs/reports.md");
        for m in METRICS {
            assert!(
                section.contains(&format!("| `{}` |", m.key)),
                "docs/reports.md: no line for `{}`",
                m.key
            );
        }
        for column in super::ANN_BENCHMARKS_COLUMNS {
            assert!(
                section.contains(&format!("`{column}`")),
                "docs/reports.md: `{column}`"
            );
        }
    }
}
