//! The data path of one service port: accept, pick an endpoint, dial with retry, copy bytes.
//!
//! Kubernetes counterpart: `pkg/proxy/userspace/proxysocket.go` (≤ v1.25): `tcpProxySocket.
//! ProxyLoop` accepts, `tryConnect` dials with the timeouts `[250ms, 500ms, 1s, 2s]` asking the
//! load balancer again (affinity reset) after each failure, and `proxyTCP` runs two `copyBytes`
//! goroutines until either side closes. minik moves the bytes with a read/write loop per direction
//! that switches to `splice(2)` for bulk data (`forward.rs`).
//!
//! The rules minik keeps:
//! - no endpoint at all → the client's connection is closed at once (nothing to wait for);
//! - a failed dial is retried on the next endpoint, at most once per endpoint and at most
//!   `dial_attempts` times (4 upstream), each attempt with a short timeout that doubles
//!   (`dial_timeout`, ×2, ×4, ×8), and only **before** any byte was forwarded — after that a retry
//!   could duplicate a request;
//! - removing an endpoint does not cut established connections: they end when either side closes
//!   (as conntrack does in iptables mode). Only proxy shutdown cuts them.
//!
//! The hot path is cheap on purpose: one short mutex hold to pick the endpoint, `TCP_NODELAY` on
//! both sockets (a proxy must not add Nagle delays on top of the client's), one read and one write
//! per request-sized chunk, no user-space copy of bulk data; counters are plain atomics.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

use minik_client::connections::ConnectionTracker;

use crate::forward::forward_bidirectional;
use crate::load_balancer::LoadBalancer;
use crate::metrics::PortMetrics;
use crate::service_port::ServicePortName;

/// Pause after a failed `accept` (e.g. out of file descriptors) so the loop does not spin.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(50);

/// Everything the listener of one service port and its connections share.
#[derive(Debug)]
pub struct PortProxy {
    /// Which service port this is (for logs).
    pub name: ServicePortName,
    /// The port's endpoints and rotation, updated in place when Endpoints change.
    pub balancer: Arc<LoadBalancer>,
    /// The port's counters.
    pub metrics: Arc<PortMetrics>,
    /// Timeout of the first dial attempt; later attempts double it.
    pub dial_timeout: Duration,
    /// The most endpoints tried per connection (upstream: 4). 1 makes the proxy behave like a
    /// consumer that does not retry, the slow load balancer of seed 003.
    pub dial_attempts: usize,
    /// Open connections per pod, for the idle rule's report.
    pub connections: Arc<ConnectionTracker>,
}

/// Accepts connections until `stop` fires (the service port went away or the proxy stops), and
/// spawns one task per connection on `connections`. Connection tasks outlive the listener: they end
/// when their peers close or when `shutdown` (the whole proxy) fires.
pub async fn serve(
    listener: Arc<TcpListener>,
    port: Arc<PortProxy>,
    stop: CancellationToken,
    connections: TaskTracker,
    shutdown: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((client, peer)) => {
                    PortMetrics::inc(&port.metrics.connections);
                    connections.spawn(proxy_connection(client, peer, port.clone(), shutdown.clone()));
                }
                Err(error) => {
                    warn!(service = %port.name, %error, "accept failed");
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                }
            },
        }
    }
    debug!(service = %port.name, "listener stopped");
}

/// Proxies one client connection to one endpoint, until either side closes.
async fn proxy_connection(
    mut client: TcpStream,
    peer: SocketAddr,
    port: Arc<PortProxy>,
    shutdown: CancellationToken,
) {
    // Dropping `client` on the early returns closes the connection at once.
    let Some((mut backend, endpoint)) = dial_endpoint(&port, peer.ip()).await else {
        return;
    };
    // Counted until this function returns, whichever way the connection ends.
    let _open = port.connections.open(endpoint.ip());
    let _ = client.set_nodelay(true);
    let _ = backend.set_nodelay(true);
    debug!(service = %port.name, client = %peer, %endpoint, "proxying connection");
    let copied = tokio::select! {
        _ = shutdown.cancelled() => return,
        copied = forward_bidirectional(
            &mut client,
            &mut backend,
            &port.metrics.bytes_in,
            &port.metrics.bytes_out,
        ) => copied,
    };
    if let Err(error) = copied {
        debug!(service = %port.name, %endpoint, %error, "connection ended with an error");
    }
}

/// Picks an endpoint and connects to it, moving on to the next endpoint when a dial fails (upstream
/// `tryConnect`). Returns `None` when the port has no endpoint or every attempt failed.
pub async fn dial_endpoint(port: &PortProxy, client_ip: IpAddr) -> Option<(TcpStream, SocketAddr)> {
    // At most one attempt per endpoint, and at most `dial_attempts`; with no endpoint at all the
    // single attempt below finds out and closes the connection.
    let attempts = port.balancer.len().min(port.dial_attempts).max(1);
    for attempt in 0..attempts {
        let Some(endpoint) = port.balancer.next(Some(client_ip), attempt > 0) else {
            PortMetrics::inc(&port.metrics.no_endpoints);
            debug!(service = %port.name, "no endpoints, closing connection");
            return None;
        };
        let timeout = dial_timeout(port.dial_timeout, attempt);
        match tokio::time::timeout(timeout, TcpStream::connect(endpoint)).await {
            Ok(Ok(stream)) => return Some((stream, endpoint)),
            Ok(Err(error)) => {
                PortMetrics::inc(&port.metrics.dial_failures);
                warn!(service = %port.name, %endpoint, %error, attempt, "dial failed");
            }
            Err(_elapsed) => {
                PortMetrics::inc(&port.metrics.dial_failures);
                warn!(service = %port.name, %endpoint, ?timeout, attempt, "dial timed out");
            }
        }
    }
    warn!(service = %port.name, attempts, "failed to connect to an endpoint");
    None
}

/// The timeout of dial attempt `attempt` (from 0): `base`, then doubled up to 8 × `base`, as
/// upstream's `[250ms, 500ms, 1s, 2s]`.
fn dial_timeout(base: Duration, attempt: usize) -> Duration {
    base * (1u32 << attempt.min(3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dial_timeouts_double_like_upstream_and_stop_growing() {
        let base = Duration::from_millis(250);
        let timeouts: Vec<_> = (0..6).map(|attempt| dial_timeout(base, attempt)).collect();
        let millis: Vec<_> = timeouts.iter().map(Duration::as_millis).collect();
        assert_eq!(millis, [250, 500, 1000, 2000, 2000, 2000]);
    }
}
