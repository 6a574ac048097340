//! The scale study's picture: four small line charts in one SVG, drawn from the study's rows.
//!
//! Kubernetes counterpart: none (perf-dash plots scheduler_perf's and ClusterLoader2's results
//! over time; this plots one run over size). Left column: the node sweep (pods fixed), right
//! column: the pod sweep (nodes fixed). Top row: throughput (pods bound per second, pods created
//! per second); bottom row: CPU per pod of the apiserver and the scheduler, and the relist time.
//! The x axes are logarithmic, with a tick at every measured size.

use std::fmt::Write;

use super::report::Row;

const PANEL_W: f64 = 520.0;
const PANEL_H: f64 = 250.0;
const MARGIN_L: f64 = 70.0;
const MARGIN_T: f64 = 50.0;
const GAP: f64 = 40.0;

/// One line of a panel: its name, its colour, and (x, y) points.
struct Series {
    name: &'static str,
    colour: &'static str,
    points: Vec<(f64, f64)>,
}

/// The whole picture for the study's rows (rows that failed are left out).
pub fn svg(rows: &[Row]) -> String {
    let points: Vec<Values> = rows.iter().filter_map(Values::of).collect();
    let fixed_pods = most_common(points.iter().map(|p| p.pods));
    let fixed_nodes = most_common(points.iter().map(|p| p.nodes));
    let mut node_sweep: Vec<&Values> = points.iter().filter(|p| p.pods == fixed_pods).collect();
    let mut pod_sweep: Vec<&Values> = points.iter().filter(|p| p.nodes == fixed_nodes).collect();
    node_sweep.sort_by(|a, b| a.nodes.total_cmp(&b.nodes));
    pod_sweep.sort_by(|a, b| a.pods.total_cmp(&b.pods));
    let width = MARGIN_L * 2.0 + PANEL_W * 2.0 + GAP + 20.0;
    let height = MARGIN_T * 2.0 + PANEL_H * 2.0 + GAP * 2.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {height}\" width=\"100%\" style=\"max-width:{width}px;font-family:sans-serif;font-size:12px\" class=\"chart\">"
    );
    let by_nodes: fn(&Values) -> f64 = |p| p.nodes;
    let by_pods: fn(&Values) -> f64 = |p| p.pods;
    let right = MARGIN_L * 2.0 + PANEL_W + GAP;
    let lower = MARGIN_T + PANEL_H + GAP * 2.0;
    let panels = [
        (
            (MARGIN_L, MARGIN_T),
            format!("Throughput vs nodes ({fixed_pods} pods)"),
            "hollow nodes",
            throughput(&node_sweep, by_nodes),
        ),
        (
            (right, MARGIN_T),
            format!("Throughput vs pods ({fixed_nodes} nodes)"),
            "pods",
            throughput(&pod_sweep, by_pods),
        ),
        (
            (MARGIN_L, lower),
            format!("Cost per pod vs nodes ({fixed_pods} pods)"),
            "hollow nodes",
            cost(&node_sweep, by_nodes),
        ),
        (
            (right, lower),
            format!("Cost per pod vs pods ({fixed_nodes} nodes)"),
            "pods",
            cost(&pod_sweep, by_pods),
        ),
    ];
    for (at, title, x_label, lines) in panels {
        panel(&mut out, at, &title, x_label, &lines);
    }
    out.push_str("</svg>\n");
    out
}

/// The top row: pods bound and created per second, against the sweep's `x`.
fn throughput(sweep: &[&Values], x: fn(&Values) -> f64) -> Vec<Series> {
    vec![
        series("pods bound/s", "#2b6cb0", sweep, x, |p| p.bound),
        series("pods created/s", "#2f855a", sweep, x, |p| p.created),
    ]
}

/// The bottom row: CPU per pod of the apiserver and the scheduler, and the relist time.
fn cost(sweep: &[&Values], x: fn(&Values) -> f64) -> Vec<Series> {
    vec![
        series("apiserver µs CPU/pod", "#c05621", sweep, x, |p| {
            p.apiserver_us
        }),
        series("scheduler µs CPU/pod", "#6b46c1", sweep, x, |p| {
            p.scheduler_us
        }),
        series("LIST of all pods, ms ×10", "#718096", sweep, x, |p| {
            p.relist_ms * 10.0
        }),
    ]
}

fn series(
    name: &'static str,
    colour: &'static str,
    sweep: &[&Values],
    x: fn(&Values) -> f64,
    y: fn(&Values) -> f64,
) -> Series {
    Series {
        name,
        colour,
        points: sweep.iter().map(|p| (x(p), y(p))).collect(),
    }
}

/// The numbers a point's row carries.
struct Values {
    nodes: f64,
    pods: f64,
    bound: f64,
    created: f64,
    apiserver_us: f64,
    scheduler_us: f64,
    relist_ms: f64,
}

