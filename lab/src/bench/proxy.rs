//! Measurement 6: the proxy's data path, bulk throughput and added latency against a direct
//! loopback connection measured in the same run.
//!
//! Kubernetes counterpart: the userspace kube-proxy (`pkg/proxy/userspace/proxysocket.go`, removed
//! in v1.26), which Red Hat measured at 36 % of a direct pod-to-pod connection (k/k#16344, 2015)
//! while iptables reached 96 %. minik's proxy is a userspace proxy too: two extra socket hops and a
//! copy through user space per byte.
//!
//! How: the bench runs a TCP server on `127.244.250.1` (a pod-like address no node uses) and points
//! a selector-less Service at it through a hand-written Endpoints object, as one does for an
//! external backend. Then, over the direct address and over `clusterIP:port`:
//! - bulk: one connection streams N bytes to the server, which acknowledges with one byte once all
//!   arrived (best of 3);
//! - latency: one connection does 1-byte ping-pongs; the proxy's added latency is the difference
//!   of the two medians.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use crate::error::Context;
use minik_api::core::{Endpoints, Service};
use minik_client::{Api, DeleteParams};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::report::{ms, Row, Stats};
use super::Bench;

const SERVICE: &str = "bench-proxy";
const SERVICE_PORT: u16 = 9000;
/// The backend's address: inside 127.0.0.0/8, in a node CIDR no bench node uses.
const BACKEND_IP: Ipv4Addr = Ipv4Addr::new(127, 244, 250, 1);
const CHUNK: usize = 1 << 20;

/// The rows this measurement fills.
pub fn templates() -> Vec<Row> {
    vec![
        Row::new(
            "proxy_throughput",
            "6. proxy bulk throughput vs direct loopback",
            "≥ 80 % of direct",
            "userspace kube-proxy 36 %, iptables 96 % (k/k#16344); loopback 3.4–3.7 GB/s",
        ),
        Row::new(
            "proxy_latency",
            "6. proxy added latency per request (1-byte round trip)",
            "≤ 50 µs at p50",
            "loopback round trip 16–88 µs p50 on 2 vCPUs (docs/benchmarks.md#floor)",
        ),
    ]
}

/// Sets up the backend and the Service, then measures both paths.
pub async fn measure(ctx: &Bench) -> crate::Result<Vec<Row>> {
    let listener = TcpListener::bind(SocketAddr::from((BACKEND_IP, 0)))
        .await
        .context("binding the backend")?;
    let backend = listener.local_addr()?;
    let server = tokio::spawn(serve(listener));
    let result = measure_with(ctx, backend).await;
    server.abort();
    let services: Api<Service> = Api::namespaced(ctx.client.clone(), "default");
    let _ = services.delete(SERVICE, &DeleteParams::default()).await;
    let _ = Api::<Endpoints>::namespaced(ctx.client.clone(), "default")
        .delete(SERVICE, &DeleteParams::default())
        .await;
    result
}

async fn measure_with(ctx: &Bench, backend: SocketAddr) -> crate::Result<Vec<Row>> {
    let cluster_address = create_service(ctx, SERVICE, backend).await?;
    let service = wait_routed(ctx, cluster_address).await?;
    let bytes = ctx.size(64usize << 20, 1usize << 30);
    let round_trips = ctx.size(1_000, 10_000);

    let mut direct_bps = 0f64;
    let mut proxied_bps = 0f64;
    for _ in 0..ctx.size(1, 3) {
        direct_bps = direct_bps.max(bulk(backend, bytes).await.context("bulk, direct")?);
        proxied_bps = proxied_bps.max(
            bulk(service, bytes)
                .await
                .context("bulk, through the proxy")?,
        );
    }
    let ratio = proxied_bps / direct_bps * 100.0;
    let throughput = templates()
        .remove(0)
        .result(format!(
            "{ratio:.0} % ({:.2} GB/s proxied, {:.2} GB/s direct)",
            proxied_bps / 1e9,
            direct_bps / 1e9
        ))
        .value("percent_of_direct", ratio)
        .value("proxied_gb_per_s", proxied_bps / 1e9)
        .value("direct_gb_per_s", direct_bps / 1e9)
        .met(ratio >= 80.0);

    let direct = ping_pong(backend, round_trips)
        .await
        .context("ping-pong, direct")?;
    let proxied = ping_pong(service, round_trips)
        .await
        .context("ping-pong, through the proxy")?;
    let added_us = (proxied.p50_ms() - direct.p50_ms()) * 1e3;
    let latency = templates()
        .remove(1)
        .result(format!(
            "+{added_us:.0} µs at p50 (proxied p50 {} p99 {}, direct p50 {} p99 {})",
            ms(proxied.p50_ms()),
            ms(proxied.p99_ms()),
            ms(direct.p50_ms()),
            ms(direct.p99_ms())
        ))
        .value("added_p50_us", added_us)
        .stats("proxied_", &proxied)
        .stats("direct_", &direct)
        .met(added_us <= 50.0);
    Ok(vec![throughput, latency])
}

