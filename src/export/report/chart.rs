//! How a report plot is drawn: one description, rendered as SVG (text stays text) and as PNG
//! (text rasterised with the compiled-in DejaVu Sans), with the same axes, scales, colours and
//! legend. What to plot is decided in `plots.rs`.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::axis::{bounded_span, log_span, log_ticks, span, tick, x_tick};
use crate::export::ExportError;

pub(super) const SIZE: (u32, u32) = (760, 460);

/// Engine colours, in the order engines first appear (sorted by name): matplotlib's ten
/// `tab10` colours, then six darker ones, so that a report of every engine and its sparse and
/// hybrid series (up to 16) never draws two series in one colour.
const PALETTE: [RGBColor; 16] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
    RGBColor(140, 86, 75),
    RGBColor(127, 127, 127),
    RGBColor(227, 119, 194),
    RGBColor(188, 189, 34),
    RGBColor(0, 0, 0),
    RGBColor(0, 0, 128),
    RGBColor(128, 0, 0),
    RGBColor(0, 110, 110),
    RGBColor(110, 110, 0),
    RGBColor(200, 0, 200),
];

pub(super) fn colour(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

pub(super) fn fail(e: impl std::fmt::Display) -> ExportError {
    ExportError {
        format: "plot",
        message: e.to_string(),
    }
}

/// A series of one engine or setting: markers at `points` (joined by a line when `line`), an
/// optional line over `frontier` (the Pareto frontier of the points), and a label beside each
/// marker when `point_labels` has one per point.
pub(super) struct Series {
    pub(super) label: String,
    pub(super) colour: RGBColor,
    pub(super) hollow: bool,
    pub(super) points: Vec<(f64, f64)>,
    /// Joined by a line (else markers only).
    pub(super) line: bool,
    pub(super) frontier: Vec<(f64, f64)>,
    pub(super) point_labels: Vec<String>,
}

impl Series {
    /// Points joined by a line, without frontier or labels.
    pub(super) fn joined(
        label: String,
        colour: RGBColor,
        hollow: bool,
        points: Vec<(f64, f64)>,
    ) -> Series {
        Series {
            label,
            colour,
            hollow,
            points,
            line: true,
            frontier: Vec::new(),
            point_labels: Vec::new(),
        }
    }
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

/// Axes of a plot: descriptions, log scales, bounds a quantity cannot leave (recall's
/// [0, 1]), an optional horizontal reference line.
#[derive(Clone, Copy)]
pub(super) struct Axes<'a> {
    pub(super) x: &'a str,
    pub(super) y: &'a str,
    pub(super) x_log: bool,
    pub(super) y_log: bool,
    pub(super) x_within: Option<(f64, f64)>,
    pub(super) y_within: Option<(f64, f64)>,
    pub(super) hline: Option<(f64, &'a str)>,
    /// A linear y axis that starts at zero, so that a change between points is seen against
    /// the figure's size (history plots).
    pub(super) y_from_zero: bool,
    /// The x axis counts things (runs): only whole values are labelled.
    pub(super) x_whole: bool,
    /// The legend in the upper right corner instead of the lower left (where the data
    /// leaves that corner free).
    pub(super) legend_upper: bool,
    /// The share of a linear y axis left empty above the data (room for the legend).
    pub(super) y_headroom: f64,
}

/// Recall's bounds: an axis of recall never shows less than 0 or more than 1.
const RECALL_BOUNDS: (f64, f64) = (0.0, 1.0);

impl<'a> Axes<'a> {
    pub(super) fn new(x: &'a str, y: &'a str) -> Axes<'a> {
        Axes {
            x,
            y,
            x_log: false,
            y_log: false,
            x_within: None,
            y_within: None,
            hline: None,
            y_from_zero: false,
            x_whole: false,
            legend_upper: false,
            y_headroom: 0.0,
        }
    }

    pub(super) fn log_y(mut self) -> Axes<'a> {
        self.y_log = true;
        self
    }

    pub(super) fn log_x(mut self) -> Axes<'a> {
        self.x_log = true;
        self
    }

    /// The x axis is a recall: kept within [0, 1].
    pub(super) fn recall_x(mut self) -> Axes<'a> {
        self.x_within = Some(RECALL_BOUNDS);
        self
    }

    /// The y axis is a recall: kept within [0, 1].
    pub(super) fn recall_y(mut self) -> Axes<'a> {
        self.y_within = Some(RECALL_BOUNDS);
        self
    }
}

