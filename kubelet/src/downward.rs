//! The downward API: a pod's own fields and its containers' resources, as strings.
//!
//! Kubernetes counterpart: `podFieldSelectorRuntimeValue` in `pkg/kubelet/kubelet_pods.go`,
//! `ExtractFieldPathAsString` in `pkg/fieldpath/fieldpath.go` (labels and annotations as
//! `key="value"` lines) and `ExtractContainerResourceValue` in `pkg/api/v1/resource/helpers.go`
//! (a resource divided by its divisor, rounded up; an unset limit is the node's allocatable).
//! Used by env (`env.rs`) and by downwardAPI and projected volumes (`projection.rs`). Pure.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, ResourceFieldSelector};

/// What the downward API needs beyond the pod object.
#[derive(Clone, Debug, Default)]
pub struct PodFacts {
    /// `status.podIP`.
    pub pod_ip: String,
    /// `status.hostIP`.
    pub host_ip: String,
    /// `spec.nodeName` (the kubelet's own name).
    pub node_name: String,
    /// The node's allocatable `cpu` and `memory`, standing in for unset limits.
    pub allocatable: BTreeMap<String, String>,
}

/// The value of a `fieldRef.fieldPath`, or why it has none.
pub fn field_value(pod: &Pod, path: &str, facts: &PodFacts) -> Result<String, String> {
    let meta = &pod.metadata;
    let spec = pod.spec.as_ref();
    Ok(match path {
        "metadata.name" => meta.name.clone().unwrap_or_default(),
        "metadata.namespace" => meta.namespace.clone().unwrap_or_default(),
        "metadata.uid" => meta.uid.clone().unwrap_or_default(),
        "metadata.labels" => format_map(meta.labels.as_ref()),
        "metadata.annotations" => format_map(meta.annotations.as_ref()),
        "spec.nodeName" => spec
            .and_then(|s| s.node_name.clone())
            .unwrap_or_else(|| facts.node_name.clone()),
        "spec.serviceAccountName" => spec
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_default(),
        "status.podIP" => facts.pod_ip.clone(),
        "status.podIPs" => facts.pod_ip.clone(),
        "status.hostIP" | "status.hostIPs" => facts.host_ip.clone(),
        path => selected(path, "metadata.labels", meta.labels.as_ref())
            .or_else(|| selected(path, "metadata.annotations", meta.annotations.as_ref()))
            .ok_or_else(|| format!("unsupported fieldPath: {path}"))?
            .unwrap_or_default(),
    })
}

/// `metadata.labels['KEY']`: `Some(value or None)` when `path` selects one key of `map`.
fn selected(
    path: &str,
    map: &str,
    values: Option<&BTreeMap<String, String>>,
) -> Option<Option<String>> {
    let key = path
        .strip_prefix(map)?
        .strip_prefix("['")?
        .strip_suffix("']")?;
    Some(values.and_then(|v| v.get(key).cloned()))
}

/// `FormatMap`: one `key="value"` line per entry, sorted, values quoted as Go's `%q`.
fn format_map(values: Option<&BTreeMap<String, String>>) -> String {
    let lines: Vec<String> = values
        .into_iter()
        .flatten()
        .map(|(key, value)| format!("{key}={value:?}"))
        .collect();
    lines.join("\n")
}

