//! apps/v1 StatefulSets: defaults, validation, what may change on update, and the names a set
//! gives its pods and claims.
//!
//! Kubernetes counterpart: `pkg/apis/apps/v1/defaults.go` (`SetDefaults_StatefulSet`) and
//! `pkg/apis/apps/validation/validation.go` (`ValidateStatefulSetSpec`,
//! `ValidateStatefulSetUpdate`). The pod template gets a pod's defaults and validation with
//! `restartPolicy: Always`, as every controller's template.
//!
//! minik simplifies: `maxUnavailable` (alpha) is accepted and ignored.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    RollingUpdateStatefulSetStrategy, StatefulSet,
    StatefulSetPersistentVolumeClaimRetentionPolicy as RetentionPolicy, StatefulSetSpec,
    StatefulSetUpdateStrategy,
};

use k8s_openapi::api::core::v1::{PersistentVolumeClaimVolumeSource, PodTemplateSpec, Volume};

use crate::meta::StatusCause;
use crate::status::cause;
use crate::validation::is_dns1123_subdomain;
use crate::workloads::{default_template, non_negative, validate_selector_and_template};

/// The label naming a StatefulSet pod (so a Service can select one pod of the set).
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// The label holding a StatefulSet pod's ordinal (`PodIndexLabel`, beta since 1.28).
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

/// `SetDefaults_StatefulSet`: OrderedReady, RollingUpdate with partition 0, one replica, history
/// 10, claims retained on delete and scale-down; empty labels become the template's.
pub fn default_stateful_set(sts: &mut StatefulSet) {
    let spec = sts.spec.get_or_insert_with(Default::default);
    spec.pod_management_policy
        .get_or_insert_with(|| "OrderedReady".to_string());
    let strategy = spec
        .update_strategy
        .get_or_insert_with(StatefulSetUpdateStrategy::default);
    let type_ = strategy
        .type_
        .get_or_insert_with(|| "RollingUpdate".to_string());
    if type_ == "RollingUpdate" {
        let rolling = strategy
            .rolling_update
            .get_or_insert_with(RollingUpdateStatefulSetStrategy::default);
        rolling.partition.get_or_insert(0);
    }
    spec.replicas.get_or_insert(1);
    spec.revision_history_limit.get_or_insert(10);
    let retention = spec
        .persistent_volume_claim_retention_policy
        .get_or_insert_with(RetentionPolicy::default);
    retention
        .when_deleted
        .get_or_insert_with(|| "Retain".to_string());
    retention
        .when_scaled
        .get_or_insert_with(|| "Retain".to_string());
    for claim in spec.volume_claim_templates.iter_mut().flatten() {
        let claim_spec = claim.spec.get_or_insert_with(Default::default);
        claim_spec
            .volume_mode
            .get_or_insert_with(|| "Filesystem".to_string());
    }
    default_template(&mut spec.template);
    let template_labels = spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone());
    if sts.metadata.labels.as_ref().is_none_or(BTreeMap::is_empty) {
        sts.metadata.labels = template_labels;
    }
}

