//! `/version` and API discovery: how kubectl learns what this server serves.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/endpoints/discovery/{legacy,root,group,version}.go`
//! and `pkg/version` (`version.Info`). kubectl asks `/api`, `/apis` and `/api/v1` before any verb,
//! learns from the `APIResourceList` that `po` means pods and that nodes are cluster-scoped, and
//! picks its own minor version from `/version` (docs/real-clients.md#version, #discovery). The
//! legacy (unaggregated) documents here are the one source of truth: `/api` and `/apis` answer
//! the aggregated `apidiscovery.k8s.io/v2` form, built from them, when asked
//! (`discovery_aggregated.rs`).

use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use minik_api::resource::{ResourceInfo, RESOURCES};
use minik_api::status;
use serde_json::{json, Value};

use crate::discovery_aggregated as aggregated;
use crate::error::{json_response, ApiError, ApiResult};
use crate::registry::has_delete_collection;
use crate::AppState;

/// The version minik reports: kubectl 1.32 is the reference client.
pub const GIT_VERSION: &str = "v1.32.0-minik";

/// `GET /version` with every field of `version.Info`.
pub async fn version() -> Response {
    let info = json!({
        "major": "1", "minor": "32", "gitVersion": GIT_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.23.0 (minik is written in Rust)",
        "compiler": "rustc", "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    });
    json_response(StatusCode::OK, &info)
}

/// `GET /api`: the core group's versions, or its aggregated document when asked.
pub async fn api_versions(headers: HeaderMap) -> Response {
    let form = aggregated::negotiate(accept(&headers));
    if form != aggregated::Form::Legacy {
        return aggregated::respond(form, aggregated::core_items(), &headers);
    }
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("127.0.0.1:6443");
    // `clientCIDR: 0.0.0.0/0` is upstream's "any client" rule in this discovery answer; it names
    // no address minik binds or connects to (the server address is the loopback one asked for).
    let body = json!({
        "kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
    });
    json_response(StatusCode::OK, &body)
}

fn accept(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::ACCEPT).and_then(|v| v.to_str().ok())
}

/// The named groups minik serves (everything outside core).
fn named_groups() -> Vec<&'static str> {
    let mut groups: Vec<&'static str> = RESOURCES
        .iter()
        .filter(|r| !r.group().is_empty())
        .map(|r| r.api_version)
        .collect();
    // First-seen order; a group's kinds need not be adjacent in `RESOURCES`.
    let mut seen = std::collections::HashSet::new();
    groups.retain(|group| seen.insert(*group));
    groups
}

/// `GET /apis`: the named groups (coordination.k8s.io for Leases), then the aggregated ones
/// (an APIService naming a service: `metrics.k8s.io`), then the custom ones; or all of them with
/// their resources (`apidiscovery.k8s.io/v2`) when asked.
pub async fn api_groups(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let form = aggregated::negotiate(accept(&headers));
    if form != aggregated::Form::Legacy {
        let items = aggregated::apis_items(&state).await;
        return aggregated::respond(form, items, &headers);
    }
    json_response(
        StatusCode::OK,
        &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": group_list(&state)}),
    )
}

/// The `APIGroup`s of `/apis`, each with its versions, the preferred one first.
pub fn group_list(state: &AppState) -> Vec<Value> {
    let aggregated: Vec<(String, String)> = crate::aggregator::remote_api_services(state)
        .iter()
        .filter_map(|s| {
            let field = |f: &str| s.pointer(&format!("/spec/{f}"))?.as_str().map(String::from);
            Some((field("group")?, field("version")?))
        })
        .collect();
    named_groups()
        .into_iter()
        .filter_map(|gv| gv.split_once('/'))
        .map(|(group, version)| (group.to_string(), version.to_string()))
        .chain(aggregated)
        // events.k8s.io/v1, served by conversion of the core/v1 Events (`events_v1.rs`).
        .chain(std::iter::once((
            "events.k8s.io".to_string(),
            "v1".to_string(),
        )))
        .map(|(group, version)| {
            let gv = json!({"groupVersion": format!("{group}/{version}"), "version": version});
            let mut versions = vec![gv.clone()];
            if group == "autoscaling" {
                // v1 HorizontalPodAutoscalers, converted (`autoscaling_v1.rs`); v2 preferred.
                versions.push(json!({"groupVersion": "autoscaling/v1", "version": "v1"}));
            }
            json!({"name": group, "versions": versions, "preferredVersion": gv})
        })
        // The groups CustomResourceDefinitions add (issue 21).
        .chain(crate::apiextensions::discovery::groups(&state.custom))
        .collect()
}

/// The `APIResourceList` of a group version this server serves itself (not an APIService's).
pub fn local_resource_list(state: &AppState, group_version: &str) -> Option<Value> {
    if let Some(list) = crate::apiextensions::discovery::resource_list(&state.custom, group_version)
    {
        return Some(list);
    }
    match group_version {
        "events.k8s.io/v1" => Some(crate::events_v1::resource_list()),
        "autoscaling/v1" => Some(crate::autoscaling_v1::resource_list()),
        _ if named_groups().contains(&group_version) => Some(resource_list(group_version)),
        _ => None,
    }
}

const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

