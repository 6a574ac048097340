//! Measurement 8: cold start, `Cluster::start` → node Ready → first pod Running.
//!
//! Kubernetes counterpart: what kind, minikube and k3s report as cluster creation time (kind#2893,
//! minikube's time-to-k8s, k3s#4340): seconds to a minute. minik starts every component as a child
//! process ([`Cluster::start`], the code behind `minik up`), so the floor is a handful of process
//! starts plus the first durable writes.
//!
//! Node Ready is observed by a watch that the bench opens as soon as the apiserver answers, in
//! parallel with `Cluster::start`; the first pod is applied when `Cluster::start` returns (the way a
//! user runs `minik up` and then `minik apply`) and timed until it is Running on a watch.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::error::Context;
use futures::StreamExt;
use minik_api::core::{Node, Pod};
use minik_client::{Api, Client, Event, ListParams};

use super::pods::{delete_and_wait, sleep_pod, PodWatch, Want};
use super::report::{ms, Row};
use minik_cluster::{Cluster, ClusterConfig};

/// The rows this measurement fills.
pub fn templates() -> Vec<Row> {
    let anchor = "kind 12–17 s, minikube 21–25 s, k3s ≈ 50 s";
    vec![
        Row::new(
            "cold_start_node_ready",
            "8. cold start → node Ready",
            "≤ 500 ms",
            anchor,
        ),
        Row::new(
            "cold_start_first_pod",
            "8. cold start → first pod Running",
            "≤ 500 ms",
            anchor,
        ),
    ]
}

/// Starts the cluster and measures its start. Fails only if the cluster cannot start at all.
pub async fn cold_start(options: ClusterConfig) -> crate::Result<(Cluster, Vec<Row>)> {
    let server = minik_cluster::secure::server_url(&options);
    let kubeconfig = options
        .secure
        .then(|| minik_cluster::secure::admin_kubeconfig(&options.data_dir));
    let started = Instant::now();
    let node_ready = tokio::spawn(watch_node_ready(server, kubeconfig, started));
    let cluster = Cluster::start(options)
        .await
        .context("starting the bench cluster")?;
    let all_up = started.elapsed();
    let abort = node_ready.abort_handle();
    let node_ready = match tokio::time::timeout(Duration::from_secs(5), node_ready).await {
        Ok(Ok(Ok(elapsed))) => Ok(elapsed),
        Ok(Ok(Err(err))) => Err(err),
        Ok(Err(join)) => Err(crate::error::message!("node watch task failed: {join}")),
        Err(_) => {
            abort.abort();
            Err(crate::error::message!(
                "node-1 not seen Ready within 5s of the cluster start"
            ))
        }
    };
    let first_pod = first_pod_running(cluster.client()?, started).await;
    let [ready_row, pod_row]: [Row; 2] = templates()
        .try_into()
        .map_err(|_| crate::error::message!("two templates"))?;
    let ready_row = match node_ready {
        Ok(elapsed) => {
            let ms_ = elapsed.as_secs_f64() * 1e3;
            ready_row.result(ms(ms_)).value("ms", ms_).met(ms_ <= 500.0)
        }
        Err(err) => ready_row.failed(&err),
    };
    let pod_row = match first_pod {
        Ok((total, apply)) => {
            let total_ms = total.as_secs_f64() * 1e3;
            let apply_ms = apply.as_secs_f64() * 1e3;
            let up_ms = all_up.as_secs_f64() * 1e3;
            pod_row
                .result(format!(
                    "{} (all components up {}, then apply → Running {})",
                    ms(total_ms),
                    ms(up_ms),
                    ms(apply_ms)
                ))
                .value("ms", total_ms)
                .value("all_components_up_ms", up_ms)
                .value("apply_to_running_ms", apply_ms)
                .met(total_ms <= 500.0)
        }
        Err(err) => pod_row.failed(&err),
    };
    Ok((cluster, vec![ready_row, pod_row]))
}

/// Waits for the apiserver to answer, then watches nodes until `node-1` is Ready.
async fn watch_node_ready(
    server: String,
    kubeconfig: Option<PathBuf>,
    started: Instant,
) -> crate::Result<Duration> {
    // Neither the admin kubeconfig nor the apiserver exist yet: retry the first list every 2 ms
    // (the bench may poll; components may not).
    let deadline = Instant::now() + Duration::from_secs(30);
    let nodes: Api<Node> = loop {
        if let Ok(client) = Client::connect(&server, kubeconfig.as_deref()) {
            let nodes = Api::all(client);
            if nodes.list(&ListParams::default().limit(1)).await.is_ok() {
                break nodes;
            }
        }
        crate::error::ensure!(
            Instant::now() < deadline,
            "the apiserver did not answer within 30s"
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    let mut events = std::pin::pin!(minik_client::watcher(nodes, ListParams::default()));
    while let Some(event) = events.next().await {
        let ready = match event {
            Ok(Event::Applied(node)) => is_ready(&node),
            Ok(Event::Restarted(list)) => list.iter().any(is_ready),
            _ => false,
        };
        if ready {
            return Ok(started.elapsed());
        }
    }
    crate::error::bail!("node watch ended")
}

fn is_ready(node: &Node) -> bool {
    node.metadata.name.as_deref() == Some("node-1")
        && node
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Applies one pod and waits until it is Running; returns (time since `started`, apply → Running).
async fn first_pod_running(
    client: Client,
    started: Instant,
) -> crate::Result<(Duration, Duration)> {
    let watch = PodWatch::start(&client, "bench=first").await?;
    let api: Api<Pod> = Api::namespaced(client, "default");
    let running = watch.expect("bench-first", Want::Running);
    let applied = Instant::now();
    api.create(&sleep_pod("bench-first", "first"))
        .await
        .context("creating the first pod")?;
    let seen = tokio::time::timeout(Duration::from_secs(15), running)
        .await
        .context("first pod not Running within 15s")??;
    delete_and_wait(&api, &watch, &["bench-first".to_string()]).await?;
    Ok((
        seen.duration_since(started),
        seen.saturating_duration_since(applied),
    ))
}
