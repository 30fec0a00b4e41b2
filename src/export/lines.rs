//! Text blocks shared by the terminal summary and the Markdown report: QPS at recall targets
//! per runbook step, and one row per load level. Exporters own them; the terminal reuses them.

use crate::params::ParamMapExt;
use crate::results::RunResult;

/// A table's header row from its column names.
pub fn header_row(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|c| c.to_string()).collect()
}

/// "QPS at recall ≥ …" for every runbook step measured with more than one configuration.
pub fn curve_lines(run: &RunResult) -> String {
    let mut out = String::new();
    for c in run.curves.iter().filter(|c| {
        run.configs
            .iter()
            .flat_map(|cfg| cfg.searches())
            .filter(|s| s.runbook_step == c.runbook_step)
            .count()
            > 1
    }) {
        let targets: Vec<String> = c
            .curve
            .qps_at_recall
            .iter()
            .map(|(t, q)| match q {
                Some(q) => format!("{t:.2}: {q:.0}"),
                None => format!("{t:.2}: -"),
            })
            .collect();
        out.push_str(&format!(
            "step {} (after {}): QPS at recall >= {} ({} point(s) on the Pareto frontier)\n",
            c.runbook_step,
            c.after,
            targets.join(", "),
            c.curve.frontier.len()
        ));
    }
    out
}

/// One line per load level (closed-loop clients, open-loop rates): header first. Open-loop
/// levels show their schedule's accounting, `answered` and `dropped` (scheduled, never sent:
/// not in the percentiles); "-" where a level has no such figure (closed loops, old files).
pub fn load_lines(run: &RunResult) -> Vec<Vec<String>> {
    let mut lines = vec![header_row(&[
        "step",
        "build",
        "search",
        "load",
        "QPS",
        "p50 ms",
        "p99 ms",
        "p99.9 ms",
        "max lag ms",
        "answered",
        "dropped",
        "sender CPU ms",
        "state",
    ])];
    for c in &run.configs {
        for s in c.searches() {
            for l in &s.load {
                lines.push(vec![
                    format!("{}:after-{}", s.runbook_step, s.after),
                    c.build_params.label(),
                    s.search_params.label(),
                    match l.target_rate {
                        Some(r) => format!("open {r:.0}/s x{}", l.concurrency),
                        None => format!("{} x{}", l.kind, l.concurrency),
                    },
                    format!("{:.1}", l.qps),
                    format!("{:.3}", l.latency.p50_ms),
                    format!("{:.3}", l.latency.p99_ms),
                    format!("{:.3}", l.latency.p999_ms),
                    l.max_send_lag_ms.map_or("-".into(), |v| format!("{v:.2}")),
                    l.completed.to_string(),
                    l.dropped.map_or("-".into(), |d| d.to_string()),
                    l.sender_cpu_ms.map_or("-".into(), |v| format!("{v:.0}")),
                    if l.saturated { "SATURATED" } else { "ok" }.into(),
                ]);
            }
        }
    }
    lines
}
