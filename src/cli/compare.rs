//! Arguments of `ragdbeval compare` and `ragdbeval verify`.

use std::path::PathBuf;

use clap::Args;

use super::parse_alpha;

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Result file (.json) with its per-query sidecar beside it.
    pub file: PathBuf,
    /// The dataset, when the result's own source (a relative path, say) does not reach it
    /// from here; its SHA-256 must match the result's.
    #[arg(long)]
    pub dataset: Option<String>,
    /// Dataset cache directory (default: $RAGDBEVAL_DATA_DIR or datasets/cache).
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Never download.
    #[arg(long)]
    pub offline: bool,
}

pub(super) const COMPARE_EXAMPLES: &str = "\
Examples:
  ragdbeval compare results/A.json results/B.json
      The i-th search step of A against the i-th of B (B − A, α = 0.05).
  ragdbeval compare A.json B.json --pair 2:1 --format md --out compare.md
      Search step 2 of A against step 1 of B, as Markdown.
  ragdbeval compare base.json new.json --fail-on 'recall<-0.005,qps<-5%,p99>+10%'
      A regression gate: one line per rule and step, exit 1 when a rule fails
      (a change beyond its bound that is also significant; docs/ci.md).";

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline run (result .json with its per-query sidecar).
    pub a: PathBuf,
    /// The run compared with it; differences are B − A.
    pub b: PathBuf,
    /// Search steps to compare, `I:J` (1-based among each run's search steps, in the order
    /// `report` lists them); repeatable. Default: the i-th of A with the i-th of B.
    #[arg(long = "pair", value_parser = parse_pair)]
    pub pairs: Vec<(usize, usize)>,
    /// Significance level of the verdicts.
    #[arg(long, default_value_t = 0.05, value_parser = parse_alpha)]
    pub alpha: f64,
    /// text, md, json or html.
    #[arg(long, short = 'f', default_value = "text")]
    pub format: String,
    /// Write to this file instead of stdout.
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// Regression gate: rules METRIC<CHANGE or METRIC>CHANGE, comma-separated, on recall,
    /// ndcg, mrr, latency (mean), qps, p50, p95, p99, p999; CHANGE is B − A, or with `%` a
    /// share of A. Prints one line per rule and step pair and exits 1 when one fails.
    #[arg(long, value_name = "RULES", value_parser = parse_rules)]
    pub fail_on: Option<GateRules>,
    /// Shorthand for `--format json`.
    #[arg(long)]
    pub json: bool,
}

/// The rules of `--fail-on`.
#[derive(Debug, Clone)]
pub struct GateRules(pub Vec<crate::results::gate::Rule>);

fn parse_rules(text: &str) -> Result<GateRules, String> {
    crate::results::gate::parse_rules(text).map(GateRules)
}

/// `I:J`, both at least 1.
pub fn parse_pair(text: &str) -> Result<(usize, usize), String> {
    let (i, j) = text
        .split_once(':')
        .ok_or_else(|| format!("`{text}` is not I:J (e.g. 1:1)"))?;
    let parse = |v: &str| -> Result<usize, String> {
        match v.trim().parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(format!("`{text}`: step numbers start at 1")),
        }
    };
    Ok((parse(i)?, parse(j)?))
}
