//! apps/v1 Deployments and ReplicaSets: their defaults, their validation, their selectors.
//!
//! Kubernetes counterpart: `pkg/apis/apps/v1/defaults.go` (`SetDefaults_Deployment`,
//! `SetDefaults_ReplicaSet`), `pkg/apis/apps/validation/validation.go` (`ValidateDeploymentSpec`,
//! `ValidateRollingUpdateDeployment`, `ValidatePodTemplateSpecForReplicaSet`, the immutable
//! selector of `ValidateDeploymentUpdate`) and `metav1.LabelSelectorAsSelector`. The pod template
//! gets the pod-spec defaults and validation of a pod, with its field paths under
//! `spec.template.spec`.
//!
//! minik simplifies: the label selector's syntax is not validated beyond what matching needs, and
//! an absent selector reads as an empty one (both are a 422 on `spec.selector`).

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet, RollingUpdateDeployment};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::core::{Pod, PodTemplateSpec};
use crate::defaults::default_pod;
use crate::meta::{LabelSelector as MetaSelector, StatusCause};
use crate::selector::{LabelSelector, Operator, Requirement, SelectorError};
use crate::status::cause;
use crate::validation::validate_pod;

/// `SetDefaults_Deployment`: replicas 1, RollingUpdate 25%/25%, history 10, deadline 600 s.
pub fn default_deployment(deployment: &mut Deployment) {
    let spec = deployment.spec.get_or_insert_with(Default::default);
    spec.replicas.get_or_insert(1);
    let strategy = spec.strategy.get_or_insert_with(Default::default);
    let type_ = strategy
        .type_
        .get_or_insert_with(|| "RollingUpdate".to_string());
    if type_ == "RollingUpdate" {
        let rolling = strategy
            .rolling_update
            .get_or_insert_with(RollingUpdateDeployment::default);
        let quarter = || IntOrString::String("25%".to_string());
        rolling.max_unavailable.get_or_insert_with(quarter);
        rolling.max_surge.get_or_insert_with(quarter);
    }
    spec.revision_history_limit.get_or_insert(10);
    spec.progress_deadline_seconds.get_or_insert(600);
    default_template(&mut spec.template);
}

/// `SetDefaults_ReplicaSet`: replicas 1; empty labels become the template's.
pub fn default_replica_set(replica_set: &mut ReplicaSet) {
    let spec = replica_set.spec.get_or_insert_with(Default::default);
    spec.replicas.get_or_insert(1);
    let template = spec.template.get_or_insert_with(Default::default);
    default_template(template);
    let template_labels = template.metadata.as_ref().and_then(|m| m.labels.clone());
    if replica_set
        .metadata
        .labels
        .as_ref()
        .is_none_or(BTreeMap::is_empty)
    {
        replica_set.metadata.labels = template_labels;
    }
}

/// `SetDefaults_PodSpec` and `SetDefaults_Container` on a template. A pod's own defaults
/// (`enableServiceLinks`, `priority`, set by `SetDefaults_Pod` and admission) are left out, as
/// upstream's stored templates show.
pub(crate) fn default_template(template: &mut PodTemplateSpec) {
    let mut pod = Pod {
        metadata: Default::default(),
        spec: template.spec.take(),
        status: None,
    };
    let (links, priority) = pod
        .spec
        .as_ref()
        .map(|s| (s.enable_service_links, s.priority))
        .unwrap_or_default();
    default_pod(&mut pod);
    if let Some(spec) = pod.spec.as_mut() {
        spec.enable_service_links = links;
        spec.priority = priority;
    }
    template.spec = pod.spec;
}

/// `ValidateDeploymentSpec`: the causes of a 422, with paths from the object's root.
pub fn validate_deployment(deployment: &Deployment) -> Vec<StatusCause> {
    let Some(spec) = &deployment.spec else {
        return vec![cause("spec", "FieldValueRequired", "Required value")];
    };
    let mut causes = Vec::new();
    non_negative(&mut causes, "spec.replicas", spec.replicas);
    non_negative(&mut causes, "spec.minReadySeconds", spec.min_ready_seconds);
    non_negative(
        &mut causes,
        "spec.revisionHistoryLimit",
        spec.revision_history_limit,
    );
    causes.extend(validate_selector_and_template(
        &spec.selector,
        Some(&spec.template),
        "deployment",
    ));
    if let Some(strategy) = &spec.strategy {
        causes.extend(validate_strategy(
            strategy.type_.as_deref().unwrap_or(""),
            strategy.rolling_update.as_ref(),
        ));
    }
    if let Some(deadline) = spec.progress_deadline_seconds {
        non_negative(&mut causes, "spec.progressDeadlineSeconds", Some(deadline));
        if deadline <= spec.min_ready_seconds.unwrap_or(0) {
            causes.push(invalid(
                "spec.progressDeadlineSeconds",
                deadline,
                "must be greater than minReadySeconds",
            ));
        }
    }
    causes
}

