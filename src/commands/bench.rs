//! `ragdbeval bench`: resolve engine, parameters and dataset, run the phases, write the result.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use serde_json::json;

use crate::adapters;
use crate::cli::{BenchArgs, DatasetSource, QueryMode};
use crate::dataset::{self, Dataset, LoadOptions};
use crate::engine::{ConnectOptions, EngineEntry};
use crate::filter::FilterSpec;
use crate::groundtruth::difficulty::Difficulty;
use crate::output::{table, warnings};
use crate::params::{EngineConfig, ParamMap, SweepTable, expand, parse_override};
use crate::results::lock::ResultLock;
use crate::results::run_files::RunFiles;
use crate::results::sidecar::Sidecar;
use crate::results::warnings::Warning;
use crate::results::{
    DatasetInfo, ElementTypes, EngineInfo, Manifest, RunResult, RunState, RunStatus, SCHEMA,
};
use crate::runbook::{Resolved, Runbook};
use crate::runner::{self, BenchPlan, FilterPlan, LoadPlan, ground_truth};

use super::resume::{self, Resume};

/// `default`, `build-search`, or a runbook file.
pub(crate) fn resolve_runbook(name: &str) -> anyhow::Result<Runbook> {
    Ok(match name {
        "default" => Runbook::default_mutations(),
        "build-search" => Runbook::build_and_search(),
        spec => match crate::runbook::generated::generate(spec) {
            Some(generated) => generated?,
            None => Runbook::load(std::path::Path::new(spec))?,
        },
    })
}

/// Builds [`LoadOptions`] from the shared dataset arguments.
pub(crate) fn load_options(
    src: &DatasetSource,
    gt_k: usize,
    quiet: bool,
) -> anyhow::Result<LoadOptions> {
    Ok(LoadOptions {
        cache_dir: src
            .data_dir
            .clone()
            .unwrap_or_else(dataset::default_cache_dir),
        offline: src.offline,
        limit: src.limit,
        max_queries: src.max_queries,
        gt_k,
        distance: src.distance.as_deref().map(str::parse).transpose()?,
        compute_missing_gt: true,
        quiet,
        progress: crate::output::progress::terminal(quiet),
        spill_above: None,
        train_in_place: false,
    })
}

fn apply_overrides(table: &mut SweepTable, overrides: &[String]) -> anyhow::Result<()> {
    for o in overrides {
        let (name, value) = parse_override(o)?;
        table.insert(name, value);
    }
    Ok(())
}

fn dataset_info(ds: &Dataset) -> DatasetInfo {
    DatasetInfo {
        name: ds.name.clone(),
        source: ds.source.clone(),
        sha256: ds.sha256.clone(),
        files: ds.files.clone(),
        train: ds.train.len(),
        dim: ds.train.dim(),
        queries: ds.test.len(),
        distance: ds.distance.to_string(),
        ground_truth_depth: ds.ground_truth.k,
        ground_truth_source: format!("{:?}", ds.ground_truth_source).to_lowercase(),
        limit: ds.limit,
    }
}

/// The deepest ground truth ragdbeval computes or reads.
const MAX_K: usize = 1000;

/// Options only a server engine reads, given to an in-process one: a warning each, printed
/// now and stored in the result, so a run that did not do what its command line says is
/// never silent about it.
fn ignored_server_options(args: &BenchArgs, embedded: bool) -> Vec<Warning> {
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

pub fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    match args.resume.clone() {
        Some(path) => {
            let (original, resume) = resume::prepare(&args, &path)?;
            run_bench(original, Some(resume))
        }
        None => run_bench(args, None),
    }
}

