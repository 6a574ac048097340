//! How a pod worker reports back to the API server: Events, pod status, and the final delete.
//!
//! Kubernetes counterpart: the kubelet's event recorder (`record.EventRecorder`, events are
//! written asynchronously by a broadcaster), the status manager (`pkg/kubelet/status/
//! status_manager.go`: `PATCH pods/{name}/status` only when the status changed) and its final
//! `DELETE` with grace 0 and a uid precondition once a terminating pod's containers are gone.
//!
//! The pod worker talks to a [`PodReporter`] trait rather than to the client directly, so its
//! tests run against the fake runtime and a [`RecordingReporter`] without an API server.
//!
//! Events are built at the moment they happen (their `eventTime` is that instant, which the demo's
//! timeline relies on) and written in order by one background task, so that a slow API server never
//! delays a SIGTERM.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Event, ObjectReference, Pod, PodStatus};
use minik_client::events::{object_reference, Recorder};
use minik_client::{Api, Client, DeleteParams, Patch};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

/// What a pod worker needs from the API server.
pub trait PodReporter: Send + Sync + 'static {
    /// Records an Event about the pod (about one of its containers when `container` is set).
    /// Never blocks: events are written in the background.
    fn event(&self, pod: &Pod, container: Option<&str>, type_: &str, reason: &str, message: &str);

    /// Writes the pod's status (`pods/{name}/status`).
    fn write_status<'a>(
        &'a self,
        pod: &'a Pod,
        status: &'a PodStatus,
    ) -> BoxFuture<'a, minik_client::Result<()>>;

    /// Deletes the pod object for good: grace 0, precondition uid (NotFound is success).
    fn delete_pod<'a>(&'a self, pod: &'a Pod) -> BoxFuture<'a, minik_client::Result<()>>;

    /// A token for the pod's ServiceAccount, bound to the pod (TokenRequest): its value and
    /// expiry, or `None` where the server has no TokenRequest API (a plain-http cluster).
    fn request_token<'a>(
        &'a self,
        _pod: &'a Pod,
        _audiences: &'a [String],
        _expiration_seconds: i64,
    ) -> BoxFuture<'a, minik_client::Result<Option<(String, jiff::Timestamp)>>> {
        Box::pin(async { Ok(None) })
    }
}

/// The `involvedObject` of an Event about a pod or one of its containers.
pub fn pod_reference(pod: &Pod, container: Option<&str>) -> ObjectReference {
    let mut reference = object_reference(pod);
    reference.field_path = container.map(|name| container_field_path(pod, name));
    reference
}

/// `spec.containers{web}` or `spec.initContainers{setup}`, as upstream's event references.
fn container_field_path(pod: &Pod, name: &str) -> String {
    let is_init = pod
        .spec
        .iter()
        .flat_map(|s| s.init_containers.iter().flatten())
        .any(|c| c.name == name);
    if is_init {
        format!("spec.initContainers{{{name}}}")
    } else {
        format!("spec.containers{{{name}}}")
    }
}

/// The real reporter: HTTP to the API server through `minik_client`.
pub struct ApiReporter {
    client: Client,
    recorder: Recorder,
    events: mpsc::UnboundedSender<Event>,
}

impl ApiReporter {
    /// A reporter for `node`, plus the task that writes its events (it ends when `shutdown` fires
    /// and the queue is drained, or when the reporter is dropped).
    pub fn new(
        client: Client,
        node: &str,
        shutdown: CancellationToken,
    ) -> (Arc<Self>, impl std::future::Future<Output = ()>) {
        let recorder = Recorder::new(client.clone(), "kubelet", Some(node.to_string()));
        let (events, queue) = mpsc::unbounded_channel();
        let writer = write_events(recorder.clone(), queue, shutdown);
        (
            Arc::new(ApiReporter {
                client,
                recorder,
                events,
            }),
            writer,
        )
    }

    fn pods(&self, pod: &Pod) -> Api<Pod> {
        Api::namespaced(
            self.client.clone(),
            pod.metadata.namespace.as_deref().unwrap_or("default"),
        )
    }
}

/// Writes queued events in order, through the recorder's correlator, until shutdown (then drains what is queued, best effort).
async fn write_events(
    recorder: Recorder,
    mut queue: mpsc::UnboundedReceiver<Event>,
    shutdown: CancellationToken,
) {
    loop {
        let event = tokio::select! {
            event = queue.recv() => event,
            _ = shutdown.cancelled() => {
                queue.close();
                queue.recv().await
            }
        };
        let Some(event) = event else { break };
        let reason = event.reason.clone();
        // Through the recorder's correlator: a repeat (a crash loop's BackOff) patches its count.
        if let Err(error) = recorder.write(event).await {
            warn!(%error, ?reason, "could not write event");
        }
    }
}

