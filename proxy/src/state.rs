//! What the proxy reports about itself: where each service port listens, when each endpoint change
//! was applied, and the traffic counters. Shared between the proxier (writer) and the HTTP server
//! and tests (readers).
//!
//! Kubernetes counterpart: kube-proxy's `/healthz` and `/metrics` servers
//! (`cmd/kube-proxy/app/server.go`) and, for the listen addresses, the userspace proxier's
//! `serviceMap` of `ServiceInfo{proxyPort, …}` (`pkg/proxy/userspace/proxier.go`). Upstream the
//! proxy port was hidden behind iptables rules; minik has no iptables, so when `clusterIP:port`
//! cannot be bound the fallback address must be *told* to clients: it is listed here and served as
//! `GET /proxies`.
//!
//! The applied-change record (`GET /applied`, and a broadcast for in-process subscribers) is the
//! proxy's own account of *when* it started routing to a new endpoint set: the last step of the
//! deletion timeline that `minik demo race` draws.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, RwLock};

use minik_client::connections::ConnectionTracker;

use serde::Serialize;
use tokio::sync::{broadcast, watch};

use crate::metrics::Metrics;
use crate::service_port::ServicePortName;

/// How many applied changes are kept in memory (older ones are dropped first).
const APPLIED_HISTORY: usize = 1024;

/// Where one service port listens.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListenInfo {
    /// The Service, `namespace/name`.
    pub service: String,
    /// The service port's name (may be empty).
    pub port: String,
    /// `clusterIP:port`, where the proxy tried to listen first.
    pub cluster_address: SocketAddr,
    /// Where it actually listens: the cluster address, or the fallback on 127.0.0.1.
    pub listen_address: SocketAddr,
    /// True when `clusterIP:port` could not be bound and the fallback is in use.
    pub fallback: bool,
    /// `nodeAddress:nodePort` when the port of a NodePort or LoadBalancer Service listens there too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_address: Option<SocketAddr>,
}

/// Something the proxy could not do for a service port (a node port it could not open): logged,
/// and published as a Warning Event on the Service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The Service, `namespace/name`.
    pub service: String,
    /// What went wrong, for a person.
    pub message: String,
}

/// One endpoint change the proxy applied to a service port: from this moment on, new connections
/// to that port use this set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AppliedChange {
    /// The Service (and Endpoints), `namespace/name`.
    pub service: String,
    /// The service port's name (may be empty).
    pub port: String,
    /// The port's ready endpoints, sorted (empty when it has none).
    pub endpoints: Vec<SocketAddr>,
    /// Wall-clock time of the change, microsecond precision on the wire.
    pub time: jiff::Timestamp,
}

/// The proxy's reportable state.
#[derive(Debug)]
pub struct ProxyState {
    /// Traffic counters per service port.
    pub metrics: Metrics,
    /// Open connections per pod IP, published for the idle rule (`minik_client::connections`).
    pub connections: Arc<ConnectionTracker>,
    proxies: RwLock<BTreeMap<ServicePortName, ListenInfo>>,
    applied: Mutex<VecDeque<AppliedChange>>,
    applied_tx: broadcast::Sender<AppliedChange>,
    problems_tx: broadcast::Sender<Problem>,
    /// Bumped on every listener change, so waiters need not poll `proxies()`.
    proxies_version: watch::Sender<u64>,
}

impl Default for ProxyState {
    fn default() -> Self {
        let (applied_tx, _) = broadcast::channel(APPLIED_HISTORY);
        let (problems_tx, _) = broadcast::channel(APPLIED_HISTORY);
        ProxyState {
            metrics: Metrics::default(),
            connections: Arc::default(),
            proxies: RwLock::default(),
            applied: Mutex::default(),
            applied_tx,
            problems_tx,
            proxies_version: watch::Sender::new(0),
        }
    }
}

impl ProxyState {
    /// Records that a service port now listens at `info.listen_address`.
    pub fn set_listener(&self, name: &ServicePortName, info: ListenInfo) {
        let mut proxies = self
            .proxies
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        proxies.insert(name.clone(), info);
        drop(proxies);
        self.proxies_version.send_modify(|version| *version += 1);
    }

    /// Forgets a service port's listener (its Service went away).
    pub fn remove_listener(&self, name: &ServicePortName) {
        let mut proxies = self
            .proxies
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        proxies.remove(name);
        drop(proxies);
        self.proxies_version.send_modify(|version| *version += 1);
    }

    /// Every listener, keyed `namespace/name:port`.
    pub fn proxies(&self) -> BTreeMap<String, ListenInfo> {
        let proxies = self
            .proxies
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        proxies
            .iter()
            .map(|(name, info)| (name.to_string(), info.clone()))
            .collect()
    }

    /// Where a service port listens, if it does.
    pub fn listen_address(&self, name: &ServicePortName) -> Option<SocketAddr> {
        let proxies = self
            .proxies
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        proxies.get(name).map(|info| info.listen_address)
    }

    /// A receiver that changes whenever a listener is opened or closed.
    pub fn subscribe_proxies(&self) -> watch::Receiver<u64> {
        self.proxies_version.subscribe()
    }

    /// Waits until `name` has a listener and returns its address.
    pub async fn wait_for_listener(&self, name: &ServicePortName) -> SocketAddr {
        let mut changes = self.subscribe_proxies();
        loop {
            if let Some(address) = self.listen_address(name) {
                return address;
            }
            if changes.changed().await.is_err() {
                // The sender lives in `self`, so this cannot happen while `self` is borrowed.
                std::future::pending::<()>().await;
            }
        }
    }

    /// Records an applied endpoint change and tells subscribers.
    pub fn record_applied(&self, change: AppliedChange) {
        {
            let mut applied = self
                .applied
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if applied.len() == APPLIED_HISTORY {
                applied.pop_front();
            }
            applied.push_back(change.clone());
        }
        // No subscriber is fine: the record above is the durable (in-memory) copy.
        let _ = self.applied_tx.send(change);
    }

    /// The applied changes still in memory, oldest first.
    pub fn applied(&self) -> Vec<AppliedChange> {
        let applied = self
            .applied
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        applied.iter().cloned().collect()
    }

    /// Reports a problem with a service port to the Event publisher (no subscriber is fine: it
    /// has been logged).
    pub fn record_problem(&self, name: &ServicePortName, message: String) {
        let problem = Problem {
            service: name.service.to_string(),
            message,
        };
        let _ = self.problems_tx.send(problem);
    }

    /// A receiver of every problem from now on.
    pub fn subscribe_problems(&self) -> broadcast::Receiver<Problem> {
        self.problems_tx.subscribe()
    }

    /// A receiver of every applied change from now on.
    pub fn subscribe_applied(&self) -> broadcast::Receiver<AppliedChange> {
        self.applied_tx.subscribe()
    }
}
