//! Arguments of `ragdbeval bench`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::{
    DatasetSource, parse_count, parse_duration, parse_rate, parse_repeat, parse_result_name,
    parse_timeout_s, parse_warmup,
};

pub(super) const BENCH_EXAMPLES: &str = "\
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
  ragdbeval bench --db qdrant-edge --dataset data/scifact-minilm --set ef-sweep
      A text dataset `ragdbeval embed` wrote: its qrels.txt judgments score each step on
      the retrieval task too (task NDCG@10 next to the exact top-K's, beside recall).
  ragdbeval bench --db bm25 --retrieval sparse --dataset datasets/cache/manpages/embedded
      BM25 (tantivy) on a text dataset: recall against the exact BM25 top-k, NDCG@10
      against its judgments.
  ragdbeval bench --db qdrant-edge --retrieval hybrid --search-param rrf_k=10,60,100 --dataset D
      Dense + sparse fused by RRF in the client, one setting per RRF k; each scored against
      the same fusion of the exact dense and exact sparse lists.
  ragdbeval bench --resume results/20261124T101500Z-pgvector-sift-128-euclidean.json
      Continue a run that stopped (server died, deadline, Ctrl-C) where it stopped.
  ragdbeval bench --from published/qdrant-edge-sift1m.json --name mine
      Repeat a published run here (same dataset, checked by its SHA-256), then
      `ragdbeval compare published/qdrant-edge-sift1m.json results/mine.json`.";

/// What the searches of a run retrieve with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Retrieval {
    /// The dataset's dense vectors.
    Dense,
    /// Its sparse vectors (or texts, for an engine that analyses text itself).
    Sparse,
    /// Both, fused (RRF or a convex combination; in the client, or in the engine).
    Hybrid,
}

/// Output shape on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum QueryMode {
    /// One engine call per query, each timed.
    Single,
    /// All queries in one batch call (where the engine has a batch API).
    Batch,
}

/// The run `bench --from` repeats, as its result file records it.
#[derive(Debug, Clone, Default)]
pub struct Reproduces {
    /// The result file given.
    pub result: PathBuf,
    pub dataset_sha256: String,
    pub train: usize,
    pub queries: usize,
    pub engine_version: String,
    pub started_at: String,
    /// Its settings, for those that differ now to be named.
    pub settings: serde_json::Map<String, serde_json::Value>,
    /// The command line run: the recorded one, with the options given again in place of
    /// its own.
    pub command_line: Vec<String>,
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
    /// What the searches retrieve with. `sparse` and `hybrid` need a dataset with sparse
    /// vectors (`sparse/`, as `embed --sparse bm25` writes) and run build-then-search; a hybrid
    /// run fuses by `--search-param fusion=rrf|convex`, `rrf_k=60`, `alpha=0.5` (the dense
    /// weight), `depth=100` (results of each side), `fusion_in=client|engine`.
    #[arg(long, value_enum, default_value_t = Retrieval::Dense)]
    pub retrieval: Retrieval,
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
    /// Run again what a result file records, on this machine: its command line (engine,
    /// dataset, runbook, parameters, settings) into a new result. The dataset must be the
    /// same (its SHA-256 is checked); an engine version or a setting that differs is a warning
    /// in the new result. Only `--out`, `--name`, `--url`, `--timeout`, `--api-key-env`,
    /// `--data-dir`, `--offline`, `-q` and `--json` may be given with it. Then `ragdbeval
    /// compare RESULT.json NEW.json` sets the two side by side.
    #[arg(long, value_name = "RESULT.json", conflicts_with = "resume")]
    pub from: Option<PathBuf>,
    /// What `--from` repeats, read from its result file.
    #[arg(skip)]
    pub reproduces: Option<Reproduces>,
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
