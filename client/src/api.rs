//! `Api<K>`: the typed verbs (get, list, create, replace, patch, delete, watch) for one kind.
//!
//! Kubernetes counterpart: client-go's typed clientsets (`kubernetes.CoreV1().Pods(ns).Get(…)`) and
//! kube-rs's `kube_client::Api<K>`. The URL of every request comes from the kind's
//! `k8s_openapi::Resource` constants, following Kubernetes' layout:
//!
//! ```text
//! /api/v1/namespaces/{ns}/pods/{name}                 core group, namespaced
//! /api/v1/nodes/{name}                                core group, cluster-scoped
//! /apis/coordination.k8s.io/v1/namespaces/{ns}/leases group "coordination.k8s.io"
//! /api/v1/pods                                        a namespaced kind across every namespace
//! ```
//!
//! minik simplifies: no dry-run, field managers or server-side apply from this client.

use std::any::TypeId;
use std::fmt::Debug;
use std::marker::PhantomData;

use bytes::Bytes;
use futures::stream::BoxStream;
use k8s_openapi::{ListableResource, Metadata, NamespaceResourceScope, Resource};
use reqwest::Method;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use minik_api::core::{Binding, ObjectReference, Pod};
use minik_api::meta::ObjectMeta;
use minik_api::WatchEvent;

use crate::client::Client;
use crate::error::{Error, Result};
use crate::params::{query_string, DeleteParams, ListParams, LogParams, Patch};

/// What `Api<K>` needs of an object type; every k8s-openapi top-level kind qualifies. Listing
/// (and so the watcher) also needs `k8s_openapi::ListableResource`, which they all implement.
pub trait Object:
    Resource + Metadata<Ty = ObjectMeta> + Clone + Serialize + DeserializeOwned + Send + Sync + 'static
{
}

impl<K> Object for K where
    K: Resource
        + Metadata<Ty = ObjectMeta>
        + Clone
        + Serialize
        + DeserializeOwned
        + Send
        + Sync
        + 'static
{
}

/// The typed verbs of one kind, in one namespace or across all of them.
pub struct Api<K> {
    client: Client,
    /// `Some(ns)` for `Api::namespaced`; `None` for cluster-scoped kinds or every namespace.
    namespace: Option<String>,
    kind: PhantomData<fn() -> K>,
}

impl<K> Clone for Api<K> {
    fn clone(&self) -> Self {
        Api {
            client: self.client.clone(),
            namespace: self.namespace.clone(),
            kind: PhantomData,
        }
    }
}

impl<K> Debug for Api<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("namespace", &self.namespace)
            .finish()
    }
}

impl<K: Object> Api<K> {
    /// Objects of a namespaced kind in `namespace`.
    pub fn namespaced(client: Client, namespace: &str) -> Self {
        Api {
            client,
            namespace: Some(namespace.to_string()),
            kind: PhantomData,
        }
    }

    /// A cluster-scoped kind (nodes), or a namespaced kind across every namespace (list and watch).
    pub fn all(client: Client) -> Self {
        Api {
            client,
            namespace: None,
            kind: PhantomData,
        }
    }

    /// The client this Api sends through.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The namespace of a namespaced Api.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// `/api/v1/namespaces/{ns}/pods`, `/api/v1/nodes`, `/api/v1/pods` (all namespaces).
    pub fn collection_path(&self) -> String {
        let group_version = if K::GROUP.is_empty() {
            format!("/api/{}", K::VERSION)
        } else {
            format!("/apis/{}/{}", K::GROUP, K::VERSION)
        };
        let namespaced = TypeId::of::<K::Scope>() == TypeId::of::<NamespaceResourceScope>();
        match (&self.namespace, namespaced) {
            (Some(namespace), true) => format!(
                "{group_version}/namespaces/{namespace}/{}",
                K::URL_PATH_SEGMENT
            ),
            _ => format!("{group_version}/{}", K::URL_PATH_SEGMENT),
        }
    }

    /// `…/pods/{name}`.
    pub fn object_path(&self, name: &str) -> String {
        format!("{}/{name}", self.collection_path())
    }

    /// Reads one object; 404 is `Err(Error::Api)` with `is_not_found()`.
    pub async fn get(&self, name: &str) -> Result<K> {
        self.client
            .send_json(self.client.request(Method::GET, &self.object_path(name)))
            .await
    }

