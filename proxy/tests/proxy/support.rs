//! Fixtures: identifying backends, Service/EndpointSlice builders and a proxier harness.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use minik_api::core::Service;
use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_api::ObjectKey;
use minik_proxy::proxier::{Proxier, ProxierConfig};
use minik_proxy::service_port::ServicePortName;
use minik_proxy::state::ProxyState;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Every wait in these tests is bounded by this.
pub const PATIENCE: Duration = Duration::from_secs(5);

/// A backend that greets each connection with `hello from <its address>\n`, then echoes.
pub struct Backend {
    pub address: SocketAddr,
    stop: CancellationToken,
}

impl Backend {
    /// Starts a backend on `ip` (a 127.244.9.x address) and a free port.
    pub async fn start(ip: &str) -> Backend {
        let listener = TcpListener::bind((ip, 0)).await.expect("bind backend");
        let address = listener.local_addr().expect("backend address");
        let stop = CancellationToken::new();
        let token = stop.clone();
        tokio::spawn(async move {
            loop {
                let (socket, _) = tokio::select! {
                    _ = token.cancelled() => break,
                    accepted = listener.accept() => match accepted { Ok(a) => a, Err(_) => break },
                };
                tokio::spawn(greet_and_echo(socket, address, token.clone()));
            }
        });
        Backend { address, stop }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn greet_and_echo(mut socket: TcpStream, address: SocketAddr, stop: CancellationToken) {
    let greeting = format!("hello from {address}\n");
    if socket.write_all(greeting.as_bytes()).await.is_err() {
        return;
    }
    let mut buffer = [0u8; 1024];
    loop {
        let read = tokio::select! {
            _ = stop.cancelled() => return,
            read = socket.read(&mut buffer) => read,
        };
        match read {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if socket.write_all(&buffer[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// An address on which nothing listens (bound, then released): dials to it are refused.
pub async fn dead_address(ip: &str) -> SocketAddr {
    let listener = TcpListener::bind((ip, 0)).await.expect("bind");
    listener.local_addr().expect("address")
}

/// Connects to `address` and reads the backend's greeting line (`None`: closed without one).
pub async fn greeting(address: SocketAddr) -> Option<String> {
    let mut stream = TcpStream::connect(address)
        .await
        .expect("connect to the proxy");
    read_line(&mut stream).await
}

/// Reads one `\n`-terminated line; `None` on EOF before any byte.
pub async fn read_line(stream: &mut TcpStream) -> Option<String> {
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        let read = tokio::time::timeout(PATIENCE, stream.read(&mut byte)).await;
        match read.expect("the proxy answered in time") {
            Ok(0) | Err(_) => {
                return if line.is_empty() {
                    None
                } else {
                    Some(text(line))
                }
            }
            Ok(_) if byte[0] == b'\n' => return Some(text(line)),
            Ok(_) => line.push(byte[0]),
        }
    }
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).expect("utf-8 greeting")
}

/// `default/<name>` with one TCP port named `http` on `cluster_ip:port`.
pub fn service(name: &str, cluster_ip: &str, port: u16) -> Service {
    serde_json::from_value(json!({
        "metadata": {"namespace": "default", "name": name, "uid": format!("uid-{name}")},
        "spec": {"clusterIP": cluster_ip, "ports": [{"name": "http", "port": port, "targetPort": 8080}]}
    }))
    .expect("service fixture")
}

/// The EndpointSlices of `default/<name>`: one per backend, since each backend has its own port
/// (`<name>-0`, `<name>-1` …), every endpoint ready, port name `http`.
pub fn slices(name: &str, ready: &[SocketAddr]) -> Vec<EndpointSlice> {
    ready
        .iter()
        .enumerate()
        .map(|(index, address)| {
            serde_json::from_value(json!({
                "metadata": {"namespace": "default", "name": format!("{name}-{index}"),
                             "labels": {"kubernetes.io/service-name": name}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": [address.ip().to_string()], "conditions": {"ready": true}}],
                "ports": [{"name": "http", "port": address.port(), "protocol": "TCP"}]
            }))
            .expect("slice fixture")
        })
        .collect()
}

/// The one slice of `default/<name>` routing to `backend`.
pub fn slice(name: &str, backend: SocketAddr) -> EndpointSlice {
    slices(name, &[backend]).remove(0)
}

/// The `http` port of `default/<name>`.
pub fn port_name(name: &str) -> ServicePortName {
    ServicePortName {
        service: ObjectKey::new("default", name),
        port: "http".into(),
    }
}

/// A proxier with its state, torn down (listeners and connections) on drop.
pub struct Harness {
    pub proxier: Proxier,
    pub state: Arc<ProxyState>,
    pub shutdown: CancellationToken,
}

impl Harness {
    pub fn new() -> Harness {
        Harness::with_config(ProxierConfig::default())
    }

    pub fn with_config(config: ProxierConfig) -> Harness {
        let state = Arc::new(ProxyState::default());
        let shutdown = CancellationToken::new();
        let proxier = Proxier::new(config, state.clone(), TaskTracker::new(), shutdown.clone());
        Harness {
            proxier,
            state,
            shutdown,
        }
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}
