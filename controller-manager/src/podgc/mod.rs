//! The pod garbage collector: deletes terminated pods beyond a threshold, pods whose node is gone,
//! and terminating pods that were never scheduled.
//!
//! Kubernetes counterpart: `pkg/controller/podgc/gc_controller.go`. Upstream runs `gc` every 20 s;
//! here the pod and node informers put the one key [`KEY`] on the queue whenever something the
//! collector cares about changes, and a node in quarantine brings it back when the quarantine ends.
//! One sync is [`decide::plan`] over the stores, then the deletes: a pod not yet terminal is first
//! patched to `Failed` (with `DisruptionTarget`, reason `DeletionByPodGC`, for an orphan), then
//! deleted with grace 0, as upstream does.
//!
//! minik simplifies: no out-of-service taint handling (NL16), no deletion rate limits.

pub mod decide;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use minik_api::core::{Node, Pod};
use minik_api::ObjectKey;
use minik_client::{Api, Client, DeleteParams, Patch, Store, WorkQueue};
use serde_json::json;
use tracing::info;

use crate::controller::Controller;
use crate::informers::{Change, SharedInformers};

/// The collector's only queue key: each sync looks at every pod.
pub const KEY: &str = "podgc";

/// The collector's tunables.
#[derive(Clone, Copy, Debug)]
pub struct PodGcOptions {
    /// Terminated pods kept (`--terminated-pod-gc-threshold`, 12 500; 0 or less: keep all).
    pub terminated_threshold: i64,
    /// How long a node must stay missing before its pods go (upstream's constant 40 s).
    pub orphan_quarantine: Duration,
}

impl Default for PodGcOptions {
    fn default() -> Self {
        PodGcOptions {
            terminated_threshold: 12_500,
            orphan_quarantine: Duration::from_secs(40),
        }
    }
}

/// The collector: the pod and node stores, the queue, and when each missing node was noticed.
pub struct PodGc {
    pods: Store<Pod>,
    nodes: Store<Node>,
    queue: Arc<WorkQueue<&'static str>>,
    missing_since: Mutex<BTreeMap<String, Instant>>,
    options: PodGcOptions,
    client: Client,
}

impl PodGc {
    /// Registers the handlers on the shared Pod and Node informers.
    pub fn new(informers: &SharedInformers, client: Client, options: PodGcOptions) -> Arc<Self> {
        let (pods, nodes) = (informers.informer::<Pod>(), informers.informer::<Node>());
        let gc = Arc::new(PodGc {
            pods: pods.store(),
            nodes: nodes.store(),
            queue: Arc::new(WorkQueue::new()),
            missing_since: Mutex::default(),
            options,
            client,
        });
        let (queue, node_store) = (gc.queue.clone(), gc.nodes.clone());
        pods.add_handler(move |change: &Change<Pod>| {
            let pod = change.object();
            let node = pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.as_deref())
                .filter(|n| !n.is_empty());
            let orphaned = node.is_some_and(|n| node_store.get(&ObjectKey::cluster(n)).is_none());
            let unscheduled_terminating =
                node.is_none() && pod.metadata.deletion_timestamp.is_some();
            if decide::is_terminated(pod) || orphaned || unscheduled_terminating {
                queue.add(KEY);
            }
        });
        let queue = gc.queue.clone();
        nodes.add_handler(move |change: &Change<Node>| {
            if let Change::Deleted(_) = change {
                queue.add(KEY);
            }
        });
        gc
    }

    /// One pass (`gc`): decide, then delete.
    pub async fn gc(&self) -> minik_client::Result<()> {
        let pods = self.pods.state();
        let nodes: BTreeSet<String> = self
            .nodes
            .state()
            .iter()
            .filter_map(|n| n.metadata.name.clone())
            .collect();
        let plan = {
            let mut missing = self.missing_since.lock().unwrap_or_else(|p| p.into_inner());
            let (threshold, quarantine) = (
                self.options.terminated_threshold,
                self.options.orphan_quarantine,
            );
            decide::plan(
                &pods,
                &nodes,
                threshold,
                quarantine,
                &mut missing,
                Instant::now(),
            )
        };
        if let Some(left) = plan.recheck_in {
            self.queue.add_after(KEY, left);
        }
        for key in &plan.terminated {
            info!(pod = %key, threshold = self.options.terminated_threshold, "deleting terminated pod beyond the threshold");
            self.delete(key, None).await?;
        }
        for (node, keys) in &plan.orphaned {
            // `checkIfNodeExists`: the informer may lag; only a 404 from the API is proof.
            if Api::<Node>::all(self.client.clone())
                .get_opt(node)
                .await?
                .is_some()
            {
                continue;
            }
            for key in keys {
                info!(pod = %key, node = %node, "deleting orphaned pod: its node no longer exists");
                self.delete(key, Some("PodGC: node no longer exists"))
                    .await?;
            }
        }
        for key in &plan.unscheduled_terminating {
            info!(pod = %key, "deleting unscheduled terminating pod");
            self.delete(key, None).await?;
        }
        Ok(())
    }

    /// `markFailedAndDeletePodWithCondition`: a pod not yet terminal becomes `Failed` (with
    /// `DisruptionTarget` when there is a `disruption` message), then it is deleted with grace 0.
    async fn delete(&self, key: &ObjectKey, disruption: Option<&str>) -> minik_client::Result<()> {
        let api: Api<Pod> = Api::namespaced(
            self.client.clone(),
            key.namespace.as_deref().unwrap_or("default"),
        );
        let terminal = self
            .pods
            .get(key)
            .is_some_and(|p| decide::is_terminated(&p));
        if !terminal {
            let mut status = json!({ "phase": "Failed" });
            if let Some(message) = disruption {
                status["conditions"] = json!([{
                    "type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                    "message": message, "lastTransitionTime": minik_api::now(),
                }]);
            }
            let patched = api
                .patch_status(&key.name, &Patch::Strategic(json!({ "status": status })))
                .await;
            if let Some(error) = patched.as_ref().err().filter(|e| !e.is_not_found()) {
                tracing::debug!(pod = %key, %error, "could not mark the pod Failed");
            }
        }
        match api.delete(&key.name, &DeleteParams::grace(0)).await {
            Err(error) if !error.is_not_found() => Err(error),
            _ => Ok(()),
        }
    }
}

impl Controller for PodGc {
    type Key = &'static str;

    fn name(&self) -> &'static str {
        "podgc"
    }

    fn queue(&self) -> &Arc<WorkQueue<&'static str>> {
        &self.queue
    }

    async fn sync(&self, _key: &&'static str) -> minik_client::Result<()> {
        self.gc().await
    }
}
