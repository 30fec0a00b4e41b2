//! `ragdbeval eval`: a retrieval run scored against relevance judgments; `eval compare`: two
//! runs A/B-tested query by query, or several compared pair by pair.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, bail};
use serde::Deserialize;

use crate::cli::{EvalArgs, EvalCommand, EvalCompareArgs, ScoringArgs};
use crate::eval::evaluate::{
    ANSWER_METRICS, Averaging, EvalOptions, Evaluation, QueryScore, evaluate, higher_is_better,
};
use crate::eval::parse::{read_qrels, read_run};
use crate::eval::score::{AT_K_METRICS, Gain};
use crate::export::eval as render;
use crate::export::eval_compare as render_compare;
use crate::export::eval_pairwise as render_pairwise;
use crate::results::eval_compare::{
    EvalCompareOptions, EvalComparison, MetricSpec, QueryValues, RunValues, compare_runs,
};
use crate::results::eval_pairwise::{PairwiseComparison, compare_pairwise};

pub fn run(args: EvalArgs) -> anyhow::Result<ExitCode> {
    if let Some(EvalCommand::Compare(compare)) = args.command {
        return run_compare(compare);
    }
    let (Some(qrels), Some(run_path)) = (&args.qrels, &args.run) else {
        bail!("eval needs --qrels and --run (or the `compare` subcommand)");
    };
    // Every output path is checked before the work, so a typo does not cost a run.
    for out in [&args.json, &args.csv, &args.md].into_iter().flatten() {
        check_writable(out)?;
    }
    keep_freed_heap();
    let evaluation = score(qrels, run_path, &args.scoring)?;
    let (qrels_shown, run_shown) = (qrels.display().to_string(), run_path.display().to_string());
    if let Some(path) = &args.json {
        let pieces =
            render::json_pieces(&evaluation, &qrels_shown, &run_shown, args.full_precision);
        write_pieces(path, &pieces)?;
    }
    if let Some(path) = &args.csv {
        write(path, &render::csv(&evaluation, args.full_precision))?;
    }
    if let Some(path) = &args.md {
        let title = format!("{run_shown} against {qrels_shown}");
        write(path, &render::markdown(&evaluation, args.bands, &title))?;
    }
    print!(
        "{}",
        render::text(&evaluation, args.bands, args.per_query, args.verbose)
    );
    Ok(ExitCode::SUCCESS)
}

fn options(scoring: &ScoringArgs) -> EvalOptions {
    let mut ks: Vec<usize> = scoring.k.iter().map(|k| *k as usize).collect();
    ks.sort_unstable();
    ks.dedup();
    EvalOptions {
        ks,
        gain: if scoring.gain == "exp" {
            Gain::Exponential
        } else {
            Gain::Linear
        },
        reject_below: scoring.reject_below,
        averaging: scoring.means.as_deref().map(|m| match m {
            "trec_eval-c" => Averaging::TrecEvalComplete,
            "answerable" => Averaging::Answerable,
            _ => Averaging::TrecEval,
        }),
    }
}

fn score(qrels: &Path, run: &Path, scoring: &ScoringArgs) -> anyhow::Result<Evaluation> {
    // Both files read at once: each parse is parallel, but reading and merging are not.
    let (judgments, run) = rayon::join(|| read_qrels(qrels), || read_run(run));
    let (judgments, run) = (judgments?, run?);
    let evaluation = evaluate(&judgments, &run, &options(scoring));
    // Millions of small strings that a process about to exit need not free one by one.
    std::mem::forget((judgments, run));
    Ok(evaluation)
}

/// Parsing and scoring allocate and free hundreds of MB on all cores. glibc grows and shrinks
/// each thread's heap a page range at a time, one `mprotect` per step (about 45,000 on a
/// 2M-line run, a tenth of the process's time); a 64 MiB top pad keeps freed room for reuse.
fn keep_freed_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; it is called before the parse starts
    // its threads' allocations and returns 0 (ignored) on an unknown parameter.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, 64 << 20);
    }
}

