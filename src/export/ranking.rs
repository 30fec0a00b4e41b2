//! `report --format ranking`: every dataset's ranking as Markdown on the terminal (or a
//! file), the same tables the report's `report.md` holds.

use std::path::PathBuf;

use super::report::{groups, ranking};
use super::{ExportError, Exporter};
use crate::results::RunResult;

pub struct RankingExporter;

impl Exporter for RankingExporter {
    fn name(&self) -> &'static str {
        "ranking"
    }

    fn extension(&self) -> &'static str {
        "md"
    }

    fn render(&self, runs: &[RunResult]) -> Result<String, ExportError> {
        // The ranking reads no sidecar, so the runs need no path.
        let runs: Vec<(PathBuf, RunResult)> =
            runs.iter().map(|r| (PathBuf::new(), r.clone())).collect();
        Ok(groups(&runs)
            .iter()
            .map(|g| format!("## {}\n\n{}", g.dataset, ranking::markdown(g)))
            .collect::<Vec<_>>()
            .join("\n"))
    }
}
