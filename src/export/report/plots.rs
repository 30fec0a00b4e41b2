//! What the report plots: which series each picture holds (`chart.rs` draws them as SVG and
//! PNG). Each engine keeps one colour across every plot; a run whose searches may have
//! bypassed the index (a possible-full-scan warning) is drawn with hollow markers and
//! "(invalid)" in its legend. In the recall plots every setting is a point labelled with the
//! parameters that tell it apart; recall vs QPS draws each engine's Pareto frontier as a line
//! over them. Recall axes stay within [0, 1]; QPS is on a log axis, as ann-benchmarks draws it.

pub use super::chart::Ranges;
use super::chart::{Axes, Drawn, Series, chart, colour};
use super::series::latency_cdfs;
use super::{Group, SearchPoint};
use crate::export::ExportError;
use crate::metrics::pareto::frontier_by;
use crate::params::{ParamMap, ParamMapExt};

/// One plot of the report.
pub struct Plot {
    /// File stem under `plots/`.
    pub name: &'static str,
    pub title: String,
    pub svg: String,
    /// The same plot as a PNG image.
    pub png: Vec<u8>,
    /// The value ranges its axes show.
    pub ranges: Ranges,
}

impl Plot {
    fn new(name: &'static str, title: String, drawn: Drawn) -> Plot {
        Plot {
            name,
            title,
            svg: drawn.svg,
            png: drawn.png,
            ranges: drawn.ranges,
        }
    }
}

/// True when the group's searches ran under more than one filter level (or some filtered,
/// some not): their recall and QPS describe different problems and share no frontier, so the
/// recall plots keep the unfiltered points only, and the selectivity plots show the rest.
pub(super) fn mixed_filter_levels(group: &Group<'_>) -> bool {
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
            let label = if violated {
                format!("{engine} (invalid: filter violations)")
            } else {
                engine.clone()
            };
            Some(Series::joined(label, colour(i), violated, points))
        })
        .collect()
}

