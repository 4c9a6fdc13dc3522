//! PNG charts: stacked bars (the paper's Figures 4-6), a scatter of
//! per-client speedups (Figure 7), and lines for the sensitivity sweeps
//! (Figures 8-13). Drawn with plotters and a bundled DejaVu font, so no
//! system library is needed.

use anyhow::{Context, Result, anyhow};
use plotters::prelude::*;
use plotters::style::FontStyle;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;
use std::sync::Once;

const SIZE: (u32, u32) = (900, 560);

/// Colours for series, in order.
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

/// The colour of series `i`.
pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

fn fonts() -> Result<()> {
    static REGISTER: Once = Once::new();
    let mut result = Ok(());
    REGISTER.call_once(|| {
        result = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        )
        .map_err(|_| anyhow!("the bundled DejaVu Sans font did not load"));
    });
    result
}

/// Converts plotters' errors (which borrow the backend) to ours.
fn drawn<T, E: std::fmt::Debug>(r: Result<T, E>) -> Result<T> {
    r.map_err(|e| anyhow!("drawing failed: {e:?}"))
}

/// One stack segment series: its name and a value per bar.
pub struct Segment<'a> {
    /// The legend's label.
    pub name: &'a str,
    /// The segment's height in each bar, in the bars' order.
    pub values: Vec<f64>,
}

/// Bars named `bars`, each a stack of `segments` (bottom first).
pub fn stacked_bars(
    path: &Path,
    title: &str,
    y_label: &str,
    bars: &[String],
    segments: &[Segment<'_>],
) -> Result<()> {
    fonts()?;
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    drawn(root.fill(&WHITE))?;
    let totals: Vec<f64> = (0..bars.len())
        .map(|i| {
            segments
                .iter()
                .map(|s| s.values.get(i).copied().unwrap_or(0.0))
                .sum()
        })
        .collect();
    let top = totals
        .iter()
        .copied()
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE)
        * 1.15;
    let n = bars.len();
    // Many bars: names turned upright so they do not collide.
    let upright = n > 8;
    let longest = bars.iter().map(String::len).max().unwrap_or(0) as u32;
    let mut chart = drawn(
        ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(15)
            .x_label_area_size(if upright { 20 + 7 * longest } else { 40 })
            .y_label_area_size(70)
            // A segmented range includes its end: bars 0..=n-1.
            .build_cartesian_2d((0..n.saturating_sub(1)).into_segmented(), 0.0..top),
    )?;
    drawn(
        chart
            .configure_mesh()
            .disable_x_mesh()
            .y_desc(y_label)
            .x_labels(n)
            .x_label_formatter(&|x| match x {
                SegmentValue::CenterOf(i) if !upright => bars.get(*i).cloned().unwrap_or_default(),
                _ => String::new(),
            })
            .draw(),
    )?;
    if upright {
        // Turned clockwise, each name starting just under its bar (the
        // mesh would centre it on the axis).
        let style = TextStyle::from(
            ("sans-serif", 12)
                .into_font()
                .transform(FontTransform::Rotate90),
        )
        .pos(Pos::new(HPos::Left, VPos::Center));
        for (i, name) in bars.iter().enumerate() {
            let (x, y) = chart.backend_coord(&(SegmentValue::CenterOf(i), 0.0));
            drawn(root.draw_text(name, &style, (x, y + 6)))?;
        }
    }
    for (k, seg) in segments.iter().enumerate() {
        let rects = (0..n).map(|i| {
            let below: f64 = segments[..k]
                .iter()
                .map(|s| s.values.get(i).copied().unwrap_or(0.0))
                .sum();
            let value = seg.values.get(i).copied().unwrap_or(0.0);
            let mut r = Rectangle::new(
                [
                    (SegmentValue::Exact(i), below),
                    (SegmentValue::Exact(i + 1), below + value),
                ],
                color(k).filled(),
            );
            r.set_margin(0, 0, 12, 12);
            r
        });
        drawn(chart.draw_series(rects))?
            .label(seg.name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color(k).filled()));
    }
    legend(&mut chart, Some(SeriesLabelPosition::UpperRight))?;
    drawn(root.present()).with_context(|| format!("writing {}", path.display()))
}

/// A named series of points.
pub struct Series<'a> {
    /// The legend's label.
    pub name: &'a str,
    /// The points, `(x, y)`, drawn in this order.
    pub points: Vec<(f64, f64)>,
}

/// How to draw series.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// Points joined by lines (sweeps).
    Lines,
    /// Points only (per-client scatter).
    Points,
}

