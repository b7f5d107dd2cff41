//! Drawing one kind of graph from a [`Data`] with `plotters`, on any of
//! its backends (SVG text, an RGB buffer for PNG), and the PNG file of
//! that buffer (encoded by `png`). Axes carry their units; rates and
//! byte counts are scaled to a readable prefix.

use crate::input::{Data, Line, Role, Unit};
use crate::{Kind, SIDES};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use std::sync::OnceLock;

/// The embedded font (a cut of DejaVu Sans: Latin-1 and a few symbols).
const FONT: &[u8] = include_bytes!("../assets/DejaVuSans-subset.ttf");

/// The family every text of a graph uses.
const FAMILY: &str = "sans-serif";

/// Register the embedded font once; whether it could be.
fn font() -> Result<(), String> {
    static DONE: OnceLock<bool> = OnceLock::new();
    let ok = *DONE
        .get_or_init(|| plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok());
    if ok {
        Ok(())
    } else {
        Err("the embedded font cannot be read".into())
    }
}

/// `size` if each side is within [`SIDES`].
fn sized(size: (u32, u32)) -> Result<(u32, u32), String> {
    let (w, h) = size;
    if SIDES.contains(&w) && SIDES.contains(&h) {
        Ok(size)
    } else {
        Err(format!(
            "{w}x{h}: each side must be {} to {} pixels",
            SIDES.start(),
            SIDES.end()
        ))
    }
}

/// The graph as SVG text, `size` pixels (each side within [`SIDES`]).
pub fn svg(data: &Data, kind: Kind, size: (u32, u32)) -> Result<String, String> {
    let size = sized(size)?;
    font()?;
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        draw(&root, data, kind)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// The graph as an RGB buffer (3 bytes a pixel, rows top to bottom),
/// `size` pixels (each side within [`SIDES`]).
pub fn rgb(data: &Data, kind: Kind, size: (u32, u32)) -> Result<Vec<u8>, String> {
    let size = sized(size)?;
    font()?;
    let mut buf = vec![0u8; size.0 as usize * size.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut buf, size).into_drawing_area();
        draw(&root, data, kind)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(buf)
}

/// The graph as a PNG file's bytes, `size` pixels (each side within
/// [`SIDES`]): [`rgb`], encoded.
pub fn png(data: &Data, kind: Kind, size: (u32, u32)) -> Result<Vec<u8>, String> {
    let rgb = rgb(data, kind, size)?;
    encode_png(&rgb, size.0, size.1)
}

/// An RGB buffer of `w`×`h` pixels as a PNG file's bytes.
fn encode_png(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut writer = enc.write_header().map_err(|e| e.to_string())?;
    writer.write_image_data(rgb).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())?;
    Ok(out)
}

/// Colours of the lines, in order (colour-blind safe: Okabe and Ito).
const COLORS: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(120, 120, 120),
    RGBColor(0, 0, 0),
];

