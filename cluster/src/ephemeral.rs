//! Ephemeral clusters (`minik up --ephemeral`, the `minik-testenv` crate): for test suites.
//!
//! Kubernetes counterpart: controller-runtime's envtest (`pkg/envtest`), which starts a real etcd
//! and kube-apiserver per suite with no nodes, and kind's throwaway clusters. minik keeps the API
//! server's objects in memory (`--storage memory`), puts the data directory (PKI, kubeconfig,
//! logs) in a temp dir that is removed when the cluster stops, and starts no node unless asked:
//! without nodes only the control plane runs (apiserver, scheduler, controller-manager,
//! endpoint-controller), since the node-side components (kubelet, kube-proxy, DNS, ingress, load
//! balancer, metrics-server) have nothing to do. Everything else is as usual: TLS, RBAC and an
//! admin kubeconfig.

use crate::component::Component;
use crate::{ClusterConfig, Error, Result};

/// The components an ephemeral cluster with `nodes` nodes starts.
pub fn components(nodes: u8) -> Vec<Component> {
    if nodes > 0 {
        return Component::defaults();
    }
    vec![
        Component::Apiserver,
        Component::Scheduler,
        Component::ControllerManager,
        Component::EndpointController,
    ]
}

/// A temp dir for an ephemeral cluster's data: removed when dropped (after the cluster stopped).
pub fn data_dir() -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("minik-ephemeral-")
        .tempdir()
        .map_err(|e| Error::io("creating the ephemeral data dir", e))
}

/// `config` made ephemeral: in-memory storage, `data_dir` (see [`data_dir`]), `nodes` nodes and
/// the components they need.
pub fn configure(config: ClusterConfig, data_dir: &tempfile::TempDir, nodes: u8) -> ClusterConfig {
    ClusterConfig {
        data_dir: data_dir.path().to_path_buf(),
        nodes,
        components: components(nodes),
        storage: Some("memory".into()),
        ..config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_nodes_means_control_plane_only() {
        let control_plane = components(0);
        assert!(control_plane.contains(&Component::Apiserver));
        assert!(!control_plane.contains(&Component::Kubelet));
        assert!(!control_plane.contains(&Component::Proxy));
        assert_eq!(components(2), Component::defaults());
    }

    #[test]
    fn configure_keeps_the_rest_and_stores_in_memory() {
        let dir = data_dir().expect("temp dir");
        let base = ClusterConfig {
            secure: true,
            ..ClusterConfig::default()
        };
        let config = configure(base, &dir, 0);
        assert_eq!(config.storage.as_deref(), Some("memory"));
        assert_eq!(config.data_dir, dir.path());
        assert!(config.secure);
        let args = Component::Apiserver.args(&config, 0).join(" ");
        assert!(args.contains("--storage memory"), "{args}");
    }
}
