//! Printers: the columns and cells of `get` for each kind, which the API server sends as Tables.
//!
//! Kubernetes counterpart: `pkg/printers/internalversion/printers.go` (`AddHandlers`: the
//! `TableColumnDefinition`s and `printPod`, `printService`, `printEndpoints`, `printNode`,
//! `printEvent`, `printNamespace`, `printLease`, `printConfigMap`, `printSecret`, `printServiceAccount`, `printDeployment`, `printReplicaSet`, `printJob`, `printPodDisruptionBudget`, `printIngress`, `printIngressClass`, `printHorizontalPodAutoscaler` in [`autoscaling`]; the
//! later controllers' in [`controllers`]) and `k8s.io/apimachinery/pkg/util/duration`
//! (AGE). Upstream's API server always prints the *wide* row (`GenerateOptions{Wide: true}`) and
//! marks the extra columns `priority: 1`; kubectl drops them unless `-o wide`. minik does the same:
//! [`row`] is the full row the server sends (`as=Table`), computed by pure functions (object +
//! clock in, strings out); kubectl and `minik get` (`cli/src/printers/table.rs`) print it verbatim.
//! `describe` reuses a few of the cell functions (`node_roles`, `format_endpoints`, `age`).

pub mod autoscaling;
pub mod cluster;
pub mod config;
pub mod controllers;
pub mod duration;
pub mod jobs;
pub mod networking;
pub mod pod;
pub mod policy;
pub mod service;
pub mod storage;
pub mod workloads;

use jiff::Timestamp;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use crate::ResourceInfo;

/// One column of a Table (`metav1.TableColumnDefinition`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// As upstream spells it (`Nominated Node`); kubectl prints it upper-cased.
    pub name: &'static str,
    /// `string` for every minik column.
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

