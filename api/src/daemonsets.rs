//! apps/v1 DaemonSets and ControllerRevisions: defaults, validation, and the revision hash.
//!
//! Kubernetes counterpart: `pkg/apis/apps/v1/defaults.go` (`SetDefaults_DaemonSet`),
//! `pkg/apis/apps/validation/validation.go` (`ValidateDaemonSetSpec`,
//! `ValidateDaemonSetUpdateStrategy`, the immutable selector of `ValidateDaemonSetUpdate`).
//! The pod template gets a pod's defaults and validation, with paths under `spec.template.spec`,
//! and `restartPolicy` must be `Always`.
//!
//! minik simplifies: a ControllerRevision is stored as sent (upstream also checks that `data` is
//! immutable).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{DaemonSet, RollingUpdateDaemonSet};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::meta::StatusCause;
use crate::status::cause;
use crate::workloads::{
    default_template, non_negative, validate_selector_and_template, validate_unavailable_and_surge,
};

/// The label every DaemonSet (and StatefulSet) pod carries: the hash of its template's revision.
pub const CONTROLLER_REVISION_HASH_LABEL: &str = "controller-revision-hash";
/// The label of a DaemonSet pod's template generation (upstream `pod-template-generation`).
pub const POD_TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";

/// `SetDefaults_DaemonSet`: RollingUpdate with maxUnavailable 1 and maxSurge 0, history 10; empty
/// labels become the template's.
pub fn default_daemon_set(ds: &mut DaemonSet) {
    let spec = ds.spec.get_or_insert_with(Default::default);
    let strategy = spec.update_strategy.get_or_insert_with(Default::default);
    let type_ = strategy
        .type_
        .get_or_insert_with(|| "RollingUpdate".to_string());
    if type_ == "RollingUpdate" {
        let rolling = strategy
            .rolling_update
            .get_or_insert_with(RollingUpdateDaemonSet::default);
        rolling.max_unavailable.get_or_insert(IntOrString::Int(1));
        rolling.max_surge.get_or_insert(IntOrString::Int(0));
    }
    spec.revision_history_limit.get_or_insert(10);
    default_template(&mut spec.template);
    let template_labels = spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone());
    if ds.metadata.labels.as_ref().is_none_or(BTreeMap::is_empty) {
        ds.metadata.labels = template_labels;
    }
}

/// `ValidateDaemonSetSpec`: the causes of a 422, with paths from the object's root.
pub fn validate_daemon_set(ds: &DaemonSet) -> Vec<StatusCause> {
    let Some(spec) = &ds.spec else {
        return vec![cause("spec", "FieldValueRequired", "Required value")];
    };
    let mut causes = Vec::new();
    causes.extend(validate_selector_and_template(
        &spec.selector,
        Some(&spec.template),
        "daemonset",
    ));
    non_negative(&mut causes, "spec.minReadySeconds", spec.min_ready_seconds);
    non_negative(
        &mut causes,
        "spec.revisionHistoryLimit",
        spec.revision_history_limit,
    );
    let strategy = spec.update_strategy.clone().unwrap_or_default();
    match strategy.type_.as_deref().unwrap_or("RollingUpdate") {
        "OnDelete" => {}
        "RollingUpdate" => {
            let rolling = strategy.rolling_update.unwrap_or_default();
            causes.extend(validate_unavailable_and_surge(
                "spec.updateStrategy.rollingUpdate",
                rolling.max_unavailable.as_ref(),
                rolling.max_surge.as_ref(),
            ));
        }
        other => causes.push(cause(
            "spec.updateStrategy.type",
            "FieldValueNotSupported",
            format!(
                "Unsupported value: \"{other}\": supported values: \"OnDelete\", \"RollingUpdate\""
            ),
        )),
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn agent(spec: serde_json::Value) -> DaemonSet {
        let mut spec = spec;
        spec["selector"] = json!({"matchLabels": {"app": "agent"}});
        spec["template"] = json!({"metadata": {"labels": {"app": "agent"}},
                                  "spec": {"containers": [{"name": "agent", "image": "nginx"}]}});
        serde_json::from_value(json!({"metadata": {"name": "agent"}, "spec": spec})).unwrap()
    }

    #[test]
    fn the_defaults_are_a_rolling_update_of_one_node_at_a_time() {
        let mut ds = agent(json!({}));
        default_daemon_set(&mut ds);
        let value = serde_json::to_value(&ds).unwrap();
        assert_eq!(
            value["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
        );
        assert_eq!(value["spec"]["revisionHistoryLimit"], 10);
        assert_eq!(value["metadata"]["labels"], json!({"app": "agent"}));
        assert!(validate_daemon_set(&ds).is_empty());
    }

    #[test]
    fn each_bad_field_is_a_cause_at_its_path() {
        let mut ds = agent(json!({"updateStrategy": {"type": "Recreate"}, "minReadySeconds": -1}));
        default_daemon_set(&mut ds);
        let causes = validate_daemon_set(&ds);
        let fields: Vec<_> = causes.iter().filter_map(|c| c.field.as_deref()).collect();
        assert_eq!(fields, ["spec.minReadySeconds", "spec.updateStrategy.type"]);
        let mut zero = agent(json!({"updateStrategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}}));
        default_daemon_set(&mut zero);
        let causes = validate_daemon_set(&zero);
        assert_eq!(
            causes[0].field.as_deref(),
            Some("spec.updateStrategy.rollingUpdate.maxUnavailable")
        );
    }
}
