//! `PartialObjectMetadata`: any object seen through its metadata only, listed and watched by path.
//!
//! Kubernetes counterpart: `metav1.PartialObjectMetadata` and the metadata informers
//! (`staging/src/k8s.io/client-go/metadata/metadatainformer`) the garbage collector watches every
//! deletable kind with. Upstream asks the server for metadata-only answers
//! (`Accept: …;as=PartialObjectMetadataList`); minik asks for the full objects and keeps only
//! `metadata` when decoding, which costs bandwidth but needs nothing from the apiserver.
//!
//! The client's `watcher` is generic over a `k8s_openapi::Resource`, whose URL is a constant of the
//! type; [`MetadataSource`] is the `ListWatch` that takes the URL from a `ResourceInfo` instead, so
//! the same watcher state machine (relist on 410, resume after a dropped watch) serves every kind.

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::FutureExt;
use k8s_openapi::{ClusterResourceScope, ListableResource, Metadata, Resource};
use minik_api::meta::{ListMeta, ObjectMeta};
use minik_api::{ResourceInfo, WatchEvent};
use minik_client::watcher::ListWatch;
use minik_client::{Client, ListParams, Method};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// An object of any kind, of which only `metadata` was kept.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PartialObjectMetadata {
    /// The object's metadata: name, uid, ownerReferences, finalizers, deletionTimestamp.
    #[serde(default)]
    pub metadata: ObjectMeta,
}

// The type's own identity, as upstream names it; the URLs come from `MetadataSource`.
impl Resource for PartialObjectMetadata {
    const API_VERSION: &'static str = "meta.k8s.io/v1";
    const GROUP: &'static str = "meta.k8s.io";
    const KIND: &'static str = "PartialObjectMetadata";
    const VERSION: &'static str = "v1";
    const URL_PATH_SEGMENT: &'static str = "";
    type Scope = ClusterResourceScope;
}

impl ListableResource for PartialObjectMetadata {
    const LIST_KIND: &'static str = "PartialObjectMetadataList";
}

impl Metadata for PartialObjectMetadata {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// Lists and watches one kind, across every namespace, by its collection path.
pub struct MetadataSource {
    client: Client,
    /// `/api/v1/pods`, `/apis/apps/v1/replicasets`.
    path: String,
}

impl MetadataSource {
    /// The source of every object of `info`'s kind.
    pub fn new(client: Client, info: &ResourceInfo) -> Self {
        let path = format!("{}/{}", info.group_version_path(), info.plural);
        MetadataSource { client, path }
    }

    async fn list_page(
        &self,
        lp: &ListParams,
    ) -> minik_client::Result<k8s_openapi::List<PartialObjectMetadata>> {
        let mut path = self.path.clone();
        if let Some(token) = &lp.continue_token {
            path = format!("{path}?continue={token}");
        }
        let list = self.client.request_json(Method::GET, &path, None).await?;
        let metadata: ListMeta = serde_json::from_value(list["metadata"].clone())?;
        let items = match list.get("items") {
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| serde_json::from_value(item.clone()))
                .collect::<Result<_, _>>()?,
            _ => Vec::new(),
        };
        Ok(k8s_openapi::List { items, metadata })
    }
}

impl ListWatch<PartialObjectMetadata> for MetadataSource {
    fn list<'a>(
        &'a self,
        lp: &'a ListParams,
    ) -> BoxFuture<'a, minik_client::Result<k8s_openapi::List<PartialObjectMetadata>>> {
        self.list_page(lp).boxed()
    }

    fn watch<'a>(
        &'a self,
        lp: &'a ListParams,
        resource_version: &'a str,
    ) -> BoxFuture<
        'a,
        minik_client::Result<
            BoxStream<'static, minik_client::Result<WatchEvent<PartialObjectMetadata>>>,
        >,
    > {
        let timeout = lp.timeout_seconds.unwrap_or(290);
        let path = format!(
            "{}?watch=true&allowWatchBookmarks=true&resourceVersion={resource_version}&timeoutSeconds={timeout}",
            self.path
        );
        async move { self.client.watch_raw(&path).await }.boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_metadata_of_an_object_is_kept() {
        let pod = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "uid": "u1", "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "rs"}]},
            "spec": {"containers": [{"name": "c"}]}
        });
        let partial: PartialObjectMetadata = serde_json::from_value(pod).unwrap();
        assert_eq!(partial.metadata.uid.as_deref(), Some("u1"));
        assert_eq!(partial.metadata.owner_references.unwrap()[0].uid, "rs");
    }
}
