//! Node ports: the port of a NodePort or LoadBalancer Service is also served on the node's own
//! address at `spec.ports[].nodePort`, and routed to the same endpoints as `clusterIP:port`.
//!
//! Kubernetes counterpart: kube-proxy's node-port handling. The userspace proxier redirected
//! `nodeIP:nodePort` to the service port's proxy socket with iptables; the iptables proxier
//! still opens ("claims") a socket on every node port (`openLocalPort`, `pkg/proxy/iptables/
//! proxier.go`) so no other process can take it, and when that fails it logs "can't open port,
//! skipping it", writes a Warning Event and carries on. minik needs no rule: the node listener
//! *is* the claim, and it shares the service port's [`PortProxy`] (balancer, counters), so both
//! addresses route alike and follow every endpoint change at once.
//!
//! What minik simplifies: one node address (the proxy's `--node-address`, 127.0.0.1 by default;
//! upstream listens on every node IP of `--nodeport-addresses`); `externalTrafficPolicy: Local`
//! is ignored (every node port routes to all the Service's endpoints, as `Cluster` does: minik's
//! nodes share one host, so there is no client source IP to keep and no extra hop to save).
//!
//! A node port freed by one Service and taken by another in the same instant may still be held by
//! the old accept loop for a moment; the bind then fails, is reported, and is tried again on the
//! Service's next change (upstream's proxier retries on every sync; minik has no periodic sync).
//! The proxy's own fallback listeners (`proxier.rs`) skip the node ports of the Services it knows.
//!
//! [`desired_node_address`] is the pure decision, tested below; [`NodeListener`] is what the
//! proxier keeps per open service port.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{error, info};

use crate::bind::bind_now;
use crate::service_port::ServicePortSpec;
use crate::tcp::{self, PortProxy};

/// The listener of one service port on `nodeAddress:nodePort`.
#[derive(Debug)]
pub struct NodeListener {
    /// Where it listens.
    pub address: SocketAddr,
    /// The socket (shared with its accept loop; handed over when a port is renamed).
    pub listener: Arc<TcpListener>,
    /// Cancelling it stops the accept loop; established connections carry on.
    pub stop: CancellationToken,
}

impl NodeListener {
    /// Stops accepting on the node port; returns the socket for a possible handover.
    pub fn close(self) -> Arc<TcpListener> {
        self.stop.cancel();
        info!(address = %self.address, "closed node port");
        self.listener
    }
}

/// Where a service port should listen on the node, if anywhere: `node_ip:nodePort` for a
/// NodePort or LoadBalancer Service's port that has a node port.
pub fn desired_node_address(spec: &ServicePortSpec, node_ip: IpAddr) -> Option<SocketAddr> {
    spec.node_port.map(|port| SocketAddr::new(node_ip, port))
}

/// What came of trying to listen on a node port.
#[derive(Debug)]
pub enum Opened {
    /// Listening, serving through the service port's proxy.
    Listening(NodeListener),
    /// The port could not be bound (taken by another process, or not allowed): logged, and the
    /// message is for the Warning Event. The proxier tries again on the Service's next change.
    Failed(String),
}

/// Starts serving `port` on `address`, reusing a handed-over socket when there is one.
pub fn open(
    address: SocketAddr,
    reuse: Option<Arc<TcpListener>>,
    port: Arc<PortProxy>,
    tasks: &TaskTracker,
    shutdown: &CancellationToken,
) -> Opened {
    let listener = match reuse {
        Some(listener) => listener,
        None => match bind_now(address) {
            Ok(listener) => Arc::new(listener),
            Err(error) => {
                // Upstream's words (`openLocalPort`'s caller), so a search finds both.
                error!(service = %port.name, %address, %error, "can't open port, skipping it");
                return Opened::Failed(format!(
                    "can't open node port {address} for {}: {error}",
                    port.name
                ));
            }
        },
    };
    let stop = shutdown.child_token();
    let serve = tcp::serve(
        listener.clone(),
        port.clone(),
        stop.clone(),
        tasks.clone(),
        shutdown.clone(),
    );
    tasks.spawn(serve);
    info!(service = %port.name, %address, "opened node port");
    Opened::Listening(NodeListener {
        address,
        listener,
        stop,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load_balancer::Affinity;
    use crate::service_port::ServicePortName;
    use minik_api::ObjectKey;

    fn spec(node_port: Option<u16>) -> ServicePortSpec {
        ServicePortSpec {
            name: ServicePortName {
                service: ObjectKey::new("default", "web"),
                port: "http".into(),
            },
            cluster_addr: "127.96.0.10:80".parse().unwrap(),
            affinity: Affinity::None,
            node_port,
        }
    }

    #[test]
    fn a_node_port_listens_on_the_node_address() {
        let node: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(
            desired_node_address(&spec(Some(30080)), node),
            Some("127.0.0.1:30080".parse().unwrap())
        );
        assert_eq!(desired_node_address(&spec(None), node), None);
    }
}
