//! The etcd peer of `minik bench --compare`: a one-member etcd on loopback in a temp dir, taking
//! the same objects minik's creates took, as bare puts from 64 concurrent clients.
//!
//! Kubernetes counterpart: etcd's `benchmark put` tool (`tools/benchmark`), which Debian does not
//! package. The puts go through etcd's own v3 JSON gateway (`POST /v3/kv/put`, base64 key and
//! value) with the same HTTP client minik's API benchmark uses, so both sides pay HTTP/1.1 and
//! JSON; the gateway adds one in-process gRPC hop on etcd's side, minik pays TLS on its side.
//! Durability is the same: etcd acknowledges a put once its WAL batch is fsynced (its default),
//! minik once its group commit is.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use base64::Engine;
use futures::{StreamExt, TryStreamExt};
use serde_json::json;
use tokio::process::{Child, Command};

use super::super::api::lease;
use super::ratio::Peer;
use crate::error::Context;

/// How many puts, how many in flight (what minik's create benchmark uses).
pub struct Load {
    pub puts: usize,
    pub clients: usize,
}

/// Starts etcd, runs the puts, stops it; a missing `etcd` binary is `Peer::NotInstalled`.
pub async fn puts_per_second(load: Load) -> Peer {
    let Some(etcd) = super::which("etcd") else {
        return Peer::NotInstalled("etcd".into());
    };
    match run(&etcd, &load).await {
        Ok(rate) => Peer::Measured(rate),
        Err(err) => Peer::Failed(err.to_string()),
    }
}

async fn run(etcd: &Path, load: &Load) -> crate::Result<f64> {
    let dir = tempfile::Builder::new()
        .prefix("minik-bench-etcd-")
        .tempdir()?;
    let client_port = crate::free_loopback_port()?.port();
    let peer_port = crate::free_loopback_port()?.port();
    let endpoint = format!("http://127.0.0.1:{client_port}");
    let mut child = start(etcd, dir.path(), client_port, peer_port)?;
    let outcome = async {
        wait_healthy(&endpoint, &mut child).await?;
        drive(&endpoint, load).await
    }
    .await;
    let _ = child.kill().await;
    outcome
}

/// `etcd` with one member, its data and log in `dir`.
fn start(etcd: &Path, dir: &Path, client_port: u16, peer_port: u16) -> crate::Result<Child> {
    let client = format!("http://127.0.0.1:{client_port}");
    let peer = format!("http://127.0.0.1:{peer_port}");
    let log = std::fs::File::create(dir.join("etcd.log"))?;
    Command::new(etcd)
        .args(["--name", "bench", "--data-dir"])
        .arg(dir.join("data"))
        .args([
            "--listen-client-urls",
            &client,
            "--advertise-client-urls",
            &client,
        ])
        .args([
            "--listen-peer-urls",
            &peer,
            "--initial-advertise-peer-urls",
            &peer,
        ])
        .args(["--initial-cluster", &format!("bench={peer}")])
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true)
        .spawn()
        .context("starting etcd")
}

/// Polls `GET /health` until etcd says it is healthy (10 s at most).
async fn wait_healthy(endpoint: &str, child: &mut Child) -> crate::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let client = reqwest::Client::new();
    loop {
        if let Ok(response) = client.get(format!("{endpoint}/health")).send().await {
            let body = response.text().await.unwrap_or_default();
            if body.contains("\"true\"") {
                return Ok(());
            }
        }
        if let Some(status) = child.try_wait()? {
            crate::error::bail!("etcd exited at start: {status}");
        }
        crate::error::ensure!(Instant::now() < deadline, "etcd not healthy within 10s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The puts, `clients` in flight; returns puts per second.
async fn drive(endpoint: &str, load: &Load) -> crate::Result<f64> {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(load.clients)
        .build()?;
    let url = format!("{endpoint}/v3/kv/put");
    let started = Instant::now();
    futures::stream::iter(0..load.puts)
        .map(|i| {
            let (client, url) = (client.clone(), url.clone());
            async move {
                let response = client.post(&url).json(&put_body(i)?).send().await?;
                crate::error::ensure!(
                    response.status().is_success(),
                    "put answered {}",
                    response.status()
                );
                Ok::<_, crate::Error>(())
            }
        })
        .buffer_unordered(load.clients)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(load.puts as f64 / started.elapsed().as_secs_f64())
}

/// The put of object `i`: the same key path and JSON bytes minik's create of Lease `i` stores.
fn put_body(i: usize) -> crate::Result<serde_json::Value> {
    let name = format!("bench-lease-{i}");
    let key = format!("/registry/leases/default/{name}");
    let value = serde_json::to_vec(&lease(&name, "create"))?;
    let b64 = base64::engine::general_purpose::STANDARD;
    Ok(json!({"key": b64.encode(key), "value": b64.encode(value)}))
}
