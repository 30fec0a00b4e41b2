//! Command-line arguments. Parsing only: [`crate::commands`] turns them into work.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

mod compare;
mod eval;
use compare::COMPARE_EXAMPLES;
pub use compare::{CompareArgs, VerifyArgs, parse_pair};
pub use eval::{EvalArgs, EvalCommand, EvalCompareArgs, ScoringArgs};

const BENCH_EXAMPLES: &str = "\
Examples:
  ragdbeval bench
      Embedded default engine on a generated dataset: no network, no server.
  ragdbeval bench --db qdrant-edge --dataset sift1m --limit 100000 --set ef-sweep
      SIFT1M (downloaded on first use), first 100k vectors, ground truth recomputed,
      one build and a sweep of hnsw_ef values.
  ragdbeval bench --db exact --dataset path/to/glove-100-angular.hdf5 --max-queries 1000
  ragdbeval bench --db qdrant --url http://localhost:6334 --dataset sift1m --recreate
  ragdbeval bench --db qdrant-edge --build-param m=32 --search-param hnsw_ef=32,64,128
  ragdbeval bench --db qdrant-edge --runbook build-search --concurrency 1,2,4 --duration 10s
  ragdbeval bench --db qdrant-edge --runbook build-search --rate 200,400 --duration 20s
  ragdbeval bench --db qdrant-edge --runbook build-search --rate-sweep --slo 5ms
  ragdbeval bench --db exact --runbook datasets/runbooks/churn.toml
  ragdbeval bench --db qdrant-edge --runbook drift:clusters=8 --concurrent-writes
  ragdbeval bench --db exact --runbook expiry:rate=2000,lifetimes=1s/4s/never
      Any sequence of build, insert, update, delete and search steps; every search is
      scored against ground truth recomputed for the points live at that step.
  ragdbeval bench --db pgvector --filter label:0.01 --search-param iterative_scan=relaxed_order
      Filtered search: each query restricted to a label 1 % of the points carry; recall
      against the exact top-k of the passing points, and every answer checked against
      its filter (any violation marks the run invalid).
  ragdbeval bench --db qdrant-edge --filter int-range --filter-sweep --filter-correlation negative
      Recall and QPS from 0.1 % to 99 % selectivity, passing points far from the query.
  ragdbeval bench --db qdrant-edge --runbook build-search --trec-run run.trec
      The searches as a TREC run file too; `ragdbeval dataset qrels` writes the
      judgments it is scored against (with --search-param sweeps: run.1.trec, ...).
  ragdbeval bench --resume results/20261124T101500Z-pgvector-sift-128-euclidean.json
      Continue a run that stopped (server died, deadline, Ctrl-C) where it stopped.";

const DATASET_EXAMPLES: &str = "\
Examples:
  ragdbeval dataset list
  ragdbeval dataset download sift1m
  ragdbeval dataset info bigann-10M
      Format, element type, sizes, source and each file's URL and cache path; bigann-10M
      downloads 1.28 GB of the 1B file (an HTTP range) and rewrites its header.
  ragdbeval dataset info datasets/cache/sift-128-euclidean.hdf5
  ragdbeval dataset make --kind clustered -n 100000 --dim 128 --out data/c100k.hdf5
  ragdbeval dataset gt --dataset data/c100k.hdf5 -k 100 --out data/c100k-gt.hdf5
  ragdbeval dataset subset --dataset sift1m --limit 100000 --out data/sift100k.hdf5
  ragdbeval dataset convert --dataset sift1m --limit 100000 --to fbin --out data/sift100k
      A big-ann-benchmarks directory: base.fbin, query.fbin, gt.ibin (ids and distances).
  ragdbeval dataset convert --dataset data/bigann-10M --max-queries 1000 --to hdf5 --out b.hdf5
      A big-ann-benchmarks directory (base.*.u8bin, query.*.u8bin, GT*.ibin) as ann-benchmarks HDF5.
  ragdbeval dataset gt --dataset sift1m --runbook default -k 100
  ragdbeval dataset qrels --dataset sift1m -k 10 --out sift-k10.qrels
      The 10 true nearest neighbours of each query as TREC qrels, to score a
      `bench --runbook build-search --trec-run` file with `ragdbeval eval` or trec_eval.
  ragdbeval dataset qrels --dataset sift1m --runbook default --out steps.qrels
      The truth of each search step of the default runbook: steps.1.qrels, ...";

