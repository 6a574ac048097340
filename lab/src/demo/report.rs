//! The picture: a self-contained HTML page with one SVG timeline per experiment.
//!
//! Kubernetes counterpart: none; it draws the diagrams of the seed articles (one lane per
//! component, arrows in time) from measured data. Each experiment gets a timeline with one lane
//! per component (client, apiserver, scheduler, endpoint-controller, proxy, kubelet, process) and,
//! where load ran, a bar chart of answered and failed requests per 100 ms on the same time axis,
//! so a newcomer can see failures line up with the gap between "SIGTERM" and "proxy applied".
//! Nothing is loaded from the network: the page is one file with inline SVG and CSS.
//!
//! Labels never overlap and never leave the picture ([`layout_labels`]): a label goes right of its
//! mark, or left of it near the right edge, on the first text row of its lane where it fits, and a
//! lane grows a row when none does. The SVG scales to the page's width (`viewBox`), so a narrow
//! window shrinks the picture rather than cutting it.

use std::fmt::Write;

use super::load::{self, Outcome};
use super::timeline::{Lane, Timeline};

/// One experiment of the report: a heading, a caption and its picture.
pub struct Section {
    /// The heading (`race: no preStop`).
    pub title: String,
    /// A paragraph saying what was done and what to look at.
    pub caption: String,
    /// The picture: [`timeline_svg`] or `chart::svg`.
    pub svg: String,
}

/// Requests sent through one path (`via proxy`), drawn as a bar row under the lanes.
pub type Series<'a> = (&'a str, &'a [Outcome]);

const WIDTH: f64 = 1100.0;
const LABEL: f64 = 170.0;
/// The smallest lane height; a lane with more text rows is taller.
const LANE: f64 = 50.0;
/// One text row of a lane.
const ROW: f64 = 14.0;
const BARS: f64 = 120.0;
const BUCKET_MS: f64 = 100.0;
/// Width of one character of an 11 px label (a generous average for sans-serif).
const CHAR: f64 = 6.3;
/// Room between a mark and its label, and between two labels.
const GAP: f64 = 7.0;
/// The right margin labels keep.
const RIGHT: f64 = WIDTH - 6.0;

/// Renders the whole page.
pub fn render(title: &str, sections: &[Section]) -> String {
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
        html.push_str(&section.svg);
        html.push_str("</section>\n");
    }
    html.push_str("</body></html>\n");
    html
}

/// Where one label goes: its text row in the lane, its left edge and whether it is drawn left of
/// its mark (`text-anchor: end`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Placement {
    /// The text row, from 0 (top of the lane).
    pub row: usize,
    /// Left edge of the label's box.
    pub left: f64,
    /// Right edge of the label's box.
    pub right: f64,
}

/// Places labels of `widths` for marks at `xs` (sorted or not) so that none overlaps another on
/// its row and all stay between [`LABEL`] and [`RIGHT`].
pub fn layout_labels(marks: &[(f64, f64)]) -> Vec<Placement> {
    let mut rows: Vec<Vec<(f64, f64)>> = Vec::new();
    marks
        .iter()
        .map(|&(x, width)| {
            let (left, right) = if x + GAP + width <= RIGHT {
                (x + GAP, x + GAP + width)
            } else if x - GAP - width >= LABEL {
                (x - GAP - width, x - GAP)
            } else {
                let left = (RIGHT - width).max(LABEL);
                (left, left + width)
            };
            let free = |row: &Vec<(f64, f64)>| {
                row.iter()
                    .all(|&(l, r)| right + GAP <= l || left >= r + GAP)
            };
            let row = match rows.iter().position(free) {
                Some(row) => row,
                None => {
                    rows.push(Vec::new());
                    rows.len() - 1
                }
            };
            rows[row].push((left, right));
            Placement { row, left, right }
        })
        .collect()
}

/// A lane of the picture: its marks with their label placements, and its height.
type LaidLane<'a> = (Lane, Vec<(&'a super::timeline::Mark, Placement)>, f64);

/// The text of a mark's label.
fn label_text(mark: &super::timeline::Mark) -> String {
    format!("{} ({:.0} ms)", mark.event, mark.t_ms)
}

