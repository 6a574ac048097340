//! What `describe`, `scale` and `rollout` share about Deployments and their ReplicaSets.
//!
//! Kubernetes counterpart: kubectl's `deploymentutil` helpers (`staging/src/k8s.io/kubectl/pkg/util/deployment/deployment.go`):
//! `Revision`, `EqualIgnoreHash`, `FindNewReplicaSet`, `FindOldReplicaSets`, and
//! `metav1.FormatLabelSelector`. minik finds a Deployment's ReplicaSets by their controller
//! `ownerReference` alone (kubectl also lists by the selector first; the owner check decides).

use anyhow::bail;

use minik_api::apps::{Deployment, ReplicaSet};
use minik_api::core::PodTemplateSpec;
use minik_api::meta::LabelSelector;
use minik_api::ResourceInfo;
use minik_client::{Api, Client, ListParams};

use super::resources::kind;

/// The annotation the Deployment controller numbers each ReplicaSet (and the Deployment) with.
pub const REVISION: &str = "deployment.kubernetes.io/revision";
/// The label the Deployment controller adds to each ReplicaSet's template and selector.
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";

/// Splits `KIND/NAME` or `KIND NAME` (what `scale` and `rollout` take) into the kind and name.
pub fn kind_and_name(args: &[String]) -> anyhow::Result<(&'static ResourceInfo, String)> {
    match args {
        [one] => match one.split_once('/') {
            Some((kind_name, name)) if !name.is_empty() => Ok((kind(kind_name)?, name.to_string())),
            _ => bail!("you must provide one or more resources by argument or filename"),
        },
        [kind_name, name] if !kind_name.contains('/') => Ok((kind(kind_name)?, name.clone())),
        [] => bail!("required resource not specified"),
        _ => bail!("only one resource can be given: KIND/NAME or KIND NAME"),
    }
}

/// The ReplicaSets a Deployment controls (by `ownerReferences[].controller` and uid).
pub async fn owned_replica_sets(
    client: &Client,
    deployment: &Deployment,
) -> anyhow::Result<Vec<ReplicaSet>> {
    let namespace = deployment
        .metadata
        .namespace
        .as_deref()
        .unwrap_or("default");
    let api: Api<ReplicaSet> = Api::namespaced(client.clone(), namespace);
    let uid = deployment.metadata.uid.clone().unwrap_or_default();
    let list = api.list(&ListParams::default()).await?;
    Ok(list
        .items
        .into_iter()
        .filter(|rs| controlled_by(rs, &uid))
        .collect())
}

/// Whether the ReplicaSet's controller reference points at `uid`.
pub fn controlled_by(rs: &ReplicaSet, uid: &str) -> bool {
    rs.metadata
        .owner_references
        .iter()
        .flatten()
        .any(|owner| owner.controller == Some(true) && owner.uid == uid)
}

/// The ReplicaSet's `deployment.kubernetes.io/revision`, if it has a valid one.
pub fn revision(rs: &ReplicaSet) -> Option<i64> {
    rs.metadata
        .annotations
        .as_ref()?
        .get(REVISION)?
        .parse()
        .ok()
}

/// Two templates are the same version of the pods if they differ only by `pod-template-hash`
/// (kubectl's `EqualIgnoreHash`).
pub fn equal_ignore_hash(a: &PodTemplateSpec, b: &PodTemplateSpec) -> bool {
    without_hash(a) == without_hash(b)
}

/// A template without the `pod-template-hash` label (what `rollout undo` copies back).
pub fn without_hash(template: &PodTemplateSpec) -> PodTemplateSpec {
    let mut template = template.clone();
    if let Some(metadata) = template.metadata.as_mut() {
        if let Some(labels) = metadata.labels.as_mut() {
            labels.remove(POD_TEMPLATE_HASH);
        }
    }
    template
}

