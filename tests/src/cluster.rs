//! `Cluster`: the whole minik stack started inside a test, and stopped again with nothing left.
//!
//! Kubernetes counterpart: `test/integration/framework.StartTestServer` (an apiserver on a free
//! port, in-process) plus what kind does for e2e tests (real nodes). minik runs every component:
//!
//! - in-process (default): each component's `run(config, token)` on its own tokio task, the
//!   apiserver served on a listener bound to `127.0.0.1:0`;
//! - as processes (`.processes(true)`): `minik apiserver …`, `minik kubelet …` children, so a test
//!   can `kill -9` one and start it again (`kill`, `restart`).
//!
//! Both use the agreed command-line flags, fast timings (restart backoff 200 ms, heartbeat 1 s),
//! a temporary directory for data and logs, and return from `start()` once `/readyz` answers and
//! every node reports Ready (seen through a watch).
//!
//! Stopping ([`Cluster::stop`]) deletes every pod first — the kubelet leaves pods running when it
//! stops, as the real one does — then stops the components, then looks in `/proc` for anything of
//! this cluster still alive, kills it and reports it. `Drop` does the killing without the waiting.

use std::path::{Path, PathBuf};
use std::time::Duration;

use minik_api::core::{Endpoints, Node, Pod, Service};
use minik_client::{Api, Client, DeleteParams, ListParams};
use nix::sys::signal::Signal;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;

mod builder;

pub use builder::{minik_binary, ClusterBuilder};

use crate::component::Component;
use crate::error::{Error, Result};
use crate::procs::{self, ProcInfo};
use crate::wait;

/// How long `start()` waits for the API server and for the nodes.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running test cluster.
pub struct Cluster {
    pub(crate) server_url: String,
    pub(crate) client: Client,
    pub(crate) minik: PathBuf,
    pub(crate) log_dir: PathBuf,
    pub(crate) root: CancellationToken,
    pub(crate) components: Vec<Component>,
    pub(crate) nodes: u8,
    pub(crate) options: ClusterBuilder,
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

    /// A client for the API server.
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    /// `http://127.0.0.1:PORT`.
    pub fn server_url(&self) -> &str {
        &self.server_url
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
        let name = self.start_kubelet()?;
        self.wait_nodes_ready().await?;
        Ok(name)
    }

    /// The pid of a process-mode component (`kubelet-node-1`, `apiserver` …).
    pub fn pid(&self, component: &str) -> Option<u32> {
        self.components.iter().find(|c| c.name == component)?.pid()
    }

    /// Sends `signal` to a process-mode component; SIGKILL waits until it is reaped.
    pub async fn kill(&mut self, component: &str, signal: Signal) -> Result<()> {
        self.component_mut(component)?.signal(signal).await
    }

    /// Stops a component gracefully (either mode).
    pub async fn stop_component(&mut self, component: &str) -> Result<()> {
        self.component_mut(component)?.stop().await;
        Ok(())
    }

    /// Starts a stopped or killed component again with the same flags and, for the API server,
    /// waits for `/readyz`.
    pub async fn restart(&mut self, component: &str) -> Result<()> {
        let (minik, processes) = (self.minik.clone(), self.options.processes);
        let root = self.root.clone();
        let target = self.component_mut(component)?;
        if target.is_running() {
            return Err(Error::Component {
                name: component.into(),
                message: "still running".into(),
            });
        }
        if processes {
            target.start_process(&minik)?;
        } else {
            let listener = if component == "apiserver" {
                let address = target.args[2].clone();
                let std_listener = std::net::TcpListener::bind(&address)?;
                std_listener.set_nonblocking(true)?;
                Some(tokio::net::TcpListener::from_std(std_listener)?)
            } else {
                None
            };
            target.start_task(&root, listener)?;
        }
        if component == "apiserver" {
            self.wait_readyz().await?;
        }
        Ok(())
    }

    /// The log of a process-mode component.
    pub fn logs(&self, component: &str) -> String {
        self.components
            .iter()
            .find(|c| c.name == component)
            .map(|c| c.log_text())
            .unwrap_or_default()
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
        self.delete_all_pods().await;
        self.root.cancel();
        while let Some(mut component) = self.components.pop() {
            if let Some(error) = component.stop().await {
                report
                    .component_errors
                    .push((component.name.clone(), error));
            }
        }
        // Give the kernel a moment before calling anything a leftover.
        if let Err(leftovers) = procs::settled(self.dir.path(), Duration::from_secs(3)).await {
            procs::kill_all(&leftovers);
            report.leftovers = leftovers;
        }
        Ok(report)
    }

