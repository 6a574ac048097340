//! A secure cluster: every component on TLS with its own identity, as kubeadm sets one up.
//!
//! Kubernetes counterpart: kubeadm's `init` phases `certs` and `kubeconfig`
//! (`cmd/kubeadm/app/phases/`): the apiserver gets `--tls-cert-file`, `--tls-private-key-file`
//! and `--client-ca-file`; the scheduler, the controller manager, each kubelet and the proxy get a
//! kubeconfig holding their own client certificate (docs/security.md#x9); the admin's is
//! `DATA/kubeconfig` (mode 0600, like `/etc/kubernetes/admin.conf`). Each kubelet serves its log
//! endpoint over TLS with its own serving certificate (`--tls-cert-file`, `--client-ca-file`),
//! and the apiserver reaches it with its `kube-apiserver-kubelet-client` certificate
//! (`--kubelet-client-certificate`, `--kubelet-certificate-authority`), as kubeadm wires them.
//!
//! This is the default; [`ClusterConfig::secure`] off (`minik up --insecure`) serves plain http
//! with no users, for teaching. What minik simplifies: the endpoint controller runs as the service
//! account upstream's controller manager would use for it.
//!
//! Read next: `pki.rs`.

use std::path::{Path, PathBuf};

use minik_client::Client;

use crate::cluster::{Cluster, ClusterConfig};
use crate::component::Component;
use crate::pki::{self, Identity, Pki};
use crate::Result;

/// `https://ADDR` for a secure cluster, else `http://ADDR`.
pub fn server_url(config: &ClusterConfig) -> String {
    let scheme = if config.secure { "https" } else { "http" };
    format!("{scheme}://{}", config.listen)
}

/// The admin kubeconfig of a cluster: `DATA/kubeconfig`.
pub fn admin_kubeconfig(data_dir: &Path) -> PathBuf {
    data_dir.join("kubeconfig")
}

/// The identity a component connects as (`None`: the apiserver itself).
fn identity(component: Component, node: u8) -> Option<Identity> {
    Some(match component {
        Component::Apiserver => return None,
        Component::Scheduler => Identity::scheduler(),
        Component::ControllerManager => Identity::controller_manager(),
        Component::EndpointController => Identity::endpoint_controller(),
        Component::Proxy => Identity::kube_proxy(),
        Component::Ingress => Identity::ingress_controller(),
        Component::LoadBalancer => Identity::service_controller(),
        Component::MetricsServer => Identity::metrics_server(),
        Component::Kubelet => Identity::node(&format!("node-{node}")),
        // The dashboard acts for the user who started the cluster (its actions are theirs).
        Component::Dashboard => Identity::admin(),
        // CoreDNS reads Services and EndpointSlices, as kube-proxy's role allows.
        Component::Dns => Identity::kube_proxy(),
        Component::ClusterAutoscaler => Identity::cluster_autoscaler(),
    })
}

fn component_kubeconfig(data_dir: &Path, identity: &Identity) -> PathBuf {
    data_dir
        .join("pki")
        .join(format!("{}.kubeconfig", identity.name))
}

/// The flags a secure cluster adds to a component's command line.
pub(crate) fn args(config: &ClusterConfig, component: Component, node: u8) -> Vec<String> {
    if !config.secure {
        return Vec::new();
    }
    let path = |p: PathBuf| p.display().to_string();
    let pki_dir = config.data_dir.join("pki");
    let pki = |name: &str| path(pki_dir.join(name));
    let kubelet_client = Identity::apiserver_kubelet_client().name;
    match identity(component, node) {
        None => vec![
            "--tls-cert-file".into(),
            pki("apiserver.crt"),
            "--tls-private-key-file".into(),
            pki("apiserver.key"),
            "--client-ca-file".into(),
            pki("ca.crt"),
            "--kubelet-client-certificate".into(),
            pki(&format!("{kubelet_client}-client.crt")),
            "--kubelet-client-key".into(),
            pki(&format!("{kubelet_client}-client.key")),
            "--kubelet-certificate-authority".into(),
            pki("ca.crt"),
        ],
        Some(identity) => {
            let mut args = vec![
                "--kubeconfig".into(),
                path(component_kubeconfig(&config.data_dir, &identity)),
            ];
            if component == Component::Kubelet {
                // The log server's serving certificate, and the CA its callers' certificates
                // must chain to (upstream's `--tls-cert-file` and `--client-ca-file`).
                args.extend([
                    "--tls-cert-file".into(),
                    pki(&format!("kubelet-node-{node}.crt")),
                    "--tls-private-key-file".into(),
                    pki(&format!("kubelet-node-{node}.key")),
                    "--client-ca-file".into(),
                    pki("ca.crt"),
                ]);
            }
            if component == Component::MetricsServer {
                // Its serving certificate (the APIService's `caBundle` is the cluster CA), and the
                // CA the apiserver's front-proxy certificate must chain to.
                args.extend([
                    "--tls-cert-file".into(),
                    pki("metrics-server.crt"),
                    "--tls-private-key-file".into(),
                    pki("metrics-server.key"),
                    "--requestheader-client-ca-file".into(),
                    pki("ca.crt"),
                ]);
            }
            args
        }
    }
}

/// Before a component starts: the certificates and the kubeconfig it needs (and, with the
/// apiserver, the admin's `DATA/kubeconfig`).
pub(crate) fn prepare(
    config: &ClusterConfig,
    component: Component,
    node: u8,
    server_url: &str,
) -> Result<()> {
    if !config.secure {
        return Ok(());
    }
    pki::private_dir(&config.data_dir)?;
    let nodes: Vec<String> = match component {
        Component::Kubelet => vec![format!("node-{node}")],
        _ => Vec::new(),
    };
    let pki = Pki::ensure(&config.data_dir, &nodes)?;
    match identity(component, node) {
        None => {
            let path = admin_kubeconfig(&config.data_dir);
            pki.write_kubeconfig(&Identity::admin(), server_url, &path)?;
            tracing::info!(kubeconfig = %path.display(), "wrote the admin kubeconfig");
        }
        Some(identity) => {
            let path = component_kubeconfig(&config.data_dir, &identity);
            pki.write_kubeconfig(&identity, server_url, &path)?;
        }
    }
    Ok(())
}

/// The cluster CA (PEM) of a secure cluster.
pub(crate) fn ca_pem(config: &ClusterConfig) -> Result<Option<Vec<u8>>> {
    if !config.secure {
        return Ok(None);
    }
    let path = config.data_dir.join("pki").join("ca.crt");
    std::fs::read(&path)
        .map(Some)
        .map_err(|e| crate::Error::io(format!("reading {}", path.display()), e))
}

impl Cluster {
    /// A client for this cluster: the admin's kubeconfig, or plain http for an insecure cluster.
    pub fn client(&self) -> Result<Client> {
        let kubeconfig = self.config.secure.then(|| admin_kubeconfig(&self.data_dir));
        Ok(Client::connect(&self.server_url, kubeconfig.as_deref())?)
    }

    /// `DATA/kubeconfig` when the cluster is secure.
    pub fn kubeconfig(&self) -> Option<PathBuf> {
        self.config.secure.then(|| admin_kubeconfig(&self.data_dir))
    }
}
