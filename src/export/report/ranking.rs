//! One ranking per dataset: at each recall level (0.90, 0.95, 0.99), every engine's fastest
//! measured setting that reaches it (QPS, its recall, the setting, p99, total bytes per
//! vector), fastest first; an engine that never reaches the level says so, with its best
//! recall. Measured points only (unfiltered searches after a build, not flagged as possible
//! full scans): no interpolation between settings, so every row is a run one can repeat, and
//! a filtered search, which answers another question, never ranks beside an unfiltered one.
//!
//! The same rows go to `report.md`, `index.html` (a table with `id="ranking-<dataset>"`) and
//! `ranking.csv`.

use super::{Group, SearchPoint, slug};
use crate::export::ExportError;
use crate::metrics::pareto::RECALL_TARGETS;

/// An engine at one recall level.
#[derive(Clone)]
pub struct Ranked<'a> {
    pub level: f64,
    pub engine: &'a str,
    /// The fastest point at or above the level; `None`: never reached.
    pub best: Option<&'a SearchPoint<'a>>,
    /// The engine's best recall over the points considered; `None`: it has none (every
    /// point flagged invalid, filtered, or before the build).
    pub max_recall: Option<f64>,
}

/// The rows of `group`, level by level, fastest engine first, those that never reach a
/// level after the others (by their best recall).
pub fn ranking<'a>(group: &'a Group<'a>) -> Vec<Ranked<'a>> {
    let mut out = Vec::new();
    for level in RECALL_TARGETS {
        let mut rows: Vec<Ranked<'a>> = group
            .engines
            .iter()
            .map(|engine| {
                let points = group
                    .points
                    .iter()
                    .filter(|p| &p.engine == engine && p.after_build && !p.invalid)
                    .filter(|p| p.search.filter.is_none());
                let max_recall = points.clone().map(|p| p.recall).reduce(f64::max);
                let best = points
                    .filter(|p| p.recall >= level)
                    .max_by(|a, b| a.qps.total_cmp(&b.qps));
                Ranked {
                    level,
                    engine,
                    best,
                    max_recall,
                }
            })
            .collect();
        rows.sort_by(|a, b| match (a.best, b.best) {
            (Some(x), Some(y)) => y.qps.total_cmp(&x.qps),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => unreached_key(b.max_recall).total_cmp(&unreached_key(a.max_recall)),
        });
        out.extend(rows);
    }
    out
}

/// How engines that never reach a level are ordered: by best recall, those without a valid
/// point last.
pub fn unreached_key(max_recall: Option<f64>) -> f64 {
    max_recall.unwrap_or(-1.0)
}

/// The cell of an engine that never reaches a level: its best recall, or that it has no
/// point to rank.
pub fn unreached_cell(max_recall: Option<f64>) -> String {
    match max_recall {
        Some(r) => format!("not reached (max recall {r:.3})"),
        None => "no valid point (each flagged invalid or filtered)".to_string(),
    }
}

/// The table's columns.
pub const HEADER: [&str; 8] = [
    "recall ≥",
    "rank",
    "engine",
    "QPS",
    "recall",
    "setting",
    "p99 ms",
    "total B/vector",
];

/// Table rows of a ranking: `recall ≥`, rank (1, 2, … within a level), engine, then
/// `figures` of a row that reaches its level; for one that does not, `-` and "not reached"
/// with its best recall, the other `width` − 4 cells `-`.
pub fn level_rows<T>(
    rows: &[T],
    width: usize,
    head: impl Fn(&T) -> (f64, &str, Option<f64>),
    figures: impl Fn(&T) -> Option<Vec<String>>,
) -> Vec<Vec<String>> {
    let mut rank = 0;
    let mut current = f64::NAN;
    rows.iter()
        .map(|r| {
            let (level, engine, max_recall) = head(r);
            if level != current {
                (current, rank) = (level, 0);
            }
            let mut row = vec![format!("{level:.2}")];
            match figures(r) {
                Some(figures) => {
                    rank += 1;
                    row.extend([rank.to_string(), engine.to_string()]);
                    row.extend(figures);
                }
                None => {
                    row.extend(["-".to_string(), engine.to_string()]);
                    row.push(unreached_cell(max_recall));
                    row.resize(width, "-".into());
                }
            }
            row
        })
        .collect()
}

/// The rows as table cells: rank 1, 2, … within a level; `-` for an engine that never
/// reaches it, with its best recall in the QPS cell.
pub fn cells(rows: &[Ranked<'_>]) -> Vec<Vec<String>> {
    level_rows(
        rows,
        HEADER.len(),
        |r| (r.level, r.engine, r.max_recall),
        |r| {
            r.best.map(|p| {
                vec![
                    format!("{:.0}", p.qps),
                    format!("{:.4}", p.recall),
                    p.setting.clone(),
                    format!("{:.3}", p.p99_ms),
                    p.total_bytes_per_vector
                        .map_or_else(|| "-".into(), |b| format!("{b:.0}")),
                ]
            })
        },
    )
}

/// `ranking.csv`: every dataset's rows, `dataset` first; empty fields where an engine never
/// reaches a level (and `reached` false).
pub fn csv(groups: &[Group<'_>]) -> Result<String, ExportError> {
    let figure = |v: Option<f64>| v.map_or_else(String::new, |v| v.to_string());
    let mut records = Vec::new();
    for g in groups {
        let rows = ranking(g);
        for (r, cells) in rows.iter().zip(cells(&rows)) {
            let reached = r.best.is_some();
            records.push(vec![
                g.dataset.to_string(),
                r.level.to_string(),
                if reached {
                    cells[1].clone()
                } else {
                    String::new()
                },
                r.engine.to_string(),
                reached.to_string(),
                figure(r.best.map(|p| p.qps)),
                figure(r.best.map(|p| p.recall)),
                r.best.map_or_else(String::new, |p| p.setting.clone()),
                figure(r.best.map(|p| p.p99_ms)),
                figure(r.best.and_then(|p| p.total_bytes_per_vector)),
                figure(r.max_recall),
            ]);
        }
    }
    crate::export::csv_text("ranking.csv", &CSV_HEADER, records)
}

const CSV_HEADER: [&str; 11] = [
    "dataset",
    "recall_level",
    "rank",
    "engine",
    "reached",
    "qps",
    "recall",
    "setting",
    "p99_ms",
    "total_bytes_per_vector",
    "max_recall",
];

/// The group's ranking as a Markdown table (with a line saying what it is).
pub fn markdown(group: &Group<'_>) -> String {
    let mut out = format!(
        "Ranking: each engine's fastest measured setting at each recall level:\n\n| {} |\n|{}\n",
        HEADER.join(" | "),
        "---|".repeat(HEADER.len())
    );
    for r in cells(&ranking(group)) {
        out.push_str(&format!("| {} |\n", r.join(" | ")));
    }
    out
}

/// The HTML id of a dataset's ranking table.
pub fn html_id(group: &Group<'_>) -> String {
    format!("ranking-{}", slug(group.dataset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_without_a_valid_point_is_not_given_a_recall_of_zero() {
        let rows = [(0.9, "a", Some(0.871)), (0.9, "b", None)];
        let cells = level_rows(&rows, 5, |r| *r, |_| None::<Vec<String>>);
        assert_eq!(cells[0][3], "not reached (max recall 0.871)");
        assert_eq!(
            cells[1][3],
            "no valid point (each flagged invalid or filtered)"
        );
        assert_eq!(cells[1].len(), 5);
        assert!(unreached_key(Some(0.0)) > unreached_key(None));
    }
}
