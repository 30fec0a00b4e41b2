//! The report's pictures, as SVG strings (plotters' SVG backend: text is SVG text, no font
//! file is needed). Each engine keeps one colour across every plot; a run whose searches may
//! have bypassed the index (a possible-full-scan warning) is drawn with hollow markers and
//! "(invalid)" in its legend.

use plotters::prelude::*;

use super::{Group, SearchPoint};
use crate::export::ExportError;

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

const SIZE: (u32, u32) = (760, 460);

/// Engine colours, in the order engines first appear (sorted by name).
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
    RGBColor(140, 86, 75),
    RGBColor(127, 127, 127),
];

pub fn colour(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

fn fail(e: impl std::fmt::Display) -> ExportError {
    ExportError {
        format: "svg plot",
        message: e.to_string(),
    }
}

/// An axis label: whole numbers from 1000 up, else at most 4 significant digits without
/// trailing zeros (log axes otherwise print 0.7000000000000001).
fn tick(v: f64) -> String {
    if v.abs() >= 1000.0 {
        return format!("{v:.0}");
    }
    let digits = if v == 0.0 {
        0
    } else {
        (3 - v.abs().log10().floor() as i32).clamp(0, 8) as usize
    };
    let text = format!("{v:.digits$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A padded range of `values` (linear), never empty.
fn span(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-9 {
        return (
            lo - 0.5_f64.max(lo.abs() * 0.1),
            hi + 0.5_f64.max(hi.abs() * 0.1),
        );
    }
    let pad = (hi - lo) * 0.05;
    (lo - pad, hi + pad)
}

/// A positive range for a log axis.
fn log_span(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite() && *v > 0.0) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.1, 10.0);
    }
    (lo / 1.5, hi * 1.5)
}

/// A line per series; `x_log`/`y_log` choose logarithmic axes.
struct Series {
    label: String,
    colour: RGBColor,
    hollow: bool,
    points: Vec<(f64, f64)>,
    /// Joined by a line (else markers only).
    line: bool,
}

/// The font every plot's text is drawn with, compiled in so that no system font is needed
/// (DejaVu Sans, licence beside it in assets/fonts).
const FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

/// Registers [`FONT`] as plotters' sans-serif once per process.
fn register_font() -> Result<(), ExportError> {
    static REGISTERED: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            plotters::style::register_font("sans-serif", FontStyle::Normal, FONT)
                .map_err(|_| "the embedded font cannot be read".to_string())
        })
        .clone()
        .map_err(fail)
}

/// A plot as SVG text and PNG bytes, drawn from the same description.
#[allow(clippy::too_many_arguments)]
fn chart(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    y_log: bool,
    x_log: bool,
    hline: Option<(f64, &str)>,
) -> Result<(String, Vec<u8>), ExportError> {
    register_font()?;
    let mut svg = String::new();
    draw(
        SVGBackend::with_string(&mut svg, SIZE).into_drawing_area(),
        title,
        x_desc,
        y_desc,
        series,
        y_log,
        x_log,
        hline,
    )?;
    let mut rgb = vec![0u8; SIZE.0 as usize * SIZE.1 as usize * 3];
    draw(
        BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area(),
        title,
        x_desc,
        y_desc,
        series,
        y_log,
        x_log,
        hline,
    )?;
    Ok((svg, encode_png(&rgb)?))
}

