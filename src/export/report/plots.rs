//! What the report plots: which series each picture holds (`chart.rs` draws them as SVG and
//! PNG). Each engine keeps one colour across every plot; a run whose searches may have
//! bypassed the index (a possible-full-scan warning) is drawn with hollow markers and
//! "(invalid)" in its legend.

use super::chart::{Axes, Series, chart, colour};
use super::{Group, SearchPoint};
use crate::export::ExportError;
use crate::params::ParamMapExt;

/// One plot of the report.
pub struct Plot {
    /// File stem under `plots/`.
    pub name: &'static str,
    pub title: String,
    pub svg: String,
    /// The same plot as a PNG image.
    pub png: Vec<u8>,
}

impl Plot {
    fn new(name: &'static str, title: String, (svg, png): (String, Vec<u8>)) -> Plot {
        Plot {
            name,
            title,
            svg,
            png,
        }
    }
}

/// True when the group's searches ran under more than one filter level (or some filtered,
/// some not): their recall and QPS describe different problems and share no frontier, so the
/// recall plots keep the unfiltered points only, and the selectivity plots show the rest.
fn mixed_filter_levels(group: &Group<'_>) -> bool {
    let mut levels = group
        .points
        .iter()
        .map(|p| p.search.filter.as_ref().map(|f| f.name.as_str()));
    match levels.next() {
        Some(first) => levels.any(|l| l != first),
        None => false,
    }
}

/// Per engine, after a build, one point per filter level: the search with the highest
/// recall there (then the highest QPS), at x = the level's measured selectivity in %.
fn per_selectivity(group: &Group<'_>, y: fn(&SearchPoint) -> f64) -> Vec<Series> {
    group
        .engines
        .iter()
        .enumerate()
        .filter_map(|(i, engine)| {
            let mut best: Vec<(f64, &SearchPoint)> = Vec::new();
            for p in group
                .points
                .iter()
                .filter(|p| &p.engine == engine && p.after_build)
            {
                let Some(f) = &p.search.filter else { continue };
                let x = f.selectivity * 100.0;
                match best.iter_mut().find(|(bx, _)| *bx == x) {
                    Some(slot) => {
                        if (p.recall, p.qps) > (slot.1.recall, slot.1.qps) {
                            slot.1 = p;
                        }
                    }
                    None => best.push((x, p)),
                }
            }
            let mut points: Vec<(f64, f64)> = best
                .iter()
                .map(|(x, p)| (*x, y(p)))
                .filter(|(a, b)| *a > 0.0 && b.is_finite())
                .collect();
            if points.len() < 2 {
                return None;
            }
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let violated = best
                .iter()
                .any(|(_, p)| p.search.filter.as_ref().is_some_and(|f| f.violations > 0));
            Some(Series {
                label: if violated {
                    format!("{engine} (invalid: filter violations)")
                } else {
                    engine.clone()
                },
                colour: colour(i),
                hollow: violated,
                points,
                line: true,
            })
        })
        .collect()
}

/// Points of each engine after a build, one series per engine (frontier line joined).
fn per_engine(
    group: &Group<'_>,
    y: impl Fn(&SearchPoint) -> Option<f64>,
    x: impl Fn(&SearchPoint) -> Option<f64>,
    frontier_line: bool,
) -> Vec<Series> {
    let mixed_filters = mixed_filter_levels(group);
    group
        .engines
        .iter()
        .enumerate()
        .filter_map(|(i, engine)| {
            let pts: Vec<&SearchPoint> = group
                .points
                .iter()
                .filter(|p| &p.engine == engine && p.after_build)
                .filter(|p| !mixed_filters || p.search.filter.is_none())
                .collect();
            let mut points: Vec<(f64, f64)> = pts
                .iter()
                .filter_map(|p| Some((x(p)?, y(p)?)))
                .filter(|(a, b)| a.is_finite() && b.is_finite())
                .collect();
            if points.is_empty() {
                return None;
            }
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let hollow = pts.iter().any(|p| p.invalid);
            Some(Series {
                label: if hollow {
                    format!("{engine} (invalid: possible full scan)")
                } else {
                    engine.clone()
                },
                colour: colour(i),
                hollow,
                points,
                line: frontier_line,
            })
        })
        .collect()
}

/// Keeps only the Pareto frontier (higher x and higher y better) of each series.
fn frontier_only(series: &mut [Series]) {
    for s in series {
        let mut sorted = s.points.clone();
        sorted.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.total_cmp(&a.1)));
        let mut best = f64::NEG_INFINITY;
        let mut keep = Vec::new();
        for p in sorted {
            if p.1 > best {
                best = p.1;
                keep.push(p);
            }
        }
        keep.reverse();
        s.points = keep;
    }
}

