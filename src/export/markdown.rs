//! Markdown: a publishable report with the run's provenance and two tables, quality and cost.
//! The cost table's sizes are the totals, comparable across engines; the engine-specific
//! index figures stay in the CSV and JSON (see [`crate::export::sizes::INDEX_METRICS`]).

use std::fmt::Write;

use super::{ExportError, Exporter};
use crate::export::registry::{METRICS, MetricDef, Row, format_value, rows};
use crate::export::sizes;
use crate::params::ParamMapExt;
use crate::results::RunResult;

pub struct MarkdownExporter;

fn table(out: &mut String, title: &str, runs: &[RunResult], metrics: &[&MetricDef]) {
    let _ = writeln!(out, "### {title}\n");
    let mut header = vec!["engine", "build", "search"];
    header.extend(metrics.iter().map(|m| m.header));
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let align: Vec<&str> = header
        .iter()
        .enumerate()
        .map(|(i, _)| if i < 3 { "---" } else { "---:" })
        .collect();
    let _ = writeln!(out, "| {} |", align.join(" | "));
    for run in runs {
        for row in rows(&run.configs) {
            let mut cells = vec![
                run.engine.name.clone(),
                row.config.build_params.label(),
                row.search.search_params.label(),
            ];
            cells.extend(metrics.iter().map(|m| format_value(m, (m.value)(&row))));
            let _ = writeln!(out, "| {} |", cells.join(" | "));
        }
    }
    out.push('\n');
}

/// What the sizes of the cost table are, the floor to read them against, and what the
/// engine's own index figure (CSV and JSON only) holds.
fn size_line(run: &RunResult) -> String {
    let floor = sizes::raw_bytes_per_vector(run).map_or_else(String::new, |b| {
        format!(" against the raw vectors' {b:.0} B per vector")
    });
    let holds = sizes::run_index_holds(run);
    let index = if holds.is_empty() {
        "no index figure recorded".to_string()
    } else {
        format!("its index figure (CSV, JSON) holds {}", holds.join(" / "))
    };
    format!("sizes: total MB and total B/vec are everything the collection costs{floor}; {index}")
}

/// Metrics with at least one value in these runs.
fn present<'a>(runs: &[RunResult], pick: impl Fn(&MetricDef) -> bool) -> Vec<&'a MetricDef> {
    METRICS
        .iter()
        .filter(|m| pick(m))
        .filter(|m| {
            runs.iter().any(|r| {
                rows(&r.configs)
                    .iter()
                    .any(|row: &Row<'_>| (m.value)(row).is_some())
            })
        })
        .collect()
}

impl Exporter for MarkdownExporter {
    fn name(&self) -> &'static str {
        "markdown"
    }
    fn extension(&self) -> &'static str {
        "md"
    }
    fn render(&self, runs: &[RunResult]) -> Result<String, ExportError> {
        let mut out = String::new();
        let _ = writeln!(out, "# ragdbeval results\n");
        for run in runs {
            let d = &run.dataset;
            let h = &run.manifest.hardware;
            let _ = writeln!(
                out,
                "- **{} {}** on **{}** ({} × {}, {} queries, {}), k = {}, status: {:?}",
                run.engine.name,
                run.engine.version,
                d.name,
                d.train,
                d.dim,
                d.queries,
                d.distance,
                run.manifest
                    .settings
                    .k
                    .map_or_else(|| "?".into(), |k| k.to_string()),
                run.status.state,
            );
            let _ = writeln!(
                out,
                "  - dataset sha256 `{}`; ragdbeval {} ({}); {} ({} cores, {:.1} GiB RAM, {})",
                &d.sha256[..d.sha256.len().min(16)],
                run.manifest.ragdbeval_version,
                run.manifest.git_revision,
                h.cpu_model,
                h.logical_cores,
                h.ram_bytes as f64 / (1u64 << 30) as f64,
                h.os,
            );
            let _ = writeln!(out, "  - {}", size_line(run));
            for w in &run.warnings {
                let _ = writeln!(out, "  - ⚠ {w}");
            }
        }
        out.push('\n');
        let quality = present(runs, |m| m.unit.is_empty());
        let cost = present(runs, |m| {
            !m.unit.is_empty() && !sizes::INDEX_METRICS.contains(&m.key)
        });
        table(&mut out, "Quality", runs, &quality);
        table(&mut out, "Cost", runs, &cost);
        for run in runs {
            // Load levels, with open-loop drops (scheduled, never sent, not in the percentiles).
            let load = crate::export::lines::load_lines(run);
            if load.len() > 1 {
                let _ = writeln!(out, "### Load ({})\n", run.engine.name);
                for (i, line) in load.iter().enumerate() {
                    let _ = writeln!(out, "| {} |", line.join(" | "));
                    if i == 0 {
                        let rule: Vec<&str> = (0..line.len())
                            .map(|c| if c < 4 { "---" } else { "---:" })
                            .collect();
                        let _ = writeln!(out, "| {} |", rule.join(" | "));
                    }
                }
                out.push('\n');
            }
        }
        for run in runs {
            let curves = crate::export::lines::curve_lines(run);
            if !curves.is_empty() {
                let _ = writeln!(out, "### Recall/QPS ({})\n", run.engine.name);
                for line in curves.lines() {
                    let _ = writeln!(out, "- {line}");
                }
                out.push('\n');
            }
        }
        Ok(out)
    }
}
