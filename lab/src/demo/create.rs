//! `minik demo create`: one pod's journey from `apply` to receiving traffic, step by step.
//!
//! Kubernetes counterpart: the creation journey of seed 000 ("What happens when a Pod is
//! deleted?") and seed 002 ("Graceful shutdown in Kubernetes"), docs/seeds.md: the API
//! server stores the pod, the scheduler binds it, the kubelet starts its process (CRI), gives it an
//! IP (CNI), reports it Running and Ready, the endpoint controllers add it to its Service's
//! Endpoints and EndpointSlices, and the proxy (which reads the slices) starts routing to it. Each step is printed as the demo observes it,
//! with the time since the `apply`, taken from watches and from the components' own Events.

use std::time::Duration;

use jiff::Timestamp;
use minik_api::core::{Pod, Service};
use minik_api::WatchEvent;
use minik_client::{Api, Client, DeleteParams};

use super::manifests::{self, WebPod};
use super::observe::{self, Observer, Seen};
use super::timeline::{Lane, Timeline};

/// What `minik demo create` measured.
pub struct CreateResult {
    /// Every step, relative to the apply.
    pub timeline: Timeline,
}

const NAME: &str = "demo-web";

/// Applies a Service and a pod and narrates the pipeline until a request through the Service is
/// answered by the new pod.
pub async fn run(client: &Client, namespace: &str, narrate: bool) -> crate::Result<CreateResult> {
    let pods = Api::<Pod>::namespaced(client.clone(), namespace);
    let services = Api::<Service>::namespaced(client.clone(), namespace);
    let mut observer = Observer::start(client, namespace).await?;
    let service = services.create(&manifests::service(NAME, NAME)).await?;
    let cluster_ip = service
        .spec
        .as_ref()
        .and_then(|spec| spec.cluster_ip.clone())
        .unwrap_or_default();

    let origin = Timestamp::now();
    let mut timeline = Timeline::new(origin);
    let pod = WebPod {
        name: NAME,
        app: NAME,
        on_sigterm: "exit".into(),
        post_start: None,
        pre_stop: None,
        grace_seconds: 5,
    };
    pods.create(&pod.build()).await?;
    step(
        &mut timeline,
        Lane::Apiserver,
        format!("stored pod {namespace}/{NAME} (durable, resourceVersion assigned)"),
        Timestamp::now(),
    );

    let mut pod_ip = String::new();
    let mut running = false;
    let mut ready = false;
    let mut in_endpoints = false;
    let mut routed = false;
    while !routed {
        match observer
            .next(Duration::from_secs(30), "the pod to receive traffic")
            .await?
        {
            Seen::Pod(WatchEvent::Added(pod) | WatchEvent::Modified(pod), at)
                if name_of(&pod) == NAME =>
            {
                let ip = pod
                    .status
                    .as_ref()
                    .and_then(|status| status.pod_ip.clone())
                    .unwrap_or_default();
                if pod_ip.is_empty() && !ip.is_empty() {
                    pod_ip = ip.clone();
                    step(
                        &mut timeline,
                        Lane::Kubelet,
                        format!("reported IP {ip}"),
                        at,
                    );
                }
                if !running
                    && pod
                        .status
                        .as_ref()
                        .and_then(|status| status.phase.as_deref())
                        == Some("Running")
                {
                    running = true;
                    step(
                        &mut timeline,
                        Lane::Kubelet,
                        "reported phase Running".into(),
                        at,
                    );
                }
                if !ready && observe::is_ready(&pod) {
                    ready = true;
                    step(
                        &mut timeline,
                        Lane::Kubelet,
                        "reported Ready (its readiness probe passed)".into(),
                        at,
                    );
                }
            }
            Seen::Endpoints(WatchEvent::Added(endpoints) | WatchEvent::Modified(endpoints), at)
                if !in_endpoints
                    && !pod_ip.is_empty()
                    && observe::ready_ips(&endpoints).contains(&pod_ip) =>
            {
                in_endpoints = true;
                step(
                    &mut timeline,
                    Lane::EndpointController,
                    format!("Endpoints {NAME} now lists {pod_ip}"),
                    at,
                );
            }
            Seen::Event(event) => {
                let Some(text) = describe(
                    &event.reason.clone().unwrap_or_default(),
                    event.message.as_deref().unwrap_or(""),
                ) else {
                    continue;
                };
                let Some(at) = super::timeline::event_time(&event) else {
                    continue;
                };
                let Some(lane) =
                    super::timeline::event_component(&event).and_then(Lane::of_component)
                else {
                    continue;
                };
                if lane == Lane::Proxy {
                    // Only the update that includes the new pod is a step of its journey.
                    if pod_ip.is_empty() || !text.contains(&pod_ip) {
                        continue;
                    }
                    routed = true;
                }
                step(&mut timeline, lane, text, at);
            }
            _ => {}
        }
    }
    let target = format!("{cluster_ip}:{}", manifests::PORT).parse()?;
    let answer = super::load::run_once(target).await;
    let answered = match &answer {
        Ok(pod) => format!("GET http://{target}/ answered by {pod}"),
        Err(error) => format!("GET http://{target}/ failed: {error}"),
    };
    step(&mut timeline, Lane::Client, answered, Timestamp::now());

    if narrate {
        timeline.print();
    }
    pods.delete(NAME, &DeleteParams::grace(0)).await?;
    services.delete(NAME, &DeleteParams::default()).await?;
    Ok(CreateResult { timeline })
}

/// Records a step. The steps are printed together once the pod receives traffic, in time
/// order: the Events arrive a little after the watch observations they precede.
fn step(timeline: &mut Timeline, lane: Lane, text: String, at: Timestamp) {
    timeline.add(lane, text, at);
}

/// The text of a creation-time Event, or `None` for Events this part does not narrate.
fn describe(reason: &str, message: &str) -> Option<String> {
    match reason {
        "Scheduled" => Some(message.to_string()),
        "Started" | "Created" => Some(message.to_string()),
        "EndpointAdded" | "EndpointReady" => Some(message.to_string()),
        "EndpointsApplied" => Some(format!("{message} (now routing)")),
        _ => None,
    }
}

fn name_of(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or_default()
}