/// Series against a shared x axis, logarithmic if `log_x`.
pub fn xy(
    path: &Path,
    title: &str,
    (x_label, y_label): (&str, &str),
    series: &[Series<'_>],
    log_x: bool,
    style: Style,
) -> Result<()> {
    fonts()?;
    let all = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, f64::MIN);
    for &(x, y) in all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        return Err(anyhow!("nothing to plot for {}", path.display()));
    }
    if x0 == x1 {
        x1 = x0 + 1.0;
    }
    let y_top = y1.max(f64::MIN_POSITIVE) * 1.1;
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    drawn(root.fill(&WHITE))?;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70);
    if log_x {
        let mut chart = drawn(
            builder.build_cartesian_2d((x0.max(f64::MIN_POSITIVE)..x1).log_scale(), 0.0..y_top),
        )?;
        drawn(
            chart
                .configure_mesh()
                .x_labels(6)
                .x_label_formatter(&|x| short_number(*x))
                .x_desc(x_label)
                .y_desc(y_label)
                .draw(),
        )?;
        draw_series(&mut chart, series, style)?;
        legend(&mut chart, None)?;
    } else {
        let mut chart = drawn(builder.build_cartesian_2d(x0..x1, 0.0..y_top))?;
        drawn(
            chart
                .configure_mesh()
                .x_label_formatter(&|x| short_number(*x))
                .x_desc(x_label)
                .y_desc(y_label)
                .draw(),
        )?;
        draw_series(&mut chart, series, style)?;
        legend(&mut chart, None)?;
    }
    drawn(root.present()).with_context(|| format!("writing {}", path.display()))
}

/// The series' legend on a light box, at `position` (plotters' default
/// place if `None`).
fn legend<'a, DB, CT>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: Option<SeriesLabelPosition>,
) -> Result<()>
where
    DB: DrawingBackend + 'a,
    CT: plotters::coord::CoordTranslate,
{
    let mut labels = chart.configure_series_labels();
    if let Some(position) = position {
        labels.position(position);
    }
    drawn(
        labels
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw(),
    )
}

fn draw_series<'a, X, DB>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, plotters::coord::types::RangedCoordf64>>,
    series: &[Series<'_>],
    style: Style,
) -> Result<()>
where
    X: Ranged<ValueType = f64>,
    DB: DrawingBackend + 'a,
{
    for (i, s) in series.iter().enumerate() {
        let c = color(i);
        let anno = match style {
            Style::Lines => {
                drawn(chart.draw_series(LineSeries::new(s.points.clone(), c.stroke_width(2))))?
            }
            Style::Points => {
                drawn(chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 4, c.filled()))))?
            }
        };
        anno.label(s.name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
        if style == Style::Lines {
            drawn(chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, c.filled()))))?;
        }
    }
    Ok(())
}

/// A compact axis label: 1500 as 1.5k, 2000000 as 2M.
fn short_number(x: f64) -> String {
    let (v, suffix) = match x.abs() {
        a if a >= 1e6 => (x / 1e6, "M"),
        a if a >= 1e3 => (x / 1e3, "k"),
        _ => (x, ""),
    };
    let text = format!("{v:.2}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{suffix}")
}

/// Groups of bars side by side: for each group, one bar per series (the
/// benchmarks' figures: latency per system, levels live against
/// simulated).
pub fn grouped_bars(
    path: &Path,
    title: &str,
    y_label: &str,
    groups: &[String],
    series: &[Segment<'_>],
) -> Result<()> {
    fonts()?;
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    drawn(root.fill(&WHITE))?;
    let top = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE)
        * 1.2;
    let n = groups.len();
    let k = series.len().max(1);
    let mut chart = drawn(
        ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(80)
            // Each group spans one unit of x; its bars split it.
            .build_cartesian_2d(0.0..n as f64, 0.0..top),
    )?;
    drawn(
        chart
            .configure_mesh()
            .disable_x_mesh()
            .y_desc(y_label)
            .y_label_formatter(&|y| short_number(*y))
            .x_labels(0)
            .draw(),
    )?;
    let label =
        TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    for (i, name) in groups.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        drawn(root.draw_text(name, &label, (x, y + 6)))?;
    }
    let width = 0.8 / k as f64;
    for (j, s) in series.iter().enumerate() {
        let rects = (0..n).map(|i| {
            let x0 = i as f64 + 0.1 + j as f64 * width;
            let v = s.values.get(i).copied().unwrap_or(0.0);
            Rectangle::new([(x0, 0.0), (x0 + width * 0.92, v)], color(j).filled())
        });
        drawn(chart.draw_series(rects))?
            .label(s.name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color(j).filled()));
    }
    legend(&mut chart, Some(SeriesLabelPosition::UpperRight))?;
    drawn(root.present()).with_context(|| format!("writing {}", path.display()))
}