fn check_writable(path: &Path) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        bail!(
            "cannot write {}: directory {} does not exist",
            path.display(),
            dir.display()
        );
    }
    Ok(())
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    write_pieces(path, &[text])
}

fn write_pieces(path: &Path, pieces: &[impl AsRef<[u8]>]) -> anyhow::Result<()> {
    crate::atomic::write_atomic_pieces(path, pieces)
        .with_context(|| format!("writing {}", path.display()))
}

/// Per-query values for comparing, the metrics `names` picked from `side`: retrieval metrics
/// only for the queries the means count, answer metrics and latency where present.
fn run_values(label: String, side: &Side, names: &[String]) -> RunValues {
    let metrics = names
        .iter()
        .map(|n| MetricSpec {
            name: n.clone(),
            higher_is_better: higher_is_better(n),
        })
        .collect();
    let columns: Vec<Option<usize>> = names
        .iter()
        .map(|n| side.names.iter().position(|m| m == n))
        .collect();
    let queries = side
        .queries
        .iter()
        .map(|q| {
            let retrieval_applies = q.counted;
            let values = names
                .iter()
                .zip(&columns)
                .map(|(n, c)| {
                    let retrieval =
                        !ANSWER_METRICS.contains(&n.as_str()) && n.as_str() != "latency_ms";
                    match c.and_then(|c| q.metrics.get(c)) {
                        Some(v) if retrieval_applies || !retrieval => stored_precision(*v),
                        _ => f64::NAN,
                    }
                })
                .collect();
            QueryValues {
                query_id: q.query_id.clone(),
                category: q.category.clone(),
                values,
                relevant_returned: q.relevant_returned.clone(),
                first_relevant_rank: q.first_relevant_rank,
            }
        })
        .collect();
    RunValues {
        label,
        metrics,
        queries,
    }
}

/// Where a metric goes in tables: the @k metrics in registry order by k, then R-precision,
/// rr, score CV, latency and the answer metrics.
fn display_order(name: &str) -> (usize, usize, String) {
    if let Some((metric, k)) = name.split_once('@')
        && let Some(i) = AT_K_METRICS.iter().position(|m| *m == metric)
    {
        return (i, k.parse().unwrap_or(usize::MAX), String::new());
    }
    let singles = ["r_precision", "rr", "score_cv", "latency_ms"];
    let i = singles
        .iter()
        .chain(ANSWER_METRICS.iter())
        .position(|m| *m == name)
        .unwrap_or(usize::MAX - AT_K_METRICS.len());
    (AT_K_METRICS.len() + i, 0, name.to_string())
}

/// Per-query values are compared at the precision `eval --json` stores (4 decimals), so a
/// saved evaluation and a run scored afresh agree on identical results.
fn stored_precision(v: f64) -> f64 {
    (v * 1e4).round() / 1e4
}

/// One side of a comparison: its metric names and per-query values.
struct Side {
    names: Vec<String>,
    queries: Vec<QueryScore>,
}

/// The part of a saved `eval --json` file comparing needs.
#[derive(Deserialize)]
struct SavedEvaluation {
    format: String,
    per_query: Vec<SavedQuery>,
}

#[derive(Deserialize)]
struct SavedQuery {
    query_id: String,
    category: Option<String>,
    difficulty: Option<String>,
    is_rejection: bool,
    relevant: usize,
    returned: usize,
    /// Absent in files written before the means named their convention: those counted the
    /// queries with a relevant judgment.
    #[serde(default)]
    counted: Option<bool>,
    metrics: BTreeMap<String, Option<f64>>,
    first_relevant_rank: Option<usize>,
    relevant_returned: Vec<String>,
}

