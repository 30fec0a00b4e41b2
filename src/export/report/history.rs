//! `report --history`: each figure of one engine, dataset and setting across the runs that
//! measured it, in the order the runs were made (their start time, then the engine version),
//! one plot per figure, each point labelled with the engine version it was measured on. The
//! x axis counts runs; the page lists them in that order (`id="history-<dataset>"`), so that
//! run 3 of a plot is row 3 of the table. Only settings measured in more than one run are
//! drawn, after a build: a later runbook step holds another collection.
//!
//! The figures' axes start at zero (recall's at its [0, 1] bounds), so that a change reads
//! against the figure's size rather than filling the picture.

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

/// One line per engine and setting measured in more than one run: (run number, figure),
/// each point labelled with the run's engine version. Per run, the setting's first search
/// after a build counts.
fn series(group: &Group<'_>, figure: fn(&SearchPoint) -> Option<f64>) -> Vec<Series> {
    let number: BTreeMap<usize, usize> = ordered(group)
        .into_iter()
        .enumerate()
        .map(|(i, r)| (r, i + 1))
        .collect();
    let mut lines: BTreeMap<(String, String), BTreeMap<usize, (f64, String)>> = BTreeMap::new();
    for p in group.points.iter().filter(|p| p.after_build) {
        let Some(y) = figure(p).filter(|y| y.is_finite()) else {
            continue;
        };
        let Some(&n) = number.get(&p.run_index) else {
            continue;
        };
        let version = group.runs[p.run_index].1.engine.version.clone();
        lines
            .entry((p.engine.clone(), p.setting.clone()))
            .or_default()
            .entry(n)
            .or_insert((y, version));
    }
    lines
        .into_iter()
        .filter(|(_, runs)| runs.len() > 1)
        .enumerate()
        .map(|(i, ((engine, setting), runs))| Series {
            label: format!("{engine} {setting}"),
            colour: colour(i),
            hollow: false,
            points: runs.iter().map(|(n, (y, _))| (*n as f64, *y)).collect(),
            line: true,
            frontier: Vec::new(),
            point_labels: runs.into_values().map(|(_, version)| version).collect(),
        })
        .collect()
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
        add_plot(
            out,
            file,
            format!(
                "{name}: {what} of each engine and setting across runs (points labelled with the \
                 engine version){mixed}"
            ),
            format!("{name}: {what} across runs"),
            axes,
            &series(group, figure),
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