/// `ValidateReplicaSetSpec`.
pub fn validate_replica_set(replica_set: &ReplicaSet) -> Vec<StatusCause> {
    let Some(spec) = &replica_set.spec else {
        return vec![cause("spec", "FieldValueRequired", "Required value")];
    };
    let mut causes = Vec::new();
    non_negative(&mut causes, "spec.replicas", spec.replicas);
    non_negative(&mut causes, "spec.minReadySeconds", spec.min_ready_seconds);
    causes.extend(validate_selector_and_template(
        &spec.selector,
        spec.template.as_ref(),
        "replicaset",
    ));
    causes
}

/// In apps/v1 the selector is immutable (`ValidateDeploymentUpdate`, `ValidateReplicaSetUpdate`).
pub fn validate_selector_update(new: &MetaSelector, old: &MetaSelector) -> Vec<StatusCause> {
    if new == old {
        return Vec::new();
    }
    let shown = serde_json::to_string(new).unwrap_or_default();
    vec![cause(
        "spec.selector",
        "FieldValueInvalid",
        format!("Invalid value: {shown}: field is immutable"),
    )]
}

pub(crate) fn validate_selector_and_template(
    selector: &MetaSelector,
    template: Option<&PodTemplateSpec>,
    what: &str,
) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    let parsed = match selector_from_meta(selector) {
        Ok(parsed) => parsed,
        Err(error) => {
            causes.push(cause("spec.selector", "FieldValueInvalid", error.0));
            LabelSelector::everything()
        }
    };
    if parsed.is_empty() && causes.is_empty() {
        let why = format!("Invalid value: {{}}: empty selector is invalid for {what}");
        causes.push(cause("spec.selector", "FieldValueInvalid", why));
    }
    let Some(template) = template else {
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
    if !parsed.is_empty() && !parsed.matches(&labels) {
        let shown = serde_json::to_string(&labels).unwrap_or_default();
        let why = format!("Invalid value: {shown}: `selector` does not match template `labels`");
        causes.push(cause(
            "spec.template.metadata.labels",
            "FieldValueInvalid",
            why,
        ));
    }
    causes.extend(validate_template_spec(template));
    causes
}

/// The template validated as a pod (paths moved under `spec.template`), and `restartPolicy`
/// limited to `Always`: a controller's pods are replaced, not restarted in place.
pub(crate) fn validate_template_spec(template: &PodTemplateSpec) -> Vec<StatusCause> {
    let mut causes = validate_template_as_pod(template);
    let policy = template
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .unwrap_or("Always");
    if policy != "Always" && !causes.iter().any(is_restart_policy) {
        let why = format!("Unsupported value: \"{policy}\": supported values: \"Always\"");
        causes.push(cause(
            "spec.template.spec.restartPolicy",
            "FieldValueNotSupported",
            why,
        ));
    }
    causes
}

/// The template validated as a pod, its paths moved under `spec.template`.
pub(crate) fn validate_template_as_pod(template: &PodTemplateSpec) -> Vec<StatusCause> {
    let pod = Pod {
        metadata: Default::default(),
        spec: template.spec.clone(),
        status: None,
    };
    validate_pod(&pod)
        .into_iter()
        .map(|mut cause| {
            cause.field = cause.field.map(|field| format!("spec.template.{field}"));
            cause
        })
        .collect()
}

fn is_restart_policy(cause: &StatusCause) -> bool {
    cause.field.as_deref() == Some("spec.template.spec.restartPolicy")
}

/// `ValidateDeploymentStrategy` and `ValidateRollingUpdateDeployment`.
fn validate_strategy(type_: &str, rolling: Option<&RollingUpdateDeployment>) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    match type_ {
        "Recreate" if rolling.is_some() => causes.push(cause(
            "spec.strategy.rollingUpdate",
            "FieldValueForbidden",
            "Forbidden: may not be specified when strategy `type` is 'Recreate'",
        )),
        "Recreate" => {}
        "RollingUpdate" => {
            if let Some(rolling) = rolling {
                causes.extend(validate_rolling_update(rolling));
            }
        }
        other => causes.push(cause(
            "spec.strategy.type",
            "FieldValueNotSupported",
            format!(
                "Unsupported value: \"{other}\": supported values: \"Recreate\", \"RollingUpdate\""
            ),
        )),
    }
    causes
}

