//! A running cluster: its state, one component at a time (kill, stop, restart, add a node), and
//! the orderly stop of the whole.
//!
//! Kubernetes counterpart: what an operator does to a kind or kubeadm node by hand — `kill -9` a
//! kubelet, `systemctl restart kubelet`, join one more node — and kind's `Delete`. Killing and
//! restarting keep the component's command line, so a restarted kubelet finds its root directory
//! (and its running containers) again. Signals need [`Mode::Processes`](crate::Mode); stopping and
//! restarting work in either mode.
//!
//! Stopping mirrors a node drain: every pod is deleted gracefully (the kubelet leaves pods running
//! when it stops, so they must go first) — except the pods of a node whose kubelet is dead, which
//! nobody would stop: they are force deleted at once instead of holding the stop for their grace — the components are stopped in reverse start order, and
//! the leftovers re-parented to us are killed and reaped.

use std::path::PathBuf;
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio_util::sync::CancellationToken;

use crate::cluster::{Cluster, ClusterState, ComponentState, Member};
use crate::component::Component;
use crate::supervisor::{self, Exit, UnexpectedExit};
use crate::{drain, Error, Result};

/// What [`Cluster::stop`] did.
#[derive(Debug, Default)]
pub struct Stopped {
    /// Each component, in stop order, and how it ended (`None`: it had been stopped already).
    pub components: Vec<(String, Option<Exit>)>,
    /// How many leftover processes were killed (only with `reap_leftovers`).
    pub orphans: usize,
}

impl Cluster {
    /// The components' current state (name, pid, address, log), for `minik status`. An
    /// in-process component shows this process's pid.
    pub fn state(&self) -> ClusterState {
        ClusterState {
            pid: std::process::id(),
            server: self.server_url.clone(),
            components: self
                .members
                .iter()
                .map(|m| ComponentState {
                    name: m.running.name.clone(),
                    pid: m.running.pid.unwrap_or_else(std::process::id),
                    address: m.running.address.clone(),
                    log: m.running.log.clone(),
                    restarts: m.restart.restarts,
                    last_exit: m.restart.last_exit.clone(),
                })
                .collect(),
        }
    }

    /// The names of the components, in start order (`apiserver`, …, `kubelet-node-1`, …).
    pub fn component_names(&self) -> Vec<String> {
        self.members
            .iter()
            .map(|m| m.running.name.clone())
            .collect()
    }

    /// Waits for the next component that exits without being asked to.
    pub async fn next_unexpected_exit(&mut self) -> Option<UnexpectedExit> {
        self.unexpected.recv().await
    }

    /// The last `lines` lines of a component's log.
    pub fn log_tail(&self, name: &str, lines: usize) -> Option<(PathBuf, String)> {
        let member = self.members.iter().find(|m| m.running.name == name)?;
        Some((member.running.log.clone(), member.running.log_tail(lines)))
    }

    /// The pid of a running process-mode component (`kubelet-node-1`, `apiserver`, …).
    pub fn pid(&self, name: &str) -> Option<u32> {
        let member = self.members.iter().find(|m| m.running.name == name)?;
        member.running.pid.filter(|_| member.running.is_running())
    }

    /// Sends `signal` to a process-mode component; SIGKILL waits until it has been reaped.
    pub async fn kill(&mut self, name: &str, signal: Signal) -> Result<()> {
        self.member_mut(name)?.running.signal(signal).await
    }

    /// Stops one component gracefully (either mode); `restart` starts it again.
    pub async fn stop_component(&mut self, name: &str) -> Result<Option<Exit>> {
        Ok(self.member_mut(name)?.running.stop().await)
    }

    /// Starts a stopped or killed component again with the same command line; the API server is
    /// waited for (`/readyz`), the others are not (their log still holds the first `ready`).
    pub async fn restart(&mut self, name: &str) -> Result<()> {
        let index = self.index_of(name)?;
        let member = &self.members[index];
        if member.running.is_running() {
            return Err(Error::Component {
                name: name.into(),
                message: "still running".into(),
            });
        }
        let running = self.spawn(member.component, name, &member.args)?;
        self.members[index].running = running;
        if self.members[index].component == Component::Apiserver {
            self.wait_ready(index).await?;
        }
        Ok(())
    }

    /// Starts one more kubelet (`node-N+1`) and waits until its node is Ready; returns its name.
    pub async fn add_node(&mut self) -> Result<String> {
        let node = self.launch_kubelet()?;
        self.wait_nodes_ready().await?;
        Ok(node)
    }

