//! The pod "sandbox": what a pod gets before its containers start (its IP and its volumes).
//!
//! Kubernetes counterpart: `RunPodSandbox` / `StopPodSandbox` in the CRI, which call the CNI
//! plugin (an IP per pod) and, around it, the volume manager's `WaitForAttachAndMount`
//! (`pkg/kubelet/volumemanager`). minik has no pause container: a sandbox is just the pod's
//! loopback IP (`network.rs`) and its volume directories (`volumes.rs`), and the per-container
//! environment variables that tell a process where its `volumeMounts` live. Its processes' wildcard
//! binds are rewritten to that IP where the node can (`shim/bind_rewrite/`), which stands for the
//! pod's network namespace.
//!
//! The pod worker talks to the [`PodSandbox`] trait so that its tests can use [`FakeSandbox`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::Pod;

use crate::network::IpAllocator;
use crate::volumes;

/// What a pod got from its sandbox.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sandbox {
    /// The pod's IP, from the node's pod CIDR.
    pub ip: String,
    /// Extra environment per container name (where each volume mount lives).
    pub volume_env: BTreeMap<String, BTreeMap<String, String>>,
    /// Each container's own directory (its default working directory).
    pub working_dirs: BTreeMap<String, PathBuf>,
    /// Each container's bind mounts in its own mount namespace (`mountns/`).
    pub mounts: BTreeMap<String, Vec<crate::mountns::BindMount>>,
    /// Why volumes are not at their mountPath (no mount namespaces), for a pod event.
    pub mount_note: Option<String>,
    /// Its processes' wildcard binds go to `ip` (`shim/bind_rewrite/`).
    pub rewrite_binds: bool,
    /// Why they cannot (the pod's event), when the node has no bind rewriting.
    pub network_warning: Option<String>,
}

/// Sets up and tears down pod sandboxes.
pub trait PodSandbox: Send + Sync + 'static {
    /// Allocates the pod's IP (the same one again for a pod that already has one) and prepares
    /// its volumes. Errors are messages for a `FailedCreatePodSandBox` event.
    fn setup<'a>(&'a self, pod: &'a Pod) -> BoxFuture<'a, Result<Sandbox, String>>;

    /// Releases the IP and removes the pod's volumes (emptyDir) for the pod with this uid.
    fn teardown<'a>(&'a self, uid: &'a str) -> BoxFuture<'a, ()>;

    /// The uids that hold a sandbox now (to clean up pods that vanished while we were down).
    fn allocated(&self) -> Vec<String>;
}

/// The real sandbox: the node's IP allocator (`network.rs`) and volume manager (`volumes.rs`).
pub struct NodeSandbox {
    root: PathBuf,
    ips: IpAllocator,
    /// Reads the claims and volumes of persistentVolumeClaim volumes (`claims.rs`).
    client: Option<minik_client::Client>,
    /// Mount namespaces and the pods' DNS (`mountns/`).
    pub namespaces: crate::mountns::pod::PodNamespaces,
    /// `Err(why)` when this node cannot rewrite binds (detected once, `shim/bind_rewrite/`).
    rewrite_binds: Result<(), String>,
}

impl NodeSandbox {
    /// Opens the allocator state under `root` for the node's `pod_cidr`.
    pub fn open(root: &Path, pod_cidr: &str) -> Result<Self, crate::network::Error> {
        let ips = IpAllocator::open(&root.join("network").join("allocations.json"), pod_cidr)?;
        Ok(NodeSandbox {
            root: root.to_path_buf(),
            ips,
            client: None,
            namespaces: Default::default(),
            rewrite_binds: crate::shim::bind_rewrite::support().clone(),
        })
    }

    /// The same sandbox, resolving persistentVolumeClaim volumes through `client`.
    pub fn with_client(mut self, client: minik_client::Client) -> Self {
        self.client = Some(client);
        self
    }

