//! `dataset qrels`: a dataset's exact ground truth, or each search step's of a runbook, as
//! TREC qrels files.

use std::process::ExitCode;

use anyhow::{Context, bail};

use crate::cli::QrelsArgs;
use crate::commands::bench::{load_options, resolve_runbook};
use crate::dataset::{self, Dataset, LoadOptions};
use crate::output::progress;
use crate::runner::ground_truth;

/// The deepest ground truth ragdbeval computes (as `bench` and `dataset gt`).
const MAX_QRELS_K: usize = 1000;

/// `dataset qrels`: the dataset's exact ground truth (loaded or computed as `bench` does,
/// so the truth a `--runbook build-search` run is scored against) as TREC qrels.
pub(super) fn qrels(args: QrelsArgs) -> anyhow::Result<ExitCode> {
    if args.k > MAX_QRELS_K {
        bail!(
            "-k {} is above {MAX_QRELS_K}, the deepest ground truth ragdbeval computes",
            args.k
        );
    }
    // Before the ground truth is computed, not after.
    crate::export::trec::check_writable(&args.out)?;
    // The depth `bench` loads and caches truths at by default (--gt-k 100), so that both
    // share the dataset's computed truth and the runbook's cached step truths.
    let depth = args.k.clamp(100, MAX_QRELS_K);
    let opts = load_options(&args.source, depth, args.quiet)?;
    let ds = dataset::load(&args.source.dataset, &opts)
        .with_context(|| format!("loading dataset `{}`", args.source.dataset))?;
    if let Some(name) = &args.runbook {
        return runbook_qrels(&args, name, &ds, &opts, depth);
    }
    if ds.ground_truth.k < args.k {
        bail!(
            "the dataset's ground truth has depth {} but -k asks for {}; recompute it with \
             `ragdbeval dataset gt --dataset {} -k {} --out FILE`",
            ds.ground_truth.k,
            args.k,
            args.source.dataset,
            args.k
        );
    }
    let lines = crate::export::trec::write_qrels_file(&args.out, &ds.ground_truth, args.k)?;
    println!(
        "qrels: the {} nearest neighbours of {} queries of {} ({lines} judgments), wrote {}",
        args.k,
        ds.test.len(),
        ds.name,
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `dataset qrels --runbook`: the truth of each search step of the runbook (the live points
/// at that step), one qrels file each.
fn runbook_qrels(
    args: &QrelsArgs,
    name: &str,
    ds: &Dataset,
    opts: &LoadOptions,
    depth: usize,
) -> anyhow::Result<ExitCode> {
    let runbook = resolve_runbook(name)?;
    let steps = runbook
        .resolve_on(&ds.train)
        .with_context(|| format!("runbook `{name}`"))?;
    let cache = ground_truth::cache_path(&opts.cache_dir, ds, &steps, depth);
    let truths = ground_truth::step_truths(
        ds,
        &steps,
        depth,
        Some(&cache),
        &*progress::terminal(args.quiet),
    )
    .context("computing the ground truth of the runbook's search steps")?;
    let searched: Vec<(usize, &crate::groundtruth::GroundTruth)> = steps
        .iter()
        .zip(&truths)
        .enumerate()
        .filter(|(_, (step, _))| matches!(step, crate::runbook::Resolved::Search { .. }))
        .filter_map(|(i, (_, truth))| truth.as_deref().map(|t| (i + 1, t)))
        .collect();
    if searched.is_empty() {
        bail!("runbook `{name}` has no search step");
    }
    for (n, (runbook_step, truth)) in searched.iter().enumerate() {
        let path = crate::export::trec::run_path(&args.out, n + 1, searched.len() > 1);
        let lines = crate::export::trec::write_qrels_file(&path, truth, args.k)?;
        println!(
            "qrels of runbook step {runbook_step} (search {} of {}): {lines} judgments, wrote {}",
            n + 1,
            searched.len(),
            path.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
