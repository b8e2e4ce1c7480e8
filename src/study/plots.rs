//! The study's three figures as SVG: generation time vs length (log-log), packed bytes vs
//! length, and ones ratio vs length with the expected ±3σ band (0.5 ± 1.5/sqrt(n)).

use std::path::Path;

use plotters::prelude::*;

use super::Row;

const COLORS: [RGBColor; 7] = [BLUE, RED, GREEN, MAGENTA, CYAN, RGBColor(255, 140, 0), BLACK];

fn series(rows: &[Row]) -> Vec<(String, Vec<&Row>)> {
    let mut names: Vec<String> = rows.iter().map(|r| r.alg.clone()).collect();
    names.dedup();
    names.into_iter().map(|n| (n.clone(), rows.iter().filter(|r| r.alg == n).collect())).collect()
}

/// Draws the three figures into `dir`.
///
/// # Errors
/// A file cannot be written.
pub fn draw_all(dir: &Path, rows: &[Row]) -> anyhow::Result<()> {
    time(&dir.join("time_vs_length.svg"), rows)?;
    bytes(&dir.join("bytes_vs_length.svg"), rows)?;
    ratio(&dir.join("ones_ratio_vs_length.svg"), rows)?;
    Ok(())
}

fn bounds(rows: &[Row]) -> (f64, f64) {
    let min = rows.iter().map(|r| r.bits).min().unwrap_or(1) as f64;
    let max = rows.iter().map(|r| r.bits).max().unwrap_or(10) as f64;
    (min * 0.8, max * 1.25)
}

fn time(path: &Path, rows: &[Row]) -> anyhow::Result<()> {
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e}"))?;
    let (x0, x1) = bounds(rows);
    let y_max = rows.iter().map(|r| r.median_ns).max().unwrap_or(1) as f64 / 1e6 * 2.0;
    let y_min = rows.iter().map(|r| r.median_ns).min().unwrap_or(1).max(1) as f64 / 1e6 / 2.0;
    let mut chart = ChartBuilder::on(&root)
        .caption("Generation time vs length", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((x0..x1).log_scale(), (y_min..y_max).log_scale())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    chart
        .configure_mesh()
        .x_desc("bits")
        .y_desc("median time (ms)")
        .draw()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for (i, (name, points)) in series(rows).into_iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let data: Vec<(f64, f64)> =
            points.iter().map(|r| (r.bits as f64, r.median_ns as f64 / 1e6)).collect();
        chart
            .draw_series(LineSeries::new(data.clone(), color.stroke_width(2)))
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart
            .draw_series(data.into_iter().map(|p| Circle::new(p, 3, color.filled())))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE)
        .border_style(BLACK)
        .draw()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow::anyhow!("{e}"))
}

fn bytes(path: &Path, rows: &[Row]) -> anyhow::Result<()> {
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e}"))?;
    let (x0, x1) = bounds(rows);
    let y_max = rows.iter().map(|r| r.bytes).max().unwrap_or(1) as f64 * 2.0;
    let y_min = rows.iter().map(|r| r.bytes).min().unwrap_or(1) as f64 / 2.0;
    let mut chart = ChartBuilder::on(&root)
        .caption("Packed bytes vs length (ceil(n/8))", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((x0..x1).log_scale(), (y_min..y_max).log_scale())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    chart.configure_mesh().x_desc("bits").y_desc("bytes").draw().map_err(|e| anyhow::anyhow!("{e}"))?;
    for (i, (name, points)) in series(rows).into_iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let data: Vec<(f64, f64)> = points.iter().map(|r| (r.bits as f64, r.bytes as f64)).collect();
        chart
            .draw_series(data.into_iter().map(|p| Circle::new(p, 4 + (i as i32 % 3), color.stroke_width(1))))
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .label(name)
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, color));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE)
        .border_style(BLACK)
        .draw()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow::anyhow!("{e}"))
}

fn ratio(path: &Path, rows: &[Row]) -> anyhow::Result<()> {
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow::anyhow!("{e}"))?;
    let (x0, x1) = bounds(rows);
    let spread = 1.5 / x0.sqrt() * 1.3;
    let mut chart = ChartBuilder::on(&root)
        .caption("Ones ratio vs length, with the expected ±3σ band 0.5 ± 1.5/sqrt(n)", ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((x0..x1).log_scale(), (0.5 - spread)..(0.5 + spread))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    chart.configure_mesh().x_desc("bits").y_desc("ones / n").draw().map_err(|e| anyhow::anyhow!("{e}"))?;
    let band: Vec<f64> = (0..=60).map(|i| x0 * (x1 / x0).powf(f64::from(i) / 60.0)).collect();
    for sign in [-1.0, 1.0] {
        chart
            .draw_series(LineSeries::new(
                band.iter().map(|&n| (n, 0.5 + sign * 1.5 / n.sqrt())),
                BLACK.stroke_width(1),
            ))
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    for (i, (name, points)) in series(rows).into_iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let data: Vec<(f64, f64)> = points.iter().map(|r| (r.bits as f64, r.ones_ratio())).collect();
        chart
            .draw_series(data.into_iter().map(|p| Circle::new(p, 4, color.filled())))
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .label(name)
            .legend(move |(x, y)| Circle::new((x + 10, y), 4, color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE)
        .border_style(BLACK)
        .draw()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow::anyhow!("{e}"))
}
