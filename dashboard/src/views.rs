//! The small JSON views the page draws: one per pod, node, Service, EndpointSlice, Deployment,
//! ReplicaSet and Event, each computed from an API object by a pure function.
//!
//! Kubernetes counterpart: kubectl's printers (`pkg/printers/internalversion/printers.go`, see
//! docs/kubernetes-rules.md#status-cell), whose
//! `STATUS` column [`pod_state`] follows: a pod with a `deletionTimestamp` is `Terminating`, a
//! container waiting with a reason shows that reason (`ContainerCreating`, `CrashLoopBackOff`),
//! and a running pod is `Ready` here when its Ready condition is true (kubectl shows `1/1`).
//! minik simplifies: only the fields the page uses; times are milliseconds since the epoch.

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{Event, Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{json, Value};

/// `namespace/name`, the key of a namespaced view.
pub fn key(meta: &ObjectMeta) -> String {
    format!(
        "{}/{}",
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default()
    )
}

fn millis(time: &jiff::Timestamp) -> i64 {
    time.as_millisecond()
}

/// The state the page colours a pod by, as kubectl's STATUS column says it.
pub fn pod_state(pod: &Pod) -> &'static str {
    if pod.metadata.deletion_timestamp.is_some() {
        return "Terminating";
    }
    let status = pod.status.clone().unwrap_or_default();
    match status.phase.as_deref() {
        Some("Succeeded") => return "Succeeded",
        Some("Failed") => return "Failed",
        _ => {}
    }
    let waiting: Vec<String> = status
        .container_statuses
        .iter()
        .flatten()
        .filter_map(|c| c.state.as_ref()?.waiting.as_ref()?.reason.clone())
        .collect();
    if waiting.iter().any(|r| r == "CrashLoopBackOff") {
        return "CrashLoopBackOff";
    }
    let scheduled = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.as_ref())
        .is_some();
    if !scheduled {
        return "Pending";
    }
    if status.phase.as_deref() != Some("Running") {
        return "ContainerCreating";
    }
    if is_ready(pod) {
        "Ready"
    } else {
        "Running"
    }
}

/// True when the pod's Ready condition is True.
pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// The ReplicaSet (or other controller) that owns the object, if any.
pub fn owner(meta: &ObjectMeta, kind: &str) -> Option<String> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| o.kind == kind && o.controller == Some(true))
        .map(|o| o.name.clone())
}

/// A pod card.
pub fn pod(pod: &Pod) -> Value {
    let meta = &pod.metadata;
    let status = pod.status.clone().unwrap_or_default();
    let containers = status.container_statuses.unwrap_or_default();
    let ready = containers.iter().filter(|c| c.ready).count();
    let total = pod.spec.as_ref().map_or(0, |s| s.containers.len());
    json!({
        "key": key(meta),
        "ns": meta.namespace,
        "name": meta.name,
        "uid": meta.uid,
        "node": pod.spec.as_ref().and_then(|s| s.node_name.clone()),
        "state": pod_state(pod),
        "ready": format!("{ready}/{total}"),
        "restarts": containers.iter().map(|c| c.restart_count).sum::<i32>(),
        "created": meta.creation_timestamp.as_ref().map(|t| millis(&t.0)),
        "ip": status.pod_ip,
        "owner": owner(meta, "ReplicaSet"),
        "grace": meta.deletion_grace_period_seconds,
    })
}

/// A node lane.
pub fn node(node: &Node) -> Value {
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "Ready")
        .map_or("Unknown".to_string(), |c| c.status.clone());
    json!({
        "name": node.metadata.name,
        "ready": ready,
        "unschedulable": node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false),
    })
}

/// A Service, without its endpoints (the page joins its slices by `kubernetes.io/service-name`).
pub fn service(service: &Service) -> Value {
    let spec = service.spec.clone().unwrap_or_default();
    json!({
        "key": key(&service.metadata),
        "ns": service.metadata.namespace,
        "name": service.metadata.name,
        "type": spec.type_.unwrap_or_else(|| "ClusterIP".into()),
        "clusterIP": spec.cluster_ip,
    })
}

/// One endpoint of a slice: its pod and the three conditions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SliceEndpoint {
    /// The pod's name (`targetRef`).
    pub pod: String,
    /// Its address.
    pub ip: String,
    /// `conditions.ready` (nil is true, as upstream's consumers read it).
    pub ready: bool,
    /// `conditions.serving`.
    pub serving: bool,
    /// `conditions.terminating`.
    pub terminating: bool,
}

/// The endpoints of a slice, as the journey and the Service view use them.
pub fn slice_endpoints(slice: &EndpointSlice) -> Vec<SliceEndpoint> {
    slice
        .endpoints
        .iter()
        .map(|e| {
            let conditions = e.conditions.clone().unwrap_or_default();
            // docs/kubernetes-rules.md#e3: unset reads as ready, serving = ready, not terminating.
            let ready = conditions.ready.unwrap_or(true);
            SliceEndpoint {
                pod: e
                    .target_ref
                    .as_ref()
                    .and_then(|t| t.name.clone())
                    .unwrap_or_default(),
                ip: e.addresses.first().cloned().unwrap_or_default(),
                ready,
                serving: conditions.serving.unwrap_or(ready),
                terminating: conditions.terminating.unwrap_or(false),
            }
        })
        .collect()
}