    fn setup_now(&self, pod: &Pod, claims: &BTreeMap<String, PathBuf>) -> Result<Sandbox, String> {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let ip = self.ips.allocate(&uid).map_err(|e| e.to_string())?;
        let plan =
            volumes::plan_with_claims(&self.root, &uid, pod, claims).map_err(|e| e.to_string())?;
        volumes::setup(&self.root, &uid, &plan).map_err(|e| e.to_string())?;
        let spec = pod.spec.clone().unwrap_or_default();
        let mut sandbox = Sandbox {
            ip: ip.to_string(),
            rewrite_binds: self.rewrite_binds.is_ok(),
            network_warning: self.rewrite_binds.clone().err().map(|why| {
                format!("Wildcard binds are not rewritten to the pod IP ({why}): this pod's listeners on 0.0.0.0 take the port on every host address")
            }),
            ..Default::default()
        };
        for container in spec
            .init_containers
            .iter()
            .flatten()
            .chain(spec.containers.iter())
        {
            let dir = volumes::container_root(&self.root, &uid, &container.name);
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            sandbox.volume_env.insert(
                container.name.clone(),
                plan.env_for(&self.root, &uid, &container.name),
            );
            sandbox.working_dirs.insert(container.name.clone(), dir);
        }
        match self.namespaces.prepare(pod, &sandbox.ip, &plan) {
            Ok(mounts) => sandbox.mounts = mounts,
            Err(note) => sandbox.mount_note = Some(note),
        }
        Ok(sandbox)
    }
}

impl PodSandbox for NodeSandbox {
    fn setup<'a>(&'a self, pod: &'a Pod) -> BoxFuture<'a, Result<Sandbox, String>> {
        Box::pin(async move {
            let claims = match &self.client {
                Some(client) => crate::claims::resolve(client, &self.root, pod).await?,
                None => BTreeMap::new(),
            };
            self.setup_now(pod, &claims)
        })
    }

    fn teardown<'a>(&'a self, uid: &'a str) -> BoxFuture<'a, ()> {
        if let Err(error) = self.ips.release(uid) {
            tracing::warn!(pod_uid = uid, %error, "could not release pod ip");
        }
        if let Err(error) = volumes::teardown(&self.root, uid) {
            tracing::warn!(pod_uid = uid, %error, "could not remove pod volumes");
        }
        let _ = std::fs::remove_dir_all(volumes::pod_dir(&self.root, uid));
        Box::pin(async {})
    }

    fn allocated(&self) -> Vec<String> {
        self.ips.allocations().into_keys().collect()
    }
}

/// A sandbox for tests: hands out 127.244.1.2, .3, … and remembers what was released.
#[derive(Default)]
pub struct FakeSandbox {
    state: Mutex<(BTreeMap<String, String>, BTreeSet<String>)>,
}

impl FakeSandbox {
    /// Uids whose sandbox was torn down.
    pub fn released(&self) -> BTreeSet<String> {
        self.state.lock().map(|s| s.1.clone()).unwrap_or_default()
    }
}

impl PodSandbox for FakeSandbox {
    fn setup<'a>(&'a self, pod: &'a Pod) -> BoxFuture<'a, Result<Sandbox, String>> {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let result = self
            .state
            .lock()
            .map_err(|e| e.to_string())
            .map(|mut state| {
                let next = state.0.len() + 2;
                let ip = state
                    .0
                    .entry(uid)
                    .or_insert_with(|| format!("127.244.1.{next}"))
                    .clone();
                Sandbox {
                    ip,
                    ..Default::default()
                }
            });
        Box::pin(async move { result })
    }

    fn teardown<'a>(&'a self, uid: &'a str) -> BoxFuture<'a, ()> {
        if let Ok(mut state) = self.state.lock() {
            state.0.remove(uid);
            state.1.insert(uid.to_string());
        }
        Box::pin(async {})
    }

    fn allocated(&self) -> Vec<String> {
        self.state
            .lock()
            .map(|s| s.0.keys().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(uid: &str) -> Pod {
        serde_json::from_value(serde_json::json!({"metadata": {"name": uid, "uid": uid},
            "spec": {"containers": [{"name": "app"}]}}))
        .expect("pod")
    }

    #[test]
    fn a_node_without_bind_rewriting_says_so_in_each_sandbox() {
        let dir = tempfile::tempdir().unwrap();
        let mut node = NodeSandbox::open(dir.path(), "127.244.1.0/24").unwrap();
        node.rewrite_binds = Err("seccomp user notification: ENOSYS".into());
        let fallback = node.setup_now(&pod("a"), &BTreeMap::new()).unwrap();
        assert!(!fallback.rewrite_binds);
        let warning = fallback
            .network_warning
            .expect("a warning for the pod's events");
        assert!(warning.contains("ENOSYS"), "{warning}");

        node.rewrite_binds = Ok(());
        let isolated = node.setup_now(&pod("b"), &BTreeMap::new()).unwrap();
        assert!(isolated.rewrite_binds);
        assert_eq!(isolated.network_warning, None);
    }
}
