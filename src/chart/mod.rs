//! Charts as SVG (plotters' SVG backend), from plain series: what a chart shows is decided by the
//! caller, how it looks here. 800 × 500, a title, both axes labelled with their units, a legend,
//! and styles that survive grey-scale printing: each series has a colour of its own lightness
//! *and* a marker shape (circle, triangle, square, diamond) or a dash pattern, so two series are
//! told apart without colour. Text is left to the viewer's sans-serif font.
//!
//! Layer: a leaf beside `pycompat`; it imports nothing of the crate. `http` uses it.

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

pub const WIDTH: u32 = 800;
pub const HEIGHT: u32 = 500;

/// One axis: its label (with the unit) and whether its values are drawn on a log2 scale.
#[derive(Debug, Clone, Default)]
pub struct Axis {
    pub label: String,
    /// Values are positive and drawn on a log2 scale, ticks at powers of two.
    pub log2: bool,
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// A marker per point.
    Points,
    /// A marker per point, joined by a line in the order given (a frontier).
    PointsJoined,
    /// A line through the points in the order given (a timeline, a fitted curve).
    Line,
    /// Bars: each point is (left edge, height), the last bar ending at the series' `bar_end`.
    Bars { bar_end_bits: u64 },
}

/// One series of a chart.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub mark: Mark,
    pub points: Vec<(f64, f64)>,
    /// Drawn as context (small light-grey markers), after the series' styles are given out.
    pub context: bool,
    /// A heavier line (a total over the others).
    pub emphasis: bool,
    /// A curve drawn in the series' colour under its markers (a fitted model).
    pub curve: Vec<(f64, f64)>,
}

impl Series {
    pub fn new(name: impl Into<String>, mark: Mark, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            mark,
            points,
            context: false,
            emphasis: false,
            curve: Vec::new(),
        }
    }

    /// Bars of a histogram: `edges` (one more than `counts`).
    pub fn bars(name: impl Into<String>, edges: &[f64], counts: &[f64]) -> Series {
        let end = edges.last().copied().unwrap_or(0.0);
        Series::new(
            name,
            Mark::Bars {
                bar_end_bits: end.to_bits(),
            },
            edges.iter().copied().zip(counts.iter().copied()).collect(),
        )
    }
}

/// A chart.
#[derive(Debug, Clone, Default)]
pub struct Chart {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    /// Say so in the plot area when there is nothing to draw.
    pub empty_note: Option<String>,
}

/// The colours, ordered so neighbours differ in lightness (Okabe–Ito's colour-blind-safe set,
/// black first): dark, light, dark, ...
pub const PALETTE: [(u8, u8, u8); 7] = [
    (0x00, 0x00, 0x00),
    (0xE6, 0x9F, 0x00),
    (0x00, 0x72, 0xB2),
    (0x56, 0xB4, 0xE9),
    (0xD5, 0x5E, 0x00),
    (0x00, 0x9E, 0x73),
    (0xCC, 0x79, 0xA7),
];

/// The colour of context series (runs shown behind the others).
pub const CONTEXT: (u8, u8, u8) = (0xBB, 0xBB, 0xBB);

/// The colour of the `i`th styled series as SVG writes it (`#RRGGBB`).
pub fn colour_hex(i: usize) -> String {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    format!("#{r:02X}{g:02X}{b:02X}")
}

fn colour(i: usize) -> RGBColor {
    let (r, g, b) = PALETTE[i % PALETTE.len()];
    RGBColor(r, g, b)
}

/// Marker shapes, in order; with 7 colours, the first 28 series differ in colour and shape.
#[derive(Debug, Clone, Copy)]
enum Shape {
    Circle,
    Triangle,
    Square,
    Diamond,
}

fn shape(i: usize) -> Shape {
    match i % 4 {
        0 => Shape::Circle,
        1 => Shape::Triangle,
        2 => Shape::Square,
        _ => Shape::Diamond,
    }
}

/// Dash (drawn, gap) in pixels of the `i`th line; the first is solid.
fn dash(i: usize) -> Option<(u32, u32)> {
    match i % 4 {
        0 => None,
        1 => Some((10, 5)),
        2 => Some((3, 4)),
        _ => Some((14, 4)),
    }
}

/// Why a chart cannot be drawn (a fault of the drawing, not of the data).
#[derive(Debug, thiserror::Error)]
#[error("drawing the chart: {0}")]
pub struct ChartError(String);

fn err(e: impl std::fmt::Display) -> ChartError {
    ChartError(e.to_string())
}

/// The range to draw `values` over, with a margin; a single value gets a unit around it.
fn range(values: impl Iterator<Item = f64>, from_zero: bool) -> (f64, f64) {
    let (mut lo, mut hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if from_zero {
        lo = lo.min(0.0);
    }
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        let pad = if hi == 0.0 { 1.0 } else { hi.abs() * 0.1 };
        return (lo - pad, hi + pad);
    }
    let pad = (hi - lo) * 0.05;
    hi += pad;
    if !(from_zero && lo == 0.0) {
        lo -= pad;
    }
    (lo, hi)
}

