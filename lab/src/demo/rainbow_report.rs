//! The rainbow demo's part of the report: a table of both outcomes, then each one's chart.
//!
//! Kubernetes counterpart: none; it draws seed 002's comparison of a rolling update and a rainbow
//! deployment under long-lived connections, from the measured [`RainbowResult`]. The two charts
//! sit side by side when the page is wide enough and one under the other otherwise; each is drawn
//! narrower than a full-width chart, so its text stays legible beside the other.

use super::chart;
use super::load;
use super::rainbow::{Outcome, RainbowResult};
use super::report::Section;
use super::streams::StreamEnd;

/// The report: a table of both outcomes, then each one's chart, side by side when the page is
/// wide enough.
pub fn sections(result: &RainbowResult) -> Vec<Section> {
    let row = |o: &Outcome| {
        format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1} s</td></tr>",
            o.strategy,
            o.streams,
            o.completed,
            o.connections_cut,
            o.peak.pods,
            o.finished_ms / 1000.0
        )
    };
    let chart_of = |o: &Outcome| {
        let outcomes: Vec<load::Outcome> = o.ends.iter().map(StreamEnd::as_outcome).collect();
        format!(
            "<div class=\"side\"><h3>{}</h3>{}</div>",
            o.strategy,
            chart::svg_sized(
                640.0,
                &o.groups,
                &o.samples,
                &outcomes,
                o.finished_ms + 500.0,
                "connections ended|cut"
            )
        )
    };
    let html = format!(
        "<table class=\"figures\"><tr><th>strategy</th><th>streams ended</th><th>ran to the end</th><th>cut</th><th>peak pods</th><th>old pods gone after</th></tr>{}{}</table><div class=\"sides\">{}{}</div>",
        row(&result.rolling), row(&result.rainbow), chart_of(&result.rolling), chart_of(&result.rainbow)
    );
    vec![Section {
        title: "rainbow: long-lived connections, rolling update vs rainbow deployment".into(),
        caption: format!(
            "Streams of {:.1} s through the ingress; old pods keep serving {:.1} s after SIGTERM. Times after the update (rolling) or after green was created (rainbow).",
            result.stream_ms / 1000.0, result.shutdown_ms / 1000.0
        ),
        svg: html,
    }]
}