/// RGB pixels of a [`SIZE`] plot as a PNG file.
fn encode_png(rgb: &[u8]) -> Result<Vec<u8>, ExportError> {
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, SIZE.0, SIZE.1);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(fail)?;
        writer.write_image_data(rgb).map_err(fail)?;
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[Series],
    y_log: bool,
    x_log: bool,
    hline: Option<(f64, &str)>,
) -> Result<(), ExportError> {
    {
        root.fill(&WHITE).map_err(fail)?;
        let xs = || series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
        let ys = || {
            series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.1))
                .chain(hline.map(|h| h.0))
        };
        // A log axis over less than a decade shows no tick labels at all: linear then.
        let decade = |v: (f64, f64)| v.1 / v.0 >= 10.0;
        let y_log = y_log && decade(log_span(ys()));
        let x_log = x_log && decade(log_span(xs()));
        let y_desc = if y_log {
            format!("{y_desc} (log scale)")
        } else {
            y_desc.to_string()
        };
        let x_desc = if x_log {
            format!("{x_desc} (log scale)")
        } else {
            x_desc.to_string()
        };
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(42)
            .y_label_area_size(70);
        macro_rules! draw {
            ($chart:expr) => {{
                let mut chart = $chart;
                chart
                    .configure_mesh()
                    .x_desc(x_desc.as_str())
                    .y_desc(y_desc.as_str())
                    .light_line_style(RGBColor(235, 235, 235))
                    .x_label_formatter(&|v| tick(*v))
                    .y_label_formatter(&|v| tick(*v))
                    .draw()
                    .map_err(fail)?;
                for s in series {
                    let style = ShapeStyle {
                        color: s.colour.to_rgba(),
                        filled: !s.hollow,
                        stroke_width: 2,
                    };
                    if s.line && s.points.len() > 1 {
                        chart
                            .draw_series(LineSeries::new(
                                s.points.iter().copied(),
                                s.colour.stroke_width(2),
                            ))
                            .map_err(fail)?;
                    }
                    let colour = s.colour;
                    // Dense lines (a CDF) carry no markers: the line is the data.
                    let markers = if s.points.len() <= 50 {
                        &s.points[..]
                    } else {
                        &[]
                    };
                    chart
                        .draw_series(markers.iter().map(|&p| Circle::new(p, 4, style)))
                        .map_err(fail)?
                        .label(s.label.clone())
                        .legend(move |(x, y)| Circle::new((x + 10, y), 4, colour.filled()));
                }
                if let Some((y, label)) = hline {
                    let (x0, x1) = span(xs());
                    let red = RGBColor(200, 0, 0);
                    chart
                        .draw_series(LineSeries::new(
                            [(x0, y), (x1, y)].into_iter(),
                            red.stroke_width(1),
                        ))
                        .map_err(fail)?
                        .label(label.to_string())
                        .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], red));
                }
                chart
                    .configure_series_labels()
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .position(SeriesLabelPosition::LowerLeft)
                    .draw()
                    .map_err(fail)?;
            }};
        }
        match (x_log, y_log) {
            (false, true) => {
                let (x0, x1) = span(xs());
                let (y0, y1) = log_span(ys());
                draw!(
                    builder
                        .build_cartesian_2d(x0..x1, (y0..y1).log_scale())
                        .map_err(fail)?
                )
            }
            (true, true) => {
                let (x0, x1) = log_span(xs());
                let (y0, y1) = log_span(ys());
                draw!(
                    builder
                        .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
                        .map_err(fail)?
                )
            }
            (true, false) => {
                let (x0, x1) = log_span(xs());
                let (y0, y1) = span(ys());
                draw!(
                    builder
                        .build_cartesian_2d((x0..x1).log_scale(), y0..y1)
                        .map_err(fail)?
                )
            }
            (false, false) => {
                let (x0, x1) = span(xs());
                let (y0, y1) = span(ys());
                draw!(builder.build_cartesian_2d(x0..x1, y0..y1).map_err(fail)?)
            }
        }
        root.present().map_err(fail)?;
    }
    Ok(())
}