/// `ValidateStatefulSetSpec`: the causes of a 422, with paths from the object's root.
pub fn validate_stateful_set(sts: &StatefulSet) -> Vec<StatusCause> {
    let Some(spec) = &sts.spec else {
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
    if let Some(ordinals) = &spec.ordinals {
        non_negative(&mut causes, "spec.ordinals.start", ordinals.start);
    }
    let policy = spec.pod_management_policy.as_deref().unwrap_or("");
    if !matches!(policy, "OrderedReady" | "Parallel") {
        causes.push(not_supported(
            "spec.podManagementPolicy",
            policy,
            &["OrderedReady", "Parallel"],
        ));
    }
    causes.extend(validate_update_strategy(spec));
    causes.extend(validate_retention(spec));
    for (i, claim) in spec.volume_claim_templates.iter().flatten().enumerate() {
        let name = claim.metadata.name.as_deref().unwrap_or("");
        if !is_dns1123_subdomain(name) {
            causes.push(cause(
                format!("spec.volumeClaimTemplates[{i}].metadata.name"),
                "FieldValueInvalid",
                format!("Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'"),
            ));
        }
    }
    causes.extend(validate_selector_and_template(
        &spec.selector,
        Some(&with_claim_volumes(spec)),
        "statefulset",
    ));
    causes
}

/// The template as its pods will be: each claim template a volume of the same name, so mounts
/// of a claim validate (upstream leaves the volume check out for sets; minik checks the union).
fn with_claim_volumes(spec: &StatefulSetSpec) -> PodTemplateSpec {
    let mut template = spec.template.clone();
    let Some(pod) = template.spec.as_mut() else {
        return template;
    };
    let volumes = pod.volumes.get_or_insert_with(Vec::new);
    for claim in spec.volume_claim_templates.iter().flatten() {
        let name = claim.metadata.name.clone().unwrap_or_default();
        volumes.retain(|v| v.name != name);
        volumes.push(Volume {
            name: name.clone(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: name,
                read_only: None,
            }),
            ..Volume::default()
        });
    }
    template
}

fn validate_update_strategy(spec: &StatefulSetSpec) -> Vec<StatusCause> {
    let strategy = spec.update_strategy.clone().unwrap_or_default();
    match strategy.type_.as_deref().unwrap_or("") {
        "RollingUpdate" => {
            let mut causes = Vec::new();
            let partition = strategy.rolling_update.and_then(|r| r.partition);
            non_negative(
                &mut causes,
                "spec.updateStrategy.rollingUpdate.partition",
                partition,
            );
            causes
        }
        "OnDelete" if strategy.rolling_update.is_some() => vec![cause(
            "spec.updateStrategy.rollingUpdate",
            "FieldValueInvalid",
            "only allowed for updateStrategy 'RollingUpdate'",
        )],
        "OnDelete" => Vec::new(),
        other => vec![not_supported(
            "spec.updateStrategy.type",
            other,
            &["OnDelete", "RollingUpdate"],
        )],
    }
}

fn validate_retention(spec: &StatefulSetSpec) -> Vec<StatusCause> {
    let Some(policy) = &spec.persistent_volume_claim_retention_policy else {
        return Vec::new();
    };
    let fields = [
        ("whenDeleted", &policy.when_deleted),
        ("whenScaled", &policy.when_scaled),
    ];
    fields
        .into_iter()
        .filter_map(|(field, value)| {
            let value = value.as_deref().unwrap_or("Retain");
            (!matches!(value, "Retain" | "Delete")).then(|| {
                not_supported(
                    &format!("spec.persistentVolumeClaimRetentionPolicy.{field}"),
                    value,
                    &["Retain", "Delete"],
                )
            })
        })
        .collect()
}

/// `ValidateStatefulSetUpdate`: only replicas, ordinals, template, updateStrategy,
/// revisionHistoryLimit, persistentVolumeClaimRetentionPolicy and minReadySeconds may change.
pub fn validate_stateful_set_update(new: &StatefulSet, old: &StatefulSet) -> Vec<StatusCause> {
    let (Some(new), Some(old)) = (&new.spec, &old.spec) else {
        return Vec::new();
    };
    let frozen = |spec: &StatefulSetSpec| {
        let mut spec = spec.clone();
        spec.replicas = None;
        spec.ordinals = None;
        spec.template = Default::default();
        spec.update_strategy = None;
        spec.revision_history_limit = None;
        spec.persistent_volume_claim_retention_policy = None;
        spec.min_ready_seconds = None;
        spec
    };
    if frozen(new) == frozen(old) {
        return Vec::new();
    }
    vec![cause(
        "spec",
        "FieldValueForbidden",
        "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
    )]
}