const CONVERT_EXAMPLES: &str = "\
Examples:
  ragdbeval dataset convert --dataset sift1m --limit 100000 --to fbin --out data/sift100k
      data/sift100k/base.fbin, query.fbin and gt.ibin (ids and distances, recomputed for
      the 100k kept vectors), the big-ann-benchmarks layout.
  ragdbeval dataset convert --dataset data/sift100k --to u8bin --out data/sift100k-u8
      SIFT's components are integers in 0..=255: the same vectors as uint8.
  ragdbeval dataset convert --dataset data/bigann-10M --max-queries 1000 --to hdf5 --out b.hdf5
  ragdbeval dataset convert --dataset glove-100 --to vdbbench --out data/glove_vdb
      A VectorDBBench directory: train.parquet, test.parquet, neighbors.parquet (no metric
      stored: load it with --distance angular, as convert says).";

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
}

const REPORT_EXAMPLES: &str = "\
Examples:
  ragdbeval report results/*.json --out report/
      index.html (open it from disk), plots/*.svg, results.csv and report.md.
  ragdbeval report results/run.json
      One run as a table on the terminal.
  ragdbeval report results/*.json --format csv --out all.csv";

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

/// Output shape on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum QueryMode {
    /// One engine call per query, each timed.
    Single,
    /// All queries in one batch call (where the engine has a batch API).
    Batch,
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
pub struct BenchArgs {
    /// Engine to benchmark (see `ragdbeval engines`).
    #[arg(long = "db", default_value = "qdrant-edge")]
    pub engine: String,
    #[command(flatten)]
    pub source: DatasetSource,
    /// Named parameter set from the engine's config.toml (`ragdbeval engines` lists them).
    #[arg(long = "set", default_value = "default")]
    pub param_set: String,
    /// Steps to run: `default` (build 90 %, search, insert 10 %, search, update 5 %, search,
    /// delete 5 %, search), `build-search` (build everything, search), a runbook TOML file
    /// (see datasets/runbooks/), a big-ann-benchmarks streaming runbook (FILE.yaml, or
    /// FILE.yaml#ENTRY for one of its datasets), or a generated one: `drift[:clusters=8]`
    /// (data arrives k-means cluster by cluster), `sliding-window[:window=20%,slide=10%]`,
    /// `expiry[:rate=2000,lifetimes=1s/4s/never,build=20%,batch=10]` (every point deleted a
    /// fixed time after its insert, searched while it runs).
    #[arg(long, default_value = "default")]
    pub runbook: String,
    /// Run every insert, update and delete step of the runbook as a stream step: searched by
    /// two closed-loop threads while it writes (calls of 100 points, as fast as possible),
    /// each search scored exactly for its interval.
    #[arg(long)]
    pub concurrent_writes: bool,
    /// Override or add a build parameter: NAME=VALUE, or NAME=V1,V2 to sweep. Repeatable.
    #[arg(long = "build-param", value_name = "NAME=VALUE")]
    pub build_params: Vec<String>,
    /// Override or add a search parameter: NAME=VALUE, or NAME=V1,V2 to sweep (one recall/QPS
    /// point each; the run carries the Pareto frontier). Repeatable. Alias: --search-sweep.
    #[arg(
        long = "search-param",
        alias = "search-sweep",
        value_name = "NAME=VALUE"
    )]
    pub search_params: Vec<String>,
    /// Number of results requested per query (the K of recall@K).
    #[arg(short = 'k', long, default_value_t = 10)]
    pub k: usize,
    /// True neighbours regarded as relevant for recall, NDCG, MAP (default: k).
    #[arg(long)]
    pub relevant: Option<usize>,
    /// Timed trials of every search measurement: with N > 1 the result also holds each
    /// trial's QPS and percentiles, their medians with a 95 % bootstrap interval, and their
    /// coefficient of variation (over 10 % is a warning). The index is built once.
    #[arg(long, default_value_t = 1, value_parser = parse_repeat)]
    pub repeat: usize,
    /// With --repeat N: every trial rebuilds the index (the build and the whole runbook run N
    /// times), so the trials also cover the build's randomness; build times are kept per trial.
    #[arg(long)]
    pub repeat_build: bool,
    /// Untimed queries before each timed loop.
    #[arg(long, default_value_t = 100, value_parser = parse_warmup)]
    pub warmup: usize,
    /// `single`: one timed call per query; `batch`: one call for all queries.
    #[arg(long, value_enum, default_value_t = QueryMode::Single)]
    pub mode: QueryMode,
    /// Closed-loop load after each search measurement: client counts, e.g. 1,2,4,8.
    #[arg(long, value_delimiter = ',', value_name = "N,...", value_parser = parse_count)]
    pub concurrency: Vec<usize>,
    /// Open-loop load at fixed rates (queries/s), e.g. 500 or 100,200,400. Latency counts from
    /// each query's intended send time, so queueing is never hidden.
    #[arg(long, value_delimiter = ',', value_name = "QPS,...", value_parser = parse_rate)]
    pub rate: Vec<f64>,
    /// Find the highest rate whose p99 stays under --slo.
    #[arg(long)]
    pub rate_sweep: bool,
    /// Latency objective for --rate-sweep (e.g. 10ms).
    #[arg(long, default_value = "10ms", value_parser = parse_duration)]
    pub slo: std::time::Duration,
    /// Time per load level (e.g. 30s, 500ms, 2m).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub duration: std::time::Duration,
    /// Open-loop senders (queries in flight at most).
    #[arg(long, default_value_t = 16, value_parser = parse_count)]
    pub workers: usize,
    /// Write every load level's per-second latency histograms as HdrHistogram interval logs
    /// next to the result (for `ragdbeval merge`).
    #[arg(long)]
    pub histogram_logs: bool,
    /// How long a sampled write is polled until search sees it (read-after-write).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub visibility_timeout: std::time::Duration,
    /// Search with a filter; repeat for a conjunction. `label:0.01`: a keyword attribute,
    /// each query's label matching 1 % of the points; `int-range:0.1`: an integer attribute,
    /// each query's range passing 10 %; `tenant:1000`: 1000 tenants, each query in one; the
    /// kind alone with --filter-sweep; `FIELD=VALUE` or `FIELD=LO..HI` (HI excluded) on
    /// attributes from --attributes.
    #[arg(long = "filter", value_name = "FILTER")]
    pub filters: Vec<String>,
    /// Measure every selectivity of the grid 0.1 %, 0.2 %, 0.5 %, 1 %, 2 %, 5 %, 10 %, 20 %,
    /// 50 %, 99 % (one search per level) for the one --filter kind given without a value;
    /// `--filter-sweep=0.01,0.1,0.5` measures the levels given instead.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "FRACTIONS")]
    pub filter_sweep: Option<String>,
    /// Whether the points that pass a query's filter are its near neighbours (`positive`),
    /// far ones (`negative`) or neither (`none`).
    #[arg(long, default_value = "none", value_name = "none|positive|negative")]
    pub filter_correlation: String,
    /// Seed of the generated attributes and predicates.
    #[arg(long, default_value_t = 42)]
    pub filter_seed: u64,
    /// Point attributes from a JSONL file (one object per line, `id` (train row) and one
    /// member per attribute; strings: keywords, integers: ranges) or a Parquet file with the
    /// same columns (e.g. VectorDBBench's scalar_labels.parquet). Use with
    /// `--filter FIELD=VALUE` or `--filter FIELD=LO..HI`.
    #[arg(long, value_name = "FILE.jsonl|FILE.parquet")]
    pub attributes: Option<PathBuf>,
    /// Points per insert request.
    #[arg(long, default_value_t = 1000, value_parser = parse_count)]
    pub batch_size: usize,
    /// Concurrent insert requests (server engines).
    #[arg(long, default_value_t = 1, value_parser = parse_count)]
    pub upload_parallel: usize,
    /// Server URL (server engines). A password in it is never written anywhere (results,
    /// reports and messages show `user:***@`); without one, pgvector reads PGPASSWORD and
    /// redis REDISCLI_AUTH.
    #[arg(long)]
    pub url: Option<String>,
    /// Name of the environment variable holding the API key (never written anywhere); for
    /// pgvector and redis, the password.
    #[arg(long, value_name = "NAME")]
    pub api_key_env: Option<String>,
    /// Drop an existing collection of the same name.
    #[arg(long)]
    pub recreate: bool,
    /// PID of a local engine server, to sample its RSS and CPU.
    #[arg(long)]
    pub server_pid: Option<u32>,
    /// Storage directory of a local engine server, to measure its index size.
    #[arg(long)]
    pub server_storage: Option<PathBuf>,
    /// Request timeout for server engines, in seconds.
    #[arg(long, default_value_t = 120, value_parser = parse_timeout_s)]
    pub timeout: u64,
    /// Directory for result files.
    #[arg(long, short = 'o', default_value = "results")]
    pub out: PathBuf,
    /// Result file name (without extension); default: TIME-ENGINE-DATASET.
    #[arg(long, value_parser = parse_result_name)]
    pub name: Option<String>,
    /// Continue a run that failed, was interrupted or was killed, from its first unfinished
    /// step, with the settings of its command line (run it from the same directory). Only
    /// `--url` and `--timeout` (a server restarted elsewhere), `--api-key-env`, `-q` and
    /// `--json` may be given with it. A password the run's URL held is not in the result:
    /// give it again (`--url` with it, PGPASSWORD / REDISCLI_AUTH, or `--api-key-env`).
    #[arg(long, value_name = "RESULT.json")]
    pub resume: Option<PathBuf>,
    /// Do not write the per-query sidecar.
    #[arg(long)]
    pub no_sidecar: bool,
    /// Also write the searches as a TREC run file (`qid Q0 docid rank score tag`), to score
    /// with `ragdbeval eval` or trec_eval against `ragdbeval dataset qrels` (given the same
    /// --runbook unless it is build-search). qid: the query's 0-based index in the test set;
    /// docid: the point id; score: the negated distance, nudged where needed so that sorting
    /// by score gives the engine's order exactly; tag: ENGINE:BUILD:SEARCH parameters. A run
    /// of several search measurements (sweeps, runbook steps, build configurations, filter
    /// levels) writes one file each, numbered as `report` lists them: run.trec → run.1.trec,
    /// run.2.trec, ... Made from the sidecar.
    #[arg(long, value_name = "FILE", conflicts_with = "no_sidecar")]
    pub trec_run: Option<PathBuf>,
    /// Parent directory for in-process engines' files (default: the system temp dir).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Keep the engine's files after the run.
    #[arg(long)]
    pub keep_work_dir: bool,
    /// Ground-truth depth to compute when the dataset has none.
    #[arg(long, default_value_t = 100)]
    pub gt_k: usize,
    /// Resource sampling interval in milliseconds.
    #[arg(long, default_value_t = 100)]
    pub sample_ms: u64,
    /// No progress bars or step lines; the summary table still prints.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Print the result document as JSON on stdout instead of the table (implies --quiet).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum DatasetCommand {
    /// Known datasets with dimension, size, distance and whether they are cached.
    List {
        #[arg(long)]
        data_dir: Option<PathBuf>,
    },
    /// Layout, counts, distance and ground-truth depth of a file, directory or name, and the
    /// distribution of its queries' difficulty (relative contrast and local intrinsic
    /// dimensionality at k, as VIBE computes them).
    Info {
        /// File, TEXMEX or big-ann-benchmarks directory, registry name or gen: spec.
        target: String,
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// Neighbours the difficulty figures look at (VIBE reports k = 10).
        #[arg(short = 'k', long, default_value_t = 10, value_parser = parse_count)]
        k: usize,
    },
    /// Download a registry dataset into the cache (resumes a partial download).
    Download {
        name: String,
        #[arg(long)]
        data_dir: Option<PathBuf>,
        #[arg(long, short = 'q')]
        quiet: bool,
    },
    /// Write a synthetic dataset with exact ground truth in the ann-benchmarks layout.
    Make(MakeArgs),
    /// Compute exact top-k ground truth for a dataset and write it with its vectors.
    Gt(GtArgs),
    /// Keep the first N train vectors and recompute the ground truth.
    Subset(SubsetArgs),
    /// Write any dataset (after --limit / --max-queries) as a big-ann-benchmarks directory
    /// (base.<ext>, query.<ext>, gt.ibin) or an ann-benchmarks HDF5 file.
    #[command(after_help = CONVERT_EXAMPLES)]
    Convert(ConvertArgs),
    /// Write the exact ground truth as TREC qrels (`qid 0 docid 1`: each query's k true
    /// nearest neighbours), with the qid and docid of `bench --trec-run`.
    Qrels(QrelsArgs),
}

#[derive(Debug, Args)]
pub struct QrelsArgs {
    #[command(flatten)]
    pub source: DatasetSource,
    /// True neighbours per query judged relevant (bench's --relevant, which defaults to -k;
    /// at most 1000).
    #[arg(short = 'k', long, default_value_t = 10, value_parser = parse_count)]
    pub k: usize,
    /// The truth of every search step of this runbook (`default`, `build-search` or a TOML
    /// file), as `bench` scores them, one qrels file per search step numbered like
    /// `--trec-run` files (q.qrels → q.1.qrels, ...; one search step: the file itself).
    /// Without it: the whole dataset's truth (what `--runbook build-search` searches).
    #[arg(long)]
    pub runbook: Option<String>,
    /// Output qrels file (written atomically).
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct MakeArgs {
    /// `uniform` or `clustered` (Gaussian blobs).
    #[arg(long, default_value = "clustered")]
    pub kind: String,
    /// Train vectors.
    #[arg(short = 'n', long, default_value_t = 100_000)]
    pub n: usize,
    #[arg(long, default_value_t = 128)]
    pub dim: usize,
    /// Test (query) vectors.
    #[arg(long, default_value_t = 1000)]
    pub queries: usize,
    /// euclidean, angular or dot.
    #[arg(long, default_value = "euclidean")]
    pub distance: String,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Number of clusters (clustered kind).
    #[arg(long, default_value_t = 32)]
    pub clusters: usize,
    /// Ground-truth depth.
    #[arg(short = 'k', long, default_value_t = 100)]
    pub k: usize,
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct GtArgs {
    #[command(flatten)]
    pub source: DatasetSource,
    /// Precompute and cache the ground truth of every search step of this runbook (`default`,
    /// `build-search` or a TOML file) instead of writing a dataset file.
    #[arg(long)]
    pub runbook: Option<String>,
    /// Ground-truth depth (at most 1000).
    #[arg(short = 'k', long, default_value_t = 100)]
    pub k: usize,
    /// With --runbook: also the filtered truth of these filters, as `bench --filter` makes
    /// them (same options, same cache), timed on its own.
    #[arg(long = "filter", value_name = "FILTER", requires = "runbook")]
    pub filters: Vec<String>,
    /// See `bench --filter-sweep`.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "", value_name = "FRACTIONS", requires = "runbook")]
    pub filter_sweep: Option<String>,
    /// See `bench --filter-correlation`.
    #[arg(long, default_value = "none", value_name = "none|positive|negative")]
    pub filter_correlation: String,
    /// See `bench --filter-seed`.
    #[arg(long, default_value_t = 42)]
    pub filter_seed: u64,
    /// See `bench --attributes`.
    #[arg(long, value_name = "FILE.jsonl|FILE.parquet")]
    pub attributes: Option<PathBuf>,
    /// Output HDF5 file (train, test and the new neighbors/distances); required without
    /// --runbook.
    #[arg(long, short = 'o', required_unless_present = "runbook")]
    pub out: Option<PathBuf>,
    /// Write the output's vectors first and compute the truth after, so that the time
    /// printed is the truth's alone (for holding it against a bare matrix product). By
    /// default the vectors are written while the truth is computed: the command ends sooner,
    /// but the writing shares the cores with the truth (1-3 % of its time at 200k × 128 on
    /// two cores).
    #[arg(long, conflicts_with = "runbook")]
    pub write_first: bool,
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct SubsetArgs {
    #[command(flatten)]
    pub source: DatasetSource,
    /// Ground-truth depth to compute for the subset.
    #[arg(short = 'k', long, default_value_t = 100)]
    pub k: usize,
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

/// The layouts `dataset convert` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ConvertFormat {
    /// big-ann-benchmarks directory of float32 vectors.
    Fbin,
    /// big-ann-benchmarks directory of uint8 vectors (every component an integer in 0..=255).
    U8bin,
    /// big-ann-benchmarks directory of int8 vectors (every component an integer in -128..=127).
    I8bin,
    /// ann-benchmarks HDF5 file (train, test, neighbors, distances, attribute distance).
    Hdf5,
    /// VectorDBBench directory (train.parquet, test.parquet, neighbors.parquet; no metric).
    Vdbbench,
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    #[command(flatten)]
    pub source: DatasetSource,
    /// Output layout. fbin, u8bin and i8bin write a directory holding base.<ext>, query.<ext>
    /// and gt.ibin; u8bin and i8bin refuse (writing nothing) vectors whose components are not
    /// integers in the type's range.
    #[arg(long, value_enum)]
    pub to: ConvertFormat,
    /// Ground-truth depth when it is computed (the source has none, or --limit drops it).
    #[arg(short = 'k', long, default_value_t = 100)]
    pub k: usize,
    /// Output: a new directory for fbin/u8bin/i8bin/vdbbench (or an empty one), a file for
    /// hdf5.
    /// Written under a temporary name and renamed, so a failure leaves nothing.
    #[arg(long, short = 'o')]
    pub out: PathBuf,
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Result files (.json) written by `bench`.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// table, json, csv or markdown (for one file or stdout).
    #[arg(long, short = 'f', default_value = "table")]
    pub format: String,
    /// A directory (`report/`, or any path without an extension): write the whole report
    /// there (index.html, plots/*.svg, results.csv, report.md). A file: write `--format` to it.
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
}
