//! The HAProxy peer of `minik bench --compare`: the same HTTP backend reached through minik's proxy
//! (a Service's `clusterIP:port`) and through HAProxy in TCP mode, both loaded by `wrk` with the
//! same flags, once with keep-alive and once with a new connection per request.
//!
//! Kubernetes counterpart: none; kube-proxy's userspace mode was compared with iptables in
//! k/k#16344. HAProxy runs with its defaults (`mode tcp`, one thread per CPU), which is what
//! minik's L4 proxy does too; the backend is a tiny HTTP responder in the bench process, the same
//! one for both. The two proxies take turns (minik, HAProxy, minik, …) and each keeps its best
//! round, so a burst of load from elsewhere on the machine hurts neither one alone.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};

use super::super::proxy::{create_service, listen_address};
use super::super::Bench;
use super::ratio::Peer;
use crate::error::Context;

/// The HTTP backend's address (a pod-like loopback address, next to the proxy benchmark's).
const BACKEND_IP: Ipv4Addr = Ipv4Addr::new(127, 244, 250, 2);
/// Where HAProxy listens.
const HAPROXY_IP: Ipv4Addr = Ipv4Addr::new(127, 244, 250, 3);
const SERVICE: &str = "bench-compare-http";

/// The four figures (requests per second), minik's and HAProxy's, per connection mode.
pub struct ProxyFigures {
    pub minik_keep_alive: Result<f64, String>,
    pub haproxy_keep_alive: Peer,
    pub minik_per_request: Result<f64, String>,
    pub haproxy_per_request: Peer,
}

/// How long and how often `wrk` runs.
pub struct Load {
    pub seconds: u32,
    pub rounds: usize,
    pub connections: usize,
}

/// Runs both proxies under `wrk`; a missing `wrk` or `haproxy` is reported, not an error.
pub async fn measure(ctx: &Bench, load: Load) -> crate::Result<ProxyFigures> {
    let Some(wrk) = super::which("wrk") else {
        let missing = || Peer::NotInstalled("wrk (the load generator)".into());
        let why = || Err("wrk not installed".to_string());
        return Ok(ProxyFigures {
            minik_keep_alive: why(),
            haproxy_keep_alive: missing(),
            minik_per_request: why(),
            haproxy_per_request: missing(),
        });
    };
    let listener = TcpListener::bind(SocketAddr::from((BACKEND_IP, 0))).await?;
    let backend = listener.local_addr()?;
    let server = tokio::spawn(serve(listener));
    let outcome = with_backend(ctx, &wrk, backend, &load).await;
    server.abort();
    super::delete_service(ctx, SERVICE).await;
    outcome
}

async fn with_backend(
    ctx: &Bench,
    wrk: &Path,
    backend: SocketAddr,
    load: &Load,
) -> crate::Result<ProxyFigures> {
    let cluster_address = create_service(ctx, SERVICE, backend).await?;
    let minik = wait_answers(ctx, cluster_address).await?;
    let dir = tempfile::Builder::new()
        .prefix("minik-bench-haproxy-")
        .tempdir()?;
    let mut haproxy = match super::which("haproxy") {
        Some(program) => Some(start_haproxy(&program, dir.path(), backend).await),
        None => None,
    };
    let mut figures = ProxyFigures {
        minik_keep_alive: Err("no round ran".into()),
        haproxy_keep_alive: Peer::NotInstalled("haproxy".into()),
        minik_per_request: Err("no round ran".into()),
        haproxy_per_request: Peer::NotInstalled("haproxy".into()),
    };
    for _ in 0..load.rounds {
        for close in [false, true] {
            let rate = wrk_rate(wrk, minik, close, load)
                .await
                .map_err(|e| e.to_string());
            let slot = if close {
                &mut figures.minik_per_request
            } else {
                &mut figures.minik_keep_alive
            };
            *slot = best(slot.clone(), rate);
            let peer = match &haproxy {
                None => Peer::NotInstalled("haproxy".into()),
                Some(Err(err)) => Peer::Failed(err.to_string()),
                Some(Ok((_, address))) => match wrk_rate(wrk, *address, close, load).await {
                    Ok(rate) => Peer::Measured(rate),
                    Err(err) => Peer::Failed(err.to_string()),
                },
            };
            let slot = if close {
                &mut figures.haproxy_per_request
            } else {
                &mut figures.haproxy_keep_alive
            };
            *slot = best_peer(slot.clone(), peer);
        }
    }
    if let Some(Ok((child, _))) = haproxy.as_mut() {
        let _ = child.kill().await;
    }
    Ok(figures)
}

/// The better of two rounds (a failed round never hides a measured one).
fn best(a: Result<f64, String>, b: Result<f64, String>) -> Result<f64, String> {
    match (a, b) {
        (Ok(x), Ok(y)) => Ok(x.max(y)),
        (Ok(x), Err(_)) | (Err(_), Ok(x)) => Ok(x),
        (Err(_), Err(e)) => Err(e),
    }
}

fn best_peer(a: Peer, b: Peer) -> Peer {
    match (a, b) {
        (Peer::Measured(x), Peer::Measured(y)) => Peer::Measured(x.max(y)),
        (Peer::Measured(x), _) | (_, Peer::Measured(x)) => Peer::Measured(x),
        (_, b) => b,
    }
}

