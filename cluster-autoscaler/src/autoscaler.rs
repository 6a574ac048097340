//! The autoscaler's loop: every scan interval, look at the cluster, scale up or down, write the
//! status.
//!
//! Kubernetes counterpart: `core/static_autoscaler.go` (`RunOnce`) with `core/scaleup` and
//! `core/scaledown`. Upstream reads listers fed by informers; minik lists nodes and pods once per
//! iteration (the loop is periodic either way, and a list is one consistent snapshot).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::{Node, Pod};
use minik_client::events::{object_reference, Recorder};
use minik_client::{Api, Client, ListParams};
use minik_scheduler::node_info::NodeInfo;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::scale_down::{self, Unneeded};
use crate::simulate::{self, name};
use crate::status::{self, Activity};
use crate::{Config, NodeGroup, Result, AUTOSCALED_LABEL};

/// Runs the autoscaler with `group` until `shutdown`: removes a `ToBeDeletedByClusterAutoscaler`
/// taint a previous run left (upstream `CleanAllToBeDeleted`), then loops.
pub async fn run_with(
    config: Config,
    client: Client,
    group: Arc<dyn NodeGroup>,
    shutdown: CancellationToken,
) -> Result<()> {
    let mut autoscaler = Autoscaler {
        recorder: Recorder::new(client.clone(), "cluster-autoscaler", None),
        client,
        group,
        unneeded: Unneeded::default(),
        config,
    };
    autoscaler.clean_to_be_deleted().await;
    info!(max_nodes = autoscaler.config.max_nodes_total, "ready");
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(autoscaler.config.scan_interval) => {}
        }
        if let Err(error) = autoscaler.run_once(&shutdown).await {
            warn!(%error, "autoscaler iteration failed");
        }
    }
    Ok(())
}

/// The autoscaler's state between iterations: only the unneeded-since times.
pub(crate) struct Autoscaler {
    config: Config,
    client: Client,
    group: Arc<dyn NodeGroup>,
    recorder: Recorder,
    unneeded: Unneeded,
}

/// One iteration's view of the cluster (what the status ConfigMap is written from).
pub struct View {
    pub nodes: Vec<Node>,
    pub pods: Vec<Pod>,
    /// The group's nodes that are not Ready (or not registered) yet.
    pub upcoming: Vec<String>,
    /// Every node name there is or will be: registered ones and the group's.
    pub all_names: BTreeSet<String>,
    /// The group's members, as the node group says now (its target size is their number).
    pub group: Vec<String>,
}

impl Autoscaler {
    async fn run_once(&mut self, shutdown: &CancellationToken) -> Result<()> {
        let view = self.view().await?;
        let mut activity = Activity::default();
        let pending: Vec<&Pod> = view
            .pods
            .iter()
            .filter(|p| simulate::is_unschedulable(p))
            .collect();
        activity.unschedulable = pending.len();
        activity.upcoming = view.upcoming.len();
        if !pending.is_empty() {
            activity.scaled_up = self.scale_up(&view, &pending).await?;
        }
        if pending.is_empty() && view.upcoming.is_empty() {
            let candidates = self.update_unneeded(&view);
            activity.candidates = candidates.len();
            if let Some(node) = self.removable(&view, &candidates) {
                status::write(&self.client, &view, &activity).await;
                self.unneeded.forget(&node);
                scale_down::remove_node(self, &node, shutdown).await?;
                activity.removed = Some(node);
            }
        } else {
            self.unneeded = Unneeded::default();
        }
        status::write(&self.client, &view, &activity).await;
        Ok(())
    }

    async fn view(&self) -> Result<View> {
        let nodes = Api::<Node>::all(self.client.clone())
            .list(&ListParams::default())
            .await?
            .items;
        let pods = Api::<Pod>::all(self.client.clone())
            .list(&ListParams::default())
            .await?
            .items;
        let ready: BTreeSet<&str> = nodes
            .iter()
            .filter(|n| simulate::is_ready(n))
            .map(name)
            .collect();
        let group = self.group.nodes().await.map_err(crate::Error::NodeGroup)?;
        let upcoming = group
            .iter()
            .filter(|n| !ready.contains(n.as_str()))
            .cloned()
            .collect();
        let mut all_names: BTreeSet<String> = nodes.iter().map(|n| name(n).to_string()).collect();
        all_names.extend(group.iter().cloned());
        Ok(View {
            nodes,
            pods,
            upcoming,
            all_names,
            group,
        })
    }

    /// The snapshot the scheduler would use, upcoming nodes included as empty template nodes.
    fn snapshot(&self, view: &View, template: Option<&Node>) -> Vec<NodeInfo> {
        let usable: Vec<Node> = view
            .nodes
            .iter()
            .filter(|n| simulate::is_ready(n) && !simulate::is_to_be_deleted(n))
            .cloned()
            .collect();
        let mut infos: Vec<NodeInfo> = simulate::snapshot(&usable, &view.pods)
            .into_values()
            .collect();
        if let Some(template) = template {
            for upcoming in &view.upcoming {
                let node = simulate::template_node(template, upcoming, &group_labels());
                infos.push(NodeInfo::new(Arc::new(node)));
            }
        }
        infos
    }

