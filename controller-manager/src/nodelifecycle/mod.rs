//! The node lifecycle controller: notices a node that went silent, taints it, takes its pods out
//! of service and, after their toleration, evicts them.
//!
//! Kubernetes counterpart: `pkg/controller/nodelifecycle/node_lifecycle_controller.go`
//! (`monitorNodeHealth`) together with the taint eviction controller
//! (`pkg/controller/tainteviction`). One sync of a node name:
//!
//! 1. [`health::observe`] the node and its Lease `kube-node-lease/<node>`; a node not heard from
//!    for `--node-monitor-grace-period` (40 s) gets `Ready=Unknown` ([`health::late_conditions`]);
//!    otherwise the node is looked at again when the grace period would run out;
//! 2. its taints follow its Ready condition ([`health::desired_taints`]): `unreachable` (or
//!    `not-ready`) NoSchedule, so the scheduler stops placing pods there, and NoExecute;
//! 3. while it is not Ready its pods get `Ready=False` ([`eviction::needs_not_ready`]), so they
//!    leave the Services' endpoints at once;
//! 4. each pod is deleted (gracefully, after a `DisruptionTarget` condition) once its toleration of
//!    the NoExecute taints runs out ([`eviction::eviction`]: 300 s by the apiserver's default).
//!
//! When the node is heard from again (its kubelet posts `Ready=True`) the taints go.
//!
//! minik simplifies: one queue keyed by node name instead of a 5 s polling loop plus per-pod timed
//! workers; no eviction rate limits or zone states; no startup grace for new nodes.

pub mod eviction;
pub mod health;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use minik_api::core::{Node, Pod};
use minik_api::k8s_openapi::api::coordination::v1::Lease;
use minik_api::ObjectKey;
use minik_client::events::{object_reference, Recorder};
use minik_client::{Api, Client, DeleteParams, Patch, Store, WorkQueue};
use serde_json::json;
use tracing::{debug, info};

use crate::controller::Controller;
use crate::informers::{Change, SharedInformers};
use eviction::Eviction;
use health::Heard;

/// The namespace of the kubelets' Leases.
pub const LEASE_NAMESPACE: &str = "kube-node-lease";

/// The controller's tunables.
#[derive(Clone, Copy, Debug)]
pub struct NodeLifecycleOptions {
    /// How long a node may stay silent before it is `Unknown` (`--node-monitor-grace-period`).
    pub grace_period: Duration,
}

impl Default for NodeLifecycleOptions {
    fn default() -> Self {
        NodeLifecycleOptions {
            grace_period: Duration::from_secs(40),
        }
    }
}

/// The controller: three stores, a queue of node names, and what it heard of each node.
pub struct NodeLifecycleController {
    nodes: Store<Node>,
    leases: Store<Lease>,
    pods: Store<Pod>,
    queue: Arc<WorkQueue<String>>,
    heard: Mutex<HashMap<String, Heard>>,
    /// When this controller first saw NoExecute taints on a node (for taints without timeAdded).
    tainted_since: Mutex<HashMap<String, Timestamp>>,
    options: NodeLifecycleOptions,
    client: Client,
    recorder: Recorder,
}

impl NodeLifecycleController {
    /// Registers the handlers on the shared Node, Lease and Pod informers.
    pub fn new(
        informers: &SharedInformers,
        client: Client,
        options: NodeLifecycleOptions,
    ) -> Arc<Self> {
        let (nodes, leases, pods) = (
            informers.informer::<Node>(),
            informers.informer::<Lease>(),
            informers.informer::<Pod>(),
        );
        let controller = Arc::new(NodeLifecycleController {
            nodes: nodes.store(),
            leases: leases.store(),
            pods: pods.store(),
            queue: Arc::new(WorkQueue::new()),
            heard: Mutex::default(),
            tainted_since: Mutex::default(),
            options,
            recorder: Recorder::new(client.clone(), "node-controller", None),
            client,
        });
        let (queue, store) = (controller.queue.clone(), controller.nodes.clone());
        nodes.add_handler(move |change: &Change<Node>| {
            let name = change.object().metadata.name.clone().unwrap_or_default();
            // A node's readiness decides whether any node may be NoExecute-tainted (NL7).
            let ready_changed = match change {
                Change::Updated { old, new } => {
                    health::ready_status(old) != health::ready_status(new)
                }
                _ => true,
            };
            if ready_changed {
                for node in store.state() {
                    queue.add(node.metadata.name.clone().unwrap_or_default());
                }
            }
            queue.add(name);
        });
        let queue = controller.queue.clone();
        leases.add_handler(move |change: &Change<Lease>| {
            let meta = &change.object().metadata;
            if meta.namespace.as_deref() == Some(LEASE_NAMESPACE) {
                queue.add(meta.name.clone().unwrap_or_default());
            }
        });
        let (queue, store) = (controller.queue.clone(), controller.nodes.clone());
        pods.add_handler(move |change: &Change<Pod>| {
            let node = change
                .object()
                .spec
                .as_ref()
                .and_then(|s| s.node_name.clone());
            let Some(node) = node else { return };
            // Only pods of a troubled node matter here.
            let troubled = store.get(&ObjectKey::cluster(&node)).is_some_and(|n| {
                health::ready_status(&n) != "True" || !health::no_execute_taints(&n).is_empty()
            });
            if troubled {
                queue.add(node);
            }
        });
        controller
    }