/// Waits until an HTTP GET through minik's proxy is answered (the proxy applied the Endpoints).
async fn wait_answers(ctx: &Bench, cluster_address: SocketAddr) -> crate::Result<SocketAddr> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let address = listen_address(ctx, SERVICE)
            .await
            .unwrap_or(cluster_address);
        if get(address).await.is_ok() {
            return Ok(address);
        }
        crate::error::ensure!(
            Instant::now() < deadline,
            "minik's proxy did not route {address} within 10s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One `GET /` with `Connection: close`; Ok once a 200 comes back.
async fn get(address: SocketAddr) -> crate::Result<()> {
    let mut stream =
        tokio::time::timeout(Duration::from_secs(1), TcpStream::connect(address)).await??;
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await?;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(1), stream.read_to_end(&mut answer)).await??;
    crate::error::ensure!(answer.starts_with(b"HTTP/1.1 200"), "no 200 from {address}");
    Ok(())
}

/// HAProxy in TCP mode from `HAPROXY_IP:free port` to the backend; returns it and its address.
async fn start_haproxy(
    program: &Path,
    dir: &Path,
    backend: SocketAddr,
) -> crate::Result<(Child, SocketAddr)> {
    let listen = {
        let probe = std::net::TcpListener::bind(SocketAddr::from((HAPROXY_IP, 0)))?;
        probe.local_addr()?
    };
    let config = dir.join("haproxy.cfg");
    std::fs::write(&config, haproxy_config(listen, backend))?;
    let log = std::fs::File::create(dir.join("haproxy.log"))?;
    let mut child = Command::new(program)
        .arg("-db")
        .arg("-f")
        .arg(&config)
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .context("starting haproxy")?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while get(listen).await.is_err() {
        if let Some(status) = child.try_wait()? {
            crate::error::bail!("haproxy exited at start: {status}");
        }
        crate::error::ensure!(
            Instant::now() < deadline,
            "haproxy did not answer within 10s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok((child, listen))
}

/// HAProxy's defaults plus what TCP proxying needs: no HTTP parsing, nothing logged; `maxconn`
/// stays under what a default open-files limit lets it raise to.
pub fn haproxy_config(listen: SocketAddr, backend: SocketAddr) -> String {
    format!(
        "global\n    maxconn 4096\n\ndefaults\n    mode tcp\n    timeout connect 5s\n    timeout client 30s\n    timeout server 30s\n\n\
         frontend bench\n    bind {listen}\n    default_backend backend\n\n\
         backend backend\n    server backend1 {backend}\n"
    )
}

/// `wrk` against `address`; returns its `Requests/sec`.
async fn wrk_rate(wrk: &Path, address: SocketAddr, close: bool, load: &Load) -> crate::Result<f64> {
    let mut command = Command::new(wrk);
    command
        .args([
            "-t2",
            "-c",
            &load.connections.to_string(),
            "-d",
            &format!("{}s", load.seconds),
        ])
        .args(["--timeout", "2s"]);
    if close {
        command.args(["-H", "Connection: close"]);
    }
    let output = command
        .arg(format!("http://{address}/"))
        .kill_on_drop(true)
        .output()
        .await
        .context("running wrk")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    crate::error::ensure!(
        output.status.success(),
        "wrk: {}",
        String::from_utf8_lossy(&output.stderr).trim()
    );
    parse_wrk(&stdout).with_context(|| format!("no Requests/sec in wrk's output: {stdout}"))
}

/// `Requests/sec:  51234.56` → 51234.56; `None` when wrk saw non-2xx answers or none at all.
pub fn parse_wrk(output: &str) -> Option<f64> {
    if output.contains("Non-2xx or 3xx responses") {
        return None;
    }
    output
        .lines()
        .find_map(|l| l.trim().strip_prefix("Requests/sec:"))
        .and_then(|n| n.trim().parse().ok())
        .filter(|rate: &f64| *rate > 0.0)
}

/// The backend: answers every GET with `200 ok`, closing when the request asks for it.
async fn serve(listener: TcpListener) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(async move {
            let _ = answer(stream).await;
        });
    }
}

async fn answer(mut stream: TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buffer = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(());
        }
        buffer.extend_from_slice(&chunk[..n]);
        while let Some(end) = find(&buffer, b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
            buffer.drain(..end + 4);
            if head.contains("connection: close") {
                stream
                    .write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                    )
                    .await?;
                return stream.shutdown().await;
            }
            stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .await?;
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// wrk's summary gives the rate; an answer that was not 2xx makes the run worthless.
    #[test]
    fn wrk_output_is_parsed() {
        let ok = "Running 5s test @ http://127.0.0.1:1/\n  2 threads and 64 connections\n\
                  160000 requests in 5.00s, 11.0MB read\nRequests/sec:  32011.47\nTransfer/sec:      2.20MB\n";
        assert_eq!(parse_wrk(ok), Some(32011.47));
        assert_eq!(
            parse_wrk(&format!("{ok}  Non-2xx or 3xx responses: 3\n")),
            None
        );
        assert_eq!(parse_wrk("Requests/sec:      0.00\n"), None);
        assert_eq!(parse_wrk("garbage"), None);
    }

    /// The config proxies TCP from the listen address to the backend.
    #[test]
    fn haproxy_config_names_both_addresses() {
        let config = haproxy_config(
            "127.244.250.3:4000".parse().unwrap(),
            "127.244.250.2:5000".parse().unwrap(),
        );
        assert!(config.contains("mode tcp"));
        assert!(config.contains("bind 127.244.250.3:4000"));
        assert!(config.contains("server backend1 127.244.250.2:5000"));
    }

    /// The best round wins; a failed round never hides a measured one.
    #[test]
    fn best_round_is_kept() {
        assert_eq!(best(Ok(1.0), Ok(2.0)), Ok(2.0));
        assert_eq!(best(Err("x".into()), Ok(2.0)), Ok(2.0));
        assert_eq!(
            best_peer(Peer::Measured(3.0), Peer::Failed("x".into())),
            Peer::Measured(3.0)
        );
        assert_eq!(
            best_peer(Peer::NotInstalled("h".into()), Peer::Failed("x".into())),
            Peer::Failed("x".into())
        );
    }
}
