//! Scale-down: how long each node has been unneeded, and removing one node — taint, drain
//! through the Eviction API, stop its kubelet, delete the Node.
//!
//! Kubernetes counterpart: `core/scaledown/unneeded` (the unneeded-since times),
//! `core/scaledown/actuation` (`ScaleDownActuator`: taint `ToBeDeletedByClusterAutoscaler`,
//! `DrainNode` with eviction retries while a PodDisruptionBudget says no, then
//! `NodeGroup.DeleteNodes`). minik drains one node at a time and waits for it in the loop, where
//! upstream drains in the background.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use minik_client::events::object_reference;
use minik_client::{Api, Client, DeleteParams, ListParams, Method, Patch};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::autoscaler::Context;
use crate::simulate::{name, TO_BE_DELETED_TAINT};
use crate::{Error, Result};

/// Since when each node has been unneeded (upstream `unneeded.Nodes`).
#[derive(Debug, Default)]
pub struct Unneeded {
    since: BTreeMap<String, Instant>,
}

impl Unneeded {
    /// The nodes underused now keep (or start) their time; the others lose theirs.
    pub fn update(&mut self, underused: &[String], now: Instant) {
        self.since.retain(|node, _| underused.contains(node));
        for node in underused {
            self.since.entry(node.clone()).or_insert(now);
        }
    }

    /// The nodes unneeded for at least `unneeded_time`.
    pub fn ready_to_remove(&self, now: Instant, unneeded_time: Duration) -> Vec<String> {
        self.since
            .iter()
            .filter(|(_, since)| now.duration_since(**since) >= unneeded_time)
            .map(|(node, _)| node.clone())
            .collect()
    }

    /// Forgets a node (being removed).
    pub fn forget(&mut self, node: &str) {
        self.since.remove(node);
    }
}

/// The pods bound to `node`.
pub fn pods_on<'a>(pods: &'a [Pod], node: &'a str) -> impl Iterator<Item = &'a Pod> + 'a {
    pods.iter()
        .filter(move |p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(node))
}

/// Removes one node: taint, drain, stop, delete. On a failed drain the taint is taken off again
/// and the node stays.
pub(crate) async fn remove_node(
    ctx: &Context,
    node: &str,
    shutdown: &CancellationToken,
) -> Result<()> {
    let client = ctx.client();
    let nodes = Api::<Node>::all(client.clone());
    let object = nodes.get(node).await?;
    taint(client, &object).await?;
    let reference = object_reference(&object);
    let _ = ctx
        .recorder()
        .publish(
            &reference,
            "Normal",
            "ScaleDown",
            "marked the node as toBeDeleted/unschedulable",
        )
        .await;
    info!(%node, "scale-down: tainted, draining");
    if let Err(error) = drain(ctx, node, shutdown).await {
        untaint(client, node).await;
        let _ = ctx
            .recorder()
            .publish(&reference, "Warning", "ScaleDownFailed", &error.to_string())
            .await;
        return Err(error);
    }
    ctx.group()
        .delete_node(node)
        .await
        .map_err(Error::NodeGroup)?;
    let _ = ctx
        .recorder()
        .publish(
            &reference,
            "Normal",
            "ScaleDown",
            "node removed by cluster autoscaler",
        )
        .await;
    match nodes.delete(node, &DeleteParams::default()).await {
        Err(error) if !error.is_not_found() => return Err(error.into()),
        _ => {}
    }
    info!(%node, "scale-down: node removed");
    Ok(())
}

/// Adds the `ToBeDeletedByClusterAutoscaler:NoSchedule` taint (its value: the time, as upstream).
async fn taint(client: &Client, node: &Node) -> Result<()> {
    let mut taints = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    let now = jiff::Timestamp::now().as_second().to_string();
    taints.push(k8s_openapi::api::core::v1::Taint {
        key: TO_BE_DELETED_TAINT.into(),
        value: Some(now),
        effect: "NoSchedule".into(),
        time_added: None,
    });
    let patch = Patch::Merge(json!({ "spec": { "taints": taints } }));
    Api::<Node>::all(client.clone())
        .patch(name(node), &patch)
        .await?;
    Ok(())
}

