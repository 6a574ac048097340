//! Measurement 5: endpoint propagation, delete acknowledged → gone from the Endpoints → the proxy
//! stops routing to it, with the proxy's sync delay off.
//!
//! Kubernetes counterpart: the network programming latency SLI (`slos/network_programming_latency.md`,
//! `kubeproxy_network_programming_duration_seconds`, whose buckets start at 0.25 s), and the
//! practitioners' "under a second in small clusters, 10–30 s at 100+ nodes". The chain measured is
//! the one in seed 003 ("Making K8s shutdowns more graceful"): the apiserver marks the pod
//! terminating, the endpoint controller drops it from the Endpoints (`sync_service`), the proxy
//! applies the new set.
//!
//! How: a Service over N `sleep` pods; the pods are deleted one at a time. Two watches record, on the
//! bench's wall clock, when the Endpoints object without the pod's IP arrives, and the proxy's
//! `EndpointsApplied` Event without it, whose `eventTime` is the proxy's own apply time. Both are
//! measured from the moment the delete was acknowledged (the bench and the proxy share a clock).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::error::Context;
use futures::StreamExt;
use minik_api::core::{Endpoints, Event, Pod, Service};
use minik_client::{Api, DeleteParams, ListParams};
use serde_json::json;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::pods::{PodWatch, Want};
use super::report::{ms, Row, Stats};
use super::Bench;

const SERVICE: &str = "bench-ep";

/// The rows this measurement fills.
pub fn templates() -> Vec<Row> {
    vec![Row::new(
        "endpoint_propagation",
        "5. delete acked → out of Endpoints → proxy applied (sync delay 0)",
        "p99 ≤ 20 ms",
        "kube-proxy minSyncPeriod 1 s; < 1 s small clusters, 10–30 s at 100+ nodes (blogs)",
    )]
}

/// What the two watches last saw, stamped with the bench's wall clock (nanoseconds since 1970).
#[derive(Clone, Debug, Default)]
struct Seen {
    /// Endpoints: the addresses; proxy: the addresses in the last `EndpointsApplied` message.
    text: String,
    /// Endpoints: when the watch delivered it; proxy: the Event's `eventTime`.
    at_ns: i128,
}

/// Creates the pods and the Service, then deletes the pods one by one.
pub async fn measure(ctx: &Bench) -> crate::Result<Vec<Row>> {
    let count = ctx.size(6, 60);
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), "default");
    let services: Api<Service> = Api::namespaced(ctx.client.clone(), "default");
    services
        .create(&service())
        .await
        .context("creating the Service")?;
    let section = ctx.shutdown.child_token();
    let _stop_watches = section.clone().drop_guard();
    let mut endpoints_seen = watch_endpoints(ctx, section.clone());
    let mut proxy_seen = watch_proxy_events(ctx, section);

    let watch = PodWatch::start(&ctx.client, "bench=ep").await?;
    let running: Vec<_> = (0..count)
        .map(|i| watch.expect(&format!("bench-ep-{i}"), Want::Running))
        .collect();
    for i in 0..count {
        pods.create(&backend(&format!("bench-ep-{i}"))).await?;
    }
    for receiver in running {
        tokio::time::timeout(Duration::from_secs(30), receiver)
            .await
            .context("backends not Running")??;
    }
    let ips = pod_ips(&pods).await?;
    crate::error::ensure!(
        ips.len() == count,
        "{} of {count} backends have an IP",
        ips.len()
    );
    let all_in = |seen: &Seen| ips.values().all(|ip| seen.text.contains(&format!("{ip}:")));
    wait_for(
        &mut endpoints_seen,
        all_in,
        "every backend in the Endpoints",
    )
    .await?;
    wait_for(
        &mut proxy_seen,
        all_in,
        "every backend applied by the proxy",
    )
    .await?;

    let mut to_endpoints = Vec::new();
    let mut to_proxy = Vec::new();
    for (name, ip) in &ips {
        pods.delete(name, &DeleteParams::default()).await?;
        let acked = jiff::Timestamp::now().as_nanosecond();
        let gone = |seen: &Seen| !seen.text.contains(&format!("{ip}:"));
        let endpoint =
            wait_for(&mut endpoints_seen, gone, "the pod gone from the Endpoints").await?;
        let proxy = wait_for(
            &mut proxy_seen,
            gone,
            "the proxy's EndpointsApplied without the pod",
        )
        .await?;
        to_endpoints.push(since(acked, endpoint.at_ns));
        to_proxy.push(since(acked, proxy.at_ns));
    }
    let _ = services.delete(SERVICE, &DeleteParams::default()).await;

    let endpoints = Stats::new(to_endpoints);
    let proxy = Stats::new(to_proxy);
    let row = templates()
        .remove(0)
        .result(format!(
            "proxy p50 {}, p99 {} (Endpoints p50 {}, p99 {}; n={})",
            ms(proxy.p50_ms()),
            ms(proxy.p99_ms()),
            ms(endpoints.p50_ms()),
            ms(endpoints.p99_ms()),
            proxy.len()
        ))
        .stats("proxy_", &proxy)
        .stats("endpoints_", &endpoints)
        .met(proxy.p99_ms() <= 20.0);
    Ok(vec![row])
}