/// A value on an axis: log2 of it on a log axis (non-positive values are not drawn).
fn on(axis: &Axis, v: f64) -> Option<f64> {
    if !v.is_finite() {
        return None;
    }
    if axis.log2 {
        (v > 0.0).then(|| v.log2())
    } else {
        Some(v)
    }
}

/// Tick text: the value itself, in few digits; on a log axis only at powers of two.
fn tick(axis: &Axis, v: f64) -> String {
    if axis.log2 {
        let r = v.round();
        if (v - r).abs() > 1e-9 {
            return String::new();
        }
        return trim_number(2f64.powf(r));
    }
    trim_number(v)
}

fn trim_number(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if !(1e-3..1e6).contains(&a) {
        return format!("{v:.1e}");
    }
    let s = if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The chart as an SVG document.
pub fn svg(chart: &Chart) -> Result<String, ChartError> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (WIDTH, HEIGHT)).into_drawing_area();
        draw(&root, chart)?;
        root.present().map_err(err)?;
    }
    Ok(out)
}

/// Points of a series on the chart's axes, those that cannot be drawn (null, or not positive on
/// a log axis) left out.
fn mapped(chart: &Chart, s: &Series) -> Vec<(f64, f64)> {
    s.points
        .iter()
        .filter_map(|&(x, y)| Some((on(&chart.x, x)?, on(&chart.y, y)?)))
        .collect()
}

fn draw(root: &DrawingArea<SVGBackend<'_>, Shift>, chart: &Chart) -> Result<(), ChartError> {
    root.fill(&WHITE).map_err(err)?;
    let bars = chart
        .series
        .iter()
        .any(|s| matches!(s.mark, Mark::Bars { .. }));
    let all: Vec<Vec<(f64, f64)>> = chart.series.iter().map(|s| mapped(chart, s)).collect();
    let bar_ends = chart.series.iter().filter_map(|s| match s.mark {
        Mark::Bars { bar_end_bits } => on(&chart.x, f64::from_bits(bar_end_bits)),
        _ => None,
    });
    let (x0, x1) = range(all.iter().flatten().map(|p| p.0).chain(bar_ends), false);
    let (y0, y1) = range(all.iter().flatten().map(|p| p.1), bars);
    let mut ctx = ChartBuilder::on(root)
        .caption(&chart.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(78)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(err)?;
    let (xa, ya) = (chart.x.clone(), chart.y.clone());
    let xfmt = move |v: &f64| tick(&xa, *v);
    let yfmt = move |v: &f64| tick(&ya, *v);
    ctx.configure_mesh()
        .x_desc(chart.x.label.as_str())
        .y_desc(chart.y.label.as_str())
        .axis_desc_style(("sans-serif", 15))
        .label_style(("sans-serif", 12))
        .x_labels(if chart.x.log2 { 16 } else { 10 })
        .y_labels(if chart.y.log2 { 16 } else { 8 })
        .x_label_formatter(&xfmt)
        .y_label_formatter(&yfmt)
        .light_line_style(RGBColor(0xEE, 0xEE, 0xEE))
        .bold_line_style(RGBColor(0xDD, 0xDD, 0xDD))
        .draw()
        .map_err(err)?;
    if let Some(note) = &chart.empty_note
        && all.iter().all(Vec::is_empty)
    {
        ctx.draw_series(std::iter::once(Text::new(
            note.clone(),
            ((x0 + x1) / 2.0, (y0 + y1) / 2.0),
            ("sans-serif", 16).into_font().color(&BLACK),
        )))
        .map_err(err)?;
    }

    // Context first, underneath; then the styled series in order.
    let mut styled = 0;
    for pass in [true, false] {
        for (s, pts) in chart.series.iter().zip(&all) {
            if s.context != pass {
                continue;
            }
            if s.context {
                let c = RGBColor(CONTEXT.0, CONTEXT.1, CONTEXT.2);
                ctx.draw_series(pts.iter().map(|&p| Circle::new(p, 3, c.filled())))
                    .map_err(err)?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| Circle::new((x + 10, y), 3, c.filled()));
                continue;
            }
            styled_series(&mut ctx, chart, s, pts, styled, (x0, x1, y0, y1))?;
            styled += 1;
        }
    }
    if !chart.series.is_empty() {
        ctx.configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(0x88, 0x88, 0x88))
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

/// The `i`th styled series drawn in the plot spanning `x0..x1` by `y0..y1`: its points (with
/// their fitted curve, or joined), a line (dashed unless emphasised), or bars.
fn styled_series<'a, 'b: 'a>(
    ctx: &mut Ctx<'a, 'b>,
    chart: &Chart,
    s: &Series,
    pts: &[(f64, f64)],
    i: usize,
    (x0, x1, y0, y1): (f64, f64, f64, f64),
) -> Result<(), ChartError> {
    let c = colour(i);
    match s.mark {
        Mark::Points | Mark::PointsJoined => {
            let curve: Vec<(f64, f64)> = s
                .curve
                .iter()
                .filter_map(|&(x, y)| Some((on(&chart.x, x)?, on(&chart.y, y)?)))
                .filter(|&(x, y)| (x0..=x1).contains(&x) && (y0..=y1).contains(&y))
                .collect();
            if curve.len() > 1 {
                ctx.draw_series(LineSeries::new(curve, c.stroke_width(2)))
                    .map_err(err)?;
            }
            if s.mark == Mark::PointsJoined && pts.len() > 1 {
                ctx.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))
                    .map_err(err)?;
            }
            markers(ctx, pts, i, c, &s.name)?;
        }
        Mark::Line => {
            let width = if s.emphasis { 3 } else { 2 };
            let style = c.stroke_width(width);
            match dash(i).filter(|_| !s.emphasis) {
                None => {
                    ctx.draw_series(LineSeries::new(pts.iter().copied(), style))
                        .map_err(err)?
                        .label(s.name.as_str())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
                }
                Some((on_px, off_px)) => {
                    ctx.draw_series(DashedLineSeries::new(
                        pts.iter().copied(),
                        on_px,
                        off_px,
                        style,
                    ))
                    .map_err(err)?
                    .label(s.name.as_str())
                    .legend(move |(x, y)| {
                        DashedPathElement::new(
                            vec![(x, y), (x + 22, y)],
                            on_px.min(8),
                            off_px,
                            style,
                        )
                    });
                }
            }
        }
        Mark::Bars { bar_end_bits } => {
            let end = on(&chart.x, f64::from_bits(bar_end_bits)).unwrap_or(x1);
            let rights: Vec<f64> = pts
                .iter()
                .skip(1)
                .map(|p| p.0)
                .chain(std::iter::once(end))
                .collect();
            let base = y0.max(0.0);
            ctx.draw_series(
                pts.iter()
                    .zip(&rights)
                    .map(|(&(l, h), &r)| Rectangle::new([(l, base), (r, h)], c.mix(0.85).filled())),
            )
            .map_err(err)?
            .label(s.name.as_str())
            .legend(move |(x, y)| {
                Rectangle::new([(x + 4, y - 5), (x + 16, y + 5)], c.mix(0.85).filled())
            });
        }
    }
    Ok(())
}

