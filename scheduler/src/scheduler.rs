//! The scheduling loop: watch events in, decisions out, binds on their own tasks.
//!
//! Kubernetes counterpart: `pkg/scheduler/scheduler.go` (`Scheduler.Run`), `eventhandlers.go`
//! (which informer event moves which pods: `addPodToSchedulingQueue`, `updateNodeInCache`,
//! `MoveAllToActiveOrBackoffQueue`) and `schedule_one.go` (`ScheduleOne`: pop, decide, assume,
//! bind asynchronously, or record the failure).
//!
//! One task owns all the state (the cache and the queue), so nothing is locked:
//!
//! ```text
//!  pod watch  ──► cache.update_pod / queue.add_or_update ─┐
//!  node watch ──► cache.set_node ──(room may have appeared)──► queue.move_all_to_active
//!  queue.pop ──► schedule_one: algorithm::schedule_on(cache) ──► cache.assume ──► spawn bind
//!                                  └─ Unschedulable ──► queue.add_unschedulable, spawn status+event
//!  bind result ──► ok: wait for the watch to confirm · conflict: drop · error: forget + backoff
//! ```
//!
//! A decision costs O(nodes) on the cached `NodeInfo`s and never clones a pod; the HTTP round trips
//! (bind, Event, status) run concurrently, up to `parallel_binds` at a time, while the loop goes on
//! deciding for the next pods. That is what lets one loop place thousands of pods per second.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use minik_api::core::{Node, Pod};
use minik_api::ObjectKey;
use minik_client::Event;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, warn};

use crate::algorithm::{find_and_score, num_feasible_nodes_to_find, Reason};
use crate::cache::SchedulerCache;
use crate::node_info::{is_terminated, PodRequests};
use crate::queue::SchedulingQueue;
use crate::volume_binding::{merge_message, VolumeLookup};
use crate::writes::SchedulerWrites;
use crate::Config;

/// How long `run` waits for in-flight binds and status writes after shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The outcome of one bind task, sent back to the loop.
#[derive(Debug)]
pub struct BindResult {
    /// The pod.
    pub key: ObjectKey,
    /// Where it was to go.
    pub node: String,
    /// `Ok`, or the API error.
    pub result: minik_client::Result<()>,
}

/// The scheduler's state and its writes.
pub struct Scheduler<W> {
    config: Config,
    writes: Arc<W>,
    cache: SchedulerCache,
    queue: SchedulingQueue,
    /// Binds and status writes run here; `run` waits for them before returning.
    tasks: TaskTracker,
    results_tx: mpsc::UnboundedSender<BindResult>,
    results_rx: mpsc::UnboundedReceiver<BindResult>,
    /// Binds sent and not yet answered.
    binds_in_flight: usize,
    /// Scheduling waits until both watches have listed once, so the first decisions see every node.
    pods_synced: bool,
    nodes_synced: bool,
    /// The claims, volumes and classes of the VolumeBinding filter (none in unit tests).
    volumes: Option<VolumeLookup>,
    /// Where the next pod's search for feasible nodes starts (upstream's `nextStartNodeIndex`):
    /// with sampling on big clusters, successive pods look at successive nodes.
    next_start_node_index: usize,
}

impl<W: SchedulerWrites> Scheduler<W> {
    /// A scheduler with an empty cache.
    pub fn new(config: Config, writes: W) -> Self {
        let (results_tx, results_rx) = mpsc::unbounded_channel();
        Scheduler {
            config,
            writes: Arc::new(writes),
            cache: SchedulerCache::new(),
            queue: SchedulingQueue::new(),
            tasks: TaskTracker::new(),
            results_tx,
            results_rx,
            binds_in_flight: 0,
            pods_synced: false,
            nodes_synced: false,
            volumes: None,
            next_start_node_index: 0,
        }
    }

    /// The same scheduler, filtering nodes by the pods' volumes too ([`crate::volume_binding`]).
    pub fn with_volumes(mut self, volumes: VolumeLookup) -> Self {
        self.volumes = Some(volumes);
        self
    }

    /// The cache (for tests and diagnostics).
    pub fn cache(&self) -> &SchedulerCache {
        &self.cache
    }

    /// The queue (for tests and diagnostics).
    pub fn queue(&self) -> &SchedulingQueue {
        &self.queue
    }