/// Draws `series` as plot `name` (none when there is nothing to draw); the page caption is
/// `caption`, the picture's title `title`.
fn add(
    out: &mut Vec<Plot>,
    name: &'static str,
    caption: String,
    title: String,
    axes: Axes<'_>,
    series: &[Series],
) -> Result<(), ExportError> {
    if series.is_empty() {
        return Ok(());
    }
    let drawn = chart(&title, &axes, series)?;
    out.push(Plot::new(name, caption, drawn));
    Ok(())
}

/// Every plot the group's data supports.
pub fn plots(group: &Group<'_>) -> Result<Vec<Plot>, ExportError> {
    let mut out = Vec::new();
    let name = group.dataset;
    let recall = |p: &SearchPoint| Some(p.recall);
    let mut qps = per_engine(group, |p| Some(p.qps), recall, true);
    frontier_only(&mut qps);
    add(
        &mut out,
        "recall-qps",
        format!("{name}: recall vs QPS (Pareto frontier per engine)"),
        format!("{name}: recall vs QPS"),
        Axes::new("recall@K", "queries per second").log_y(),
        &qps,
    )?;
    let vs_recall: [VsRecall; 3] = [
        ("recall-p99", "p99 latency", "p99 latency, ms", |p| {
            Some(p.p99_ms)
        }),
        ("recall-build", "build time", "build time, s", |p| p.build_s),
        ("recall-index-size", "index size", "index size, MB", |p| {
            p.index_mb
        }),
    ];
    for (file, what, unit, y) in vs_recall {
        add(
            &mut out,
            file,
            format!("{name}: recall vs {what}"),
            format!("{name}: recall vs {what}"),
            Axes::new("recall@K", unit).log_y(),
            &per_engine(group, y, recall, false),
        )?;
    }
    add(
        &mut out,
        "selectivity-recall",
        format!("{name}: recall vs filter selectivity (best setting per level)"),
        format!("{name}: recall vs selectivity"),
        Axes::new("points passing the filter, %", "recall@K").log_x(),
        &per_selectivity(group, |p| p.recall),
    )?;
    add(
        &mut out,
        "selectivity-qps",
        format!("{name}: QPS vs filter selectivity (the setting of the recall plot)"),
        format!("{name}: QPS vs selectivity"),
        Axes::new("points passing the filter, %", "queries per second")
            .log_x()
            .log_y(),
        &per_selectivity(group, |p| p.qps),
    )?;
    add(
        &mut out,
        "latency-cdf",
        format!("{name}: latency distribution per setting (from the per-query sidecar)"),
        format!("{name}: latency CDF per setting"),
        Axes::new("latency, ms", "fraction of queries at or below").log_x(),
        &latency_cdfs(group),
    )?;
    add(
        &mut out,
        "concurrency-qps",
        format!("{name}: QPS vs concurrency"),
        format!("{name}: QPS vs concurrency (closed loop)"),
        Axes::new("concurrent clients", "queries per second"),
        &group.load_series(false, |l| Some((l.concurrency as f64, l.qps))),
    )?;
    add(
        &mut out,
        "concurrency-p99",
        format!("{name}: p99 latency vs concurrency"),
        format!("{name}: p99 vs concurrency (closed loop)"),
        Axes::new("concurrent clients", "p99 latency, ms").log_y(),
        &group.load_series(false, |l| Some((l.concurrency as f64, l.latency.p99_ms))),
    )?;
    add(
        &mut out,
        "rate-p99",
        format!("{name}: p99 latency vs offered rate"),
        format!("{name}: p99 vs offered rate (open loop)"),
        Axes {
            hline: group.slo_ms.map(|ms| (ms, "SLO")),
            ..Axes::new("offered rate, queries/s", "p99 latency, ms").log_y()
        },
        &group.load_series(true, |l| Some((l.target_rate?, l.latency.p99_ms))),
    )?;
    // Runbook timelines: only runs with more than one search step over the runbook.
    let timelines: [Timeline; 3] = [
        ("timeline", "recall@K", |p| p.recall, false),
        ("timeline-p99", "p99 latency, ms", |p| p.p99_ms, true),
        (
            "timeline-stale",
            "stale hits",
            |p| p.search.stale_hits as f64,
            false,
        ),
    ];
    for (file, what, y, log) in timelines {
        let series: Vec<Series> = group
            .timeline(y)
            .into_iter()
            .filter(|s| s.points.len() > 1)
            .collect();
        let axes = Axes::new("runbook step", what);
        add(
            &mut out,
            file,
            format!("{name}: {what} per runbook step"),
            format!("{name}: {what} per runbook step"),
            if log { axes.log_y() } else { axes },
            &series,
        )?;
    }
    // Stream steps: their per-second timeline, one line per run and step.
    let streams: [StreamPlot; 4] = [
        (
            "stream-recall",
            "recall@K (streaming rule)",
            |s| s.recall,
            false,
        ),
        (
            "stream-qps",
            "searches per second",
            |s| s.searches as f64,
            false,
        ),
        ("stream-p99", "search p99 latency, ms", |s| s.p99_ms, true),
        (
            "stream-writes",
            "points written per second",
            |s| s.points_written as f64,
            false,
        ),
    ];
    for (file, what, y, log) in streams {
        let axes = Axes::new("seconds into the stream step", what);
        add(
            &mut out,
            file,
            format!("{name}: {what} per second of each stream step (searches while writing)"),
            format!("{name}: {what} while writing"),
            if log { axes.log_y() } else { axes },
            &group.stream_series(y),
        )?;
    }
    Ok(out)
}

