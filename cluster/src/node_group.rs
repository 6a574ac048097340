//! The cluster autoscaler's "cloud": a node group of kubelets this process starts and stops.
//!
//! Kubernetes counterpart: a cloud provider's node group (an AWS Auto Scaling group, a GCE managed
//! instance group) behind `cloudprovider.NodeGroup`. Upstream the autoscaler is a pod calling the
//! cloud's API; in minik the only thing that can start a kubelet with the cluster's identities
//! (its certificate from `DATA/pki`, its pod CIDR, the component flags) is the process that owns
//! the cluster — `minik up` or the test harness — so the node group lives here, served to the
//! `minik cluster-autoscaler` process by `node_group_server.rs`. Its nodes are `node-101`,
//! `node-102` … (their pod CIDRs `127.P.101.0/24` …, clear of the `--nodes` ones), labelled
//! `minik.dev/autoscaled=true` through the kubelet's `--node-labels`. The members live in this
//! process, so an autoscaler killed and restarted finds them all: the group's size is never the
//! autoscaler's memory.

use std::sync::Mutex;

use futures::future::BoxFuture;
use minik_cluster_autoscaler::{NodeGroup, AUTOSCALED_LABEL};
use tokio::sync::mpsc;

use crate::cluster::ClusterConfig;
use crate::component::Component;
use crate::supervisor::{Supervised, UnexpectedExit};
use crate::Result;

/// The first node index of the group (`node-101`).
pub const FIRST_INDEX: u8 = 101;

/// Kubelets started on the autoscaler's demand.
pub struct ClusterNodeGroup {
    config: ClusterConfig,
    server_url: String,
    unexpected: mpsc::UnboundedSender<UnexpectedExit>,
    state: Mutex<GroupState>,
}

#[derive(Default)]
struct GroupState {
    next: u8,
    members: Vec<(String, Supervised)>,
}

impl ClusterNodeGroup {
    pub(crate) fn new(
        config: ClusterConfig,
        server_url: String,
        unexpected: mpsc::UnboundedSender<UnexpectedExit>,
    ) -> Self {
        ClusterNodeGroup {
            config,
            server_url,
            unexpected,
            state: Mutex::new(GroupState {
                next: FIRST_INDEX,
                members: Vec::new(),
            }),
        }
    }

    /// Starts one kubelet, `node-N`, with the group's label; does not wait for it.
    fn start_one(&self) -> Result<String> {
        let index = {
            let mut state = self.state.lock().expect("node group lock");
            let index = state.next;
            state.next = state.next.checked_add(1).ok_or_else(|| {
                crate::Error::Start("the node group has used every node index".into())
            })?;
            index
        };
        let component = Component::Kubelet;
        crate::secure::prepare(&self.config, component, index, &self.server_url)?;
        let mut args = component.args(&self.config, index);
        args.extend(["--node-labels".into(), format!("{AUTOSCALED_LABEL}=true")]);
        let node = format!("node-{index}");
        let name = component.instance(Some(&node));
        let running = crate::cluster::spawn_component(
            &self.config,
            &self.unexpected,
            component,
            &name,
            &args,
        )?;
        tracing::info!(%node, pid = ?running.pid, "node group: started a kubelet");
        let mut state = self.state.lock().expect("node group lock");
        state.members.push((node.clone(), running));
        Ok(node)
    }

    /// The group's nodes, in start order.
    pub fn members(&self) -> Vec<String> {
        let state = self.state.lock().expect("node group lock");
        state.members.iter().map(|(node, _)| node.clone()).collect()
    }

    /// Takes every kubelet out of the group (the cluster is stopping).
    pub(crate) fn take_all(&self) -> Vec<Supervised> {
        let mut state = self.state.lock().expect("node group lock");
        state.members.drain(..).map(|(_, s)| s).collect()
    }
}

impl NodeGroup for ClusterNodeGroup {
    fn nodes(&self) -> BoxFuture<'_, Result<Vec<String>, String>> {
        let nodes = self.members();
        Box::pin(async move { Ok(nodes) })
    }

    fn increase_size(&self, delta: usize) -> BoxFuture<'_, Result<Vec<String>, String>> {
        Box::pin(async move {
            (0..delta)
                .map(|_| self.start_one().map_err(|e| e.to_string()))
                .collect()
        })
    }

    fn delete_node<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let running = {
                let mut state = self.state.lock().expect("node group lock");
                let index = state.members.iter().position(|(n, _)| n == name);
                index.map(|i| state.members.remove(i).1)
            };
            let Some(mut running) = running else {
                return Err(format!("{name} is not a node of this group"));
            };
            let exit = running.stop().await;
            tracing::info!(node = %name, ?exit, "node group: stopped a kubelet");
            Ok(())
        })
    }
}

/// The node group and the API that serves it to the autoscaler process, while the cluster runs.
pub struct Autoscaling {
    pub(crate) group: std::sync::Arc<ClusterNodeGroup>,
    /// Kept for its lifetime: dropping it stops serving.
    pub(crate) _server: crate::node_group_server::NodeGroupServer,
}

impl Autoscaling {
    /// The group's nodes, in start order.
    pub fn nodes(&self) -> Vec<String> {
        self.group.members()
    }

    /// Where the node-group API serves.
    pub fn url(&self) -> &str {
        &self._server.url
    }
}
