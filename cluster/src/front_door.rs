//! The front door of a cluster with several apiservers: one address, any live apiserver behind it.
//!
//! Kubernetes counterpart: the load balancer kubeadm's HA guide puts in front of the control
//! plane (`--control-plane-endpoint`; HAProxy in TCP mode, or kube-vip): every kubeconfig names the
//! front door, and TLS passes through it untouched, so the apiservers' serving certificate must
//! cover the front door's address (here all of them share `127.0.0.1`, which it names).
//!
//! Why a small TCP forwarder here rather than minik's `loadbalancer` component: that one is an API
//! client (it watches LoadBalancer Services), so it starts after the apiserver and cannot stand in
//! front of it. The front door is a task of the launcher (`minik up`, the test harness) that exists
//! before the first apiserver does.
//!
//! Each new connection goes to the next backend, round robin; one that refuses or does not answer
//! within [`CONNECT_TIMEOUT`] is skipped for the next, so a killed apiserver costs no failed
//! connection. When a backend dies its connections end, and clients reconnect through the door to
//! another one (a watch resumes from its last resourceVersion). What it leaves out: health checks
//! (a refused connect is the check), weights, and draining.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::{Error, Result};

/// How long one backend may take to accept a connection before the next is tried.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// A running front door; dropping it (or [`FrontDoor::stop`]) closes the listener and every
/// forwarded connection.
pub struct FrontDoor {
    /// Where clients connect.
    pub address: SocketAddr,
    /// The apiservers behind it, in order.
    pub backends: Arc<[SocketAddr]>,
    _stop: DropGuard,
}

impl FrontDoor {
    /// Binds `listen` (loopback) and forwards every connection to one of `backends`.
    pub fn start(listen: SocketAddr, backends: Vec<SocketAddr>) -> Result<FrontDoor> {
        let std_listener = std::net::TcpListener::bind(listen)
            .map_err(|e| Error::io(format!("binding the front door at {listen}"), e))?;
        std_listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("setting the front door non-blocking", e))?;
        let listener = TcpListener::from_std(std_listener)
            .map_err(|e| Error::io("registering the front door", e))?;
        let address = listener
            .local_addr()
            .map_err(|e| Error::io("reading the front door's address", e))?;
        let backends: Arc<[SocketAddr]> = backends.into();
        let stop = CancellationToken::new();
        tracing::info!(%address, backends = ?backends, "front door listening");
        tokio::spawn(accept_loop(listener, backends.clone(), stop.clone()));
        Ok(FrontDoor {
            address,
            backends,
            _stop: stop.drop_guard(),
        })
    }
}

async fn accept_loop(listener: TcpListener, backends: Arc<[SocketAddr]>, stop: CancellationToken) {
    let next = Arc::new(AtomicUsize::new(0));
    loop {
        let accepted = tokio::select! {
            _ = stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((client, _)) => {
                let start = next.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(forward(client, backends.clone(), start, stop.clone()));
            }
            Err(e) => {
                // EMFILE and friends: wait a moment rather than spin.
                tracing::warn!(error = %e, "front door: accept failed");
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                }
            }
        }
    }
}

/// Connects to the first backend that answers, starting at `start`, and copies both ways until
/// either side closes (a killed apiserver closes its side, and the client's connection ends).
async fn forward(
    mut client: TcpStream,
    backends: Arc<[SocketAddr]>,
    start: usize,
    stop: CancellationToken,
) {
    let Some((backend, mut upstream)) = connect_any(&backends, start).await else {
        tracing::warn!(backends = ?backends, "front door: no apiserver answered");
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    tokio::select! {
        _ = stop.cancelled() => {}
        result = tokio::io::copy_bidirectional(&mut client, &mut upstream) => {
            if let Err(e) = result {
                tracing::debug!(%backend, error = %e, "front door: connection ended");
            }
        }
    }
}

/// The first of `backends` (from `start`, round robin) that accepts a connection.
async fn connect_any(backends: &[SocketAddr], start: usize) -> Option<(SocketAddr, TcpStream)> {
    for backend in candidates(backends, start) {
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(backend)).await {
            Ok(Ok(stream)) => return Some((backend, stream)),
            Ok(Err(e)) => tracing::debug!(%backend, error = %e, "front door: backend refused"),
            Err(_) => tracing::debug!(%backend, "front door: backend did not answer"),
        }
    }
    None
}

/// The order a connection tries the backends in: from `start`, wrapping around, each once.
fn candidates(backends: &[SocketAddr], start: usize) -> impl Iterator<Item = SocketAddr> + '_ {
    let n = backends.len().max(1);
    (0..backends.len()).map(move |i| backends[(start + i) % n])
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    /// Round robin from `start`, every backend once.
    #[test]
    fn candidates_wrap_around() {
        let backends = [addr(1), addr(2), addr(3)];
        let order: Vec<_> = candidates(&backends, 4).map(|a| a.port()).collect();
        assert_eq!(order, [2, 3, 1]);
        assert_eq!(candidates(&[], 7).count(), 0);
    }

    /// An echo server that answers with its own tag, then echoes.
    async fn tagged_echo(tag: u8) -> SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let _ = socket.write_all(&[tag]).await;
                    let mut buf = [0u8; 16];
                    while let Ok(n) = socket.read(&mut buf).await {
                        if n == 0 || socket.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        address
    }

    /// A closed port behind the door is skipped: every connection reaches a live backend.
    #[tokio::test]
    async fn skips_a_dead_backend_and_forwards_both_ways() {
        let dead = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap()
        };
        let live = tagged_echo(7).await;
        let door = FrontDoor::start(addr(0), vec![dead, live]).unwrap();
        for _ in 0..4 {
            let mut socket = TcpStream::connect(door.address).await.unwrap();
            let mut tag = [0u8; 1];
            socket.read_exact(&mut tag).await.unwrap();
            assert_eq!(tag[0], 7);
            socket.write_all(b"ping").await.unwrap();
            let mut echo = [0u8; 4];
            socket.read_exact(&mut echo).await.unwrap();
            assert_eq!(&echo, b"ping");
        }
    }
}