/// The value ranges a plot's axes show.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ranges {
    pub x: (f64, f64),
    pub y: (f64, f64),
}

/// The range of one axis over `values`.
fn axis_range(
    values: impl Iterator<Item = f64>,
    log: bool,
    within: Option<(f64, f64)>,
) -> (f64, f64) {
    match (log, within) {
        (true, _) => log_span(values),
        (false, Some(bounds)) => bounded_span(values, bounds),
        (false, None) => span(values),
    }
}

/// What the axes of `series` under `axes` show: the data, plus the reference line.
pub(super) fn ranges(axes: &Axes<'_>, series: &[Series]) -> Ranges {
    let xs = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(axes.hline.map(|h| h.0))
        .chain(axes.y_from_zero.then_some(0.0));
    let mut y = axis_range(ys, axes.y_log, axes.y_within);
    if !axes.y_log && axes.y_within.is_none() && (0.0..0.9).contains(&axes.y_headroom) {
        y.1 = y.0 + (y.1 - y.0) / (1.0 - axes.y_headroom);
    }
    Ranges {
        x: axis_range(xs, axes.x_log, axes.x_within),
        y,
    }
}

/// A drawn plot: SVG text, PNG bytes, and the ranges its axes show.
pub(super) struct Drawn {
    pub(super) svg: String,
    pub(super) png: Vec<u8>,
    pub(super) ranges: Ranges,
}

