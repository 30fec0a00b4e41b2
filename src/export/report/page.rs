//! `index.html`: the report as one self-contained page. Plots are inline SVG; there is no
//! script, no stylesheet or font from elsewhere, and no request of any kind, so the page can
//! be opened from disk, mailed or archived. The number of plots is stated in the page
//! (`data-plots` on `#plots`), so a test can count the `<svg>` elements against it, and each
//! figure states its plot and the value ranges of its axes (`data-plot`, `data-x-range`,
//! `data-y-range`: low and high, separated by a space), so a test can check what the axes show.

use std::fmt::Write as _;

use super::plots::Plot;
use super::{Group, Options, at_recall_cell, cost, history, ranking, table_header, table_rows};
use crate::export::html::{escape, table};

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em 2em;color:#222}\
table{border-collapse:collapse;margin:.8em 0;font-size:.85em}\
td,th{border:1px solid #ccc;padding:.25em .5em;text-align:right}\
td:nth-child(-n+4),th:nth-child(-n+4){text-align:left}\
.invalid{color:#b00;font-weight:bold}.plots{display:flex;flex-wrap:wrap;gap:1em}\
figure{margin:0}figcaption{font-size:.85em;color:#555}\
details{margin:.4em 0}pre{white-space:pre-wrap;font-size:.8em;background:#f6f6f6;padding:.5em}";

/// The cost ranking, with the prices it was made with.
fn cost_table(out: &mut String, g: &Group<'_>, prices: &cost::Prices) {
    let _ = write!(
        out,
        "<h3>Cost: the cheapest measured setting at each recall level</h3><p>{}</p><div id=\"{}\">",
        escape(&cost::describe(prices)),
        cost::html_id(g)
    );
    table(out, &cost::HEADER, &cost::cells(&cost::ranking(g, prices)));
    out.push_str("</div>");
}

/// The runs in the order of the history plots' x axis.
fn history_table(out: &mut String, g: &Group<'_>) {
    let _ = write!(
        out,
        "<h3>History: the runs in the order of the history plots</h3><div id=\"{}\">",
        history::html_id(g)
    );
    table(out, &history::HEADER, &history::cells(&history::runs(g)));
    out.push_str("</div>");
}

/// The page.
pub fn render(groups: &[Group<'_>], plots: &[Vec<Plot>], options: &Options) -> String {
    let total: usize = plots.iter().map(Vec::len).sum();
    let mut out = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>ragdbeval report</title><style>{STYLE}</style></head><body>\
         <h1>ragdbeval report</h1><p id=\"plots\" data-plots=\"{total}\">{} dataset(s), {} run(s), {total} plot(s).</p>\n",
        groups.len(),
        groups.iter().map(|g| g.runs.len()).sum::<usize>()
    );
    for (g, ps) in groups.iter().zip(plots) {
        let _ = writeln!(
            out,
            "<h2>{}</h2><p>SHA-256 <code>{}</code></p>",
            escape(g.dataset),
            escape(g.sha256)
        );
        for note in g.notes() {
            let _ = write!(out, "<p class=\"note\">{}</p>", escape(&note));
        }
        table(&mut out, &table_header(g), &table_rows(g));
        out.push_str("<h3>QPS at recall ≥ target</h3>");
        let header: Vec<String> = ["engine", "≥ 0.90", "≥ 0.95", "≥ 0.99"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let rows: Vec<Vec<String>> = g
            .at_recall()
            .into_iter()
            .map(|e| {
                let mut r = vec![e.engine.clone()];
                r.extend(e.qps.iter().map(|(_, q)| at_recall_cell(*q, e.max_recall)));
                r
            })
            .collect();
        table(&mut out, &header, &rows);
        let _ = write!(
            out,
            "<h3>Ranking: the fastest measured setting at each recall level</h3><div id=\"{}\">",
            ranking::html_id(g)
        );
        table(
            &mut out,
            &ranking::HEADER,
            &ranking::cells(&ranking::ranking(g)),
        );
        out.push_str("</div>");
        if let Some(prices) = &options.prices {
            cost_table(&mut out, g, prices);
        }
        if options.history {
            history_table(&mut out, g);
        }
        out.push_str("<div class=\"plots\">\n");
        for p in ps {
            let (x, y) = (p.ranges.x, p.ranges.y);
            let _ = writeln!(
                out,
                "<figure data-plot=\"{}\" data-x-range=\"{} {}\" data-y-range=\"{} {}\">{}\
                 <figcaption>{}</figcaption></figure>",
                p.name,
                x.0,
                x.1,
                y.0,
                y.1,
                p.svg,
                escape(&p.title)
            );
        }
        out.push_str("</div>\n<h3>Runs</h3>\n");
        for (path, run) in &g.runs {
            let m = &run.manifest;
            let h = &m.hardware;
            let _ = writeln!(
                out,
                "<details><summary>{} — {} {} ({:?}, {} warning(s))</summary><ul>\
                 <li>command: <code>{}</code></li><li>ragdbeval {} ({}), started {}</li>\
                 <li>hardware: {}, {} logical cores, {:.1} GiB RAM, {} {}</li>\
                 <li>dataset: {} ({} × {}, {} queries, {}), SHA-256 <code>{}</code></li></ul>",
                escape(&path.display().to_string()),
                escape(&run.series_name()),
                escape(&run.engine.version),
                run.status.state,
                run.warnings.len(),
                escape(&m.command_line.join(" ")),
                escape(&m.ragdbeval_version),
                escape(&m.git_revision),
                escape(&m.started_at),
                escape(&h.cpu_model),
                h.logical_cores,
                h.ram_bytes as f64 / (1u64 << 30) as f64,
                escape(&h.os),
                escape(&h.kernel),
                escape(&run.dataset.name),
                run.dataset.train,
                run.dataset.dim,
                run.dataset.queries,
                escape(&run.dataset.distance),
                escape(&run.dataset.sha256),
            );
            if !run.warnings.is_empty() {
                out.push_str("<ul class=\"warnings\">");
                for w in &run.warnings {
                    let _ = write!(out, "<li>{}</li>", escape(&w.to_string()));
                }
                out.push_str("</ul>");
            }
            out.push_str("</details>\n");
        }
    }
    out.push_str("</body></html>\n");
    out
}