fn validate_rolling_update(rolling: &RollingUpdateDeployment) -> Vec<StatusCause> {
    validate_unavailable_and_surge(
        "spec.strategy.rollingUpdate",
        rolling.max_unavailable.as_ref(),
        rolling.max_surge.as_ref(),
    )
}

/// `maxUnavailable` and `maxSurge` under `base`: counts or percentages, not negative, not both 0
/// (a Deployment's and a DaemonSet's rolling update alike).
pub(crate) fn validate_unavailable_and_surge(
    base: &str,
    unavailable: Option<&IntOrString>,
    surge: Option<&IntOrString>,
) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    for (name, value) in [("maxUnavailable", unavailable), ("maxSurge", surge)] {
        let Some(value) = value else { continue };
        let path = format!("{base}.{name}");
        match int_or_percent(value) {
            None => causes.push(cause(
                &path,
                "FieldValueInvalid",
                format!("Invalid value: {}: a valid percent string must be a numeric string followed by an ending '%'", shown(value)),
            )),
            Some(n) if n < 0 => causes.push(cause(
                &path,
                "FieldValueInvalid",
                format!(
                    "Invalid value: {}: must be greater than or equal to 0",
                    shown(value)
                ),
            )),
            Some(n) if name == "maxUnavailable" && is_percent(value) && n > 100 => {
                causes.push(cause(
                    &path,
                    "FieldValueInvalid",
                    format!(
                        "Invalid value: {}: must not be greater than 100%",
                        shown(value)
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    let zero = |value: Option<&IntOrString>| value.and_then(int_or_percent) == Some(0);
    if zero(unavailable) && zero(surge) {
        // Both zero: the error goes on maxUnavailable (`ValidateRollingUpdateDeployment`).
        causes.push(cause(
            format!("{base}.maxUnavailable"),
            "FieldValueInvalid",
            format!(
                "Invalid value: {}: may not be 0 when `maxSurge` is 0",
                unavailable.map(shown).unwrap_or_default()
            ),
        ));
    }
    causes
}

/// The number in `3` or `25%`; `None` when a string is not a percentage.
fn int_or_percent(value: &IntOrString) -> Option<i64> {
    match value {
        IntOrString::Int(n) => Some(i64::from(*n)),
        IntOrString::String(text) => text.strip_suffix('%')?.parse().ok(),
    }
}

fn is_percent(value: &IntOrString) -> bool {
    matches!(value, IntOrString::String(_))
}

fn shown(value: &IntOrString) -> String {
    match value {
        IntOrString::Int(n) => n.to_string(),
        IntOrString::String(text) => format!("\"{text}\""),
    }
}

pub(crate) fn non_negative(causes: &mut Vec<StatusCause>, path: &str, value: Option<i32>) {
    if let Some(value) = value.filter(|v| *v < 0) {
        causes.push(invalid(path, value, "must be greater than or equal to 0"));
    }
}

fn invalid(path: &str, value: i32, why: &str) -> StatusCause {
    cause(
        path,
        "FieldValueInvalid",
        format!("Invalid value: {value}: {why}"),
    )
}

/// `metav1.LabelSelectorAsSelector`: matchLabels and matchExpressions as one selector, its
/// requirements sorted by key (so its `Display` is upstream's `String()`, the Scale's
/// `status.selector` and the SELECTOR column).
pub fn selector_from_meta(selector: &MetaSelector) -> Result<LabelSelector, SelectorError> {
    let mut requirements: Vec<Requirement> = Vec::new();
    for (key, value) in selector.match_labels.iter().flatten() {
        requirements.push(Requirement {
            key: key.clone(),
            operator: Operator::Equals,
            values: vec![value.clone()],
        });
    }
    for expression in selector.match_expressions.iter().flatten() {
        let operator = match expression.operator.as_str() {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            other => {
                return Err(SelectorError(format!(
                    "{other:?} is not a valid label selector operator"
                )))
            }
        };
        let mut values = expression.values.clone().unwrap_or_default();
        values.sort();
        requirements.push(Requirement {
            key: expression.key.clone(),
            operator,
            values,
        });
    }
    requirements.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(LabelSelector::from_requirements(requirements))
}

#[cfg(test)]
#[path = "workloads_tests.rs"]
mod tests;
