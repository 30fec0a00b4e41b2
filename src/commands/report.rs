//! `ragdbeval report`: re-render saved result files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, bail};

use crate::export;
use crate::export::report::Options;
use crate::export::report::cost::{Price, Prices};
use crate::output::table;
use crate::results::RunResult;

/// `--out` names a directory: it ends with a separator, exists as one, or has no extension.
fn is_directory(path: &Path) -> bool {
    path.as_os_str().to_string_lossy().ends_with('/') || path.is_dir() || path.extension().is_none()
}

/// The result files named, a directory standing for every `*.json` result directly inside
/// it (a JSON file there that is not a result is passed over with a warning).
fn load_runs(paths: &[PathBuf]) -> anyhow::Result<(Vec<PathBuf>, Vec<RunResult>)> {
    let (mut files, mut runs) = (Vec::new(), Vec::new());
    for path in paths {
        if !path.is_dir() {
            runs.push(RunResult::load(path)?);
            files.push(path.clone());
            continue;
        }
        let mut inside: Vec<PathBuf> = std::fs::read_dir(path)
            .with_context(|| format!("reading the directory {}", path.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
            .collect();
        inside.sort();
        let before = runs.len();
        for file in inside {
            match RunResult::load(&file) {
                Ok(run) => {
                    runs.push(run);
                    files.push(file);
                }
                Err(e) => eprintln!("warning: passed over {}: {e}", file.display()),
            }
        }
        if runs.len() == before {
            bail!(
                "{}: the directory holds no result file (*.json)",
                path.display()
            );
        }
    }
    Ok((files, runs))
}

/// The report's options: `--history` and the prices, which only a report directory has.
fn options(args: &crate::cli::ReportArgs, to_dir: bool) -> anyhow::Result<Options> {
    let given = Price {
        per_hour: args.price_per_hour,
        ram_gib_month: args.ram_price,
        storage_gib_month: args.storage_price,
    };
    let prices = match &args.prices {
        Some(path) => Some(Prices::load(path)?.with_defaults(given)?),
        None => Some(Prices::default().with_defaults(given)?),
    }
    .filter(|p| !p.is_empty());
    if !to_dir && (args.history || prices.is_some()) {
        bail!(
            "--history and the prices add plots and tables to a report directory: give --out DIR/"
        );
    }
    Ok(Options {
        history: args.history,
        prices,
    })
}

pub fn run(args: crate::cli::ReportArgs) -> anyhow::Result<ExitCode> {
    let (files, runs) = load_runs(&args.files)?;
    let to_dir = args.out.as_deref().is_some_and(is_directory);
    let options = options(&args, to_dir)?;
    if let Some(dir) = args.out.as_deref().filter(|p| is_directory(p)) {
        if args.format != "table" {
            bail!(
                "--format {} writes one file: give --out a file name with an extension, or drop --format to write the whole report into {}",
                args.format,
                dir.display()
            );
        }
        let runs: Vec<(PathBuf, RunResult)> = files.into_iter().zip(runs).collect();
        let written = crate::export::report::write_dir(&runs, dir, &options)?;
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
