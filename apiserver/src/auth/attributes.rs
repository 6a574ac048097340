//! Request attributes: what a request asks to do, in the terms authorizers decide on.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`
//! (`RequestInfoFactory.NewRequestInfo`) and `authorization/authorizer/interfaces.go`
//! (`AttributesRecord`). The verb comes from the method, the name and `watch`
//! (docs/security.md#n6); paths with fewer than three segments (`/api`, `/api/v1`, `/apis/g/v`)
//! and everything outside `/api` and `/apis` are non-resource requests whose verb is the lowercase
//! method.
//!
//! As upstream, a list or watch whose field selector is exactly `metadata.name=NAME` names that
//! one object, so the Node authorizer and RBAC `resourceNames` can allow it.
//!
//! What minik simplifies: no legacy `/api/v1/watch/…` paths, no `proxy` verb, no label
//! selectors in the attributes.

use super::UserInfo;

/// Who asks to do what.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Attributes {
    /// The user asking.
    pub user: UserInfo,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, or
    /// for non-resource requests the lowercase HTTP method.
    pub verb: String,
    /// False for non-resource paths (`/healthz`, `/api`, `/version`).
    pub resource_request: bool,
    /// The request path (what non-resource rules match).
    pub path: String,
    /// The API group (`""` for core).
    pub api_group: String,
    /// `pods`.
    pub resource: String,
    /// `status`, `log`, `binding`, or empty.
    pub subresource: String,
    /// Empty for cluster-scoped requests.
    pub namespace: String,
    /// Empty for collections and creates.
    pub name: String,
}

impl Default for UserInfo {
    fn default() -> Self {
        super::authn::anonymous()
    }
}

/// The attributes of `method path?query` sent by `user`.
pub fn request_attributes(user: UserInfo, method: &str, path: &str, query: &str) -> Attributes {
    let mut attributes = Attributes {
        user,
        verb: method.to_ascii_lowercase(),
        path: path.to_string(),
        ..Attributes::default()
    };
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, rest) = match segments.as_slice() {
        ["api", _version, rest @ ..] => ("", rest),
        ["apis", group, _version, rest @ ..] => (*group, rest),
        _ => return attributes,
    };
    if rest.is_empty() || rest.iter().any(|s| s.is_empty()) {
        return attributes;
    }
    let mut parts = rest;
    if parts[0] == "namespaces" && parts.len() > 1 {
        attributes.namespace = parts[1].to_string();
        // `namespaces/{ns}/status` and `/finalize` are the namespace's own subresources.
        if parts.len() > 2 && !matches!(parts[2], "status" | "finalize") {
            parts = &parts[2..];
        }
    }
    attributes.resource_request = true;
    attributes.api_group = group.to_string();
    attributes.resource = parts[0].to_string();
    attributes.name = parts.get(1).copied().unwrap_or("").to_string();
    attributes.subresource = parts.get(2).copied().unwrap_or("").to_string();
    attributes.verb = resource_verb(method, !attributes.name.is_empty(), is_watch(query));
    if matches!(attributes.verb.as_str(), "list" | "watch") {
        attributes.name = selected_name(query).unwrap_or_default();
    }
    attributes
}

/// The name a `fieldSelector` of exactly `metadata.name=NAME` (or `==`) requires, as upstream's
/// `RequestInfoFactory` reads it for list and watch.
fn selected_name(query: &str) -> Option<String> {
    let uri: axum::http::Uri = format!("/?{query}").parse().ok()?;
    let axum::extract::Query(pairs) =
        axum::extract::Query::<Vec<(String, String)>>::try_from_uri(&uri).ok()?;
    let (_, text) = pairs.iter().find(|(k, _)| k == "fieldSelector")?;
    let selector = minik_api::selector::FieldSelector::parse(text).ok()?;
    match selector.requirements() {
        [only] if only.field == "metadata.name" && only.equal && !only.value.is_empty() => {
            Some(only.value.clone())
        }
        _ => None,
    }
}

fn resource_verb(method: &str, named: bool, watch: bool) -> String {
    let verb = match method {
        "GET" | "HEAD" if watch => "watch",
        "GET" | "HEAD" if named => "get",
        "GET" | "HEAD" => "list",
        "POST" => "create",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" if named => "delete",
        "DELETE" => "deletecollection",
        other => return other.to_ascii_lowercase(),
    };
    verb.to_string()
}