impl Values {
    fn of(row: &Row) -> Option<Values> {
        let get = |key: &str| row.values.get(key).and_then(|v| v.as_f64());
        Some(Values {
            nodes: get("nodes")?,
            pods: get("pods")?,
            bound: get("pods_per_s")?,
            created: get("create_pods_per_s")?,
            apiserver_us: get("cpu_us_per_pod_apiserver").unwrap_or(0.0),
            scheduler_us: get("cpu_us_per_pod_scheduler").unwrap_or(0.0),
            relist_ms: get("relist_ms").unwrap_or(0.0),
        })
    }
}

/// The value most points share (the fixed size of a sweep).
fn most_common(values: impl Iterator<Item = f64>) -> f64 {
    let mut counts: Vec<(f64, usize)> = Vec::new();
    for v in values {
        match counts.iter_mut().find(|(x, _)| *x == v) {
            Some((_, n)) => *n += 1,
            None => counts.push((v, 1)),
        }
    }
    counts
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .map_or(0.0, |(v, _)| v)
}

/// One chart at `(left, top)`: axes, grid, a line and dots per series, a legend.
fn panel(out: &mut String, (left, top): (f64, f64), title: &str, x_label: &str, lines: &[Series]) {
    let xs: Vec<f64> = lines
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    let (lo, hi) = xs
        .iter()
        .fold((f64::MAX, f64::MIN), |(lo, hi), &x| (lo.min(x), hi.max(x)));
    let (lo, hi) = if lo < hi {
        (lo.ln(), hi.ln())
    } else {
        (0.0, 1.0)
    };
    let most = lines
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(1.0_f64, f64::max)
        * 1.1;
    let x = |v: f64| left + (v.ln() - lo) / (hi - lo) * PANEL_W;
    let y = |v: f64| top + PANEL_H - v / most * PANEL_H;
    let _ = writeln!(
        out,
        "<text x=\"{left}\" y=\"{}\" font-weight=\"bold\">{title}</text>",
        top - 30.0
    );
    for i in 0..=4 {
        let v = most / 4.0 * f64::from(i);
        let (x2, at, label_x) = (left + PANEL_W, y(v), left - 6.0);
        let _ = writeln!(
            out,
            "<line x1=\"{left}\" x2=\"{x2}\" y1=\"{at:.1}\" y2=\"{at:.1}\" stroke=\"#e2e8f0\"/><text x=\"{label_x}\" y=\"{:.1}\" text-anchor=\"end\">{v:.0}</text>",
            at + 4.0
        );
    }
    let mut ticks = xs.clone();
    ticks.sort_by(f64::total_cmp);
    ticks.dedup();
    for t in ticks {
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{t:.0}</text>",
            x(t),
            top + PANEL_H + 16.0
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{x_label} (log scale)</text>",
        left + PANEL_W / 2.0,
        top + PANEL_H + 32.0
    );
    let _ = writeln!(out, "<rect x=\"{left}\" y=\"{top}\" width=\"{PANEL_W}\" height=\"{PANEL_H}\" fill=\"none\" stroke=\"#a0aec0\"/>");
    for (i, s) in lines.iter().enumerate() {
        let path: Vec<String> = s
            .points
            .iter()
            .map(|&(a, b)| format!("{:.1},{:.1}", x(a), y(b)))
            .collect();
        let _ = writeln!(out, "<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" data-series=\"{}\"/>", path.join(" "), s.colour, s.name);
        for &(a, b) in &s.points {
            let _ = writeln!(out, "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\" fill=\"{}\"><title>{} at {a:.0}: {b:.0}</title></circle>", x(a), y(b), s.colour, s.name);
        }
        let lx = left + 180.0 * i as f64;
        let _ = writeln!(out, "<rect x=\"{lx}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>", top - 20.0, s.colour, lx + 14.0, top - 11.0, s.name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(nodes: f64, pods: f64, bound: f64) -> Row {
        Row::new("scale_point", "", "", "")
            .value("nodes", nodes)
            .value("pods", pods)
            .value("pods_per_s", bound)
            .value("create_pods_per_s", bound * 2.0)
    }

    /// Both sweeps are drawn from the rows, one dot per point and series; failed rows are skipped.
    #[test]
    fn the_chart_has_a_dot_per_point_and_series() {
        let rows = vec![
            row(100.0, 5000.0, 900.0),
            row(1000.0, 5000.0, 500.0),
            row(1000.0, 1000.0, 600.0),
            row(1000.0, 20000.0, 400.0),
            Row::new("scale_point", "", "", ""),
        ];
        let svg = svg(&rows);
        assert!(svg.starts_with("<svg"));
        assert!(svg.contains("Throughput vs nodes (5000 pods)"));
        assert!(svg.contains("Throughput vs pods (1000 nodes)"));
        // Node sweep: 2 points, pod sweep: 3 points; 2 series on top, 3 below.
        assert_eq!(
            svg.matches("<circle").count(),
            2 * 2 + 3 * 2 + 2 * 3 + 3 * 3
        );
        assert!(svg.contains("pods bound/s at 100: 900"));
    }
}
