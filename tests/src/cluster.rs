//! `Cluster`: the whole minik stack started inside a test, and stopped again with nothing left.
//!
//! Kubernetes counterpart: `test/integration/framework.StartTestServer` (an apiserver on a free
//! port, in-process) plus what kind does for e2e tests (real nodes). The launching is
//! `minik_cluster`'s, the same as `minik up`'s; this wraps it with what only tests need:
//!
//! - in-process (default): each component's `run(config, token)` on its own tokio task;
//! - as processes (`.processes(true)`): `minik apiserver …`, `minik kubelet …` children, so a test
//!   can `kill -9` one and start it again (`kill`, `restart`);
//! - a temporary directory for data and logs, fast timings (restart backoff 200 ms, heartbeat
//!   1 s), and a client;
//! - [`Cluster::stop`] lets the launcher delete every pod (1 s grace) and stop the components,
//!   then looks in `/proc` for anything of this cluster still alive, kills it and reports it:
//!   the launcher's own reaping is off, so that a leftover shows. `Drop` kills without waiting.

use std::path::{Path, PathBuf};
use std::time::Duration;

use minik_api::core::{Endpoints, Node, Pod, Service};
use minik_client::{Api, Client};
use nix::sys::signal::Signal;
use tempfile::TempDir;

mod builder;

pub use builder::{minik_binary, ClusterBuilder};
pub use minik_cluster::drain::node_is_ready;

use crate::error::Result;
use crate::procs::{self, ProcInfo};

/// A running test cluster.
pub struct Cluster {
    /// The launcher's cluster; `None` once stopped.
    pub(crate) inner: Option<minik_cluster::Cluster>,
    pub(crate) client: Client,
    pub(crate) minik: PathBuf,
    // Declared last: removed after everything above has been dropped.
    pub(crate) dir: TempDir,
}

/// What [`Cluster::stop`] found.
#[derive(Debug, Default)]
pub struct StopReport {
    /// Processes of the cluster still alive after the pods were deleted and the components
    /// stopped (they have been killed since). A correct cluster leaves this empty.
    pub leftovers: Vec<ProcInfo>,
    /// Components that ended with an error or had to be forced.
    pub component_errors: Vec<(String, String)>,
}

impl Cluster {
    /// The options: `Cluster::builder().nodes(2).start().await?`.
    pub fn builder() -> ClusterBuilder {
        ClusterBuilder::default()
    }

    /// The cluster autoscaler and its node group, if the builder asked for them.
    pub fn autoscaling(&mut self) -> Option<&mut minik_cluster::node_group::Autoscaling> {
        self.inner.as_mut()?.autoscaling()
    }

    /// A client for the API server.
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// `https://127.0.0.1:PORT` (`http://` for an insecure cluster).
    pub fn server_url(&self) -> &str {
        &self.inner().server_url
    }

    /// The admin kubeconfig the cluster wrote (`DATA/kubeconfig`, mode 0600): the CA, the
    /// server and a `system:masters` client certificate. Panics for an insecure cluster.
    pub fn kubeconfig(&self) -> PathBuf {
        self.inner()
            .kubeconfig()
            .expect("a secure cluster writes DATA/kubeconfig")
    }

    /// The cluster's PKI (`DATA/pki`), to issue more client certificates.
    pub fn pki(&self) -> minik_cluster::pki::Pki {
        minik_cluster::pki::Pki {
            dir: self.dir.path().join("pki"),
        }
    }

    /// Pods of the `default` namespace.
    pub fn pods(&self) -> Api<Pod> {
        Api::namespaced(self.client(), "default")
    }

    /// Services of the `default` namespace.
    pub fn services(&self) -> Api<Service> {
        Api::namespaced(self.client(), "default")
    }

    /// Endpoints of the `default` namespace.
    pub fn endpoints(&self) -> Api<Endpoints> {
        Api::namespaced(self.client(), "default")
    }

    /// Nodes.
    pub fn nodes(&self) -> Api<Node> {
        Api::all(self.client())
    }

    /// The cluster's temporary directory (data, logs, node root dirs).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The `minik` binary the containers and process-mode components run.
    pub fn minik_binary(&self) -> &Path {
        &self.minik
    }

    /// Starts one more kubelet (`node-N+1`) and waits until its node is Ready; returns its name.
    pub async fn add_node(&mut self) -> Result<String> {
        Ok(self.inner_mut().add_node().await?)
    }

