//! The rows of `get nodes`, `get namespaces`, `get events`, `get leases` and `get serviceaccounts`.
//!
//! Kubernetes counterpart: `printNode`, `printNamespace`, `printEvent`, `printLease` and
//! `printServiceAccount` in
//! `pkg/printers/internalversion/printers.go`. A node's STATUS comes from its Ready condition
//! (`Ready`, `NotReady`, `Unknown`), plus `SchedulingDisabled` when cordoned; ROLES from its
//! `node-role.kubernetes.io/*` labels.

use jiff::Timestamp;

use crate::core::{Event, Namespace, Node, ServiceAccount};
use k8s_openapi::api::coordination::v1::Lease;

use super::duration::age;

/// NAME STATUS ROLES AGE VERSION [INTERNAL-IP EXTERNAL-IP OS-IMAGE KERNEL-VERSION CONTAINER-RUNTIME].
pub fn node_row(node: &Node, wide: bool, now: Timestamp) -> Vec<String> {
    let info = node
        .status
        .as_ref()
        .and_then(|s| s.node_info.clone())
        .unwrap_or_default();
    let mut row = vec![
        node.metadata.name.clone().unwrap_or_default(),
        node_status(node),
        node_roles(node),
        age(node.metadata.creation_timestamp.as_ref().map(|t| t.0), now),
        or_none(info.kubelet_version.clone()),
    ];
    if wide {
        row.push(node_address(node, "InternalIP"));
        row.push(node_address(node, "ExternalIP"));
        row.push(or_unknown(info.os_image));
        row.push(or_unknown(info.kernel_version));
        row.push(or_unknown(info.container_runtime_version));
    }
    row
}

fn or_none(value: String) -> String {
    if value.is_empty() {
        "<none>".to_string()
    } else {
        value
    }
}

fn or_unknown(value: String) -> String {
    if value.is_empty() {
        "<unknown>".to_string()
    } else {
        value
    }
}

/// STATUS: `Ready`, `NotReady`, `Unknown`, with `,SchedulingDisabled` for a cordoned node.
pub fn node_status(node: &Node) -> String {
    let conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or(&[]);
    let mut parts: Vec<String> = conditions
        .iter()
        .filter(|condition| condition.type_ == "Ready")
        .map(|condition| {
            if condition.status == "True" {
                "Ready".to_string()
            } else {
                "NotReady".to_string()
            }
        })
        .collect();
    if parts.is_empty() {
        parts.push("Unknown".to_string());
    }
    if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
        parts.push("SchedulingDisabled".to_string());
    }
    parts.join(",")
}

/// ROLES: from `node-role.kubernetes.io/<role>` labels and `kubernetes.io/role`, or `<none>`.
pub fn node_roles(node: &Node) -> String {
    let labels = node.metadata.labels.clone().unwrap_or_default();
    let mut roles: Vec<String> = labels
        .iter()
        .filter_map(
            |(key, value)| match key.strip_prefix("node-role.kubernetes.io/") {
                Some(role) if !role.is_empty() => Some(role.to_string()),
                _ if key == "kubernetes.io/role" && !value.is_empty() => Some(value.clone()),
                _ => None,
            },
        )
        .collect();
    roles.sort();
    roles.dedup();
    if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.join(",")
    }
}

fn node_address(node: &Node, type_: &str) -> String {
    let addresses = node
        .status
        .as_ref()
        .and_then(|s| s.addresses.as_deref())
        .unwrap_or(&[]);
    let found: Vec<String> = addresses
        .iter()
        .filter(|a| a.type_ == type_)
        .map(|a| a.address.clone())
        .collect();
    if found.is_empty() {
        "<none>".to_string()
    } else {
        found.join(",")
    }
}

/// NAME STATUS AGE.
pub fn namespace_row(namespace: &Namespace, now: Timestamp) -> Vec<String> {
    let phase = namespace
        .status
        .as_ref()
        .and_then(|s| s.phase.clone())
        .unwrap_or_else(|| "Active".to_string());
    vec![
        namespace.metadata.name.clone().unwrap_or_default(),
        phase,
        age(
            namespace.metadata.creation_timestamp.as_ref().map(|t| t.0),
            now,
        ),
    ]
}

/// NAME HOLDER AGE.
pub fn lease_row(lease: &Lease, now: Timestamp) -> Vec<String> {
    let holder = lease
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.clone())
        .unwrap_or_default();
    vec![
        lease.metadata.name.clone().unwrap_or_default(),
        holder,
        age(lease.metadata.creation_timestamp.as_ref().map(|t| t.0), now),
    ]
}

/// NAME SECRETS AGE (`printServiceAccount`: SECRETS counts the legacy token secrets, 0 since 1.24).
pub fn service_account_row(account: &ServiceAccount, now: Timestamp) -> Vec<String> {
    let secrets = account.secrets.as_ref().map_or(0, Vec::len);
    vec![
        account.metadata.name.clone().unwrap_or_default(),
        secrets.to_string(),
        age(
            account.metadata.creation_timestamp.as_ref().map(|t| t.0),
            now,
        ),
    ]
}

