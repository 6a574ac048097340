//! The kubelet's side: a pod's `/etc/hosts` and `/etc/resolv.conf`, and each container's mounts.
//!
//! Kubernetes counterpart: `makeMounts` and `ensureHostsFile` in `pkg/kubelet/kubelet_pods.go`
//! (the hosts file is written under the pod's directory and bind-mounted into each container)
//! and `GetPodDNS` in `pkg/kubelet/network/dns/dns.go` (the resolv.conf from `dnsPolicy` and
//! `dnsConfig`, with `--cluster-dns` and `--cluster-domain`: `dns.rs`). A pod whose resolv.conf
//! would be the node's own file unchanged gets no mount over `/etc/resolv.conf`.

use std::collections::BTreeMap;
use std::path::Path;

use k8s_openapi::api::core::v1::Pod;

use super::dns::{pod_resolv_conf, NodeDns, ResolvConf};
use super::{container_mounts, hosts_file, BindMount, Support};
use crate::volumes::VolumePlan;

/// What the kubelet was told about DNS and found about namespaces.
#[derive(Clone, Debug)]
pub struct PodNamespaces {
    pub support: Support,
    /// `--cluster-dns`: the nameservers of ClusterFirst pods (empty: the host's resolver).
    pub cluster_dns: Vec<String>,
    /// `--cluster-domain`.
    pub cluster_domain: String,
}

impl Default for PodNamespaces {
    fn default() -> Self {
        PodNamespaces {
            support: Support {
                available: false,
                detail: "not probed".into(),
            },
            cluster_dns: Vec::new(),
            cluster_domain: "cluster.local".into(),
        }
    }
}

/// Per container, its mounts; or, when the node has no mount namespaces, why (for an event).
pub type PodMounts = Result<BTreeMap<String, Vec<BindMount>>, String>;

impl PodNamespaces {
    /// Writes `pod_dir/etc/{hosts,resolv.conf}` and returns every container's mounts.
    pub fn prepare(&self, pod: &Pod, ip: &str, plan: &VolumePlan) -> PodMounts {
        if !self.support.available {
            return Err(format!(
                "this node cannot make mount namespaces ({}): volumes are not at their mountPath; \
                 containers find them through $MINIK_MOUNT_<volume>",
                self.support.detail
            ));
        }
        let etc = plan.pod_dir.join("etc");
        let resolv = self
            .write_files(pod, ip, &etc)
            .map_err(|e| format!("{}: {e}", etc.display()))?;
        Ok(plan
            .mounts
            .keys()
            .map(|name| (name.clone(), container_mounts(plan, name, &etc, resolv)))
            .collect())
    }

    /// Writes the files; true if a resolv.conf was written (it differs from the node's).
    fn write_files(&self, pod: &Pod, ip: &str, etc: &Path) -> std::io::Result<bool> {
        std::fs::create_dir_all(etc)?;
        let meta = &pod.metadata;
        let spec = pod.spec.clone().unwrap_or_default();
        let namespace = meta.namespace.as_deref().unwrap_or("default");
        let hostname = spec
            .hostname
            .clone()
            .or(meta.name.clone())
            .unwrap_or_default();
        let fqdn = spec
            .subdomain
            .as_ref()
            .map(|sub| format!("{hostname}.{sub}.{namespace}.svc.{}", self.cluster_domain));
        std::fs::write(
            etc.join("hosts"),
            hosts_file(ip, &hostname, fqdn.as_deref()),
        )?;
        let host = std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default();
        let host = ResolvConf::parse(&host);
        let node = NodeDns {
            cluster_dns: &self.cluster_dns,
            cluster_domain: &self.cluster_domain,
            host: &host,
        };
        let Some(resolv) = pod_resolv_conf(&spec, namespace, node) else {
            return Ok(false);
        };
        std::fs::write(etc.join("resolv.conf"), resolv.render())?;
        Ok(true)
    }
}
