//! `WatchEvent`: one line of a Kubernetes watch stream.
//!
//! Kubernetes counterpart: `metav1.WatchEvent` (`k8s.io/apimachinery/pkg/apis/meta/v1/watch.go`).
//! On the wire each event is a JSON object on its own line, `{"type":"ADDED","object":{…}}`; the
//! object of an `ERROR` event is a `Status` (410 Expired when the requested resourceVersion is older
//! than the history the server keeps, which tells the client to list again).

use serde::{Deserialize, Serialize};

use crate::meta::Status;

/// One event of a watch stream, generic over the object type (`serde_json::Value` in the apiserver,
/// a typed object such as `Pod` in the components).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "object", rename_all = "UPPERCASE")]
// `Error(Status)` is larger than a small `K`, but events are moved, not stored, and boxing the
// Status would change the variant every caller matches on.
#[allow(clippy::large_enum_variant)]
pub enum WatchEvent<K> {
    /// The object was created, or exists when the watch starts from "now" (`resourceVersion=0`).
    Added(K),
    /// The object changed; it carries the new state.
    Modified(K),
    /// The object was removed, or stopped matching the watch's selector; it carries the last state.
    Deleted(K),
    /// Nothing changed for this watch, but the cluster reached this resourceVersion: a client can
    /// resume from here. Only its `metadata.resourceVersion` (and annotations) are meaningful.
    Bookmark(K),
    /// The watch failed; the server ends the stream after it.
    Error(Status),
}
