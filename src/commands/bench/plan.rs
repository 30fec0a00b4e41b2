//! The plan builders of `bench`, one per concern: the engine and its parameters, the depths
//! asked for, the dataset and the truths of the runbook, how to connect, and the plan the
//! runner carries out.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};

use crate::adapters;
use crate::cli::{BenchArgs, QueryMode};
use crate::dataset::{self, Dataset};
use crate::engine::{ConnectOptions, EngineEntry};
use crate::filter::FilterSpec;
use crate::groundtruth::difficulty::Difficulty;
use crate::params::{EngineConfig, ParamMap, SweepTable, expand, parse_override};
use crate::results::warnings::Warning;
use crate::runbook::{Resolved, Runbook};
use crate::runner::{BenchPlan, FilterPlan, LoadPlan, ground_truth};

use super::{load_options, resolve_runbook};

/// The engine named by `--engine`.
pub(super) fn find_engine(args: &BenchArgs) -> anyhow::Result<&'static EngineEntry> {
    let entry = adapters::find(&args.engine).ok_or_else(|| {
        anyhow!(
            "unknown engine `{}`; available: {}",
            args.engine,
            adapters::names()
        )
    })?;
    adapters::check_built(entry)?;
    Ok(entry)
}

/// Checks `-k`, `--relevant` and `--repeat-build` before anything is loaded; returns the
/// number of true neighbours regarded as relevant.
pub(super) fn check_depths(args: &BenchArgs) -> anyhow::Result<usize> {
    if args.k == 0 {
        bail!("-k must be at least 1");
    }
    // The deepest ground truth ragdbeval computes (see groundtruth): deeper is refused here,
    // before a dataset is loaded, rather than after with a remedy that cannot work.
    if args.k > MAX_K {
        bail!(
            "-k {} is above {MAX_K}, the deepest ground truth ragdbeval computes",
            args.k
        );
    }
    if args.repeat_build && args.repeat < 2 {
        bail!("--repeat-build rebuilds the index for each trial: give --repeat N with N ≥ 2");
    }
    let relevant = args.relevant.unwrap_or(args.k);
    if relevant == 0 {
        bail!("--relevant must be at least 1");
    }
    if relevant > MAX_K {
        bail!(
            "--relevant {relevant} is above {MAX_K}, the deepest ground truth ragdbeval computes"
        );
    }
    Ok(relevant)
}

/// Build and search parameter sets: the named set, then command-line overrides, then the
/// sweep expansion.
pub(super) fn parameters(
    entry: &EngineEntry,
    args: &BenchArgs,
) -> anyhow::Result<(Vec<ParamMap>, Vec<ParamMap>)> {
    let config = EngineConfig::parse(entry.config_toml)
        .with_context(|| format!("config.toml of engine {}", entry.name))?;
    let set = config.set(&args.param_set)?;
    let mut build_table = set.build.clone();
    let mut search_table = set.search.clone();
    apply_overrides(&mut build_table, &args.build_params)?;
    apply_overrides(&mut search_table, &args.search_params)?;
    Ok((expand(&build_table), expand(&search_table)))
}

/// Loads the dataset with ground truth `gt_k` deep; returns it with its cache directory and
/// the warnings said so far (`early`, then the dataset's), each printed as it is found.
pub(super) fn load_dataset(
    args: &BenchArgs,
    gt_k: usize,
    relevant: usize,
    early: Vec<Warning>,
) -> anyhow::Result<(Dataset, PathBuf, Vec<Warning>)> {
    let opts = load_options(&args.source, gt_k, args.quiet || args.json)?;
    let ds = dataset::load(&args.source.dataset, &opts)
        .with_context(|| format!("loading dataset `{}`", args.source.dataset))?;
    if let Some(r) = &args.reproduces {
        crate::commands::reproduce::check_dataset(r, &ds)?;
    }
    let mut warnings = early;
    for detail in &ds.warnings {
        let warning = Warning::Note {
            detail: detail.clone(),
        };
        if !(args.quiet || args.json) {
            eprintln!("warning: {warning}");
        }
        warnings.push(warning);
    }
    if ds.ground_truth.k < relevant {
        bail!(
            "the dataset's ground truth has depth {} but -k/--relevant need {}; \
             recompute it with `ragdbeval dataset gt --dataset {} -k {} --out FILE`",
            ds.ground_truth.k,
            relevant,
            args.source.dataset,
            relevant
        );
    }
    Ok((ds, opts.cache_dir, warnings))
}

/// What the plan measures: the parameter sets, the resolved runbook with the truth of each
/// search step, and the filter levels with theirs.
pub(super) struct Workload {
    builds: Vec<ParamMap>,
    searches: Vec<ParamMap>,
    steps: Vec<Resolved>,
    truths: ground_truth::StepTruths,
    filters: Option<FilterPlan>,
}

/// Resolves the runbook on the dataset and computes the truths of its search steps
/// (unfiltered, then per filter level); returns them with the runbook and filter spec, which
/// the result's settings record.
pub(super) fn workload(
    args: &BenchArgs,
    ds: &Dataset,
    cache_dir: &Path,
    gt_k: usize,
    (builds, searches): (Vec<ParamMap>, Vec<ParamMap>),
) -> anyhow::Result<(Workload, Runbook, Option<FilterSpec>)> {
    let quiet = args.quiet || args.json;
    super::super::filters::check_bench(args)?;
    let filter_spec =
        super::super::filters::spec(&super::super::filters::FilterOptions::of_bench(args))?;
    let mut runbook = resolve_runbook(&args.runbook)?;
    if args.concurrent_writes {
        runbook = crate::runbook::bigann::concurrent(runbook, 2);
    }
    let steps = runbook
        .resolve_on(&ds.train)
        .with_context(|| format!("runbook `{}`", args.runbook))?;
    let cache = ground_truth::cache_path(cache_dir, ds, &steps, gt_k.min(1000));
    let truths = ground_truth::step_truths(
        ds,
        &steps,
        gt_k.min(1000),
        Some(&cache),
        &*crate::output::progress::terminal(quiet),
    )
    .context("computing the ground truth of the runbook's search steps")?;
    let filters = match &filter_spec {
        Some(spec) => Some(super::super::filters::plan(
            spec,
            ds,
            &steps,
            gt_k.min(1000),
            cache_dir,
            quiet,
        )?),
        None => None,
    };
    let workload = Workload {
        builds,
        searches,
        steps,
        truths,
        filters,
    };
    Ok((workload, runbook, filter_spec))
}