/// Takes the taint off again (a failed drain, or a restart finding one left behind).
pub(crate) async fn untaint(client: &Client, node: &str) {
    let nodes = Api::<Node>::all(client.clone());
    let Ok(object) = nodes.get(node).await else {
        return;
    };
    let taints: Vec<_> = object
        .spec
        .and_then(|s| s.taints)
        .unwrap_or_default()
        .into_iter()
        .filter(|t| t.key != TO_BE_DELETED_TAINT)
        .collect();
    let patch = Patch::Merge(json!({ "spec": { "taints": taints } }));
    if let Err(error) = nodes.patch(node, &patch).await {
        warn!(%node, %error, "could not remove the ToBeDeleted taint");
    }
}

/// Evicts every pod of the node (retrying while a PodDisruptionBudget refuses), then waits until
/// they are all gone.
async fn drain(ctx: &Context, node: &str, shutdown: &CancellationToken) -> Result<()> {
    let client = ctx.client();
    let pods = pods_of(client, node).await?;
    for pod in &pods {
        evict(ctx, pod, shutdown)
            .await
            .map_err(|message| Error::Drain {
                node: node.into(),
                message,
            })?;
        let _ = ctx
            .recorder()
            .publish(
                &object_reference(pod),
                "Normal",
                "ScaleDown",
                "deleting pod for node scale down",
            )
            .await;
    }
    let deadline = Instant::now() + ctx.config().max_graceful_termination;
    while !pods_of(client, node).await?.is_empty() {
        if Instant::now() >= deadline || shutdown.is_cancelled() {
            return Err(Error::Drain {
                node: node.into(),
                message: "pods still running after the graceful termination bound".into(),
            });
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

async fn pods_of(client: &Client, node: &str) -> Result<Vec<Pod>> {
    let params = ListParams::default().fields(&format!("spec.nodeName={node}"));
    Ok(Api::<Pod>::all(client.clone()).list(&params).await?.items)
}

/// POSTs an Eviction; a 429 (a PodDisruptionBudget allows no disruption now) is retried every
/// second until `max_pod_eviction_time`, as upstream's drain does.
async fn evict(ctx: &Context, pod: &Pod, shutdown: &CancellationToken) -> Result<(), String> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let pod_name = name(pod);
    let path = format!("/api/v1/namespaces/{namespace}/pods/{pod_name}/eviction");
    let body = json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": pod_name, "namespace": namespace}});
    let deadline = Instant::now() + ctx.config().max_pod_eviction_time;
    loop {
        match ctx
            .client()
            .request_json(Method::POST, &path, Some(&body))
            .await
        {
            Ok(_) => return Ok(()),
            Err(error) if error.is_not_found() => return Ok(()),
            Err(error) if too_many_requests(&error) && Instant::now() < deadline => {
                info!(pod = %pod_name, "eviction refused by a PodDisruptionBudget, retrying");
            }
            Err(error) => return Err(format!("evicting {namespace}/{pod_name}: {error}")),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return Err("shutting down".into()),
            _ = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// A 429: the eviction would violate a PodDisruptionBudget now.
fn too_many_requests(error: &minik_client::Error) -> bool {
    error.status().and_then(|s| s.code) == Some(429)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node keeps its unneeded-since time while it stays underused, loses it when it is not,
    /// and is ready once the unneeded time has passed.
    #[test]
    fn unneeded_times_follow_the_underused_nodes() {
        let start = Instant::now();
        let mut unneeded = Unneeded::default();
        unneeded.update(&["node-101".into(), "node-102".into()], start);
        let later = start + Duration::from_secs(5);
        unneeded.update(&["node-101".into()], later);
        assert!(unneeded
            .ready_to_remove(later, Duration::from_secs(10))
            .is_empty());
        let ten = start + Duration::from_secs(10);
        assert_eq!(
            unneeded.ready_to_remove(ten, Duration::from_secs(10)),
            ["node-101"]
        );
        unneeded.update(&["node-102".into()], ten);
        assert!(
            unneeded
                .ready_to_remove(ten, Duration::from_secs(10))
                .is_empty(),
            "102 starts again"
        );
        unneeded.forget("node-102");
        assert!(unneeded.since.is_empty());
    }
}
