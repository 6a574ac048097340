//! The consumers of endpoint changes in the race: the proxy, the ingress controller and the
//! external load balancer, each with its own path for the load and its own lag.
//!
//! Kubernetes counterpart: seed 003's list of who watches endpoints — kube-proxy (the Service's
//! cluster IP), an ingress controller (ingress-nginx reads the EndpointSlices itself and reloads
//! quickly) and a cloud load balancer (an F5 programmed in batches every few seconds). Each is
//! reached its own way: the cluster IP, the ingress port with the Ingress's host, the Service's
//! `status.loadBalancer` address. When each one applied the removal comes from its own report:
//! the proxy's `EndpointsApplied` Event, the ingress's and the load balancer's `/metrics`
//! (`*_backend_updates_total` and `*_last_update_timestamp_seconds`), polled every 20 ms.

use std::net::SocketAddr;
use std::time::Duration;

use jiff::Timestamp;
use minik_api::core::Service;
use minik_api::networking_v1::Ingress;
use minik_client::{Api, Client, DeleteParams};
use serde::Serialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::load;
use super::manifests;
use crate::error::Context;

/// Where the ingress controller and the load balancer of a private cluster listen.
#[derive(Clone, Copy, Debug)]
pub struct Addresses {
    /// The ingress controller's HTTP port.
    pub ingress: SocketAddr,
    /// The ingress controller's `/metrics`.
    pub ingress_metrics: SocketAddr,
    /// The load balancer's `/metrics`.
    pub loadbalancer_metrics: SocketAddr,
}

/// One path the load takes.
#[derive(Clone, Debug)]
pub struct Path {
    /// `proxy`, `ingress`, `load balancer`.
    pub name: &'static str,
    /// Where requests go.
    pub target: SocketAddr,
    /// The `Host` header they carry.
    pub host: String,
}

/// What one consumer did in a variant.
#[derive(Clone, Debug, Serialize)]
pub struct ConsumerResult {
    /// `proxy`, `ingress`, `load balancer`.
    pub name: String,
    /// Requests sent through it.
    pub requests: usize,
    /// Requests that failed.
    pub failed: usize,
    /// When it applied the removal, ms after the delete.
    pub applied_ms: Option<f64>,
    /// When the failed requests were sent, ms after the delete (first, last).
    pub failure_window_ms: Option<(f64, f64)>,
}

/// Makes `service` (already created) reachable through the ingress and the load balancer: an
/// Ingress for host `APP.demo`, and the Service turned `LoadBalancer`. Returns the two paths once
/// the load balancer has reported its address.
pub async fn expose(
    client: &Client,
    namespace: &str,
    app: &str,
    addresses: &Addresses,
) -> crate::Result<Vec<Path>> {
    let host = format!("{app}.demo");
    let ingress = json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": app},
        "spec": {"rules": [{"host": host, "http": {"paths": [{"path": "/", "pathType": "Prefix",
            "backend": {"service": {"name": app, "port": {"number": manifests::PORT}}}}]}}]},
    });
    Api::<Ingress>::namespaced(client.clone(), namespace)
        .create(&serde_json::from_value(ingress)?)
        .await?;
    let services = Api::<Service>::namespaced(client.clone(), namespace);
    let patch = json!({"spec": {"type": "LoadBalancer"}});
    services
        .patch(app, &minik_client::Patch::Merge(patch))
        .await?;
    let external = wait_for_address(&services, app).await?;
    Ok(vec![
        Path {
            name: "ingress",
            target: addresses.ingress,
            host,
        },
        Path {
            name: "load balancer",
            target: external,
            host: "demo".into(),
        },
    ])
}

/// The `status.loadBalancer.ingress` address of a Service, once the load balancer wrote it.
async fn wait_for_address(services: &Api<Service>, name: &str) -> crate::Result<SocketAddr> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let service = services.get(name).await?;
        let first = service
            .status
            .and_then(|s| s.load_balancer)
            .and_then(|lb| lb.ingress)
            .and_then(|list| list.into_iter().next());
        if let Some(ip) = first.as_ref().and_then(|i| i.ip.clone()) {
            let port = first
                .and_then(|i| i.ports)
                .and_then(|p| p.first().map(|p| p.port));
            return Ok(format!("{ip}:{}", port.unwrap_or(manifests::PORT.into())).parse()?);
        }
        crate::error::ensure!(
            tokio::time::Instant::now() < deadline,
            "the load balancer gave service {name} no address within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await; // A poll interval.
    }
}

