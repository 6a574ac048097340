//! Request parameters: what goes into the query string (list, watch, logs) or the body (delete, patch).
//!
//! Kubernetes counterpart: `metav1.ListOptions`, `metav1.DeleteOptions` and `corev1.PodLogOptions`
//! (`staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/types.go`), and kube-rs's `ListParams`,
//! `DeleteParams`, `Patch` and `LogParams` (`kube-core/src/params.rs`). The query names are the wire
//! names: `labelSelector`, `fieldSelector`, `limit`, `continue`, `timeoutSeconds`,
//! `allowWatchBookmarks`; the log ones are `container`, `follow`, `tailLines`, `previous`, `timestamps`.

use serde_json::{json, Value};

/// Options of a list or a watch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListParams {
    /// `app=web,tier!=db`.
    pub label_selector: Option<String>,
    /// `spec.nodeName=node-1`, `metadata.name=web`.
    pub field_selector: Option<String>,
    /// At most this many items per page (the server may ignore it and send everything).
    pub limit: Option<u32>,
    /// The `metadata.continue` token of the previous page.
    pub continue_token: Option<String>,
    /// For a watch: the server ends the stream after this many seconds.
    pub timeout_seconds: Option<u32>,
    /// For a watch: ask for BOOKMARK events, which keep a quiet watch's resourceVersion fresh.
    pub bookmarks: bool,
}

impl ListParams {
    /// Only objects whose labels match `selector`.
    pub fn labels(mut self, selector: &str) -> Self {
        self.label_selector = Some(selector.to_string());
        self
    }

    /// Only objects whose fields match `selector`.
    pub fn fields(mut self, selector: &str) -> Self {
        self.field_selector = Some(selector.to_string());
        self
    }

    /// Pages of at most `limit` items.
    pub fn limit(mut self, limit: u32) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Watches end after `seconds`.
    pub fn timeout(mut self, seconds: u32) -> Self {
        self.timeout_seconds = Some(seconds);
        self
    }

    /// Ask for bookmarks on watches.
    pub fn bookmarks(mut self, enabled: bool) -> Self {
        self.bookmarks = enabled;
        self
    }

    /// The query pairs of a list request.
    pub(crate) fn list_query(&self) -> Vec<(&'static str, String)> {
        let mut query = self.selector_query();
        if let Some(limit) = self.limit {
            query.push(("limit", limit.to_string()));
        }
        if let Some(token) = &self.continue_token {
            query.push(("continue", token.clone()));
        }
        query
    }

    /// The query pairs of a watch request starting after `resource_version`.
    pub(crate) fn watch_query(&self, resource_version: &str) -> Vec<(&'static str, String)> {
        let mut query = vec![("watch", "true".to_string())];
        query.extend(self.selector_query());
        if !resource_version.is_empty() {
            query.push(("resourceVersion", resource_version.to_string()));
        }
        if let Some(seconds) = self.timeout_seconds {
            query.push(("timeoutSeconds", seconds.to_string()));
        }
        if self.bookmarks {
            query.push(("allowWatchBookmarks", "true".to_string()));
        }
        query
    }

    fn selector_query(&self) -> Vec<(&'static str, String)> {
        let mut query = Vec::new();
        if let Some(selector) = self.label_selector.as_ref().filter(|s| !s.is_empty()) {
            query.push(("labelSelector", selector.clone()));
        }
        if let Some(selector) = self.field_selector.as_ref().filter(|s| !s.is_empty()) {
            query.push(("fieldSelector", selector.clone()));
        }
        query
    }
}

/// Options of a delete, sent as a `DeleteOptions` body.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteParams {
    /// Seconds the object's owner (the kubelet, for a pod) has to clean up; 0 removes it at once.
    pub grace_period_seconds: Option<i64>,
    /// Delete only if the stored object still has this uid (the kubelet's final delete uses it).
    pub preconditions_uid: Option<String>,
    /// `Background` (when `None`), `Foreground` or `Orphan`: what happens to the object's dependents.
    pub propagation_policy: Option<String>,
}

impl DeleteParams {
    /// A delete with `gracePeriodSeconds: seconds`.
    pub fn grace(seconds: i64) -> Self {
        DeleteParams {
            grace_period_seconds: Some(seconds),
            ..DeleteParams::default()
        }
    }

    /// Only if the object still has `uid`.
    pub fn with_uid(mut self, uid: &str) -> Self {
        self.preconditions_uid = Some(uid.to_string());
        self
    }

