//! `bench --retrieval sparse|hybrid`: an engine's lexical side (and, fused with it, its dense
//! side) built once per build setting from the dataset's sparse vectors, every search setting
//! scored against its exact counterpart and, with judgments, on the retrieval task.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};

use super::plan::{apply_overrides, check_depths, connect_options, load_dataset, parameters};
use super::{OutputPaths, Run};
use crate::adapters;
use crate::cli::{BenchArgs, Retrieval};
use crate::engine::ConnectOptions;
use crate::groundtruth::sparse::exact_sparse;
use crate::params::{ParamMap, ParamMapExt, ParamValue, SweepTable, expand};
use crate::results::lock::ResultLock;
use crate::results::settings::Settings;
use crate::results::{LexicalInfo, RunResult};
use crate::runner::retrieval::{
    AnswerSink, FusionSetting, Measured, RetrievalMode, RetrievalPlan, SearchSetting, Truths,
};
use crate::sparse::fusion::Fusion;

/// The runner's own search parameters of a hybrid run (the rest go to the engine).
const FUSION_PARAMS: [&str; 5] = ["fusion", "rrf_k", "alpha", "depth", "fusion_in"];

/// Results each side of a hybrid search returns before fusion, unless `depth=` says.
const DEFAULT_DEPTH: usize = 100;

pub(super) fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let mode = match args.retrieval {
        Retrieval::Sparse => RetrievalMode::Sparse,
        Retrieval::Hybrid => RetrievalMode::Hybrid,
        Retrieval::Dense => bail!("a dense run is not a lexical one"),
    };
    refuse_dense_options(&args)?;
    if let Some(path) = &args.trec_run {
        crate::export::trec::check_writable(path).context("--trec-run")?;
    }
    let entry = adapters::find_lexical(&args.engine).ok_or_else(|| {
        anyhow!(
            "`{}` has no lexical retrieval (--retrieval {}); engines with it: {}",
            args.engine,
            mode.name(),
            adapters::lexical_names()
        )
    })?;
    if let Some(dense) = adapters::find(&args.engine) {
        adapters::check_built(dense)?;
    }
    let relevant = check_depths(&args)?;
    let mut lock = match &args.name {
        Some(name) => Some(ResultLock::acquire(&args.out.join(format!("{name}.json")))?),
        None => None,
    };
    let (builds, searches) = settings(&args, mode)?;
    let depth = searches
        .iter()
        .filter_map(|s| s.fusion.map(|f| f.depth))
        .max()
        .unwrap_or(0);
    let gt_k = args.gt_k.max(args.k).max(relevant).max(depth);
    let (ds, _, warnings) = load_dataset(&args, gt_k, relevant, Vec::new())?;
    let Some(lexical) = ds.lexical.as_ref() else {
        bail!(
            "dataset `{}` has no sparse vectors (a `sparse/` folder): `ragdbeval embed \
             --sparse bm25` writes them beside a text dataset's vectors",
            args.source.dataset
        );
    };
    if mode == RetrievalMode::Hybrid && ds.ground_truth.k < depth {
        bail!(
            "the dataset's dense ground truth has depth {}, but depth={depth} fuses that many \
             dense results; give a smaller depth or recompute it with --gt-k {depth}",
            ds.ground_truth.k
        );
    }
    let quiet = args.quiet || args.json;
    if !quiet {
        eprintln!(
            "exact sparse top-{gt_k} of {} queries",
            lexical.queries.rows
        );
    }
    let (builds_len, searches_len) = (builds.len(), searches.len());
    let truths = Truths {
        dense: &ds.ground_truth,
        sparse: exact_sparse(&lexical.base, &lexical.queries, gt_k),
    };
    let plan = RetrievalPlan {
        entry,
        connect: connect(&args)?,
        mode,
        builds,
        searches,
        k: args.k,
        relevant,
        warmup: args.warmup,
        work_dir: super::plan::work_dir(&args),
        keep_work_dir: args.keep_work_dir,
        quiet,
        progress: crate::output::progress::terminal(quiet),
        sample_interval: Duration::from_millis(args.sample_ms.max(1)),
        answers: args.trec_run.clone().map(|base| {
            Box::new(TrecRuns {
                numbered: builds_len * searches_len > 1,
                engine: entry.name,
                base,
            }) as Box<dyn AnswerSink>
        }),
    };
    let stem = super::result_stem(&args, &[entry.name, mode.name(), &ds.name], &mut lock)?;
    let paths = OutputPaths {
        result: args.out.join(format!("{stem}.json")),
        sidecar_name: String::new(),
    };
    let result = new_result(&args, &plan, &ds, lexical, warnings, gt_k);
    let run = Run {
        args: &args,
        dataset: &ds,
        paths: &paths,
    };
    let (outcome, result) = run.execute(result, None, lock, |result, files| {
        crate::runner::retrieval::run(&plan, &ds, lexical, &truths, result, files)
    })?;
    run.report(&result, outcome, &[])
}

