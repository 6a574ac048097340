//! A pod's journey: the steps of its life as the API shows them, each with its moment.
//!
//! Kubernetes counterpart: none upstream; it is the timeline the seeds draw (docs/seeds.md) and
//! `minik demo` measures (`lab/src/demo/observe.rs`), built live from the same three sources:
//!
//! - the pod watch, stamped when the dashboard received each change: created, bound to a node,
//!   IP, containers running, Ready, deletion requested (`deletionTimestamp`), containers
//!   exited, gone;
//! - Events, stamped by their writer's `eventTime` (microseconds): `Scheduled`, `Started`,
//!   postStart and preStop (`PostStartHookStarted` …), `Killing` (SIGTERM), `Killed` (SIGKILL),
//!   `Exited`;
//! - EndpointSlice changes: added to the Service's endpoints, marked terminating, removed;
//! - the consumers' `EndpointsApplied` Events (minik's own: the proxy's `proxy/src/events.rs`,
//!   the ingress controller's and the load balancer's `ingress/src/applied.rs`): when each started
//!   and stopped routing to the pod's address;
//! - the endpoint controllers' per-pod Events on the Service (`EndpointRemoved` …), the very
//!   Events `minik demo race` draws.
//!
//! Events are read through `minik_client::events::facts`, as the demo reads them, so a step from
//! an Event has the same moment in both; a watch step differs only by when each watcher was told.
//!
//! Every function here is pure: it compares two states and returns the new steps.
//! minik simplifies: a pod seen first in a list gets its creation from the second-precision
//! `creationTimestamp`.

use k8s_openapi::api::core::v1::{Event, Pod};
use minik_client::events::facts;
use serde::Serialize;

use crate::views::{self, SliceEndpoint};

/// One step of a pod's journey.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Step {
    /// When, in milliseconds since the epoch.
    pub at: i64,
    /// What happened (`created`, `scheduled`, `Ready`, `SIGTERM` …).
    pub step: String,
    /// Who did it or reported it (`scheduler`, `kubelet`, `endpointslice-controller` …).
    pub who: String,
    /// More about it: the node, the IP, the grace period, an exit code.
    pub detail: String,
    /// Where the dashboard learned it: `watch`, `event` or `slice`.
    pub source: &'static str,
}

fn step(at: i64, name: &str, who: &str, detail: String, source: &'static str) -> Step {
    Step {
        at,
        step: name.to_string(),
        who: who.to_string(),
        detail,
        source,
    }
}

fn watched(at: i64, name: &str, who: &str, detail: String) -> Step {
    step(at, name, who, detail, "watch")
}

/// The steps a pod change shows. `before` is the last state seen (`None`: first seen, at `seen`
/// if it came from a watch; from a list, `listed`, its creation is its `creationTimestamp`).
pub fn pod_steps(before: Option<&Pod>, after: &Pod, seen: i64, listed: bool) -> Vec<Step> {
    let mut steps = Vec::new();
    if before.is_none() {
        let created = after.metadata.creation_timestamp.as_ref();
        let at = match (listed, created) {
            (true, Some(time)) => time.0.as_millisecond(),
            _ => seen,
        };
        steps.push(watched(at, "created", "apiserver", String::new()));
    }
    let node = |pod: Option<&Pod>| pod.and_then(|p| p.spec.as_ref()?.node_name.clone());
    if let (None, Some(name)) = (node(before), node(Some(after))) {
        steps.push(watched(seen, "bound to node", "scheduler", name));
    }
    let ip = |pod: Option<&Pod>| pod.and_then(|p| p.status.as_ref()?.pod_ip.clone());
    if let (None, Some(ip)) = (ip(before), ip(Some(after))) {
        steps.push(watched(seen, "IP assigned", "kubelet", ip));
    }
    let running = |pod: Option<&Pod>| pod.is_some_and(all_running);
    if !running(before) && running(Some(after)) {
        steps.push(watched(
            seen,
            "containers running",
            "kubelet",
            String::new(),
        ));
    }
    let ready = |pod: Option<&Pod>| pod.is_some_and(views::is_ready);
    match (ready(before), ready(Some(after))) {
        (false, true) => steps.push(watched(seen, "Ready", "kubelet", String::new())),
        (true, false) => steps.push(watched(seen, "not Ready", "kubelet", String::new())),
        _ => {}
    }
    let deleting = |pod: Option<&Pod>| pod.is_some_and(|p| p.metadata.deletion_timestamp.is_some());
    if !deleting(before) && deleting(Some(after)) {
        let grace = after.metadata.deletion_grace_period_seconds.unwrap_or(0);
        steps.push(watched(
            seen,
            "deletionTimestamp",
            "apiserver",
            format!("grace {grace}s"),
        ));
    }
    for (name, code) in newly_terminated(before, after) {
        let detail = format!("{name}: exit code {code}");
        steps.push(watched(seen, "container terminated", "kubelet", detail));
    }
    steps
}

/// The step of a pod's watch `Deleted` event: the object is gone from the API.
pub fn gone(seen: i64) -> Step {
    watched(seen, "gone", "apiserver", "object removed".into())
}

fn all_running(pod: &Pod) -> bool {
    let statuses = pod
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref());
    statuses.is_some_and(|list| {
        !list.is_empty()
            && list
                .iter()
                .all(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
    })
}

