//! `minik cluster-autoscaler`: its flags and the process's `run`.
//!
//! Kubernetes counterpart: `cluster-autoscaler/main.go` with the flags of the same names
//! (`--kubeconfig`, `--cloud-provider=externalgrpc --cloud-config`, `--max-nodes-total`,
//! `--scan-interval`, `--scale-down-unneeded-time`, `--scale-down-utilization-threshold`,
//! `--max-graceful-termination-sec`). minik has one cloud provider, so `--cloud-config` alone names
//! it; `--max-nodes` is accepted for `--max-nodes-total`. What it leaves out: leader election (one
//! autoscaler per cluster, supervised by `minik up`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use minik_client::Client;
use tokio_util::sync::CancellationToken;
use tracing::info;

use crate::cloud::RemoteNodeGroup;
use crate::{Config, Result};

/// Command-line flags of `minik cluster-autoscaler`.
#[derive(Clone, Debug, clap::Parser)]
#[command(
    about = "The minik cluster autoscaler: adds nodes for unschedulable pods, removes underused ones"
)]
pub struct Args {
    /// The apiserver URL.
    #[arg(long, default_value = "http://127.0.0.1:6443")]
    pub server: String,
    /// A kubeconfig to connect with (https, client certificate); its server wins over --server.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// The node-group API's kubeconfig (its URL, the cluster CA, the autoscaler's certificate),
    /// written by `minik up` as DATA/node-group.kubeconfig.
    #[arg(long)]
    pub cloud_config: PathBuf,
    /// The most nodes the cluster may have, the `--nodes` ones included.
    #[arg(long, alias = "max-nodes-total")]
    pub max_nodes: usize,
    /// How often the cluster is looked at.
    #[arg(long, default_value = "10s", value_parser = humantime::parse_duration)]
    pub scan_interval: Duration,
    /// How long an added node must be underused before it is removed.
    #[arg(long, default_value = "10m", value_parser = humantime::parse_duration)]
    pub scale_down_unneeded_time: Duration,
    /// Under this share of cpu and memory requested, a node is underused.
    #[arg(long, default_value_t = 0.5)]
    pub scale_down_utilization_threshold: f64,
    /// How long evictions refused by a PodDisruptionBudget are retried.
    #[arg(long, default_value = "2m", value_parser = humantime::parse_duration)]
    pub max_pod_eviction_time: Duration,
    /// How long evicted pods may take to terminate, in seconds.
    #[arg(long, default_value_t = 600)]
    pub max_graceful_termination_sec: u64,
}

impl Args {
    /// The configuration these flags describe.
    pub fn into_config(self) -> Config {
        Config {
            max_nodes_total: self.max_nodes,
            scan_interval: self.scan_interval,
            scale_down_unneeded_time: self.scale_down_unneeded_time,
            scale_down_utilization_threshold: self.scale_down_utilization_threshold,
            max_pod_eviction_time: self.max_pod_eviction_time,
            max_graceful_termination: Duration::from_secs(self.max_graceful_termination_sec),
            server: self.server,
            kubeconfig: self.kubeconfig,
            cloud_config: self.cloud_config,
        }
    }

    /// The flags that give `config` (its connection flags left out: the launcher adds them).
    pub fn flags(config: &Config) -> Vec<String> {
        let time = |d: Duration| humantime::format_duration(d).to_string();
        vec![
            "--max-nodes".into(),
            config.max_nodes_total.to_string(),
            "--scan-interval".into(),
            time(config.scan_interval),
            "--scale-down-unneeded-time".into(),
            time(config.scale_down_unneeded_time),
            "--scale-down-utilization-threshold".into(),
            config.scale_down_utilization_threshold.to_string(),
            "--max-pod-eviction-time".into(),
            time(config.max_pod_eviction_time),
            "--max-graceful-termination-sec".into(),
            config.max_graceful_termination.as_secs().to_string(),
        ]
    }
}

/// Runs the autoscaler process until `shutdown`: the apiserver through `--kubeconfig`, the cloud
/// through the node-group API of `--cloud-config`.
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<()> {
    let client = Client::connect(&config.server, config.kubeconfig.as_deref())?;
    let group = RemoteNodeGroup::from_kubeconfig(&config.cloud_config)?;
    let groups = group.node_groups().await.map_err(crate::Error::NodeGroup)?;
    info!(groups = ?groups, "node-group API reached");
    crate::run_with(config, client, Arc::new(group), shutdown).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The flags the launcher writes parse back into the same configuration.
    #[test]
    fn flags_round_trip() {
        let config = Config {
            max_nodes_total: 4,
            scan_interval: Duration::from_millis(500),
            scale_down_unneeded_time: Duration::from_secs(5),
            scale_down_utilization_threshold: 0.9,
            ..Config::default()
        };
        let mut argv = vec!["cluster-autoscaler".to_string()];
        argv.extend(Args::flags(&config));
        argv.extend(["--cloud-config".into(), "/d/node-group.kubeconfig".into()]);
        let parsed = Args::try_parse_from(argv).expect("flags").into_config();
        assert_eq!(parsed.max_nodes_total, 4);
        assert_eq!(parsed.scan_interval, Duration::from_millis(500));
        assert_eq!(parsed.scale_down_unneeded_time, Duration::from_secs(5));
        assert_eq!(parsed.scale_down_utilization_threshold, 0.9);
        assert_eq!(parsed.max_graceful_termination, Duration::from_secs(600));
        assert_eq!(
            parsed.cloud_config,
            PathBuf::from("/d/node-group.kubeconfig")
        );
    }
}