fn not_supported(path: &str, value: &str, supported: &[&str]) -> StatusCause {
    let list: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
    cause(
        path,
        "FieldValueNotSupported",
        format!(
            "Unsupported value: \"{value}\": supported values: {}",
            list.join(", ")
        ),
    )
}

/// The name of the pod with `ordinal`: `<set>-<ordinal>` (`getPodName`).
pub fn pod_name(set: &str, ordinal: i32) -> String {
    format!("{set}-{ordinal}")
}

/// The claim of template `claim` for the pod with `ordinal`: `<claim>-<set>-<ordinal>`
/// (`getPersistentVolumeClaimName`).
pub fn claim_name(claim: &str, set: &str, ordinal: i32) -> String {
    format!("{claim}-{}", pod_name(set, ordinal))
}

/// The ordinal in a pod's name if the pod belongs to `set` by name (`getParentNameAndOrdinal`).
pub fn ordinal_of(set: &str, pod_name: &str) -> Option<i32> {
    let rest = pod_name.strip_prefix(set)?.strip_prefix('-')?;
    if rest.is_empty() || (rest.len() > 1 && rest.starts_with('0')) {
        return None;
    }
    rest.parse().ok().filter(|n: &i32| *n >= 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn web(spec: serde_json::Value) -> StatefulSet {
        let mut spec = spec;
        spec["selector"] = json!({"matchLabels": {"app": "web"}});
        spec["serviceName"] = json!("web");
        spec["template"] = json!({"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": "nginx"}]}});
        serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": spec})).unwrap()
    }

    #[test]
    fn the_defaults_are_ordered_rolling_and_retaining() {
        let mut sts = web(json!({}));
        default_stateful_set(&mut sts);
        let value = serde_json::to_value(&sts).unwrap();
        assert_eq!(value["spec"]["podManagementPolicy"], "OrderedReady");
        assert_eq!(
            value["spec"]["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        );
        assert_eq!(
            value["spec"]["persistentVolumeClaimRetentionPolicy"],
            json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
        );
        assert_eq!(value["spec"]["replicas"], 1);
        assert!(validate_stateful_set(&sts).is_empty());
    }

    #[test]
    fn each_bad_field_is_a_cause_at_its_path() {
        let mut sts = web(json!({"podManagementPolicy": "Random", "replicas": -1,
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": -2}},
            "persistentVolumeClaimRetentionPolicy": {"whenScaled": "Keep"}}));
        default_stateful_set(&mut sts);
        let causes = validate_stateful_set(&sts);
        let fields: Vec<_> = causes.iter().filter_map(|c| c.field.as_deref()).collect();
        assert_eq!(
            fields,
            [
                "spec.replicas",
                "spec.podManagementPolicy",
                "spec.updateStrategy.rollingUpdate.partition",
                "spec.persistentVolumeClaimRetentionPolicy.whenScaled"
            ]
        );
    }

    #[test]
    fn only_some_fields_may_change() {
        let mut old = web(json!({}));
        default_stateful_set(&mut old);
        let mut scaled = old.clone();
        scaled.spec.as_mut().unwrap().replicas = Some(5);
        assert!(validate_stateful_set_update(&scaled, &old).is_empty());
        let mut renamed = old.clone();
        renamed.spec.as_mut().unwrap().service_name = Some("other".into());
        assert_eq!(
            validate_stateful_set_update(&renamed, &old)[0]
                .field
                .as_deref(),
            Some("spec")
        );
    }

    #[test]
    fn names_and_ordinals() {
        assert_eq!(pod_name("web", 2), "web-2");
        assert_eq!(claim_name("data", "web", 0), "data-web-0");
        assert_eq!(ordinal_of("web", "web-12"), Some(12));
        assert_eq!(ordinal_of("web", "web-01"), None);
        assert_eq!(ordinal_of("web", "webx-1"), None);
        assert_eq!(ordinal_of("web", "web-"), None);
    }
}
