//! The picture: a self-contained HTML page with one SVG timeline per experiment.
//!
//! Kubernetes counterpart: none; it draws the diagrams of the seed articles (one lane per
//! component, arrows in time) from measured data. Each experiment gets a timeline with one lane
//! per component (client, apiserver, scheduler, endpoint-controller, proxy, kubelet, process) and,
//! where load ran, a bar chart of answered and failed requests per 100 ms on the same time axis,
//! so a newcomer can see failures line up with the gap between "SIGTERM" and "proxy applied".
//! Nothing is loaded from the network: the page is one file with inline SVG and CSS.

use std::fmt::Write;

use super::load::{self, Outcome};
use super::timeline::{Lane, Timeline};

/// One experiment of the report.
pub struct Section<'a> {
    /// The heading (`race: no preStop`).
    pub title: String,
    /// A paragraph saying what was done and what to look at.
    pub caption: String,
    /// The marks to draw.
    pub timeline: &'a Timeline,
    /// Request outcomes on the same time axis (empty if no load ran).
    pub outcomes: &'a [Outcome],
}

const WIDTH: f64 = 1100.0;
const LABEL: f64 = 170.0;
const LANE: f64 = 50.0;
const BARS: f64 = 120.0;
const BUCKET_MS: f64 = 100.0;

