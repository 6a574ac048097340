//! The rollout picture: a stacked area chart of pods per ReplicaSet and state over time, with
//! the requests sent (and failed) per interval underneath, on the same time axis.
//!
//! Kubernetes counterpart: none; it draws seed 002's "10 Running, 10 Terminating" from measured
//! samples. Each ReplicaSet has a hue (the first blue, the second green, then orange, purple);
//! within it, Ready is the darkest band, then Running (not ready), Pending, and Terminating is
//! drawn hatched in red on top. The legend and the axes stay inside the SVG's `viewBox`, which
//! scales to the page's width.

use std::fmt::Write;

use super::census::{Sample, State};
use super::load::{self, Outcome};

const WIDTH: f64 = 1100.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 50.0;
const AREA: f64 = 260.0;
const BARS: f64 = 90.0;
/// Hues of the groups, in order of appearance.
const HUES: [&str; 4] = ["#2b6cb0", "#2f855a", "#c05621", "#6b46c1"];

/// The chart of one run: `groups` names the ReplicaSets, `samples` their counts (sorted by
/// time), `outcomes` the requests (or connections) on the same axis (ms); `what` names them and
/// their failures (`requests|failed`, `connections ended|cut`).
pub fn svg(
    groups: &[String],
    samples: &[Sample],
    outcomes: &[Outcome],
    end_ms: f64,
    what: &str,
) -> String {
    svg_sized(WIDTH, groups, samples, outcomes, end_ms, what)
}

/// [`svg`] drawn `width` units wide (a narrower chart scales down less beside another one).
pub fn svg_sized(
    width: f64,
    groups: &[String],
    samples: &[Sample],
    outcomes: &[Outcome],
    end_ms: f64,
    what: &str,
) -> String {
    let start = samples.first().map_or(0.0, |s| s.t_ms).min(0.0);
    let end = end_ms.max(start + 1000.0);
    let x = |t: f64| LEFT + (t - start) / (end - start) * (width - LEFT - RIGHT);
    let most = samples.iter().map(Sample::total).max().unwrap_or(1).max(1) as f64;
    // Layers bottom to top: each group's states, in State::ALL order, those with pods only.
    let layers: Vec<(usize, State)> = (0..groups.len())
        .flat_map(|g| State::ALL.iter().map(move |s| (g, *s)))
        .filter(|&(g, s)| samples.iter().any(|sample| sample.count(g, s) > 0))
        .collect();
    let mut key = String::new();
    let top = legend(&mut key, width, groups, &layers) + TOP - 16.0;
    let y = |pods: f64| top + AREA - pods / most * AREA;
    let height = top + AREA + 40.0 + BARS + 40.0;
    let mut out = String::new();
    let _ = writeln!(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {height}\" width=\"100%\" style=\"max-width:{width}px\" class=\"chart\">");
    out.push_str("<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#fed7d7\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#e53e3e\" stroke-width=\"3\"/></pattern></defs>\n");
    out.push_str(&key);
    let mut below = vec![0usize; samples.len()];
    for &(group, state) in &layers {
        let counts: Vec<usize> = samples.iter().map(|s| s.count(group, state)).collect();
        let top: Vec<usize> = below.iter().zip(&counts).map(|(b, c)| b + c).collect();
        let path = step_area(samples, &below, &top, end, &x, &y);
        let _ = writeln!(
            out,
            "<path d=\"{path}\" style=\"{}\" data-series=\"{} {}\"><title>{} {}</title></path>",
            fill(group, state),
            group,
            state.name(),
            escape(&groups[group]),
            state.name()
        );
        below = top;
    }
    y_axis(&mut out, (width, top), most, &y);
    let bars_top = top + AREA + 40.0;
    bars(&mut out, (what, outcomes), bars_top, start, end, &x);
    time_axis(&mut out, start, end, height - 18.0, &x);
    out.push_str("</svg>\n");
    out
}

/// A closed step path between the `low` and `high` stacks (pods), from sample to sample.
fn step_area(
    samples: &[Sample],
    low: &[usize],
    high: &[usize],
    end: f64,
    x: &impl Fn(f64) -> f64,
    y: &impl Fn(f64) -> f64,
) -> String {
    let next_t = |i: usize| samples.get(i + 1).map_or(end, |s| s.t_ms);
    let mut path = String::new();
    for (i, sample) in samples.iter().enumerate() {
        let cmd = if i == 0 { 'M' } else { 'L' };
        let level = y(high[i] as f64);
        let _ = write!(
            path,
            "{cmd}{:.1},{level:.1} L{:.1},{level:.1} ",
            x(sample.t_ms),
            x(next_t(i))
        );
    }
    for i in (0..samples.len()).rev() {
        let level = y(low[i] as f64);
        let _ = write!(
            path,
            "L{:.1},{level:.1} L{:.1},{level:.1} ",
            x(next_t(i)),
            x(samples[i].t_ms)
        );
    }
    path.push('Z');
    path
}

/// The fill of a layer: the group's hue, lighter for less ready states; hatched red when
/// terminating.
fn fill(group: usize, state: State) -> String {
    let hue = HUES[group % HUES.len()];
    match state {
        State::Ready => format!("fill:{hue};fill-opacity:.85"),
        State::Running => format!("fill:{hue};fill-opacity:.5"),
        State::Pending => format!("fill:{hue};fill-opacity:.2"),
        State::Terminating => format!("fill:url(#hatch);stroke:{hue};stroke-width:1"),
    }
}

