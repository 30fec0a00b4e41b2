//! Command-line arguments. Parsing only: [`crate::commands`] turns them into work.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

mod bench;
mod compare;
mod dataset;
mod embed;
mod eval;
use bench::BENCH_EXAMPLES;
pub use bench::{BenchArgs, QueryMode, Reproduces, Retrieval};
use compare::COMPARE_EXAMPLES;
pub use compare::{CompareArgs, VerifyArgs, parse_pair};
use dataset::DATASET_EXAMPLES;
pub use dataset::{
    ConvertArgs, ConvertFormat, DatasetCommand, GtArgs, MakeArgs, MakeTextArgs, QrelsArgs,
    SubsetArgs, TextSource,
};
use embed::EMBED_EXAMPLES;
pub use embed::{EmbedArgs, SparseEncoding};
pub use eval::{EvalArgs, EvalCommand, EvalCompareArgs, ScoringArgs};

/// Benchmark vector databases: recall against exact ground truth, latency, throughput,
/// build time, index size, RAM and CPU, written to result files that can be compared.
#[derive(Debug, Parser)]
#[command(name = "ragdbeval", version, about, long_about = None, after_help = BENCH_EXAMPLES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands. `BenchArgs` is large, but parsed once per process.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Build an index on an engine, run the queries, score them and write a result file.
    #[command(after_help = BENCH_EXAMPLES)]
    Bench(BenchArgs),
    /// List, inspect, download, generate and prepare datasets.
    #[command(subcommand, after_help = DATASET_EXAMPLES)]
    Dataset(DatasetCommand),
    /// List the engines and their named parameter sets.
    Engines,
    /// Render result files: a table, CSV, Markdown or JSON, or with `--out DIR/` the whole
    /// report (comparison tables, plots, an offline HTML page, results.csv, report.md).
    #[command(after_help = REPORT_EXAMPLES)]
    Report(ReportArgs),
    /// Merge HdrHistogram interval logs from several processes or machines into one latency
    /// distribution.
    Merge(MergeArgs),
    /// Compare two runs on the same queries: paired tests per metric, Win/Loss/Draw/Regression
    /// per query, and what makes them not comparable.
    #[command(after_help = COMPARE_EXAMPLES)]
    Compare(CompareArgs),
    /// Recompute a result's quality metrics and latency percentiles from its per-query sidecar
    /// and the dataset, and say whether the file agrees with itself.
    Verify(VerifyArgs),
    /// Score a retrieval run against relevance judgments (TREC qrels or RAG ground-truth JSONL):
    /// Hit, MRR, P, R, F1, MAP, NDCG @k, R-precision, rejection accuracy, answer metrics;
    /// `eval compare` A/B-tests two runs.
    Eval(EvalArgs),
    /// Embed a corpus and its queries (JSONL, or a BEIR directory) with a local
    /// sentence-transformers model, and write them as a dataset with exact ground truth and
    /// the corpus' judgments mapped to the vectors (cargo feature `embed`).
    #[command(after_help = EMBED_EXAMPLES)]
    Embed(EmbedArgs),
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell.
    #[command(after_help = COMPLETIONS_EXAMPLES)]
    Completions(CompletionsArgs),
    /// Print the man page, or write one page per command into a directory.
    #[command(after_help = MAN_EXAMPLES)]
    Man(ManArgs),
}

const COMPLETIONS_EXAMPLES: &str = "\
Examples:
  ragdbeval completions bash > ~/.local/share/bash-completion/completions/ragdbeval
  ragdbeval completions zsh > ~/.zfunc/_ragdbeval
  ragdbeval completions fish > ~/.config/fish/completions/ragdbeval.fish";

const MAN_EXAMPLES: &str = "\
Examples:
  ragdbeval man | man -l -
      Read the page now.
  ragdbeval man --out ~/.local/share/man/man1
      ragdbeval.1 and a page per command (ragdbeval-bench.1, ...), for `man ragdbeval-bench`.";

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write `ragdbeval.1` and one page per command into this directory instead.
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
}