/// A stream-step timeline plot: file stem, figure, how to read it, log axis.
type StreamPlot = (
    &'static str,
    &'static str,
    fn(&crate::results::StreamSecond) -> f64,
    bool,
);

/// A recall-vs-cost plot: file stem, what, axis description, how to read it.
type VsRecall = (
    &'static str,
    &'static str,
    &'static str,
    fn(&SearchPoint) -> Option<f64>,
);

/// A runbook timeline plot: file stem, figure, how to read it, log axis.
type Timeline = (&'static str, &'static str, fn(&SearchPoint) -> f64, bool);

/// Points per CDF line: enough for the shape, small enough for the page.
const CDF_POINTS: usize = 200;

/// One CDF line per after-build setting with per-query latencies (at most 12, the first ones).
fn latency_cdfs(group: &Group<'_>) -> Vec<Series> {
    super::latencies(group)
        .into_iter()
        .take(12)
        .map(|(i, ms)| {
            let p = &group.points[i];
            let n = ms.len();
            let step = (n / CDF_POINTS).max(1);
            let mut points: Vec<(f64, f64)> = (0..n)
                .step_by(step)
                .map(|j| (ms[j], (j + 1) as f64 / n as f64))
                .collect();
            if points.last().is_some_and(|l| l.1 < 1.0) {
                points.push((ms[n - 1], 1.0));
            }
            let engine = group
                .engines
                .iter()
                .position(|e| e == &p.engine)
                .unwrap_or(0);
            Series {
                label: format!("{} {}", p.engine, p.setting),
                colour: colour(engine),
                hollow: p.invalid,
                points,
                line: true,
            }
        })
        .collect()
}

impl Group<'_> {
    /// One series per (run, search setting) of load levels, closed or open loop.
    fn load_series(
        &self,
        open_loop: bool,
        xy: impl Fn(&crate::results::load::LoadLevel) -> Option<(f64, f64)>,
    ) -> Vec<Series> {
        let mut out = Vec::new();
        for p in &self.points {
            let levels: Vec<(f64, f64)> = p
                .search
                .load
                .iter()
                .filter(|l| (l.kind == "open") == open_loop)
                .filter_map(&xy)
                .collect();
            if levels.is_empty() {
                continue;
            }
            let engine = self
                .engines
                .iter()
                .position(|e| e == &p.engine)
                .unwrap_or(0);
            out.push(Series {
                label: format!("{} {}", p.engine, p.setting),
                colour: colour(engine),
                hollow: p.invalid,
                points: levels,
                line: true,
            });
        }
        out
    }

    /// A figure per second of every stream step, one series per run and step.
    fn stream_series(&self, y: fn(&crate::results::StreamSecond) -> f64) -> Vec<Series> {
        let mut out = Vec::new();
        for (path, run) in &self.runs {
            let engine = self
                .engines
                .iter()
                .position(|e| e == &run.engine.name)
                .unwrap_or(0);
            for config in &run.configs {
                for step in config.streams() {
                    // Seconds without searches have no recall or latency to draw.
                    let points: Vec<(f64, f64)> = step
                        .timeline
                        .iter()
                        .filter(|s| s.searches > 0 || s.points_written > 0)
                        .map(|s| (s.second as f64 + 0.5, y(s)))
                        .collect();
                    if points.is_empty() {
                        continue;
                    }
                    out.push(Series {
                        label: format!(
                            "{} {} step {} [{}]",
                            run.engine.name,
                            config.build_params.label(),
                            step.runbook_step,
                            super::stem(path)
                        ),
                        colour: colour(engine),
                        hollow: false,
                        points,
                        line: true,
                    });
                }
            }
        }
        out
    }

    /// A figure at each runbook step, one series per run and search setting.
    fn timeline(&self, y: fn(&SearchPoint) -> f64) -> Vec<Series> {
        let mut out: Vec<Series> = Vec::new();
        for p in &self.points {
            let label = format!("{} {} [{}]", p.engine, p.setting, p.run);
            let point = (p.runbook_step as f64, y(p));
            match out.iter_mut().find(|s| s.label == label) {
                Some(s) => s.points.push(point),
                None => {
                    let engine = self
                        .engines
                        .iter()
                        .position(|e| e == &p.engine)
                        .unwrap_or(0);
                    out.push(Series {
                        label,
                        colour: colour(engine),
                        hollow: p.invalid,
                        points: vec![point],
                        line: true,
                    });
                }
            }
        }
        out
    }
}
