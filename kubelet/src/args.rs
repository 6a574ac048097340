//! The kubelet's command-line flags (shared by `minik-kubelet` and `minik kubelet`).
//!
//! Kubernetes counterpart: `cmd/kubelet/app/options` (`--node-name`, `--root-dir`,
//! `--pod-cidr` …). minik's flags are the ones agreed for `minik up` (see the README).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::{Capacity, Config};

/// `minik kubelet --server URL --node-name node-1 --root-dir DIR --pod-cidr 127.244.1.0/24 …`
#[derive(Clone, Debug, clap::Args)]
pub struct Args {
    /// The apiserver URL.
    #[arg(long, default_value = "http://127.0.0.1:6443")]
    pub server: String,
    /// A kubeconfig to connect with (https, client certificate); its server wins over --server.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// This node's name.
    #[arg(long, default_value = "node-1")]
    pub node_name: String,
    /// Where the kubelet keeps containers, logs, volumes and IP allocations.
    #[arg(long, default_value = "minik-data/kubelet")]
    pub root_dir: PathBuf,
    /// This node's pod CIDR, a /16 to a /28 inside 127.0.0.0/8.
    #[arg(long, default_value = "127.244.1.0/24")]
    pub pod_cidr: String,
    /// Address of the container logs server (loopback; port 0 picks one).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Serve the logs server over HTTPS with this certificate (PEM), authorizing every request
    /// with a SubjectAccessReview; needs --tls-private-key-file and --client-ca-file.
    #[arg(long, requires_all = ["tls_private_key_file", "client_ca_file"])]
    pub tls_cert_file: Option<PathBuf>,
    /// The serving certificate's key (PEM).
    #[arg(long, requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,
    /// The CA callers' client certificates must chain to.
    #[arg(long, requires = "tls_cert_file")]
    pub client_ca_file: Option<PathBuf>,
    /// The `minik` binary that runs `shim` and built-in images (default: this executable).
    #[arg(long)]
    pub minik_binary: Option<PathBuf>,
    /// First CrashLoopBackOff delay (humantime: `10s`, `200ms`).
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub backoff_base: Duration,
    /// Longest CrashLoopBackOff delay.
    #[arg(long, default_value = "300s", value_parser = humantime::parse_duration)]
    pub backoff_max: Duration,
    /// Lease renewal period.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub heartbeat_interval: Duration,
    /// CPU capacity (default: the host's cores).
    #[arg(long)]
    pub cpu: Option<String>,
    /// Memory capacity (default: the host's memory).
    #[arg(long)]
    pub memory: Option<String>,
    /// Pod capacity.
    #[arg(long, default_value = "110")]
    pub max_pods: String,
    /// The most processes one pod may have; a pod over it has its processes killed (-1: no limit).
    #[arg(long, default_value_t = crate::pids::DEFAULT_POD_PIDS_LIMIT, allow_negative_numbers = true)]
    pub pod_pids_limit: i64,
    /// The cluster DNS's IP for pods' resolv.conf (port 53; repeat for more).
    #[arg(long)]
    pub cluster_dns: Vec<String>,
    /// The cluster's DNS domain (the search path of pods' resolv.conf).
    #[arg(long, default_value = "cluster.local")]
    pub cluster_domain: String,
    /// Labels to add to the Node when registering (`key=value`, comma separated), as upstream's
    /// `--node-labels`: the cluster autoscaler's template marks its nodes this way.
    #[arg(long, value_delimiter = ',', value_parser = parse_label)]
    pub node_labels: Vec<(String, String)>,
}

/// `key=value` of `--node-labels`.
fn parse_label(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
        _ => Err(format!("{text:?} is not key=value")),
    }
}

/// The same flags as a standalone parser, for the `minik-kubelet` binary.
#[derive(Debug, clap::Parser)]
#[command(
    name = "minik-kubelet",
    about = "The minik kubelet: runs this node's pods as processes"
)]
pub struct Cli {
    /// The kubelet's flags.
    #[command(flatten)]
    pub args: Args,
}

impl Args {
    /// The kubelet `Config` these flags describe.
    pub fn into_config(self) -> Config {
        let host = Capacity::default();
        Config {
            server: self.server,
            kubeconfig: self.kubeconfig,
            node_name: self.node_name,
            root_dir: self.root_dir,
            pod_cidr: self.pod_cidr,
            listen: self.listen,
            tls: match (
                self.tls_cert_file,
                self.tls_private_key_file,
                self.client_ca_file,
            ) {
                (Some(cert_file), Some(key_file), Some(client_ca_file)) => {
                    Some(crate::server::TlsFiles {
                        cert_file,
                        key_file,
                        client_ca_file,
                    })
                }
                _ => None,
            },
            minik_binary: self
                .minik_binary
                .or_else(|| std::env::current_exe().ok())
                .unwrap_or_else(|| PathBuf::from("minik")),
            capacity: Capacity {
                cpu: self.cpu.unwrap_or(host.cpu),
                memory: self.memory.unwrap_or(host.memory),
                pods: self.max_pods,
            },
            heartbeat_interval: self.heartbeat_interval,
            backoff_base: self.backoff_base,
            backoff_max: self.backoff_max,
            pod_pids_limit: self.pod_pids_limit,
            cluster_dns: self.cluster_dns,
            cluster_domain: self.cluster_domain,
            node_labels: self.node_labels.into_iter().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[test]
    fn agreed_flags_parse_into_config() {
        let cli = Cli::parse_from([
            "minik-kubelet",
            "--server",
            "http://127.0.0.1:7000",
            "--node-name",
            "node-2",
            "--root-dir",
            "/tmp/k",
            "--pod-cidr",
            "127.244.2.0/24",
            "--backoff-base",
            "200ms",
            "--heartbeat-interval",
            "1s",
            "--minik-binary",
            "/bin/minik",
        ]);
        let config = cli.args.into_config();
        assert_eq!(config.node_name, "node-2");
        assert_eq!(config.backoff_base, Duration::from_millis(200));
        assert_eq!(config.backoff_max, Duration::from_secs(300));
        assert_eq!(config.listen.to_string(), "127.0.0.1:0");
        assert_eq!(config.minik_binary, PathBuf::from("/bin/minik"));
        assert_eq!(config.capacity.pods, "110");
    }
}
