//! The summary table printed at the end of a run: one line per search step, columns from the
//! metric registry entries marked `in_table`.

use crate::metrics::registry::{METRICS, format_value, rows};
use crate::params::ParamMapExt;
use crate::results::RunResult;

/// Renders the summary as aligned plain text.
pub fn render(run: &RunResult) -> String {
    let metrics: Vec<_> = METRICS.iter().filter(|m| m.in_table).collect();
    let mut header: Vec<String> = vec!["build".into(), "search".into()];
    header.extend(metrics.iter().map(|m| m.header.to_string()));
    let mut lines: Vec<Vec<String>> = vec![header];
    for row in rows(&run.configs) {
        let mut cells = vec![
            row.config.build_params.label(),
            row.search.search_params.label(),
        ];
        cells.extend(metrics.iter().map(|m| format_value(m, (m.value)(&row))));
        lines.push(cells);
    }
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
                if c < 2 {
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
