//! Table columns and cells for `kubectl get`: what each kind shows, computed from the object.
//!
//! Kubernetes counterpart: `pkg/printers/internalversion/printers.go` (`printPod`, `printService`,
//! `printEndpoints`, `printNode`, `printEvent`, `printNamespace`) and
//! `k8s.io/apimachinery/pkg/util/duration/duration.go` (`HumanDuration`, the AGE column). The API
//! server renders these rows when a client asks for `as=Table`, so kubectl and minik's CLI print
//! the same READY, STATUS, RESTARTS and AGE (kubernetes-rules §7).
//!
//! minik simplifies: no readiness gates or nominated nodes beyond `<none>`, no sidecar-aware READY.

use jiff::{SignedDuration, Timestamp};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::core::{Endpoints, Event, Namespace, Node, Pod, Service};

/// One column of a Table (`metav1.TableColumnDefinition`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// Shown upper-cased by kubectl: `Name` → `NAME`.
    pub name: &'static str,
    /// `string`, `integer`, `date` …
    pub type_: &'static str,
    /// `name` for the NAME column, else empty.
    pub format: &'static str,
    /// 0 = always shown, 1 = only with `-o wide`.
    pub priority: i32,
}

const fn col(name: &'static str, priority: i32) -> Column {
    let format = if matches!(name.as_bytes(), b"Name") {
        "name"
    } else {
        ""
    };
    Column {
        name,
        type_: "string",
        format,
        priority,
    }
}

/// The columns of a kind (falls back to NAME, AGE).
pub fn columns(kind: &str) -> Vec<Column> {
    match kind {
        "Pod" => vec![
            col("Name", 0),
            col("Ready", 0),
            col("Status", 0),
            col("Restarts", 0),
            col("Age", 0),
            col("IP", 1),
            col("Node", 1),
            col("Nominated Node", 1),
            col("Readiness Gates", 1),
        ],
        "Service" => vec![
            col("Name", 0),
            col("Type", 0),
            col("Cluster-IP", 0),
            col("External-IP", 0),
            col("Port(s)", 0),
            col("Age", 0),
            col("Selector", 1),
        ],
        "Endpoints" => vec![col("Name", 0), col("Endpoints", 0), col("Age", 0)],
        "Node" => vec![
            col("Name", 0),
            col("Status", 0),
            col("Roles", 0),
            col("Age", 0),
            col("Version", 0),
            col("Internal-IP", 1),
            col("External-IP", 1),
            col("OS-Image", 1),
            col("Kernel-Version", 1),
            col("Container-Runtime", 1),
        ],
        "Namespace" => vec![col("Name", 0), col("Status", 0), col("Age", 0)],
        "Event" => vec![
            col("Last Seen", 0),
            col("Type", 0),
            col("Reason", 0),
            col("Object", 0),
            col("Message", 0),
        ],
        "Lease" => vec![col("Name", 0), col("Holder", 0), col("Age", 0)],
        _ => vec![col("Name", 0), col("Age", 0)],
    }
}

/// The cells of one object's row, in [`columns`] order.
pub fn row(kind: &str, object: &Value, now: Timestamp) -> Vec<Value> {
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let age = age_of(object, now);
    let cells = match kind {
        "Pod" => typed::<Pod>(object).map(|pod| pod_row(&pod, &name, &age, now)),
        "Service" => typed::<Service>(object).map(|svc| service_row(&svc, &name, &age)),
        "Endpoints" => typed::<Endpoints>(object)
            .map(|ep| vec![name.clone(), endpoints_cell(&ep), age.clone()]),
        "Node" => typed::<Node>(object).map(|node| node_row(&node, &name, &age)),
        "Namespace" => typed::<Namespace>(object).map(|ns| {
            let phase = ns
                .status
                .and_then(|s| s.phase)
                .unwrap_or_else(|| "Active".into());
            vec![name.clone(), phase, age.clone()]
        }),
        "Event" => typed::<Event>(object).map(|event| event_row(&event, now)),
        "Lease" => {
            let holder = object["spec"]["holderIdentity"]
                .as_str()
                .unwrap_or("")
                .to_string();
            Some(vec![name.clone(), holder, age.clone()])
        }
        _ => None,
    };
    cells
        .unwrap_or_else(|| vec![name, age])
        .into_iter()
        .map(Value::String)
        .collect()
}

fn typed<K: DeserializeOwned>(object: &Value) -> Option<K> {
    serde_json::from_value(object.clone()).ok()
}