/// Containers terminated in `after` that were not in `before`: (name, exit code).
fn newly_terminated(before: Option<&Pod>, after: &Pod) -> Vec<(String, i32)> {
    let terminated = |pod: &Pod| -> Vec<(String, i32)> {
        pod.status
            .as_ref()
            .and_then(|s| s.container_statuses.clone())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|c| Some((c.name, c.state?.terminated?.exit_code)))
            .collect()
    };
    let old = before.map(terminated).unwrap_or_default();
    terminated(after)
        .into_iter()
        .filter(|(name, _)| !old.iter().any(|(n, _)| n == name))
        .collect()
}

/// The step an Event about a pod stands for, named as the seeds name it.
pub fn event_step(event: &Event) -> Option<Step> {
    let at = views::event_time(event)?.as_millisecond();
    let reason = event.reason.as_deref().unwrap_or_default();
    let name = match reason {
        "Scheduled" => "scheduled",
        "Pulled" => "image ready",
        "Created" => "container created",
        "Started" => "container started",
        "PostStartHookStarted" => "postStart started",
        "PostStartHookCompleted" => "postStart finished",
        "PreStopHookStarted" => "preStop started",
        "PreStopHookCompleted" => "preStop finished",
        "FailedPreStopHook" => "preStop failed",
        // The kubelet stamps `Killing` just before SIGTERM (kubelet/src/terminate.rs).
        "Killing" => "SIGTERM",
        "Killed" => "SIGKILL",
        "Exited" => "process exited",
        other => other,
    };
    let detail = event.message.clone().unwrap_or_default();
    Some(step(at, name, &views::event_source(event), detail, "event"))
}

/// The steps a slice change shows, per pod name: added, conditions changed, removed.
pub fn slice_steps(
    before: &[SliceEndpoint],
    after: &[SliceEndpoint],
    seen: i64,
) -> Vec<(String, Step)> {
    let who = "endpointslice-controller";
    let mut named = Vec::new();
    for endpoint in after {
        let name = match before.iter().find(|e| e.pod == endpoint.pod) {
            None => "added to endpoints",
            Some(old) if old != endpoint => "endpoint changed",
            Some(_) => continue,
        };
        let detail = conditions(endpoint);
        named.push((endpoint.pod.clone(), step(seen, name, who, detail, "slice")));
    }
    for old in before
        .iter()
        .filter(|o| !after.iter().any(|e| e.pod == o.pod))
    {
        let removed = step(seen, "removed from endpoints", who, old.ip.clone(), "slice");
        named.push((old.pod.clone(), removed));
    }
    named
}

/// The service port and endpoint addresses of a consumer's `EndpointsApplied` message:
/// `Applied endpoints for default/web:http: 127.244.1.2:8080,127.244.1.3:8080` (or `<none>`),
/// read as the demo reads it (`minik_client::events::facts`).
pub fn applied_endpoints(message: &str) -> Option<(String, Vec<String>)> {
    let (port, endpoints) = facts::applied_endpoints(message)?;
    let ips = endpoints.iter().map(|e| facts::endpoint_ip(e).to_string());
    Some((port.to_string(), ips.collect()))
}

/// The step an endpoint controller's Event about a Service stands for, and the pod it names:
/// `Pod web-1 (127.244.1.2) removed from the Endpoints` (the demo's race draws the same Event).
pub fn endpoint_event_step(event: &Event) -> Option<(String, Step)> {
    let name = match event.reason.as_deref()? {
        "EndpointAdded" => "added to the Endpoints",
        "EndpointRemoved" => "removed from the Endpoints",
        "EndpointReady" => "ready in the EndpointSlices",
        "EndpointNotReady" => "not ready in the EndpointSlices",
        _ => return None,
    };
    let at = views::event_time(event)?.as_millisecond();
    let (pod, ip) = facts::endpoint_pod(event.message.as_deref()?)?;
    let who = views::event_source(event);
    Some((
        pod.to_string(),
        step(at, name, &who, ip.to_string(), "event"),
    ))
}

/// A consumer's steps, per address: it started routing to the ones added, stopped for the ones gone.
pub fn consumer_steps(
    who: &str,
    before: &[String],
    after: &[String],
    at: i64,
) -> Vec<(String, Step)> {
    let step_for = |ip: &String, what: &str| {
        let name = format!("{who}: {what}");
        (ip.clone(), step(at, &name, who, ip.clone(), "event"))
    };
    let added = after
        .iter()
        .filter(|ip| !before.contains(ip))
        .map(|ip| step_for(ip, "routing to it"));
    let gone = before
        .iter()
        .filter(|ip| !after.contains(ip))
        .map(|ip| step_for(ip, "stopped routing"));
    added.chain(gone).collect()
}

/// `ready`, `not ready, serving, terminating` …
fn conditions(endpoint: &SliceEndpoint) -> String {
    let mut words = vec![if endpoint.ready { "ready" } else { "not ready" }];
    if endpoint.serving && !endpoint.ready {
        words.push("serving");
    }
    if endpoint.terminating {
        words.push("terminating");
    }
    format!("{} ({})", words.join(", "), endpoint.ip)
}

/// Inserts `step` in time order (after steps at the same moment), keeping at most `limit`.
pub fn insert(steps: &mut Vec<Step>, step: Step, limit: usize) {
    if steps.contains(&step) {
        return;
    }
    let at = steps.partition_point(|s| s.at <= step.at);
    steps.insert(at, step);
    if steps.len() > limit {
        steps.remove(1); // the first step (created) anchors the offsets: keep it
    }
}

#[cfg(test)]
#[path = "journey_tests.rs"]
mod tests;
