//! Volumes at their `mountPath`: each container in its own user + mount namespace, with the
//! pod's volumes, `/etc/resolv.conf` and `/etc/hosts` bind-mounted where the spec says.
//!
//! Kubernetes counterpart: the runtime's OCI mounts (`pkg/kubelet/kuberuntime/
//! kuberuntime_container.go`, `makeMounts` in `pkg/kubelet/kubelet_pods.go`: each volumeMount,
//! `readOnly`, `subPath`, plus the pod's `/etc/hosts` and `/etc/resolv.conf`, which the kubelet
//! writes: `pkg/kubelet/network/dns/dns.go` for resolv.conf with `ClusterFirst`,
//! `makeHostsMount` for hosts). As upstream, each container has a mount namespace of its own,
//! built from the same pod plan, so the pod's containers see the same volumes.
//!
//! minik has no images: the container's root is the host's, and only the mount paths differ.
//! The kubelet detects once at start ([`detect`]) whether an unprivileged user + mount namespace
//! can be made; when it cannot, containers run as before (`$MINIK_MOUNT_<name>` only, which are
//! always set) and the pod gets an event saying so. The shim enters the namespace
//! (`enter.rs`) just before it starts the container.
//!
//! Read next: `enter.rs` (the mounts, and how a missing mount path is made without writing to
//! the host's filesystem).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::volumes::VolumePlan;

pub mod dns;
pub mod enter;
pub mod pod;

/// One bind mount: `source` (a host path) appears at `target` inside the container.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BindMount {
    pub source: PathBuf,
    pub target: String,
    #[serde(default)]
    pub read_only: bool,
}

/// Whether this node can give containers their own mount namespace, and why not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Support {
    pub available: bool,
    /// "user+mount namespaces" or the error that stopped the probe.
    pub detail: String,
}

/// The node annotation that reports [`Support`] (also in `minik version --verbose`).
pub const ANNOTATION: &str = "minik.io/mount-namespaces";

/// Runs `minik shim --probe-namespaces` (a fresh single-threaded process: a threaded one cannot
/// `unshare(CLONE_NEWUSER)`) and reads its verdict.
pub fn detect(minik_binary: &Path) -> Support {
    let output = std::process::Command::new(minik_binary)
        .args(["shim", "--probe-namespaces"])
        .stdin(std::process::Stdio::null())
        .output();
    match output {
        Ok(out) if out.status.success() => Support {
            available: true,
            detail: "user+mount namespaces".into(),
        },
        Ok(out) => Support {
            available: false,
            detail: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        },
        Err(error) => Support {
            available: false,
            detail: format!("running {}: {error}", minik_binary.display()),
        },
    }
}

/// Writes [`ANNOTATION`] on the node: `true` or `false: <why>`.
pub async fn annotate_node(client: &minik_client::Client, node: &str, support: &Support) {
    let value = match support.available {
        true => "true".to_string(),
        false => format!("false: {}", support.detail),
    };
    let nodes = minik_client::Api::<k8s_openapi::api::core::v1::Node>::all(client.clone());
    let patch = serde_json::json!({"metadata": {"annotations": {ANNOTATION: value}}});
    if let Err(error) = nodes.patch(node, &minik_client::Patch::Merge(patch)).await {
        tracing::warn!(%node, %error, "could not annotate the node with its mount namespaces");
    }
}

/// The mounts of `container`: its volumeMounts (sorted so parents come first, as upstream), then
/// the pod's `/etc/hosts` and `/etc/resolv.conf` when the kubelet wrote them to `etc_dir`.
pub fn container_mounts(
    plan: &VolumePlan,
    container: &str,
    etc_dir: &Path,
    resolv: bool,
) -> Vec<BindMount> {
    let mut mounts: Vec<BindMount> = plan
        .mounts
        .get(container)
        .into_iter()
        .flatten()
        .map(|m| BindMount {
            source: m.host_path.clone(),
            target: m.mount_path.clone(),
            read_only: m.read_only,
        })
        .collect();
    mounts.sort_by_key(|m| Path::new(&m.target).components().count());
    let spec_owns = |path: &str| mounts.iter().any(|m| m.target == path);
    let mut extra = Vec::new();
    if !spec_owns("/etc/hosts") {
        extra.push(etc_mount(etc_dir, "hosts"));
    }
    if resolv && !spec_owns("/etc/resolv.conf") {
        extra.push(etc_mount(etc_dir, "resolv.conf"));
    }
    mounts.extend(extra);
    mounts
}

fn etc_mount(etc_dir: &Path, name: &str) -> BindMount {
    BindMount {
        source: etc_dir.join(name),
        target: format!("/etc/{name}"),
        read_only: false,
    }
}

/// The pod's `/etc/hosts` (`managedHostsFileContent` in `kubelet_pods.go`): localhost, then the
/// pod's IP with its FQDN (with a `subdomain`) and hostname.
pub fn hosts_file(ip: &str, hostname: &str, fqdn: Option<&str>) -> String {
    let mut out = String::from(
        "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n",
    );
    match fqdn {
        Some(fqdn) => out.push_str(&format!("{ip}\t{fqdn}\t{hostname}\n")),
        None => out.push_str(&format!("{ip}\t{hostname}\n")),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_names_the_pod_by_fqdn_and_hostname() {
        let text = hosts_file(
            "127.244.1.5",
            "db-0",
            Some("db-0.db.shop.svc.cluster.local"),
        );
        assert!(text.contains("127.0.0.1\tlocalhost\n"));
        assert!(text.ends_with("127.244.1.5\tdb-0.db.shop.svc.cluster.local\tdb-0\n"));
    }
}