    /// Runs until `shutdown`, fed by a pod watcher and a node watcher.
    pub async fn run<P, N>(mut self, pods: P, nodes: N, shutdown: CancellationToken)
    where
        P: Stream<Item = minik_client::Result<Event<Pod>>> + Send,
        N: Stream<Item = minik_client::Result<Event<Node>>> + Send,
    {
        let (mut pods, mut nodes) = (std::pin::pin!(pods), std::pin::pin!(nodes));
        loop {
            let ready = self.pods_synced && self.nodes_synced;
            let can_schedule = ready
                && self.binds_in_flight < self.config.parallel_binds
                && self.queue.has_active();
            let backoff = self.queue.next_backoff();
            tokio::select! {
                biased;
                _ = shutdown.cancelled() => break,
                Some(result) = self.results_rx.recv() => self.handle_bind_result(result),
                Some(event) = pods.next() => match event {
                    Ok(event) => self.handle_pod_event(event),
                    Err(error) => warn!(%error, "pod watch failed; retrying"),
                },
                Some(event) = nodes.next() => match event {
                    Ok(event) => self.handle_node_event(event),
                    Err(error) => warn!(%error, "node watch failed; retrying"),
                },
                _ = sleep_until(backoff), if backoff.is_some() => self.queue.flush_backoff(Instant::now()),
                _ = std::future::ready(()), if can_schedule => self.schedule_one(),
            }
        }
        self.tasks.close();
        if tokio::time::timeout(SHUTDOWN_GRACE, self.tasks.wait())
            .await
            .is_err()
        {
            warn!(grace = ?SHUTDOWN_GRACE, "scheduler writes did not finish in time");
        }
    }

    /// Whether this scheduler should place the pod: not bound, not being deleted, not finished,
    /// and asking for this scheduler by name (`spec.schedulerName`, default `default-scheduler`).
    pub fn responsible_for(&self, pod: &Pod) -> bool {
        let Some(spec) = &pod.spec else { return false };
        let scheduler = spec
            .scheduler_name
            .as_deref()
            .unwrap_or(crate::DEFAULT_SCHEDULER_NAME);
        spec.node_name.is_none()
            && scheduler == self.config.scheduler_name
            && pod.metadata.deletion_timestamp.is_none()
            && !is_terminated(pod)
    }

    /// Applies one pod watch event to the cache and the queue.
    pub fn handle_pod_event(&mut self, event: Event<Pod>) {
        match event {
            Event::Applied(pod) => {
                let key = ObjectKey::of(&pod.metadata);
                let freed = self.cache.update_pod(&pod);
                if self.cache.is_assumed(&key) {
                    // Our bind is in flight; its result decides what happens next.
                } else if self.responsible_for(&pod) {
                    self.queue.add_or_update(Arc::new(pod));
                } else {
                    self.queue.delete(&key);
                }
                if freed {
                    self.wake_parked_pods("pod finished");
                }
            }
            Event::Deleted(pod) => {
                let key = ObjectKey::of(&pod.metadata);
                self.queue.delete(&key);
                if self.cache.delete_pod(&key) {
                    self.wake_parked_pods("pod deleted");
                }
            }
            Event::Restarted(pods) => {
                self.cache.reset_pods(&pods);
                let keys: std::collections::HashSet<ObjectKey> =
                    pods.iter().map(|p| ObjectKey::of(&p.metadata)).collect();
                self.queue.retain(|key| keys.contains(key));
                for pod in pods {
                    let key = ObjectKey::of(&pod.metadata);
                    if self.responsible_for(&pod) && !self.cache.is_assumed(&key) {
                        self.queue.add_or_update(Arc::new(pod));
                    }
                }
                self.pods_synced = true;
                self.wake_parked_pods("pods relisted");
                self.log_ready();
            }
        }
    }

    /// Applies one node watch event; a new node or a change that can make room wakes parked pods.
    pub fn handle_node_event(&mut self, event: Event<Node>) {
        match event {
            Event::Applied(node) => {
                let name = node.metadata.name.clone().unwrap_or_default();
                let relevant = self
                    .cache
                    .node(&name)
                    .is_none_or(|old| scheduling_properties_changed(&old.node, &node));
                self.cache.set_node(Arc::new(node));
                if relevant {
                    self.wake_parked_pods("node added or changed");
                }
            }
            Event::Deleted(node) => self
                .cache
                .remove_node(node.metadata.name.as_deref().unwrap_or_default()),
            Event::Restarted(nodes) => {
                self.cache.reset_nodes(nodes.into_iter().map(Arc::new));
                self.nodes_synced = true;
                self.wake_parked_pods("nodes relisted");
                self.log_ready();
            }
        }
    }

    fn log_ready(&self) {
        if self.pods_synced && self.nodes_synced {
            info!(
                nodes = self.cache.node_count(),
                pending = self.queue.len(),
                "ready"
            );
        }
    }

    fn wake_parked_pods(&mut self, cause: &str) {
        let moved = self.queue.move_all_to_active();
        if moved > 0 {
            debug!(pods = moved, cause, "retrying unschedulable pods");
        }
    }

