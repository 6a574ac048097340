//! Hollow nodes: many pretend kubelets in one task, for scale tests of the control plane.
//!
//! Kubernetes counterpart: kubemark's hollow kubelet (`cmd/kubemark`, `pkg/kubemark/hollow_kubelet.go`)
//! and, closer still, kwok (`kubernetes-sigs/kwok`, `pkg/kwok/controllers/{node,pod}_controller.go`):
//! one process registers N `Node` objects that look Ready with plenty of allocatable room, watches the
//! pods bound to any of them, and reports each one `Running` with a pod IP **without starting
//! anything**. The scheduler, the apiserver and every watcher see a real-looking cluster of a
//! thousand nodes, while the machine only pays for the API traffic.
//!
//! How it works:
//!
//! 1. [`HollowNodes::register`] creates the nodes `hollow-0` … `hollow-(N-1)`, each with the
//!    `Ready` condition True, capacity = allocatable (`cpu`, `memory`, `pods`) and a pod CIDR of its
//!    own inside 127.248.0.0/13 (`127.248.0.0/26`, `127.248.0.64/26`, …: never bound, but kept on
//!    loopback like every minik address; a /26 each so the scale study's 5 000 nodes fit). An
//!    existing node of that name is replaced.
//! 2. [`HollowNodes::run`] opens **one** watch on all pods (kwok does the same; one watch per node
//!    would be N connections) and hands the pods whose `spec.nodeName` is one of ours to the
//!    hollow pod controller (`pods.rs`, kwok's pod controller):
//!    - a bound pod not yet `Running` gets one status patch: phase `Running`, `podIP`, the `Ready`
//!      conditions and a running state per container (what `sync_pod` + the status manager of a real
//!      kubelet would eventually write);
//!    - a pod with a `deletionTimestamp` is deleted for good (grace period 0, uid precondition), the
//!      step a real kubelet takes once the containers are gone.
//! 3. On shutdown the nodes are deleted again so the cluster is left as it was.
//!
//! Each node's Lease is renewed every 10 s (`leases.rs`), so the node lifecycle controller keeps
//! them Ready.
//!
//! minik simplifies: no container state machine (pods go straight to Running), no node status updates after
//! registration. The real kubelet (`minik-kubelet`) shares no code with this: a hollow node runs
//! nothing, so it needs none of the kubelet's runtime, sandbox or pod workers.
//!
//! Used by `bench/scheduling.rs` (scheduler_perf's fake nodes) and `bench/rollout.rs` (a
//! Deployment's pods become Available, and its old pods go, without a real kubelet). Read next:
//! `pods.rs`.

mod leases;
mod pods;

pub use pods::running_status;

use std::collections::{BTreeMap, HashMap};
use std::net::Ipv4Addr;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use minik_api::core::{Node, NodeAddress, NodeCondition, NodeSpec, NodeStatus, Pod};
use minik_api::meta::ObjectMeta;
use minik_client::{Api, Client, DeleteParams, ListParams};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::Result;
use pods::HollowPodController;

/// The label every hollow node carries (value `"true"`), so pods can target them with a
/// `nodeSelector` and real nodes are left alone.
pub const HOLLOW_LABEL: &str = "minik.dev/hollow";

/// How many hollow nodes fit in the address plan (`127.248.0.0` … `127.255.255.192`, one /26 each).
pub const MAX_HOLLOW_NODES: usize = 8 * 256 * 4;

/// The prefix length of a hollow node's pod CIDR: 62 usable addresses, reused round-robin.
pub const POD_CIDR_PREFIX: u8 = 26;

/// What to pretend.
#[derive(Clone, Debug)]
pub struct HollowConfig {
    /// The apiserver, e.g. `http://127.0.0.1:6443`.
    pub server: String,
    /// The kubeconfig to connect with (a secure cluster's admin); its server wins.
    pub kubeconfig: Option<std::path::PathBuf>,
    /// How many nodes to register.
    pub count: usize,
    /// Node names are `{prefix}{index}` (default `hollow-`).
    pub name_prefix: String,
    /// Allocatable of every node.
    pub cpu: String,
    /// See [`HollowConfig::cpu`].
    pub memory: String,
    /// See [`HollowConfig::cpu`] (upstream's default is 110 pods per node).
    pub max_pods: u32,
    /// How many status patches / deletes may be in flight at once.
    pub concurrency: usize,
}

