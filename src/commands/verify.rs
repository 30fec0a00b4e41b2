//! `ragdbeval verify RESULT.json`: does the result agree with its sidecar and its dataset?

use std::process::ExitCode;

use anyhow::{Context, anyhow, bail};

use crate::cli::VerifyArgs;
use crate::dataset::{self, LoadOptions};
use crate::results::{RunResult, RunState};
use crate::runner::verify::{truth_depth, verify};

pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let result = RunResult::load(&args.file)?;
    if result.dataset.lexical.is_some() {
        bail!(
            "{} is a sparse or hybrid run: verify recomputes dense runs from their per-query \
             sidecar, which these runs do not write; their answers are in the TREC run files of \
             `--trec-run`, which `ragdbeval eval` scores against the dataset's qrels.txt",
            args.file.display()
        );
    }
    let sidecar_name = result.sidecar.as_ref().ok_or_else(|| {
        anyhow!(
            "{} has no per-query sidecar (it was run with --no-sidecar): nothing to verify from",
            args.file.display()
        )
    })?;
    let sidecar = args
        .file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."))
        .join(sidecar_name);
    if !sidecar.exists() && result.status.state != RunState::Completed {
        bail!(
            "{}: its sidecar {} is not in place: the run is `{}` (stopped before it could \
             finish its files); `ragdbeval bench --resume {}` completes it",
            args.file.display(),
            sidecar.display(),
            serde_json::to_value(&result.status.state)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default(),
            args.file.display()
        );
    }
    let info = &result.dataset;
    let opts = LoadOptions {
        cache_dir: args
            .data_dir
            .clone()
            .unwrap_or_else(dataset::default_cache_dir),
        offline: args.offline,
        limit: info.limit,
        max_queries: Some(info.queries),
        gt_k: truth_depth(&result),
        distance: Some(info.distance.parse()?),
        compute_missing_gt: true,
        quiet: false,
        progress: crate::output::progress::terminal(false),
        spill_above: None,
        train_in_place: false,
    };
    let source = args.dataset.clone().unwrap_or_else(|| info.source.clone());
    let ds = dataset::load(&source, &opts).with_context(|| {
        format!("loading the result's dataset `{source}` (give --dataset if it moved)")
    })?;
    if ds.sha256 != info.sha256 || ds.train.len() != info.train || ds.test.len() != info.queries {
        bail!(
            "`{source}` is not the dataset of {} (SHA-256 {}, {} × {} queries; the result has {}, {} × {})",
            args.file.display(),
            &ds.sha256[..ds.sha256.len().min(12)],
            ds.train.len(),
            ds.test.len(),
            &info.sha256[..info.sha256.len().min(12)],
            info.train,
            info.queries
        );
    }
    let verification = verify(
        &result,
        &sidecar,
        &ds,
        &opts.cache_dir,
        &*crate::output::progress::terminal(false),
    )?;
    if verification.unreadable_lines > 0 {
        eprintln!(
            "warning: {}: {} unreadable line(s), left out (a step they belonged to lacks \
             queries below)",
            sidecar.display(),
            verification.unreadable_lines
        );
    }
    let checks = verification.steps;
    let mut bad = 0;
    for c in &checks {
        if c.mismatches.is_empty() {
            println!(
                "ok    configuration {} runbook step {} ({}): {} queries",
                c.config, c.runbook_step, c.search_params, c.queries
            );
        } else {
            bad += 1;
            println!(
                "DIFF  configuration {} runbook step {} ({}):",
                c.config, c.runbook_step, c.search_params
            );
            for (name, stored, again) in &c.mismatches {
                println!("        {name}: stored {stored}, recomputed {again}");
            }
        }
    }
    if bad > 0 {
        bail!(
            "{} does not agree with its sidecar and dataset: {bad} of {} search steps differ (listed above)",
            args.file.display(),
            checks.len()
        );
    }
    println!(
        "{}: all {} search steps agree with the sidecar and the dataset",
        args.file.display(),
        checks.len()
    );
    Ok(ExitCode::SUCCESS)
}
