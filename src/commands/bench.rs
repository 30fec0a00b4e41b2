//! `ragdbeval bench`: resolve engine, parameters and dataset, run the phases, write the result.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, anyhow};

use crate::cli::{BenchArgs, DatasetSource};
use crate::dataset::{self, Dataset, LoadOptions};
use crate::engine::EngineEntry;
use crate::filter::FilterSpec;
use crate::output::{table, warnings};
use crate::results::lock::ResultLock;
use crate::results::run_files::RunFiles;
use crate::results::settings::Settings;
use crate::results::sidecar::Sidecar;
use crate::results::warnings::Warning;
use crate::results::{DatasetInfo, ElementTypes, JudgmentsInfo, RunResult};
use crate::runbook::Runbook;
use crate::runner::{self, BenchPlan};

use super::reproduce;
use super::resume::{self, Resume};

mod lexical;
mod plan;

use plan::{
    bench_plan, check_depths, connect_options, find_engine, ignored_server_options, load_dataset,
    parameters, query_difficulty, workload,
};

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

pub(crate) fn dataset_info(ds: &Dataset) -> DatasetInfo {
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
        judgments: ds.judgments.as_ref().map(|j| JudgmentsInfo {
            file: j.file.clone(),
            queries: j.judgments.queries.len(),
            dropped_queries: j.dropped_queries,
        }),
        lexical: None,
    }
}

pub fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let args = match &args.from {
        Some(path) => reproduce::prepare(path)?,
        None => args,
    };
    if args.retrieval != crate::cli::Retrieval::Dense {
        return lexical::run(args);
    }
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

    let stem = result_stem(&args, &[entry.name, &ds.name], &mut lock)?;
    plan.load.histogram_prefix = stem.clone();
    let paths = OutputPaths {
        result: args.out.join(format!("{stem}.json")),
        sidecar_name: format!("{stem}.queries.jsonl"),
    };
    let settings = settings(&args, relevant, gt_k, &plan, &runbook, filter_spec.as_ref());
    let mut result = new_result(&args, entry, &ds, settings, early_warnings, &paths);
    let sidecar = open_sidecar(&args, resume, &mut result, &mut plan, &ds, &paths)?;
    if !quiet {
        print_dataset(&ds, &result);
    }
    let run = Run {
        args: &args,
        dataset: &ds,
        paths: &paths,
    };
    run.execute(result, sidecar, lock, |result, files| {
        runner::run(&plan, &ds, result, files)
    })
    .and_then(|(outcome, result)| {
        let trec_runs = match &args.trec_run {
            Some(base) => write_trec_runs(&plan, &result, &paths.sidecar(&args), base)?,
            None => Vec::new(),
        };
        run.report(&result, outcome, &trec_runs)
    })
}

/// A run once planned, whatever it retrieves with: its files, the measurement, their end,
/// and what is printed. Dense, sparse and hybrid runs all end through it.
pub(super) struct Run<'a> {
    pub args: &'a BenchArgs,
    pub dataset: &'a Dataset,
    pub paths: &'a OutputPaths,
}

impl Run<'_> {
    /// Runs `measure` with the result saved through its files, and ends them: the outcome,
    /// and the result as saved.
    pub fn execute(
        &self,
        mut result: RunResult,
        sidecar: Option<Sidecar>,
        lock: Option<ResultLock>,
        measure: impl FnOnce(&mut RunResult, &RunFiles) -> Result<(), runner::RunError>,
    ) -> anyhow::Result<(Result<(), runner::RunError>, RunResult)> {
        if let Some(r) = &self.args.reproduces {
            reproduce::record(r, &mut result);
        }
        let files = RunFiles::new(&self.paths.result, sidecar, lock);
        // From here on Ctrl-C stops the run between queries and keeps what finished;
        // before, nothing is measured yet and the default (exit at once) loses nothing.
        crate::interrupt::install().context("installing the Ctrl-C handler")?;
        crate::interrupt::on_forced_exit(files.stop_hook());
        let outcome = measure(&mut result, &files);
        let outcome = finish_files(&files, &mut result, outcome, self.args.reproduces.as_ref())?;
        Ok((outcome, result))
    }

    /// The result on standard output, then where its files are, and the exit code.
    pub fn report(
        &self,
        result: &RunResult,
        outcome: Result<(), runner::RunError>,
        trec_runs: &[PathBuf],
    ) -> anyhow::Result<ExitCode> {
        print_result(self.args, self.dataset, result)?;
        exit_code(self.args, outcome, &self.paths.result, trec_runs)
    }
}

/// The result's file stem: the name given, or a made-up one (a timestamp, the engine, a
/// sparse or hybrid run's retrieval, the dataset) that steps aside for one another run
/// already took, whose lock then goes in `lock`.
fn result_stem(
    args: &BenchArgs,
    parts: &[&str],
    lock: &mut Option<ResultLock>,
) -> anyhow::Result<String> {
    Ok(match &args.name {
        Some(name) => name.clone(),
        None => {
            let time = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
            let made_up = std::iter::once(time.as_str())
                .chain(parts.iter().copied())
                .collect::<Vec<_>>()
                .join("-");
            let (name, taken) = ResultLock::acquire_distinct(&args.out, &made_up)?;
            *lock = Some(taken);
            name
        }
    })
}

/// Where the run's files go.
pub(super) struct OutputPaths {
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
) -> Settings {
    Settings {
        k: Some(args.k),
        relevant: Some(relevant),
        ground_truth_k: Some(gt_k),
        warmup: Some(args.warmup),
        repeat: Some(args.repeat),
        repeat_build: Some(args.repeat_build),
        mode: Some(if plan.batch_mode { "batch" } else { "single" }.into()),
        batch_size: Some(plan.connect.batch_size),
        upload_parallel: Some(plan.connect.upload_parallel),
        param_set: Some(args.param_set.clone()),
        runbook: Some(runbook.name.clone()),
        runbook_hash: Some(runbook.hash()),
        runbook_steps: Some(runbook.steps.clone()),
        build_overrides: Some(args.build_params.clone()),
        search_overrides: Some(args.search_params.clone()),
        sample_interval_ms: Some(args.sample_ms),
        concurrency: Some(args.concurrency.clone()),
        rates: Some(args.rate.clone()),
        rate_sweep: Some(args.rate_sweep),
        slo_ms: Some(args.slo.as_secs_f64() * 1000.0),
        load_duration_s: Some(args.duration.as_secs_f64()),
        workers: Some(args.workers),
        url: args.url.as_deref().map(crate::secret::redact),
        filter: filter_spec.cloned(),
        ..Settings::default()
    }
}

/// The result as it starts: running, nothing measured, the warnings said so far.
fn new_result(
    args: &BenchArgs,
    entry: &EngineEntry,
    ds: &Dataset,
    settings: Settings,
    warnings: Vec<Warning>,
    paths: &OutputPaths,
) -> RunResult {
    let mut result = RunResult::start(
        entry.name,
        entry.embedded(),
        dataset_info(ds),
        settings,
        warnings,
    );
    result.sidecar = (!args.no_sidecar).then(|| paths.sidecar_name.clone());
    result.element_type = Some(ElementTypes {
        dataset: ds.element_type.name().to_string(),
        engine: None,
    });
    result
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
                if let Some(r) = &args.reproduces {
                    println!("{}", reproduce::next_step(r, result_path));
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
    reproduces: Option<&crate::cli::Reproduces>,
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
    if let Some(r) = reproduces {
        reproduce::check_engine(r, result);
    }
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
