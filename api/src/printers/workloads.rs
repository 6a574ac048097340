//! The rows of `get deployments` and `get replicasets`.
//!
//! Kubernetes counterpart: `printDeployment`, `printReplicaSet` and `layoutContainerCells` in
//! `pkg/printers/internalversion/printers.go`. READY is `status.readyReplicas/spec.replicas`;
//! the wide columns list the template's container names and images, comma-separated, and the
//! selector as `metav1.LabelSelectorAsSelector(...).String()` prints it.

use jiff::Timestamp;
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};

use crate::core::PodTemplateSpec;
use crate::meta::LabelSelector;
use crate::workloads::selector_from_meta;

use super::duration::age;

/// NAME READY UP-TO-DATE AVAILABLE AGE [CONTAINERS IMAGES SELECTOR].
pub fn deployment_row(deployment: &Deployment, wide: bool, now: Timestamp) -> Vec<String> {
    let spec = deployment.spec.clone().unwrap_or_default();
    let status = deployment.status.clone().unwrap_or_default();
    let mut row = vec![
        deployment.metadata.name.clone().unwrap_or_default(),
        format!(
            "{}/{}",
            status.ready_replicas.unwrap_or(0),
            spec.replicas.unwrap_or(0)
        ),
        status.updated_replicas.unwrap_or(0).to_string(),
        status.available_replicas.unwrap_or(0).to_string(),
        age(
            deployment.metadata.creation_timestamp.as_ref().map(|t| t.0),
            now,
        ),
    ];
    if wide {
        row.extend(template_cells(Some(&spec.template), &spec.selector));
    }
    row
}

/// NAME DESIRED CURRENT READY AGE [CONTAINERS IMAGES SELECTOR].
pub fn replica_set_row(replica_set: &ReplicaSet, wide: bool, now: Timestamp) -> Vec<String> {
    let spec = replica_set.spec.clone().unwrap_or_default();
    let status = replica_set.status.clone().unwrap_or_default();
    let mut row = vec![
        replica_set.metadata.name.clone().unwrap_or_default(),
        spec.replicas.unwrap_or(0).to_string(),
        status.replicas.to_string(),
        status.ready_replicas.unwrap_or(0).to_string(),
        age(
            replica_set
                .metadata
                .creation_timestamp
                .as_ref()
                .map(|t| t.0),
            now,
        ),
    ];
    if wide {
        row.extend(template_cells(spec.template.as_ref(), &spec.selector));
    }
    row
}

/// CONTAINERS, IMAGES and SELECTOR (`layoutContainerCells`).
pub(crate) fn template_cells(
    template: Option<&PodTemplateSpec>,
    selector: &LabelSelector,
) -> [String; 3] {
    let containers = template
        .and_then(|t| t.spec.as_ref())
        .map(|s| s.containers.as_slice())
        .unwrap_or_default();
    let names: Vec<&str> = containers.iter().map(|c| c.name.as_str()).collect();
    let images: Vec<&str> = containers
        .iter()
        .map(|c| c.image.as_deref().unwrap_or(""))
        .collect();
    let selector = selector_from_meta(selector)
        .map(|s| s.to_string())
        .unwrap_or_default();
    [names.join(","), images.join(","), selector]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-11-22T02:05:00Z".parse().unwrap()
    }

    fn template() -> serde_json::Value {
        json!({"metadata": {"labels": {"app": "web"}},
               "spec": {"containers": [{"name": "web", "image": "nginx:1"}, {"name": "log", "image": "busybox"}]}})
    }

    #[test]
    fn deployment_rows_count_ready_of_desired() {
        let deployment: Deployment = serde_json::from_value(json!({
            "metadata": {"name": "web", "creationTimestamp": "2026-11-22T02:04:00Z"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": template()},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}))
        .unwrap();
        assert_eq!(
            deployment_row(&deployment, true, now()),
            [
                "web",
                "2/3",
                "3",
                "2",
                "60s",
                "web,log",
                "nginx:1,busybox",
                "app=web"
            ]
        );
        assert_eq!(deployment_row(&deployment, false, now()).len(), 5);
    }

    #[test]
    fn replica_set_rows_show_desired_current_ready() {
        let replica_set: ReplicaSet = serde_json::from_value(json!({
            "metadata": {"name": "web-5d4f", "creationTimestamp": "2026-11-22T02:04:00Z"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d4f"}},
                     "template": template()},
            "status": {"replicas": 2, "readyReplicas": 1}}))
        .unwrap();
        assert_eq!(
            replica_set_row(&replica_set, true, now()),
            [
                "web-5d4f",
                "3",
                "2",
                "1",
                "60s",
                "web,log",
                "nginx:1,busybox",
                "app=web,pod-template-hash=5d4f"
            ]
        );
    }
}
