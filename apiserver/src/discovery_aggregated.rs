//! Aggregated discovery (`apidiscovery.k8s.io/v2`): every group, version and resource in one
//! answer to `/api` and to `/apis`, instead of one request per group version.
//!
//! Kubernetes counterpart: `staging/src/k8s.io/apiserver/pkg/endpoints/discovery/aggregated`
//! (`wrapper.go` picks the aggregated document when `Accept` names
//! `g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`, `etag.go` adds `ETag`, `Vary: Accept`,
//! `Cache-Control: public` and answers a matching `If-None-Match` with 304), the types of
//! `k8s.io/api/apidiscovery/v2`, and `installer.go`'s `ConvertGroupVersionIntoToDiscovery`, which
//! turns a legacy `APIResourceList` into resources with their subresources folded in. kubectl and
//! client-go (1.30 and later) ask for v2, then v2beta1, then legacy JSON.
//!
//! minik builds the document on each request from the legacy documents of `discovery.rs` (one
//! source of truth, a few dozen kinds: microseconds), so a CRD is listed as soon as it is
//! served. An APIService's group version is fetched from its server at that moment (upstream's
//! aggregator keeps a cache refreshed in the background) and marked `Stale` if the server does
//! not answer. minik simplifies: JSON only (no protobuf form of the list), and groups keep the
//! legacy `/apis` order rather than upstream's APIService priorities.

use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use crate::AppState;

/// The discovery group, and the kind the aggregated document is asked for `as`.
const GROUP: &str = "apidiscovery.k8s.io";
const LIST_KIND: &str = "APIGroupDiscoveryList";

/// Which discovery document a request's `Accept` header asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// `APIVersions` / `APIGroupList`: plain `application/json`, or no preference.
    Legacy,
    /// `apidiscovery.k8s.io/v2`.
    V2,
    /// `apidiscovery.k8s.io/v2beta1` (same shape; clients before 1.30 ask for it).
    V2Beta1,
}

impl Form {
    fn version(self) -> &'static str {
        match self {
            Form::V2Beta1 => "v2beta1",
            _ => "v2",
        }
    }

    /// The `Content-Type` upstream answers with: the media type asked for, parameters in order.
    pub fn content_type(self) -> String {
        format!(
            "application/json;g={GROUP};v={};as={LIST_KIND}",
            self.version()
        )
    }
}

/// The form the first acceptable media range (highest `q` first, then in order) asks for.
/// Ranges minik cannot serve (protobuf, YAML, other kinds) are passed over; none at all means
/// legacy JSON, which minik answers whatever is asked.
pub fn negotiate(accept: Option<&str>) -> Form {
    let mut ranges: Vec<(f32, Option<Form>)> = accept
        .unwrap_or("")
        .split(',')
        .map(media_range)
        .filter(|(q, _)| *q > 0.0)
        .collect();
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0));
    ranges
        .into_iter()
        .find_map(|(_, form)| form)
        .unwrap_or(Form::Legacy)
}

/// One media range: its quality and the form it names, if minik serves that.
fn media_range(range: &str) -> (f32, Option<Form>) {
    let mut parts = range.split(';').map(str::trim);
    let base = parts.next().unwrap_or("").to_ascii_lowercase();
    let (mut q, mut g, mut v, mut kind) = (1.0, None, None, None);
    for parameter in parts {
        let Some((key, value)) = parameter.split_once('=') else {
            continue;
        };
        let value = value.trim().trim_matches('"');
        match key.trim() {
            "q" => q = value.parse().unwrap_or(1.0),
            "g" => g = Some(value),
            "v" => v = Some(value),
            "as" => kind = Some(value),
            _ => {}
        }
    }
    let form = match (base.as_str(), g, v, kind) {
        ("application/json", Some(GROUP), Some("v2"), Some(LIST_KIND)) => Some(Form::V2),
        ("application/json", Some(GROUP), Some("v2beta1"), Some(LIST_KIND)) => Some(Form::V2Beta1),
        ("application/json" | "application/*" | "*/*", None, None, None) => Some(Form::Legacy),
        _ => None,
    };
    (q, form)
}