    /// Deletes every pod with a 1 s grace and waits until they are gone; force deletes what is
    /// left after 15 s (a pod on a killed kubelet).
    async fn delete_all_pods(&self) {
        let all: Api<Pod> = Api::all(self.client());
        let Ok(list) = all.list(&ListParams::default()).await else {
            return;
        };
        for pod in &list.items {
            delete(&self.client, pod, &DeleteParams::grace(1)).await;
        }
        let none_left = |pods: &[Pod]| pods.is_empty();
        if wait::wait_for_all(
            &all,
            ListParams::default(),
            none_left,
            Duration::from_secs(15),
        )
        .await
        .is_err()
        {
            if let Ok(list) = all.list(&ListParams::default()).await {
                for pod in &list.items {
                    delete(&self.client, pod, &DeleteParams::grace(0)).await;
                }
            }
        }
    }

    pub(crate) fn start_component(&mut self, name: &str, args: Vec<String>) -> Result<()> {
        let mut component = Component::new(name, args, &self.log_dir);
        if self.options.processes {
            component.start_process(&self.minik)?;
        } else {
            component.start_task(&self.root, None)?;
        }
        self.components.push(component);
        Ok(())
    }

    pub(crate) fn start_kubelet(&mut self) -> Result<String> {
        self.nodes += 1;
        let index = self.nodes;
        let node = format!("node-{index}");
        let root_dir = self
            .dir
            .path()
            .join("nodes")
            .join(&node)
            .display()
            .to_string();
        let minik = self.minik.display().to_string();
        let server = self.server_url.clone();
        let backoff = humantime::format_duration(self.options.backoff_base).to_string();
        let heartbeat = humantime::format_duration(self.options.heartbeat_interval).to_string();
        let args = strings(&[
            "kubelet",
            "--server",
            &server,
            "--node-name",
            &node,
            "--root-dir",
            &root_dir,
            "--pod-cidr",
            &format!("127.244.{index}.0/24"),
            "--listen",
            "127.0.0.1:0",
            "--minik-binary",
            &minik,
            "--backoff-base",
            &backoff,
            "--heartbeat-interval",
            &heartbeat,
        ]);
        self.start_component(&format!("kubelet-{node}"), args)?;
        Ok(node)
    }

    fn component_mut(&mut self, name: &str) -> Result<&mut Component> {
        self.components
            .iter_mut()
            .find(|c| c.name == name)
            .ok_or_else(|| Error::Component {
                name: name.into(),
                message: "no such component".into(),
            })
    }

    pub(crate) async fn wait_readyz(&self) -> Result<()> {
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(1))
            .build()
            .map_err(std::io::Error::other)?;
        let url = format!("{}/readyz", self.server_url);
        wait::eventually("the apiserver's /readyz", START_TIMEOUT, || {
            let request = http.get(&url).send();
            async move {
                request
                    .await
                    .ok()
                    .filter(|r| r.status().is_success())
                    .map(|_| ())
            }
        })
        .await
        .map_err(|e| self.explain("apiserver", e))
    }

    pub(crate) async fn wait_nodes_ready(&self) -> Result<()> {
        let wanted: Vec<String> = (1..=self.nodes).map(|i| format!("node-{i}")).collect();
        let all_ready = |nodes: &[Node]| {
            wanted.iter().all(|name| {
                nodes
                    .iter()
                    .any(|n| n.metadata.name.as_deref() == Some(name) && node_is_ready(n))
            })
        };
        wait::wait_for_all(
            &self.nodes(),
            ListParams::default(),
            all_ready,
            START_TIMEOUT,
        )
        .await
        .map(|_| ())
        .map_err(|e| self.explain("kubelet-node-1", e))
    }

    /// Adds the end of a process-mode component's log to an error.
    fn explain(&self, component: &str, error: Error) -> Error {
        let log = self.logs(component);
        if log.is_empty() {
            return error;
        }
        let tail: Vec<&str> = log.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Error::Component {
            name: component.into(),
            message: format!("{error}\n{}", tail.join("\n")),
        }
    }
}

impl Drop for Cluster {
    /// Without `stop()`: kill the components and every process of the cluster at once.
    fn drop(&mut self) {
        self.root.cancel();
        for component in &mut self.components {
            component.kill_now();
        }
        procs::kill_all(&procs::related_to(self.dir.path()));
    }
}

/// True if the node's `Ready` condition is `True`.
pub fn node_is_ready(node: &Node) -> bool {
    let conditions = node.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

async fn delete(client: &Client, pod: &Pod, params: &DeleteParams) {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    let _ = Api::<Pod>::namespaced(client.clone(), namespace)
        .delete(name, params)
        .await;
}

pub(crate) fn strings(words: &[&str]) -> Vec<String> {
    words.iter().map(|w| w.to_string()).collect()
}
