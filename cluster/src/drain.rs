//! Readiness checks while `minik up` starts the cluster, signals, and the pod drain when it stops.
//!
//! Kubernetes counterpart: kind waits for the control plane with `kubectl wait` on nodes, and
//! `kubectl drain` deletes a node's pods gracefully before the node goes away; kubeadm waits on the
//! API server's `/readyz`. minik does the same three things:
//!
//! - the API server is ready when `GET /readyz` answers 200 (a short retry loop: before the
//!   listener exists there is nothing to watch);
//! - the scheduler, endpoint-controller and proxy are ready when their log says `ready` (an
//!   in-process component logs to the embedding program instead, and counts as ready once started);
//! - kubelets are ready when their Node reports `Ready=True`, seen through a watch on nodes;
//! - stopping: every pod is deleted with its own grace period, and a watch on pods waits until the
//!   kubelets have stopped them all and the objects are gone (bounded by the longest grace + 5 s).
//!
//! Read next: `supervisor.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use futures::StreamExt;
use minik_api::core::{Node, Pod};
use minik_client::watcher::{watcher, Event};
use minik_client::{Api, Client, DeleteParams, ListParams};
use tokio::signal::unix::{signal, SignalKind};
use tokio_util::sync::CancellationToken;

use crate::supervisor::Supervised;
use crate::{Error, Result};

/// How long the API server may take to answer `/readyz`.
const APISERVER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a component may take to log `ready`.
const READY_LINE_TIMEOUT: Duration = Duration::from_secs(15);
/// How long the kubelets may take to register Ready nodes.
const NODES_TIMEOUT: Duration = Duration::from_secs(60);
/// How often a not-yet-watchable condition (a socket, a log file) is checked.
const CHECK_INTERVAL: Duration = Duration::from_millis(50);

/// SIGINT and SIGTERM: the first asks for a graceful stop, a second one hurries it up.
pub struct Signals {
    first: CancellationToken,
    second: CancellationToken,
}

impl Signals {
    /// Installs the handlers (from now on, Ctrl-C no longer kills `minik up` at once).
    pub fn install() -> Result<Self> {
        let mut interrupt =
            signal(SignalKind::interrupt()).map_err(|e| Error::io("installing SIGINT", e))?;
        let mut terminate =
            signal(SignalKind::terminate()).map_err(|e| Error::io("installing SIGTERM", e))?;
        let (first, second) = (CancellationToken::new(), CancellationToken::new());
        let signals = Signals {
            first: first.clone(),
            second: second.clone(),
        };
        tokio::spawn(async move {
            for token in [first, second] {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                }
                token.cancel();
            }
            eprintln!("\nsecond signal: not waiting for pods any longer");
        });
        Ok(signals)
    }

    /// A token cancelled on the first signal.
    pub fn first_token(&self) -> CancellationToken {
        self.first.clone()
    }

    /// A token cancelled on the second signal.
    pub fn second_token(&self) -> CancellationToken {
        self.second.clone()
    }
}

/// Waits until `GET {server}/readyz` answers 200, failing early if the API server exits.
/// A TLS server is trusted through `ca_pem` (`/readyz` needs no credentials).
pub async fn wait_readyz(
    server: &str,
    ca_pem: Option<&[u8]>,
    apiserver: &Supervised,
) -> Result<()> {
    let mut http = reqwest::Client::builder();
    if let Some(ca) = ca_pem {
        let ca = reqwest::Certificate::from_pem(ca)
            .map_err(|e| Error::Start(format!("reading the cluster CA: {e}")))?;
        http = http.tls_certs_only([ca]);
    }
    let http = http
        .timeout(Duration::from_secs(1))
        .build()
        .map_err(|e| Error::Start(format!("building an HTTP client: {e}")))?;
    let url = format!("{server}/readyz");
    let check = async {
        loop {
            if let Ok(response) = http.get(&url).send().await {
                if response.status().is_success() {
                    return;
                }
            }
            tokio::time::sleep(CHECK_INTERVAL).await;
        }
    };
    tokio::select! {
        _ = check => Ok(()),
        _ = apiserver.exited() => Err(exited(apiserver)),
        _ = tokio::time::sleep(APISERVER_TIMEOUT) => {
            Err(Error::Start(format!("apiserver: {url} did not answer within {APISERVER_TIMEOUT:?}; see {}", apiserver.log.display())))
        }
    }
}