    /// Pops one pod and decides where it goes: assume and bind, or record why it cannot run.
    pub fn schedule_one(&mut self) {
        let Some(pod) = self.queue.pop() else { return };
        let key = ObjectKey::of(&pod.metadata);
        let requests = PodRequests::of(&pod);
        let constraint = self.volumes.as_ref().map(|v| v.constraint(&pod));
        let mut rejected: BTreeMap<Reason, usize> = BTreeMap::new();
        let all = self.cache.node_count();
        let start = self.next_start_node_index % all.max(1);
        let rotated = self.cache.node_infos().skip(start);
        let nodes = rotated.chain(self.cache.node_infos().take(start));
        let nodes = nodes.filter(|info| {
            let Some(Err(reason)) = constraint.as_ref().map(|c| c.allows(&info.node)) else {
                return true;
            };
            *rejected.entry(reason).or_default() += 1;
            false
        });
        let enough = num_feasible_nodes_to_find(all);
        let (decision, examined) = find_and_score(&pod, &requests, nodes, enough);
        let examined = examined + rejected.values().sum::<usize>();
        self.next_start_node_index = (start + examined) % all.max(1);
        let decision = decision.map_err(|mut unschedulable| {
            if !rejected.is_empty() {
                unschedulable.message = merge_message(&unschedulable.message, &rejected);
            }
            unschedulable
        });
        match decision {
            Ok(node) => {
                debug!(pod = %key, node = %node, "assumed pod");
                self.cache.assume(key.clone(), &node, requests);
                self.binds_in_flight += 1;
                self.spawn_bind(pod, key, node);
            }
            Err(unschedulable) => {
                info!(pod = %key, reason = %unschedulable, "pod is unschedulable");
                self.queue.add_unschedulable(&key);
                self.spawn_record_failure(pod, unschedulable.message);
            }
        }
    }

    fn spawn_bind(&self, pod: Arc<Pod>, key: ObjectKey, node: String) {
        let writes = self.writes.clone();
        let results = self.results_tx.clone();
        self.tasks.spawn(async move {
            let result = writes.bind(&pod, &node).await;
            if result.is_ok() {
                info!(pod = %key, node = %node, "bound pod");
                let message = format!("Successfully assigned {key} to {node}");
                if let Err(error) = writes.event(&pod, "Normal", "Scheduled", &message).await {
                    debug!(pod = %key, %error, "could not record Scheduled event");
                }
            }
            // The loop may be gone at shutdown; nothing is left to update then.
            let _ = results.send(BindResult { key, node, result });
        });
    }

    fn spawn_record_failure(&self, pod: Arc<Pod>, message: String) {
        let writes = self.writes.clone();
        self.tasks.spawn(async move {
            let key = ObjectKey::of(&pod.metadata);
            if let Err(error) = writes.set_unschedulable(&pod, &message).await {
                debug!(pod = %key, %error, "could not set PodScheduled=False");
            }
            if let Err(error) = writes
                .event(&pod, "Warning", "FailedScheduling", &message)
                .await
            {
                debug!(pod = %key, %error, "could not record FailedScheduling event");
            }
        });
    }

    /// A bind finished: keep the assumption (the watch will confirm it), or undo it.
    pub fn handle_bind_result(&mut self, outcome: BindResult) {
        self.binds_in_flight = self.binds_in_flight.saturating_sub(1);
        let BindResult { key, node, result } = outcome;
        let Err(error) = result else { return };
        self.cache.forget(&key);
        if error.is_conflict() || error.is_not_found() {
            // Someone else bound it, or it was deleted: the watch tells the rest.
            info!(pod = %key, node = %node, %error, "binding not needed anymore; dropping pod");
            self.queue.delete(&key);
        } else {
            warn!(pod = %key, node = %node, %error, "binding failed; retrying after backoff");
            self.queue
                .add_backoff(&key, self.config.initial_backoff, Instant::now());
        }
        self.wake_parked_pods("assumed pod forgotten");
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Whether a node update can change a scheduling decision: allocatable, labels, taints,
/// `unschedulable`, or a condition's status. Heartbeats (which only move condition timestamps) do
/// not count, or every kubelet heartbeat would retry every parked pod, a timer loop in disguise.
/// Upstream: `nodeSchedulingPropertiesChange` in `eventhandlers.go`.
pub fn scheduling_properties_changed(old: &Node, new: &Node) -> bool {
    let allocatable = |n: &Node| n.status.as_ref().and_then(|s| s.allocatable.clone());
    let spec = |n: &Node| n.spec.as_ref().map(|s| (s.unschedulable, s.taints.clone()));
    let conditions = |n: &Node| {
        let list = n
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_deref())
            .unwrap_or_default();
        list.iter()
            .map(|c| (c.type_.clone(), c.status.clone()))
            .collect::<Vec<_>>()
    };
    allocatable(old) != allocatable(new)
        || old.metadata.labels != new.metadata.labels
        || spec(old) != spec(new)
        || conditions(old) != conditions(new)
}

#[cfg(test)]
#[path = "scheduler_tests.rs"]
mod tests;