/// Points of each engine after a build, one series per engine (frontier line joined).
fn per_engine(
    group: &Group<'_>,
    y: impl Fn(&SearchPoint) -> Option<f64>,
    x: impl Fn(&SearchPoint) -> Option<f64>,
    frontier_line: bool,
) -> Vec<Series> {
    group
        .engines
        .iter()
        .enumerate()
        .filter_map(|(i, engine)| {
            let pts: Vec<&SearchPoint> = group
                .points
                .iter()
                .filter(|p| &p.engine == engine && p.after_build)
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

/// Every plot the group's data supports.
pub fn plots(group: &Group<'_>) -> Result<Vec<Plot>, ExportError> {
    let mut out = Vec::new();
    let name = group.dataset;
    let recall = |p: &SearchPoint| Some(p.recall);
    if group.points.iter().any(|p| p.after_build) {
        let mut qps = per_engine(group, |p| Some(p.qps), recall, true);
        frontier_only(&mut qps);
        out.push(Plot::new(
            "recall-qps",
            format!("{name}: recall vs QPS (Pareto frontier per engine)"),
            chart(
                &format!("{name}: recall vs QPS"),
                "recall@K",
                "queries per second",
                &qps,
                true,
                false,
                None,
            )?,
        ));
        let p99 = per_engine(group, |p| Some(p.p99_ms), recall, false);
        out.push(Plot::new(
            "recall-p99",
            format!("{name}: recall vs p99 latency"),
            chart(
                &format!("{name}: recall vs p99 latency"),
                "recall@K",
                "p99 latency, ms",
                &p99,
                true,
                false,
                None,
            )?,
        ));
        let build = per_engine(group, |p| p.build_s, recall, false);
        if !build.is_empty() {
            out.push(Plot::new(
                "recall-build",
                format!("{name}: recall vs build time"),
                chart(
                    &format!("{name}: recall vs build time"),
                    "recall@K",
                    "build time, s",
                    &build,
                    true,
                    false,
                    None,
                )?,
            ));
        }
        let size = per_engine(group, |p| p.index_mb, recall, false);
        if !size.is_empty() {
            out.push(Plot::new(
                "recall-index-size",
                format!("{name}: recall vs index size"),
                chart(
                    &format!("{name}: recall vs index size"),
                    "recall@K",
                    "index size, MB",
                    &size,
                    true,
                    false,
                    None,
                )?,
            ));
        }
    }
    let cdfs = latency_cdfs(group);
    if !cdfs.is_empty() {
        out.push(Plot::new(
            "latency-cdf",
            format!("{name}: latency distribution per setting (from the per-query sidecar)"),
            chart(
                &format!("{name}: latency CDF per setting"),
                "latency, ms",
                "fraction of queries at or below",
                &cdfs,
                false,
                true,
                None,
            )?,
        ));
    }
    let closed: Vec<Series> = group.load_series(false, |l| Some((l.concurrency as f64, l.qps)));
    if !closed.is_empty() {
        out.push(Plot::new(
            "concurrency-qps",
            format!("{name}: QPS vs concurrency"),
            chart(
                &format!("{name}: QPS vs concurrency (closed loop)"),
                "concurrent clients",
                "queries per second",
                &closed,
                false,
                false,
                None,
            )?,
        ));
        let p99 = group.load_series(false, |l| Some((l.concurrency as f64, l.latency.p99_ms)));
        out.push(Plot::new(
            "concurrency-p99",
            format!("{name}: p99 latency vs concurrency"),
            chart(
                &format!("{name}: p99 vs concurrency (closed loop)"),
                "concurrent clients",
                "p99 latency, ms",
                &p99,
                true,
                false,
                None,
            )?,
        ));
    }
    let open = group.load_series(true, |l| Some((l.target_rate?, l.latency.p99_ms)));
    if !open.is_empty() {
        let slo = group.slo_ms.map(|ms| (ms, "SLO"));
        out.push(Plot::new(
            "rate-p99",
            format!("{name}: p99 latency vs offered rate"),
            chart(
                &format!("{name}: p99 vs offered rate (open loop)"),
                "offered rate, queries/s",
                "p99 latency, ms",
                &open,
                true,
                false,
                slo,
            )?,
        ));
    }
    // Only runs with more than one search step over the runbook have a timeline.
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
        if series.is_empty() {
            continue;
        }
        out.push(Plot::new(
            file,
            format!("{name}: {what} per runbook step"),
            chart(
                &format!("{name}: {what} per runbook step"),
                "runbook step",
                what,
                &series,
                log,
                false,
                None,
            )?,
        ));
    }
    Ok(out)
}

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

#[cfg(test)]
mod tests {
    use super::tick;

    #[test]
    fn axis_labels_are_short() {
        assert_eq!(tick(0.7000000000000001), "0.7");
        assert_eq!(tick(0.30000000000000004), "0.3");
        assert_eq!(tick(600.0), "600");
        assert_eq!(tick(25000.0), "25000");
        assert_eq!(tick(0.95), "0.95");
        assert_eq!(tick(0.0012346), "0.001235");
        assert_eq!(tick(0.0), "0");
    }
}
