//! What the demo sees: one stream merging the watches on pods, endpoints and events.
//!
//! Kubernetes counterpart: what `kubectl get pods,endpoints,events -w` shows, in one place. Every
//! item carries the wall-clock moment the demo received it, so "the watch saw the pod become
//! Ready at +11.8 ms" is a measurement, not a guess. The watches start from the resourceVersion
//! of a list taken first, so nothing that happens after `Observer::start` is missed.

use futures::stream::{BoxStream, StreamExt};
use jiff::Timestamp;
use minik_api::core::{Endpoints, Event, Pod};
use minik_api::WatchEvent;
use minik_client::{Api, Client, ListParams, LogParams};

/// One thing observed, with the moment it arrived.
// Each value lives for one step of the demo's loop, so the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Seen {
    /// A pod changed.
    Pod(WatchEvent<Pod>, Timestamp),
    /// An Endpoints object changed.
    Endpoints(WatchEvent<Endpoints>, Timestamp),
    /// A component wrote an Event (its own `eventTime` says when it happened).
    Event(Box<Event>),
}

/// The merged watch stream of one namespace.
pub struct Observer {
    stream: BoxStream<'static, Seen>,
}

impl Observer {
    /// Starts watching pods, endpoints and events of `namespace` from now on.
    pub async fn start(client: &Client, namespace: &str) -> crate::Result<Observer> {
        let pods = watch_from_now::<Pod>(client, namespace)
            .await?
            .map(|event| Seen::Pod(event, Timestamp::now()));
        let endpoints = watch_from_now::<Endpoints>(client, namespace)
            .await?
            .map(|event| Seen::Endpoints(event, Timestamp::now()));
        let events = watch_from_now::<Event>(client, namespace)
            .await?
            .filter_map(|event| async move {
                match event {
                    WatchEvent::Added(event) | WatchEvent::Modified(event) => {
                        Some(Seen::Event(Box::new(event)))
                    }
                    _ => None,
                }
            });
        let stream =
            futures::stream::select(futures::stream::select(pods, endpoints), events).boxed();
        Ok(Observer { stream })
    }

    /// The next observation, or an error if nothing arrives within `timeout`.
    pub async fn next(
        &mut self,
        timeout: std::time::Duration,
        waiting_for: &str,
    ) -> crate::Result<Seen> {
        match tokio::time::timeout(timeout, self.stream.next()).await {
            Ok(Some(seen)) => Ok(seen),
            Ok(None) => crate::error::bail!("the watch ended while waiting for {waiting_for}"),
            Err(_) => crate::error::bail!("timed out after {timeout:?} waiting for {waiting_for}"),
        }
    }
}

/// A watch of every object of a kind in `namespace`, starting after a fresh list.
async fn watch_from_now<K>(
    client: &Client,
    namespace: &str,
) -> crate::Result<BoxStream<'static, WatchEvent<K>>>
where
    K: k8s_openapi::Resource
        + k8s_openapi::ListableResource
        + k8s_openapi::Metadata<Ty = minik_api::meta::ObjectMeta>
        + Clone
        + serde::Serialize
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let api = Api::<K>::namespaced(client.clone(), namespace);
    let list = api.list(&ListParams::default()).await?;
    let resource_version = list.metadata.resource_version.unwrap_or_default();
    let stream = api
        .watch(&ListParams::default().timeout(600), &resource_version)
        .await?;
    Ok(stream.filter_map(|event| async move { event.ok() }).boxed())
}

/// Whether a pod has the condition `Ready=True`.
pub fn is_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True")
        })
}

/// The ready addresses of an Endpoints object, as `ip` strings.
pub fn ready_ips(endpoints: &Endpoints) -> Vec<String> {
    endpoints
        .subsets
        .iter()
        .flatten()
        .flat_map(|subset| subset.addresses.iter().flatten())
        .map(|address| address.ip.clone())
        .collect()
}

/// Follows a pod's log from its start into a string, until the kubelet ends the stream (the
/// container has exited) or nothing arrives for two minutes.
pub async fn follow_log(
    pods: &Api<Pod>,
    name: &str,
) -> crate::Result<tokio::task::JoinHandle<String>> {
    let params = LogParams {
        follow: true,
        ..LogParams::default()
    };
    let mut stream = pods.log_stream(name, &params).await?;
    Ok(tokio::spawn(async move {
        let mut log = Vec::new();
        while let Ok(Some(Ok(chunk))) =
            tokio::time::timeout(std::time::Duration::from_secs(120), stream.next()).await
        {
            log.extend_from_slice(&chunk);
        }
        String::from_utf8_lossy(&log).into_owned()
    }))
}