/// The parameters that tell an engine's settings apart (those whose value differs between
/// them), per setting: `hnsw_ef=16`. A lone setting is labelled with its search parameters.
pub(super) fn setting_labels(points: &[&SearchPoint]) -> Vec<String> {
    let pairs: Vec<Vec<(String, String)>> = points
        .iter()
        .map(|p| {
            let named = |m: &ParamMap| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.to_string()))
                    .collect::<Vec<_>>()
            };
            let mut all = named(p.build_params);
            all.extend(named(&p.search.search_params));
            all
        })
        .collect();
    let value = |setting: &[(String, String)], key: &str| {
        setting
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    let mut keys: Vec<&str> = Vec::new();
    for (k, _) in pairs.iter().flatten() {
        let varies = pairs.iter().any(|s| value(s, k) != value(&pairs[0], k));
        if varies && !keys.contains(&k.as_str()) {
            keys.push(k);
        }
    }
    if keys.is_empty() {
        return points
            .iter()
            .map(|p| {
                let params = &p.search.search_params;
                if params.is_empty() {
                    String::new()
                } else {
                    params.label()
                }
            })
            .collect();
    }
    pairs
        .iter()
        .map(|s| {
            keys.iter()
                .filter_map(|k| value(s, k).map(|v| format!("{k}={v}")))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// How [`per_engine`] draws and names a series beyond its points.
enum Legend {
    /// The engine's name.
    Engine,
    /// The engine's name, and its Pareto frontier as a line over the points.
    Frontier,
    /// The engine's name and what its figure is of (from its first point that says).
    Of(fn(&SearchPoint) -> Option<&'static str>),
}

/// Every after-build setting of each engine as a labelled point at (recall, `y`), one series
/// per engine. A frontier (higher recall and higher `y` better) is a line over the points,
/// which keeps the dominated settings visible.
fn per_engine(
    group: &Group<'_>,
    y: impl Fn(&SearchPoint) -> Option<f64>,
    legend: Legend,
) -> Vec<Series> {
    per_engine_at(group, |p| Some(p.recall), y, legend)
}

/// [`per_engine`] with another figure than recall on the x axis (higher better); settings
/// without it are left out.
fn per_engine_at(
    group: &Group<'_>,
    x: impl Fn(&SearchPoint) -> Option<f64>,
    y: impl Fn(&SearchPoint) -> Option<f64>,
    legend: Legend,
) -> Vec<Series> {
    let mixed_filters = mixed_filter_levels(group);
    group
        .engines
        .iter()
        .enumerate()
        .filter_map(|(i, engine)| {
            let mut pts: Vec<(&SearchPoint, (f64, f64))> = group
                .points
                .iter()
                .filter(|p| &p.engine == engine && p.after_build)
                .filter(|p| !mixed_filters || p.search.filter.is_none())
                .filter_map(|p| Some((p, (x(p)?, y(p)?))))
                .filter(|(_, (a, b))| a.is_finite() && b.is_finite())
                .collect();
            if pts.is_empty() {
                return None;
            }
            pts.sort_by(|a, b| a.1.0.total_cmp(&b.1.0));
            let settings: Vec<&SearchPoint> = pts.iter().map(|(p, _)| *p).collect();
            let points: Vec<(f64, f64)> = pts.iter().map(|(_, xy)| *xy).collect();
            let hollow = settings.iter().any(|p| p.invalid);
            let mut label = engine.clone();
            if let Legend::Of(of) = legend
                && let Some(of) = settings.iter().find_map(|p| of(p))
            {
                label = format!("{label}: {of}");
            }
            if hollow {
                label.push_str(" (invalid: possible full scan)");
            }
            Some(Series {
                label,
                colour: colour(i),
                hollow,
                frontier: match legend {
                    Legend::Frontier => frontier_by(&points, |&p| p),
                    _ => Vec::new(),
                },
                point_labels: setting_labels(&settings),
                points,
                line: false,
            })
        })
        .collect()
}

/// The setting's retrieval-task NDCG@10, on datasets with relevance judgments.
fn task_ndcg(p: &SearchPoint) -> Option<f64> {
    p.search.end_task.as_ref()?.metrics.get("ndcg@10").copied()
}

/// Draws `series` as plot `name` (none when there is nothing to draw); the page caption is
/// `caption`, the picture's title `title`.
pub(super) fn add_plot(
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
    add_plot(
        &mut out,
        "recall-qps",
        format!("{name}: recall vs QPS (every setting; the line is each engine's Pareto frontier)"),
        format!("{name}: recall vs QPS"),
        Axes::new("recall@K", "queries per second")
            .recall_x()
            .log_y(),
        &per_engine(group, |p| Some(p.qps), Legend::Frontier),
    )?;
    add_plot(
        &mut out,
        "task-ndcg-qps",
        format!(
            "{name}: retrieval-task NDCG@10 against the dataset's relevance judgments vs QPS \
             (beside recall vs QPS; the exact engine's point is the ceiling)"
        ),
        format!("{name}: task NDCG@10 vs QPS"),
        Axes::new("NDCG@10 (retrieval task)", "queries per second")
            .recall_x()
            .log_y(),
        &per_engine_at(group, task_ndcg, |p| Some(p.qps), Legend::Frontier),
    )?;
    let vs_recall: [VsRecall; 2] = [
        ("recall-p99", "p99 latency", "p99 latency, ms", |p| {
            Some(p.p99_ms)
        }),
        ("recall-build", "build time", "build time, s", |p| p.build_s),
    ];
    for (file, what, unit, y) in vs_recall {
        add_plot(
            &mut out,
            file,
            format!("{name}: recall vs {what}"),
            format!("{name}: recall vs {what}"),
            Axes::new("recall@K", unit).recall_x().log_y(),
            &per_engine(group, y, Legend::Engine),
        )?;
    }
    size_plots(&mut out, group)?;
    add_plot(
        &mut out,
        "selectivity-recall",
        format!("{name}: recall vs filter selectivity (best setting per level)"),
        format!("{name}: recall vs selectivity"),
        Axes::new("points passing the filter, %", "recall@K")
            .log_x()
            .recall_y(),
        &per_selectivity(group, |p| p.recall),
    )?;
    add_plot(
        &mut out,
        "selectivity-qps",
        format!("{name}: QPS vs filter selectivity (the setting of the recall plot)"),
        format!("{name}: QPS vs selectivity"),
        Axes::new("points passing the filter, %", "queries per second")
            .log_x()
            .log_y(),
        &per_selectivity(group, |p| p.qps),
    )?;
    add_plot(
        &mut out,
        "latency-cdf",
        format!("{name}: latency distribution per setting (from the per-query sidecar)"),
        format!("{name}: latency CDF per setting"),
        Axes::new("latency, ms", "fraction of queries at or below").log_x(),
        &latency_cdfs(group),
    )?;
    add_plot(
        &mut out,
        "concurrency-qps",
        format!("{name}: QPS vs concurrency"),
        format!("{name}: QPS vs concurrency (closed loop)"),
        Axes::new("concurrent clients", "queries per second"),
        &group.load_series(false, |l| Some((l.concurrency as f64, l.qps))),
    )?;
    add_plot(
        &mut out,
        "concurrency-p99",
        format!("{name}: p99 latency vs concurrency"),
        format!("{name}: p99 vs concurrency (closed loop)"),
        Axes::new("concurrent clients", "p99 latency, ms").log_y(),
        &group.load_series(false, |l| Some((l.concurrency as f64, l.latency.p99_ms))),
    )?;
    add_plot(
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
    super::fusion_plots::fusion_plots(&mut out, group)?;
    timeline_plots(&mut out, group)?;
    Ok(out)
}

/// Runbook timelines (only runs with more than one search step over the runbook) and the
/// per-second timelines of stream steps.
fn timeline_plots(out: &mut Vec<Plot>, group: &Group<'_>) -> Result<(), ExportError> {
    let name = group.dataset;
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
        let axes = if file == "timeline" {
            axes.recall_y()
        } else {
            axes
        };
        add_plot(
            out,
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
        let axes = if file == "stream-recall" {
            axes.recall_y()
        } else {
            axes
        };
        add_plot(
            out,
            file,
            format!("{name}: {what} per second of each stream step (searches while writing)"),
            format!("{name}: {what} while writing"),
            if log { axes.log_y() } else { axes },
            &group.stream_series(y),
        )?;
    }
    Ok(())
}

/// What a setting costs against the recall it reaches: the total size per vector, with the
/// raw vectors' size as the floor, and the memory the engine holds once built, each engine's
/// legend saying whose memory that is.
fn size_plots(out: &mut Vec<Plot>, group: &Group<'_>) -> Result<(), ExportError> {
    let name = group.dataset;
    let floor = group.raw.map(|r| {
        (
            r.bytes_per_vector(),
            format!("raw vectors: {:.0} B", r.bytes_per_vector()),
        )
    });
    add_plot(
        out,
        "recall-total-size",
        format!(
            "{name}: recall vs total size per vector (everything the collection costs; the red \
             line is the raw vectors' own size)"
        ),
        format!("{name}: recall vs total size per vector"),
        Axes {
            hline: floor.as_ref().map(|(b, label)| (*b, label.as_str())),
            ..Axes::new("recall@K", "total bytes per live vector")
                .recall_x()
                .log_y()
        },
        &per_engine(group, |p| p.total_bytes_per_vector, Legend::Engine),
    )?;
    let memory = per_engine(
        group,
        |p| p.memory.map(|m| m.mb),
        Legend::Of(|p| p.memory.map(|m| m.of)),
    );
    add_plot(
        out,
        "recall-memory",
        format!("{name}: recall vs memory after build (peak during the search right after it)"),
        format!("{name}: recall vs memory after build"),
        Axes::new("recall@K", "memory after build, MB")
            .recall_x()
            .log_y(),
        &memory,
    )
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