/// A plot as SVG text and PNG bytes, drawn from the same description.
pub(super) fn chart(title: &str, axes: &Axes<'_>, series: &[Series]) -> Result<Drawn, ExportError> {
    register_font()?;
    let ranges = ranges(axes, series);
    let mut svg = String::new();
    draw(
        SVGBackend::with_string(&mut svg, SIZE).into_drawing_area(),
        title,
        axes,
        ranges,
        series,
    )?;
    let mut rgb = vec![0u8; SIZE.0 as usize * SIZE.1 as usize * 3];
    draw(
        BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area(),
        title,
        axes,
        ranges,
        series,
    )?;
    Ok(Drawn {
        svg,
        png: encode_png(&rgb)?,
        ranges,
    })
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

/// A point label where it will be drawn: beside `at`, `dx` pixels off, anchored by `anchor`.
struct PlacedLabel {
    at: (f64, f64),
    text: String,
    anchor: HPos,
    dx: i32,
}

/// The labels of `series`' points that fit: right of the marker, or left of it near the right
/// edge (recall 1.0 is the edge) so that it stays in the picture; a label whose box would
/// overlap one already placed (settings at the same size or memory) is left out, its point
/// still drawn. `pixel` maps a point to the picture; `placed` holds the boxes so far.
fn place_labels(
    series: &Series,
    (x0, x1): (f64, f64),
    pixel: impl Fn(&(f64, f64)) -> (i32, i32),
    placed: &mut Vec<[i32; 4]>,
) -> Vec<PlacedLabel> {
    if series.point_labels.len() != series.points.len() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (&at, text) in series.points.iter().zip(&series.point_labels) {
        if text.is_empty() {
            continue;
        }
        let (anchor, dx) = if at.0 > x0 + 0.8 * (x1 - x0) {
            (HPos::Right, -6)
        } else {
            (HPos::Left, 6)
        };
        // DejaVu Sans at 11 px: about 6.5 px per character, 13 px high.
        let width = (text.chars().count() as f64 * 6.5).ceil() as i32;
        let (px, py) = pixel(&at);
        let left = if dx < 0 { px + dx - width } else { px + dx };
        let bbox = [left, py - 5 - 13, left + width, py - 5];
        let overlaps =
            |b: &[i32; 4]| bbox[0] < b[2] && b[0] < bbox[2] && bbox[1] < b[3] && b[1] < bbox[3];
        if placed.iter().any(overlaps) {
            continue;
        }
        placed.push(bbox);
        out.push(PlacedLabel {
            at,
            text: text.clone(),
            anchor,
            dx,
        });
    }
    out
}

/// Draws the mesh, the series and the legend on a built chart (any pair of coordinates).
macro_rules! draw_on {
    ($chart:expr, $x_desc:expr, $y_desc:expr, $x_range:expr, $hline:expr, $series:expr, $axes:expr) => {{
        let mut chart = $chart;
        let axes: &Axes<'_> = $axes;
        let x_whole = axes.x_whole;
        chart
            .configure_mesh()
            .x_desc($x_desc)
            .y_desc($y_desc)
            .light_line_style(RGBColor(235, 235, 235))
            .x_label_formatter(&|v| x_tick(*v, x_whole))
            .y_label_formatter(&|v| tick(*v))
            .draw()
            .map_err(fail)?;
        // Pixel boxes of the point labels drawn so far, across series.
        let mut placed: Vec<[i32; 4]> = Vec::new();
        for s in $series {
            let style = ShapeStyle {
                color: s.colour.to_rgba(),
                filled: !s.hollow,
                stroke_width: 2,
            };
            let joined = if s.line {
                &s.points[..]
            } else {
                &s.frontier[..]
            };
            if joined.len() > 1 {
                chart
                    .draw_series(LineSeries::new(
                        joined.iter().copied(),
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
            let font = ("sans-serif", 11).into_font().color(&s.colour);
            let labels = place_labels(s, $x_range, |p| chart.backend_coord(p), &mut placed);
            chart
                .draw_series(labels.into_iter().map(|l| {
                    let style = font.clone().pos(Pos::new(l.anchor, VPos::Bottom));
                    EmptyElement::at(l.at) + Text::new(l.text, (l.dx, -5), style)
                }))
                .map_err(fail)?;
        }
        if let Some((y, label)) = $hline {
            let (x0, x1) = $x_range;
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
            .position(if axes.legend_upper {
                SeriesLabelPosition::UpperRight
            } else {
                SeriesLabelPosition::LowerLeft
            })
            .draw()
            .map_err(fail)?;
    }};
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    axes: &Axes<'_>,
    ranges: Ranges,
    series: &[Series],
) -> Result<(), ExportError> {
    root.fill(&WHITE).map_err(fail)?;
    let scaled = |desc: &str, log: bool| {
        if log {
            format!("{desc} (log scale)")
        } else {
            desc.to_string()
        }
    };
    let x_desc = scaled(axes.x, axes.x_log);
    let y_desc = scaled(axes.y, axes.y_log);
    let Ranges {
        x: (x0, x1),
        y: (y0, y1),
    } = ranges;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(70);
    // Log axes label the values of `log_ticks`, so that a range within a decade has labels.
    let x_log = || (x0..x1).log_scale().with_key_points(log_ticks(x0, x1));
    let y_log = || (y0..y1).log_scale().with_key_points(log_ticks(y0, y1));
    let hline = axes.hline;
    match (axes.x_log, axes.y_log) {
        (false, true) => draw_on!(
            builder.build_cartesian_2d(x0..x1, y_log()).map_err(fail)?,
            &x_desc,
            &y_desc,
            (x0, x1),
            hline,
            series,
            axes
        ),
        (true, true) => draw_on!(
            builder.build_cartesian_2d(x_log(), y_log()).map_err(fail)?,
            &x_desc,
            &y_desc,
            (x0, x1),
            hline,
            series,
            axes
        ),
        (true, false) => draw_on!(
            builder.build_cartesian_2d(x_log(), y0..y1).map_err(fail)?,
            &x_desc,
            &y_desc,
            (x0, x1),
            hline,
            series,
            axes
        ),
        (false, false) => draw_on!(
            builder.build_cartesian_2d(x0..x1, y0..y1).map_err(fail)?,
            &x_desc,
            &y_desc,
            (x0, x1),
            hline,
            series,
            axes
        ),
    }
    root.present().map_err(fail)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{Axes, PALETTE, Series, bounded_span, colour, log_ticks, ranges, tick};
    use plotters::style::RGBColor;

    #[test]
    fn sixteen_series_get_sixteen_colours() {
        let colours: std::collections::HashSet<(u8, u8, u8)> = (0..PALETTE.len())
            .map(|i| {
                let c = colour(i);
                (c.0, c.1, c.2)
            })
            .collect();
        assert_eq!(colours.len(), 16);
    }

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

    /// A recall axis never extends past 1 or below 0, and always has some width.
    #[test]
    fn recall_ranges_stay_within_zero_and_one() {
        let b = (0.0, 1.0);
        assert_eq!(bounded_span([1.0, 1.0, 1.0].into_iter(), b), (0.9, 1.0));
        assert_eq!(bounded_span([0.0].into_iter(), b), (0.0, 0.1));
        assert_eq!(bounded_span([0.0, 1.0].into_iter(), b), (0.0, 1.0));
        assert_eq!(bounded_span(std::iter::empty(), b), (0.0, 1.0));
        let (lo, hi) = bounded_span([0.2, 0.8].into_iter(), b);
        assert!(
            (lo - 0.17).abs() < 1e-12 && (hi - 0.83).abs() < 1e-12,
            "{lo} {hi}"
        );
        // Close to 1: padded by 5 % of the spread, stopped at 1.
        let (lo, hi) = bounded_span([0.99, 1.0].into_iter(), b);
        assert_eq!(hi, 1.0);
        assert!((lo - 0.989).abs() < 1e-12, "{lo}");
        // Values outside the bounds (none should be) do not widen the axis past them.
        assert_eq!(bounded_span([1.2, f64::NAN].into_iter(), b), (0.9, 1.0));
    }

    /// The ranges a plot's axes get: recall on x bounded, QPS on a log y axis.
    #[test]
    fn an_all_perfect_recall_plot_ends_at_one() {
        let series = [Series {
            label: "exact".into(),
            colour: RGBColor(0, 0, 0),
            hollow: false,
            points: vec![(1.0, 1200.0), (1.0, 900.0)],
            line: false,
            frontier: vec![(1.0, 1200.0)],
            point_labels: Vec::new(),
        }];
        let r = ranges(&Axes::new("recall", "QPS").recall_x().log_y(), &series);
        assert_eq!(r.x, (0.9, 1.0));
        assert!(r.y.0 > 0.0 && r.y.0 < 900.0 && r.y.1 > 1200.0, "{:?}", r.y);
        // Without bounds the same points would get 0.5–1.5.
        let unbounded = ranges(&Axes::new("recall", "QPS").log_y(), &series);
        assert_eq!(unbounded.x, (0.5, 1.5));
    }

    /// Log axes carry at least two labels however narrow their range, and at most a few.
    #[test]
    fn log_axes_are_labelled_within_a_decade() {
        assert_eq!(log_ticks(0.5, 2000.0), vec![1.0, 10.0, 100.0, 1000.0]);
        assert_eq!(log_ticks(600.0, 5000.0), vec![1000.0, 2000.0, 5000.0]);
        let narrow = log_ticks(1100.0, 1900.0);
        assert!(narrow.len() >= 2, "{narrow:?}");
        assert!(
            narrow.iter().all(|v| (1100.0..=1900.0).contains(v)),
            "{narrow:?}"
        );
        let wide = log_ticks(1e-3, 1e12);
        assert!(wide.len() <= 10 && wide.len() >= 3, "{wide:?}");
        let mid = log_ticks(150.0, 4000.0);
        assert_eq!(mid, vec![200.0, 500.0, 1000.0, 2000.0]);
    }
}
