//! Arguments of `ragdbeval eval` and `ragdbeval eval compare`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::parse_alpha;

const EVAL_EXAMPLES: &str = "\
Examples:
  ragdbeval eval --qrels qrels.txt --run run.trec
      TREC qrels and run: every metric at k = 1,3,5,10,20, and the means, as trec_eval
      computes them (--means trec_eval-c: as trec_eval -c).
  ragdbeval eval --qrels ground_truth.jsonl --run results.jsonl --bands --md eval.md
      RAG ground-truth JSONL (document + page ±1, rejection queries, categories) against a
      JSONL run; the interpretation bands beside Hit@5, MRR@5 and NDCG@5.
  ragdbeval eval --qrels steps.qrels --run run.trec --json eval.json --csv per-query.csv
      An ANN benchmark's run (`bench --trec-run`) against its exact truth
      (`dataset qrels`), per query and on average, as files.
  ragdbeval eval compare baseline.jsonl reranked.jsonl --qrels ground_truth.jsonl --format md
      A/B test of two runs: paired t-test, Wilcoxon, bootstrap CI, Win/Loss/Draw/Regression
      (three or more runs: every pair, p-values Holm-adjusted across the pairs).";

const EVAL_COMPARE_EXAMPLES: &str = "\
Examples:
  ragdbeval eval compare a.trec b.trec --qrels qrels.txt
      Two runs scored against the same judgments, B against A.
  ragdbeval eval compare a.json b.json --primary mrr@5 --format md --out ab.md
      Two saved `eval --json` files; the winner decided on MRR@5.
  ragdbeval eval compare bm25.trec dense.trec hybrid.trec --qrels qrels.txt
      Three runs, every pair (R2 against R1, R3 against R1, R3 against R2): per metric each
      pair's mean difference, raw and Holm-adjusted p-values (adjusted across the 3 pairs),
      and the verdict on the adjusted Wilcoxon p.";

#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = EVAL_EXAMPLES
)]
pub struct EvalArgs {
    #[command(subcommand)]
    pub command: Option<EvalCommand>,
    /// Relevance judgments: TREC qrels (`qid 0 docid grade`) or RAG ground-truth JSONL
    /// (`query_id`, `category`, `difficulty`, `is_rejection`, `gold_references`).
    #[arg(long, required = true)]
    pub qrels: Option<PathBuf>,
    /// The run: a TREC run file (`qid Q0 docid rank score tag`) or JSONL (`query_id`,
    /// ranked `results` of `{document, page?, chunk_id?, score, text?}`, `answer?`,
    /// `latency_ms?`).
    #[arg(long, required = true)]
    pub run: Option<PathBuf>,
    #[command(flatten)]
    pub scoring: ScoringArgs,
    /// Add the RAG ground-truth format's interpretation bands (e.g. Hit@5 > 0.90: excellent).
    #[arg(long)]
    pub bands: bool,
    /// Also list every query's values on the terminal.
    #[arg(long)]
    pub per_query: bool,
    /// List the ambiguous document + page matches (their count is always shown).
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// Write per-query and aggregate values as JSON (4-decimal values, NaN as null).
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write one row per query and metric value as CSV.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Write the summary as Markdown.
    #[arg(long)]
    pub md: Option<PathBuf>,
    /// Store values unrounded in --json and --csv (default: 4 decimals, stable snapshots).
    #[arg(long)]
    pub full_precision: bool,
}

/// How results are scored (shared by `eval` and `eval compare`).
#[derive(Debug, Args, Clone)]
pub struct ScoringArgs {
    /// Cut-offs for the @k metrics.
    #[arg(long, short = 'k', value_delimiter = ',', default_value = "1,3,5,10,20",
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub k: Vec<u32>,
    /// NDCG gain: `linear` (the grade, trec_eval's) or `exp` (2^grade − 1).
    #[arg(long, default_value = "linear", value_parser = ["linear", "exp"])]
    pub gain: String,
    /// A rejection query counts as rejected when no result scores at least this (default:
    /// only when the run returns nothing).
    #[arg(long, value_name = "SCORE", allow_negative_numbers = true)]
    pub reject_below: Option<f64>,
    /// Which judged queries the means average over. `trec_eval`: those the run answers,
    /// queries judged only non-relevant included (trec_eval's default); `trec_eval-c`: every
    /// judged query, those missing from the run as empty answers (trec_eval -c);
    /// `answerable`: queries with a relevant judgment, missing ones as empty answers.
    /// Default: `trec_eval` for TREC qrels, `answerable` for RAG ground-truth JSONL.
    #[arg(long, value_name = "CONVENTION", value_parser = ["trec_eval", "trec_eval-c", "answerable"])]
    pub means: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// A/B comparison of two runs over the same judged queries (B against A); with three or
    /// more, every pair, p-values Holm-adjusted across the pairs.
    #[command(after_help = EVAL_COMPARE_EXAMPLES)]
    Compare(EvalCompareArgs),
}

#[derive(Debug, Args)]
pub struct EvalCompareArgs {
    /// The runs, each a run file (needs --qrels) or a saved `eval --json` file. Two: A (the
    /// baseline) then B, differences B − A. Three or more: every pair, each later run against
    /// each earlier one, the pairs' p-values of each metric Holm-adjusted across the pairs
    /// (with several tests at α, one alone would find a false difference more often than α).
    #[arg(value_name = "RUN", num_args = 2.., required = true)]
    pub runs: Vec<PathBuf>,
    /// The judgments both runs are scored against (not needed for `eval --json` files).
    #[arg(long)]
    pub qrels: Option<PathBuf>,
    #[command(flatten)]
    pub scoring: ScoringArgs,
    /// The metric that decides the winner, of each pair with three or more runs (default:
    /// ndcg@10, else the first ndcg@k).
    #[arg(long)]
    pub primary: Option<String>,
    /// Significance level of the verdicts.
    #[arg(long, default_value_t = 0.05, value_parser = parse_alpha)]
    pub alpha: f64,
    /// Bootstrap resamples of the mean difference.
    #[arg(long, default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(100..=1_000_000))]
    pub resamples: u32,
    /// Seed of the bootstrap (the same files and seed give the same interval).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// text, md or json.
    #[arg(long, short = 'f', default_value = "text", value_parser = ["text", "md", "markdown", "json"])]
    pub format: String,
    /// Write to this file instead of stdout.
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
}