    /// The apiservers behind the front door (`apiserver-1` first); empty with one apiserver.
    pub fn apiserver_addresses(&self) -> Vec<std::net::SocketAddr> {
        self.inner().apiserver_addresses()
    }

    /// The pid of a process-mode component (`kubelet-node-1`, `apiserver` …).
    pub fn pid(&self, component: &str) -> Option<u32> {
        self.inner().pid(component)
    }

    /// Sends `signal` to a process-mode component; SIGKILL waits until it is reaped.
    pub async fn kill(&mut self, component: &str, signal: Signal) -> Result<()> {
        Ok(self.inner_mut().kill(component, signal).await?)
    }

    /// Stops a component gracefully (either mode).
    pub async fn stop_component(&mut self, component: &str) -> Result<()> {
        self.inner_mut().stop_component(component).await?;
        Ok(())
    }

    /// Starts a stopped or killed component again with the same flags and, for the API server,
    /// waits for `/readyz`.
    pub async fn restart(&mut self, component: &str) -> Result<()> {
        Ok(self.inner_mut().restart(component).await?)
    }

    /// The dashboard's URL with its token (`http://127.0.0.1:PORT/?token=…`), if started.
    pub fn dashboard_url(&self) -> Option<String> {
        self.inner().dashboard_url()
    }

    /// Where the ingress controller serves HTTP (`127.0.0.1:PORT`), if started.
    pub fn ingress_address(&self) -> Option<std::net::SocketAddr> {
        self.inner().ingress_address()
    }

    /// The ingress controller's `/metrics` text.
    pub async fn ingress_metrics(&self) -> Result<String> {
        let address = self.inner().ingress_metrics_address();
        metrics_text(address).await
    }

    /// The load balancer's `/metrics` text.
    pub async fn loadbalancer_metrics(&self) -> Result<String> {
        let address = self.inner().loadbalancer_metrics_address();
        metrics_text(address).await
    }

    /// The log of a process-mode component.
    pub fn logs(&self, component: &str) -> String {
        let log = self
            .dir
            .path()
            .join("logs")
            .join(format!("{component}.log"));
        std::fs::read_to_string(log).unwrap_or_default()
    }

    /// The processes of this cluster alive right now (containers, shims, process-mode components).
    pub fn processes(&self) -> Vec<ProcInfo> {
        procs::related_to(self.dir.path())
    }

    /// The live container processes of the pod `name`.
    pub fn pod_processes(&self, name: &str) -> Vec<ProcInfo> {
        procs::of_pod(self.dir.path(), name)
    }

    /// Deletes every pod, stops every component, then kills and reports whatever is left.
    pub async fn stop(mut self) -> Result<StopReport> {
        let mut report = StopReport::default();
        if let Some(inner) = self.inner.take() {
            for (name, exit) in inner.stop().await.components {
                if let Some(error) = exit.and_then(|e| e.error()) {
                    report.component_errors.push((name, error));
                }
            }
        }
        // Give the kernel a moment before calling anything a leftover.
        if let Err(leftovers) = procs::settled(self.dir.path(), Duration::from_secs(3)).await {
            procs::kill_all(&leftovers);
            report.leftovers = leftovers;
        }
        Ok(report)
    }

    fn inner(&self) -> &minik_cluster::Cluster {
        // Invariant: `inner` is only taken by `stop`, which consumes the cluster.
        self.inner.as_ref().expect("the cluster is running")
    }

    fn inner_mut(&mut self) -> &mut minik_cluster::Cluster {
        self.inner.as_mut().expect("the cluster is running")
    }
}

/// `GET http://ADDRESS/metrics`.
async fn metrics_text(address: Option<std::net::SocketAddr>) -> Result<String> {
    let failed = |message: String| crate::error::Error::Component {
        name: "metrics".into(),
        message,
    };
    let address = address.ok_or_else(|| failed("the component was not started".into()))?;
    let fetch = async {
        reqwest::Client::builder()
            .no_proxy()
            .build()?
            .get(format!("http://{address}/metrics"))
            .send()
            .await?
            .text()
            .await
    };
    fetch.await.map_err(|e| failed(e.to_string()))
}

impl Drop for Cluster {
    /// Without `stop()`: kill the components and every process of the cluster at once.
    fn drop(&mut self) {
        drop(self.inner.take());
        procs::kill_all(&procs::related_to(self.dir.path()));
    }
}
