//! Rates over time as a self-contained SVG line chart: one line per series, its limit
//! dashed in the same colour. No plotting library: the chart is small and this keeps
//! experiments' figures reproducible from their CSV by `sluice` alone.

use std::fmt::Write as _;

/// One line of a chart.
#[derive(Clone, Debug)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// One value per second.
    pub values: Vec<f64>,
    /// The limit the values should hold to, drawn dashed.
    pub limit: Option<f64>,
}

const COLOURS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
];
const W: f64 = 720.0;
const H: f64 = 360.0;
const LEFT: f64 = 70.0;
const BOTTOM: f64 = 40.0;
const TOP: f64 = 40.0;
const RIGHT: f64 = 20.0;

/// The chart of `series` against seconds, titled `title`, with `unit` on the y axis.
pub fn svg(title: &str, unit: &str, series: &[Series]) -> String {
    let n = series
        .iter()
        .map(|s| s.values.len())
        .max()
        .unwrap_or(0)
        .max(2);
    let max = series
        .iter()
        .flat_map(|s| s.values.iter().copied().chain(s.limit))
        .fold(1.0f64, f64::max);
    let step = nice_step(max / 4.0);
    // Room above the highest line for the legend.
    let top = (max * 1.25 / step).ceil() * step;
    let x = |i: f64| LEFT + (W - LEFT - RIGHT) * i / (n - 1) as f64;
    let y = |v: f64| H - BOTTOM - (H - BOTTOM - TOP) * v / top;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">{}</text>\n",
        W / 2.0,
        escape(title)
    );
    for k in 0..=(top / step).round() as usize {
        let v = step * k as f64;
        let _ = writeln!(
            s,
            "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{v:.0}</text>",
            W - RIGHT,
            LEFT - 6.0,
            y(v) + 4.0,
            yy = y(v)
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">seconds</text><text x=\"14\" y=\"{}\" transform=\"rotate(-90 14 {})\" text-anchor=\"middle\">{}</text>",
        (LEFT + W - RIGHT) / 2.0,
        H - 8.0,
        H / 2.0,
        H / 2.0,
        escape(unit)
    );
    let every = nice_step((n as f64 / 8.0).max(1.0)) as usize;
    for k in (0..n).step_by(every.max(1)) {
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            x(k as f64),
            H - BOTTOM + 16.0,
            k + 1
        );
    }
    for (i, se) in series.iter().enumerate() {
        let c = COLOURS[i % COLOURS.len()];
        let pts: Vec<String> = se
            .values
            .iter()
            .enumerate()
            .map(|(k, v)| format!("{:.1},{:.1}", x(k as f64), y(*v)))
            .collect();
        let _ = writeln!(
            s,
            "<polyline fill=\"none\" stroke=\"{c}\" stroke-width=\"2\" points=\"{}\"/>",
            pts.join(" ")
        );
        if let Some(l) = se.limit {
            let _ = writeln!(
                s,
                "<line x1=\"{LEFT}\" x2=\"{}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"{c}\" stroke-dasharray=\"6 4\"/>",
                W - RIGHT,
                yy = y(l)
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{}\" fill=\"{c}\">{} (dashed: limit)</text>",
            LEFT + 10.0,
            TOP + 4.0 + 16.0 * i as f64,
            escape(&se.name)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// 1, 2 or 5 times a power of ten, at least `x`: tick spacing people read easily.
fn nice_step(x: f64) -> f64 {
    let p = 10f64.powf(x.max(1e-9).log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|s| *s >= x)
        .unwrap_or(10.0 * p)
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chart_has_a_line_and_a_limit_per_series() {
        let s = svg(
            "t <1>",
            "ops/s",
            &[Series {
                name: "a".into(),
                values: vec![1.0, 2.0, 3.0],
                limit: Some(2.0),
            }],
        );
        assert!(s.starts_with("<svg") && s.contains("<polyline") && s.contains("stroke-dasharray"));
        assert!(s.contains("t &lt;1&gt;"));
    }
}