/// Options of dense runs that a lexical run does not do: refused by name rather than ignored.
fn refuse_dense_options(args: &BenchArgs) -> anyhow::Result<()> {
    let refused = [
        (
            args.runbook != "default" && args.runbook != "build-search",
            "--runbook",
        ),
        (!args.filters.is_empty(), "--filter"),
        (
            !args.concurrency.is_empty() || !args.rate.is_empty() || args.rate_sweep,
            "--concurrency/--rate",
        ),
        (args.repeat > 1, "--repeat"),
        (args.resume.is_some(), "--resume"),
        (args.mode == crate::cli::QueryMode::Batch, "--mode batch"),
    ];
    if let Some((_, name)) = refused.iter().find(|(given, _)| *given) {
        bail!(
            "{name} is not available with --retrieval {}: sparse and hybrid runs build, then \
             search every setting, one query at a time",
            if args.retrieval == Retrieval::Sparse {
                "sparse"
            } else {
                "hybrid"
            }
        );
    }
    Ok(())
}

/// Build settings and search settings. A hybrid run on an engine that is also a dense engine
/// starts from its named parameter set (`--set`), as a dense run does; otherwise only
/// `--build-param` and `--search-param` give parameters.
fn settings(
    args: &BenchArgs,
    mode: RetrievalMode,
) -> anyhow::Result<(Vec<ParamMap>, Vec<SearchSetting>)> {
    let (builds, searches) = match (mode, adapters::find(&args.engine)) {
        (RetrievalMode::Hybrid, Some(dense)) => parameters(dense, args)?,
        (_, _) => {
            if args.param_set != "default" {
                bail!(
                    "--set {} names a dense parameter set; a sparse run takes --build-param \
                     and --search-param",
                    args.param_set
                );
            }
            let (mut build, mut search) = (SweepTable::new(), SweepTable::new());
            apply_overrides(&mut build, &args.build_params)?;
            apply_overrides(&mut search, &args.search_params)?;
            (expand(&build), expand(&search))
        }
    };
    let searches = searches
        .into_iter()
        .map(|p| search_setting(p, mode, args.k))
        .collect::<anyhow::Result<_>>()?;
    Ok((builds, searches))
}

/// One search setting: the fusion parameters taken out (with their defaults recorded), the
/// rest for the engine.
fn search_setting(
    params: ParamMap,
    mode: RetrievalMode,
    k: usize,
) -> anyhow::Result<SearchSetting> {
    let mut engine = params.clone();
    engine.retain(|name, _| !FUSION_PARAMS.contains(&name.as_str()));
    if mode == RetrievalMode::Sparse {
        if let Some(name) = FUSION_PARAMS.iter().find(|n| params.contains_key(**n)) {
            bail!("--search-param {name} fuses a hybrid search: give it with --retrieval hybrid");
        }
        return Ok(SearchSetting {
            recorded: params,
            engine,
            fusion: None,
        });
    }
    let bad = |e: crate::params::ParamError| anyhow!("--search-param: {e}");
    let depth = params
        .get_u64("depth")
        .map_err(bad)?
        .map_or(DEFAULT_DEPTH.max(k), |d| d as usize);
    if depth < k {
        bail!("--search-param depth={depth}: each side must return at least k = {k} results");
    }
    let fusion = match params.get_str("fusion").map_err(bad)?.unwrap_or("rrf") {
        "rrf" => Fusion::Rrf {
            k: params
                .get_f64("rrf_k")
                .map_err(bad)?
                .unwrap_or(Fusion::RRF_K),
        },
        "convex" => {
            let alpha = params.get_f64("alpha").map_err(bad)?.unwrap_or(0.5);
            if !(0.0..=1.0).contains(&alpha) {
                bail!("--search-param alpha={alpha}: the dense weight is between 0 and 1");
            }
            Fusion::Convex { alpha }
        }
        other => bail!("--search-param fusion={other}: rrf or convex"),
    };
    if let Fusion::Rrf { k: c } = fusion
        && !(c > 0.0 && c.is_finite())
    {
        bail!("--search-param rrf_k={c}: RRF's constant is positive");
    }
    let in_engine = match params
        .get_str("fusion_in")
        .map_err(bad)?
        .unwrap_or("client")
    {
        "client" => false,
        "engine" if matches!(fusion, Fusion::Rrf { .. }) => true,
        "engine" => bail!("--search-param fusion_in=engine fuses by RRF only (fusion=rrf)"),
        other => bail!("--search-param fusion_in={other}: client or engine"),
    };
    let mut recorded = engine.clone();
    match fusion {
        Fusion::Rrf { k: c } => {
            recorded.insert("fusion".into(), ParamValue::Str("rrf".into()));
            recorded.insert("rrf_k".into(), ParamValue::Float(c));
        }
        Fusion::Convex { alpha } => {
            recorded.insert("fusion".into(), ParamValue::Str("convex".into()));
            recorded.insert("alpha".into(), ParamValue::Float(alpha));
        }
    }
    recorded.insert("depth".into(), ParamValue::Int(depth as i64));
    let side = if in_engine { "engine" } else { "client" };
    recorded.insert("fusion_in".into(), ParamValue::Str(side.into()));
    Ok(SearchSetting {
        engine,
        fusion: Some(FusionSetting {
            fusion,
            depth,
            in_engine,
        }),
        recorded,
    })
}

