//! The tasks of the controller: three informers feeding the work queue, N workers draining it.
//!
//! Kubernetes counterpart: `Controller.Run(ctx, workers)`, `worker` and `processNextWorkItem` in
//! `endpoints_controller.go`, and `handleErr` with its `maxRetries = 15` (5 ms, 10 ms, 20 ms …).
//!
//! ```text
//!  pod watch      ─► reflector ─► pod store      ─► PodHandler     ─┐
//!  service watch  ─► reflector ─► service store  ─► ServiceHandler ─┼─► WorkQueue ─► worker × N ─► sync_service
//!  endpoints watch─► reflector ─► endpoints store─► endpoints_keys ─┘        ▲                        │ error
//!                                                                          └──── after backoff ─────┘
//! ```
//!
//! Workers start only once all three stores have listed: syncing earlier could see an empty
//! Service store and delete every Endpoints in the cluster.
//!
//! The EndpointSlice controller (`endpointslice/`) runs the same loop over pods, Services and
//! EndpointSlices (`sync_service` writing slices), and the mirroring controller (`mirroring.rs`)
//! over Endpoints, Services and EndpointSlices (`sync_endpoints`).
//!
//! minik simplifies: each controller lists and watches on its own (upstream's controllers share
//! one informer per kind in kube-controller-manager).

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use minik_api::core::{Endpoints, Pod, Service};
use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_api::ObjectKey;
use minik_client::store::store;
use minik_client::{reflector, Event, Store, WorkQueue};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use crate::controller::EndpointsController;
use crate::endpointslice::EndpointSliceController;
use crate::handlers::{endpoints_keys, managed_slice_keys, PodHandler, ServiceHandler};
use crate::mirroring::{endpoints_events_keys, slice_events_keys, MirroringController};
use crate::writes::{EndpointsWrites, SliceWrites};
use crate::SyncError;

/// A key that failed this many syncs in a row is dropped until its next event (upstream value).
pub const MAX_RETRIES: u32 = 15;

/// A controller whose workers reconcile one key at a time.
pub trait SyncKey: Send + Sync + 'static {
    /// Reconciles `key` from the stores; an error puts the key back after a backoff.
    fn sync(&self, key: &ObjectKey) -> impl Future<Output = Result<(), SyncError>> + Send;
}

impl<W: EndpointsWrites> SyncKey for EndpointsController<W> {
    async fn sync(&self, key: &ObjectKey) -> Result<(), SyncError> {
        Ok(self.sync_service(key).await?)
    }
}

impl<W: SliceWrites> SyncKey for EndpointSliceController<W> {
    fn sync(&self, key: &ObjectKey) -> impl Future<Output = Result<(), SyncError>> + Send {
        self.sync_service(key)
    }
}

impl<W: SliceWrites> SyncKey for MirroringController<W> {
    async fn sync(&self, key: &ObjectKey) -> Result<(), SyncError> {
        Ok(self.sync_endpoints(key).await?)
    }
}

/// Runs the controller on the given watcher streams until `shutdown`; returns once every task ended.
pub async fn run_controller<W, P, S, E>(
    writes: W,
    pods: P,
    services: S,
    endpoints: E,
    workers: usize,
    shutdown: CancellationToken,
) where
    W: EndpointsWrites,
    P: Stream<Item = minik_client::Result<Event<Pod>>> + Send + 'static,
    S: Stream<Item = minik_client::Result<Event<Service>>> + Send + 'static,
    E: Stream<Item = minik_client::Result<Event<Endpoints>>> + Send + 'static,
{
    let (pod_store, pod_writer) = store();
    let (service_store, service_writer) = store();
    let (endpoints_store, endpoints_writer) = store();
    let queue = Arc::new(WorkQueue::new());
    let tasks = TaskTracker::new();

    let services_for_pods = service_store.clone();
    let mut pod_handler = PodHandler::default();
    let pod_events = reflector(pod_writer, pods);
    tasks.spawn(informer(
        "pods",
        pod_events,
        queue.clone(),
        shutdown.clone(),
        move |event| pod_handler.on_event(event, &services_for_pods),
    ));
    let mut service_handler = ServiceHandler::default();
    let service_events = reflector(service_writer, services);
    tasks.spawn(informer(
        "services",
        service_events,
        queue.clone(),
        shutdown.clone(),
        move |event| service_handler.on_event(event),
    ));
    let endpoints_events = reflector(endpoints_writer, endpoints);
    tasks.spawn(informer(
        "endpoints",
        endpoints_events,
        queue.clone(),
        shutdown.clone(),
        endpoints_keys,
    ));

    let controller = Arc::new(EndpointsController::new(
        service_store,
        pod_store,
        endpoints_store,
        writes,
    ));
    let ready = {
        let controller = controller.clone();
        async move {
            wait_until_ready(
                &controller.services,
                &controller.pods,
                &controller.endpoints,
            )
            .await;
            info!(
                services = controller.services.len(),
                pods = controller.pods.len(),
                "ready"
            );
        }
    };
    serve(controller, queue, tasks, ready, workers, shutdown).await;
}