/// A legacy `APIResourceList`'s entries as `APIResourceDiscovery`s: each resource with its
/// subresources folded in. `kind_version` fills an empty `responseKind` group and version (the
/// CRD discovery controller names them; built-in resources leave them empty, as upstream).
pub fn resources(list: &Value, kind_version: Option<(&str, &str)>) -> Vec<Value> {
    let entries = list["resources"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let response_kind = |entry: &Value| {
        let field = |name: &str, default: &str| {
            let value = entry[name].as_str().unwrap_or("");
            if value.is_empty() { default } else { value }.to_string()
        };
        let (group, version) = kind_version.unwrap_or(("", ""));
        json!({"group": field("group", group), "version": field("version", version),
               "kind": field("kind", "")})
    };
    let scope = |entry: &Value| match entry["namespaced"].as_bool() {
        Some(true) => "Namespaced",
        _ => "Cluster",
    };
    let mut out: Vec<Value> = Vec::new();
    for entry in entries.iter().filter(|e| !name_of(e).contains('/')) {
        let mut resource = json!({
            "resource": name_of(entry), "responseKind": response_kind(entry), "scope": scope(entry),
            "singularResource": entry["singularName"].as_str().unwrap_or(""),
            "verbs": entry["verbs"].clone(),
        });
        for list_field in ["shortNames", "categories"] {
            if entry[list_field].as_array().is_some_and(|l| !l.is_empty()) {
                resource[list_field] = entry[list_field].clone();
            }
        }
        out.push(resource);
    }
    for entry in entries {
        let Some((parent, sub)) = name_of(entry).split_once('/') else {
            continue;
        };
        let subresource = json!({"subresource": sub, "responseKind": response_kind(entry),
                                 "verbs": entry["verbs"].clone()});
        match out.iter_mut().find(|r| r["resource"] == parent) {
            Some(resource) => match resource["subresources"].as_array_mut() {
                Some(subs) => subs.push(subresource),
                None => resource["subresources"] = json!([subresource]),
            },
            // A subresource without its resource gets an empty parent, as upstream.
            None => out.push(
                json!({"resource": parent, "responseKind": {}, "scope": scope(entry),
                                    "subresources": [subresource]}),
            ),
        }
    }
    out
}

fn name_of(entry: &Value) -> &str {
    entry["name"].as_str().unwrap_or("")
}

/// One `APIVersionDiscovery`: `Current`, or `Stale` when its server could not be asked.
pub fn version_entry(version: &str, resources: Vec<Value>, current: bool) -> Value {
    let freshness = if current { "Current" } else { "Stale" };
    let mut entry = json!({"version": version, "freshness": freshness});
    if !resources.is_empty() {
        entry["resources"] = json!(resources);
    }
    entry
}

/// One `APIGroupDiscovery`; the core group has no name.
pub fn group_entry(name: &str, versions: Vec<Value>) -> Value {
    let metadata = if name.is_empty() {
        json!({})
    } else {
        json!({"name": name})
    };
    json!({"metadata": metadata, "versions": versions})
}

/// The `APIGroupDiscoveryList` of `items`.
pub fn document(form: Form, items: Vec<Value>) -> Value {
    json!({"kind": LIST_KIND, "apiVersion": format!("{GROUP}/{}", form.version()),
           "metadata": {}, "items": items})
}

/// Serves the document with upstream's caching headers (`etag.go`).
pub fn respond(form: Form, items: Vec<Value>, headers: &HeaderMap) -> Response {
    let bytes = serde_json::to_vec(&document(form, items)).unwrap_or_default();
    let etag = format!("\"{}\"", crate::openapi::hash_of(&bytes));
    let unchanged = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == etag);
    let mut response = if unchanged {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (StatusCode::OK, bytes).into_response()
    };
    let out = response.headers_mut();
    if !unchanged {
        if let Ok(value) = HeaderValue::from_str(&form.content_type()) {
            out.insert(header::CONTENT_TYPE, value);
        }
    }
    if let Ok(value) = HeaderValue::from_str(&etag) {
        out.insert(header::ETAG, value);
    }
    out.insert(header::VARY, HeaderValue::from_static("Accept"));
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static("public"));
    response
}

/// `/api`'s items: the core group, whose one version is `v1`.
pub fn core_items() -> Vec<Value> {
    let resources = resources(&crate::discovery::resource_list("v1"), None);
    vec![group_entry("", vec![version_entry("v1", resources, true)])]
}

/// `/apis`' items: every group of the legacy `APIGroupList`, in its order, each version with
/// the resources of its legacy `APIResourceList` (fetched from the server of an APIService).
pub async fn apis_items(state: &AppState) -> Vec<Value> {
    let groups = crate::discovery::group_list(state);
    let versions = groups.iter().map(|group| {
        let name = group["name"].as_str().unwrap_or("");
        let versions = group["versions"].as_array().cloned().unwrap_or_default();
        futures::future::join_all(versions.into_iter().map(move |v| async move {
            let version = v["version"].as_str().unwrap_or("");
            version_of(state, name, version).await
        }))
    });
    let versions = futures::future::join_all(versions).await;
    groups
        .iter()
        .zip(versions)
        .map(|(group, versions)| group_entry(group["name"].as_str().unwrap_or(""), versions))
        .collect()
}

async fn version_of(state: &AppState, group: &str, version: &str) -> Value {
    let group_version = format!("{group}/{version}");
    if let Some(list) = crate::discovery::local_resource_list(state, &group_version) {
        let custom = state.custom.serves(group, version);
        let resources = resources(&list, custom.then_some((group, version)));
        return version_entry(version, resources, true);
    }
    match crate::aggregator::fetch_resource_list(state, group, version).await {
        Ok(list) => version_entry(version, resources(&list, None), true),
        Err(error) => {
            let why = error.0.message.as_deref().unwrap_or("");
            tracing::info!(%group_version, why, "aggregated server's discovery unavailable: stale");
            version_entry(version, Vec::new(), false)
        }
    }
}

#[cfg(test)]
#[path = "discovery_aggregated_tests.rs"]
mod tests;
