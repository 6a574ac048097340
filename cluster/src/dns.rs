//! The cluster DNS add-on: where `minik dns` listens, the kubelets' `--cluster-dns`, and the
//! `kube-dns` Service.
//!
//! Kubernetes counterpart: kubeadm's `addon/dns` phase (`cmd/kubeadm/app/phases/addons/dns`),
//! which deploys CoreDNS behind the `kube-dns` Service in `kube-system` (cluster IP: the tenth
//! address of the service range, ports 53/UDP `dns` and 53/TCP `dns-tcp`), and the kubelet
//! configuration's `clusterDNS`/`clusterDomain`.
//!
//! minik's DNS is a process, not pods, so the Service has no selector and its Endpoints name the
//! server's address. resolv.conf cannot name a port: the server must listen on port 53. The
//! launcher tries `127.0.0.10:53`, then a few random `127.53.X.Y:53` (clusters started side by
//! side, as the tests do); where port 53 cannot be bound (no root and
//! `net.ipv4.ip_unprivileged_port_start` above 53) it takes a free port on 127.0.0.1 and the
//! kubelets get no `--cluster-dns`: pods keep the host's resolver (upstream's `MissingClusterDNS`).

use std::net::{Ipv4Addr, SocketAddr, TcpListener, UdpSocket};

use k8s_openapi::api::core::v1::{Endpoints, Service};
use minik_client::{Api, Client};
use serde_json::json;
use tracing::{info, warn};

use crate::{Error, Result};

/// kubeadm's cluster domain.
pub const CLUSTER_DOMAIN: &str = "cluster.local";

/// The `kube-dns` cluster IP: the tenth address of 127.96.0.0/16, as kubeadm takes 10.96.0.10.
pub const KUBE_DNS_IP: &str = "127.96.0.10";

/// Where the DNS server will listen: the configured address, else the first of the usual ones
/// whose UDP and TCP port both bind now.
pub fn choose_listen(configured: Option<SocketAddr>) -> Result<SocketAddr> {
    if let Some(listen) = configured {
        return probe(listen).map_err(|e| Error::io(format!("dns address {listen}"), e));
    }
    // Random addresses first: `minik up` processes started side by side (the tests) would all try
    // a fixed first address at once, and the probe and the DNS's own bind are not atomic.
    let mut candidates = Vec::new();
    for _ in 0..8 {
        let [x, y, ..] = random().to_le_bytes();
        let y = y.max(1);
        candidates.push(SocketAddr::from((Ipv4Addr::new(127, 53, x, y), 53)));
    }
    candidates.push(SocketAddr::from(([127, 0, 0, 10], 53)));
    // Clusters started side by side in one process (the tests) probe at the same moment: each
    // address is handed out once per process, so two cannot both find it free.
    let mut claimed = CLAIMED.lock().unwrap_or_else(|p| p.into_inner());
    for candidate in candidates {
        if claimed.contains(&candidate) {
            continue;
        }
        match probe(candidate) {
            Ok(listen) => {
                claimed.insert(listen);
                return Ok(listen);
            }
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => break,
            Err(_) => continue,
        }
    }
    let fallback = probe(SocketAddr::from(([127, 0, 0, 1], 0)))
        .map_err(|e| Error::io("a free port for the dns", e))?;
    warn!(listen = %fallback, "port 53 cannot be bound: pods will use the host's resolver");
    Ok(fallback)
}

/// The addresses this process has handed out already.
static CLAIMED: std::sync::Mutex<std::collections::BTreeSet<SocketAddr>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// A random number from the standard library's hasher seed (no extra dependency).
fn random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish()
}

/// Binds TCP and UDP on `listen` and frees them again (port 0: a port free for both).
fn probe(listen: SocketAddr) -> std::io::Result<SocketAddr> {
    let tcp = TcpListener::bind(listen)?;
    let address = tcp.local_addr()?;
    UdpSocket::bind(address)?;
    Ok(address)
}

/// The kubelet flags that point pods' resolv.conf at the server (none unless it is on port 53).
pub fn kubelet_flags(listen: Option<SocketAddr>) -> Vec<String> {
    match listen {
        Some(listen) if listen.port() == 53 => vec![
            "--cluster-dns".into(),
            listen.ip().to_string(),
            "--cluster-domain".into(),
            CLUSTER_DOMAIN.into(),
        ],
        _ => Vec::new(),
    }
}

/// Creates the `kube-dns` Service and its Endpoints (the server's address), as kubeadm's add-on.
pub async fn publish(client: &Client, listen: SocketAddr) -> Result<()> {
    let ports = json!([
        {"name": "dns", "port": 53, "protocol": "UDP", "targetPort": listen.port()},
        {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": listen.port()},
    ]);
    let labels = json!({"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS"});
    let service: Service = serde_json::from_value(json!({
        "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": labels},
        "spec": {"clusterIP": KUBE_DNS_IP, "ports": ports},
    }))
    .map_err(|e| Error::Start(format!("the kube-dns Service: {e}")))?;
    let endpoints: Endpoints = serde_json::from_value(json!({
        "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": labels},
        "subsets": [{
            "addresses": [{"ip": listen.ip().to_string()}],
            "ports": [
                {"name": "dns", "port": listen.port(), "protocol": "UDP"},
                {"name": "dns-tcp", "port": listen.port(), "protocol": "TCP"},
            ],
        }],
    }))
    .map_err(|e| Error::Start(format!("the kube-dns Endpoints: {e}")))?;
    let services = Api::<Service>::namespaced(client.clone(), "kube-system");
    if services.get_opt("kube-dns").await?.is_none() {
        if let Err(error) = services.create(&service).await {
            // Taken cluster IP (a restarted cluster keeps its objects): any address will do.
            warn!(%error, "creating kube-dns at {KUBE_DNS_IP}; letting the apiserver choose");
            let mut service = service;
            if let Some(spec) = service.spec.as_mut() {
                spec.cluster_ip = None;
            }
            services.create(&service).await?;
        }
    }
    let api = Api::<Endpoints>::namespaced(client.clone(), "kube-system");
    match api.get_opt("kube-dns").await? {
        None => drop(api.create(&endpoints).await?),
        Some(current) => {
            let mut wanted = endpoints;
            wanted.metadata.resource_version = current.metadata.resource_version;
            api.replace("kube-dns", &wanted).await?;
        }
    }
    info!(%listen, "published the kube-dns Service");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a server on port 53 can be named in resolv.conf.
    #[test]
    fn kubelets_get_the_dns_only_on_port_53() {
        let flags = kubelet_flags(Some(SocketAddr::from(([127, 53, 1, 2], 53))));
        assert_eq!(
            flags.join(" "),
            "--cluster-dns 127.53.1.2 --cluster-domain cluster.local"
        );
        assert!(kubelet_flags(Some(SocketAddr::from(([127, 0, 0, 1], 5353)))).is_empty());
        assert!(kubelet_flags(None).is_empty());
    }
}
