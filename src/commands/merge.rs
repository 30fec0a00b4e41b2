//! `ragdbeval merge`: one latency distribution from the interval logs of several load
//! generators (processes or machines).

use std::process::ExitCode;

use crate::metrics::latency::LatencySummary;
use crate::results::histlog;

pub fn run(args: crate::cli::MergeArgs) -> anyhow::Result<ExitCode> {
    let paths: Vec<&std::path::Path> = args.logs.iter().map(|p| p.as_path()).collect();
    let (hist, intervals) = histlog::merge(&paths)?;
    let s = LatencySummary::from_histogram(&hist);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "logs": args.logs,
                "intervals": intervals,
                "latency": s,
            }))?
        );
    } else {
        println!(
            "{} log(s), {} interval(s), {} queries",
            args.logs.len(),
            intervals,
            s.count
        );
        println!(
            "latency ms: mean {:.3}  p50 {:.3}  p90 {:.3}  p95 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3}",
            s.mean_ms, s.p50_ms, s.p90_ms, s.p95_ms, s.p99_ms, s.p999_ms, s.max_ms
        );
    }
    Ok(ExitCode::SUCCESS)
}