/// Creates the selector-less Service `name` and its Endpoints to `backend`; returns
/// `clusterIP:port` (the compare run's HTTP Service uses it too).
pub(super) async fn create_service(
    ctx: &Bench,
    name: &str,
    backend: SocketAddr,
) -> crate::Result<SocketAddr> {
    let backend_port = backend.port();
    let service: Service = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": name},
        "spec": {"ports": [{"name": "tcp", "port": SERVICE_PORT, "targetPort": backend_port}]},
    }))?;
    let created = Api::<Service>::namespaced(ctx.client.clone(), "default")
        .create(&service)
        .await?;
    let endpoints: Endpoints = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": name},
        "subsets": [{"addresses": [{"ip": backend.ip().to_string()}], "ports": [{"name": "tcp", "port": backend_port}]}],
    }))?;
    Api::<Endpoints>::namespaced(ctx.client.clone(), "default")
        .create(&endpoints)
        .await?;
    let ip: Ipv4Addr = created
        .spec
        .and_then(|s| s.cluster_ip)
        .context("the Service got no clusterIP")?
        .parse()
        .context("the clusterIP is not an IPv4 address")?;
    Ok(SocketAddr::from((ip, SERVICE_PORT)))
}

/// Probes the Service until a round trip works (the proxy has applied the Endpoints); returns the
/// address that worked. That is `clusterIP:port`, unless the proxy could not bind it (another
/// cluster on this machine holds it) and reports a fallback port in `GET /proxies`.
async fn wait_routed(ctx: &Bench, cluster_address: SocketAddr) -> crate::Result<SocketAddr> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let address = listen_address(ctx, SERVICE)
            .await
            .unwrap_or(cluster_address);
        if ping_pong(address, 1).await.is_ok() {
            return Ok(address);
        }
        crate::error::ensure!(
            Instant::now() < deadline,
            "the proxy did not route {address} within 10s"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Where the proxy listens for our Service, from its `GET /proxies` (the metrics address is in
/// its `ready` log line: `… ready metrics=127.0.0.1:PORT …`).
pub(super) async fn listen_address(ctx: &Bench, service: &str) -> Option<SocketAddr> {
    let log = std::fs::read_to_string(ctx.proxy_log.as_ref()?).ok()?;
    let metrics = log
        .lines()
        .find(|l| l.contains(" ready"))?
        .split_whitespace()
        .find_map(|w| w.strip_prefix("metrics="))?;
    let proxies: serde_json::Value = reqwest::get(format!("http://{metrics}/proxies"))
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    proxies
        .get(format!("default/{service}:tcp"))?
        .get("listenAddress")?
        .as_str()?
        .parse()
        .ok()
}

/// Sends `bytes` over one connection; returns bytes per second until the server's acknowledgement.
async fn bulk(address: SocketAddr, bytes: usize) -> crate::Result<f64> {
    let mut stream = TcpStream::connect(address).await?;
    stream.set_nodelay(true)?;
    let chunk = vec![0x5a_u8; CHUNK];
    let started = Instant::now();
    stream.write_all(b"B").await?;
    stream.write_all(&(bytes as u64).to_be_bytes()).await?;
    let mut left = bytes;
    while left > 0 {
        let n = left.min(CHUNK);
        stream.write_all(&chunk[..n]).await?;
        left -= n;
    }
    let mut ack = [0u8; 1];
    stream.read_exact(&mut ack).await?;
    Ok(bytes as f64 / started.elapsed().as_secs_f64())
}

/// `count` 1-byte round trips over one connection (after 100 warm-up ones).
async fn ping_pong(address: SocketAddr, count: usize) -> crate::Result<Stats> {
    let mut stream =
        tokio::time::timeout(Duration::from_secs(2), TcpStream::connect(address)).await??;
    stream.set_nodelay(true)?;
    stream.write_all(b"E").await?;
    let warm_up = if count > 1 { 100 } else { 0 };
    let mut samples = Vec::with_capacity(count);
    let mut byte = [0u8; 1];
    for i in 0..warm_up + count {
        let started = Instant::now();
        stream.write_all(b"x").await?;
        tokio::time::timeout(Duration::from_secs(2), stream.read_exact(&mut byte)).await??;
        if i >= warm_up {
            samples.push(started.elapsed());
        }
    }
    Ok(Stats::new(samples))
}

/// The backend: `B` + length + bytes → one byte back; `E` → echo everything.
async fn serve(listener: TcpListener) {
    while let Ok((stream, _)) = listener.accept().await {
        tokio::spawn(async move {
            let _ = handle(stream).await;
        });
    }
}

async fn handle(mut stream: TcpStream) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut mode = [0u8; 1];
    stream.read_exact(&mut mode).await?;
    let mut buffer = vec![0u8; CHUNK];
    if mode[0] == b'B' {
        let mut length = [0u8; 8];
        stream.read_exact(&mut length).await?;
        let mut left = u64::from_be_bytes(length) as usize;
        while left > 0 {
            let n = stream.read(&mut buffer[..left.min(CHUNK)]).await?;
            if n == 0 {
                return Ok(());
            }
            left -= n;
        }
        stream.write_all(b"k").await?;
    } else {
        loop {
            let n = stream.read(&mut buffer).await?;
            if n == 0 {
                return Ok(());
            }
            stream.write_all(&buffer[..n]).await?;
        }
    }
    Ok(())
}
