//! `report --history`: each figure of one engine, dataset and setting across the runs that
//! measured it, in the order the runs were made (their start time, then the engine version),
//! one plot per figure, one line per engine and setting. The x axis counts runs; the page lists them in that order (`id="history-<dataset>"`), so that
//! run 3 of a plot is row 3 of the table. Only settings measured in more than one run are
//! drawn, after a build: a later runbook step holds another collection. A line's first point,
//! and each point whose engine version differs from the one before, carries the version.
//!
//! The axes of QPS, latency, build time and size start at zero, so that a change reads
//! against the figure's size rather than filling the picture; recall's span its values within
//! [0, 1]. The legend takes the corner the lines leave freer.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::chart::{Axes, Series, colour};
use super::plots::{Plot, add_plot};
use super::{Group, SearchPoint, slug};
use crate::export::ExportError;

/// A run of the group in history order.
pub struct HistoryRun<'a> {
    /// 1 for the first run.
    pub number: usize,
    /// The result file's stem.
    pub run: String,
    pub started_at: &'a str,
    pub engine: String,
    pub engine_version: &'a str,
    pub git_revision: &'a str,
    /// The machine it ran on: CPU model and logical cores.
    pub machine: String,
}

/// The group's runs ordered by start time, then by engine version, then by file name; with
/// each run's place in [`Group::runs`].
fn ordered(group: &Group<'_>) -> Vec<usize> {
    let mut order: Vec<usize> = (0..group.runs.len()).collect();
    order.sort_by(|&a, &b| {
        let (pa, ra) = group.runs[a];
        let (pb, rb) = group.runs[b];
        ra.manifest
            .started_at
            .cmp(&rb.manifest.started_at)
            .then_with(|| version_order(&ra.engine.version, &rb.engine.version))
            .then_with(|| pa.cmp(pb))
    });
    order
}

/// Versions compared part by part, numbers as numbers: 1.9 before 1.10.
fn version_order(a: &str, b: &str) -> Ordering {
    let parts = |v: &str| -> Vec<(u64, String)> {
        v.split(|c: char| !c.is_ascii_alphanumeric())
            .map(|p| match p.parse::<u64>() {
                Ok(n) => (n, String::new()),
                Err(_) => (u64::MAX, p.to_string()),
            })
            .collect()
    };
    parts(a).cmp(&parts(b))
}

/// The group's runs in history order.
pub fn runs<'a>(group: &Group<'a>) -> Vec<HistoryRun<'a>> {
    ordered(group)
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let (path, run) = group.runs[r];
            HistoryRun {
                number: i + 1,
                run: super::stem(path),
                started_at: &run.manifest.started_at,
                engine: run.series_name(),
                engine_version: &run.engine.version,
                git_revision: &run.manifest.git_revision,
                machine: machine(run),
            }
        })
        .collect()
}

/// The machine a run measured on, as the runs table names it.
fn machine(run: &crate::results::RunResult) -> String {
    let h = &run.manifest.hardware;
    format!("{}, {} logical cores", h.cpu_model, h.logical_cores)
}

/// The runs table's columns.
pub const HEADER: [&str; 7] = [
    "run",
    "result file",
    "started (UTC)",
    "engine",
    "engine version",
    "ragdbeval revision",
    "machine",
];

