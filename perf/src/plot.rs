//! SVG plots (plotters): lines (bandwidth or bytes against size) and a latency histogram.

use std::path::Path;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use crate::Error;

const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

fn bounds(series: &[(String, Vec<(f64, f64)>)]) -> (f64, f64, f64) {
    let points = series.iter().flat_map(|(_, p)| p.iter());
    let (mut x0, mut x1, mut y1) = (f64::INFINITY, 0f64, 0f64);
    for &(x, y) in points {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    (x0.min(x1), x1.max(x0 + 1.0), y1 * 1.05 + f64::EPSILON)
}

/// An SVG chart over `x` and `0..y_top` with its mesh drawn, filled by `fill`, with the
/// series' legend if `legend`.
fn draw<'a>(
    path: &'a Path,
    title: &str,
    labels: (&str, &str),
    x: std::ops::Range<f64>,
    y_top: f64,
    legend: bool,
    fill: impl FnOnce(
        &mut ChartContext<'_, SVGBackend<'a>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    ) -> Result<(), Error>,
) -> Result<(), Error> {
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x, 0f64..y_top)?;
    chart
        .configure_mesh()
        .x_desc(labels.0)
        .y_desc(labels.1)
        .draw()?;
    fill(&mut chart)?;
    if legend {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .position(SeriesLabelPosition::UpperLeft)
            .draw()?;
    }
    root.present()?;
    Ok(())
}

/// One line per series, with a legend.
pub fn lines(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<(), Error> {
    let (x0, x1, y1) = bounds(series);
    draw(path, title, (x_label, y_label), x0..x1, y1, true, |chart| {
        for (i, (name, points)) in series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    color.stroke_width(2),
                ))?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
        }
        Ok(())
    })
}

/// A histogram of `(lower bound, upper bound, count)` bins.
pub fn histogram(
    path: &Path,
    title: &str,
    x_label: &str,
    bins: &[(f64, f64, u64)],
) -> Result<(), Error> {
    let x0 = bins.first().map_or(0.0, |b| b.0);
    let x1 = bins.last().map_or(1.0, |b| b.1).max(x0 + f64::EPSILON);
    let top = bins.iter().map(|b| b.2).max().unwrap_or(1) as f64 * 1.05;
    draw(
        path,
        title,
        (x_label, "samples"),
        x0..x1,
        top,
        false,
        |chart| {
            chart.draw_series(bins.iter().map(|&(lo, hi, n)| {
                Rectangle::new([(lo, 0.0), (hi, n as f64)], COLORS[0].filled())
            }))?;
            Ok(())
        },
    )
}
