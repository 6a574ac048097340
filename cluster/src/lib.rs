//! minik-cluster: start, supervise and stop a whole minik cluster on this machine.
//!
//! Kubernetes counterpart: kind's `pkg/cluster` (create and delete a cluster of node containers)
//! plus the part of kubeadm that waits for the control plane. minik starts processes where kind
//! starts containers: every component is a child process of the one `minik` binary, in its own
//! process group, logging to `DATA/logs/COMPONENT.log`. What it leaves out: no node images, no
//! kubeadm phases, no HA control plane, no upgrades.
//!
//! One launcher, used by `minik up`, `minik demo`, the benchmarks and the test harness:
//!
//! ```no_run
//! # async fn example() -> minik_cluster::Result<()> {
//! let cluster = minik_cluster::Cluster::start(minik_cluster::ClusterConfig::default()).await?;
//! println!("API server at {}", cluster.server_url);
//! cluster.stop().await;
//! # Ok(())
//! # }
//! ```
//!
//! - [`cluster`]: the configuration and the start, component after component;
//! - [`component`]: the components in start order, their flags and their in-process `run`;
//! - [`control`]: one component at a time (kill, stop, restart, add a node) and the orderly stop
//!   (drain the pods, stop the components in reverse order, reap leftovers);
//! - [`supervisor`]: one supervised child process or task per component;
//! - [`drain`]: readiness checks while starting, signals, and the pod drain while stopping;
//! - [`kubeconfig`]: merging a `minik` context into the user's kubeconfig;
//! - [`nodeipam`]: each node's pod CIDR, carved from the cluster's pod range;
//! - [`files`]: where a cluster keeps its data, pid and state files;
//! - [`ha`] and [`front_door`]: several apiservers on one etcd behind one address;
//! - [`node_group`] and [`node_group_server`]: the cluster autoscaler's node group (kubelets on
//!   demand) and the API that serves it to the `minik cluster-autoscaler` process;
//! - [`one_process`]: `minik up --one-process` (every component a task, as `k3s server` runs
//!   them) and its log file per component.
//!
//! Read next: `cluster.rs`.

pub mod cluster;
pub mod component;
pub mod control;
pub mod dashboard;
pub mod dns;
pub mod drain;
pub mod ephemeral;
pub mod files;
pub mod front_door;
pub mod ha;
pub mod kubeconfig;
pub mod node_group;
pub mod node_group_server;
pub mod nodeipam;
pub mod one_process;
pub mod pki;
pub mod restart;
pub mod secure;
pub mod supervisor;

pub use cluster::{Cluster, ClusterConfig, ClusterState, ComponentState, Mode};
pub use component::Component;
pub use control::Stopped;
pub use files::{default_data_dir, is_minik_up, pid_file, state_file};
pub use restart::Supervision;
pub use supervisor::{Exit, UnexpectedExit};

/// What can go wrong while starting or stopping a cluster.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or process operation failed; `what` says which.
    #[error("{what}: {source}")]
    Io {
        /// What was being done (`opening DATA/logs/apiserver.log`).
        what: String,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A component did not come up (it exited, or did not get ready in time).
    #[error("{0}")]
    Start(String),
    /// A request about one component that cannot be done (no such component, still running).
    #[error("component {name}: {message}")]
    Component {
        /// `apiserver`, `kubelet-node-1`, …
        name: String,
        /// What is wrong.
        message: String,
    },
    /// The kubeconfig could not be read or written.
    #[error("{0}")]
    Kubeconfig(String),
    /// Talking to the API server failed (boxed: the client's error carries a whole Status).
    #[error(transparent)]
    Client(Box<minik_client::Error>),
}

impl From<minik_client::Error> for Error {
    fn from(error: minik_client::Error) -> Self {
        Error::Client(Box::new(error))
    }
}

impl Error {
    /// An I/O error with what was being done.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