/// How to reach the engine: as a dense run does when the engine is also a dense one.
fn connect(args: &BenchArgs) -> anyhow::Result<ConnectOptions> {
    match adapters::find(&args.engine) {
        Some(dense) => connect_options(dense, args),
        None => Ok(ConnectOptions {
            url: args.url.clone(),
            api_key: None,
            recreate: args.recreate,
            server_pid: args.server_pid,
            server_storage: args.server_storage.clone(),
            batch_size: args.batch_size.max(1),
            upload_parallel: args.upload_parallel.max(1),
            timeout: Duration::from_secs(args.timeout.max(1)),
        }),
    }
}

/// The result as it starts: running, nothing measured.
fn new_result(
    args: &BenchArgs,
    plan: &RetrievalPlan,
    ds: &crate::dataset::Dataset,
    lexical: &crate::dataset::lexical::LexicalSet,
    warnings: Vec<crate::results::warnings::Warning>,
    gt_k: usize,
) -> RunResult {
    let settings = Settings {
        k: Some(args.k),
        relevant: Some(plan.relevant),
        ground_truth_k: Some(gt_k),
        warmup: Some(args.warmup),
        mode: Some("single".into()),
        batch_size: Some(plan.connect.batch_size),
        retrieval: Some(plan.mode.name().into()),
        runbook: Some("build-search".into()),
        build_overrides: Some(args.build_params.clone()),
        search_overrides: Some(args.search_params.clone()),
        sample_interval_ms: Some(args.sample_ms),
        url: args.url.as_deref().map(crate::secret::redact),
        ..Settings::default()
    };
    let mut dataset = super::dataset_info(ds);
    dataset.lexical = Some(LexicalInfo {
        dim: lexical.base.cols,
        base_nnz: lexical.base.nnz(),
        query_nnz: lexical.queries.nnz(),
        encoding: lexical.encoding.clone(),
        texts: lexical.base_texts.is_some(),
        files: lexical.files.clone(),
    });
    RunResult::start(
        plan.entry.name,
        plan.entry.embedded,
        dataset,
        settings,
        warnings,
    )
}

/// `--trec-run`: each measurement's answers as a TREC run file (numbered when there are
/// several), scored by their exact distances ([`crate::export::trec`]).
struct TrecRuns {
    base: std::path::PathBuf,
    numbered: bool,
    engine: &'static str,
}

impl AnswerSink for TrecRuns {
    fn take(&self, a: &Measured<'_>) -> Result<(), String> {
        let path = crate::export::trec::run_path(&self.base, a.measurement, self.numbered);
        let failed = |e: std::io::Error| format!("--trec-run {}: {e}", path.display());
        let tag = crate::export::trec::run_tag(self.engine, a.build, a.search, None);
        let mut text: Vec<u8> = Vec::new();
        for q in 0..a.queries() {
            let (ids, distances) = a.answer(q);
            let d: Vec<Option<f32>> = distances.iter().map(|d| Some(*d)).collect();
            crate::export::trec::write_run_query(&mut text, q, ids, &d, &tag).map_err(failed)?;
        }
        crate::atomic::write_atomic(&path, &text).map_err(failed)
    }
}