/// The Service a slice belongs to (its `kubernetes.io/service-name` label).
pub fn slice_service(slice: &EndpointSlice) -> Option<String> {
    slice
        .metadata
        .labels
        .as_ref()?
        .get("kubernetes.io/service-name")
        .cloned()
}

/// A slice as the page shows it under its Service.
pub fn slice(slice: &EndpointSlice) -> Value {
    let endpoints: Vec<Value> = slice_endpoints(slice)
        .into_iter()
        .map(|e| json!({"pod": e.pod, "ip": e.ip, "ready": e.ready, "serving": e.serving, "terminating": e.terminating}))
        .collect();
    json!({
        "key": key(&slice.metadata),
        "ns": slice.metadata.namespace,
        "service": slice_service(slice),
        "endpoints": endpoints,
    })
}

/// A Deployment with its counts.
pub fn deployment(deployment: &Deployment) -> Value {
    let status = deployment.status.clone().unwrap_or_default();
    json!({
        "key": key(&deployment.metadata),
        "ns": deployment.metadata.namespace,
        "name": deployment.metadata.name,
        "replicas": deployment.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1),
        "updated": status.updated_replicas.unwrap_or(0),
        "ready": status.ready_replicas.unwrap_or(0),
        "available": status.available_replicas.unwrap_or(0),
    })
}

/// A ReplicaSet with its owner and revision.
pub fn replica_set(rs: &ReplicaSet) -> Value {
    let meta = &rs.metadata;
    let revision = meta
        .annotations
        .as_ref()
        .and_then(|a| a.get("deployment.kubernetes.io/revision"))
        .cloned();
    json!({
        "key": key(meta),
        "ns": meta.namespace,
        "name": meta.name,
        "owner": owner(meta, "Deployment"),
        "revision": revision,
        "replicas": rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0),
        "ready": rs.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0),
    })
}

/// When an Event happened: `eventTime` (microseconds), else `lastTimestamp`, else `firstTimestamp`.
pub fn event_time(event: &Event) -> Option<jiff::Timestamp> {
    // The demo reads Events through the same function (`minik_client::events::facts`).
    minik_client::events::facts::event_time(event)
}

/// Who wrote an Event: `reportingComponent`, else `source.component`.
pub fn event_source(event: &Event) -> String {
    let component = minik_client::events::facts::event_component(event);
    component.unwrap_or_default().to_string()
}

/// A line of the events feed.
pub fn event(event: &Event) -> Value {
    let object = &event.involved_object;
    json!({
        "ns": event.metadata.namespace,
        "object": format!("{}/{}", object.kind.as_deref().unwrap_or_default(), object.name.as_deref().unwrap_or_default()),
        "type": event.type_,
        "reason": event.reason,
        "message": event.message,
        "source": event_source(event),
        "time": event_time(event).map(|t| millis(&t)),
        "count": event.count.unwrap_or(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod_from(value: Value) -> Pod {
        serde_json::from_value(value).unwrap()
    }

    /// kubectl's STATUS column, in the order its rules apply.
    #[test]
    fn pod_state_follows_kubectl() {
        let base = json!({"metadata": {"name": "p", "namespace": "default"}, "spec": {"containers": [{"name": "c"}]}});
        assert_eq!(pod_state(&pod_from(base.clone())), "Pending");
        let mut scheduled = base.clone();
        scheduled["spec"]["nodeName"] = json!("node-1");
        scheduled["status"] = json!({"phase": "Pending"});
        assert_eq!(pod_state(&pod_from(scheduled.clone())), "ContainerCreating");
        let mut running = scheduled.clone();
        running["status"] =
            json!({"phase": "Running", "conditions": [{"type": "Ready", "status": "False"}]});
        assert_eq!(pod_state(&pod_from(running.clone())), "Running");
        running["status"]["conditions"][0]["status"] = json!("True");
        assert_eq!(pod_state(&pod_from(running.clone())), "Ready");
        let mut crash = running.clone();
        crash["status"]["containerStatuses"] = json!([{"name": "c", "ready": false, "restartCount": 3, "image": "", "imageID": "",
            "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]);
        assert_eq!(pod_state(&pod_from(crash)), "CrashLoopBackOff");
        let mut deleting = running.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(pod_state(&pod_from(deleting)), "Terminating");
        let mut done = running;
        done["status"]["phase"] = json!("Succeeded");
        assert_eq!(pod_state(&pod_from(done)), "Succeeded");
    }

    /// A nil `ready` is ready, and `serving` follows it unless set (EndpointSlice API rules).
    #[test]
    fn slice_conditions_default_as_consumers_read_them() {
        let slice: EndpointSlice = serde_json::from_value(json!({
            "metadata": {"name": "web-abc", "namespace": "default", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4",
            "endpoints": [
                {"addresses": ["127.244.1.2"], "targetRef": {"kind": "Pod", "name": "a"}},
                {"addresses": ["127.244.1.3"], "targetRef": {"kind": "Pod", "name": "b"},
                 "conditions": {"ready": false, "serving": true, "terminating": true}}
            ]
        }))
        .unwrap();
        let endpoints = slice_endpoints(&slice);
        assert!(endpoints[0].ready && endpoints[0].serving && !endpoints[0].terminating);
        assert!(!endpoints[1].ready && endpoints[1].serving && endpoints[1].terminating);
        assert_eq!(slice_service(&slice).as_deref(), Some("web"));
    }
}
