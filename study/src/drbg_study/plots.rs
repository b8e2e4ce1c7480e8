//! The study's three figures, each as SVG and PNG: generation time vs length (log-log), packed
//! bytes vs length, and ones ratio vs length with the expected ±3σ band (0.5 ± 1.5/sqrt(n)).
//! Text is laid out with DejaVu Sans embedded in the binary (the `dejavu` crate), so the PNGs
//! need no system fonts.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use super::Row;

/// One colour per series (ten generators and three study baselines, with room to spare).
const COLORS: [RGBColor; 14] = [
    BLUE,
    RED,
    GREEN,
    MAGENTA,
    CYAN,
    RGBColor(255, 140, 0),
    BLACK,
    RGBColor(128, 0, 128),
    RGBColor(139, 69, 19),
    RGBColor(128, 128, 128),
    RGBColor(0, 128, 128),
    RGBColor(128, 128, 0),
    RGBColor(255, 105, 180),
    RGBColor(0, 0, 128),
];

type Chart<'a, DB, Y> = ChartContext<'a, DB, Cartesian2d<LogCoord<f64>, Y>>;

/// File names of the three figures, without extension.
const FIGURES: [&str; 3] = ["time_vs_length", "bytes_vs_length", "ones_ratio_vs_length"];
/// Figure size in pixels.
const SIZE: (u32, u32) = (900, 600);

fn err(e: impl std::fmt::Display) -> anyhow::Error {
    anyhow::anyhow!("plot: {e}")
}

/// Draws the three figures into `dir` as SVG and PNG.
///
/// # Errors
/// A file cannot be written, or the embedded font cannot be loaded.
pub fn draw_all(dir: &Path, rows: &[Row]) -> anyhow::Result<()> {
    register_font()?;
    let svg = FIGURES.map(|f| dir.join(format!("{f}.svg")));
    draw_set(rows, [0, 1, 2].map(|i| SVGBackend::new(&svg[i], SIZE).into_drawing_area()))?;
    let png = FIGURES.map(|f| dir.join(format!("{f}.png")));
    draw_set(rows, [0, 1, 2].map(|i| BitMapBackend::new(&png[i], SIZE).into_drawing_area()))
}

/// Registers DejaVu Sans as plotters' "sans-serif" (once per process): the `ab_glyph` text
/// backend has no fonts of its own.
///
/// # Errors
/// The embedded font cannot be parsed.
fn register_font() -> anyhow::Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular()).is_ok()
    });
    anyhow::ensure!(ok, "plot: the embedded DejaVu Sans font could not be loaded");
    Ok(())
}

/// The three figures on the given drawing areas (time, bytes, ones ratio).
fn draw_set<DB: DrawingBackend>(rows: &[Row], areas: [DrawingArea<DB, Shift>; 3]) -> anyhow::Result<()> {
    let [time_area, bytes_area, ones_area] = areas;
    let time = |r: &Row| r.median_ns as f64 / 1e6;
    let (t0, t1) = extent(rows, time);
    figure(
        time_area,
        rows,
        "Generation time vs length",
        "median time (ms)",
        (t0 / 2.0..t1 * 2.0).log_scale(),
        SeriesLabelPosition::UpperLeft,
        |c| points(c, rows, time, true),
    )?;
    let bytes = |r: &Row| r.bytes as f64;
    let (b0, b1) = extent(rows, bytes);
    figure(
        bytes_area,
        rows,
        "Packed bytes vs length (ceil(n/8))",
        "bytes",
        (b0 / 2.0..b1 * 2.0).log_scale(),
        SeriesLabelPosition::UpperLeft,
        |c| points(c, rows, bytes, false),
    )?;
    let (n0, n1) = extent(rows, |r| r.bits as f64);
    let spread = 1.5 / n0.sqrt() * 1.3;
    let caption = "Ones ratio vs length, expected ±3σ band 0.5 ± 1.5/sqrt(n)";
    figure(
        ones_area,
        rows,
        caption,
        "ones / n",
        (0.5 - spread)..(0.5 + spread),
        SeriesLabelPosition::LowerRight,
        |c| {
            let band: Vec<f64> = (0..=60).map(|i| n0 * (n1 / n0).powf(f64::from(i) / 60.0)).collect();
            for sign in [-1.0, 1.0] {
                let line = band.iter().map(|&n| (n, 0.5 + sign * 1.5 / n.sqrt()));
                c.draw_series(LineSeries::new(line, BLACK.stroke_width(1))).map_err(err)?;
            }
            points(c, rows, Row::ones_ratio, false)
        },
    )
}

fn extent(rows: &[Row], f: impl Fn(&Row) -> f64) -> (f64, f64) {
    let min = rows.iter().map(&f).fold(f64::INFINITY, f64::min);
    let max = rows.iter().map(&f).fold(f64::NEG_INFINITY, f64::max);
    if min.is_finite() && max.is_finite() && min > 0.0 { (min, max) } else { (1.0, 10.0) }
}

/// One figure with a log-scale x axis (bits), a caption, mesh and legend around `draw`.
fn figure<DB: DrawingBackend, Y>(
    root: DrawingArea<DB, Shift>,
    rows: &[Row],
    caption: &str,
    y_desc: &str,
    y: Y,
    legend: SeriesLabelPosition,
    draw: impl FnOnce(&mut Chart<'_, DB, Y::CoordDescType>) -> anyhow::Result<()>,
) -> anyhow::Result<()>
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    root.fill(&WHITE).map_err(err)?;
    let (x0, x1) = extent(rows, |r| r.bits as f64);
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((x0 * 0.8..x1 * 1.25).log_scale(), y)
        .map_err(err)?;
    chart.configure_mesh().x_desc("bits").y_desc(y_desc).draw().map_err(err)?;
    draw(&mut chart)?;
    chart
        .configure_series_labels()
        .position(legend)
        .background_style(WHITE)
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

/// One labelled series per generator (joined by lines when `lines`).
fn points<DB: DrawingBackend, Y: plotters::coord::ranged1d::Ranged<ValueType = f64>>(
    chart: &mut Chart<'_, DB, Y>,
    rows: &[Row],
    value: impl Fn(&Row) -> f64,
    lines: bool,
) -> anyhow::Result<()> {
    let mut names: Vec<&str> = rows.iter().map(|r| r.alg.as_str()).collect();
    names.dedup();
    for (i, name) in names.into_iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let data: Vec<(f64, f64)> =
            rows.iter().filter(|r| r.alg == name).map(|r| (r.bits as f64, value(r))).collect();
        if lines {
            chart.draw_series(LineSeries::new(data.clone(), color.stroke_width(2))).map_err(err)?;
        }
        chart
            .draw_series(data.into_iter().map(|p| Circle::new(p, 3 + (i as i32 % 3), color.filled())))
            .map_err(err)?
            .label(name)
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, color.filled()));
    }
    Ok(())
}