/// The SVG of a timeline: lanes with their marks, then one row of request bars per series.
pub fn timeline_svg(timeline: &Timeline, series: &[Series<'_>]) -> String {
    let series: Vec<Series<'_>> = series
        .iter()
        .copied()
        .filter(|(_, o)| !o.is_empty())
        .collect();
    let lanes: Vec<Lane> = Lane::ALL
        .iter()
        .copied()
        .filter(|lane| timeline.marks.iter().any(|mark| mark.component == *lane))
        .collect();
    let (start, end) = time_range(timeline, &series);
    let scale = Scale { start, end };
    // Each lane's marks with their label placements, and the lane's height.
    let laid: Vec<LaidLane<'_>> = lanes
        .iter()
        .map(|lane| {
            let marks: Vec<_> = timeline
                .marks
                .iter()
                .filter(|mark| mark.component == *lane)
                .collect();
            let boxes: Vec<(f64, f64)> = marks
                .iter()
                .map(|mark| {
                    (
                        scale.x(mark.t_ms),
                        label_text(mark).chars().count() as f64 * CHAR,
                    )
                })
                .collect();
            let placed: Vec<_> = marks.into_iter().zip(layout_labels(&boxes)).collect();
            let rows = placed.iter().map(|(_, p)| p.row + 1).max().unwrap_or(1);
            let height = LANE.max(rows as f64 * ROW + 22.0);
            (*lane, placed, height)
        })
        .collect();
    let lanes_height: f64 = laid.iter().map(|(_, _, h)| h).sum();
    let bars_height = series.len() as f64 * (BARS + 20.0);
    let height = 30.0 + lanes_height + bars_height + 30.0;
    let mut out = String::new();
    let _ = writeln!(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {height}\" width=\"100%\" style=\"max-width:{WIDTH}px\" class=\"timeline\">");
    axis(&mut out, &scale, height - 20.0);
    let bottom = 30.0 + lanes_height;
    let mut y = 30.0;
    for (row, (lane, placed, lane_height)) in laid.iter().enumerate() {
        let _ = writeln!(
            out,
            "<g class=\"lane\" data-lane=\"{0}\"><rect x=\"0\" y=\"{1}\" width=\"{WIDTH}\" height=\"{lane_height}\" class=\"band{2}\"/><text x=\"8\" y=\"{3}\" class=\"lane-name\">{0}</text>",
            lane.name(),
            y,
            row % 2,
            y + 18.0
        );
        for (mark, place) in placed {
            let x = scale.x(mark.t_ms);
            let label_y = y + 14.0 + place.row as f64 * ROW;
            let _ = writeln!(
                out,
                "<line x1=\"{x:.1}\" y1=\"30\" x2=\"{x:.1}\" y2=\"{bottom:.1}\" class=\"guide\"/><circle cx=\"{x:.1}\" cy=\"{cy:.1}\" r=\"5\" class=\"mark\"><title>{event} at {t:.1} ms</title></circle><text x=\"{tx:.1}\" y=\"{label_y:.1}\" class=\"mark-label\">{label}</text>",
                cy = y + lane_height - 9.0,
                event = escape(&mark.event),
                t = mark.t_ms,
                tx = place.left,
                label = escape(&label_text(mark)),
            );
        }
        out.push_str("</g>\n");
        y += lane_height;
    }
    for (i, (name, outcomes)) in series.iter().enumerate() {
        let top = bottom + 20.0 + i as f64 * (BARS + 20.0);
        bars(&mut out, &scale, name, outcomes, top);
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
fn time_range(timeline: &Timeline, series: &[Series<'_>]) -> (f64, f64) {
    let times = timeline.marks.iter().map(|mark| mark.t_ms).chain(
        series
            .iter()
            .flat_map(|(_, o)| o.iter().map(|outcome| outcome.t_ms)),
    );
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
        // `-0.0 + 0.0` is `0.0`: no "-0 ms" tick.
        let shown = tick + 0.0;
        let _ = writeln!(out, "<line x1=\"{x:.1}\" y1=\"{y}\" x2=\"{x:.1}\" y2=\"{}\" class=\"tick\"/><text x=\"{x:.1}\" y=\"{}\" class=\"tick-label\">{shown:.0} ms</text>", y + 5.0, y + 17.0);
        tick += step;
    }
}

/// Answered (green) and failed (red) requests per 100 ms, stacked.
fn bars(out: &mut String, scale: &Scale, name: &str, outcomes: &[Outcome], top: f64) {
    let rows = load::buckets(outcomes, BUCKET_MS);
    let most = rows
        .iter()
        .map(|(_, ok, failed)| ok + failed)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let failed_total = outcomes.iter().filter(|o| !o.ok()).count();
    let _ = writeln!(
        out,
        "<g class=\"requests\" data-series=\"{0}\"><text x=\"8\" y=\"{1}\" class=\"lane-name\">requests {0}</text><text x=\"8\" y=\"{2}\" class=\"mark-label\">{3} sent, {4} failed</text><text x=\"8\" y=\"{5}\" class=\"mark-label\">(per 100 ms)</text>",
        escape(name),
        top + BARS / 2.0 - 8.0,
        top + BARS / 2.0 + 8.0,
        outcomes.len(),
        failed_total,
        top + BARS / 2.0 + 22.0,
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
.tick{stroke:#888}.tick-label{font-size:10px;fill:#555;text-anchor:middle}.ok{fill:#38a169}.failed{fill:#e53e3e}\
.legend{font-size:11px;fill:#222}.grid{stroke:#ccc;stroke-dasharray:2,3}.y-label{font-size:10px;fill:#555;text-anchor:end}\
table.figures{border-collapse:collapse;margin:8px 0 16px}table.figures td,table.figures th{border:1px solid #ccc;padding:4px 10px;text-align:right}\
table.figures th:first-child,table.figures td:first-child{text-align:left}\
.sides{display:flex;flex-wrap:wrap;gap:16px}.side{flex:1 1 560px;min-width:0}";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_never_overlap_on_a_row_and_stay_inside_the_picture() {
        // Marks crowded together, and some at the very right edge.
        let marks: Vec<(f64, f64)> = [180.0, 185.0, 190.0, 600.0, 610.0, 1060.0, 1070.0, 1090.0]
            .iter()
            .map(|&x| (x, 240.0))
            .collect();
        let placed = layout_labels(&marks);
        for (i, a) in placed.iter().enumerate() {
            assert!(a.left >= LABEL && a.right <= RIGHT, "{a:?} inside");
            for b in &placed[i + 1..] {
                let apart = a.right + GAP <= b.left || b.right + GAP <= a.left;
                assert!(a.row != b.row || apart, "{a:?} and {b:?} overlap");
            }
        }
        assert!(
            placed[5].right <= 1060.0,
            "near the right edge a label goes left of its mark"
        );
        assert_eq!(placed[0].row, 0);
        assert_eq!(placed[1].row, 1, "a crowded label takes the next row");
    }

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
                svg: timeline_svg(&timeline, &[("via proxy", &outcomes)]),
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