    /// With `propagationPolicy: policy` (`Background`, `Foreground`, `Orphan`).
    pub fn propagation(mut self, policy: &str) -> Self {
        self.propagation_policy = Some(policy.to_string());
        self
    }

    /// The `DeleteOptions` body (kubectl always sends a `propagationPolicy`, `Background` unless told).
    pub fn body(&self) -> Value {
        let policy = self.propagation_policy.as_deref().unwrap_or("Background");
        let mut body =
            json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": policy});
        if let Some(seconds) = self.grace_period_seconds {
            body["gracePeriodSeconds"] = json!(seconds);
        }
        if let Some(uid) = &self.preconditions_uid {
            body["preconditions"] = json!({ "uid": uid });
        }
        body
    }
}

/// A patch body and its type (the type is the request's Content-Type).
#[derive(Clone, Debug, PartialEq)]
pub enum Patch {
    /// RFC 7396 JSON merge patch: objects merge, `null` deletes a key, lists are replaced.
    Merge(Value),
    /// RFC 6902 JSON patch: a list of operations (`[{"op":"replace","path":"/spec/…","value":…}]`).
    Json(Value),
    /// Kubernetes' strategic merge patch: like Merge, but lists with a merge key merge by it.
    Strategic(Value),
}

impl Patch {
    /// The Content-Type naming the patch type.
    pub(crate) fn content_type(&self) -> &'static str {
        match self {
            Patch::Merge(_) => "application/merge-patch+json",
            Patch::Json(_) => "application/json-patch+json",
            Patch::Strategic(_) => "application/strategic-merge-patch+json",
        }
    }

    /// The patch document.
    pub(crate) fn body(&self) -> &Value {
        match self {
            Patch::Merge(body) | Patch::Json(body) | Patch::Strategic(body) => body,
        }
    }
}

/// Options of `GET pods/{name}/log`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogParams {
    /// Which container; may be left out when the pod has one.
    pub container: Option<String>,
    /// Keep the stream open and send new lines as they are written.
    pub follow: bool,
    /// Only the last N lines.
    pub tail_lines: Option<i64>,
    /// The logs of the previous, terminated instance of the container.
    pub previous: bool,
    /// Prefix each line with its RFC 3339 timestamp.
    pub timestamps: bool,
}

impl LogParams {
    /// The query pairs of a log request.
    pub(crate) fn query(&self) -> Vec<(&'static str, String)> {
        let mut query = Vec::new();
        if let Some(container) = &self.container {
            query.push(("container", container.clone()));
        }
        if self.follow {
            query.push(("follow", "true".to_string()));
        }
        if let Some(lines) = self.tail_lines {
            query.push(("tailLines", lines.to_string()));
        }
        if self.previous {
            query.push(("previous", "true".to_string()));
        }
        if self.timestamps {
            query.push(("timestamps", "true".to_string()));
        }
        query
    }
}

/// Renders query pairs as `?a=b&c=d` (empty when there are none), percent-encoding the values.
pub(crate) fn query_string(pairs: &[(&'static str, String)]) -> String {
    if pairs.is_empty() {
        return String::new();
    }
    let encoded: Vec<String> = pairs
        .iter()
        .map(|(key, value)| format!("{key}={}", encode(value)))
        .collect();
    format!("?{}", encoded.join("&"))
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(byte))
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_query_uses_the_wire_names() {
        let lp = ListParams::default()
            .labels("app=web")
            .fields("spec.nodeName=node-1")
            .timeout(290)
            .bookmarks(true);
        let query = query_string(&lp.watch_query("42"));
        assert_eq!(
            query,
            "?watch=true&labelSelector=app%3Dweb&fieldSelector=spec.nodeName%3Dnode-1&resourceVersion=42&timeoutSeconds=290&allowWatchBookmarks=true"
        );
        assert_eq!(query_string(&ListParams::default().list_query()), "");
    }

    #[test]
    fn delete_body_is_delete_options() {
        let body = DeleteParams::grace(0).with_uid("abc").body();
        assert_eq!(body["gracePeriodSeconds"], 0);
        assert_eq!(body["preconditions"]["uid"], "abc");
        assert_eq!(body["kind"], "DeleteOptions");
        assert!(DeleteParams::default()
            .body()
            .get("gracePeriodSeconds")
            .is_none());
    }

    #[test]
    fn log_query_carries_every_option() {
        let lp = LogParams {
            container: Some("main".into()),
            follow: true,
            tail_lines: Some(5),
            previous: true,
            timestamps: true,
        };
        assert_eq!(
            query_string(&lp.query()),
            "?container=main&follow=true&tailLines=5&previous=true&timestamps=true"
        );
    }
}
