//! Scraping: every `--metric-resolution`, each node's kubelet is asked for `/stats/summary`.
//!
//! Kubernetes counterpart: metrics-server's `pkg/scraper` (`scraper.Scrape`: one goroutine per
//! node, each bounded by a timeout, the node's address from `status.addresses` and the port from
//! `status.daemonEndpoints.kubeletEndpoint`) and `pkg/server`'s tick loop that stores each round.
//! The kubelets are reached with metrics-server's own credentials (its kubeconfig's client
//! certificate, trusting the same CA), and each kubelet authorizes it on `nodes/stats`.
//!
//! minik simplifies: the Summary API rather than `/metrics/resource` (same numbers, JSON).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use minik_client::{Client, ClientConfig, Method, Store};
use minik_kubelet::stats::Summary;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::points;

/// How long one kubelet may take to answer (upstream `--kubelet-request-timeout`, 10 s).
const KUBELET_TIMEOUT: Duration = Duration::from_secs(10);

/// A node's kubelet URL: its InternalIP (else first address) and its kubelet port.
pub fn kubelet_url(node: &Node, https: bool) -> Option<String> {
    let status = node.status.as_ref()?;
    let addresses = status.addresses.as_ref()?;
    let address = addresses
        .iter()
        .find(|a| a.type_ == "InternalIP")
        .or_else(|| addresses.first())?;
    let port = status
        .daemon_endpoints
        .as_ref()?
        .kubelet_endpoint
        .as_ref()?
        .port;
    let scheme = if https { "https" } else { "http" };
    Some(format!("{scheme}://{}:{port}", address.address))
}

/// What the scrape loop reads and writes.
pub struct Scraper {
    /// The nodes, by list + watch.
    pub nodes: Store<Node>,
    /// The credentials for the kubelets (`None`: plain http, no credentials).
    pub credentials: Option<ClientConfig>,
    /// Where each round goes.
    pub store: Arc<RwLock<points::Store>>,
    /// One client per kubelet URL, kept for its connection pool.
    clients: Mutex<HashMap<String, Client>>,
}

impl Scraper {
    /// A scraper of `nodes` with `credentials`, storing into `store`.
    pub fn new(
        nodes: Store<Node>,
        credentials: Option<ClientConfig>,
        store: Arc<RwLock<points::Store>>,
    ) -> Scraper {
        Scraper {
            nodes,
            credentials,
            store,
            clients: Mutex::new(HashMap::new()),
        }
    }

    fn client(&self, url: &str) -> Result<Client, String> {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(client) = clients.get(url) {
            return Ok(client.clone());
        }
        let client = match &self.credentials {
            Some(config) => Client::from_config(&ClientConfig {
                server: url.to_string(),
                ..config.clone()
            }),
            None => Client::new(url),
        }
        .map_err(|e| e.to_string())?;
        clients.insert(url.to_string(), client.clone());
        Ok(client)
    }

    async fn scrape_node(&self, node: &Node) -> Result<Summary, String> {
        let https = self.credentials.is_some();
        let url = kubelet_url(node, https).ok_or("the node has no kubelet address yet")?;
        let client = self.client(&url)?;
        let request = client.request_json(Method::GET, "/stats/summary", None);
        let value = tokio::time::timeout(KUBELET_TIMEOUT, request)
            .await
            .map_err(|_| format!("no answer from {url} within {KUBELET_TIMEOUT:?}"))?
            .map_err(|e| e.to_string())?;
        serde_json::from_value(value).map_err(|e| format!("decoding the summary: {e}"))
    }

    /// One round: every node at once; what answered replaces what was stored.
    pub async fn scrape_once(&self) {
        let started = Instant::now();
        let nodes = self.nodes.state();
        let rounds = nodes.iter().map(|node| async move {
            let name = node.metadata.name.clone().unwrap_or_default();
            (name, self.scrape_node(node).await)
        });
        let mut summaries = Vec::new();
        for (node, result) in futures::future::join_all(rounds).await {
            match result {
                Ok(summary) => summaries.push(summary),
                Err(error) => warn!(%node, %error, "scraping the kubelet failed"),
            }
        }
        let pods: usize = summaries.iter().map(|s| s.pods.len()).sum();
        let answered = summaries.len();
        if let Ok(mut store) = self.store.write() {
            store.record(&summaries);
        }
        let took_ms = started.elapsed().as_secs_f64() * 1000.0;
        info!(
            nodes = nodes.len(),
            answered, pods, took_ms, "scraped the kubelets"
        );
    }

    /// Scrapes every `resolution` until `shutdown`.
    pub async fn run(self: Arc<Self>, resolution: Duration, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(resolution);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                () = self.scrape_once() => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        DaemonEndpoint, NodeAddress, NodeDaemonEndpoints, NodeStatus,
    };

    #[test]
    fn the_kubelet_is_found_at_the_internal_ip_and_the_daemon_port() {
        let mut node = Node::default();
        assert_eq!(kubelet_url(&node, true), None);
        node.status = Some(NodeStatus {
            addresses: Some(vec![
                NodeAddress {
                    type_: "Hostname".into(),
                    address: "node-1".into(),
                },
                NodeAddress {
                    type_: "InternalIP".into(),
                    address: "127.0.0.1".into(),
                },
            ]),
            daemon_endpoints: Some(NodeDaemonEndpoints {
                kubelet_endpoint: Some(DaemonEndpoint { port: 10250 }),
            }),
            ..NodeStatus::default()
        });
        assert_eq!(
            kubelet_url(&node, true).as_deref(),
            Some("https://127.0.0.1:10250")
        );
        assert_eq!(
            kubelet_url(&node, false).as_deref(),
            Some("http://127.0.0.1:10250")
        );
    }
}
