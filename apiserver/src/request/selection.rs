//! Which objects a list, watch or deletecollection sees: label and field selectors.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/storage/selection_predicate.go`
//! (`SelectionPredicate`) and each kind's `GetAttrs` / field label conversion
//! (`pkg/registry/core/pod/strategy.go`, `pkg/apis/core/v1/conversion.go`), which name the fields
//! a kind may be selected on; any other field is a 400.

use minik_api::selector::FieldSelector;
use serde_json::Value;

use super::query::ListOptions;
use crate::error::{ApiError, ApiResult};

/// The fields a kind may be selected on, beyond `metadata.name` and `metadata.namespace`.
fn selectable_fields(kind: &str) -> &'static [&'static str] {
    match kind {
        "Pod" => &[
            "spec.nodeName",
            "spec.schedulerName",
            "spec.restartPolicy",
            "spec.serviceAccountName",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ],
        "Event" => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        "Node" => &["spec.unschedulable"],
        "Namespace" => &["status.phase"],
        "Service" => &["spec.clusterIP", "spec.type"],
        // `pkg/registry/apps/replicaset/strategy.go` (`ReplicaSetToSelectableFields`).
        "ReplicaSet" => &["status.replicas"],
        _ => &[],
    }
}

/// Rejects a field selector naming a field the kind does not support (400, as upstream).
pub fn check_field_selector(kind: &str, selector: &FieldSelector) -> ApiResult<()> {
    for requirement in selector.requirements() {
        let field = requirement.field.as_str();
        if field != "metadata.name"
            && field != "metadata.namespace"
            && !selectable_fields(kind).contains(&field)
        {
            return Err(ApiError::bad_request(format!(
                "field label not supported: {field}"
            )));
        }
    }
    Ok(())
}

/// Reads a dotted field of an object as the string a field selector compares with.
pub fn field_value(object: &Value, path: &str) -> Option<String> {
    let value = path
        .split('.')
        .try_fold(object, |value, part| value.get(part))?;
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Object(map) if path == "source" => map
            .get("component")
            .and_then(Value::as_str)
            .map(str::to_string),
        _ => None,
    }
}

/// Whether an object passes the list/watch selectors.
pub fn matches(options: &ListOptions, object: &Value) -> bool {
    let labels = object
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(|l| serde_json::from_value(l.clone()).ok())
        .unwrap_or_default();
    options.labels.matches(&labels) && options.fields.matches(|field| field_value(object, field))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn field_values_are_read_by_path() {
        let event = json!({"involvedObject": {"name": "web", "kind": "Pod"}, "source": {"component": "kubelet"}, "spec": {"unschedulable": true}});
        assert_eq!(
            field_value(&event, "involvedObject.name").as_deref(),
            Some("web")
        );
        assert_eq!(field_value(&event, "source").as_deref(), Some("kubelet"));
        assert_eq!(
            field_value(&event, "spec.unschedulable").as_deref(),
            Some("true")
        );
        assert_eq!(field_value(&event, "spec.nodeName"), None);
    }

    #[test]
    fn unsupported_field_labels_are_rejected() {
        let selector = FieldSelector::parse("spec.nodeName=n1").unwrap();
        assert!(check_field_selector("Pod", &selector).is_ok());
        assert_eq!(
            check_field_selector("Service", &selector)
                .unwrap_err()
                .code(),
            400
        );
    }
}
