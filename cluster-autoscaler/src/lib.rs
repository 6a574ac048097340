//! minik-cluster-autoscaler: adds nodes when pods cannot be scheduled for lack of room, and
//! removes the nodes it added once they are underused.
//!
//! Kubernetes counterpart: `kubernetes/autoscaler/cluster-autoscaler`. Upstream's loop
//! (`StaticAutoscaler.RunOnce`, every `--scan-interval`) is followed here ([`autoscaler`]):
//!
//! 1. list nodes and pods; the nodes the node group started but that are not Ready yet are
//!    *upcoming* and join the snapshot as empty template nodes;
//! 2. scale-up: the pods the scheduler marked `Unschedulable` that would not fit on any node of the
//!    snapshot are packed onto template nodes ([`simulate::estimate`], upstream's binpacking
//!    estimator); that many nodes are asked of the node group, capped at `--max-nodes-total`;
//!    a `TriggeredScaleUp` event goes to each pod helped;
//! 3. scale-down: a node of the group whose requests stay under `--scale-down-utilization-threshold`
//!    (50 %) for `--scale-down-unneeded-time` (10 min), and whose pods fit on the other nodes, is
//!    tainted `ToBeDeletedByClusterAutoscaler`, drained through the Eviction API (PodDisruptionBudgets
//!    and grace periods honoured), stopped by the node group and its Node deleted ([`scale_down`]);
//! 4. the `cluster-autoscaler-status` ConfigMap in `kube-system` says what it saw ([`status`]).
//!
//! Upstream talks to a cloud provider (`cloudprovider.NodeGroup`: `IncreaseSize`, `DeleteNodes`,
//! `Nodes`). minik's "cloud" is the process that owns the cluster (`minik up`, the test harness),
//! which alone can start a kubelet with the cluster's identities: it implements [`NodeGroup`] and
//! serves it as a node-group API (upstream's `externalgrpc` provider, [`cloud`]); `minik
//! cluster-autoscaler` is a process of its own that reaches the apiserver with its own identity
//! (`system:cluster-autoscaler`) and the cloud through that API ([`run`]). Nodes the group starts
//! carry [`AUTOSCALED_LABEL`]; the others are never removed. Nothing is kept across restarts: a
//! restarted autoscaler rebuilds its view from the Node list and the group's members (its target
//! size is the group's, never a remembered one), so it never adds the same nodes twice.
//!
//! minik simplifies: one node group, nodes all of the template's size; no expanders, priorities,
//! scale-down delays after a scale-up, or parallel drains (one node at a time).

pub mod args;
pub mod autoscaler;
pub mod cloud;
pub mod scale_down;
pub mod simulate;
pub mod status;

use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;

pub use args::{run, Args};
pub use autoscaler::run_with;

/// The label the node group's nodes carry (`minik.dev/autoscaled=true`).
pub const AUTOSCALED_LABEL: &str = "minik.dev/autoscaled";

/// What the autoscaler can ask of the process that owns the cluster (upstream's
/// `cloudprovider.NodeGroup`, reduced to what one group of same-size nodes needs).
pub trait NodeGroup: Send + Sync {
    /// The nodes this group has started and not deleted, registered or not (upstream `Nodes()`;
    /// their number is the group's target size).
    fn nodes(&self) -> BoxFuture<'_, Result<Vec<String>, String>>;
    /// Starts `delta` more nodes and returns their names (upstream `IncreaseSize`); they register
    /// themselves, with [`AUTOSCALED_LABEL`], when their kubelet is up.
    fn increase_size(&self, delta: usize) -> BoxFuture<'_, Result<Vec<String>, String>>;
    /// Stops the node's kubelet (upstream `DeleteNodes`); its pods must be gone already.
    fn delete_node<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), String>>;
}

/// How the autoscaler runs (upstream's flags of the same names).
#[derive(Clone, Debug)]
pub struct Config {
    /// `--max-nodes-total`: the most nodes the cluster may have, the group's included.
    pub max_nodes_total: usize,
    /// `--scan-interval` (10 s upstream).
    pub scan_interval: Duration,
    /// `--scale-down-unneeded-time` (10 min upstream).
    pub scale_down_unneeded_time: Duration,
    /// `--scale-down-utilization-threshold` (0.5 upstream).
    pub scale_down_utilization_threshold: f64,
    /// How long evictions are retried while a PodDisruptionBudget refuses them before the
    /// scale-down is given up (upstream `MaxPodEvictionTime`, 2 min).
    pub max_pod_eviction_time: Duration,
    /// `--max-graceful-termination-sec`: how long evicted pods may take to go (600 s upstream).
    pub max_graceful_termination: Duration,
    /// The apiserver (`--server`; a `--kubeconfig`'s server wins).
    pub server: String,
    /// `--kubeconfig`: the autoscaler's own identity.
    pub kubeconfig: Option<PathBuf>,
    /// `--cloud-config`: the kubeconfig of the node-group API ([`cloud`]).
    pub cloud_config: PathBuf,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_nodes_total: 0,
            scan_interval: Duration::from_secs(10),
            scale_down_unneeded_time: Duration::from_secs(600),
            scale_down_utilization_threshold: 0.5,
            max_pod_eviction_time: Duration::from_secs(120),
            max_graceful_termination: Duration::from_secs(600),
            server: "http://127.0.0.1:6443".into(),
            kubeconfig: None,
            cloud_config: PathBuf::new(),
        }
    }
}

/// What can go wrong in one loop iteration.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Talking to the apiserver failed (boxed: the client's error carries a whole Status).
    #[error("client: {0}")]
    Client(#[source] Box<minik_client::Error>),
    /// The node group could not start or stop a node.
    #[error("node group: {0}")]
    NodeGroup(String),
    /// A node could not be drained (an eviction refused for too long, pods that stayed).
    #[error("drain of {node}: {message}")]
    Drain {
        /// The node.
        node: String,
        /// Why.
        message: String,
    },
}

impl From<minik_client::Error> for Error {
    fn from(error: minik_client::Error) -> Self {
        Error::Client(Box::new(error))
    }
}

/// The autoscaler's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