/// Runs the EndpointSlice controller on pod, Service and EndpointSlice watcher streams until
/// `shutdown`, writing at most `max_per_slice` endpoints a slice.
pub async fn run_slices<W, P, S, L>(
    writes: W,
    pods: P,
    services: S,
    slices: L,
    workers: usize,
    max_per_slice: usize,
    shutdown: CancellationToken,
) where
    W: SliceWrites,
    P: Stream<Item = minik_client::Result<Event<Pod>>> + Send + 'static,
    S: Stream<Item = minik_client::Result<Event<Service>>> + Send + 'static,
    L: Stream<Item = minik_client::Result<Event<EndpointSlice>>> + Send + 'static,
{
    let (pod_store, pod_writer) = store();
    let (service_store, service_writer) = store();
    let (slice_store, slice_writer) = store();
    let queue = Arc::new(WorkQueue::new());
    let tasks = TaskTracker::new();
    let services_for_pods = service_store.clone();
    let mut pod_handler = PodHandler::default();
    tasks.spawn(informer(
        "pods",
        reflector(pod_writer, pods),
        queue.clone(),
        shutdown.clone(),
        move |event| pod_handler.on_event(event, &services_for_pods),
    ));
    let mut service_handler = ServiceHandler::default();
    tasks.spawn(informer(
        "services",
        reflector(service_writer, services),
        queue.clone(),
        shutdown.clone(),
        move |event| service_handler.on_event(event),
    ));
    tasks.spawn(informer(
        "endpointslices",
        reflector(slice_writer, slices),
        queue.clone(),
        shutdown.clone(),
        managed_slice_keys,
    ));
    let controller = Arc::new(EndpointSliceController::new(
        service_store,
        pod_store,
        slice_store,
        writes,
        max_per_slice,
    ));
    let ready = {
        let controller = controller.clone();
        async move {
            controller.services.wait_until_ready().await;
            controller.pods.wait_until_ready().await;
            controller.slices.wait_until_ready().await;
            info!(max_per_slice, "endpointslice controller ready");
        }
    };
    serve(controller, queue, tasks, ready, workers, shutdown).await;
}

/// Runs the mirroring controller on Endpoints, Service and EndpointSlice watcher streams until
/// `shutdown`.
pub async fn run_mirroring<W, E, S, L>(
    writes: W,
    endpoints: E,
    services: S,
    slices: L,
    workers: usize,
    shutdown: CancellationToken,
) where
    W: SliceWrites,
    E: Stream<Item = minik_client::Result<Event<Endpoints>>> + Send + 'static,
    S: Stream<Item = minik_client::Result<Event<Service>>> + Send + 'static,
    L: Stream<Item = minik_client::Result<Event<EndpointSlice>>> + Send + 'static,
{
    let (endpoints_store, endpoints_writer) = store();
    let (service_store, service_writer) = store();
    let (slice_store, slice_writer) = store();
    let queue = Arc::new(WorkQueue::new());
    let tasks = TaskTracker::new();
    tasks.spawn(informer(
        "endpoints",
        reflector(endpoints_writer, endpoints),
        queue.clone(),
        shutdown.clone(),
        endpoints_events_keys,
    ));
    let mut service_handler = ServiceHandler::default();
    tasks.spawn(informer(
        "services",
        reflector(service_writer, services),
        queue.clone(),
        shutdown.clone(),
        move |event| service_handler.on_event(event),
    ));
    tasks.spawn(informer(
        "endpointslices",
        reflector(slice_writer, slices),
        queue.clone(),
        shutdown.clone(),
        slice_events_keys,
    ));
    let controller = Arc::new(MirroringController::new(
        endpoints_store,
        service_store,
        slice_store,
        writes,
    ));
    let ready = {
        let controller = controller.clone();
        async move {
            controller.endpoints.wait_until_ready().await;
            controller.services.wait_until_ready().await;
            controller.slices.wait_until_ready().await;
            info!(endpoints = controller.endpoints.len(), "mirroring ready");
        }
    };
    serve(controller, queue, tasks, ready, workers, shutdown).await;
}