fn age_of(object: &Value, now: Timestamp) -> String {
    match object["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(|t| t.parse::<Timestamp>().ok())
    {
        Some(created) => human_duration(now.duration_since(created)),
        None => "<unknown>".to_string(),
    }
}

/// `duration.HumanDuration`: `5s`, `3m20s`, `2h`, `4d5h` … (kubernetes-rules §7, AGE).
pub fn human_duration(d: SignedDuration) -> String {
    let seconds = d.as_secs();
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    let (minutes, hours, days) = (seconds / 60, seconds / 3600, seconds / 86400);
    let years = days / 365;
    match seconds {
        s if s < 120 => format!("{s}s"),
        s if s < 600 => {
            if s % 60 == 0 {
                format!("{minutes}m")
            } else {
                format!("{minutes}m{}s", s % 60)
            }
        }
        s if s < 3 * 3600 => format!("{minutes}m"),
        s if s < 8 * 3600 => {
            if minutes % 60 == 0 {
                format!("{hours}h")
            } else {
                format!("{hours}h{}m", minutes % 60)
            }
        }
        s if s < 48 * 3600 => format!("{hours}h"),
        s if s < 8 * 86400 => {
            if hours % 24 == 0 {
                format!("{days}d")
            } else {
                format!("{days}d{}h", hours % 24)
            }
        }
        _ if days < 2 * 365 => format!("{days}d"),
        _ if years < 8 => {
            if days % 365 == 0 {
                format!("{years}y")
            } else {
                format!("{years}y{}d", days % 365)
            }
        }
        _ => format!("{years}y"),
    }
}

fn none_if_empty(text: String) -> String {
    if text.is_empty() {
        "<none>".into()
    } else {
        text
    }
}

fn pod_row(pod: &Pod, name: &str, age: &str, now: Timestamp) -> Vec<String> {
    let spec = pod.spec.clone().unwrap_or_default();
    let status = pod.status.clone().unwrap_or_default();
    let statuses = status.container_statuses.clone().unwrap_or_default();
    let ready = statuses.iter().filter(|s| s.ready).count();
    let restarts: i32 = statuses.iter().map(|s| s.restart_count).sum();
    let last_restart = statuses
        .iter()
        .filter_map(|s| {
            s.last_state
                .as_ref()?
                .terminated
                .as_ref()?
                .finished_at
                .as_ref()
        })
        .map(|t| t.0)
        .max();
    let restarts = match last_restart {
        Some(at) if restarts > 0 => format!(
            "{restarts} ({} ago)",
            human_duration(now.duration_since(at))
        ),
        _ => restarts.to_string(),
    };
    vec![
        name.to_string(),
        format!("{ready}/{}", spec.containers.len()),
        pod_status(pod),
        restarts,
        age.to_string(),
        none_if_empty(status.pod_ip.clone().unwrap_or_default()),
        none_if_empty(spec.node_name.clone().unwrap_or_default()),
        none_if_empty(status.nominated_node_name.clone().unwrap_or_default()),
        "<none>".to_string(),
    ]
}

/// kubectl's STATUS cell for a pod (kubernetes-rules §7, `printPod`).
pub fn pod_status(pod: &Pod) -> String {
    let status = pod.status.clone().unwrap_or_default();
    let spec = pod.spec.clone().unwrap_or_default();
    let mut reason = status
        .reason
        .clone()
        .or(status.phase.clone())
        .unwrap_or_default();
    let init_statuses = status.init_container_statuses.clone().unwrap_or_default();
    let init_total = spec.init_containers.as_ref().map_or(0, Vec::len);
    let mut initializing = false;
    for (index, container) in init_statuses.iter().enumerate() {
        let state = container.state.clone().unwrap_or_default();
        if let Some(terminated) = &state.terminated {
            if terminated.exit_code == 0 {
                continue;
            }
            reason = match (&terminated.reason, terminated.signal) {
                (Some(r), _) if !r.is_empty() => format!("Init:{r}"),
                (_, Some(signal)) if signal != 0 => format!("Init:Signal:{signal}"),
                _ => format!("Init:ExitCode:{}", terminated.exit_code),
            };
        } else if let Some(waiting) = state.waiting.as_ref().filter(|w| {
            w.reason
                .as_deref()
                .is_some_and(|r| !r.is_empty() && r != "PodInitializing")
        }) {
            reason = format!("Init:{}", waiting.reason.clone().unwrap_or_default());
        } else {
            reason = format!("Init:{index}/{init_total}");
        }
        initializing = true;
        break;
    }
    if !initializing {
        let mut has_running = false;
        for container in status
            .container_statuses
            .clone()
            .unwrap_or_default()
            .iter()
            .rev()
        {
            let state = container.state.clone().unwrap_or_default();
            if let Some(waiting) = state
                .waiting
                .as_ref()
                .and_then(|w| w.reason.clone())
                .filter(|r| !r.is_empty())
            {
                reason = waiting;
            } else if let Some(terminated) = &state.terminated {
                reason = match (&terminated.reason, terminated.signal) {
                    (Some(r), _) if !r.is_empty() => r.clone(),
                    (_, Some(signal)) if signal != 0 => format!("Signal:{signal}"),
                    _ => format!("ExitCode:{}", terminated.exit_code),
                };
            } else if state.running.is_some() && container.ready {
                has_running = true;
            }
        }
        if reason == "Completed" && has_running {
            let ready = status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True");
            reason = if ready {
                "Running".into()
            } else {
                "NotReady".into()
            };
        }
    }
    if pod.metadata.deletion_timestamp.is_some() {
        reason = if status.reason.as_deref() == Some("NodeLost") {
            "Unknown".into()
        } else {
            "Terminating".into()
        };
    }
    reason
}

fn service_row(service: &Service, name: &str, age: &str) -> Vec<String> {
    let spec = service.spec.clone().unwrap_or_default();
    let ports: Vec<String> = spec
        .ports
        .iter()
        .flatten()
        .map(|p| {
            let protocol = p.protocol.clone().unwrap_or_else(|| "TCP".into());
            match p.node_port {
                Some(node_port) => format!("{}:{node_port}/{protocol}", p.port),
                None => format!("{}/{protocol}", p.port),
            }
        })
        .collect();
    let selector: Vec<String> = spec
        .selector
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let external = spec.external_ips.clone().unwrap_or_default().join(",");
    vec![
        name.to_string(),
        spec.type_.clone().unwrap_or_else(|| "ClusterIP".into()),
        spec.cluster_ip.clone().unwrap_or_default(),
        none_if_empty(external),
        none_if_empty(ports.join(",")),
        age.to_string(),
        none_if_empty(selector.join(",")),
    ]
}

/// The ENDPOINTS cell: up to three `ip:port`, then ` + N more...`, or `<none>`.
pub fn endpoints_cell(endpoints: &Endpoints) -> String {
    let mut all = Vec::new();
    for subset in endpoints.subsets.iter().flatten() {
        let ports: Vec<i32> = subset.ports.iter().flatten().map(|p| p.port).collect();
        for address in subset.addresses.iter().flatten() {
            if ports.is_empty() {
                all.push(address.ip.clone());
            }
            for port in &ports {
                all.push(format!("{}:{port}", address.ip));
            }
        }
    }
    match all.len() {
        0 => "<none>".into(),
        n if n <= 3 => all.join(","),
        n => format!("{} + {} more...", all[..3].join(","), n - 3),
    }
}

fn node_row(node: &Node, name: &str, age: &str) -> Vec<String> {
    let status = node.status.clone().unwrap_or_default();
    let ready = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Ready")
        .map(|c| c.status.clone());
    let mut state = match ready.as_deref() {
        Some("True") => "Ready".to_string(),
        Some(_) => "NotReady".to_string(),
        None => "Unknown".to_string(),
    };
    if node
        .spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
    {
        state.push_str(",SchedulingDisabled");
    }
    let labels = node.metadata.labels.clone().unwrap_or_default();
    let roles: Vec<&str> = labels
        .keys()
        .filter_map(|k| k.strip_prefix("node-role.kubernetes.io/"))
        .collect();
    let info = status.node_info.clone().unwrap_or_default();
    let address = |kind: &str| {
        status
            .addresses
            .iter()
            .flatten()
            .find(|a| a.type_ == kind)
            .map(|a| a.address.clone())
            .unwrap_or_else(|| "<none>".into())
    };
    vec![
        name.to_string(),
        state,
        none_if_empty(roles.join(",")),
        age.to_string(),
        info.kubelet_version.clone(),
        address("InternalIP"),
        address("ExternalIP"),
        info.os_image.clone(),
        info.kernel_version.clone(),
        info.container_runtime_version.clone(),
    ]
}

fn event_row(event: &Event, now: Timestamp) -> Vec<String> {
    let last = event
        .last_timestamp
        .as_ref()
        .map(|t| t.0)
        .or(event.event_time.as_ref().map(|t| t.0))
        .or(event.metadata.creation_timestamp.as_ref().map(|t| t.0));
    let object = &event.involved_object;
    vec![
        last.map(|t| human_duration(now.duration_since(t)))
            .unwrap_or_else(|| "<unknown>".into()),
        event.type_.clone().unwrap_or_default(),
        event.reason.clone().unwrap_or_default(),
        format!(
            "{}/{}",
            object.kind.clone().unwrap_or_default().to_lowercase(),
            object.name.clone().unwrap_or_default()
        ),
        event.message.clone().unwrap_or_default(),
    ]
}

/// The column definitions as `metav1.TableColumnDefinition` JSON.
pub fn column_definitions(kind: &str) -> Vec<Value> {
    columns(kind)
        .into_iter()
        .map(|c| json!({"name": c.name, "type": c.type_, "format": c.format, "description": "", "priority": c.priority}))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: i64) -> SignedDuration {
        SignedDuration::from_secs(s)
    }

    #[test]
    fn human_duration_matches_kubectl() {
        assert_eq!(human_duration(secs(-5)), "<invalid>");
        assert_eq!(human_duration(secs(42)), "42s");
        assert_eq!(human_duration(secs(200)), "3m20s");
        assert_eq!(human_duration(secs(300)), "5m");
        assert_eq!(human_duration(secs(3600 * 2)), "120m");
        assert_eq!(human_duration(secs(3600 * 5 + 60 * 7)), "5h7m");
        assert_eq!(human_duration(secs(3600 * 30)), "30h");
        assert_eq!(human_duration(secs(86400 * 3 + 3600)), "3d1h");
        assert_eq!(human_duration(secs(86400 * 100)), "100d");
        assert_eq!(human_duration(secs(86400 * 365 * 3 + 86400 * 4)), "3y4d");
    }

    fn pod(value: Value) -> Pod {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn pod_status_follows_print_pod() {
        let base = json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let mut p = base.clone();
        p["status"] = json!({"phase": "Pending", "containerStatuses": [
            {"name": "a", "ready": false, "restartCount": 0, "image": "x", "imageID": "", "state": {"waiting": {"reason": "ContainerCreating"}}},
            {"name": "b", "ready": false, "restartCount": 0, "image": "x", "imageID": "", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]});
        assert_eq!(
            pod_status(&pod(p.clone())),
            "ContainerCreating",
            "the lowest-index container decides"
        );
        p["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(pod_status(&pod(p)), "Terminating");
        let mut init = base.clone();
        init["spec"]["initContainers"] = json!([{"name": "i"}]);
        init["status"] = json!({"phase": "Pending", "initContainerStatuses": [
            {"name": "i", "ready": false, "restartCount": 0, "image": "x", "imageID": "", "state": {"running": {}}}]});
        assert_eq!(pod_status(&pod(init)), "Init:0/1");
        let mut done = base;
        done["status"] = json!({"phase": "Succeeded", "containerStatuses": [
            {"name": "a", "ready": false, "restartCount": 0, "image": "x", "imageID": "", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]});
        assert_eq!(pod_status(&pod(done)), "Completed");
    }

    #[test]
    fn pod_row_counts_ready_containers() {
        let p = json!({"metadata": {"name": "web", "creationTimestamp": "2026-01-01T00:00:00Z"},
                       "spec": {"containers": [{"name": "a"}], "nodeName": "node-1"},
                       "status": {"phase": "Running", "podIP": "127.244.1.2", "containerStatuses": [
                           {"name": "a", "ready": true, "restartCount": 0, "image": "x", "imageID": "", "state": {"running": {}}}]}});
        let now: Timestamp = "2026-01-01T00:05:00Z".parse().unwrap();
        let cells = row("Pod", &p, now);
        assert_eq!(
            cells,
            [
                "web",
                "1/1",
                "Running",
                "0",
                "5m",
                "127.244.1.2",
                "node-1",
                "<none>",
                "<none>"
            ]
            .map(|s| json!(s))
        );
    }

    #[test]
    fn endpoints_cell_abbreviates_after_three() {
        let ep: Endpoints = serde_json::from_value(json!({"metadata": {"name": "web"}, "subsets": [{
            "addresses": [{"ip": "127.244.1.2"}, {"ip": "127.244.1.3"}, {"ip": "127.244.1.4"}, {"ip": "127.244.1.5"}],
            "ports": [{"port": 8080}]}]})).unwrap();
        assert_eq!(
            endpoints_cell(&ep),
            "127.244.1.2:8080,127.244.1.3:8080,127.244.1.4:8080 + 1 more..."
        );
        assert_eq!(endpoints_cell(&Endpoints::default()), "<none>");
    }
}