    /// The autoscaler's node group and its API, when the cluster runs them.
    pub fn autoscaling(&mut self) -> Option<&mut crate::node_group::Autoscaling> {
        self.autoscaling.as_mut()
    }

    /// Drains the pods, stops the components in reverse order and reaps every leftover process.
    pub async fn stop(self) -> Stopped {
        self.stop_with(CancellationToken::new()).await
    }

    /// [`Cluster::stop`], where cancelling `hurry` cuts the wait for pods short (the
    /// remaining pods are force deleted and their processes killed).
    pub async fn stop_with(mut self, hurry: CancellationToken) -> Stopped {
        let mut stopped = Stopped::default();
        let autoscaling = self.autoscaling.take();
        // Controllers that create pods stop before the drain: a ReplicaSet would otherwise
        // replace every pod the drain deletes, and the autoscaler add nodes for them.
        let (creators, rest) =
            std::mem::take(&mut self.members)
                .into_iter()
                .partition(|m: &Member| {
                    m.component.creates_pods() || m.component == Component::ClusterAutoscaler
                });
        self.members = rest;
        for Member { running, .. } in creators {
            self.stop_member(running, &mut stopped).await;
        }
        let apiserver_up = self
            .members
            .iter()
            .any(|m| m.component == Component::Apiserver && m.running.is_running());
        if apiserver_up {
            if let Ok(client) = self.client() {
                let (progress, grace) = (self.config.progress, self.config.drain_grace);
                let dead = self.dead_nodes();
                drain::delete_all_pods(&client, &hurry, progress, grace, &dead).await;
            }
        }
        for running in autoscaling.iter().flat_map(|a| a.group.take_all()) {
            self.stop_member(running, &mut stopped).await;
        }
        while let Some(Member { running, .. }) = self.members.pop() {
            self.stop_member(running, &mut stopped).await;
        }
        if self.config.reap_leftovers {
            stopped.orphans =
                supervisor::reap_orphans(Duration::from_secs(5), &self.data_dir).await;
            if stopped.orphans > 0 {
                self.say(&format!(
                    " ✓ Killed {} leftover process(es)",
                    stopped.orphans
                ));
            }
        }
        self.remove_node_cgroups();
        // The front door last: nothing is left behind it.
        self.front_door.take();
        stopped
    }

    /// A kubelet killed with -9 and never restarted leaves its pod cgroups behind (empty once
    /// its pods' processes are gone): removed as its node goes, as a node's cgroups go with it.
    fn remove_node_cgroups(&self) {
        for node in 1..=self.nodes {
            let name = format!("node-{node}");
            let root = self.data_dir.join("nodes").join(&name);
            let base = minik_kubelet::cgroups::base_name(&name, &root);
            let removed = minik_kubelet::cgroups::remove_node(&base);
            if removed > 0 {
                tracing::info!(node = %name, removed, "removed the node's leftover pod cgroups");
            }
        }
    }

    /// The nodes whose kubelet is not running: nobody would finish their pods' graceful
    /// deletion, so the drain force deletes them (their processes are reaped below).
    fn dead_nodes(&self) -> Vec<String> {
        self.members
            .iter()
            .filter(|m| m.component == Component::Kubelet && !m.running.is_running())
            .filter_map(|m| m.running.name.strip_prefix("kubelet-").map(str::to_string))
            .collect()
    }

    /// Stops one component and records how it ended.
    async fn stop_member(&self, mut running: crate::supervisor::Supervised, stopped: &mut Stopped) {
        let exit = running.stop().await;
        let how = exit.as_ref().map_or_else(|| "gone".into(), Exit::to_string);
        self.say(&format!(" ✓ Stopped {} ({how})", running.name));
        stopped.components.push((running.name, exit));
    }

    fn index_of(&self, name: &str) -> Result<usize> {
        self.members
            .iter()
            .position(|m| m.running.name == name)
            .ok_or_else(|| Error::Component {
                name: name.into(),
                message: "no such component".into(),
            })
    }

    fn member_mut(&mut self, name: &str) -> Result<&mut Member> {
        let index = self.index_of(name)?;
        Ok(&mut self.members[index])
    }
}

impl Drop for Cluster {
    /// The safety net when `stop` was not called: kill every component at once.
    fn drop(&mut self) {
        for member in &self.members {
            member.running.kill_now();
        }
        if let Some(autoscaling) = self.autoscaling.as_mut() {
            for running in autoscaling.group.take_all() {
                running.kill_now();
            }
        }
    }
}
