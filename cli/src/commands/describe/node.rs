//! `describe node`: kubectl's `NodeDescriber` (`describe.go`, `describeNode`), basic.

use serde_json::Value;

use minik_api::core::Node;

use super::{describe_time, Lines};
use crate::printers::cluster::node_roles;

/// Writes the node's sections and the pods bound to it (`pods`: a PodList as JSON).
pub fn describe(out: &mut Lines, node: &Node, pods: &Value) {
    let status = node.status.clone().unwrap_or_default();
    let spec = node.spec.clone().unwrap_or_default();
    out.field(0, "Name", node.metadata.name.clone().unwrap_or_default());
    out.field(0, "Roles", node_roles(node));
    out.map(0, "Labels", node.metadata.labels.as_ref());
    out.map(0, "Annotations", node.metadata.annotations.as_ref());
    out.field(
        0,
        "CreationTimestamp",
        describe_time(node.metadata.creation_timestamp.as_ref()),
    );
    let taints: Vec<String> = spec
        .taints
        .clone()
        .unwrap_or_default()
        .iter()
        .map(|t| {
            let value = t.value.clone().map(|v| format!("={v}")).unwrap_or_default();
            format!("{}{value}:{}", t.key, t.effect)
        })
        .collect();
    out.list(0, "Taints", &taints);
    out.field(0, "Unschedulable", spec.unschedulable.unwrap_or(false));
    let conditions = status.conditions.clone().unwrap_or_default();
    out.line(0, "Conditions:");
    out.line(1, "Type\tStatus\tLastHeartbeatTime\tReason\tMessage");
    out.line(1, "----\t------\t-----------------\t------\t-------");
    for condition in conditions {
        out.line(
            1,
            &format!(
                "{}\t{}\t{}\t{}\t{}",
                condition.type_,
                condition.status,
                describe_time(condition.last_heartbeat_time.as_ref()),
                condition.reason.clone().unwrap_or_default(),
                condition.message.clone().unwrap_or_default()
            ),
        );
    }
    out.line(0, "Addresses:");
    for address in status.addresses.clone().unwrap_or_default() {
        out.field(1, &address.type_, &address.address);
    }
    for (label, resources) in [
        ("Capacity", &status.capacity),
        ("Allocatable", &status.allocatable),
    ] {
        out.line(0, &format!("{label}:"));
        for (name, quantity) in resources.clone().unwrap_or_default() {
            out.field(1, &name, &quantity.0);
        }
    }
    out.field(0, "PodCIDR", spec.pod_cidr.clone().unwrap_or_default());
    if let Some(port) = status
        .daemon_endpoints
        .as_ref()
        .and_then(|d| d.kubelet_endpoint.as_ref())
        .map(|e| e.port)
    {
        out.field(0, "Kubelet Port", port);
    }
    let items = pods
        .get("items")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    out.line(
        0,
        &format!("Non-terminated Pods:\t({} in total)", items.len()),
    );
    if !items.is_empty() {
        out.line(1, "Namespace\tName");
        out.line(1, "---------\t----");
        for pod in &items {
            let field = |p: &str| {
                pod.pointer(p)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            };
            out.line(
                1,
                &format!(
                    "{}\t{}",
                    field("/metadata/namespace"),
                    field("/metadata/name")
                ),
            );
        }
    }
}