impl Default for HollowConfig {
    fn default() -> Self {
        HollowConfig {
            server: "http://127.0.0.1:6443".into(),
            kubeconfig: None,
            count: 10,
            name_prefix: "hollow-".into(),
            cpu: "32".into(),
            memory: "256Gi".into(),
            max_pods: 110,
            concurrency: 32,
        }
    }
}

/// The network address of hollow node `index`'s pod CIDR: the `index`-th /26 of 127.248.0.0/13.
pub fn pod_cidr(index: usize) -> Ipv4Addr {
    let base = u32::from(Ipv4Addr::new(127, 248, 0, 0));
    Ipv4Addr::from(base + (index as u32) * 64)
}

/// The `n`-th address (0-based) handed out on the node whose CIDR starts at `network`: `.1` …
/// `.62` of the /26, then round again (hollow pods never bind their address, so reuse is harmless).
pub fn pod_ip(network: Ipv4Addr, n: u64) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(network) + (n % 62) as u32 + 1)
}

/// Registers the nodes and runs them until `shutdown`; deletes them on the way out.
pub async fn run_hollow_nodes(config: HollowConfig, shutdown: CancellationToken) -> Result<()> {
    let nodes = HollowNodes::register(config).await?;
    nodes.run(shutdown).await
}

/// Registered hollow nodes, ready to [`run`](HollowNodes::run).
pub struct HollowNodes {
    config: HollowConfig,
    client: Client,
    /// Node name → its index (which fixes its pod CIDR).
    names: Arc<HashMap<String, usize>>,
}

impl HollowNodes {
    /// Creates (or replaces) the `count` Node objects, all Ready.
    pub async fn register(config: HollowConfig) -> Result<HollowNodes> {
        if config.count > MAX_HOLLOW_NODES {
            crate::error::bail!(
                "hollow nodes: at most {MAX_HOLLOW_NODES}, asked for {}",
                config.count
            );
        }
        let client = Client::connect(&config.server, config.kubeconfig.as_deref())?;
        let api: Api<Node> = Api::all(client.clone());
        let names: HashMap<String, usize> = (0..config.count)
            .map(|i| (format!("{}{i}", config.name_prefix), i))
            .collect();
        let indexed: Vec<(String, usize)> = names.iter().map(|(n, i)| (n.clone(), *i)).collect();
        futures::stream::iter(indexed)
            .map(|(name, index)| register_node(&api, &config, name, index))
            .buffer_unordered(config.concurrency.max(1))
            .try_collect::<Vec<()>>()
            .await?;
        info!(count = config.count, "registered hollow nodes");
        Ok(HollowNodes {
            config,
            client,
            names: Arc::new(names),
        })
    }

    /// The names of the registered nodes.
    pub fn node_names(&self) -> Vec<String> {
        self.names.keys().cloned().collect()
    }

    /// Watches all pods and plays kubelet for the ones bound to our nodes, until `shutdown`.
    pub async fn run(self, shutdown: CancellationToken) -> Result<()> {
        let pods: Api<Pod> = Api::all(self.client.clone());
        let worker = HollowPodController::new(
            self.client.clone(),
            self.names.clone(),
            self.config.concurrency,
        );
        let leases = tokio::spawn(leases::renew_leases(
            self.client.clone(),
            self.node_names(),
            self.config.concurrency,
            shutdown.clone(),
        ));
        let mut events = std::pin::pin!(minik_client::watcher(pods, ListParams::default()));
        info!(nodes = self.names.len(), "ready");
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => break,
                event = events.next() => match event {
                    Some(Ok(minik_client::Event::Applied(pod))) => worker.handle(pod).await,
                    Some(Ok(minik_client::Event::Restarted(list))) => {
                        for pod in list {
                            worker.handle(pod).await;
                        }
                    }
                    Some(Ok(minik_client::Event::Deleted(pod))) => worker.forget(&pod).await,
                    Some(Err(err)) => debug!(error = %err, "pod watch error, the watcher retries"),
                    None => break,
                },
            }
        }
        worker.tasks.close();
        worker.tasks.wait().await;
        leases.abort();
        let _ = leases.await;
        self.unregister().await;
        Ok(())
    }

    /// Deletes our nodes (best effort: a node already gone is fine).
    async fn unregister(&self) {
        let api: Api<Node> = Api::all(self.client.clone());
        let names: Vec<String> = self.node_names();
        futures::stream::iter(names)
            .for_each_concurrent(self.config.concurrency.max(1), |name| {
                let api = api.clone();
                async move {
                    if let Err(err) = api.delete(&name, &DeleteParams::default()).await {
                        if !err.is_not_found() {
                            warn!(node = %name, error = %err, "deleting hollow node failed");
                        }
                    }
                }
            })
            .await;
        info!(count = self.names.len(), "unregistered hollow nodes");
    }
}