/// Starts the workers once `ready` (every store listed), then waits for `shutdown` and for every
/// task to end.
async fn serve<C: SyncKey>(
    controller: Arc<C>,
    queue: Arc<WorkQueue>,
    tasks: TaskTracker,
    ready: impl Future<Output = ()>,
    workers: usize,
    shutdown: CancellationToken,
) {
    tokio::select! {
        _ = shutdown.cancelled() => {}
        _ = ready => {
            for _ in 0..workers.max(1) {
                tasks.spawn(worker(controller.clone(), queue.clone(), tasks.clone(), shutdown.clone()));
            }
            shutdown.cancelled().await;
        }
    }
    queue.shut_down();
    tasks.close();
    tasks.wait().await;
}

async fn wait_until_ready(
    services: &Store<Service>,
    pods: &Store<Pod>,
    endpoints: &Store<Endpoints>,
) {
    services.wait_until_ready().await;
    pods.wait_until_ready().await;
    endpoints.wait_until_ready().await;
}

/// Drives one reflector stream, turning each event into queue keys with `keys_for`.
async fn informer<K, St, F>(
    kind: &'static str,
    events: St,
    queue: Arc<WorkQueue>,
    shutdown: CancellationToken,
    mut keys_for: F,
) where
    St: Stream<Item = minik_client::Result<Event<K>>>,
    F: FnMut(&Event<K>) -> BTreeSet<ObjectKey>,
{
    let mut events = std::pin::pin!(events);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            event = events.next() => match event {
                Some(Ok(event)) => {
                    for key in keys_for(&event) {
                        debug!(kind, service = %key, "queued service");
                        queue.add(key);
                    }
                }
                Some(Err(error)) => warn!(kind, %error, "watch failed; retrying"),
                None => break,
            },
        }
    }
}

/// Takes keys off the queue and syncs them, one at a time, until shutdown.
async fn worker<C: SyncKey>(
    controller: Arc<C>,
    queue: Arc<WorkQueue>,
    tasks: TaskTracker,
    shutdown: CancellationToken,
) {
    loop {
        let key = tokio::select! {
            _ = shutdown.cancelled() => break,
            key = queue.get() => match key {
                Some(key) => key,
                None => break,
            },
        };
        let result = tokio::select! {
            _ = shutdown.cancelled() => break,
            result = controller.sync(&key) => result,
        };
        match result {
            Ok(()) => queue.forget(&key),
            Err(error) => retry_later(&queue, &tasks, &shutdown, key.clone(), error),
        }
        queue.done(&key);
    }
}

/// Upstream `handleErr`: requeue with backoff, or give up after [`MAX_RETRIES`].
fn retry_later(
    queue: &Arc<WorkQueue>,
    tasks: &TaskTracker,
    shutdown: &CancellationToken,
    key: ObjectKey,
    error: SyncError,
) {
    if queue.num_requeues(&key) >= MAX_RETRIES {
        warn!(service = %key, %error, "dropping service out of the queue");
        queue.forget(&key);
        return;
    }
    let delay = queue.next_retry_delay(&key);
    debug!(service = %key, %error, ?delay, "sync failed; retrying");
    let (queue, shutdown) = (queue.clone(), shutdown.clone());
    tasks.spawn(async move {
        tokio::select! {
            _ = shutdown.cancelled() => {}
            _ = tokio::time::sleep(delay) => queue.add(key),
        }
    });
}
