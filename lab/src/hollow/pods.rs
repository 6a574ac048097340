//! A hollow node's pods: what kwok's pod controller does, one status patch and one delete per pod.
//!
//! Kubernetes counterpart: kwok's `pkg/kwok/controllers/pod_controller.go`, which answers for the
//! kubelet of every fake node. For each pod bound to one of our nodes, [`HollowPodController`]
//! writes what `sync_pod` and the status manager of a real kubelet would eventually write
//! ([`running_status`]: phase `Running`, a pod IP, the Ready conditions) and, once the pod has a
//! `deletionTimestamp`, the final delete (grace period 0, uid precondition) a real kubelet sends
//! when the containers are gone. At most `concurrency` calls are in flight; the watch loop waits
//! for a free slot (backpressure).
//!
//! minik simplifies: no container state machine, no probes, no restarts, no status updates after
//! Running.
//!
//! Read next: `mod.rs` for the nodes and the watch that feeds `HollowPodController::handle`.

use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;
use std::sync::Arc;

use minik_api::core::Pod;
use minik_client::{Api, Client, DeleteParams, Patch};
use serde_json::{json, Value};
use tokio::sync::{Mutex, Semaphore};
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use super::{pod_cidr, pod_ip};

/// Plays the kubelet's part for each pod: one status patch to Running, one final delete.
pub(super) struct HollowPodController {
    client: Client,
    names: Arc<HashMap<String, usize>>,
    /// Pod uids already handled (reported Running / finally deleted), so a watch event for our own
    /// patch does not cause another one.
    done: Arc<Mutex<HashSet<String>>>,
    /// Addresses handed out per node index.
    next_ip: Mutex<HashMap<usize, u64>>,
    limit: Arc<Semaphore>,
    pub(super) tasks: TaskTracker,
}

impl HollowPodController {
    pub(super) fn new(
        client: Client,
        names: Arc<HashMap<String, usize>>,
        concurrency: usize,
    ) -> Self {
        HollowPodController {
            client,
            names,
            done: Arc::default(),
            next_ip: Mutex::default(),
            limit: Arc::new(Semaphore::new(concurrency.max(1))),
            tasks: TaskTracker::new(),
        }
    }

    /// Decides what a pod needs (nothing, Running, final delete) and starts it.
    pub(super) async fn handle(&self, pod: Pod) {
        let Some(index) = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_ref())
            .and_then(|n| self.names.get(n))
            .copied()
        else {
            return;
        };
        let (Some(uid), Some(name), Some(namespace)) = (
            pod.metadata.uid.clone(),
            pod.metadata.name.clone(),
            pod.metadata.namespace.clone(),
        ) else {
            return;
        };
        let terminating = pod.metadata.deletion_timestamp.is_some();
        let running = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
        let key = if terminating {
            format!("{uid}/delete")
        } else {
            uid.clone()
        };
        if (!terminating && running) || !self.done.lock().await.insert(key) {
            return;
        }
        // Backpressure: the watch loop waits here when `concurrency` calls are in flight.
        let Ok(permit) = self.limit.clone().acquire_owned().await else {
            return;
        };
        let api = Api::<Pod>::namespaced(self.client.clone(), &namespace);
        if terminating {
            self.tasks.spawn(async move {
                let result = api
                    .delete(&name, &DeleteParams::grace(0).with_uid(&uid))
                    .await;
                match result {
                    Ok(_) => debug!(pod = %format!("{namespace}/{name}"), "deleted hollow pod"),
                    Err(err) if err.is_not_found() || err.is_conflict() => {}
                    Err(err) => warn!(pod = %name, error = %err, "final delete failed"),
                }
                drop(permit);
            });
        } else {
            let ip = {
                let mut next = self.next_ip.lock().await;
                let n = next.entry(index).or_insert(0);
                *n += 1;
                pod_ip(pod_cidr(index), *n - 1)
            };
            let patch = running_status(&pod, ip);
            let done = self.done.clone();
            self.tasks.spawn(async move {
                if let Err(err) = api.patch_status(&name, &Patch::Merge(patch)).await {
                    // Not found: deleted meanwhile. Otherwise let a later event retry.
                    if !err.is_not_found() {
                        warn!(pod = %name, error = %err, "status patch failed");
                        done.lock().await.remove(&uid);
                    }
                } else {
                    debug!(pod = %format!("{namespace}/{name}"), ip = %ip, "hollow pod running");
                }
                drop(permit);
            });
        }
    }

    /// A pod is gone: forget its uid.
    pub(super) async fn forget(&self, pod: &Pod) {
        if let Some(uid) = &pod.metadata.uid {
            let mut done = self.done.lock().await;
            done.remove(uid);
            done.remove(&format!("{uid}/delete"));
        }
    }
}

/// The merge patch a kubelet's status manager would end up writing for a started pod.
pub fn running_status(pod: &Pod, ip: Ipv4Addr) -> Value {
    let now = minik_api::now();
    let now = serde_json::to_value(&now).unwrap_or(Value::Null);
    let condition =
        |type_: &str| json!({"type": type_, "status": "True", "lastTransitionTime": now});
    let containers: Vec<Value> = pod
        .spec
        .iter()
        .flat_map(|spec| spec.containers.iter())
        .map(|c| {
            json!({
                "name": c.name, "image": c.image.clone().unwrap_or_default(), "imageID": "",
                "ready": true, "started": true, "restartCount": 0,
                "state": {"running": {"startedAt": now}},
            })
        })
        .collect();
    json!({"status": {
        "phase": "Running",
        "hostIP": "127.0.0.1", "hostIPs": [{"ip": "127.0.0.1"}],
        "podIP": ip.to_string(), "podIPs": [{"ip": ip.to_string()}],
        "startTime": now,
        "conditions": [
            condition("PodReadyToStartContainers"), condition("Initialized"), condition("Ready"),
            condition("ContainersReady"), condition("PodScheduled"),
        ],
        "containerStatuses": containers,
    }})
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Running patch carries the pod IP, Ready conditions and one running state per container.
    #[test]
    fn running_status_reports_ip_and_every_container() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]},
        }))
        .unwrap();
        let patch = running_status(&pod, Ipv4Addr::new(127, 248, 0, 9));
        assert_eq!(patch["status"]["phase"], "Running");
        assert_eq!(patch["status"]["podIP"], "127.248.0.9");
        let statuses = patch["status"]["containerStatuses"].as_array().unwrap();
        assert_eq!(statuses.len(), 2);
        assert!(statuses[1]["state"]["running"]["startedAt"].is_string());
        let ready = patch["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "Ready");
        assert!(ready);
    }
}