/// How to reach the engine; the API key comes from `--api-key-env` or the engine's own
/// password variable.
pub(super) fn connect_options(
    entry: &EngineEntry,
    args: &BenchArgs,
) -> anyhow::Result<ConnectOptions> {
    let api_key = match &args.api_key_env {
        Some(var) => Some(std::env::var(var).with_context(|| {
            format!("--api-key-env {var}: the environment variable is not set")
        })?),
        None => password_from_env(entry, args.url.as_deref()),
    };
    Ok(ConnectOptions {
        url: args.url.clone(),
        api_key,
        recreate: args.recreate,
        server_pid: args.server_pid,
        server_storage: args.server_storage.clone(),
        batch_size: args.batch_size.max(1),
        upload_parallel: args.upload_parallel.max(1),
        timeout: Duration::from_secs(args.timeout.max(1)),
    })
}

/// Each query's RC and LID at K against the whole dataset (sidecar lines, bands): one
/// distance per query and base point up to 10,000 points, before anything is timed.
pub(super) fn query_difficulty(args: &BenchArgs, ds: &Dataset, quiet: bool) -> Difficulty {
    if !quiet {
        eprintln!("query difficulty (RC, LID at k = {})", args.k);
    }
    Difficulty::compute(&ds.train, &ds.test, ds.distance, &ds.ground_truth, args.k)
}

/// `--concurrency`, `--rate` and `--rate-sweep`; the histogram prefix is set once the
/// result has its name.
fn load_plan(args: &BenchArgs) -> LoadPlan {
    LoadPlan {
        concurrency: args.concurrency.clone(),
        rates: args.rate.clone(),
        rate_sweep: args.rate_sweep,
        slo: args.slo,
        duration: args.duration,
        workers: args.workers.max(1),
        histogram_dir: args.histogram_logs.then(|| args.out.clone()),
        histogram_prefix: String::new(),
    }
}

/// The plan the runner carries out.
pub(super) fn bench_plan(
    args: &BenchArgs,
    entry: &'static EngineEntry,
    relevant: usize,
    connect: ConnectOptions,
    workload: Workload,
    difficulty: Difficulty,
) -> BenchPlan {
    let quiet = args.quiet || args.json;
    BenchPlan {
        entry,
        connect,
        builds: workload.builds,
        searches: workload.searches,
        steps: workload.steps,
        truths: workload.truths,
        k: args.k,
        relevant,
        warmup: args.warmup,
        repeat: args.repeat,
        repeat_build: args.repeat_build,
        batch_mode: args.mode == QueryMode::Batch,
        work_dir: work_dir(args),
        keep_work_dir: args.keep_work_dir,
        quiet,
        progress: crate::output::progress::terminal(quiet),
        sample_interval: Duration::from_millis(args.sample_ms.max(1)),
        load: load_plan(args),
        visibility_timeout: args.visibility_timeout,
        filters: workload.filters,
        difficulty: Some(difficulty),
    }
}

pub(super) fn apply_overrides(table: &mut SweepTable, overrides: &[String]) -> anyhow::Result<()> {
    for o in overrides {
        let (name, value) = parse_override(o)?;
        table.insert(name, value);
    }
    Ok(())
}

/// The deepest ground truth ragdbeval computes or reads.
const MAX_K: usize = 1000;

/// Options only a server engine reads, given to an in-process one: a warning each, printed
/// now and stored in the result, so a run that did not do what its command line says is
/// never silent about it.
pub(super) fn ignored_server_options(args: &BenchArgs, embedded: bool) -> Vec<Warning> {
    if !embedded {
        return Vec::new();
    }
    let given = [
        ("--url", args.url.is_some()),
        ("--api-key-env", args.api_key_env.is_some()),
        ("--server-pid", args.server_pid.is_some()),
        ("--server-storage", args.server_storage.is_some()),
        ("--upload-parallel", args.upload_parallel != 1),
        ("--timeout", args.timeout != 120),
    ];
    given
        .iter()
        .filter(|(_, given)| *given)
        .map(|(option, _)| {
            let warning = Warning::Note {
                detail: format!(
                    "{option} is ignored: {} runs in-process, without a server",
                    args.engine
                ),
            };
            // Said now as well as with the results: before a long run, not after it.
            if !(args.quiet || args.json) {
                eprintln!("warning: {warning}");
            }
            warning
        })
        .collect()
}

/// The password in the engine's own variable (`PGPASSWORD`), when the URL carries none: the
/// way to give one that never appears on a command line.
fn password_from_env(entry: &EngineEntry, url: Option<&str>) -> Option<String> {
    let var = entry.meta.server.as_ref()?.password_env?;
    if url.is_some_and(|u| crate::secret::redact(u) != u) {
        return None;
    }
    std::env::var(var).ok().filter(|p| !p.is_empty())
}

/// Where in-process engines keep their files: `--work-dir`, else the system's temp directory.
pub(super) fn work_dir(args: &BenchArgs) -> std::path::PathBuf {
    args.work_dir
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("ragdbeval"))
}