/// `later - earlier`, or zero if the clocks put them the other way round.
fn since(earlier_ns: i128, later_ns: i128) -> Duration {
    Duration::from_nanos(u64::try_from(later_ns - earlier_ns).unwrap_or(0))
}

/// Waits (10 s at most) until the watched value satisfies `condition`; returns that value.
async fn wait_for(
    receiver: &mut watch::Receiver<Seen>,
    condition: impl Fn(&Seen) -> bool,
    what: &str,
) -> crate::Result<Seen> {
    let outcome = tokio::time::timeout(
        Duration::from_secs(10),
        receiver.wait_for(|seen| condition(seen)),
    )
    .await
    .map(|found| found.map(|seen| seen.clone()));
    match outcome {
        Ok(Ok(seen)) => Ok(seen),
        Ok(Err(_)) => crate::error::bail!("watch ended while waiting for {what}"),
        Err(_) => crate::error::bail!(
            "timed out after 10s waiting for {what} (last seen: {:?})",
            receiver.borrow().text
        ),
    }
}

/// The addresses of our Endpoints object, as `ip:port,…`, each time a watch delivers it.
fn watch_endpoints(ctx: &Bench, stop: CancellationToken) -> watch::Receiver<Seen> {
    let (tx, rx) = watch::channel(Seen::default());
    let api: Api<Endpoints> = Api::namespaced(ctx.client.clone(), "default");
    tokio::spawn(async move {
        let mut events = std::pin::pin!(minik_client::watcher(api, ListParams::default()));
        while let Some(event) = next_or_stop(&mut events, &stop).await {
            let now = jiff::Timestamp::now().as_nanosecond();
            let latest = match event {
                Ok(minik_client::Event::Applied(ep)) => Some(ep),
                Ok(minik_client::Event::Restarted(list)) => list.into_iter().find(is_ours),
                Ok(minik_client::Event::Deleted(_)) | Err(_) => None,
            };
            if let Some(ep) = latest.filter(is_ours) {
                if tx
                    .send(Seen {
                        text: addresses(&ep),
                        at_ns: now,
                    })
                    .is_err()
                {
                    break;
                }
            }
        }
    });
    rx
}

fn is_ours(ep: &Endpoints) -> bool {
    ep.metadata.name.as_deref() == Some(SERVICE)
}

/// `ip:port,ip:port` of the ready addresses.
fn addresses(ep: &Endpoints) -> String {
    let mut out = Vec::new();
    for subset in ep.subsets.iter().flatten() {
        for address in subset.addresses.iter().flatten() {
            for port in subset.ports.iter().flatten() {
                out.push(format!("{}:{}", address.ip, port.port));
            }
        }
    }
    out.join(",")
}

/// The proxy's `EndpointsApplied` Events for our Service, stamped with their `eventTime`.
fn watch_proxy_events(ctx: &Bench, stop: CancellationToken) -> watch::Receiver<Seen> {
    let (tx, rx) = watch::channel(Seen::default());
    let api: Api<Event> = Api::namespaced(ctx.client.clone(), "default");
    let prefix = format!("Applied endpoints for default/{SERVICE}:");
    tokio::spawn(async move {
        let mut events = std::pin::pin!(minik_client::watcher(api, ListParams::default()));
        while let Some(event) = next_or_stop(&mut events, &stop).await {
            let Ok(minik_client::Event::Applied(event)) = event else {
                continue;
            };
            let Some(message) = event.message.as_deref().filter(|m| m.starts_with(&prefix)) else {
                continue;
            };
            if event.reason.as_deref() != Some("EndpointsApplied") {
                continue;
            }
            let at_ns = event
                .event_time
                .as_ref()
                .map(|t| t.0.as_nanosecond())
                .unwrap_or_else(|| jiff::Timestamp::now().as_nanosecond());
            let list = message[prefix.len()..]
                .split_once(": ")
                .map(|(_, l)| l)
                .unwrap_or("");
            if tx
                .send(Seen {
                    text: list.to_string(),
                    at_ns,
                })
                .is_err()
            {
                break;
            }
        }
    });
    rx
}

/// The next item of a stream, or `None` once `stop` is cancelled.
async fn next_or_stop<S: futures::Stream + Unpin>(
    stream: &mut S,
    stop: &CancellationToken,
) -> Option<S::Item> {
    tokio::select! {
        _ = stop.cancelled() => None,
        item = stream.next() => item,
    }
}

/// Pod name → pod IP of the backends.
async fn pod_ips(pods: &Api<Pod>) -> crate::Result<BTreeMap<String, String>> {
    let list = pods.list(&ListParams::default().labels("bench=ep")).await?;
    Ok(list
        .items
        .into_iter()
        .filter_map(|p| Some((p.metadata.name?, p.status?.pod_ip?)))
        .collect())
}

fn service() -> Service {
    let value = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": SERVICE},
        "spec": {"selector": {"bench": "ep"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]},
    });
    // Invariant: the literal above is a valid Service.
    serde_json::from_value(value).expect("a valid service literal")
}

fn backend(name: &str) -> Pod {
    let value = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"bench": "ep"}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "sleep", "image": "minik/sleep", "command": ["sleep", "3600"],
                "ports": [{"name": "http", "containerPort": 8080}],
            }],
        },
    });
    // Invariant: the literal above is a valid Pod.
    serde_json::from_value(value).expect("a valid pod literal")
}