/// The columns of a kind, in upstream's order (NAME, AGE for kinds without a printer).
pub fn columns(kind: &str) -> Vec<Column> {
    if let Some(spec) = storage::columns(kind) {
        return spec
            .iter()
            .map(|(name, priority)| col(name, *priority))
            .collect();
    }
    if let Some(spec) = controllers::columns(kind) {
        return spec
            .iter()
            .map(|(name, priority)| col(name, *priority))
            .collect();
    }
    let spec: &[(&'static str, i32)] = match kind {
        "Pod" => &[
            ("Name", 0),
            ("Ready", 0),
            ("Status", 0),
            ("Restarts", 0),
            ("Age", 0),
            ("IP", 1),
            ("Node", 1),
            ("Nominated Node", 1),
            ("Readiness Gates", 1),
        ],
        "Service" => &[
            ("Name", 0),
            ("Type", 0),
            ("Cluster-IP", 0),
            ("External-IP", 0),
            ("Port(s)", 0),
            ("Age", 0),
            ("Selector", 1),
        ],
        "Endpoints" => &[("Name", 0), ("Endpoints", 0), ("Age", 0)],
        "Node" => &[
            ("Name", 0),
            ("Status", 0),
            ("Roles", 0),
            ("Age", 0),
            ("Version", 0),
            ("Internal-IP", 1),
            ("External-IP", 1),
            ("OS-Image", 1),
            ("Kernel-Version", 1),
            ("Container-Runtime", 1),
        ],
        "Event" => &[
            ("Last Seen", 0),
            ("Type", 0),
            ("Reason", 0),
            ("Object", 0),
            ("Subobject", 1),
            ("Source", 1),
            ("Message", 0),
            ("First Seen", 1),
            ("Count", 1),
            ("Name", 1),
        ],
        "Namespace" => &[("Name", 0), ("Status", 0), ("Age", 0)],
        "ConfigMap" => &[("Name", 0), ("Data", 0), ("Age", 0)],
        "Secret" => &[("Name", 0), ("Type", 0), ("Data", 0), ("Age", 0)],
        "Lease" => &[("Name", 0), ("Holder", 0), ("Age", 0)],
        "ServiceAccount" => &[("Name", 0), ("Secrets", 0), ("Age", 0)],
        "EndpointSlice" => &[
            ("Name", 0),
            ("AddressType", 0),
            ("Ports", 0),
            ("Endpoints", 0),
            ("Age", 0),
        ],
        "Deployment" => &[
            ("Name", 0),
            ("Ready", 0),
            ("Up-to-date", 0),
            ("Available", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
            ("Selector", 1),
        ],
        "ReplicaSet" => &[
            ("Name", 0),
            ("Desired", 0),
            ("Current", 0),
            ("Ready", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
            ("Selector", 1),
        ],
        "Job" => &[
            ("Name", 0),
            ("Status", 0),
            ("Completions", 0),
            ("Duration", 0),
            ("Age", 0),
            ("Containers", 1),
            ("Images", 1),
            ("Selector", 1),
        ],
        "PodDisruptionBudget" => &[
            ("Name", 0),
            ("Min Available", 0),
            ("Max Unavailable", 0),
            ("Allowed Disruptions", 0),
            ("Age", 0),
        ],
        "Ingress" => &[
            ("Name", 0),
            ("Class", 0),
            ("Hosts", 0),
            ("Address", 0),
            ("Ports", 0),
            ("Age", 0),
        ],
        "IngressClass" => &[
            ("Name", 0),
            ("Controller", 0),
            ("Parameters", 0),
            ("Age", 0),
        ],
        "HorizontalPodAutoscaler" => &[
            ("Name", 0),
            ("Reference", 0),
            ("Targets", 0),
            ("MinPods", 0),
            ("MaxPods", 0),
            ("Replicas", 0),
            ("Age", 0),
        ],
        // `kubectl get crd` (issue 21): upstream's CRD table prints the creation time itself.
        "CustomResourceDefinition" => &[("Name", 0), ("Created At", 0)],
        // `printValidatingWebhook` / `printMutatingWebhook` (issue 21).
        "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration" => {
            &[("Name", 0), ("Webhooks", 0), ("Age", 0)]
        }
        _ => &[("Name", 0), ("Age", 0)],
    };
    spec.iter()
        .map(|(name, priority)| col(name, *priority))
        .collect()
}

/// The `columnDefinitions` of a Table of `kind`.
pub fn column_definitions(kind: &str) -> Vec<Value> {
    columns(kind)
        .into_iter()
        .map(|c| json!({"name": c.name, "type": c.type_, "format": c.format, "description": "", "priority": c.priority}))
        .collect()
}

fn typed<K: DeserializeOwned>(object: &Value) -> Result<K, serde_json::Error> {
    K::deserialize(object)
}

/// Every cell of an object's row, wide columns included, in [`columns`] order.
pub fn full_cells(
    kind: &str,
    object: &Value,
    now: Timestamp,
) -> Result<Vec<String>, serde_json::Error> {
    if let Some(cells) = storage::cells(kind, object, now) {
        return cells;
    }
    if let Some(cells) = controllers::cells(kind, object, now) {
        return cells;
    }
    Ok(match kind {
        "Pod" => pod::pod_row(&typed(object)?, true, now),
        "Service" => service::service_row(&typed(object)?, true, now),
        "Endpoints" => service::endpoints_row(&typed(object)?, now),
        "Node" => cluster::node_row(&typed(object)?, true, now),
        "Event" => cluster::event_row(&typed(object)?, true, now),
        "Namespace" => cluster::namespace_row(&typed(object)?, now),
        "Lease" => cluster::lease_row(&typed(object)?, now),
        "ConfigMap" => config::config_map_row(&typed(object)?, now),
        "Secret" => config::secret_row(&typed(object)?, now),
        "ServiceAccount" => cluster::service_account_row(&typed(object)?, now),
        "EndpointSlice" => service::endpoint_slice_row(&typed(object)?, now),
        "Deployment" => workloads::deployment_row(&typed(object)?, true, now),
        "ReplicaSet" => workloads::replica_set_row(&typed(object)?, true, now),
        "Job" => jobs::job_row(&typed(object)?, true, now),
        "PodDisruptionBudget" => policy::pdb_row(&typed(object)?, now),
        "Ingress" => networking::ingress_row(&typed(object)?, true, now),
        "IngressClass" => networking::ingress_class_row(&typed(object)?, now),
        "HorizontalPodAutoscaler" => autoscaling::hpa_row(&typed(object)?, now),
        "CustomResourceDefinition" => {
            let created = object.pointer("/metadata/creationTimestamp");
            let created = created.and_then(Value::as_str).unwrap_or("");
            vec![name_of(object).to_string(), created.to_string()]
        }
        "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration" => {
            let webhooks = object["webhooks"].as_array().map_or(0, Vec::len);
            let created = object.pointer("/metadata/creationTimestamp");
            let created = created.and_then(Value::as_str).and_then(|t| t.parse().ok());
            vec![
                name_of(object).to_string(),
                webhooks.to_string(),
                duration::age(created, now),
            ]
        }
        _ => {
            let created = object
                .pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str)
                .and_then(|t| t.parse().ok());
            vec![name_of(object).to_string(), duration::age(created, now)]
        }
    })
}

/// The row the API server puts in a Table: every cell, as JSON strings. An object that does not
/// decode as its kind still gets a row (its name, then empty cells), never an error.
pub fn row(kind: &str, object: &Value, now: Timestamp) -> Vec<Value> {
    let cells = full_cells(kind, object, now).unwrap_or_else(|_| {
        let mut cells = vec![String::new(); columns(kind).len()];
        if let Some(first) = cells.first_mut() {
            *first = name_of(object).to_string();
        }
        cells
    });
    cells.into_iter().map(Value::String).collect()
}

/// `metadata.name` of a JSON object (empty if missing).
pub fn name_of(object: &Value) -> &str {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The LABELS cell of `--show-labels`: `app=web,tier=front` (sorted by key), or `<none>`.
pub fn labels_of(object: &Value) -> String {
    let mut labels: Vec<String> = object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|map| {
            map.iter()
                .map(|(key, value)| format!("{key}={}", value.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    labels.sort();
    if labels.is_empty() {
        "<none>".to_string()
    } else {
        labels.join(",")
    }
}

/// How kubectl names a kind in `pod/web` and `pod "web" deleted`: the singular, plus `.group`
/// outside the core group.
pub fn kind_prefix(info: &ResourceInfo) -> String {
    match info.group() {
        "" => info.singular.to_string(),
        group => format!("{}.{group}", info.singular),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::lookup;

    fn now() -> Timestamp {
        "2026-11-22T02:05:00Z".parse().unwrap()
    }

    /// The names of the columns kubectl shows without `-o wide`.
    fn narrow(kind: &str) -> Vec<&'static str> {
        columns(kind)
            .into_iter()
            .filter(|c| c.priority == 0)
            .map(|c| c.name)
            .collect()
    }

    #[test]
    fn wide_columns_have_priority_one() {
        assert_eq!(
            narrow("Pod"),
            ["Name", "Ready", "Status", "Restarts", "Age"]
        );
        assert_eq!(columns("Pod").len(), 9);
        assert_eq!(
            narrow("Event"),
            ["Last Seen", "Type", "Reason", "Object", "Message"]
        );
    }

    #[test]
    fn the_server_row_is_wide() {
        let pod = json!({"metadata": {"name": "web", "creationTimestamp": "2026-11-22T02:04:00Z"},
                         "spec": {"containers": [{"name": "a"}], "nodeName": "node-1"},
                         "status": {"phase": "Pending"}});
        let full = row("Pod", &pod, now());
        assert_eq!(full.len(), columns("Pod").len());
        assert_eq!(
            full[..5],
            [
                json!("web"),
                json!("0/1"),
                json!("Pending"),
                json!("0"),
                json!("60s")
            ]
        );
        assert_eq!(full[6], "node-1");
    }

    #[test]
    fn event_wide_columns_sit_between_the_narrow_ones() {
        let event = json!({"metadata": {"name": "web.1"}, "involvedObject": {"kind": "Pod", "name": "web"},
                           "type": "Normal", "reason": "Started", "message": "Started container web",
                           "source": {"component": "kubelet", "host": "node-1"}, "count": 2,
                           "lastTimestamp": "2026-11-22T02:04:50Z", "firstTimestamp": "2026-11-22T02:04:00Z"});
        assert_eq!(
            row("Event", &event, now()),
            [
                "10s",
                "Normal",
                "Started",
                "pod/web",
                "",
                "kubelet, node-1",
                "Started container web",
                "60s",
                "2",
                "web.1"
            ]
        );
    }

    #[test]
    fn an_object_that_does_not_decode_still_gets_a_row() {
        let broken = json!({"metadata": {"name": "x"}, "spec": {"containers": "nope"}});
        let cells = row("Pod", &broken, now());
        assert_eq!(cells.len(), 9);
        assert_eq!(cells[0], "x");
    }

    #[test]
    fn kind_prefix_adds_the_group_outside_core_and_labels_join_or_say_none() {
        assert_eq!(kind_prefix(lookup("po").unwrap()), "pod");
        assert_eq!(
            kind_prefix(lookup("lease").unwrap()),
            "lease.coordination.k8s.io"
        );
        assert_eq!(
            kind_prefix(lookup("endpointslices").unwrap()),
            "endpointslice.discovery.k8s.io"
        );
        assert_eq!(
            labels_of(&json!({"metadata": {"labels": {"tier": "front", "app": "web"}}})),
            "app=web,tier=front"
        );
        assert_eq!(labels_of(&json!({})), "<none>");
    }
}
