//! core/v1 ReplicationControllers: their defaults, their validation, and their view as a ReplicaSet.
//!
//! Kubernetes counterpart: `pkg/apis/core/v1/defaults.go` (`SetDefaults_ReplicationController`),
//! `pkg/apis/core/validation/validation.go` (`ValidateReplicationControllerSpec`) and the
//! conversions `Convert_v1_ReplicationController_To_apps_ReplicaSet` that let upstream's
//! replication manager be the ReplicaSet controller over converted objects
//! (`pkg/controller/replication/conversion.go`). A ReplicationController is the old ReplicaSet:
//! its selector is a plain `map[string]string` (equality only), and it is mutable.
//!
//! minik simplifies: nothing beyond the spec's own rules is validated.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{ReplicaSet, ReplicaSetSpec, ReplicaSetStatus};
use k8s_openapi::api::core::v1::{ReplicationController, ReplicationControllerStatus};

use crate::meta::{LabelSelector, StatusCause};
use crate::status::cause;
use crate::workloads::{default_template, validate_template_spec};

/// `SetDefaults_ReplicationController`: replicas 1; an empty selector and empty labels become
/// the template's labels.
pub fn default_replication_controller(rc: &mut ReplicationController) {
    let spec = rc.spec.get_or_insert_with(Default::default);
    spec.replicas.get_or_insert(1);
    let template_labels = spec
        .template
        .as_ref()
        .and_then(|t| t.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .filter(|labels| !labels.is_empty());
    if spec.selector.as_ref().is_none_or(BTreeMap::is_empty) {
        spec.selector = template_labels.clone();
    }
    if rc.metadata.labels.as_ref().is_none_or(BTreeMap::is_empty) {
        rc.metadata.labels = template_labels;
    }
    if let Some(template) = spec.template.as_mut() {
        default_template(template);
    }
}

/// `ValidateReplicationControllerSpec`: a non-empty selector, a template whose labels it matches,
/// counts that are not negative; the template is validated as a pod with `restartPolicy: Always`.
pub fn validate_replication_controller(rc: &ReplicationController) -> Vec<StatusCause> {
    let Some(spec) = &rc.spec else {
        return vec![cause("spec", "FieldValueRequired", "Required value")];
    };
    let mut causes = Vec::new();
    for (path, value) in [
        ("spec.replicas", spec.replicas),
        ("spec.minReadySeconds", spec.min_ready_seconds),
    ] {
        if let Some(value) = value.filter(|v| *v < 0) {
            causes.push(cause(
                path,
                "FieldValueInvalid",
                format!("Invalid value: {value}: must be greater than or equal to 0"),
            ));
        }
    }
    let selector = spec.selector.clone().unwrap_or_default();
    if selector.is_empty() {
        causes.push(cause(
            "spec.selector",
            "FieldValueRequired",
            "Required value",
        ));
    }
    let Some(template) = &spec.template else {
        causes.push(cause(
            "spec.template",
            "FieldValueRequired",
            "Required value",
        ));
        return causes;
    };
    let labels = template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    if !selector.iter().all(|(k, v)| labels.get(k) == Some(v)) {
        let shown = serde_json::to_string(&labels).unwrap_or_default();
        causes.push(cause(
            "spec.template.metadata.labels",
            "FieldValueInvalid",
            format!("Invalid value: {shown}: `selector` does not match template `labels`"),
        ));
    }
    causes.extend(validate_template_spec(template));
    causes
}

/// The selector map as a `LabelSelector` of `matchLabels`.
pub fn selector_of(rc: &ReplicationController) -> LabelSelector {
    LabelSelector {
        match_labels: rc.spec.as_ref().and_then(|s| s.selector.clone()),
        match_expressions: None,
    }
}

/// The ReplicationController as the ReplicaSet the replication manager reconciles: the same
/// metadata, spec and status (field for field), the selector as `matchLabels`.
pub fn as_replica_set(rc: &ReplicationController) -> ReplicaSet {
    let spec = rc.spec.clone().unwrap_or_default();
    ReplicaSet {
        metadata: rc.metadata.clone(),
        spec: Some(ReplicaSetSpec {
            replicas: spec.replicas,
            min_ready_seconds: spec.min_ready_seconds,
            selector: selector_of(rc),
            template: spec.template,
        }),
        status: rc.status.as_ref().map(convert),
    }
}

/// A ReplicaSet's status as a ReplicationController's: the two have the same fields and JSON.
pub fn status_of(status: &ReplicaSetStatus) -> ReplicationControllerStatus {
    convert(status)
}

fn convert<A: serde::Serialize, B: serde::de::DeserializeOwned + Default>(from: &A) -> B {
    serde_json::to_value(from)
        .and_then(serde_json::from_value)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rc(spec: serde_json::Value) -> ReplicationController {
        serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": spec})).unwrap()
    }

    fn template() -> serde_json::Value {
        json!({"metadata": {"labels": {"app": "web"}},
               "spec": {"containers": [{"name": "web", "image": "nginx"}]}})
    }

    #[test]
    fn the_selector_and_labels_default_to_the_templates() {
        let mut web = rc(json!({"template": template()}));
        default_replication_controller(&mut web);
        let value = serde_json::to_value(&web).unwrap();
        assert_eq!(value["spec"]["selector"], json!({"app": "web"}));
        assert_eq!(value["metadata"]["labels"], json!({"app": "web"}));
        assert_eq!(value["spec"]["replicas"], 1);
        assert!(validate_replication_controller(&web).is_empty());
    }

    #[test]
    fn a_selector_that_misses_the_template_is_a_422_on_the_labels() {
        let mut web =
            rc(json!({"selector": {"app": "api"}, "replicas": -1, "template": template()}));
        default_replication_controller(&mut web);
        let causes = validate_replication_controller(&web);
        let fields: Vec<_> = causes.iter().filter_map(|c| c.field.as_deref()).collect();
        assert_eq!(fields, ["spec.replicas", "spec.template.metadata.labels"]);
        let mut empty = rc(json!({"template": {"spec": template()["spec"]}}));
        default_replication_controller(&mut empty);
        let causes = validate_replication_controller(&empty);
        assert_eq!(causes[0].field.as_deref(), Some("spec.selector"));
    }

    #[test]
    fn as_a_replica_set_the_selector_is_match_labels_and_the_status_carries_over() {
        let mut web =
            rc(json!({"selector": {"app": "web"}, "replicas": 3, "template": template()}));
        web.status =
            Some(serde_json::from_value(json!({"replicas": 2, "readyReplicas": 1})).unwrap());
        let rs = as_replica_set(&web);
        let spec = rs.spec.as_ref().unwrap();
        assert_eq!(spec.replicas, Some(3));
        assert_eq!(
            serde_json::to_value(&spec.selector).unwrap(),
            json!({"matchLabels": {"app": "web"}})
        );
        let status = rs.status.unwrap();
        assert_eq!((status.replicas, status.ready_replicas), (2, Some(1)));
        assert_eq!(status_of(&status).ready_replicas, Some(1));
    }
}
