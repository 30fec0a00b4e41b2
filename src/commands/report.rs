//! `ragdbeval report`: re-render saved result files.

use std::process::ExitCode;

use anyhow::{Context, bail};

use crate::export;
use crate::output::table;
use crate::results::RunResult;

pub fn run(args: crate::cli::ReportArgs) -> anyhow::Result<ExitCode> {
    let runs = args
        .files
        .iter()
        .map(|p| RunResult::load(p))
        .collect::<Result<Vec<_>, _>>()?;
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
                "unknown format `{}`: use table, json, csv or markdown",
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