/// The largest decimal prefix (giga, mega, kilo, none) that `max`
/// reaches, and its name among `names` (in that order).
fn decimal(max: f64, names: [&'static str; 4]) -> (f64, &'static str) {
    [1e9, 1e6, 1e3]
        .into_iter()
        .zip(names)
        .find(|&(d, _)| max >= d)
        .unwrap_or((1.0, names[3]))
}

/// A scale for values of `unit` up to `max`: the divisor and the unit's
/// name.
fn scale(unit: Unit, max: f64) -> (f64, &'static str) {
    match unit {
        Unit::Bps => decimal(max, ["Gbit/s", "Mbit/s", "Kbit/s", "bit/s"]),
        Unit::Bytes => decimal(max, ["GB", "MB", "KB", "bytes"]),
        Unit::Ms => (1.0, "ms"),
        Unit::Number => (1.0, ""),
    }
}

/// `label (unit)`, or the label alone.
fn described(label: &str, unit: &str) -> String {
    if unit.is_empty() {
        label.to_string()
    } else {
        format!("{label} ({unit})")
    }
}

/// The largest magnitude drawn: a value beyond it is drawn at it, so that
/// every span (and the margins added to it) stays finite. (An axis from
/// -1e308 to 1e308 spans more than an `f64` holds, and plotters' search
/// for its ticks would not end.)
const LIMIT: f64 = 1e300;

/// The narrowest span of an axis, relative to the magnitude of its
/// values (and at the least, absolute): a narrower one is widened, as
/// one value is, for ticks that can be told apart.
const MIN_SPAN: (f64, f64) = (1e-9, 1e-200);

/// `v` within the drawable values (`NaN` as 0).
fn drawable(v: f64) -> f64 {
    if v.is_nan() {
        0.0
    } else {
        v.clamp(-LIMIT, LIMIT)
    }
}

/// The range of `f` over every point of `lines`, widened to be drawable:
/// finite, at most ±[`LIMIT`], at least [`MIN_SPAN`] wide.
fn extent(lines: &[Line], f: impl Fn(&(f64, f64)) -> f64) -> (f64, f64) {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for p in lines.iter().flat_map(|l| l.points.iter()) {
        let v = f(p);
        if !v.is_nan() {
            lo = lo.min(drawable(v));
            hi = hi.max(drawable(v));
        }
    }
    if lo > hi {
        return (0.0, 1.0);
    }
    let magnitude = lo.abs().max(hi.abs());
    if hi - lo <= (magnitude * MIN_SPAN.0).max(MIN_SPAN.1) {
        hi = lo + magnitude.max(1.0);
    }
    (lo, hi)
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    data: &Data,
    kind: Kind,
) -> Result<(), String> {
    root.fill(&WHITE).map_err(err)?;
    match kind {
        Kind::Throughput => {
            let (_, ymax) = extent(&data.throughput, |p| p.1);
            let (div, unit) = scale(Unit::Bps, ymax);
            xy(
                root,
                &data.title,
                &data.throughput,
                ("time", "s"),
                (&described("rate", unit), div),
                Look::default(),
            )
        }
        Kind::Delay => xy(
            root,
            &data.title,
            &data.delay,
            ("time", "s"),
            ("one-way delay (ms)", 1.0),
            Look::default(),
        ),
        Kind::Scatter => xy(
            root,
            &data.title,
            &data.scatter,
            ("arrival time", "s"),
            ("one-way delay (ms)", 1.0),
            Look {
                points: true,
                ..Look::default()
            },
        ),
        Kind::Cdf => {
            let (xmin, xmax) = extent(&data.cdf, |p| p.0);
            let (div, unit) = scale(data.cdf_unit, xmax);
            // Each staircase goes on at its last level to the right edge,
            // 5 % past the largest value, so that a line at the largest
            // value is not hidden by the frame.
            let right = (xmax + (xmax - xmin.min(0.0)) * 0.05) / div;
            let lines: Vec<Line> = data
                .cdf
                .iter()
                .map(|l| {
                    let mut points: Vec<(f64, f64)> =
                        l.points.iter().map(|&(x, y)| (x / div, y)).collect();
                    if let Some(&(_, y)) = points.last() {
                        points.push((right, y));
                    }
                    Line {
                        points,
                        ..l.clone()
                    }
                })
                .collect();
            xy(
                root,
                &data.title,
                &lines,
                (&data.cdf_label, unit),
                (&format!("fraction of {}", data.cdf_of), 1.0),
                Look {
                    y_range: Some((0.0, 1.0)),
                    legend: SeriesLabelPosition::LowerRight,
                    ..Look::default()
                },
            )
        }
        Kind::Shares => shares(root, data),
    }
}

/// How an x-y graph is drawn.
struct Look {
    /// Points instead of lines.
    points: bool,
    /// A fixed y range (a CDF's 0 to 1).
    y_range: Option<(f64, f64)>,
    /// Where the legend goes.
    legend: SeriesLabelPosition,
}

impl Default for Look {
    fn default() -> Look {
        Look {
            points: false,
            y_range: None,
            legend: SeriesLabelPosition::UpperRight,
        }
    }
}

/// A graph of lines (or points) over x, y divided by `y.1`.
fn xy<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    lines: &[Line],
    x: (&str, &str),
    y: (&str, f64),
    look: Look,
) -> Result<(), String> {
    let points = look.points;
    let div = y.1;
    let (x0, x1) = extent(lines, |p| p.0);
    let (y0, y1) = extent(lines, |p| p.1 / div);
    // Values from 0 where they are all positive (rates, delays), with
    // room above the highest for the legend.
    let (ylo, yhi) = match look.y_range {
        Some((lo, hi)) => (lo, hi + (hi - lo) * 0.02),
        None => {
            let ylo = if y0 >= 0.0 { 0.0 } else { y0 };
            (ylo, y1 + (y1 - ylo) * 0.25)
        }
    };
    let xlo = if x0 >= 0.0 && x0 < (x1 - x0) * 0.2 {
        0.0
    } else {
        x0
    };
    let mut chart = ChartBuilder::on(root)
        .caption(title, (FAMILY, 18))
        .margin(14)
        .x_label_area_size(46)
        .y_label_area_size(64)
        .build_cartesian_2d(xlo..x1, ylo..yhi)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(described(x.0, x.1))
        .y_desc(y.0)
        .label_style((FAMILY, 13))
        .axis_desc_style((FAMILY, 14))
        .light_line_style(RGBColor(246, 246, 246))
        .bold_line_style(RGBColor(220, 220, 220))
        .draw()
        .map_err(err)?;
    let mut color_i = 0;
    for l in lines {
        let pts: Vec<(f64, f64)> = l
            .points
            .iter()
            .map(|&(a, b)| (drawable(a), drawable(b / div)))
            .collect();
        match l.role {
            Role::Capacity => {
                let fill = RGBColor(150, 150, 150);
                chart
                    .draw_series(AreaSeries::new(pts, 0.0, fill.mix(0.35)).border_style(fill))
                    .map_err(err)?
                    .label(l.name.clone())
                    .legend(move |(x, y)| {
                        Rectangle::new([(x, y - 5), (x + 20, y + 5)], fill.mix(0.5).filled())
                    });
            }
            Role::Line | Role::Thin => {
                // A thin line follows the line before it in colour.
                if l.role == Role::Thin && color_i > 0 && !points {
                    color_i -= 1;
                }
                let c = COLORS[color_i % COLORS.len()];
                color_i += 1;
                let style = if l.role == Role::Thin {
                    c.mix(0.55).stroke_width(1)
                } else {
                    c.stroke_width(2)
                };
                if points {
                    let n = pts.len();
                    // At most ~50k points: an SVG stays loadable.
                    let step = n.div_ceil(50_000).max(1);
                    // Small dots where there are many.
                    let r = if n > 2000 { 1 } else { 2 };
                    chart
                        .draw_series(
                            pts.iter()
                                .step_by(step)
                                .map(|&p| Circle::new(p, r, c.mix(0.6).filled())),
                        )
                        .map_err(err)?
                        .label(l.name.clone())
                        .legend(move |(x, y)| Circle::new((x + 10, y), 3, c.filled()));
                } else {
                    chart
                        .draw_series(LineSeries::new(pts, style))
                        .map_err(err)?
                        .label(l.name.clone())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
                }
            }
        }
    }
    chart
        .configure_series_labels()
        .label_font((FAMILY, 13))
        .background_style(WHITE.mix(0.85))
        .border_style(RGBColor(180, 180, 180))
        .position(look.legend)
        .draw()
        .map_err(err)?;
    Ok(())
}