/// When an event was last seen: `lastTimestamp`, else `eventTime`, else creation.
pub fn event_last_seen(event: &Event) -> Option<Timestamp> {
    event
        .series
        .as_ref()
        .and_then(|series| series.last_observed_time.as_ref().map(|t| t.0))
        .or_else(|| event.last_timestamp.as_ref().map(|t| t.0))
        .or_else(|| event.event_time.as_ref().map(|t| t.0))
        .or_else(|| event.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

/// LAST SEEN TYPE REASON OBJECT MESSAGE; `wide` gives upstream's full layout, where the wide
/// columns sit in between: LAST SEEN TYPE REASON OBJECT SUBOBJECT SOURCE MESSAGE FIRST SEEN COUNT NAME.
pub fn event_row(event: &Event, wide: bool, now: Timestamp) -> Vec<String> {
    let object = &event.involved_object;
    let kind = object.kind.clone().unwrap_or_default().to_lowercase();
    let target = match object.name.as_deref().filter(|n| !n.is_empty()) {
        Some(name) => format!("{kind}/{name}"),
        None => kind,
    };
    let last_seen = age(event_last_seen(event), now);
    let type_ = event.type_.clone().unwrap_or_default();
    let reason = event.reason.clone().unwrap_or_default();
    let message = event.message.clone().unwrap_or_default().trim().to_string();
    if !wide {
        return vec![last_seen, type_, reason, target, message];
    }
    let first_seen = event
        .first_timestamp
        .as_ref()
        .map(|t| t.0)
        .or_else(|| event.event_time.as_ref().map(|t| t.0));
    let count = event
        .series
        .as_ref()
        .and_then(|s| s.count)
        .or(event.count)
        .unwrap_or(1);
    vec![
        last_seen,
        type_,
        reason,
        target,
        object.field_path.clone().unwrap_or_default(),
        event_source(event),
        message,
        age(first_seen, now),
        count.to_string(),
        event.metadata.name.clone().unwrap_or_default(),
    ]
}

/// `formatEventSource`: the component (or reporting controller), then `, host` if known.
fn event_source(event: &Event) -> String {
    let source = event.source.clone().unwrap_or_default();
    let component = source
        .component
        .filter(|c| !c.is_empty())
        .or_else(|| event.reporting_component.clone())
        .unwrap_or_default();
    match source.host.filter(|h| !h.is_empty()) {
        Some(host) => format!("{component}, {host}"),
        None => component,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-11-22T02:05:00Z".parse().unwrap()
    }

    #[test]
    fn node_row_shows_ready_and_roles_and_version() {
        let node: Node = serde_json::from_value(json!({
            "metadata": {"name": "node-1", "creationTimestamp": "2026-11-22T01:05:00Z", "labels": {"node-role.kubernetes.io/worker": ""}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "True"}], "nodeInfo": {
                "kubeletVersion": "v1.33.0-minik", "osImage": "Linux", "kernelVersion": "6.1", "containerRuntimeVersion": "minik://0.1",
                "architecture": "amd64", "bootID": "", "kubeProxyVersion": "", "machineID": "", "operatingSystem": "linux", "systemUUID": ""},
                "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}]},
        }))
        .unwrap();
        assert_eq!(
            node_row(&node, true, now()),
            [
                "node-1",
                "Ready,SchedulingDisabled",
                "worker",
                "60m",
                "v1.33.0-minik",
                "127.0.0.1",
                "<none>",
                "Linux",
                "6.1",
                "minik://0.1"
            ]
        );
    }

    #[test]
    fn node_without_ready_condition_is_unknown_and_false_is_not_ready() {
        let unknown: Node = serde_json::from_value(json!({"metadata": {"name": "n"}})).unwrap();
        assert_eq!(node_status(&unknown), "Unknown");
        assert_eq!(node_roles(&unknown), "<none>");
        let down: Node = serde_json::from_value(json!({"metadata": {"name": "n"}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}})).unwrap();
        assert_eq!(node_status(&down), "NotReady");
    }

    #[test]
    fn event_row_names_the_object_as_kind_slash_name() {
        let event: Event = serde_json::from_value(json!({
            "metadata": {"name": "web.1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "web"},
            "type": "Normal", "reason": "Scheduled", "message": "Successfully assigned default/web to node-1",
            "eventTime": "2026-11-22T02:04:30.123456Z",
        }))
        .unwrap();
        assert_eq!(
            event_row(&event, false, now()),
            [
                "30s",
                "Normal",
                "Scheduled",
                "pod/web",
                "Successfully assigned default/web to node-1"
            ]
        );
        let wide = event_row(&event, true, now());
        assert_eq!(
            wide[4..],
            [
                "",
                "",
                "Successfully assigned default/web to node-1",
                "30s",
                "1",
                "web.1"
            ]
        );
    }
}
