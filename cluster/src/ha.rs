//! Several apiservers on one etcd: their addresses, names and start, behind one front door.
//!
//! Kubernetes counterpart: kubeadm's highly available control plane ("stacked" or "external etcd"
//! topology): N kube-apiservers share one etcd cluster, a load balancer gives them one address
//! (`--control-plane-endpoint`), and each apiserver adds itself to the `kubernetes` Endpoints
//! through the lease endpoint reconciler (`--endpoint-reconciler-type=lease`, the default).
//! resourceVersions are etcd revisions, the same on every apiserver, so a client may move from
//! one to another and resume its watch where it was.
//!
//! What minik simplifies: the apiservers all listen on `127.0.0.1`, each on its own free port
//! (upstream's are one port on several hosts); the scheduler and the controller manager stay one
//! each (they reach the apiservers through the door and lose nothing when one dies; the controller
//! manager already elects a leader). `apiservers` > 1 needs `--storage etcd://…`: sled and memory
//! belong to one process.

use std::net::SocketAddr;
use std::time::Instant;

use crate::cluster::{Cluster, ClusterConfig};
use crate::component::Component;
use crate::front_door::FrontDoor;
use crate::{Error, Result};

/// Where each apiserver listens: empty for one (it listens on `listen`), else a free loopback
/// port each. Refuses several apiservers on a store only one process can open.
pub(crate) fn choose_listens(config: &ClusterConfig) -> Result<Vec<SocketAddr>> {
    if config.apiservers <= 1 {
        return Ok(Vec::new());
    }
    let shared = config
        .storage
        .as_deref()
        .is_some_and(|s| s.starts_with("etcd://"));
    if !shared {
        return Err(Error::Start(format!(
            "--apiservers {} needs a store they can share: --storage etcd://HOST:PORT",
            config.apiservers
        )));
    }
    (0..config.apiservers)
        .map(|_| {
            let probe = std::net::TcpListener::bind((config.listen.ip(), 0))
                .map_err(|e| Error::io("choosing an apiserver port", e))?;
            probe
                .local_addr()
                .map_err(|e| Error::io("reading the apiserver's address", e))
        })
        .collect()
}

/// The listen address and data directory (under the cluster's) of apiserver `index` (1-based;
/// 0 or a single apiserver: `listen` and `apiserver/`).
pub(crate) fn apiserver_listen(config: &ClusterConfig, index: u8) -> (SocketAddr, String) {
    match config
        .apiserver_listens
        .get(usize::from(index).wrapping_sub(1))
    {
        Some(listen) if config.apiservers > 1 => (*listen, instance(index)),
        _ => (config.listen, "apiserver".into()),
    }
}

/// The name of apiserver `index` among several: `apiserver-1`, `apiserver-2`, …
pub(crate) fn instance(index: u8) -> String {
    format!("apiserver-{index}")
}

/// The `--listen` value in an apiserver's command line.
pub(crate) fn listen_arg(args: &[String]) -> Option<SocketAddr> {
    let at = args.iter().position(|a| a == "--listen")?;
    args.get(at + 1)?.parse().ok()
}

/// The URL of the apiserver started with `args` itself (not the door).
pub(crate) fn own_url(config: &ClusterConfig, args: &[String]) -> String {
    let scheme = if config.secure { "https" } else { "http" };
    let listen = listen_arg(args).unwrap_or(config.listen);
    format!("{scheme}://{listen}")
}

impl Cluster {
    /// Opens the front door on `listen`, then starts the apiservers one after the other, each
    /// waited for on its own `/readyz`.
    pub(crate) async fn start_apiservers(&mut self) -> Result<()> {
        let door = FrontDoor::start(self.config.listen, self.config.apiserver_listens.clone())?;
        self.front_door = Some(door);
        for index in 1..=self.config.apiservers {
            let step = Instant::now();
            self.launch(Component::Apiserver, index)?;
            self.wait_ready(self.members.len() - 1).await?;
            tracing::info!(
                apiserver = %instance(index),
                took_ms = step.elapsed().as_millis() as u64,
                "apiserver ready behind the front door"
            );
        }
        Ok(())
    }

    /// The addresses behind the front door (empty with one apiserver).
    pub fn apiserver_addresses(&self) -> Vec<SocketAddr> {
        self.config.apiserver_listens.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One apiserver keeps `listen` and `apiserver/`; several get their own port and directory.
    #[test]
    fn each_apiserver_has_its_address_and_directory() {
        let one = ClusterConfig::default();
        assert_eq!(apiserver_listen(&one, 0), (one.listen, "apiserver".into()));
        let a: SocketAddr = "127.0.0.1:7001".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:7002".parse().unwrap();
        let three = ClusterConfig {
            apiservers: 2,
            apiserver_listens: vec![a, b],
            ..ClusterConfig::default()
        };
        assert_eq!(apiserver_listen(&three, 2), (b, "apiserver-2".into()));
        let args = Component::Apiserver.args(&three, 1);
        assert_eq!(listen_arg(&args), Some(a));
        assert!(args.join(" ").contains("--endpoint-reconciler-type lease"));
        assert_eq!(own_url(&three, &args), "https://127.0.0.1:7001");
    }

    /// Several apiservers on sled (one process's database) are refused before anything starts.
    #[test]
    fn several_apiservers_need_etcd() {
        let sled = ClusterConfig {
            apiservers: 3,
            ..ClusterConfig::default()
        };
        assert!(choose_listens(&sled).is_err());
        let etcd = ClusterConfig {
            apiservers: 3,
            storage: Some("etcd://127.0.0.1:2379".into()),
            listen: "127.0.0.1:0".parse().unwrap(),
            ..ClusterConfig::default()
        };
        let listens = choose_listens(&etcd).unwrap();
        assert_eq!(listens.len(), 3);
        assert!(listens
            .iter()
            .all(|l| l.ip().is_loopback() && l.port() != 0));
    }
}