/// The ReplicaSet whose template is the Deployment's (the oldest one if several match, as upstream).
pub fn new_replica_set<'a>(
    deployment: &Deployment,
    sets: &'a [ReplicaSet],
) -> Option<&'a ReplicaSet> {
    let template = &deployment.spec.as_ref()?.template;
    sets.iter()
        .filter(|rs| {
            rs.spec
                .as_ref()
                .and_then(|s| s.template.as_ref())
                .is_some_and(|t| equal_ignore_hash(t, template))
        })
        .min_by_key(|rs| rs.metadata.creation_timestamp.as_ref().map(|t| t.0))
}

/// The other ReplicaSets that still have pods (kubectl's "required" old ReplicaSets).
pub fn old_replica_sets<'a>(
    deployment: &Deployment,
    sets: &'a [ReplicaSet],
) -> Vec<&'a ReplicaSet> {
    let new_name = new_replica_set(deployment, sets).and_then(|rs| rs.metadata.name.clone());
    sets.iter()
        .filter(|rs| rs.metadata.name != new_name || new_name.is_none())
        .filter(|rs| rs.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0) != 0)
        .collect()
}

/// `app=web,tier in (a,b),!canary` (metav1's `FormatLabelSelector`; `<none>` when empty).
pub fn format_selector(selector: Option<&LabelSelector>) -> String {
    let Some(selector) = selector else {
        return "<none>".to_string();
    };
    let mut parts: Vec<String> = selector
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for expression in selector.match_expressions.iter().flatten() {
        let values = expression.values.clone().unwrap_or_default().join(",");
        let key = &expression.key;
        parts.push(match expression.operator.as_str() {
            "In" => format!("{key} in ({values})"),
            "NotIn" => format!("{key} notin ({values})"),
            "Exists" => key.clone(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other} ({values})"),
        });
    }
    if parts.is_empty() {
        "<none>".to_string()
    } else {
        parts.join(",")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rs(name: &str, revision: &str, hash: &str, image: &str, replicas: i32) -> ReplicaSet {
        serde_json::from_value(json!({
            "metadata": {"name": name, "creationTimestamp": format!("2026-11-25T10:00:0{revision}Z"),
                "annotations": {REVISION: revision}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web", POD_TEMPLATE_HASH: hash}},
                "spec": {"containers": [{"name": "main", "image": image}]}}},
        }))
        .unwrap()
    }

    fn deployment(image: &str) -> Deployment {
        serde_json::from_value(json!({
            "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "main", "image": image}]}}},
        }))
        .unwrap()
    }

    #[test]
    fn the_new_replica_set_matches_the_template_ignoring_the_hash() {
        let sets = [
            rs("web-a", "1", "a", "v1", 0),
            rs("web-b", "2", "b", "v2", 3),
        ];
        let d = deployment("v2");
        assert_eq!(
            new_replica_set(&d, &sets).and_then(|r| r.metadata.name.as_deref()),
            Some("web-b")
        );
        assert!(old_replica_sets(&d, &sets).is_empty(), "web-a has no pods");
        assert_eq!(revision(&sets[1]), Some(2));
    }

    #[test]
    fn arguments_are_kind_slash_name_or_kind_then_name() {
        let args = |list: &[&str]| list.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (info, name) = kind_and_name(&args(&["deploy/web"])).unwrap();
        assert_eq!((info.kind, name.as_str()), ("Deployment", "web"));
        let (info, name) = kind_and_name(&args(&["rs", "web-1"])).unwrap();
        assert_eq!((info.kind, name.as_str()), ("ReplicaSet", "web-1"));
        assert!(kind_and_name(&args(&["deploy"])).is_err());
    }

    #[test]
    fn selectors_print_as_kubectl_formats_them() {
        let selector: LabelSelector = serde_json::from_value(json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "canary", "operator": "DoesNotExist"}],
        }))
        .unwrap();
        assert_eq!(
            format_selector(Some(&selector)),
            "app=web,tier in (a,b),!canary"
        );
        assert_eq!(format_selector(None), "<none>");
    }
}
