//! The cluster a demo part runs on: a private one in a temporary directory, or the one
//! `--server` names.
//!
//! Kubernetes counterpart: kind's `create cluster` / `delete cluster` around an experiment. A
//! private cluster is the one launcher `minik up` uses ([`minik_cluster::Cluster`]), two nodes,
//! with the flags a part needs (the race's slow proxy, ingress and load balancer), and its pods
//! are killed at once when it stops (`drain_grace` 0: a demo's 180 s grace periods are not waited
//! out). It leaves nothing behind.

use minik_client::Client;
use minik_cluster::{Cluster, ClusterConfig};

use super::consumers::Addresses;

/// The flags of a private cluster's components.
#[derive(Clone, Debug, Default)]
pub struct Flags {
    /// More flags for the proxy.
    pub proxy: Vec<String>,
    /// More flags for the ingress controller.
    pub ingress: Vec<String>,
    /// More flags for the load balancer.
    pub loadbalancer: Vec<String>,
    /// More flags for every kubelet (the rollout's small nodes).
    pub kubelet: Vec<String>,
    /// Run the cluster autoscaler (the rollout with `--max-nodes`).
    pub autoscaler: Option<minik_cluster_autoscaler::Config>,
}

/// The cluster a part runs on.
pub struct DemoCluster {
    /// A client with the admin's credentials.
    pub client: Client,
    /// The ingress controller and load balancer (a private cluster only).
    pub consumers: Option<Addresses>,
    private: Option<(Cluster, tempfile::TempDir)>,
}

impl DemoCluster {
    /// Connects to `server`, or starts a private cluster with `flags`.
    pub async fn start(
        server: Option<&str>,
        kubeconfig: Option<&std::path::Path>,
        flags: Flags,
        narrate: bool,
    ) -> crate::Result<DemoCluster> {
        if let Some(server) = server {
            return Ok(DemoCluster {
                client: client_for(server, kubeconfig)?,
                consumers: None,
                private: None,
            });
        }
        let data_dir = tempfile::Builder::new().prefix("minik-demo-").tempdir()?;
        let options = ClusterConfig {
            data_dir: data_dir.path().to_path_buf(),
            listen: crate::free_loopback_port()?,
            nodes: super::nodes::START_NODES as u8,
            proxy_args: flags.proxy,
            ingress_args: flags.ingress,
            loadbalancer_args: flags.loadbalancer,
            kubelet_args: flags.kubelet,
            autoscaler: flags.autoscaler,
            progress: false,
            drain_grace: Some(0),
            ..ClusterConfig::default()
        };
        let cluster = Cluster::start(options).await?;
        if narrate {
            println!(
                "  (a private cluster started in {:.0} ms in {})",
                cluster.startup.as_secs_f64() * 1000.0,
                data_dir.path().display()
            );
        }
        let consumers = match (
            cluster.ingress_address(),
            cluster.ingress_metrics_address(),
            cluster.loadbalancer_metrics_address(),
        ) {
            (Some(ingress), Some(ingress_metrics), Some(loadbalancer_metrics)) => Some(Addresses {
                ingress,
                ingress_metrics,
                loadbalancer_metrics,
            }),
            _ => None,
        };
        Ok(DemoCluster {
            client: cluster.client()?,
            consumers,
            private: Some((cluster, data_dir)),
        })
    }

    /// Stops a private cluster and removes its directory.
    pub async fn stop(self) {
        if let Some((cluster, data_dir)) = self.private {
            cluster.stop().await;
            drop(data_dir);
        }
    }
}

/// A client for `server`, with the credentials of `kubeconfig`'s current context if given.
fn client_for(server: &str, kubeconfig: Option<&std::path::Path>) -> crate::Result<Client> {
    let Some(path) = kubeconfig else {
        return Ok(Client::new(server)?);
    };
    let mut config = minik_client::kubeconfig::load(path)?;
    config.server = server.to_string();
    Ok(Client::from_config(&config)?)
}