/// Waits until the component's log has a `ready` line. A component that stays alive without one
/// is accepted with a warning after [`READY_LINE_TIMEOUT`].
pub async fn wait_ready_line(component: &Supervised) -> Result<()> {
    if component.pid.is_none() {
        // In-process: no log file of its own to read; its task runs, which is what we can know.
        return Ok(());
    }
    let check = async {
        loop {
            let text = std::fs::read_to_string(&component.log).unwrap_or_default();
            if text.lines().any(is_ready_line) {
                return;
            }
            tokio::time::sleep(CHECK_INTERVAL).await;
        }
    };
    tokio::select! {
        _ = check => Ok(()),
        _ = component.exited() => Err(exited(component)),
        _ = tokio::time::sleep(READY_LINE_TIMEOUT) => {
            eprintln!(" ! {} is running but has not logged `ready` yet; going on", component.name);
            Ok(())
        }
    }
}

/// True for a tracing line whose message is `ready` (`… INFO minik_proxy: ready listen=…`).
fn is_ready_line(line: &str) -> bool {
    let plain = strip_ansi(line);
    plain.contains(" INFO ")
        && (plain.contains(": ready") || plain.ends_with(" ready"))
        && !plain.contains("not ready")
}

/// Removes ANSI colour sequences (`ESC [ … m`) in case a component colours its log anyway.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Waits, through a watch on nodes, until every node in `names` reports `Ready=True`.
pub async fn wait_nodes_ready(
    client: &Client,
    names: &[String],
    kubelets: &[&Supervised],
) -> Result<()> {
    let wanted: BTreeSet<String> = names.iter().cloned().collect();
    let mut ready: BTreeMap<String, bool> = BTreeMap::new();
    let mut events = Box::pin(watcher(
        Api::<Node>::all(client.clone()),
        ListParams::default(),
    ));
    let all_ready = async {
        while let Some(event) = events.next().await {
            match event {
                Ok(Event::Restarted(nodes)) => {
                    ready = nodes
                        .iter()
                        .map(|n| (name_of(n), node_is_ready(n)))
                        .collect();
                }
                Ok(Event::Applied(node)) => {
                    ready.insert(name_of(&node), node_is_ready(&node));
                }
                Ok(Event::Deleted(node)) => {
                    ready.remove(&name_of(&node));
                }
                Err(_) => continue,
            }
            if wanted.iter().all(|n| ready.get(n) == Some(&true)) {
                return;
            }
        }
    };
    let any_exit = async {
        if kubelets.is_empty() {
            // A cluster of no nodes yet: nothing can exit (`select_all` wants one future).
            return std::future::pending().await;
        }
        let exits = kubelets.iter().map(|k| Box::pin(k.exited()));
        futures::future::select_all(exits).await.1
    };
    tokio::select! {
        _ = all_ready => Ok(()),
        index = any_exit => Err(exited(kubelets[index])),
        _ = tokio::time::sleep(NODES_TIMEOUT) => Err(Error::Start(format!("nodes not Ready within {NODES_TIMEOUT:?}; see the kubelet logs"))),
    }
}

fn name_of<K: k8s_openapi::Metadata<Ty = minik_api::meta::ObjectMeta>>(object: &K) -> String {
    object.metadata().name.clone().unwrap_or_default()
}

