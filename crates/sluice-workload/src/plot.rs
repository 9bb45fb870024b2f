//! Rates over time as a PNG chart: one panel per run, one line per job, its allocation
//! dashed in the same colour, the jobs' total in black and the pool's capacity as a red
//! horizontal line.
//!
//! Text is drawn with DejaVu Sans compiled into the binary, so a chart renders the same on
//! a machine with no fonts installed.

use std::path::Path;
use std::sync::Once;

use plotters::prelude::*;
use plotters::style::{FontStyle, register_font};

/// One job's line in a panel.
#[derive(Clone, Debug, Default)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// (seconds, rate) points.
    pub rate: Vec<(f64, f64)>,
    /// (seconds, allocation) points, drawn dashed; empty when the run had none.
    pub allocation: Vec<(f64, f64)>,
}

/// One run: its jobs against the pool's capacity.
#[derive(Clone, Debug, Default)]
pub struct Panel {
    /// Caption above the panel.
    pub title: String,
    /// The jobs.
    pub series: Vec<Series>,
    /// (seconds, the jobs' summed rate) points.
    pub total: Vec<(f64, f64)>,
    /// The pool's capacity (the red line).
    pub capacity: f64,
    /// The red line's legend where it is not the pool's fixed capacity (an automatic
    /// pool's, a latency target); `None`: "pool capacity N/s".
    pub capacity_label: Option<String>,
    /// The red line's points where it moves (an automatic pool's capacity, sampled each
    /// second); empty: flat at `capacity`.
    pub capacity_line: Vec<(f64, f64)>,
}

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw {path}: {message}")]
pub struct PlotError {
    path: String,
    message: String,
}

const COLOURS: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0x17, 0xbe, 0xcf),
];
const CAPACITY: RGBColor = RGBColor(0xd6, 0x27, 0x28);
const FONT: &str = "sans-serif";

/// Writes `panels`, stacked and on one y scale so that they compare at a glance, to a PNG
/// at `path`, titled `title`, with `unit` on the y axes.
pub fn png(path: &Path, title: &str, unit: &str, panels: &[Panel]) -> Result<(), PlotError> {
    draw(path, title, unit, panels).map_err(|message| PlotError {
        path: path.display().to_string(),
        message,
    })
}

/// A value for an axis or legend: thousands as `k` when large (calls per second), as it
/// is when small (MB per second).
pub(crate) fn short(v: f64) -> String {
    if v.abs() >= 1000.0 {
        format!("{:.0}k", v / 1000.0)
    } else {
        format!("{v:.0}")
    }
}

fn draw(path: &Path, title: &str, unit: &str, panels: &[Panel]) -> Result<(), String> {
    static FONTS: Once = Once::new();
    FONTS.call_once(|| {
        // The font is a valid TrueType file compiled in; this cannot fail.
        let _ = register_font(FONT, FontStyle::Normal, dejavu::sans::regular());
    });
    let points = || {
        panels.iter().flat_map(|p| {
            p.series
                .iter()
                .flat_map(|s| s.rate.iter().chain(&s.allocation))
                .chain(&p.total)
        })
    };
    let x_max = points().map(|p| p.0).fold(1.0, f64::max);
    let y_max = points()
        .map(|p| p.1)
        .chain(panels.iter().map(|p| p.capacity))
        .chain(
            panels
                .iter()
                .flat_map(|p| p.capacity_line.iter().map(|c| c.1)),
        )
        .fold(1.0, f64::max)
        * 1.1;
    let root =
        BitMapBackend::new(path, (1100, 420 * panels.len().max(1) as u32 + 50)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let root = root.titled(title, (FONT, 26)).map_err(|e| e.to_string())?;
    for (panel, area) in panels.iter().zip(root.split_evenly((panels.len(), 1))) {
        let mut chart = ChartBuilder::on(&area)
            .caption(&panel.title, (FONT, 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(80)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .x_desc("seconds")
            .y_desc(unit)
            .x_label_formatter(&|v| format!("{v:.0}"))
            .y_label_formatter(&|v| short(*v))
            .label_style((FONT, 15))
            .axis_desc_style((FONT, 16))
            .light_line_style(WHITE.mix(0.0))
            .bold_line_style(BLACK.mix(0.08))
            .draw()
            .map_err(|e| e.to_string())?;
        let capacity = panel.capacity;
        let line = match panel.capacity_line.as_slice() {
            [] => vec![(0.0, capacity), (x_max, capacity)],
            moving => moving.to_vec(),
        };
        chart
            .draw_series(LineSeries::new(line, CAPACITY.stroke_width(2)))
            .map_err(|e| e.to_string())?
            .label(
                panel
                    .capacity_label
                    .clone()
                    .unwrap_or_else(|| format!("pool capacity {}/s", short(capacity))),
            )
            .legend(|(x, y)| PathElement::new([(x, y), (x + 24, y)], CAPACITY.stroke_width(2)));
        chart
            .draw_series(LineSeries::new(
                panel.total.iter().copied(),
                BLACK.stroke_width(2),
            ))
            .map_err(|e| e.to_string())?
            .label("all jobs")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 24, y)], BLACK.stroke_width(2)));
        for (i, s) in panel.series.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            chart
                .draw_series(LineSeries::new(
                    s.rate.iter().copied(),
                    colour.stroke_width(2),
                ))
                .map_err(|e| e.to_string())?
                .label(&s.name)
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 24, y)], colour.stroke_width(2))
                });
            chart
                .draw_series(DashedLineSeries::new(
                    s.allocation.iter().copied(),
                    8,
                    5,
                    colour.stroke_width(2),
                ))
                .map_err(|e| e.to_string())?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .label_font((FONT, 15))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .draw()
            .map_err(|e| e.to_string())?;
    }
    root.present().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_png() {
        let dir = std::env::temp_dir().join(format!("sluice-plot.{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.png");
        let series = Series {
            name: "a".into(),
            rate: vec![(0.0, 1.0), (1.0, 3.0)],
            allocation: vec![(0.0, 2.0), (1.0, 2.0)],
        };
        let panel = Panel {
            title: "p".into(),
            total: series.rate.clone(),
            series: vec![series],
            capacity: 2.5,
            capacity_label: None,
            capacity_line: Vec::new(),
        };
        png(&path, "t", "ops/s", &[panel.clone(), panel]).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(bytes.starts_with(b"\x89PNG"));
    }
}