/// Removes what [`expose`] added.
pub async fn unexpose(client: &Client, namespace: &str, app: &str) -> crate::Result<()> {
    Api::<Ingress>::namespaced(client.clone(), namespace)
        .delete(app, &DeleteParams::default())
        .await?;
    Ok(())
}

/// Sends requests through `path` until every one of `pods` has answered (each consumer routes
/// to all of them), within 30 s.
pub async fn wait_until_routed(path: &Path, pods: &[String]) -> crate::Result<()> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut seen = vec![false; pods.len()];
    while seen.iter().any(|s| !s) {
        if let Ok(body) = load::run_once_to(path.target, &path.host).await {
            for (i, pod) in pods.iter().enumerate() {
                seen[i] |= body.contains(pod.as_str());
            }
        }
        crate::error::ensure!(
            tokio::time::Instant::now() < deadline,
            "the {} did not route to every replica within 30 s",
            path.name
        );
        tokio::time::sleep(Duration::from_millis(20)).await; // A poll interval.
    }
    Ok(())
}

/// The next moment at `offset` past a multiple of `period` on the wall clock: the load balancer
/// applies its batches on that grid, so a delete just after a tick waits a whole period.
pub fn after_next_tick(period: Duration, offset: Duration) -> Duration {
    let period_ms = period.as_millis().max(1) as i64;
    let now_ms = Timestamp::now().as_millisecond();
    let to_tick = period_ms - now_ms.rem_euclid(period_ms);
    Duration::from_millis(to_tick as u64) + offset
}

/// Polls the ingress's and the load balancer's `/metrics` until each has applied an update
/// past the one counted when it started (or `stop` fires); returns when each applied it.
pub async fn watch_applies(
    addresses: Addresses,
    stop: CancellationToken,
) -> crate::Result<tokio::task::JoinHandle<[Option<Timestamp>; 2]>> {
    let http = reqwest::Client::builder().no_proxy().build()?;
    let sources = [
        (addresses.ingress_metrics, "minik_ingress"),
        (addresses.loadbalancer_metrics, "minik_loadbalancer"),
    ];
    let mut baseline = [0.0; 2];
    for (i, (address, prefix)) in sources.iter().enumerate() {
        baseline[i] = scrape(&http, *address, prefix).await?.0;
    }
    Ok(tokio::spawn(async move {
        let mut applied = [None, None];
        while applied.iter().any(Option::is_none) && !stop.is_cancelled() {
            for (i, (address, prefix)) in sources.iter().enumerate() {
                if applied[i].is_some() {
                    continue;
                }
                if let Ok((updates, at)) = scrape(&http, *address, prefix).await {
                    if updates > baseline[i] {
                        applied[i] = Timestamp::from_millisecond((at * 1000.0) as i64).ok();
                    }
                }
            }
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
        }
        applied
    }))
}

/// `(updates applied, last update's Unix seconds)` from a consumer's `/metrics`.
async fn scrape(
    http: &reqwest::Client,
    address: SocketAddr,
    prefix: &str,
) -> crate::Result<(f64, f64)> {
    let text = http
        .get(format!("http://{address}/metrics"))
        .send()
        .await?
        .text()
        .await?;
    let metric = |name: &str| {
        text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
            l.strip_prefix(name)?
                .strip_prefix(' ')?
                .trim()
                .parse::<f64>()
                .ok()
        })
    };
    let updates = metric(&format!("{prefix}_backend_updates_total"))
        .context("no update counter in /metrics")?;
    let at = metric(&format!("{prefix}_last_update_timestamp_seconds")).unwrap_or(0.0);
    Ok((updates, at))
}

/// One consumer's figures, times relative to `origin_ms`.
pub fn result(name: &str, outcomes: &[load::Outcome], applied_ms: Option<f64>) -> ConsumerResult {
    ConsumerResult {
        name: name.to_string(),
        requests: outcomes.len(),
        failed: outcomes.iter().filter(|o| !o.ok()).count(),
        applied_ms,
        failure_window_ms: load::failure_window(outcomes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delete_waits_for_the_tick_of_the_batch_grid() {
        let period = Duration::from_millis(1000);
        let wait = after_next_tick(period, Duration::from_millis(50));
        assert!(
            wait > Duration::from_millis(50) && wait <= Duration::from_millis(1050),
            "{wait:?}"
        );
    }
}
