//! Printers: the columns and cells of `minik get`, one pure function per kind.
//!
//! Kubernetes counterpart: `pkg/printers/internalversion/printers.go`, where the apiserver's Table
//! columns for each kind are defined (kubectl prints the cells verbatim). minik's CLI computes the
//! same cells on the client side from the objects; the functions are pure (object + clock in,
//! strings out) so they are unit-tested without a server, and could back a server-side Table.

pub mod cluster;
pub mod duration;
pub mod pod;
pub mod service;

use jiff::Timestamp;
use serde::de::DeserializeOwned;
use serde_json::Value;

use minik_api::ResourceInfo;

/// The column headers of a kind (`-o wide` adds some).
pub fn headers(info: &ResourceInfo, wide: bool) -> Vec<&'static str> {
    let (normal, extra): (&[&str], &[&str]) = match info.kind {
        "Pod" => (
            &["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
            &["IP", "NODE", "NOMINATED NODE", "READINESS GATES"],
        ),
        "Service" => (
            &[
                "NAME",
                "TYPE",
                "CLUSTER-IP",
                "EXTERNAL-IP",
                "PORT(S)",
                "AGE",
            ],
            &["SELECTOR"],
        ),
        "Endpoints" => (&["NAME", "ENDPOINTS", "AGE"], &[]),
        "Node" => (
            &["NAME", "STATUS", "ROLES", "AGE", "VERSION"],
            &[
                "INTERNAL-IP",
                "EXTERNAL-IP",
                "OS-IMAGE",
                "KERNEL-VERSION",
                "CONTAINER-RUNTIME",
            ],
        ),
        "Event" => (&["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"], &[]),
        "Namespace" => (&["NAME", "STATUS", "AGE"], &[]),
        "Lease" => (&["NAME", "HOLDER", "AGE"], &[]),
        _ => (&["NAME", "AGE"], &[]),
    };
    let mut headers = normal.to_vec();
    if wide {
        headers.extend_from_slice(extra);
    }
    headers
}

/// The cells of one object of kind `info` (the object as JSON, as the server sent it).
pub fn row(
    info: &ResourceInfo,
    object: &Value,
    wide: bool,
    now: Timestamp,
) -> Result<Vec<String>, serde_json::Error> {
    Ok(match info.kind {
        "Pod" => pod::pod_row(&typed(object)?, wide, now),
        "Service" => service::service_row(&typed(object)?, wide, now),
        "Endpoints" => service::endpoints_row(&typed(object)?, now),
        "Node" => cluster::node_row(&typed(object)?, wide, now),
        "Event" => cluster::event_row(&typed(object)?, now),
        "Namespace" => cluster::namespace_row(&typed(object)?, now),
        "Lease" => cluster::lease_row(&typed(object)?, now),
        _ => {
            let created = object
                .pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str)
                .and_then(|t| t.parse().ok());
            vec![name_of(object).to_string(), duration::age(created, now)]
        }
    })
}

/// Which column holds the object's name (it is prefixed with `pod/` when several kinds are shown).
pub fn name_column(info: &ResourceInfo) -> Option<usize> {
    match info.kind {
        "Event" => None,
        _ => Some(0),
    }
}

fn typed<K: DeserializeOwned>(object: &Value) -> Result<K, serde_json::Error> {
    K::deserialize(object)
}

/// `metadata.name` of a JSON object (empty if missing).
pub fn name_of(object: &Value) -> &str {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `metadata.namespace` of a JSON object (empty if missing).
pub fn namespace_of(object: &Value) -> &str {
    object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The LABELS cell: `app=web,tier=front` (sorted by key), or `<none>`.
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

/// How kubectl names a kind in `pod/web` and `pod "web" deleted`: the singular, plus `.group` outside core.
pub fn kind_prefix(info: &ResourceInfo) -> String {
    match info.group() {
        "" => info.singular.to_string(),
        group => format!("{}.{group}", info.singular),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_prefix_adds_the_group_outside_core() {
        assert_eq!(
            kind_prefix(minik_api::resource::lookup("po").unwrap()),
            "pod"
        );
        assert_eq!(
            kind_prefix(minik_api::resource::lookup("lease").unwrap()),
            "lease.coordination.k8s.io"
        );
    }

    #[test]
    fn labels_cell_joins_pairs_or_says_none() {
        let object = serde_json::json!({"metadata": {"labels": {"tier": "front", "app": "web"}}});
        assert_eq!(labels_of(&object), "app=web,tier=front");
        assert_eq!(labels_of(&serde_json::json!({})), "<none>");
    }

    #[test]
    fn wide_adds_the_priority_one_columns() {
        let pods = minik_api::resource::lookup("pods").unwrap();
        assert_eq!(headers(pods, false).len(), 5);
        assert_eq!(headers(pods, true).len(), 9);
    }
}
