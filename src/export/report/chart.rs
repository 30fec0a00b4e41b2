//! How a report plot is drawn: one description, rendered as SVG (text stays text) and as PNG
//! (text rasterised with the compiled-in DejaVu Sans), with the same axes, scales, colours and
//! legend. What to plot is decided in `plots.rs`.

use plotters::prelude::*;

use crate::export::ExportError;

pub(super) const SIZE: (u32, u32) = (760, 460);

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

pub(super) fn colour(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

pub(super) fn fail(e: impl std::fmt::Display) -> ExportError {
    ExportError {
        format: "plot",
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
pub(super) struct Series {
    pub(super) label: String,
    pub(super) colour: RGBColor,
    pub(super) hollow: bool,
    pub(super) points: Vec<(f64, f64)>,
    /// Joined by a line (else markers only).
    pub(super) line: bool,
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

/// Axes of a plot: descriptions, log scales (used where the data spans a decade), an optional
/// horizontal reference line.
#[derive(Clone, Copy)]
pub(super) struct Axes<'a> {
    pub(super) x: &'a str,
    pub(super) y: &'a str,
    pub(super) x_log: bool,
    pub(super) y_log: bool,
    pub(super) hline: Option<(f64, &'a str)>,
}

impl<'a> Axes<'a> {
    pub(super) fn new(x: &'a str, y: &'a str) -> Axes<'a> {
        Axes {
            x,
            y,
            x_log: false,
            y_log: false,
            hline: None,
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
}

/// A plot as SVG text and PNG bytes, drawn from the same description.
pub(super) fn chart(
    title: &str,
    axes: &Axes<'_>,
    series: &[Series],
) -> Result<(String, Vec<u8>), ExportError> {
    register_font()?;
    let mut svg = String::new();
    draw(
        SVGBackend::with_string(&mut svg, SIZE).into_drawing_area(),
        title,
        axes,
        series,
    )?;
    let mut rgb = vec![0u8; SIZE.0 as usize * SIZE.1 as usize * 3];
    draw(
        BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area(),
        title,
        axes,
        series,
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

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    axes: &Axes<'_>,
    series: &[Series],
) -> Result<(), ExportError> {
    let Axes {
        x: x_desc,
        y: y_desc,
        x_log,
        y_log,
        hline,
    } = *axes;
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
