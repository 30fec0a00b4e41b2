//! The summary table printed at the end of a run: one line per search step, columns from the
//! metric registry entries marked `in_table`, then the per-step blocks (writes, difficulty
//! bands, load levels, curves).

use crate::export::lines::{curve_lines, header_row, load_lines};
use crate::export::registry::{METRICS, Row, format_value, rows};
use crate::export::streams_csv::{self, STREAM_COLUMNS};
use crate::metrics::bands::{BAND_NAMES, Band};
use crate::params::ParamMapExt;
use crate::results::RunResult;

/// Renders the summary as aligned plain text.
pub fn render(run: &RunResult) -> String {
    let all_rows = rows(&run.configs);
    // A column no row has a value for (the `--repeat` medians of a single-trial run, say)
    // is left out rather than printed as dashes.
    let metrics: Vec<_> = METRICS
        .iter()
        .filter(|m| m.in_table)
        .filter(|m| all_rows.iter().any(|r| (m.value)(r).is_some()) || m.key == "recall")
        .collect();
    let filtered = all_rows.iter().any(|r| r.search.filter.is_some());
    let mut header: Vec<String> = vec!["step".into(), "build".into(), "search".into()];
    if filtered {
        header.push("filter".into());
    }
    header.extend(metrics.iter().map(|m| m.header.to_string()));
    let mut lines: Vec<Vec<String>> = vec![header];
    for row in &all_rows {
        let mut cells = vec![
            format!("{}:after-{}", row.search.runbook_step, row.search.after),
            row.config.build_params.label(),
            row.search.search_params.label(),
        ];
        if filtered {
            cells.push(
                row.search
                    .filter
                    .as_ref()
                    .map_or("-".into(), |f| f.name.clone()),
            );
        }
        cells.extend(metrics.iter().map(|m| format_value(m, (m.value)(row))));
        lines.push(cells);
    }
    let mut out = align(&lines, if filtered { 4 } else { 3 });
    let mutations = mutation_lines(run);
    if mutations.len() > 1 {
        out.push('\n');
        out.push_str(&align(&mutations, 3));
    }
    let streams = stream_lines(run);
    if streams.len() > 1 {
        out.push('\n');
        out.push_str(&align(&streams, 3));
    }
    let bands = difficulty_lines(&all_rows);
    if bands.len() > 1 {
        out.push('\n');
        out.push_str(&align(&bands, 3));
    }
    let load = load_lines(run);
    if load.len() > 1 {
        out.push('\n');
        out.push_str(&align(&load, 4));
    }
    out.push_str(&curve_lines(run));
    out
}

/// One line per search step: recall and median latency of the easy, medium and hard thirds
/// of the queries (by LID at K).
fn difficulty_lines(rows: &[Row<'_>]) -> Vec<Vec<String>> {
    let mut lines = vec![header_row(&[
        "step",
        "build",
        "search",
        "LID@K cuts",
        "recall easy",
        "medium",
        "hard",
        "p50 ms easy",
        "medium",
        "hard",
    ])];
    for row in rows {
        let Some(b) = &row.search.difficulty_bands else {
            continue;
        };
        let figure = |name: &str, f: fn(&Band) -> Option<f64>, decimals: usize| {
            b.band(name)
                .and_then(f)
                .map_or("-".into(), |x| format!("{x:.decimals$}"))
        };
        let mut cells = vec![
            format!("{}:after-{}", row.search.runbook_step, row.search.after),
            row.config.build_params.label(),
            row.search.search_params.label(),
            format!("{:.2} / {:.2}", b.cuts[0], b.cuts[1]),
        ];
        for name in BAND_NAMES {
            cells.push(figure(name, |x| x.recall, 4));
        }
        for name in BAND_NAMES {
            cells.push(figure(name, |x| x.p50_ms, 3));
        }
        lines.push(cells);
    }
    lines
}

/// One line per insert/update/delete step.
fn mutation_lines(run: &RunResult) -> Vec<Vec<String>> {
    let mut lines = vec![header_row(&[
        "step",
        "build",
        "mode",
        "points",
        "p50 ms",
        "p99 ms",
        "p99.9 ms",
        "write vec/s",
        "vec/s incl. wait",
        "visible",
        "stale",
        "vis max ms",
        "index wait s",
        "total B/live vec",
    ])];
    for c in &run.configs {
        for m in c.mutations() {
            lines.push(vec![
                format!("{}:{}", m.runbook_step, m.kind),
                c.build_params.label(),
                m.mode.clone(),
                m.points.to_string(),
                format!("{:.3}", m.latency.p50_ms),
                format!("{:.3}", m.latency.p99_ms),
                format!("{:.3}", m.latency.p999_ms),
                format!("{:.0}", m.write_vectors_per_s),
                format!("{:.0}", m.vectors_per_s),
                format!("{}/{}", m.visibility.visible, m.visibility.samples),
                m.stale_hits.to_string(),
                format!("{:.2}", m.visibility.max_ms),
                format!("{:.2}", m.ready_wait_s),
                m.total_bytes_per_live_vector
                    .map_or("-".into(), |b| format!("{b:.1}")),
            ]);
        }
    }
    lines
}

/// One line per stream step (searches while writes ran): the columns of `streams.csv` that
/// have a terminal header.
fn stream_lines(run: &RunResult) -> Vec<Vec<String>> {
    let columns: Vec<_> = STREAM_COLUMNS
        .iter()
        .filter(|c| c.header.is_some())
        .collect();
    let mut header = vec!["stream step".to_string(), "build".into(), "search".into()];
    header.extend(columns.iter().filter_map(|c| c.header.map(str::to_string)));
    let mut lines = vec![header];
    for config in &run.configs {
        for t in config.streams() {
            let mut cells: Vec<String> = streams_csv::identity(config, t).into();
            cells.extend(columns.iter().map(|c| streams_csv::format_cell(c, t)));
            lines.push(cells);
        }
    }
    lines
}

/// Aligns rows of cells: the first `left` columns left-aligned, the rest right-aligned,
/// with a rule under the header.
fn align(lines: &[Vec<String>], left: usize) -> String {
    let cols = lines[0].len();
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            lines
                .iter()
                .map(|l| l[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let cells: Vec<String> = line
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                if c < left {
                    format!("{cell:<w$}", w = widths[c])
                } else {
                    format!("{cell:>w$}", w = widths[c])
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
        if i == 0 {
            out.push_str(&"-".repeat(widths.iter().sum::<usize>() + 2 * (cols - 1)));
            out.push('\n');
        }
    }
    out
}