impl PodReporter for ApiReporter {
    fn request_token<'a>(
        &'a self,
        pod: &'a Pod,
        audiences: &'a [String],
        expiration_seconds: i64,
    ) -> BoxFuture<'a, minik_client::Result<Option<(String, jiff::Timestamp)>>> {
        Box::pin(async move {
            let meta = &pod.metadata;
            let namespace = meta.namespace.as_deref().unwrap_or("default");
            let account = pod
                .spec
                .as_ref()
                .and_then(|s| s.service_account_name.as_deref());
            let path = format!(
                "/api/v1/namespaces/{namespace}/serviceaccounts/{}/token",
                account.unwrap_or("default")
            );
            let body = serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"audiences": audiences, "expirationSeconds": expiration_seconds,
                    "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta.name, "uid": meta.uid}}});
            let answer = self
                .client
                .request_json(minik_client::Method::POST, &path, Some(&body))
                .await;
            let answer = match answer {
                Err(error) if error.is_not_found() => return Ok(None),
                other => other?,
            };
            let status = &answer["status"];
            let token = status["token"].as_str().unwrap_or_default().to_string();
            let expires = status["expirationTimestamp"]
                .as_str()
                .and_then(|t| t.parse().ok())
                .unwrap_or_else(jiff::Timestamp::now);
            Ok(Some((token, expires)))
        })
    }

    fn event(&self, pod: &Pod, container: Option<&str>, type_: &str, reason: &str, message: &str) {
        let event = self
            .recorder
            .build(&pod_reference(pod, container), type_, reason, message);
        debug!(reason, message, "event");
        let _ = self.events.send(event);
    }

    fn write_status<'a>(
        &'a self,
        pod: &'a Pod,
        status: &'a PodStatus,
    ) -> BoxFuture<'a, minik_client::Result<()>> {
        Box::pin(async move {
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            // A merge patch replaces lists whole, so containerStatuses and conditions are exact.
            let patch = Patch::Merge(serde_json::json!({ "status": status }));
            self.pods(pod).patch_status(name, &patch).await.map(|_| ())
        })
    }

    fn delete_pod<'a>(&'a self, pod: &'a Pod) -> BoxFuture<'a, minik_client::Result<()>> {
        Box::pin(async move {
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            let params =
                DeleteParams::grace(0).with_uid(pod.metadata.uid.as_deref().unwrap_or_default());
            match self.pods(pod).delete(name, &params).await {
                Ok(_) => Ok(()),
                Err(error) if error.is_not_found() || error.is_conflict() => Ok(()),
                Err(error) => Err(error),
            }
        })
    }
}

/// One event a [`RecordingReporter`] saw.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedEvent {
    /// The container it is about, if any.
    pub container: Option<String>,
    /// `Normal` or `Warning`.
    pub type_: String,
    /// The reason (`Started`, `Killing` …).
    pub reason: String,
    /// The message.
    pub message: String,
    /// When (tokio's clock, so tests with a paused clock can measure).
    pub at: tokio::time::Instant,
}

/// A reporter for tests: remembers everything, talks to nobody.
#[derive(Default)]
pub struct RecordingReporter {
    /// Every event, in order.
    pub events: Mutex<Vec<RecordedEvent>>,
    /// Every status written, in order.
    pub statuses: Mutex<Vec<PodStatus>>,
    /// Uids of pods deleted.
    pub deleted: Mutex<Vec<String>>,
    /// Wakes tests waiting for a new record.
    pub changed: tokio::sync::Notify,
}

impl RecordingReporter {
    /// The reasons recorded so far, in order.
    pub fn reasons(&self) -> Vec<String> {
        self.events
            .lock()
            .map(|e| e.iter().map(|e| e.reason.clone()).collect())
            .unwrap_or_default()
    }

    /// The first event with `reason`, if any.
    pub fn find(&self, reason: &str) -> Option<RecordedEvent> {
        self.events
            .lock()
            .ok()?
            .iter()
            .find(|e| e.reason == reason)
            .cloned()
    }

    /// The last status written, if any.
    pub fn last_status(&self) -> Option<PodStatus> {
        self.statuses.lock().ok()?.last().cloned()
    }
}

impl PodReporter for RecordingReporter {
    fn event(&self, _pod: &Pod, container: Option<&str>, type_: &str, reason: &str, message: &str) {
        let event = RecordedEvent {
            container: container.map(str::to_string),
            type_: type_.into(),
            reason: reason.into(),
            message: message.into(),
            at: tokio::time::Instant::now(),
        };
        if let Ok(mut events) = self.events.lock() {
            events.push(event);
        }
        self.changed.notify_waiters();
    }

    fn write_status<'a>(
        &'a self,
        _pod: &'a Pod,
        status: &'a PodStatus,
    ) -> BoxFuture<'a, minik_client::Result<()>> {
        if let Ok(mut statuses) = self.statuses.lock() {
            statuses.push(status.clone());
        }
        self.changed.notify_waiters();
        Box::pin(async { Ok(()) })
    }

    fn delete_pod<'a>(&'a self, pod: &'a Pod) -> BoxFuture<'a, minik_client::Result<()>> {
        if let Ok(mut deleted) = self.deleted.lock() {
            deleted.push(pod.metadata.uid.clone().unwrap_or_default());
        }
        self.changed.notify_waiters();
        Box::pin(async { Ok(()) })
    }
}