fn run_bench(args: BenchArgs, resume: Option<Resume>) -> anyhow::Result<ExitCode> {
    let quiet = args.quiet || args.json;
    let entry = find_engine(&args)?;
    let relevant = check_depths(&args)?;
    // A name given (or a resumed run's) is claimed before anything is loaded: a second run
    // writing the same result fails at once, not after its dataset and ground truth.
    let mut lock = match &args.name {
        Some(name) => Some(ResultLock::acquire(&args.out.join(format!("{name}.json")))?),
        None => None,
    };
    let ignored = ignored_server_options(&args, entry.embedded());
    // An output that cannot be written fails now, not after the benchmark.
    if let Some(path) = &args.trec_run {
        crate::export::trec::check_writable(path).context("--trec-run")?;
    }
    let parameters = parameters(entry, &args)?;
    let gt_k = args.gt_k.max(args.k).max(relevant);
    let (ds, cache_dir, early_warnings) = load_dataset(&args, gt_k, relevant, ignored)?;
    let (workload, runbook, filter_spec) = workload(&args, &ds, &cache_dir, gt_k, parameters)?;
    let connect = connect_options(entry, &args)?;
    let difficulty = query_difficulty(&args, &ds, quiet);
    let mut plan = bench_plan(&args, entry, relevant, connect, workload, difficulty);

    let stem = result_stem(&args, entry, &ds, &mut lock)?;
    plan.load.histogram_prefix = stem.clone();
    let paths = OutputPaths {
        result: args.out.join(format!("{stem}.json")),
        sidecar_name: format!("{stem}.queries.jsonl"),
    };
    let settings = settings(&args, relevant, gt_k, &plan, &runbook, filter_spec.as_ref());
    let mut result = new_result(&args, entry, &ds, settings, early_warnings, &paths);
    let sidecar = open_sidecar(&args, resume, &mut result, &mut plan, &ds, &paths)?;
    let files = RunFiles::new(&paths.result, sidecar, lock);
    if !quiet {
        print_dataset(&ds, &result);
    }

    // From here on Ctrl-C stops the run between queries and keeps what finished; before,
    // nothing is measured yet and the default (exit at once) loses nothing.
    crate::interrupt::install().context("installing the Ctrl-C handler")?;
    crate::interrupt::on_forced_exit(files.stop_hook());
    let outcome = runner::run(&plan, &ds, &mut result, &files);
    let outcome = finish_files(&files, &mut result, outcome)?;
    let trec_runs = match &args.trec_run {
        Some(base) => write_trec_runs(&plan, &result, &paths.sidecar(&args), base)?,
        None => Vec::new(),
    };
    print_result(&args, &ds, &result)?;
    exit_code(&args, outcome, &paths.result, &trec_runs)
}

/// The engine named by `--engine`.
fn find_engine(args: &BenchArgs) -> anyhow::Result<&'static EngineEntry> {
    adapters::find(&args.engine).ok_or_else(|| {
        anyhow!(
            "unknown engine `{}`; available: {}",
            args.engine,
            adapters::names()
        )
    })
}