/// `watch=true` or `watch=1` (any value but `false`/`0` counts, as upstream's `ParseBool`-ish).
fn is_watch(query: &str) -> bool {
    query.split('&').any(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        key == "watch" && matches!(value, "true" | "1" | "True" | "TRUE" | "t" | "T")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(
        method: &str,
        path: &str,
        query: &str,
    ) -> (String, bool, String, String, String, String, String) {
        let a = request_attributes(UserInfo::default(), method, path, query);
        (
            a.verb,
            a.resource_request,
            a.api_group,
            a.resource,
            a.subresource,
            a.namespace,
            a.name,
        )
    }

    fn owned(
        v: (&str, bool, &str, &str, &str, &str, &str),
    ) -> (String, bool, String, String, String, String, String) {
        (
            v.0.into(),
            v.1,
            v.2.into(),
            v.3.into(),
            v.4.into(),
            v.5.into(),
            v.6.into(),
        )
    }

    /// docs/security.md#n6, case by case.
    #[test]
    fn paths_and_methods_become_attributes() {
        let cases = [
            (
                ("GET", "/api/v1/pods", ""),
                ("list", true, "", "pods", "", "", ""),
            ),
            (
                ("GET", "/api/v1/namespaces/default/pods", "watch=true"),
                ("watch", true, "", "pods", "", "default", ""),
            ),
            (
                ("GET", "/api/v1/namespaces/default/pods/web", ""),
                ("get", true, "", "pods", "", "default", "web"),
            ),
            (
                ("GET", "/api/v1/namespaces/default/pods/web/log", ""),
                ("get", true, "", "pods", "log", "default", "web"),
            ),
            (
                ("POST", "/api/v1/namespaces/default/pods/web/binding", ""),
                ("create", true, "", "pods", "binding", "default", "web"),
            ),
            (
                ("PATCH", "/api/v1/nodes/node-1/status", ""),
                ("patch", true, "", "nodes", "status", "", "node-1"),
            ),
            (
                (
                    "PUT",
                    "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1",
                    "",
                ),
                (
                    "update",
                    true,
                    "coordination.k8s.io",
                    "leases",
                    "",
                    "kube-node-lease",
                    "n1",
                ),
            ),
            (
                ("DELETE", "/api/v1/namespaces/default/pods", ""),
                ("deletecollection", true, "", "pods", "", "default", ""),
            ),
            (
                ("DELETE", "/api/v1/namespaces/default/pods/web", ""),
                ("delete", true, "", "pods", "", "default", "web"),
            ),
            (
                ("GET", "/api/v1/namespaces/team", ""),
                ("get", true, "", "namespaces", "", "team", "team"),
            ),
            (
                ("PUT", "/api/v1/namespaces/team/finalize", ""),
                ("update", true, "", "namespaces", "finalize", "team", "team"),
            ),
            (
                (
                    "POST",
                    "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                    "",
                ),
                (
                    "create",
                    true,
                    "authorization.k8s.io",
                    "selfsubjectaccessreviews",
                    "",
                    "",
                    "",
                ),
            ),
            (
                (
                    "GET",
                    "/api/v1/namespaces/default/secrets",
                    "fieldSelector=metadata.name%3Dtoken&watch=true",
                ),
                ("watch", true, "", "secrets", "", "default", "token"),
            ),
            (
                (
                    "GET",
                    "/api/v1/namespaces/default/secrets",
                    "fieldSelector=metadata.name%3Dtoken%2Ctype%3Dx",
                ),
                ("list", true, "", "secrets", "", "default", ""),
            ),
            (("GET", "/api", ""), ("get", false, "", "", "", "", "")),
            (("GET", "/api/v1", ""), ("get", false, "", "", "", "", "")),
            (
                ("GET", "/apis/apps/v1", ""),
                ("get", false, "", "", "", "", ""),
            ),
            (("GET", "/healthz", ""), ("get", false, "", "", "", "", "")),
            (
                ("POST", "/version", ""),
                ("post", false, "", "", "", "", ""),
            ),
        ];
        for ((method, path, query), expected) in cases {
            assert_eq!(
                attrs(method, path, query),
                owned(expected),
                "{method} {path}?{query}"
            );
        }
    }
}