/// One legend entry per drawn layer, in rows that wrap before the right edge; returns the
/// baseline of the last row.
fn legend(out: &mut String, chart_width: f64, groups: &[String], layers: &[(usize, State)]) -> f64 {
    let mut x = LEFT;
    let mut y = 16.0;
    for &(group, state) in layers {
        let name = &groups[group];
        {
            let text = format!("{name} {}", state.name());
            let width = 20.0 + text.chars().count() as f64 * 6.3 + 14.0;
            if x + width > chart_width - RIGHT && x > LEFT {
                x = LEFT;
                y += 16.0;
            }
            let _ = writeln!(
                out,
                "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"14\" height=\"10\" style=\"{}\"/><text x=\"{:.1}\" y=\"{y:.1}\" class=\"legend\">{}</text>",
                y - 9.0,
                fill(group, state),
                x + 18.0,
                escape(&text)
            );
            x += width;
        }
    }
    y
}

fn y_axis(out: &mut String, (width, top): (f64, f64), most: f64, y: &impl Fn(f64) -> f64) {
    let step = [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]
        .into_iter()
        .find(|step| most / step <= 6.0)
        .unwrap_or(200.0);
    let mut pods = 0.0;
    while pods <= most {
        let at = y(pods);
        let _ = writeln!(out, "<line x1=\"{:.1}\" y1=\"{at:.1}\" x2=\"{:.1}\" y2=\"{at:.1}\" class=\"grid\"/><text x=\"{:.1}\" y=\"{:.1}\" class=\"y-label\">{pods}</text>", LEFT, width - RIGHT, LEFT - 6.0, at + 4.0);
        pods += step;
    }
    let _ = writeln!(
        out,
        "<text x=\"8\" y=\"{:.1}\" class=\"lane-name\">pods</text>",
        top - 6.0
    );
}

/// Requests per interval: answered in green, failed in red on top.
fn bars(
    out: &mut String,
    (what, outcomes): (&str, &[Outcome]),
    top: f64,
    start: f64,
    end: f64,
    x: &impl Fn(f64) -> f64,
) {
    let bucket = ((end - start) / 120.0).max(50.0);
    let rows = load::buckets(outcomes, bucket);
    let most = rows
        .iter()
        .map(|(_, ok, failed)| ok + failed)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let failed_total: usize = rows.iter().map(|(_, _, f)| f).sum();
    let (noun, bad) = what.split_once('|').unwrap_or((what, "failed"));
    let _ = writeln!(
        out,
        "<g class=\"requests\"><text x=\"8\" y=\"{:.1}\" class=\"lane-name\">{noun}: {} ({failed_total} {bad}, in red; per {:.0} ms)</text>",
        top - 8.0,
        outcomes.len(),
        bucket
    );
    for (t_ms, ok, failed) in rows {
        let left = x(t_ms);
        let width = (x(t_ms + bucket) - left - 1.0).max(1.0);
        let ok_height = ok as f64 / most * BARS;
        let failed_height = failed as f64 / most * BARS;
        let bottom = top + BARS;
        let _ = writeln!(
            out,
            "<rect x=\"{left:.1}\" y=\"{:.1}\" width=\"{width:.1}\" height=\"{ok_height:.1}\" class=\"ok\"/><rect x=\"{left:.1}\" y=\"{:.1}\" width=\"{width:.1}\" height=\"{failed_height:.1}\" class=\"failed\"/>",
            bottom - ok_height,
            bottom - ok_height - failed_height,
        );
    }
    out.push_str("</g>\n");
}

fn time_axis(out: &mut String, start: f64, end: f64, y: f64, x: &impl Fn(f64) -> f64) {
    let span = end - start;
    let step = [
        100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0, 10000.0, 20000.0, 30000.0, 60000.0,
    ]
    .into_iter()
    .find(|step| span / step <= 12.0)
    .unwrap_or(120000.0);
    let mut tick = (start / step).ceil() * step;
    while tick <= end {
        let at = x(tick);
        let _ = writeln!(out, "<line x1=\"{at:.1}\" y1=\"{:.1}\" x2=\"{at:.1}\" y2=\"{:.1}\" class=\"tick\"/><text x=\"{at:.1}\" y=\"{:.1}\" class=\"tick-label\">{:.1} s</text>", y - 6.0, y - 1.0, y + 12.0, (tick + 0.0) / 1000.0);
        tick += step;
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn each_nonempty_layer_is_one_closed_path_inside_the_picture() {
        let sample = |t_ms: f64, pairs: &[((usize, State), usize)]| Sample {
            t_ms,
            counts: pairs.iter().copied().collect::<BTreeMap<_, _>>(),
        };
        let samples = vec![
            sample(0.0, &[((0, State::Ready), 2)]),
            sample(
                500.0,
                &[((0, State::Terminating), 2), ((1, State::Ready), 2)],
            ),
            sample(900.0, &[((1, State::Ready), 2)]),
        ];
        let groups = vec!["web-old".to_string(), "web-new".to_string()];
        let page = svg(&groups, &samples, &[], 1000.0, "requests");
        assert_eq!(page.matches("data-series=").count(), 3, "{page}");
        assert!(page.contains("data-series=\"0 terminating\""));
        for path in page.split(" d=\"").skip(1) {
            let path = path.split('"').next().unwrap();
            assert!(path.ends_with('Z'), "closed: {path}");
            for number in path.split(|c: char| !(c.is_ascii_digit() || c == '.')) {
                if let Ok(value) = number.parse::<f64>() {
                    assert!(value <= WIDTH - RIGHT + 0.5, "{value} outside the plot");
                }
            }
        }
    }
}