/// Checks `-k`, `--relevant` and `--repeat-build` before anything is loaded; returns the
/// number of true neighbours regarded as relevant.
fn check_depths(args: &BenchArgs) -> anyhow::Result<usize> {
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
fn parameters(
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
fn load_dataset(
    args: &BenchArgs,
    gt_k: usize,
    relevant: usize,
    early: Vec<Warning>,
) -> anyhow::Result<(Dataset, PathBuf, Vec<Warning>)> {
    let opts = load_options(&args.source, gt_k, args.quiet || args.json)?;
    let ds = dataset::load(&args.source.dataset, &opts)
        .with_context(|| format!("loading dataset `{}`", args.source.dataset))?;
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
struct Workload {
    builds: Vec<ParamMap>,
    searches: Vec<ParamMap>,
    steps: Vec<Resolved>,
    truths: ground_truth::StepTruths,
    filters: Option<FilterPlan>,
}

/// Resolves the runbook on the dataset and computes the truths of its search steps
/// (unfiltered, then per filter level); returns them with the runbook and filter spec, which
/// the result's settings record.
fn workload(
    args: &BenchArgs,
    ds: &Dataset,
    cache_dir: &Path,
    gt_k: usize,
    (builds, searches): (Vec<ParamMap>, Vec<ParamMap>),
) -> anyhow::Result<(Workload, Runbook, Option<FilterSpec>)> {
    let quiet = args.quiet || args.json;
    super::filters::check_bench(args)?;
    let filter_spec = super::filters::spec(&super::filters::FilterOptions::of_bench(args))?;
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
        Some(spec) => Some(super::filters::plan(
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
fn connect_options(entry: &EngineEntry, args: &BenchArgs) -> anyhow::Result<ConnectOptions> {
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
fn query_difficulty(args: &BenchArgs, ds: &Dataset, quiet: bool) -> Difficulty {
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
fn bench_plan(
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
        work_dir: args
            .work_dir
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join("ragdbeval")),
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

/// The result's file stem: the name given, or a made-up one (a timestamp) that steps aside
/// for one another run already took, whose lock then goes in `lock`.
fn result_stem(
    args: &BenchArgs,
    entry: &EngineEntry,
    ds: &Dataset,
    lock: &mut Option<ResultLock>,
) -> anyhow::Result<String> {
    Ok(match &args.name {
        Some(name) => name.clone(),
        None => {
            let made_up = format!(
                "{}-{}-{}",
                chrono::Utc::now().format("%Y%m%dT%H%M%SZ"),
                entry.name,
                ds.name
            );
            let (name, taken) = ResultLock::acquire_distinct(&args.out, &made_up)?;
            *lock = Some(taken);
            name
        }
    })
}

/// Where the run's files go.
struct OutputPaths {
    result: PathBuf,
    /// The sidecar's file name, beside the result.
    sidecar_name: String,
}

impl OutputPaths {
    fn sidecar(&self, args: &BenchArgs) -> PathBuf {
        args.out.join(&self.sidecar_name)
    }
}

/// The run's settings as the result records them.
fn settings(
    args: &BenchArgs,
    relevant: usize,
    gt_k: usize,
    plan: &BenchPlan,
    runbook: &Runbook,
    filter_spec: Option<&FilterSpec>,
) -> serde_json::Value {
    json!({
        "k": args.k,
        "relevant": relevant,
        // The depth the ground truth was computed to (`verify` uses it, and so the same cache).
        "ground_truth_k": gt_k,
        "warmup": args.warmup,
        "repeat": args.repeat,
        "repeat_build": args.repeat_build,
        "mode": if plan.batch_mode { "batch" } else { "single" },
        "batch_size": plan.connect.batch_size,
        "upload_parallel": plan.connect.upload_parallel,
        "param_set": args.param_set,
        "runbook": runbook.name,
        "runbook_hash": runbook.hash(),
        "runbook_steps": runbook.steps,
        "build_overrides": args.build_params,
        "search_overrides": args.search_params,
        "sample_interval_ms": args.sample_ms,
        "concurrency": args.concurrency,
        "rates": args.rate,
        "rate_sweep": args.rate_sweep,
        "slo_ms": args.slo.as_secs_f64() * 1000.0,
        "load_duration_s": args.duration.as_secs_f64(),
        "workers": args.workers,
        "url": args.url.as_deref().map(crate::secret::redact),
        "filter": filter_spec,
    })
}

/// The result as it starts: running, nothing measured, the warnings said so far.
fn new_result(
    args: &BenchArgs,
    entry: &EngineEntry,
    ds: &Dataset,
    settings: serde_json::Value,
    warnings: Vec<Warning>,
    paths: &OutputPaths,
) -> RunResult {
    RunResult {
        schema: SCHEMA.to_string(),
        status: RunStatus {
            state: RunState::Running,
            error: None,
            resumed: Vec::new(),
            invalid: Vec::new(),
        },
        manifest: Manifest::new(settings.as_object().cloned().unwrap_or_default()),
        dataset: dataset_info(ds),
        engine: EngineInfo {
            name: entry.name.to_string(),
            version: String::new(),
            in_process: entry.embedded(),
            details: serde_json::Map::new(),
        },
        configs: Vec::new(),
        warnings,
        curves: Vec::new(),
        sidecar: (!args.no_sidecar).then(|| paths.sidecar_name.clone()),
        element_type: Some(ElementTypes {
            dataset: ds.element_type.name().to_string(),
            engine: None,
        }),
    }
}

/// The sidecar: a new one, none (`--no-sidecar`), or a resumed run's, reopened after the
/// earlier attempt's result is adopted.
fn open_sidecar(
    args: &BenchArgs,
    resume: Option<Resume>,
    result: &mut RunResult,
    plan: &mut BenchPlan,
    ds: &Dataset,
    paths: &OutputPaths,
) -> anyhow::Result<Option<Sidecar>> {
    let sidecar_path = paths.sidecar(args);
    Ok(match resume {
        Some(resume) => {
            resume::adopt(resume, result, ds)?;
            // The collection of the earlier attempt is this run's own: it is rebuilt.
            plan.connect.recreate = true;
            resume::reopen_files(result, &paths.result, &sidecar_path, args.no_sidecar)?
        }
        None if args.no_sidecar => None,
        None => Some(Sidecar::create(&sidecar_path)?),
    })
}

/// The dataset line printed before the run.
fn print_dataset(ds: &Dataset, result: &RunResult) {
    eprintln!(
        "dataset {}: {} × {} ({}{}), {} queries, ground truth depth {} ({})",
        ds.name,
        ds.train.len(),
        ds.train.dim(),
        ds.distance,
        if ds.element_type == crate::types::ElementType::Float32 {
            String::new()
        } else {
            format!(", {}", ds.element_type)
        },
        ds.test.len(),
        ds.ground_truth.k,
        result.dataset.ground_truth_source
    );
}

/// The result on standard output (JSON, or the table), then its warnings.
fn print_result(args: &BenchArgs, ds: &Dataset, result: &RunResult) -> anyhow::Result<()> {
    if args.json {
        println!("{}", result.to_json()?);
    } else {
        println!(
            "{} {} on {} (k = {}, {} queries)",
            result.engine.name,
            result.engine.version,
            ds.name,
            args.k,
            ds.test.len()
        );
        print!("{}", table::render(result));
        // The stored type is news only when the data is not float32 or the engine changed it.
        if let Some(types) = &result.element_type
            && let Some(engine) = &types.engine
            && (types.dataset != "float32" || engine != "float32")
        {
            println!(
                "element type: dataset {}, stored by the engine as {engine}",
                types.dataset
            );
        }
    }
    warnings::print(&result.warnings);
    Ok(())
}

/// Where the results are, and how the process exits: 130 when interrupted.
fn exit_code(
    args: &BenchArgs,
    outcome: Result<(), runner::RunError>,
    result_path: &Path,
    trec_runs: &[PathBuf],
) -> anyhow::Result<ExitCode> {
    match outcome {
        Ok(()) => {
            if !args.json {
                println!("results: {}", result_path.display());
                for path in trec_runs {
                    println!("TREC run: {}", path.display());
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(runner::RunError::Interrupted) => {
            eprintln!(
                "interrupted: the steps that finished are saved in {}",
                result_path.display()
            );
            Ok(ExitCode::from(130))
        }
        Err(e) => Err(anyhow!(
            "{e}\n  (the steps that finished are saved in {})",
            result_path.display()
        )),
    }
}

/// Ends the run's files: the sidecar in place first, then the result with its final state, so
/// that a result never says `completed` over per-query lines that are not there. A sidecar
/// that cannot be finished (a full disk) makes the run `failed`, resumable once there is
/// space again. A run that measured nothing and was not interrupted leaves no files.
fn finish_files(
    files: &RunFiles,
    result: &mut RunResult,
    outcome: Result<(), runner::RunError>,
) -> anyhow::Result<Result<(), runner::RunError>> {
    files.drop_unsaved_steps(result);
    let measured = result.configs.iter().any(|c| !c.steps.is_empty());
    let interrupted = matches!(outcome, Err(runner::RunError::Interrupted));
    // An interrupted run always leaves its result (marked `interrupted`), even with nothing
    // measured yet: the user stopped it, and the file says so.
    if let Err(e) = &outcome
        && !measured
        && !interrupted
    {
        // Nothing was measured (engine unreachable, bad parameter): leave no result behind.
        files.discard_sidecar();
        let _ = std::fs::remove_file(files.result_path());
        return Err(anyhow!("{e}"));
    }
    let outcome = match files.finish_sidecar() {
        Ok(()) => outcome,
        Err(e) => outcome.and(Err(runner::RunError::Results(e))),
    };
    runner::finish(result, outcome.as_ref().map(|_| ()));
    files.save(result).map_err(|e| {
        anyhow!(
            "{e}\n  (the result keeps the steps saved before, in state `running`: \
             `ragdbeval bench --resume {}` continues it once it can be written)",
            files.result_path().display()
        )
    })?;
    Ok(outcome)
}

/// `--trec-run`: the run's searches as TREC run files, made from the sidecar just written
/// (so a resumed run's files hold its earlier attempts' searches too). One measurement
/// planned: the file given; several: numbered files ([`crate::export::trec::run_path`]),
/// decided by the plan so that a run that stopped early names its files as a full one would.
fn write_trec_runs(
    plan: &BenchPlan,
    result: &RunResult,
    sidecar: &std::path::Path,
    base: &std::path::Path,
) -> anyhow::Result<Vec<PathBuf>> {
    let search_steps = plan
        .steps
        .iter()
        .filter(|s| matches!(s, crate::runbook::Resolved::Search { .. }))
        .count();
    let planned = crate::runner::configurations(plan).len()
        * search_steps
        * plan.searches.len()
        * plan.filter_levels();
    crate::export::trec::write_runs(result, sidecar, base, planned > 1).context("--trec-run")
}