/// One bar per name.
fn shares<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, data: &Data) -> Result<(), String> {
    let max = data
        .shares
        .iter()
        .map(|s| drawable(s.1))
        .fold(0.0, f64::max);
    // A negative value (a malformed report) is drawn below the axis'
    // zero, within the chart: every bar lies inside its range.
    let min = data
        .shares
        .iter()
        .map(|s| drawable(s.1))
        .fold(0.0, f64::min);
    let (div, unit) = scale(data.shares_unit, max);
    let n = data.shares.len();
    let top = if max > 0.0 { max / div * 1.15 } else { 1.0 };
    let bottom = min / div * 1.15;
    let names: Vec<String> = data.shares.iter().map(|s| s.0.clone()).collect();
    let mut chart = ChartBuilder::on(root)
        .caption(&data.title, (FAMILY, 18))
        .margin(14)
        .x_label_area_size(46)
        .y_label_area_size(64)
        .build_cartesian_2d(-0.5f64..n as f64 - 0.5, bottom..top)
        .map_err(err)?;
    let label = |x: &f64| {
        let i = x.round();
        if (x - i).abs() < 1e-6 && i >= 0.0 {
            names.get(i as usize).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n.clamp(1, 40))
        .x_label_formatter(&label)
        .y_desc(described(&data.shares_label, unit))
        .label_style((FAMILY, 13))
        .axis_desc_style((FAMILY, 14))
        .light_line_style(RGBColor(246, 246, 246))
        .bold_line_style(RGBColor(220, 220, 220))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(data.shares.iter().enumerate().map(|(i, (_, v))| {
            let c = COLORS[i % COLORS.len()];
            let x = i as f64;
            let half = 0.35f64.min(0.05 * n as f64 + 0.1);
            Rectangle::new(
                [(x - half, 0.0), (x + half, drawable(*v) / div)],
                c.mix(0.8).filled(),
            )
        }))
        .map_err(err)?;
    Ok(())
}