/// The value of a `resourceFieldRef` for `container` (its own name when the ref names none).
pub fn resource_value(
    pod: &Pod,
    container: &str,
    selector: &ResourceFieldSelector,
    facts: &PodFacts,
) -> Result<String, String> {
    let name = selector
        .container_name
        .as_deref()
        .filter(|n| !n.is_empty())
        .unwrap_or(container);
    let spec = pod.spec.as_ref().ok_or("pod has no spec")?;
    let target = spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
        .find(|c| c.name == name)
        .ok_or_else(|| format!("container {name} not found"))?;
    let resources = target.resources.clone().unwrap_or_default();
    let (kind, resource) = selector
        .resource
        .split_once('.')
        .ok_or_else(|| format!("unsupported container resource: {}", selector.resource))?;
    let from = match kind {
        "limits" => resources.limits.as_ref(),
        "requests" => resources.requests.as_ref(),
        _ => None,
    };
    let set = from.and_then(|m| m.get(resource)).map(|q| q.0.clone());
    // An unset limit is the node's allocatable; an unset request is 0 (the API server copies
    // limits into unset requests when the pod is created).
    let quantity = match (set, kind) {
        (Some(q), _) => q,
        (None, "limits") => facts.allocatable.get(resource).cloned().unwrap_or_default(),
        (None, _) => "0".to_string(),
    };
    let divisor = selector
        .divisor
        .as_ref()
        .map(|d| d.0.clone())
        .unwrap_or_else(|| "1".into());
    let value = parse_quantity(&quantity).unwrap_or(0.0);
    let divisor = parse_quantity(&divisor).filter(|d| *d > 0.0).unwrap_or(1.0);
    match resource {
        "cpu" | "memory" | "ephemeral-storage" => {
            Ok(format!("{}", (value / divisor).ceil() as i64))
        }
        other => Err(format!("unsupported container resource: {kind}.{other}")),
    }
}

/// A Kubernetes quantity (`250m`, `1.5`, `64Mi`, `1e3`, `2G`) in base units.
pub fn parse_quantity(text: &str) -> Option<f64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let factor = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        exponent => 10f64.powi(exponent.strip_prefix(['e', 'E'])?.parse().ok()?),
    };
    Some(number * factor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pod;
    use k8s_openapi::api::core::v1::ResourceRequirements;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    fn facts() -> PodFacts {
        PodFacts {
            pod_ip: "127.244.1.9".into(),
            host_ip: "127.0.0.1".into(),
            node_name: "node-1".into(),
            allocatable: BTreeMap::from([
                ("cpu".into(), "4".into()),
                ("memory".into(), "8Gi".into()),
            ]),
        }
    }

    #[test]
    fn every_documented_field_path_has_a_value() {
        let mut web = pod(&["web"], "Always");
        web.metadata.labels = Some(BTreeMap::from([
            ("tier".into(), "front".into()),
            ("app".into(), "a\"b".into()),
        ]));
        web.spec.as_mut().unwrap().service_account_name = Some("builder".into());
        let value = |path: &str| field_value(&web, path, &facts()).unwrap();
        assert_eq!(value("metadata.name"), "web");
        assert_eq!(value("metadata.namespace"), "default");
        assert_eq!(value("metadata.uid"), "uid-1");
        assert_eq!(value("spec.nodeName"), "node-1");
        assert_eq!(value("spec.serviceAccountName"), "builder");
        assert_eq!(value("status.podIP"), "127.244.1.9");
        assert_eq!(value("status.hostIP"), "127.0.0.1");
        assert_eq!(value("metadata.labels"), "app=\"a\\\"b\"\ntier=\"front\"");
        assert_eq!(value("metadata.labels['tier']"), "front");
        assert_eq!(value("metadata.annotations['none']"), "");
        assert!(field_value(&web, "spec.bogus", &facts()).is_err());
    }

    #[test]
    fn resources_are_divided_and_rounded_up_and_unset_limits_are_allocatable() {
        let mut web = pod(&["web"], "Always");
        web.spec.as_mut().unwrap().containers[0].resources = Some(ResourceRequirements {
            limits: Some(BTreeMap::from([("memory".into(), Quantity("64Mi".into()))])),
            requests: Some(BTreeMap::from([("cpu".into(), Quantity("250m".into()))])),
            ..Default::default()
        });
        let value = |resource: &str, divisor: Option<&str>| {
            let selector = ResourceFieldSelector {
                resource: resource.into(),
                divisor: divisor.map(|d| Quantity(d.into())),
                container_name: None,
            };
            resource_value(&web, "web", &selector, &facts()).unwrap()
        };
        assert_eq!(value("limits.memory", None), "67108864");
        assert_eq!(value("limits.memory", Some("1Mi")), "64");
        assert_eq!(value("requests.cpu", None), "1");
        assert_eq!(value("requests.cpu", Some("1m")), "250");
        assert_eq!(value("limits.cpu", None), "4");
        assert_eq!(value("requests.memory", None), "0");
    }
}