    /// Upstream `ScaleUp`: how many template nodes the pods no node can take need; asks the
    /// group for them. Returns how many were added.
    async fn scale_up(&self, view: &View, pending: &[&Pod]) -> Result<usize> {
        let Some(template) = template(view) else {
            warn!("no Ready node to use as the template: cannot scale up");
            return Ok(0);
        };
        let mut infos = self.snapshot(view, Some(&template));
        let left = simulate::filter_out_schedulable(pending, &mut infos);
        let room = self
            .config
            .max_nodes_total
            .saturating_sub(view.all_names.len());
        let (count, helped) = simulate::estimate(&left, &template, &group_labels(), room);
        if count == 0 {
            if !left.is_empty() {
                info!(
                    pods = left.len(),
                    room, "no scale-up possible for the pending pods"
                );
            }
            return Ok(0);
        }
        let before = view.group.len();
        let added = self
            .group
            .increase_size(count)
            .await
            .map_err(crate::Error::NodeGroup)?;
        info!(nodes = count, pods = helped.len(), added = ?added, "scale-up");
        // Upstream's event text: `pod triggered scale-up: [{group 1->3 (max: 4)}]`.
        let message = format!(
            "pod triggered scale-up: [{{minik {before}->{} (max: {})}}]",
            before + added.len(),
            self.config.max_nodes_total
        );
        for pod in helped {
            let _ = self
                .recorder
                .publish(
                    &object_reference(pod),
                    "Normal",
                    "TriggeredScaleUp",
                    &message,
                )
                .await;
        }
        Ok(added.len())
    }

    /// Updates the unneeded-since times of the group's Ready nodes under the threshold; returns
    /// the names of those nodes.
    fn update_unneeded(&mut self, view: &View) -> Vec<String> {
        let infos = simulate::snapshot(&view.nodes, &view.pods);
        let group: BTreeSet<&String> = view.group.iter().collect();
        let underused: Vec<String> = view
            .nodes
            .iter()
            .filter(|n| {
                group.contains(&name(*n).to_string()) && is_autoscaled(n) && simulate::is_ready(n)
            })
            .filter(|n| {
                let used = simulate::utilization(&infos[name(*n)]);
                used < self.config.scale_down_utilization_threshold
            })
            .map(|n| name(n).to_string())
            .collect();
        self.unneeded.update(&underused, Instant::now());
        underused
    }

    /// The first candidate unneeded for long enough whose pods fit on the other nodes.
    fn removable(&self, view: &View, candidates: &[String]) -> Option<String> {
        let ready = self
            .unneeded
            .ready_to_remove(Instant::now(), self.config.scale_down_unneeded_time);
        candidates
            .iter()
            .filter(|n| ready.contains(n))
            .find(|candidate| {
                let pods: Vec<&Pod> = scale_down::pods_on(&view.pods, candidate)
                    .filter(|p| !simulate::is_daemonset_pod(p))
                    .collect();
                let mut others: Vec<NodeInfo> = self
                    .snapshot(view, None)
                    .into_iter()
                    .filter(|i| i.name() != candidate.as_str())
                    .collect();
                simulate::pods_fit_elsewhere(&pods, &mut others)
            })
            .cloned()
    }

    async fn clean_to_be_deleted(&self) {
        let Ok(nodes) = Api::<Node>::all(self.client.clone())
            .list(&ListParams::default())
            .await
        else {
            return;
        };
        for node in nodes.items.iter().filter(|n| simulate::is_to_be_deleted(n)) {
            scale_down::untaint(&self.client, name(node)).await;
        }
    }

    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    pub(crate) fn recorder(&self) -> &Recorder {
        &self.recorder
    }

    pub(crate) fn group(&self) -> &dyn NodeGroup {
        &*self.group
    }

    pub(crate) fn config(&self) -> &Config {
        &self.config
    }
}

/// The labels of the group's nodes.
fn group_labels() -> BTreeMap<String, String> {
    BTreeMap::from([(AUTOSCALED_LABEL.to_string(), "true".to_string())])
}

fn is_autoscaled(node: &Node) -> bool {
    let labels = node.metadata.labels.as_ref();
    labels
        .and_then(|l| l.get(AUTOSCALED_LABEL))
        .map(String::as_str)
        == Some("true")
}

/// A Ready node to copy the size of: one of the group's if any, else any (every node of a minik
/// cluster has the size `minik up --node-cpu …` gave).
fn template(view: &View) -> Option<Node> {
    let ready = || view.nodes.iter().filter(|n| simulate::is_ready(n));
    ready()
        .find(|n| is_autoscaled(n))
        .or_else(|| ready().next())
        .cloned()
}

pub(crate) type Context = Autoscaler;