/// Renders the whole page.
pub fn render(title: &str, sections: &[Section<'_>]) -> String {
    let mut html = String::new();
    let _ = write!(
        html,
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{}</title>\n<style>{}</style></head><body>\n<h1>{}</h1>\n",
        escape(title),
        STYLE,
        escape(title)
    );
    for section in sections {
        let _ = writeln!(
            html,
            "<section><h2>{}</h2><p>{}</p>",
            escape(&section.title),
            escape(&section.caption)
        );
        html.push_str(&svg(section));
        html.push_str("</section>\n");
    }
    html.push_str("</body></html>\n");
    html
}

/// The SVG of one section: lanes with their marks, then the request bars.
fn svg(section: &Section<'_>) -> String {
    let lanes: Vec<Lane> = Lane::ALL
        .iter()
        .copied()
        .filter(|lane| {
            section
                .timeline
                .marks
                .iter()
                .any(|mark| mark.component == *lane)
        })
        .collect();
    let (start, end) = time_range(section);
    let scale = Scale { start, end };
    let bars_height = if section.outcomes.is_empty() {
        0.0
    } else {
        BARS + 20.0
    };
    let height = 30.0 + lanes.len() as f64 * LANE + bars_height + 30.0;
    let mut out = String::new();
    let _ = writeln!(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" class=\"timeline\">");
    axis(&mut out, &scale, height - 20.0);
    for (row, lane) in lanes.iter().enumerate() {
        let y = 30.0 + row as f64 * LANE;
        let _ = writeln!(
            out,
            "<g class=\"lane\" data-lane=\"{0}\"><rect x=\"0\" y=\"{1}\" width=\"{WIDTH}\" height=\"{LANE}\" class=\"band{2}\"/><text x=\"8\" y=\"{3}\" class=\"lane-name\">{0}</text>",
            lane.name(),
            y,
            row % 2,
            y + LANE / 2.0 + 4.0
        );
        // Labels go on the first of three text rows where they do not overlap the previous one.
        let mut row_ends = [f64::MIN; 3];
        for mark in section
            .timeline
            .marks
            .iter()
            .filter(|mark| mark.component == *lane)
        {
            let x = scale.x(mark.t_ms);
            let width = (mark.event.len() + 10) as f64 * 5.6;
            let row = row_ends.iter().position(|end| x > *end).unwrap_or(0);
            row_ends[row] = x + width;
            let label_y = y + 12.0 + row as f64 * 14.0;
            let _ = writeln!(
                out,
                "<line x1=\"{x:.1}\" y1=\"30\" x2=\"{x:.1}\" y2=\"{bottom:.1}\" class=\"guide\"/><circle cx=\"{x:.1}\" cy=\"{cy:.1}\" r=\"5\" class=\"mark\"><title>{event} at {t:.1} ms</title></circle><text x=\"{tx:.1}\" y=\"{label_y:.1}\" class=\"mark-label\">{event} ({t:.0} ms)</text>",
                bottom = 30.0 + lanes.len() as f64 * LANE,
                cy = y + LANE / 2.0,
                event = escape(&mark.event),
                t = mark.t_ms,
                tx = x + 7.0,
            );
        }
        out.push_str("</g>\n");
    }
    if !section.outcomes.is_empty() {
        bars(
            &mut out,
            &scale,
            section.outcomes,
            30.0 + lanes.len() as f64 * LANE + 20.0,
        );
    }
    out.push_str("</svg>\n");
    out
}

/// Maps milliseconds to x pixels.
struct Scale {
    start: f64,
    end: f64,
}

impl Scale {
    fn x(&self, t_ms: f64) -> f64 {
        LABEL + (t_ms - self.start) / (self.end - self.start).max(1.0) * (WIDTH - LABEL - 30.0)
    }
}

/// The time span to draw: every mark and every request, with a little margin.
fn time_range(section: &Section<'_>) -> (f64, f64) {
    let times = section
        .timeline
        .marks
        .iter()
        .map(|mark| mark.t_ms)
        .chain(section.outcomes.iter().map(|outcome| outcome.t_ms));
    let (low, high) = times.fold((f64::MAX, f64::MIN), |(low, high), t| {
        (low.min(t), high.max(t))
    });
    if low > high {
        return (0.0, 1000.0);
    }
    let margin = ((high - low) * 0.03).max(10.0);
    (low - margin, high + margin)
}

/// Ticks along the bottom, at a round interval.
fn axis(out: &mut String, scale: &Scale, y: f64) {
    let span = scale.end - scale.start;
    let step = [
        1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0, 10000.0,
    ]
    .into_iter()
    .find(|step| span / step <= 12.0)
    .unwrap_or(20000.0);
    let mut tick = (scale.start / step).ceil() * step;
    while tick <= scale.end {
        let x = scale.x(tick);
        let _ = writeln!(out, "<line x1=\"{x:.1}\" y1=\"{y}\" x2=\"{x:.1}\" y2=\"{}\" class=\"tick\"/><text x=\"{x:.1}\" y=\"{}\" class=\"tick-label\">{tick:.0} ms</text>", y + 5.0, y + 17.0);
        tick += step;
    }
}

/// Answered (green) and failed (red) requests per 100 ms, stacked.
fn bars(out: &mut String, scale: &Scale, outcomes: &[Outcome], top: f64) {
    let rows = load::buckets(outcomes, BUCKET_MS);
    let most = rows
        .iter()
        .map(|(_, ok, failed)| ok + failed)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let _ = writeln!(
        out,
        "<g class=\"requests\"><text x=\"8\" y=\"{}\" class=\"lane-name\">requests / 100 ms</text>",
        top + BARS / 2.0
    );
    for (t_ms, ok, failed) in rows {
        let x = scale.x(t_ms);
        let width = (scale.x(t_ms + BUCKET_MS) - x - 1.0).max(1.0);
        let ok_height = ok as f64 / most * BARS;
        let failed_height = failed as f64 / most * BARS;
        let bottom = top + BARS;
        let _ = writeln!(
            out,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{width:.1}\" height=\"{ok_height:.1}\" class=\"ok\"><title>{ok} answered</title></rect><rect x=\"{x:.1}\" y=\"{:.1}\" width=\"{width:.1}\" height=\"{failed_height:.1}\" class=\"failed\"><title>{failed} failed</title></rect>",
            bottom - ok_height,
            bottom - ok_height - failed_height,
        );
    }
    out.push_str("</g>\n");
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const STYLE: &str = "body{font-family:sans-serif;margin:24px;color:#222}section{margin-bottom:36px}\
.band0{fill:#f6f7f9}.band1{fill:#eceef2}.lane-name{font-size:13px;font-weight:bold;fill:#333}\
.mark{fill:#2b6cb0}.mark-label{font-size:11px;fill:#222}.guide{stroke:#2b6cb0;stroke-opacity:.15}\
.tick{stroke:#888}.tick-label{font-size:10px;fill:#555;text-anchor:middle}.ok{fill:#38a169}.failed{fill:#e53e3e}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_has_one_lane_per_component_with_marks_and_request_bars() {
        let origin = "2026-11-22T10:00:00Z".parse().unwrap();
        let mut timeline = Timeline::new(origin);
        timeline.add(
            Lane::Kubelet,
            "SIGTERM sent",
            "2026-11-22T10:00:00.010Z".parse().unwrap(),
        );
        timeline.add(
            Lane::Proxy,
            "endpoints applied <3>",
            "2026-11-22T10:00:02Z".parse().unwrap(),
        );
        let outcomes = vec![
            Outcome {
                t_ms: 5.0,
                served_by: Some("web-1".into()),
                error: None,
            },
            Outcome {
                t_ms: 150.0,
                served_by: None,
                error: Some("connection refused".into()),
            },
        ];
        let page = render(
            "minik demo",
            &[Section {
                title: "race".into(),
                caption: "a & b".into(),
                timeline: &timeline,
                outcomes: &outcomes,
            }],
        );
        assert!(page.contains("data-lane=\"kubelet\""));
        assert!(page.contains("data-lane=\"proxy\""));
        assert!(
            !page.contains("data-lane=\"scheduler\""),
            "lanes without marks are left out"
        );
        assert!(page.contains("endpoints applied &lt;3&gt;"));
        assert!(page.contains("class=\"failed\""));
        assert!(page.contains("a &amp; b"));
        assert!(
            !page.contains("http://") || page.matches("http://").count() == 1,
            "only the SVG namespace names a URL"
        );
    }
}