/// Creates one node, replacing a stale one of the same name.
async fn register_node(
    api: &Api<Node>,
    config: &HollowConfig,
    name: String,
    index: usize,
) -> Result<()> {
    let node = hollow_node(config, &name, index);
    match api.create(&node).await {
        Ok(_) => Ok(()),
        Err(err) if err.is_already_exists() => {
            api.delete(&name, &DeleteParams::default()).await?;
            api.create(&node).await?;
            Ok(())
        }
        Err(err) => Err(err.into()),
    }
}

/// The Node object of hollow node `index`: Ready, with allocatable room and its own pod CIDR.
pub fn hollow_node(config: &HollowConfig, name: &str, index: usize) -> Node {
    let network = pod_cidr(index);
    let resources: BTreeMap<String, Quantity> = [
        ("cpu", config.cpu.clone()),
        ("memory", config.memory.clone()),
        ("pods", config.max_pods.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), Quantity(v)))
    .collect();
    let labels = [
        ("kubernetes.io/hostname", name),
        (HOLLOW_LABEL, "true"),
        ("type", "kwok"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let now = minik_api::now();
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(labels),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            pod_cidr: Some(format!("{network}/{POD_CIDR_PREFIX}")),
            ..Default::default()
        }),
        status: Some(NodeStatus {
            capacity: Some(resources.clone()),
            allocatable: Some(resources),
            addresses: Some(vec![NodeAddress {
                type_: "InternalIP".into(),
                address: "127.0.0.1".into(),
            }]),
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: "True".into(),
                reason: Some("KubeletReady".into()),
                message: Some("hollow kubelet is posting ready status".into()),
                last_heartbeat_time: Some(now.clone()),
                last_transition_time: Some(now),
            }]),
            ..Default::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Node `i` gets its own /26 inside 127.248.0.0/13, so 8 192 nodes never share addresses.
    #[test]
    fn every_hollow_node_gets_its_own_loopback_cidr() {
        assert_eq!(pod_cidr(0), Ipv4Addr::new(127, 248, 0, 0));
        assert_eq!(pod_cidr(5), Ipv4Addr::new(127, 248, 1, 64));
        assert_eq!(pod_cidr(1024), Ipv4Addr::new(127, 249, 0, 0));
        assert_eq!(
            pod_cidr(MAX_HOLLOW_NODES - 1),
            Ipv4Addr::new(127, 255, 255, 192)
        );
        let network = pod_cidr(3);
        assert_eq!(pod_ip(network, 0), Ipv4Addr::new(127, 248, 0, 193));
        assert_eq!(pod_ip(network, 61), Ipv4Addr::new(127, 248, 0, 254));
        assert_eq!(pod_ip(network, 62), Ipv4Addr::new(127, 248, 0, 193));
    }

    /// A hollow node is Ready, labelled, and has allocatable room the scheduler can fill.
    #[test]
    fn hollow_node_is_ready_with_allocatable_pods() {
        let node = hollow_node(&HollowConfig::default(), "hollow-7", 7);
        let status = node.status.unwrap();
        let ready = &status.conditions.unwrap()[0];
        assert_eq!(
            (ready.type_.as_str(), ready.status.as_str()),
            ("Ready", "True")
        );
        assert_eq!(status.allocatable.unwrap()["pods"].0, "110");
        assert_eq!(node.metadata.labels.unwrap()[HOLLOW_LABEL], "true");
        assert_eq!(
            node.spec.unwrap().pod_cidr.as_deref(),
            Some("127.248.1.192/26")
        );
    }
}
