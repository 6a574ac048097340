//! The `scale` subresource: a Deployment or ReplicaSet seen as an autoscaling/v1 `Scale`.
//!
//! Kubernetes counterpart: `ScaleREST` in `pkg/registry/apps/deployment/storage/storage.go`,
//! `pkg/registry/apps/replicaset/storage/storage.go` and
//! `pkg/registry/core/replicationcontroller/storage/storage.go` (`scaleFromDeployment`,
//! `scaleUpdatedObjectInfo`). A GET answers the Scale; a PUT or PATCH changes only
//! `spec.replicas` of the object behind it, which then goes through the kind's strategy like any
//! update (and so bumps `metadata.generation`). `status.selector` is the label selector as a
//! string, what `kubectl scale` and autoscalers select pods with. `kubectl scale` sends a merge
//! patch `{"spec":{"replicas":N}}` here.

use minik_api::k8s_openapi::api::autoscaling::v1::Scale;
use minik_api::meta::LabelSelector;
use minik_api::status;
use minik_api::workloads::selector_from_meta;
use serde_json::{json, Value};

use super::typed;
use crate::error::ApiResult;

/// Whether `kind` has a `scale` subresource.
pub fn has_scale_subresource(kind: &str) -> bool {
    matches!(
        kind,
        "Deployment" | "ReplicaSet" | "ReplicationController" | "StatefulSet"
    )
}

/// The Scale of a stored object: its identity, `spec.replicas`, and the observed count.
pub fn scale_of(object: &Value) -> Value {
    let meta = &object["metadata"];
    let mut metadata = json!({});
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(value) = meta.get(field) {
            metadata[field] = value.clone();
        }
    }
    let spec_selector = object["spec"]["selector"].clone();
    // A ReplicationController's selector is a plain map (`labels.SelectorFromSet`).
    let selector: LabelSelector = if object["kind"] == "ReplicationController" {
        LabelSelector {
            match_labels: serde_json::from_value(spec_selector).unwrap_or_default(),
            match_expressions: None,
        }
    } else {
        serde_json::from_value(spec_selector).unwrap_or_default()
    };
    let selector = selector_from_meta(&selector)
        .map(|s| s.to_string())
        .unwrap_or_default();
    json!({
        "kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": metadata,
        "spec": {"replicas": object["spec"]["replicas"].as_i64().unwrap_or(0)},
        "status": {"replicas": object["status"]["replicas"].as_i64().unwrap_or(0), "selector": selector},
    })
}

/// The object with the replicas a Scale asks for; a negative count is a 422 on `spec.replicas`.
pub fn apply_scale(object: &Value, scale: Value) -> ApiResult<Value> {
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let scale: Scale = typed(scale, "Scale")?;
    let replicas = scale.spec.and_then(|s| s.replicas).unwrap_or(0);
    if replicas < 0 {
        let cause = status::cause(
            "spec.replicas",
            "FieldValueInvalid",
            format!("Invalid value: {replicas}: must be greater than or equal to 0"),
        );
        return Err(status::invalid("Scale", &name, vec![cause]).into());
    }
    let mut updated = object.clone();
    updated["spec"]["replicas"] = Value::from(replicas);
    Ok(updated)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn web() -> Value {
        json!({"metadata": {"name": "web", "namespace": "default", "uid": "u1", "resourceVersion": "7"},
               "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "tier": "front"}}},
               "status": {"replicas": 2}})
    }

    #[test]
    fn the_scale_shows_desired_observed_and_the_selector_string() {
        let scale = scale_of(&web());
        assert_eq!(scale["spec"]["replicas"], 3);
        assert_eq!(
            scale["status"],
            json!({"replicas": 2, "selector": "app=web,tier=front"})
        );
        assert_eq!(scale["metadata"]["resourceVersion"], "7");
    }

    #[test]
    fn a_replication_controller_scale_prints_its_map_selector() {
        let rc = json!({"kind": "ReplicationController", "metadata": {"name": "web"},
                        "spec": {"replicas": 2, "selector": {"app": "web"}}, "status": {"replicas": 2}});
        assert_eq!(scale_of(&rc)["status"]["selector"], "app=web");
    }

    #[test]
    fn a_scale_sets_replicas_and_refuses_negative_counts() {
        let scaled = apply_scale(&web(), json!({"spec": {"replicas": 5}})).unwrap();
        assert_eq!(scaled["spec"]["replicas"], 5);
        let error = apply_scale(&web(), json!({"spec": {"replicas": -1}})).unwrap_err();
        assert_eq!(error.code(), 422);
    }
}