fn resource_entry(info: &ResourceInfo) -> Value {
    let verbs: Vec<&str> = ALL_VERBS
        .iter()
        .copied()
        .filter(|v| *v != "deletecollection" || has_delete_collection(info.kind))
        .collect();
    let mut entry = json!({
        "name": info.plural, "singularName": info.singular, "namespaced": info.namespaced,
        "kind": info.kind, "verbs": verbs,
    });
    if !info.short_names.is_empty() {
        entry["shortNames"] = json!(info.short_names);
    }
    if matches!(
        info.kind,
        "Pod" | "Service" | "Deployment" | "ReplicaSet" | "Job"
            // The later workload controllers (issue 20).
            | "ReplicationController" | "DaemonSet" | "CronJob" | "StatefulSet"
    ) {
        entry["categories"] = json!(["all"]);
    }
    entry
}

fn subresource_entry(info: &ResourceInfo, sub: &str, kind: &str, verbs: &[&str]) -> Value {
    json!({"name": format!("{}/{sub}", info.plural), "singularName": "", "namespaced": info.namespaced, "kind": kind, "verbs": verbs})
}

/// The APIResourceList of one group version.
pub fn resource_list(group_version: &str) -> Value {
    let mut resources = Vec::new();
    for info in RESOURCES.iter().filter(|r| r.api_version == group_version) {
        resources.push(resource_entry(info));
        if crate::registry::has_status_subresource(info.kind) {
            resources.push(subresource_entry(
                info,
                "status",
                info.kind,
                &["get", "patch", "update"],
            ));
        }
        if crate::registry::scale::has_scale_subresource(info.kind) {
            let mut scale = subresource_entry(info, "scale", "Scale", &["get", "patch", "update"]);
            // The scale client finds the Scale's own group version here.
            scale["group"] = json!("autoscaling");
            scale["version"] = json!("v1");
            resources.push(scale);
        }
        if info.kind == "Pod" {
            resources.push(subresource_entry(info, "binding", "Binding", &["create"]));
            resources.push(subresource_entry(info, "log", "Pod", &["get"]));
            let verbs = &["get", "patch", "update"];
            resources.push(subresource_entry(info, "ephemeralcontainers", "Pod", verbs));
            // Upstream's streaming subresources answer get and create (WebSocket and SPDY).
            for (stream, kind) in [
                ("exec", "PodExecOptions"),
                ("attach", "PodAttachOptions"),
                ("portforward", "PodPortForwardOptions"),
            ] {
                resources.push(subresource_entry(info, stream, kind, &["create", "get"]));
            }
            // kubectl drain looks for this entry, and takes the Eviction's group version from it.
            let mut eviction = subresource_entry(info, "eviction", "Eviction", &["create"]);
            eviction["group"] = json!("policy");
            eviction["version"] = json!("v1");
            resources.push(eviction);
        }
    }
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources})
}

/// `GET /api/v1`.
pub async fn core_v1() -> Response {
    json_response(StatusCode::OK, &resource_list("v1"))
}

/// `GET /apis/{group}/{version}`.
pub async fn group_version(
    State(state): State<AppState>,
    Path((group, version)): Path<(String, String)>,
) -> ApiResult<Response> {
    let group_version = format!("{group}/{version}");
    match local_resource_list(&state, &group_version) {
        Some(list) => Ok(json_response(StatusCode::OK, &list)),
        None => Err(ApiError::from(status::failure(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_named_group_version_is_listed_once() {
        let groups = named_groups();
        let unique: std::collections::BTreeSet<_> = groups.iter().collect();
        assert_eq!(groups.len(), unique.len(), "{groups:?}");
        let apps = resource_list("apps/v1");
        let names: Vec<&str> = apps["resources"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| r["name"].as_str())
            .collect();
        assert!(names.contains(&"daemonsets") && names.contains(&"deployments/scale"));
    }

    #[test]
    fn core_resource_list_names_short_names_and_categories() {
        let list = resource_list("v1");
        let resources = list["resources"].as_array().unwrap();
        let pods = resources.iter().find(|r| r["name"] == "pods").unwrap();
        assert_eq!(pods["shortNames"], json!(["po"]));
        assert_eq!(pods["categories"], json!(["all"]));
        let sub = |name: &str| resources.iter().find(|r| r["name"] == name).cloned();
        assert_eq!(sub("pods/binding").unwrap()["verbs"], json!(["create"]));
        assert_eq!(sub("pods/log").unwrap()["verbs"], json!(["get"]));
        assert_eq!(
            sub("pods/status").unwrap()["verbs"],
            json!(["get", "patch", "update"])
        );
        assert_eq!(sub("nodes/status").unwrap()["namespaced"], false);
        let services = sub("services").unwrap();
        assert_eq!(
            (
                services["shortNames"].clone(),
                services["categories"].clone()
            ),
            (json!(["svc"]), json!(["all"]))
        );
        assert_eq!(sub("endpoints").unwrap()["singularName"], "endpoints");
        let nodes = resources.iter().find(|r| r["name"] == "nodes").unwrap();
        assert_eq!(nodes["namespaced"], false);
        assert!(nodes["verbs"]
            .as_array()
            .unwrap()
            .contains(&json!("deletecollection")));
        let namespaces = sub("namespaces").unwrap();
        assert_eq!(
            namespaces["verbs"],
            json!(["create", "delete", "get", "list", "patch", "update", "watch"])
        );
        assert!(resources.iter().all(|r| r["name"] != "leases"));
    }
}
