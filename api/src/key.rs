//! `ObjectKey`: how an object is named inside the cluster, shown as `namespace/name`.
//!
//! Kubernetes counterpart: `cache.MetaNamespaceKeyFunc` in client-go, the key every informer store
//! and work queue uses. Cluster-scoped objects (nodes, namespaces) have no namespace, and their key
//! is just the name.

use std::fmt;

use crate::meta::ObjectMeta;

/// The namespace and name of an object; the unit a controller's work queue deduplicates on.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// `None` for cluster-scoped kinds such as Node.
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: String,
}

impl ObjectKey {
    /// A key for a namespaced object.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ObjectKey {
            namespace: Some(namespace.into()),
            name: name.into(),
        }
    }

    /// A key for a cluster-scoped object.
    pub fn cluster(name: impl Into<String>) -> Self {
        ObjectKey {
            namespace: None,
            name: name.into(),
        }
    }

    /// The key of an object, read from its metadata (a missing name becomes the empty string).
    pub fn of(meta: &ObjectMeta) -> Self {
        ObjectKey {
            namespace: meta.namespace.clone(),
            name: meta.name.clone().unwrap_or_default(),
        }
    }

    /// Parses `ns/name` or `name` (the inverse of `Display`).
    pub fn parse(text: &str) -> Self {
        match text.split_once('/') {
            Some((namespace, name)) => ObjectKey::new(namespace, name),
            None => ObjectKey::cluster(text),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{namespace}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_round_trips_through_its_text_form() {
        let key = ObjectKey::new("default", "web");
        assert_eq!(key.to_string(), "default/web");
        assert_eq!(ObjectKey::parse("default/web"), key);
        assert_eq!(ObjectKey::parse("node-1"), ObjectKey::cluster("node-1"));
    }
}