    /// Reconciles one node (`monitorNodeHealth` for it, then its pods).
    pub async fn sync_node(&self, name: &str) -> minik_client::Result<()> {
        let Some(node) = self.nodes.get(&ObjectKey::cluster(name)) else {
            self.heard
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(name);
            return Ok(());
        };
        let lease = self.leases.get(&ObjectKey::new(LEASE_NAMESPACE, name));
        let now = Instant::now();
        let heard = {
            let mut heard = self.heard.lock().unwrap_or_else(|p| p.into_inner());
            let updated = health::observe(heard.get(name), &node, lease.as_deref(), now);
            heard.insert(name.to_string(), updated.clone());
            updated
        };
        let nodes: Api<Node> = Api::all(self.client.clone());
        match health::time_left(&heard, now, self.options.grace_period) {
            Some(left) => self.queue.add_after(name.to_string(), left),
            None => {
                if let Some(conditions) = health::late_conditions(&node, &minik_api::now()) {
                    info!(node = %name, "node stopped posting status; marking it Unknown");
                    let patch = json!({ "status": { "conditions": conditions } });
                    nodes.patch_status(name, &Patch::Strategic(patch)).await?;
                    return Ok(()); // the Node's update brings it back here
                }
            }
        }
        let any_ready = self
            .nodes
            .state()
            .iter()
            .any(|n| health::ready_status(n) == "True");
        if let Some(taints) = health::desired_taints(&node, any_ready, &minik_api::now()) {
            info!(node = %name, taints = ?taints.iter().map(|t| format!("{}:{}", t.key, t.effect)).collect::<Vec<_>>(), "updating node taints");
            let rv = node.metadata.resource_version.clone();
            let patch =
                json!({ "metadata": { "resourceVersion": rv }, "spec": { "taints": taints } });
            nodes.patch(name, &Patch::Merge(patch)).await?;
            return Ok(());
        }
        self.sync_pods(&node, name).await
    }

    /// Marks the node's pods not ready while it is not Ready, and evicts those whose toleration
    /// ran out; comes back when the next one is due.
    async fn sync_pods(&self, node: &Node, name: &str) -> minik_client::Result<()> {
        let not_ready = health::ready_status(node) != "True";
        let taints = health::no_execute_taints(node);
        let since = self.tainted_since(name, !taints.is_empty());
        if !not_ready && taints.is_empty() {
            return Ok(());
        }
        let on_node = self
            .pods
            .state()
            .into_iter()
            .filter(|pod| pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(name));
        let mut next: Option<Duration> = None;
        for pod in on_node.filter(|pod| !eviction::is_gone(pod)) {
            let api: Api<Pod> = Api::namespaced(self.client.clone(), namespace(&pod));
            let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
            if not_ready && eviction::needs_not_ready(&pod) {
                info!(pod = %ObjectKey::of(&pod.metadata), node = %name, "marking pod not ready");
                let ready = json!({ "type": "Ready", "status": "False", "lastTransitionTime": minik_api::now() });
                let patch = json!({ "status": { "conditions": [ready] } });
                ignore_not_found(api.patch_status(pod_name, &Patch::Strategic(patch)).await)?;
            }
            match eviction::eviction(&pod, &taints, since, Timestamp::now()) {
                Eviction::Never => {}
                Eviction::After(left) => next = Some(next.map_or(left, |n| n.min(left))),
                Eviction::Now => self.evict(&api, &pod, name).await?,
            }
        }
        if let Some(left) = next {
            debug!(node = %name, ?left, "next eviction");
            self.queue.add_after(name.to_string(), left);
        }
        Ok(())
    }

    /// `addConditionAndDeletePod`: `DisruptionTarget=True`, an event, then a graceful delete.
    async fn evict(&self, api: &Api<Pod>, pod: &Pod, node: &str) -> minik_client::Result<()> {
        let key = ObjectKey::of(&pod.metadata);
        info!(pod = %key, node = %node, "evicting pod: its toleration of the NoExecute taint ran out");
        let condition = json!({
            "type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
            "message": "Taint manager: deleting due to NoExecute taint",
            "lastTransitionTime": minik_api::now(),
        });
        let patch = json!({ "status": { "conditions": [condition] } });
        ignore_not_found(api.patch_status(&key.name, &Patch::Strategic(patch)).await)?;
        let message = format!("Marking for deletion Pod {key}");
        if let Err(error) = self
            .recorder
            .publish(
                &object_reference(pod),
                "Normal",
                "TaintManagerEviction",
                &message,
            )
            .await
        {
            debug!(%error, "could not record event");
        }
        ignore_not_found(
            api.delete(&key.name, &DeleteParams::default())
                .await
                .map(|_| ()),
        )
    }

    /// When the node's NoExecute taints were first seen here (forgotten once they are gone).
    fn tainted_since(&self, name: &str, tainted: bool) -> Timestamp {
        let mut since = self.tainted_since.lock().unwrap_or_else(|p| p.into_inner());
        if !tainted {
            since.remove(name);
            return Timestamp::now();
        }
        *since.entry(name.to_string()).or_insert_with(Timestamp::now)
    }
}

impl Controller for NodeLifecycleController {
    type Key = String;

    fn name(&self) -> &'static str {
        "nodelifecycle"
    }

    fn queue(&self) -> &Arc<WorkQueue<String>> {
        &self.queue
    }

    async fn sync(&self, key: &String) -> minik_client::Result<()> {
        self.sync_node(key).await
    }
}

fn namespace(pod: &Pod) -> &str {
    pod.metadata.namespace.as_deref().unwrap_or("default")
}

/// A pod deleted meanwhile is not an error.
// The client's error carries a whole `Status`, as everywhere in minik.
#[allow(clippy::result_large_err)]
fn ignore_not_found<T>(result: minik_client::Result<T>) -> minik_client::Result<()> {
    match result {
        Ok(_) => Ok(()),
        Err(error) if error.is_not_found() => Ok(()),
        Err(error) => Err(error),
    }
}