/// The runs as table cells.
pub fn cells(runs: &[HistoryRun<'_>]) -> Vec<Vec<String>> {
    runs.iter()
        .map(|r| {
            vec![
                r.number.to_string(),
                r.run.clone(),
                r.started_at.to_string(),
                r.engine.clone(),
                r.engine_version.to_string(),
                r.git_revision.to_string(),
                r.machine.clone(),
            ]
        })
        .collect()
}

/// The HTML id of a dataset's history table.
pub fn html_id(group: &Group<'_>) -> String {
    format!("history-{}", slug(group.dataset))
}

/// A history plot: file stem, figure, y axis, the figure of a point.
type Figure = (
    &'static str,
    &'static str,
    &'static str,
    fn(&SearchPoint) -> Option<f64>,
);

const FIGURES: [Figure; 7] = [
    ("history-recall", "recall", "recall@K", |p| Some(p.recall)),
    ("history-qps", "QPS", "queries per second", |p| Some(p.qps)),
    ("history-p50", "p50 latency", "p50 latency, ms", |p| {
        Some(p.search.latency.p50_ms)
    }),
    ("history-p99", "p99 latency", "p99 latency, ms", |p| {
        Some(p.p99_ms)
    }),
    ("history-build", "build time", "build time, s", |p| {
        p.build_s
    }),
    (
        "history-total-size",
        "total size per vector",
        "total bytes per live vector",
        |p| p.total_bytes_per_vector,
    ),
    (
        "history-task-ndcg",
        "task NDCG@10",
        "NDCG@10 (retrieval task)",
        |p| p.search.end_task.as_ref()?.metrics.get("ndcg@10").copied(),
    ),
];

/// One line per engine and setting measured in more than one run: (run number, figure).
/// A point is labelled with its run's engine version where that changes along the line (the
/// first point always). Per run, the setting's first search after a build counts. Lines are
/// named by their engine and the parameters that tell its settings apart, in the order of
/// those values (numbers as numbers).
fn series(group: &Group<'_>, figure: fn(&SearchPoint) -> Option<f64>) -> Vec<Series> {
    let number: BTreeMap<usize, usize> = ordered(group)
        .into_iter()
        .enumerate()
        .map(|(i, r)| (r, i + 1))
        .collect();
    type Line<'p> = (&'p SearchPoint<'p>, BTreeMap<usize, (f64, String)>);
    let mut lines: BTreeMap<(String, String), Line<'_>> = BTreeMap::new();
    for p in group.points.iter().filter(|p| p.after_build) {
        let (Some(y), Some(&n)) = (
            figure(p).filter(|y| y.is_finite()),
            number.get(&p.run_index),
        ) else {
            continue;
        };
        let version = group.runs[p.run_index].1.engine.version.clone();
        lines
            .entry((p.engine.clone(), p.setting.clone()))
            .or_insert_with(|| (p, BTreeMap::new()))
            .1
            .entry(n)
            .or_insert((y, version));
    }
    let lines: Vec<((String, String), Line<'_>)> =
        lines.into_iter().filter(|(_, l)| l.1.len() > 1).collect();
    let mut named: Vec<(String, Series)> = Vec::new();
    for engine in &group.engines {
        let own: Vec<&Line<'_>> = lines
            .iter()
            .filter(|(k, _)| &k.0 == engine)
            .map(|(_, l)| l)
            .collect();
        let points: Vec<&SearchPoint> = own.iter().map(|l| l.0).collect();
        for (label, (_, runs)) in super::plots::setting_labels(&points).into_iter().zip(own) {
            let mut previous = None;
            let point_labels = runs
                .values()
                .map(|(_, v)| {
                    let changed = previous != Some(v);
                    previous = Some(v);
                    if changed { v.clone() } else { String::new() }
                })
                .collect();
            let series = Series {
                label: format!("{engine} {label}").trim_end().to_string(),
                colour: colour(0),
                hollow: false,
                points: runs.iter().map(|(n, (y, _))| (*n as f64, *y)).collect(),
                line: true,
                frontier: Vec::new(),
                point_labels,
            };
            named.push((series.label.clone(), series));
        }
    }
    named.sort_by(|a, b| version_order(&a.0, &b.0));
    named
        .into_iter()
        .enumerate()
        .map(|(i, (_, s))| Series {
            colour: colour(i),
            ..s
        })
        .collect()
}

/// The legend's height as a share of the plot area: about 16 px a line and 12 of padding, in
/// some 370 px of plot.
fn legend_share(lines: usize) -> f64 {
    ((lines * 16 + 12) as f64 / 370.0).min(0.8)
}

/// The legend goes where the lines leave more room: the upper right corner when fewer points
/// lie in the top band the legend would cover than in the bottom one.
fn legend_upper(axes: &Axes<'_>, series: &[Series]) -> bool {
    let r = super::chart::ranges(axes, series);
    let (y0, y1) = r.y;
    let band = legend_share(series.len()) * (y1 - y0);
    let count = |lo: f64, hi: f64| {
        series
            .iter()
            .flat_map(|s| &s.points)
            .filter(|p| p.1 >= lo && p.1 <= hi)
            .count()
    };
    count(y1 - band, y1) < count(y0, y0 + band)
}

/// The history plots of the group (none where no setting was measured twice).
pub fn plots(out: &mut Vec<Plot>, group: &Group<'_>) -> Result<(), ExportError> {
    let name = group.dataset;
    // Timings of two machines are not one series: the caption says so where they mix.
    let mut machines: Vec<String> = group.runs.iter().map(|(_, r)| machine(r)).collect();
    machines.sort();
    machines.dedup();
    let mixed = if machines.len() > 1 {
        format!(
            "; the runs were made on {} machines (see the History table): timings compare \
             only within one",
            machines.len()
        )
    } else {
        String::new()
    };
    for (file, what, unit, figure) in FIGURES {
        let axes = Axes {
            x_whole: true,
            ..Axes::new("run (the order of the History table)", unit)
        };
        let axes = if file == "history-recall" || file == "history-task-ndcg" {
            axes.recall_y()
        } else {
            Axes {
                y_from_zero: true,
                ..axes
            }
        };
        let lines = series(group, figure);
        // An axis from zero has room above the data for the legend; a recall axis takes the
        // freer corner.
        let axes = if axes.y_from_zero {
            Axes {
                legend_upper: true,
                y_headroom: legend_share(lines.len()),
                ..axes
            }
        } else {
            Axes {
                legend_upper: legend_upper(&axes, &lines),
                ..axes
            }
        };
        add_plot(
            out,
            file,
            format!(
                "{name}: {what} of each engine and setting across runs (labelled with the engine \
                 version where it changes){mixed}"
            ),
            format!("{name}: {what} across runs"),
            axes,
            &lines,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::version_order;
    use std::cmp::Ordering;

    #[test]
    fn versions_order_by_their_numbers() {
        assert_eq!(version_order("1.9.0", "1.10.0"), Ordering::Less);
        assert_eq!(version_order("0.24.1", "0.24.1"), Ordering::Equal);
        assert_eq!(version_order("2.5.1", "2.5.0"), Ordering::Greater);
        // A pre-release word sorts after the numbers of the same place.
        assert_eq!(version_order("1.2", "1.2.0"), Ordering::Less);
    }
}
