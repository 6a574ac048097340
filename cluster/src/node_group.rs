//! The cluster autoscaler's "cloud": a node group of kubelets this process starts and stops, and
//! the autoscaler itself, run beside it.
//!
//! Kubernetes counterpart: a cloud provider's node group (an AWS Auto Scaling group, a GCE managed
//! instance group) behind `cloudprovider.NodeGroup`, and the cluster-autoscaler Deployment.
//! Upstream the autoscaler is a pod calling the cloud's API; in minik the only thing that can start
//! a kubelet with the cluster's identities (its certificate from `DATA/pki`, its pod CIDR, the
//! component flags) is the process that owns the cluster — `minik up` or the test harness — so the
//! node group lives here and the autoscaler runs as a task of that process, with the admin's
//! client. Its nodes are `node-101`, `node-102` … (their pod CIDRs `127.P.101.0/24` …, clear of
//! the `--nodes` ones), labelled `minik.dev/autoscaled=true` through the kubelet's `--node-labels`.
//!
//! [`Autoscaling::kill`] aborts the autoscaler's task without letting it clean up (what `kill -9`
//! does to upstream's pod); [`Autoscaling::start`] starts a fresh one, which rebuilds its view from
//! the Node list and this group's members.

use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use minik_client::Client;
use minik_cluster_autoscaler::{NodeGroup, AUTOSCALED_LABEL};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

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

    /// Takes every kubelet out of the group (the cluster is stopping).
    pub(crate) fn take_all(&self) -> Vec<Supervised> {
        let mut state = self.state.lock().expect("node group lock");
        state.members.drain(..).map(|(_, s)| s).collect()
    }
}

impl NodeGroup for ClusterNodeGroup {
    fn nodes(&self) -> Vec<String> {
        let state = self.state.lock().expect("node group lock");
        state.members.iter().map(|(node, _)| node.clone()).collect()
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

/// The node group and the autoscaler's task.
pub struct Autoscaling {
    pub(crate) group: Arc<ClusterNodeGroup>,
    config: minik_cluster_autoscaler::Config,
    client: Client,
    task: Option<(CancellationToken, JoinHandle<()>)>,
}

impl Autoscaling {
    pub(crate) fn new(
        group: ClusterNodeGroup,
        config: minik_cluster_autoscaler::Config,
        client: Client,
    ) -> Self {
        Autoscaling {
            group: Arc::new(group),
            config,
            client,
            task: None,
        }
    }

    /// Starts the autoscaler's task (again); a running one is left alone.
    pub fn start(&mut self) {
        if self.task.as_ref().is_some_and(|(_, t)| !t.is_finished()) {
            return;
        }
        let token = CancellationToken::new();
        let group: Arc<dyn NodeGroup> = self.group.clone();
        let run = minik_cluster_autoscaler::run(
            self.config.clone(),
            self.client.clone(),
            group,
            token.clone(),
        );
        let task = tokio::spawn(async move {
            if let Err(error) = run.await {
                tracing::warn!(%error, "cluster autoscaler failed");
            }
        });
        self.task = Some((token, task));
    }

    /// Aborts the task at its next await, with no clean-up: the in-process `kill -9`.
    pub fn kill(&mut self) {
        if let Some((_, task)) = self.task.take() {
            task.abort();
        }
    }

    /// Stops the task and waits for it.
    pub(crate) async fn stop(&mut self) {
        if let Some((token, task)) = self.task.take() {
            token.cancel();
            let _ = task.await;
        }
    }

    /// The group's nodes.
    pub fn nodes(&self) -> Vec<String> {
        self.group.nodes()
    }
}
