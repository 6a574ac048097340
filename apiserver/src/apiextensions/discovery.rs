//! Discovery of custom kinds: their groups in `/apis` and their `APIResourceList`s.
//!
//! Kubernetes counterpart: `staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_discovery_controller.go`,
//! which rebuilds the group and version documents whenever a CRD changes. A group lists the
//! versions its CRDs serve, the preferred one first (upstream's version priority: GA, then beta,
//! then alpha); a version lists each kind with its verbs, short names and categories (`kubectl get
//! all` reads `all` there), and its `/status` and `/scale` subresources.
//!
//! The aggregated (`apidiscovery.k8s.io/v2`) document is built from these lists
//! (`discovery_aggregated.rs`), with the CRD's own group and version in each `responseKind`.
//!
//! minik simplifies: no `storageVersionHash`.

use serde_json::{json, Value};

use super::kinds::{version_priority, CustomKind, Kinds};

const VERBS: [&str; 8] = [
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

/// The verbs a terminating CRD's kind no longer lists (`customresource_discovery_controller.go`).
const TERMINATING_DROPS: [&str; 3] = ["patch", "create", "update"];

/// The `APIGroup` entries of `/apis` for the custom groups.
pub fn groups(kinds: &Kinds) -> Vec<Value> {
    let mut by_group: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for kind in kinds.all() {
        let versions = by_group.entry(kind.group.clone()).or_default();
        if !versions.contains(&kind.version) {
            versions.push(kind.version.clone());
        }
    }
    by_group
        .into_iter()
        .map(|(group, mut versions)| {
            versions.sort_by(|a, b| version_priority(a, b));
            let entries: Vec<Value> = versions
                .iter()
                .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
                .collect();
            json!({"name": group, "versions": entries, "preferredVersion": entries[0].clone()})
        })
        .collect()
}

/// The `APIResourceList` of a custom group version, if a CRD serves it.
pub fn resource_list(kinds: &Kinds, group_version: &str) -> Option<Value> {
    let (group, version) = group_version.split_once('/')?;
    let served: Vec<std::sync::Arc<CustomKind>> = kinds
        .all()
        .into_iter()
        .filter(|k| k.group == group && k.version == version)
        .collect();
    if served.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for kind in served {
        let info = kind.info;
        // A terminating CRD takes no new objects: upstream drops the writing verbs.
        let verbs: Vec<&str> = VERBS
            .into_iter()
            .filter(|v| !kind.terminating || !TERMINATING_DROPS.contains(v))
            .collect();
        let mut entry = json!({"name": info.plural, "singularName": info.singular,
            "namespaced": info.namespaced, "kind": info.kind, "verbs": verbs});
        if !info.short_names.is_empty() {
            entry["shortNames"] = json!(info.short_names);
        }
        if !kind.categories.is_empty() {
            entry["categories"] = json!(kind.categories);
        }
        resources.push(entry);
        let sub = |name: &str, kind_name: &str| {
            json!({"name": format!("{}/{name}", info.plural), "singularName": "",
                   "namespaced": info.namespaced, "kind": kind_name, "verbs": ["get", "patch", "update"]})
        };
        if kind.status {
            resources.push(sub("status", info.kind));
        }
        if kind.scale.is_some() {
            let mut scale = sub("scale", "Scale");
            scale["group"] = json!("autoscaling");
            scale["version"] = json!("v1");
            resources.push(scale);
        }
    }
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}),
    )
}

/// `GET /apis/{group}`: the `APIGroup` of a custom group (built-in groups are not served here).
pub async fn group(
    axum::extract::State(state): axum::extract::State<crate::AppState>,
    axum::extract::Path(name): axum::extract::Path<String>,
) -> crate::error::ApiResult<axum::response::Response> {
    let found = groups(&state.custom)
        .into_iter()
        .find(|g| g["name"] == name.as_str());
    let Some(mut group) = found else {
        let message = "the server could not find the requested resource";
        return Err(minik_api::status::failure(404, "NotFound", message).into());
    };
    group["kind"] = json!("APIGroup");
    group["apiVersion"] = json!("v1");
    Ok(crate::error::json_response(
        axum::http::StatusCode::OK,
        &group,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apiextensions::controller::kinds_of;

    #[test]
    fn a_terminating_crd_lists_only_reading_and_deleting_verbs() {
        let crd = serde_json::from_value(json!({
            "metadata": {"name": "gadgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "gadgets", "kind": "Gadget"},
                     "versions": [{"name": "v1", "served": true, "storage": true}]}
        }))
        .expect("a CRD");
        let verbs = |terminating: bool| {
            let kinds = Kinds::default();
            kinds.replace("gadgets.example.com", kinds_of(&crd, terminating));
            resource_list(&kinds, "example.com/v1").expect("served")["resources"][0]["verbs"]
                .clone()
        };
        assert_eq!(verbs(false), json!(VERBS));
        assert_eq!(
            verbs(true),
            json!(["delete", "deletecollection", "get", "list", "watch"])
        );
    }
}