/// A side of the comparison: a saved evaluation, or a run scored against `qrels`.
fn side(path: &Path, args: &EvalCompareArgs) -> anyhow::Result<Side> {
    let bytes =
        crate::text::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    if let Ok(saved) = serde_json::from_slice::<SavedEvaluation>(&bytes) {
        if !saved.format.starts_with("ragdbeval-eval/") {
            bail!("{}: not an `eval --json` file", path.display());
        }
        let mut names: Vec<String> = Vec::new();
        for q in &saved.per_query {
            for n in q.metrics.keys() {
                if !names.contains(n) {
                    names.push(n.clone());
                }
            }
        }
        let queries = saved
            .per_query
            .into_iter()
            .map(|q| QueryScore {
                counted: q.counted.unwrap_or(!q.is_rejection && q.relevant > 0),
                metrics: names
                    .iter()
                    .map(|n| q.metrics.get(n).copied().flatten().unwrap_or(f64::NAN))
                    .collect(),
                query_id: q.query_id,
                category: q.category,
                difficulty: q.difficulty,
                is_rejection: q.is_rejection,
                relevant: q.relevant,
                returned: q.returned,
                first_relevant_rank: q.first_relevant_rank,
                relevant_returned: q.relevant_returned,
                rejected: None,
                ambiguous_ranks: Vec::new(),
            })
            .collect();
        return Ok(Side { names, queries });
    }
    let Some(qrels) = &args.qrels else {
        bail!(
            "{} is a run, not a saved `eval --json` file: give the judgments with --qrels",
            path.display()
        );
    };
    let e = score(qrels, path, &args.scoring)?;
    Ok(Side {
        names: e.metric_names,
        queries: e.per_query,
    })
}

fn run_compare(args: EvalCompareArgs) -> anyhow::Result<ExitCode> {
    if let Some(out) = &args.out {
        check_writable(out)?;
    }
    let sides = args
        .runs
        .iter()
        .map(|path| side(path, &args))
        .collect::<anyhow::Result<Vec<Side>>>()?;
    let names = shared_metric_names(&sides);
    let primary = args.primary.clone().or_else(|| {
        names
            .iter()
            .find(|n| n.as_str() == "ndcg@10")
            .or_else(|| names.iter().find(|n| n.starts_with("ndcg@")))
            .cloned()
    });
    let runs: Vec<RunValues> = args
        .runs
        .iter()
        .zip(&sides)
        .map(|(path, side)| run_values(path.display().to_string(), side, &names))
        .collect();
    let options = EvalCompareOptions {
        alpha: args.alpha,
        resamples: args.resamples as usize,
        seed: args.seed,
        primary,
    };
    let text = match runs.as_slice() {
        [a, b] => two_run_text(&compare_runs(a, b, &options)?, &args.format)?,
        _ => pairwise_text(&compare_pairwise(&runs, &options)?, &args.format)?,
    };
    match &args.out {
        Some(path) => write(path, &text)?,
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}

/// The metrics every side has, in the registry's order (a saved file's are sorted by name).
fn shared_metric_names(sides: &[Side]) -> Vec<String> {
    let Some((first, rest)) = sides.split_first() else {
        return Vec::new();
    };
    let mut names: Vec<String> = first
        .names
        .iter()
        .filter(|n| rest.iter().all(|s| s.names.contains(n)))
        .cloned()
        .collect();
    names.sort_by_key(|n| display_order(n));
    names
}

fn two_run_text(comparison: &EvalComparison, format: &str) -> anyhow::Result<String> {
    Ok(match format {
        "md" | "markdown" => render_compare::markdown(comparison),
        "json" => serde_json::to_string_pretty(comparison)? + "\n",
        _ => render_compare::text(comparison),
    })
}

fn pairwise_text(comparison: &PairwiseComparison, format: &str) -> anyhow::Result<String> {
    Ok(match format {
        "md" | "markdown" => render_pairwise::markdown(comparison),
        "json" => serde_json::to_string_pretty(comparison)? + "\n",
        _ => render_pairwise::text(comparison),
    })
}
