//! How `ragdbeval eval compare` prints: aligned text for the terminal, and Markdown in the
//! shape of the RAG A/B report format (Summary with the winner, the metrics table with p-values,
//! the per-category breakdown). JSON is the [`EvalComparison`] itself.

use std::fmt::Write as _;

use super::compare::{METRIC_HEADER, aligned, md_table, metric_row, num, p_value};
use crate::results::compare::{MetricComparison, OutcomeCounts};
use crate::results::eval_compare::{EvalComparison, Winner};

fn winner_line(c: &EvalComparison) -> String {
    let primary = c.metrics.iter().find(|m| m.metric == c.primary);
    let evidence = primary.map_or_else(String::new, |m| {
        let ci = m.ci95.map_or_else(String::new, |(lo, hi)| {
            format!(", 95 % CI of B − A [{}, {}]", num(lo), num(hi))
        });
        format!(
            " (on {}: B − A = {}, Wilcoxon p = {}{ci})",
            m.metric,
            num(m.delta),
            p_value(m.wilcoxon_p)
        )
    });
    let who = match c.winner {
        Winner::A => format!("A ({})", c.a),
        Winner::B => format!("B ({})", c.b),
        Winner::NoSignificantDifference => "none: no significant difference".into(),
    };
    format!("{who}{evidence}")
}

fn outcomes(o: &OutcomeCounts) -> String {
    format!(
        "{} win, {} loss, {} draw, {} regression",
        o.win, o.loss, o.draw, o.regression
    )
}

fn summary(c: &EvalComparison) -> Vec<String> {
    let mut lines = vec![
        format!("A: {}", c.a),
        format!("B: {}", c.b),
        format!("Winner: {}", winner_line(c)),
        format!(
            "Confidence: verdicts by the Wilcoxon signed-rank test at α = {}; intervals: \
             bootstrap of the mean difference, {} resamples, seed {}",
            c.alpha, c.bootstrap_resamples, c.bootstrap_seed
        ),
        format!(
            "Per query (B against A, {} queries): {}",
            c.queries,
            outcomes(&c.outcomes)
        ),
    ];
    for (side, missing) in [("A", &c.only_in_a), ("B", &c.only_in_b)] {
        if !missing.is_empty() {
            let shown: Vec<&str> = missing.iter().take(5).map(String::as_str).collect();
            lines.push(format!(
                "WARNING: {} queries only in {side} (not compared): {}{}",
                missing.len(),
                shown.join(", "),
                if missing.len() > 5 { ", …" } else { "" }
            ));
        }
    }
    lines
}

/// The metrics table with the A/B report's significance stars on the Wilcoxon p-value.
fn metric_rows(metrics: &[MetricComparison]) -> Vec<Vec<String>> {
    metrics
        .iter()
        .map(|m| {
            let mut row = metric_row(m);
            let stars = match m.wilcoxon_p {
                Some(p) if p < 0.01 => "**",
                Some(p) if p < 0.05 => "*",
                _ => "",
            };
            row[6].push_str(stars);
            row
        })
        .collect()
}

fn category_table(c: &EvalComparison) -> (Vec<String>, Vec<Vec<String>>) {
    let mut head = vec!["category".to_string(), "queries".to_string()];
    for m in &c.metrics {
        head.push(format!("{} A → B", m.metric));
    }
    head.push("win/loss/draw/regr.".into());
    let rows = c
        .categories
        .iter()
        .map(|cat| {
            let mut row = vec![cat.category.clone(), cat.queries.to_string()];
            for (a, b) in &cat.means {
                row.push(format!("{} → {} ({:+.4})", num(*a), num(*b), b - a));
            }
            let o = &cat.outcomes;
            row.push(format!("{}/{}/{}/{}", o.win, o.loss, o.draw, o.regression));
            row
        })
        .collect();
    (head, rows)
}

/// For the terminal.
pub fn text(c: &EvalComparison) -> String {
    let mut out = summary(c).join("\n") + "\n\n";
    aligned(&mut out, &METRIC_HEADER, &metric_rows(&c.metrics));
    if !c.categories.is_empty() {
        let (head, rows) = category_table(c);
        let head: Vec<&str> = head.iter().map(String::as_str).collect();
        let _ = writeln!(out, "\nper category:");
        aligned(&mut out, &head, &rows);
    }
    out
}

/// The A/B report: Summary, Metrics Comparison, Per-Category Breakdown.
pub fn markdown(c: &EvalComparison) -> String {
    let mut out = format!("# A/B Test Report: {} vs {}\n\n## Summary\n\n", c.a, c.b);
    for line in summary(c) {
        match line.split_once(": ") {
            Some((key, rest)) if !key.contains(' ') || key.starts_with("Per query") => {
                let _ = writeln!(out, "- **{key}**: {rest}");
            }
            _ => {
                let _ = writeln!(out, "- {line}");
            }
        }
    }
    let _ = writeln!(
        out,
        "\n## Metrics Comparison\n\nDifferences are B − A; `*` p < 0.05, `**` p < 0.01 \
         (Wilcoxon signed-rank).\n"
    );
    md_table(&mut out, &METRIC_HEADER, &metric_rows(&c.metrics));
    if !c.categories.is_empty() {
        let _ = writeln!(out, "\n## Per-Category Breakdown\n");
        let (head, rows) = category_table(c);
        let head: Vec<&str> = head.iter().map(String::as_str).collect();
        md_table(&mut out, &head, &rows);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::eval_compare::{
        EvalCompareOptions, RunValues, compare_runs, one_metric_run,
    };

    fn run(label: &str, shift: f64) -> RunValues {
        let category = |i: usize| Some(["ml", "finance"][i % 2].to_string());
        one_metric_run(
            label,
            "hit@5",
            40,
            |i| 0.4 + 0.01 * (i % 7) as f64 + shift,
            category,
        )
    }

    #[test]
    fn the_markdown_report_has_the_seeds_shape() {
        let options = EvalCompareOptions {
            alpha: 0.05,
            resamples: 1000,
            seed: 1,
            primary: None,
        };
        let c = compare_runs(&run("baseline", 0.0), &run("reranked", 0.2), &options).unwrap();
        let md = markdown(&c);
        for needle in [
            "# A/B Test Report: baseline vs reranked",
            "## Summary",
            "- **Winner**: B (reranked) (on hit@5: B − A = 0.2000",
            "## Metrics Comparison",
            "| hit@5 |",
            "**",
            "## Per-Category Breakdown",
            "| finance | 20 |",
        ] {
            assert!(md.contains(needle), "{needle}\n{md}");
        }
        let text = text(&c);
        assert!(text.contains("Winner: B (reranked)"), "{text}");
    }
}
