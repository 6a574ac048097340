//! The request floor: what a request names and carries, parsed once, below every handler.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/endpoints/request/requestinfo.go` (which parses
//! a path back into namespace, resource, name and subresource) and the decoding helpers of
//! `k8s.io/apiserver/pkg/endpoints/handlers/rest.go`. Handlers, the watch server and the log proxy
//! all read requests through this module and none of them imports another to do so: imports
//! point down, from `handlers` to `request`, `registry` and `storage`.
//!
//! - [`Target`]: the kind, namespace, name and subresource a path names, and its storage key;
//! - [`query`]: the query parameters and `ListOptions`;
//! - [`body`]: JSON, YAML and protobuf bodies;
//! - [`selection`]: label and field selectors applied to stored objects.
//!
//! Storage keys follow etcd's layout: `/registry/{plural}/{namespace}/{name}`, or
//! `/registry/{plural}/{name}` for cluster-scoped kinds; a custom kind's plural is prefixed with
//! its group (`/registry/stable.example.com/crontabs/…`), as upstream's CRD storage does.

pub mod body;
pub mod query;
pub mod selection;

use axum::body::Bytes;
use axum::http::HeaderMap;
use minik_api::resource::{by_plural, is_builtin, ResourceInfo};

use query::Params;

/// What a resource path names.
#[derive(Clone, Debug)]
pub struct Target {
    /// The kind.
    pub info: &'static ResourceInfo,
    /// The namespace from the path (`None` for cluster-scoped kinds and cluster-wide lists).
    pub namespace: Option<String>,
    /// The object's name, if the path names one.
    pub name: Option<String>,
    /// `status`, `binding`, `log` …
    pub subresource: Option<String>,
}

/// The storage key of one object.
pub fn storage_key(info: &ResourceInfo, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) if info.namespaced => {
            format!("/registry/{}/{namespace}/{name}", key_resource(info))
        }
        _ => format!("/registry/{}/{name}", key_resource(info)),
    }
}

/// The resource part of a key: the plural, or `group/plural` for a custom kind.
fn key_resource(info: &ResourceInfo) -> String {
    if is_builtin(info) {
        info.plural.to_string()
    } else {
        format!("{}/{}", info.group(), info.plural)
    }
}

impl Target {
    /// The key of the named object (the name must be present).
    pub fn key(&self) -> String {
        storage_key(
            self.info,
            self.namespace.as_deref(),
            self.name.as_deref().unwrap_or(""),
        )
    }

    /// The key prefix covering what a list or watch of this path sees.
    pub fn prefix(&self) -> String {
        match &self.namespace {
            Some(namespace) if self.info.namespaced => {
                format!("/registry/{}/{namespace}/", key_resource(self.info))
            }
            _ => format!("/registry/{}/", key_resource(self.info)),
        }
    }

    /// The name, or "" when the path names none.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }
}

/// Parses the segments after `/api/v1` or `/apis/{group}/{version}`.
pub fn parse_target(group: &str, rest: &str) -> Option<Target> {
    parse_target_with(rest, |plural| by_plural(group, plural))
}

/// Parses the segments after the group version, `lookup` finding the kind of a plural (custom
/// kinds are found in the server's table, `apiextensions/kinds.rs`).
pub fn parse_target_with(
    rest: &str,
    lookup: impl Fn(&str) -> Option<&'static ResourceInfo>,
) -> Option<Target> {
    let segments: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    let owned = |s: Option<&&str>| s.map(|s| s.to_string());
    if segments.len() >= 3 && segments[0] == "namespaces" {
        if let Some(info) = lookup(segments[2]).filter(|info| info.namespaced) {
            if segments.len() > 5 {
                return None;
            }
            return Some(Target {
                info,
                namespace: Some(segments[1].to_string()),
                name: owned(segments.get(3)),
                subresource: owned(segments.get(4)),
            });
        }
    }
    let info = lookup(segments.first()?)?;
    if segments.len() > 3 || (info.namespaced && segments.len() > 1) {
        return None;
    }
    Some(Target {
        info,
        namespace: None,
        name: owned(segments.get(1)),
        subresource: owned(segments.get(2)),
    })
}

/// One API request, parsed.
pub struct ApiRequest {
    /// What the path names.
    pub target: Target,
    /// The query.
    pub params: Params,
    /// The request headers.
    pub headers: HeaderMap,
    /// The raw body.
    pub body: Bytes,
    /// Who sent it (`None` on a server without authentication).
    pub user: Option<crate::auth::UserInfo>,
}

impl ApiRequest {
    /// The Content-Type header, if any.
    pub fn content_type(&self) -> Option<&str> {
        self.headers
            .get(axum::http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_parse_into_kind_namespace_name_and_subresource() {
        let t = parse_target("", "namespaces/default/pods/web/status").unwrap();
        assert_eq!(
            (
                t.info.plural,
                t.namespace.as_deref(),
                t.name(),
                t.subresource.as_deref()
            ),
            ("pods", Some("default"), "web", Some("status"))
        );
        assert_eq!(t.key(), "/registry/pods/default/web");
        let all = parse_target("", "pods").unwrap();
        assert_eq!(
            (all.namespace.clone(), all.prefix()),
            (None, "/registry/pods/".to_string())
        );
        let node = parse_target("", "nodes/node-1/status").unwrap();
        assert_eq!(node.key(), "/registry/nodes/node-1");
        let ns = parse_target("", "namespaces/default").unwrap();
        assert_eq!((ns.info.plural, ns.name()), ("namespaces", "default"));
        let lease = parse_target(
            "coordination.k8s.io",
            "namespaces/kube-node-lease/leases/node-1",
        )
        .unwrap();
        assert_eq!(lease.key(), "/registry/leases/kube-node-lease/node-1");
        assert!(
            parse_target("", "pods/web").is_none(),
            "namespaced kinds need a namespace for a name"
        );
        assert!(parse_target("", "deployments").is_none());
        assert!(parse_target("", "namespaces/default/nodes/x").is_none());
    }
}
