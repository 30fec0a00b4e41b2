//! How `ragdbeval compare` prints: aligned text for the terminal, Markdown for an issue or a
//! README, a self-contained HTML page. JSON is the [`Comparison`] itself.

use std::fmt::Write as _;

use crate::export::html::{escape, table};
use crate::results::compare::{Comparison, MetricComparison, StepComparison};

pub(crate) const METRIC_HEADER: [&str; 9] = [
    "metric",
    "A",
    "B",
    "B − A",
    "95% CI",
    "t-test p",
    "Wilcoxon p",
    "d_z",
    "verdict",
];

pub(crate) fn num(v: f64) -> String {
    if v == 0.0 || (v.abs() >= 1e-3 && v.abs() < 1e5) {
        format!("{v:.4}")
    } else {
        format!("{v:.3e}")
    }
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), num)
}

pub(crate) fn p_value(v: Option<f64>) -> String {
    match v {
        None => "–".into(),
        // Below the normal tail's resolution in f64 (stats.rs): far below any α.
        Some(p) if p < 1e-16 => "<1e-16".into(),
        Some(p) if p < 1e-4 => format!("{p:.1e}"),
        Some(p) => format!("{p:.4}"),
    }
}

pub(crate) fn metric_row(m: &MetricComparison) -> Vec<String> {
    vec![
        m.metric.clone(),
        num(m.mean_a),
        num(m.mean_b),
        num(m.delta),
        m.ci95.map_or_else(
            || "–".into(),
            |(lo, hi)| format!("[{}, {}]", num(lo), num(hi)),
        ),
        p_value(m.t_p),
        p_value(m.wilcoxon_p),
        opt(m.effect_size),
        m.verdict.to_string(),
    ]
}

fn pair_title(p: &StepComparison) -> String {
    let side = |s: &crate::results::compare::StepLabel| {
        format!(
            "search {} (config {}, runbook step {} after {}, {})",
            s.search, s.config, s.runbook_step, s.after, s.search_params
        )
    };
    format!("A {} vs B {}", side(&p.a_step), side(&p.b_step))
}

fn outcome_line(p: &StepComparison) -> String {
    let o = &p.outcomes;
    format!(
        "per query (B against A, {} queries): {} win, {} loss, {} draw, {} regression",
        p.queries, o.win, o.loss, o.draw, o.regression
    )
}

fn regression_rows(p: &StepComparison) -> Vec<Vec<String>> {
    p.worst_regressions
        .iter()
        .map(|q| {
            let rank = |r: Option<usize>| r.map_or_else(|| "–".into(), |r| r.to_string());
            vec![
                q.query.to_string(),
                format!("{:?}", q.outcome).to_lowercase(),
                rank(q.a_first_rank),
                rank(q.b_first_rank),
                q.lost.to_string(),
                num(q.recall_a),
                num(q.recall_b),
            ]
        })
        .collect()
}

const REGRESSION_HEADER: [&str; 7] = [
    "query",
    "outcome",
    "A first hit",
    "B first hit",
    "lost",
    "recall A",
    "recall B",
];

fn header(c: &Comparison) -> Vec<String> {
    let mut lines = vec![
        format!(
            "A: {} {} on {} ({})",
            c.a.engine,
            c.a.version,
            c.a.dataset,
            c.a.file.display()
        ),
        format!(
            "B: {} {} on {} ({})",
            c.b.engine,
            c.b.version,
            c.b.dataset,
            c.b.file.display()
        ),
        format!(
            "verdicts: Wilcoxon signed-rank test at α = {}; interval: seeded bootstrap of the mean difference",
            c.alpha
        ),
    ];
    for reason in &c.not_comparable {
        lines.push(format!("NOT COMPARABLE: {reason}"));
    }
    if c.pairs.is_empty() {
        lines.push("no search steps were compared query by query".into());
    }
    lines
}

pub(crate) fn aligned(out: &mut String, head: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_string()
    };
    let _ = writeln!(out, "{}", line(head.to_vec()));
    for r in rows {
        let _ = writeln!(out, "{}", line(r.iter().map(String::as_str).collect()));
    }
}

/// For the terminal.
pub fn text(c: &Comparison) -> String {
    let mut out = header(c).join("\n") + "\n";
    for p in &c.pairs {
        let _ = writeln!(out, "\n{}", pair_title(p));
        let rows: Vec<_> = p.metrics.iter().map(metric_row).collect();
        aligned(&mut out, &METRIC_HEADER, &rows);
        let _ = writeln!(out, "{}", outcome_line(p));
        if !p.worst_regressions.is_empty() {
            let _ = writeln!(out, "worst regressions:");
            aligned(&mut out, &REGRESSION_HEADER, &regression_rows(p));
        }
    }
    out
}

pub(crate) fn md_table(out: &mut String, head: &[&str], rows: &[Vec<String>]) {
    let _ = writeln!(out, "| {} |", head.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(head.len()));
    for r in rows {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
}

/// For pasting into an issue or a README.
pub fn markdown(c: &Comparison) -> String {
    let mut out = String::from("# Comparison\n\n");
    for line in header(c) {
        let _ = writeln!(out, "- {line}");
    }
    for p in &c.pairs {
        let _ = writeln!(out, "\n## {}\n", pair_title(p));
        let rows: Vec<_> = p.metrics.iter().map(metric_row).collect();
        md_table(&mut out, &METRIC_HEADER, &rows);
        let _ = writeln!(out, "\n{}", outcome_line(p));
        if !p.worst_regressions.is_empty() {
            let _ = writeln!(out, "\nWorst regressions:\n");
            md_table(&mut out, &REGRESSION_HEADER, &regression_rows(p));
        }
    }
    out
}

/// One self-contained page (no script, no external resource).
pub fn html(c: &Comparison) -> String {
    let mut out = String::from(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>ragdbeval compare</title>\
         <style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}\
         td,th{border:1px solid #ccc;padding:.3em .6em;text-align:right}td:first-child,th:first-child{text-align:left}\
         .warn{color:#a00}</style></head><body><h1>Comparison</h1><ul>",
    );
    for line in header(c) {
        let class = if line.starts_with("NOT COMPARABLE") {
            " class=\"warn\""
        } else {
            ""
        };
        let _ = write!(out, "<li{class}>{}</li>", escape(&line));
    }
    out.push_str("</ul>\n");
    for p in &c.pairs {
        let _ = writeln!(out, "<h2>{}</h2>", escape(&pair_title(p)));
        let rows: Vec<_> = p.metrics.iter().map(metric_row).collect();
        table(&mut out, &METRIC_HEADER, &rows);
        let _ = writeln!(out, "<p>{}</p>", escape(&outcome_line(p)));
        if !p.worst_regressions.is_empty() {
            table(&mut out, &REGRESSION_HEADER, &regression_rows(p));
        }
    }
    out.push_str("</body></html>\n");
    out
}