const REPORT_EXAMPLES: &str = "\
Examples:
  ragdbeval report results/*.json --out report/
      index.html (open it from disk), plots/*.svg, results.csv and report.md.
  ragdbeval report results/run.json
      One run as a table on the terminal.
  ragdbeval report results/*.json --format csv --out all.csv
  ragdbeval report results/*.json --format ranking
      Per dataset, each engine's fastest measured setting at recall 0.90, 0.95 and 0.99.
  ragdbeval report results/ --history --out report/
      Every result in results/, and each figure across the runs of one engine and setting.
  ragdbeval report results/ --price-per-hour 0.77 --ram-price 3.2 --storage-price 0.08 --out report/
      Adds USD per million queries and per month for memory and storage (cost.csv), and
      ranks the cheapest settings at each recall level; --prices FILE sets them per engine.";

/// A price in USD: zero or more.
pub fn parse_price(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(p) if p.is_finite() && p >= 0.0 => Ok(p),
        _ => Err(format!(
            "`{text}` is not a price in USD (a number, zero or more)"
        )),
    }
}

/// A significance level strictly between 0 and 1.
pub fn parse_alpha(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(a) if a > 0.0 && a < 1.0 => Ok(a),
        _ => Err(format!(
            "`{text}` is not a significance level between 0 and 1"
        )),
    }
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// Interval logs written with `bench --histogram-logs`.
    #[arg(required = true)]
    pub logs: Vec<PathBuf>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// The longest duration any option takes: a week. A benchmark level, an objective or a
/// visibility bound beyond that is a typo, and `Duration` cannot hold arbitrary floats.
const MAX_DURATION_S: f64 = 7.0 * 24.0 * 3600.0;

/// Parses `250ms`, `30s`, `2m`, `1.5s` or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let t = text.trim();
    let (number, scale) = if let Some(v) = t.strip_suffix("ms") {
        (v, 1e-3)
    } else if let Some(v) = t.strip_suffix("us") {
        (v, 1e-6)
    } else if let Some(v) = t.strip_suffix('s') {
        (v, 1.0)
    } else if let Some(v) = t.strip_suffix('m') {
        (v, 60.0)
    } else {
        (t, 1.0)
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (e.g. 250ms, 30s, 2m)"))?;
    if !(value.is_finite() && value > 0.0) {
        return Err(format!("`{text}` must be a positive duration"));
    }
    let seconds = value * scale;
    if seconds > MAX_DURATION_S {
        return Err(format!(
            "`{text}` is longer than a week, the most any option takes"
        ));
    }
    std::time::Duration::try_from_secs_f64(seconds)
        .map_err(|_| format!("`{text}` is not a usable duration"))
}

/// A count that must be at least 1 (`--max-queries`, `--concurrency`, `--workers`, ...).
pub fn parse_count(text: &str) -> Result<usize, String> {
    let n: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a whole number"))?;
    if n == 0 {
        return Err("must be at least 1".into());
    }
    Ok(n)
}

/// Trials per search measurement: at least 1, at most 1000 (each is a full timed loop).
pub fn parse_repeat(text: &str) -> Result<usize, String> {
    let n = parse_count(text)?;
    if n > 1000 {
        return Err(format!("{n} trials: at most 1000"));
    }
    Ok(n)
}

/// Warm-up queries run one by one and their latencies are kept for the cold-start figures: ten
/// million is far past the point where more says anything, and bounds that memory (160 MB).
const MAX_WARMUP: usize = 10_000_000;

/// `--warmup`: 0 (none) up to [`MAX_WARMUP`].
pub fn parse_warmup(text: &str) -> Result<usize, String> {
    let n: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a whole number"))?;
    if n > MAX_WARMUP {
        return Err(format!("at most {MAX_WARMUP} warm-up queries"));
    }
    Ok(n)
}

/// `--timeout` in whole seconds: 1 up to a week.
pub fn parse_timeout_s(text: &str) -> Result<u64, String> {
    let n = parse_count(text)?;
    if n as f64 > MAX_DURATION_S {
        return Err(format!("`{text}` seconds is longer than a week"));
    }
    Ok(n as u64)
}

/// An offered rate in queries per second: finite and positive.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    let rate: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("`{text}` is not a rate in queries per second"))?;
    if !(rate.is_finite() && rate > 0.0) {
        return Err(format!("`{text}` must be a positive, finite rate"));
    }
    Ok(rate)
}

/// `--name`: a plain file name, so the result lands in `--out` and is visible there.
pub fn parse_result_name(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Err("must not be empty".into());
    }
    if text.starts_with('.') {
        return Err(format!(
            "`{text}` would be a hidden file: start it with a letter or digit"
        ));
    }
    if text.contains(['/', '\\', '\0']) {
        return Err(format!(
            "`{text}` must be a file name, without `/` (use --out for the directory)"
        ));
    }
    Ok(text.to_string())
}

#[derive(Debug, Args)]
pub struct DatasetSource {
    /// Dataset: a registry name (`sift1m`, `glove-100-angular`; see `dataset list`), an
    /// ann-benchmarks .hdf5 file, a TEXMEX directory (*base.fvecs, *query.fvecs,
    /// *groundtruth.ivecs), a big-ann-benchmarks directory (*base*.fbin|u8bin|i8bin,
    /// *query*.fbin|u8bin|i8bin, *.ibin), `gen:KIND:key=value,...`, or `demo` (generated,
    /// offline).
    #[arg(long, short = 'd', default_value = "demo")]
    pub dataset: String,
    /// Keep only the first N train vectors; the ground truth is recomputed for them.
    #[arg(long, value_parser = parse_count)]
    pub limit: Option<usize>,
    /// Keep only the first Q test vectors.
    #[arg(long, value_parser = parse_count)]
    pub max_queries: Option<usize>,
    /// Distance override (TEXMEX and big-ann directories carry none and default to euclidean).
    #[arg(long)]
    pub distance: Option<String>,
    /// Download cache [env: RAGDBEVAL_DATA_DIR; default: datasets/cache].
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Never download; fail if a registry dataset is not cached.
    #[arg(long)]
    pub offline: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Result files (.json) written by `bench`, or directories of them (every `*.json`
    /// result directly inside).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// table, json, csv, markdown, or ranking (each engine's fastest measured setting at
    /// recall 0.90/0.95/0.99, per dataset, as Markdown); for one file or stdout.
    #[arg(long, short = 'f', default_value = "table")]
    pub format: String,
    /// A directory (`report/`, or any path without an extension): write the whole report
    /// there (index.html, plots/*.svg, results.csv, report.md). A file: write `--format` to it.
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// With `--out DIR/`: also plot each figure (recall, QPS, p50, p99, build time, size)
    /// across the runs of one engine, dataset and setting, ordered by start time and engine
    /// version, each point labelled with its engine version.
    #[arg(long)]
    pub history: bool,
    /// With `--out DIR/`: the machine's price in USD per hour, for USD per million queries
    /// at each setting's measured QPS.
    #[arg(long, value_name = "USD", value_parser = parse_price)]
    pub price_per_hour: Option<f64>,
    /// With `--out DIR/`: memory's price in USD per GiB and month, for the memory the
    /// engine holds once built.
    #[arg(long, value_name = "USD", value_parser = parse_price)]
    pub ram_price: Option<f64>,
    /// With `--out DIR/`: storage's price in USD per GiB and month, for the collection's
    /// total footprint.
    #[arg(long, value_name = "USD", value_parser = parse_price)]
    pub storage_price: Option<f64>,
    /// A TOML file of prices: `per_hour`, `ram_gib_month`, `storage_gib_month` for every
    /// engine, and the same in `[engine.NAME]` for one. Options given override its top level.
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
}