/// True if the node's `Ready` condition is `True`.
pub fn node_is_ready(node: &Node) -> bool {
    let conditions = node.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The error for a component that exited while we waited on it, with the end of its log.
fn exited(component: &Supervised) -> Error {
    Error::Start(format!(
        "{} exited during startup; last lines of {}:\n{}",
        component.name,
        component.log.display(),
        component.log_tail(10)
    ))
}

/// Deletes every pod gracefully and waits, on a watch, until they are all gone. Bounded by the
/// longest grace period + 5 s; a second signal (or the bound) turns the rest into force deletes.
/// `grace` overrides every pod's own grace period (the test harness uses 1 s). The pods of
/// `dead_nodes` (their kubelet is not running, so no one would finish their graceful deletion)
/// are force deleted and not waited for: the caller kills their processes.
pub async fn delete_all_pods(
    client: &Client,
    hurry: &CancellationToken,
    progress: bool,
    grace: Option<i64>,
    dead_nodes: &[String],
) {
    let all = Api::<Pod>::all(client.clone());
    let pods = match all.list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(err) => return eprintln!(" ! listing pods failed, not draining: {err}"),
    };
    if pods.is_empty() {
        return;
    }
    if progress {
        println!(" • Deleting {} pod(s) gracefully ...", pods.len());
    }
    let started = std::time::Instant::now();
    let grace_override = grace;
    let mut longest_grace = 0;
    for pod in &pods {
        if on_dead_node(pod, dead_nodes) {
            delete_pod(client, pod, &DeleteParams::grace(0)).await;
            continue;
        }
        // The deletionGracePeriodSeconds this DELETE leaves on the pod (0: removed at once),
        // unless the caller chose one grace for every pod.
        let own = minik_api::grace::grace_after_delete(pod, None);
        longest_grace = longest_grace.max(grace_override.unwrap_or(own).max(0) as u64);
        let params = grace_override.map(DeleteParams::grace).unwrap_or_default();
        delete_pod(client, pod, &params).await;
    }
    let bound = Duration::from_secs(longest_grace + 5);
    let finished = tokio::select! {
        _ = wait_no_pods(&all) => true,
        _ = tokio::time::sleep(bound) => false,
        _ = hurry.cancelled() => false,
    };
    if finished {
        if progress {
            println!(
                " ✓ Deleted every pod ({:.1}s)",
                started.elapsed().as_secs_f64()
            );
        }
        return;
    }
    eprintln!(" ! pods still terminating; force deleting them (their processes are killed below)");
    if let Ok(list) = all.list(&ListParams::default()).await {
        for pod in &list.items {
            delete_pod(client, pod, &DeleteParams::grace(0)).await;
        }
    }
}

/// True if the pod is bound to one of `dead_nodes`.
fn on_dead_node(pod: &Pod, dead_nodes: &[String]) -> bool {
    let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
    node.is_some_and(|node| dead_nodes.iter().any(|dead| dead == node))
}

async fn delete_pod(client: &Client, pod: &Pod, params: &DeleteParams) {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    if let Err(err) = Api::<Pod>::namespaced(client.clone(), namespace)
        .delete(name, params)
        .await
    {
        if !err.is_not_found() {
            eprintln!(" ! deleting pod {namespace}/{name}: {err}");
        }
    }
}

/// Completes once a watch on pods shows none left.
async fn wait_no_pods(all: &Api<Pod>) {
    let mut left: BTreeSet<String> = BTreeSet::new();
    let mut events = Box::pin(watcher(all.clone(), ListParams::default()));
    while let Some(event) = events.next().await {
        match event {
            Ok(Event::Restarted(pods)) => left = pods.iter().map(key_of).collect(),
            Ok(Event::Applied(pod)) => {
                left.insert(key_of(&pod));
            }
            Ok(Event::Deleted(pod)) => {
                left.remove(&key_of(&pod));
            }
            Err(_) => continue,
        }
        if left.is_empty() {
            return;
        }
    }
}

fn key_of(pod: &Pod) -> String {
    minik_api::ObjectKey::of(&pod.metadata).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The readiness check recognises tracing's `ready` line, with or without colours and fields.
    #[test]
    fn pods_of_dead_nodes_are_recognised() {
        let on = |node: Option<&str>| Pod {
            spec: Some(minik_api::core::PodSpec {
                node_name: node.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        };
        let dead = ["node-2".to_string()];
        assert!(on_dead_node(&on(Some("node-2")), &dead));
        assert!(!on_dead_node(&on(Some("node-1")), &dead));
        assert!(
            !on_dead_node(&on(None), &dead),
            "a pending pod is deleted at once anyway"
        );
    }

    #[test]
    fn ready_line_is_recognised() {
        assert!(is_ready_line(
            "2026-11-22T02:30:00Z  INFO minik_scheduler: ready"
        ));
        assert!(is_ready_line(
            "2026-11-22T02:30:00Z  INFO minik_proxy: ready metrics=127.0.0.1:4000"
        ));
        assert!(is_ready_line("\u{1b}[2m2026\u{1b}[0m \u{1b}[32m INFO\u{1b}[0m \u{1b}[2mminik_proxy\u{1b}[0m\u{1b}[2m:\u{1b}[0m ready"));
        assert!(!is_ready_line(
            "2026-11-22T02:30:00Z  INFO minik_proxy: synced service"
        ));
        assert!(!is_ready_line(
            "2026-11-22T02:30:00Z  WARN minik_proxy: not ready"
        ));
    }
}