type Ctx<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// The `i`th marker shape at each point, and its legend entry.
fn markers<'a, 'b: 'a>(
    ctx: &mut Ctx<'a, 'b>,
    pts: &[(f64, f64)],
    i: usize,
    c: RGBColor,
    name: &str,
) -> Result<(), ChartError> {
    let style = c.filled();
    let anno = match shape(i) {
        Shape::Circle => {
            let a = ctx
                .draw_series(
                    pts.iter()
                        .map(|&p| EmptyElement::at(p) + Circle::new((0, 0), 4, style)),
                )
                .map_err(err)?;
            a.label(name).legend(move |(x, y)| {
                EmptyElement::at((x + 10, y)) + Circle::new((0, 0), 4, style)
            });
            return Ok(());
        }
        Shape::Triangle => ctx
            .draw_series(pts.iter().map(|&p| {
                EmptyElement::at(p) + Polygon::new(vec![(0, -5), (5, 4), (-5, 4)], style)
            }))
            .map_err(err)?,
        Shape::Square => ctx
            .draw_series(
                pts.iter()
                    .map(|&p| EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], style)),
            )
            .map_err(err)?,
        Shape::Diamond => ctx
            .draw_series(pts.iter().map(|&p| {
                EmptyElement::at(p) + Polygon::new(vec![(0, -5), (5, 0), (0, 5), (-5, 0)], style)
            }))
            .map_err(err)?,
    };
    let sh = shape(i);
    anno.label(name).legend(move |(x, y)| {
        let at = EmptyElement::at((x + 10, y));
        match sh {
            Shape::Triangle => at + Polygon::new(vec![(0, -5), (5, 4), (-5, 4)], style),
            Shape::Diamond => at + Polygon::new(vec![(0, -5), (5, 0), (0, 5), (-5, 0)], style),
            _ => at + Polygon::new(vec![(-4, -4), (4, -4), (4, 4), (-4, 4)], style),
        }
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_and_ranges() {
        let log = Axis {
            label: String::new(),
            log2: true,
        };
        assert_eq!(tick(&log, 3.0), "8");
        assert_eq!(tick(&log, 3.5), "");
        assert_eq!(tick(&Axis::default(), 0.125), "0.125");
        assert_eq!(tick(&Axis::default(), 2500.0), "2500");
        assert_eq!(tick(&Axis::default(), 12.5), "12.5");
        assert_eq!(range([2.0].into_iter(), false), (1.8, 2.2));
        assert_eq!(range(std::iter::empty(), false), (0.0, 1.0));
        let (lo, hi) = range([0.0, 10.0].into_iter(), true);
        assert_eq!(lo, 0.0);
        assert!(hi > 10.0);
    }
}
