//! `ragdbeval report`: re-render saved result files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};

use crate::export;
use crate::output::table;
use crate::results::RunResult;

/// `--out` names a directory: it ends with a separator, exists as one, or has no extension.
fn is_directory(path: &Path) -> bool {
    path.as_os_str().to_string_lossy().ends_with('/') || path.is_dir() || path.extension().is_none()
}

pub fn run(args: crate::cli::ReportArgs) -> anyhow::Result<ExitCode> {
    let runs = args
        .files
        .iter()
        .map(|p| RunResult::load(p))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(dir) = args.out.as_deref().filter(|p| is_directory(p)) {
        if args.format != "table" {
            bail!(
                "--format {} writes one file: give --out a file name with an extension, or drop --format to write the whole report into {}",
                args.format,
                dir.display()
            );
        }
        let runs: Vec<(PathBuf, RunResult)> = args.files.iter().cloned().zip(runs).collect();
        let written = crate::export::report::write_dir(&runs, dir)?;
        for w in &written.warnings {
            eprintln!("warning: {w}");
        }
        println!(
            "report: {} ({} runs, {} plots, {} files)",
            dir.join("index.html").display(),
            runs.len(),
            written.plots,
            written.files.len()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let text = if args.format == "table" {
        runs.iter()
            .map(|r| {
                format!(
                    "{} {} on {} ({:?})\n{}",
                    r.engine.name,
                    r.engine.version,
                    r.dataset.name,
                    r.status.state,
                    table::render(r)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    } else {
        let Some(exporter) = export::find(&args.format) else {
            bail!(
                "unknown format `{}`: use table, json, csv, markdown or ranking",
                args.format
            );
        };
        exporter.render(&runs)?
    };
    match &args.out {
        Some(path) => crate::atomic::write_atomic(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?,
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}