    /// Reads one object; 404 is `Ok(None)`.
    pub async fn get_opt(&self, name: &str) -> Result<Option<K>> {
        match self.get(name).await {
            Ok(object) => Ok(Some(object)),
            Err(error) if error.is_not_found() => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// Creates the object (POST to the collection).
    pub async fn create(&self, object: &K) -> Result<K> {
        let request = self
            .client
            .request(Method::POST, &self.collection_path())
            .json(object);
        self.client.send_json(request).await
    }

    /// Replaces the object (PUT); its `metadata.resourceVersion` must be the stored one, or 409 Conflict.
    pub async fn replace(&self, name: &str, object: &K) -> Result<K> {
        let request = self
            .client
            .request(Method::PUT, &self.object_path(name))
            .json(object);
        self.client.send_json(request).await
    }

    /// Replaces the object's `status` (PUT `{name}/status`); the spec is left as stored.
    pub async fn replace_status(&self, name: &str, object: &K) -> Result<K> {
        let path = format!("{}/status", self.object_path(name));
        self.client
            .send_json(self.client.request(Method::PUT, &path).json(object))
            .await
    }

    /// Patches the object.
    pub async fn patch(&self, name: &str, patch: &Patch) -> Result<K> {
        self.send_patch(self.object_path(name), patch).await
    }

    /// Patches the object's `status` subresource.
    pub async fn patch_status(&self, name: &str, patch: &Patch) -> Result<K> {
        self.send_patch(format!("{}/status", self.object_path(name)), patch)
            .await
    }

    async fn send_patch(&self, path: String, patch: &Patch) -> Result<K> {
        let body = serde_json::to_vec(patch.body())?;
        let request = self
            .client
            .request(Method::PATCH, &path)
            .header(reqwest::header::CONTENT_TYPE, patch.content_type())
            .body(body);
        self.client.send_json(request).await
    }

    /// Deletes the object. A pod with a grace period comes back with its `deletionTimestamp` set
    /// (`Some(pod)`); an object removed at once comes back as its last state, or as a `Status` (`None`).
    pub async fn delete(&self, name: &str, dp: &DeleteParams) -> Result<Option<K>> {
        let request = self
            .client
            .request(Method::DELETE, &self.object_path(name))
            .json(&dp.body());
        let answer: Value = self.client.send_json(request).await?;
        if answer.get("kind").and_then(Value::as_str) == Some("Status") {
            return Ok(None);
        }
        Ok(Some(serde_json::from_value(answer)?))
    }

    /// Opens a watch after `resource_version` (empty or `"0"`: the current objects arrive first as
    /// ADDED). The stream ends when the server ends it (`timeoutSeconds`) or the connection drops.
    pub async fn watch(
        &self,
        lp: &ListParams,
        resource_version: &str,
    ) -> Result<BoxStream<'static, Result<WatchEvent<K>>>> {
        let path = format!(
            "{}{}",
            self.collection_path(),
            query_string(&lp.watch_query(resource_version))
        );
        self.client.watch_raw(&path).await
    }
}

impl<K: Object + ListableResource> Api<K> {
    /// Lists the objects matching `lp`; `metadata.resourceVersion` of the list is where a watch resumes.
    pub async fn list(&self, lp: &ListParams) -> Result<k8s_openapi::List<K>> {
        let path = format!(
            "{}{}",
            self.collection_path(),
            query_string(&lp.list_query())
        );
        self.client
            .send_json(self.client.request(Method::GET, &path))
            .await
    }
}

impl Api<Pod> {
    /// Assigns the pod to a node: POST `pods/{name}/binding` (409 if it is already bound).
    pub async fn bind(&self, pod_name: &str, node_name: &str) -> Result<()> {
        let binding = Binding {
            metadata: ObjectMeta {
                name: Some(pod_name.to_string()),
                namespace: self.namespace.clone(),
                ..ObjectMeta::default()
            },
            target: ObjectReference {
                api_version: Some("v1".to_string()),
                kind: Some("Node".to_string()),
                name: Some(node_name.to_string()),
                ..ObjectReference::default()
            },
        };
        let path = format!("{}/binding", self.object_path(pod_name));
        let request = self.client.request(Method::POST, &path).json(&binding);
        self.client.send(request).await?;
        Ok(())
    }

    /// The container's log as text (`GET pods/{name}/log`).
    pub async fn logs(&self, name: &str, lp: &LogParams) -> Result<String> {
        self.client.get_text(&self.log_path(name, lp)).await
    }

    /// The container's log as a stream of bytes, for `follow: true`.
    pub async fn log_stream(
        &self,
        name: &str,
        lp: &LogParams,
    ) -> Result<BoxStream<'static, Result<Bytes>>> {
        self.client.get_stream(&self.log_path(name, lp)).await
    }

    fn log_path(&self, name: &str, lp: &LogParams) -> String {
        format!(
            "{}/log{}",
            self.object_path(name),
            query_string(&lp.query())
        )
    }
}

/// A missing `metadata.resourceVersion` on a list is an error: a watch could not resume from it.
pub(crate) fn list_resource_version<K: ListableResource>(
    list: &k8s_openapi::List<K>,
) -> Result<String> {
    list.metadata
        .resource_version
        .clone()
        .filter(|rv| !rv.is_empty())
        .ok_or(Error::NoResourceVersion)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1::Lease;
    use minik_api::core::{Event, Node};

    fn client() -> Client {
        Client::new("http://127.0.0.1:6443").unwrap()
    }

    #[test]
    fn paths_follow_the_kubernetes_layout() {
        assert_eq!(
            Api::<Pod>::namespaced(client(), "default").object_path("web"),
            "/api/v1/namespaces/default/pods/web"
        );
        assert_eq!(Api::<Pod>::all(client()).collection_path(), "/api/v1/pods");
        assert_eq!(
            Api::<Node>::all(client()).object_path("node-1"),
            "/api/v1/nodes/node-1"
        );
        // A cluster-scoped kind ignores a namespace it was given.
        assert_eq!(
            Api::<Node>::namespaced(client(), "default").collection_path(),
            "/api/v1/nodes"
        );
        assert_eq!(
            Api::<Event>::namespaced(client(), "kube-system").collection_path(),
            "/api/v1/namespaces/kube-system/events"
        );
        assert_eq!(
            Api::<Lease>::namespaced(client(), "kube-node-lease").object_path("node-1"),
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-1"
        );
    }
}
