//! How `ragdbeval eval compare` prints three or more runs: the runs as R1, R2, … (so tables
//! stay narrow whatever the file names), the pairs with their outcomes and winner, then one
//! table per metric with each pair's raw and Holm-adjusted p-values; aligned text for the
//! terminal, or Markdown. JSON is the [`PairwiseComparison`] itself, with the full labels.

use std::fmt::Write as _;

use super::compare::{aligned, md_table, num, p_value};
use crate::results::eval_compare::Winner;
use crate::results::eval_pairwise::{PairMetric, PairwiseComparison, PairwiseMetric};

const PAIR_HEADER: [&str; 5] = ["A", "B", "queries", "win/loss/draw/regr.", "winner"];

const METRIC_HEADER: [&str; 12] = [
    "A",
    "B",
    "mean A",
    "mean B",
    "B − A",
    "95% CI",
    "d_z",
    "t-test p",
    "t-test p (Holm)",
    "Wilcoxon p",
    "Wilcoxon p (Holm)",
    "verdict",
];

/// A run's short name: R and its 1-based position on the command line.
fn short_name(position: usize) -> String {
    format!("R{}", position + 1)
}

/// The sentence every output carries: what was adjusted, across how many pairs.
fn adjustment_line(c: &PairwiseComparison) -> String {
    format!(
        "verdicts by the Wilcoxon signed-rank test at α = {} on p-values Holm-adjusted across \
         {} pairs (per metric, the t-test's and the Wilcoxon test's p-values each one family); \
         intervals: bootstrap of the mean difference, {} resamples, seed {}",
        c.alpha, c.pair_count, c.bootstrap_resamples, c.bootstrap_seed
    )
}

fn summary(c: &PairwiseComparison) -> Vec<String> {
    let mut lines: Vec<String> = c
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| format!("R{}: {r}", i + 1))
        .collect();
    lines.push(format!(
        "Pairs: {}, each B against A (differences B − A)",
        c.pair_count
    ));
    lines.push(format!("Confidence: {}", adjustment_line(c)));
    for p in &c.pairs {
        for (side, missing) in [("A", &p.only_in_a), ("B", &p.only_in_b)] {
            if !missing.is_empty() {
                let shown: Vec<&str> = missing.iter().take(5).map(String::as_str).collect();
                lines.push(format!(
                    "WARNING: {} against {}: {} queries only in {side} (not compared): {}{}",
                    short_name(p.positions.0),
                    short_name(p.positions.1),
                    missing.len(),
                    shown.join(", "),
                    if missing.len() > 5 { ", …" } else { "" }
                ));
            }
        }
    }
    lines
}

fn pair_rows(c: &PairwiseComparison) -> Vec<Vec<String>> {
    c.pairs
        .iter()
        .map(|p| {
            let o = &p.outcomes;
            let winner = match p.winner {
                Winner::A => short_name(p.positions.0),
                Winner::B => short_name(p.positions.1),
                Winner::NoSignificantDifference => "none".into(),
            };
            vec![
                short_name(p.positions.0),
                short_name(p.positions.1),
                p.queries.to_string(),
                format!("{}/{}/{}/{}", o.win, o.loss, o.draw, o.regression),
                winner,
            ]
        })
        .collect()
}

fn metric_row(p: &PairMetric) -> Vec<String> {
    vec![
        short_name(p.positions.0),
        short_name(p.positions.1),
        num(p.mean_a),
        num(p.mean_b),
        num(p.delta),
        p.ci95.map_or_else(
            || "–".into(),
            |(lo, hi)| format!("[{}, {}]", num(lo), num(hi)),
        ),
        p.effect_size.map_or_else(|| "–".into(), num),
        p_value(p.t_p),
        p_value(p.t_p_holm),
        p_value(p.wilcoxon_p),
        p_value(p.wilcoxon_p_holm),
        p.verdict.to_string(),
    ]
}

/// A metric's heading: its name, and whether it decides the winners.
fn metric_title(c: &PairwiseComparison, m: &PairwiseMetric) -> String {
    let primary = if m.metric == c.primary {
        " (primary)"
    } else {
        ""
    };
    format!(
        "{}{primary}: p-values Holm-adjusted across {} pairs",
        m.metric, c.pair_count
    )
}

/// For the terminal.
pub fn text(c: &PairwiseComparison) -> String {
    let mut out = summary(c).join("\n") + "\n";
    let _ = writeln!(
        out,
        "\npairs (winner on {} by the Holm-adjusted Wilcoxon p):",
        c.primary
    );
    aligned(&mut out, &PAIR_HEADER, &pair_rows(c));
    for m in &c.metrics {
        let _ = writeln!(out, "\n{}", metric_title(c, m));
        let rows: Vec<_> = m.pairs.iter().map(metric_row).collect();
        aligned(&mut out, &METRIC_HEADER, &rows);
    }
    out
}

/// The report: Summary, Pairs, then one table per metric.
pub fn markdown(c: &PairwiseComparison) -> String {
    let mut out = format!(
        "# Pairwise Comparison Report: {} runs\n\n## Summary\n\n",
        c.runs.len()
    );
    for line in summary(c) {
        match line.split_once(": ") {
            Some((key, rest)) if !key.contains(' ') => {
                let _ = writeln!(out, "- **{key}**: {rest}");
            }
            _ => {
                let _ = writeln!(out, "- {line}");
            }
        }
    }
    let _ = writeln!(
        out,
        "\n## Pairs\n\nWinner on {} by the Holm-adjusted Wilcoxon p.\n",
        c.primary
    );
    md_table(&mut out, &PAIR_HEADER, &pair_rows(c));
    let _ = writeln!(
        out,
        "\n## Metrics Comparison\n\nDifferences are B − A; p-values Holm-adjusted across {} \
         pairs; the verdict on the adjusted Wilcoxon p.",
        c.pair_count
    );
    for m in &c.metrics {
        let _ = writeln!(out, "\n### {}\n", metric_title(c, m));
        let rows: Vec<_> = m.pairs.iter().map(metric_row).collect();
        md_table(&mut out, &METRIC_HEADER, &rows);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::eval_compare::{EvalCompareOptions, RunValues, one_metric_run};
    use crate::results::eval_pairwise::compare_pairwise;

    fn run(label: &str, shift: f64) -> RunValues {
        one_metric_run(
            label,
            "hit@5",
            40,
            |i| 0.4 + 0.01 * (i % 7) as f64 + shift,
            |_| None,
        )
    }

    #[test]
    fn every_format_names_the_runs_and_the_adjustment() {
        let options = EvalCompareOptions {
            alpha: 0.05,
            resamples: 200,
            seed: 1,
            primary: None,
        };
        let runs = [run("base", 0.0), run("rerank", 0.2), run("hybrid", 0.2)];
        let c = compare_pairwise(&runs, &options).unwrap();
        let text = text(&c);
        for needle in [
            "R1: base",
            "R3: hybrid",
            "Holm-adjusted across 3 pairs",
            "hit@5 (primary): p-values Holm-adjusted across 3 pairs",
            "Wilcoxon p (Holm)",
        ] {
            assert!(text.contains(needle), "{needle}\n{text}");
        }
        let md = markdown(&c);
        for needle in [
            "# Pairwise Comparison Report: 3 runs",
            "- **R2**: rerank",
            "| R1 | R2 | 40 |",
            "### hit@5 (primary): p-values Holm-adjusted across 3 pairs",
        ] {
            assert!(md.contains(needle), "{needle}\n{md}");
        }
    }
}
