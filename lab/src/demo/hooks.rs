//! `minik demo hooks`: the experiment of seed 001 ("What Happens When Deleting a Pod",
//! docs/seeds.md#seed-001) with any numbers — postStart, preStop, the grace period and the app's
//! own shutdown time — measured, next to what the rules predict.
//!
//! Kubernetes counterpart: the kubelet's hook and termination path
//! (docs/kubernetes-rules.md#start-path and #termination):
//! postStart runs alongside the process and holds back Running; on delete, preStop runs first
//! inside the grace period, SIGTERM follows, and SIGKILL comes when the grace period (at least
//! 2 s after SIGTERM) is over. The prediction is `predict.rs`; the measurement comes from the
//! kubelet's Events, the pod's status on a watch, and the app's own log lines.

use std::time::Duration;

use jiff::Timestamp;
use minik_api::core::{Event, Pod};
use minik_api::WatchEvent;
use minik_client::{Api, Client, DeleteParams, ListParams};
use serde::Serialize;

use super::manifests::WebPod;
use super::observe::{self, Observer, Seen};
use super::predict::{self, Hooks, Step};
use super::timeline::{self, Lane, Timeline};

const NAME: &str = "hooks-demo";

/// What `minik demo hooks` measured.
#[derive(Serialize)]
pub struct HooksResult {
    /// The start of the container, relative to its process start.
    pub start: Timeline,
    /// Its termination, relative to the delete.
    pub termination: Timeline,
    /// Each predicted step with the measured time, both in ms (measured is `None` if not seen).
    pub comparison: Vec<Comparison>,
}

/// One row of the predicted-versus-measured table.
#[derive(Serialize)]
pub struct Comparison {
    /// `start` or `termination`.
    pub phase: &'static str,
    /// The step's name.
    pub step: &'static str,
    /// What the rules predict.
    pub predicted_ms: f64,
    /// What happened.
    pub measured_ms: Option<f64>,
}

/// Runs the experiment.
pub async fn run(
    client: &Client,
    namespace: &str,
    hooks: &Hooks,
    narrate: bool,
) -> crate::Result<HooksResult> {
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    let mut observer = Observer::start(client, namespace).await?;
    let on_sigterm = match hooks.shutdown {
        Some(shutdown) => format!("drain:{}", shutdown.as_millis()),
        None => "ignore".to_string(),
    };
    let grace_seconds = hooks.grace.as_secs() as i64;
    let pod = WebPod {
        name: NAME,
        app: NAME,
        on_sigterm,
        post_start: Some(hooks.post_start),
        pre_stop: Some(hooks.pre_stop),
        grace_seconds,
    };
    pods.create(&pod.build()).await?;
    let running_at = wait_for_running(&mut observer).await?;
    if narrate {
        println!("  pod {NAME} is Running; deleting it");
    }
    let log = observe::follow_log(&pods, NAME).await?;

    let delete_sent = Timestamp::now();
    pods.delete(NAME, &DeleteParams::default()).await?;
    let removed_at = wait_for_removal(&mut observer).await?;

    let events = pod_events(client, namespace).await?;
    let started_at = events
        .iter()
        .find(|event| event.reason.as_deref() == Some("Started"))
        .and_then(timeline::event_time);
    let mut start = Timeline::new(started_at.unwrap_or(running_at));
    start.add_events(&events, |reason, message| {
        start_step(reason, message).map(str::to_string)
    });
    start.add(Lane::Apiserver, "Running", running_at);
    let mut termination = Timeline::new(delete_sent);
    termination.add(Lane::Client, "delete sent", delete_sent);
    termination.add_events(&events, |reason, message| {
        termination_step(reason, message).map(str::to_string)
    });
    for (event, at) in timeline::app_marks(&log.await.unwrap_or_default()) {
        if at >= delete_sent {
            termination.add(Lane::Process, format!("app: {event}"), at);
        }
    }
    termination.add(Lane::Apiserver, "object removed", removed_at);

    let mut comparison = compare("start", &predict::start_schedule(hooks), &start);
    comparison.extend(compare(
        "termination",
        &predict::termination_schedule(hooks),
        &termination,
    ));
    Ok(HooksResult {
        start,
        termination,
        comparison,
    })
}

/// Pairs every predicted step with the first measured mark of the same name.
fn compare(phase: &'static str, predicted: &[Step], measured: &Timeline) -> Vec<Comparison> {
    predicted
        .iter()
        .map(|(step, predicted_ms)| Comparison {
            phase,
            step,
            predicted_ms: *predicted_ms,
            measured_ms: measured
                .marks
                .iter()
                .find(|mark| mark.event == *step)
                .map(|mark| mark.t_ms),
        })
        .collect()
}

/// The start-phase name of a kubelet Event.
fn start_step(reason: &str, _message: &str) -> Option<&'static str> {
    match reason {
        "Started" => Some("process started"),
        "PostStartHookStarted" => Some("postStart started"),
        "PostStartHookCompleted" => Some("postStart finished"),
        _ => None,
    }
}

/// The termination-phase name of a kubelet Event.
fn termination_step(reason: &str, message: &str) -> Option<&'static str> {
    match reason {
        "PreStopHookStarted" => Some("preStop started"),
        "PreStopHookCompleted" if message.contains("cut short") => {
            Some("preStop cut short by the grace period")
        }
        "PreStopHookCompleted" => Some("preStop finished"),
        "Killing" => Some("SIGTERM"),
        "Killed" => Some("SIGKILL"),
        "Exited" => Some("process exited"),
        _ => None,
    }
}

async fn wait_for_running(observer: &mut Observer) -> crate::Result<Timestamp> {
    loop {
        if let Seen::Pod(WatchEvent::Added(pod) | WatchEvent::Modified(pod), at) = observer
            .next(Duration::from_secs(60), "the pod to be Running")
            .await?
        {
            if pod.metadata.name.as_deref() == Some(NAME)
                && pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
            {
                return Ok(at);
            }
        }
    }
}

async fn wait_for_removal(observer: &mut Observer) -> crate::Result<Timestamp> {
    loop {
        if let Seen::Pod(WatchEvent::Deleted(pod), at) = observer
            .next(Duration::from_secs(120), "the pod to be removed")
            .await?
        {
            if pod.metadata.name.as_deref() == Some(NAME) {
                return Ok(at);
            }
        }
    }
}

async fn pod_events(client: &Client, namespace: &str) -> crate::Result<Vec<Event>> {
    let events = Api::<Event>::namespaced(client.clone(), namespace);
    let selector = format!("involvedObject.name={NAME}");
    Ok(events
        .list(&ListParams::default().fields(&selector))
        .await?
        .items)
}

/// Prints the predicted-versus-measured table.
pub fn print_comparison(rows: &[Comparison]) {
    println!(
        "\n  {:<12} {:<40} {:>10} {:>10} {:>8}",
        "PHASE", "STEP", "PREDICTED", "MEASURED", "DELTA"
    );
    for row in rows {
        let (measured, delta) = match row.measured_ms {
            Some(ms) => (
                format!("{ms:.0} ms"),
                format!("{:+.0} ms", ms - row.predicted_ms),
            ),
            None => ("-".to_string(), "-".to_string()),
        };
        println!(
            "  {:<12} {:<40} {:>10} {:>10} {:>8}",
            row.phase,
            row.step,
            format!("{:.0} ms", row.predicted_ms),
            measured,
            delta
        );
    }
}
