//! The proxier: one listener per service port, opened and closed as Services come and go, and
//! each port's load balancer kept in step with the Service's EndpointSlices.
//!
//! Kubernetes counterpart: `pkg/proxy/userspace/proxier.go` (≤ v1.25). Upstream, `OnServiceUpdate`
//! opened a "proxy port" (a random local port) per service port and installed iptables rules
//! ("portals") redirecting `clusterIP:port` to it; `OnEndpointsUpdate` went to the round-robin
//! balancer. minik needs no iptables: every address in 127.0.0.0/8 is local on Linux, so the proxy
//! listens on `clusterIP:port` itself. When that bind fails (a port under 1024 without privilege,
//! or the address is taken) it logs a clear error and listens on 127.0.0.1 instead, on a port from
//! a node-port-like range chosen by hashing the port's name (stable across restarts), and reports
//! the address in [`ProxyState`] (`GET /proxies`).
//!
//! The proxier is fed object snapshots (`on_service_update(&Service)`, `on_slices_update(
//! &[EndpointSlice])`, …) and knows nothing of watches, so tests drive it directly. `sync.rs`
//! connects it to the informers. A Service may have several slices (at most 100 endpoints each), so
//! the proxier files every slice in its [`SliceCache`] and, after a change, hands the Service's
//! merged endpoints to its ports. It is level-triggered: a relist (`on_*_synced`) replaces
//! everything it knew.
//!
//! Read next: `tcp.rs` (a listener's accept loop) and `load_balancer.rs` (the endpoint choice).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::ops::RangeInclusive;
use std::sync::Arc;
use std::time::Duration;

use minik_api::core::Service;
use minik_api::k8s_openapi::api::discovery::v1::EndpointSlice;
use minik_api::ObjectKey;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{error, info, warn};

use crate::bind::bind_now;
use crate::load_balancer::LoadBalancer;
use crate::node_port::{self, desired_node_address, NodeListener, Opened};
use crate::service_port::{format_endpoint_list, service_ports, ServicePortName, ServicePortSpec};
use crate::slice_cache::SliceCache;
use crate::state::{AppliedChange, ListenInfo, ProxyState};
use crate::tcp::{self, PortProxy};

pub use crate::bind::{fallback_ports, FALLBACK_TRIES};

/// A bound listening socket and whether it is the fallback address.
type Handover = (Arc<TcpListener>, bool);

/// The proxier's knobs.
#[derive(Clone, Debug)]
pub struct ProxierConfig {
    /// Timeout of the first dial attempt to an endpoint (doubled on each retry).
    pub dial_timeout: Duration,
    /// The most endpoints tried per connection (upstream `tryConnect`: 4).
    pub dial_attempts: usize,
    /// Ports tried on 127.0.0.1 when `clusterIP:port` cannot be bound.
    pub node_port_range: RangeInclusive<u16>,
    /// The node's address, where NodePort and LoadBalancer Services' node ports are served.
    pub node_address: IpAddr,
}

impl Default for ProxierConfig {
    fn default() -> Self {
        ProxierConfig {
            dial_timeout: Duration::from_millis(250),
            dial_attempts: 4,
            node_port_range: 30000..=32767,
            node_address: IpAddr::V4(Ipv4Addr::LOCALHOST),
        }
    }
}

/// One open service port (upstream `ServiceInfo`).
struct OpenPort {
    spec: ServicePortSpec,
    proxy: Arc<PortProxy>,
    /// Shared with the accept loop, so a renamed port can hand its socket over (see `Handover`).
    listener: Arc<TcpListener>,
    fallback: bool,
    /// Cancelling it closes the listener; established connections carry on.
    stop: CancellationToken,
    /// The listener on `nodeAddress:nodePort`, for NodePort and LoadBalancer Services.
    node: Option<NodeListener>,
}

/// The proxier. Not shared: one task (the sync loop) owns it and calls its `on_*` methods in order.
pub struct Proxier {
    config: ProxierConfig,
    state: Arc<ProxyState>,
    open_ports: HashMap<ServicePortName, OpenPort>,
    /// Every EndpointSlice known, by Service.
    slices: SliceCache,
    /// The last applied endpoints of each Service, by port name. Kept even for
    /// services not seen yet, so a listener opened later starts with its endpoints.
    endpoints: HashMap<ObjectKey, BTreeMap<String, Vec<SocketAddr>>>,
    /// Listener and connection tasks.
    tasks: TaskTracker,
    shutdown: CancellationToken,
}

impl Proxier {
    /// A proxier with no port open. Its tasks are spawned on `tasks` and stop with `shutdown`.
    pub fn new(
        config: ProxierConfig,
        state: Arc<ProxyState>,
        tasks: TaskTracker,
        shutdown: CancellationToken,
    ) -> Self {
        Proxier {
            config,
            state,
            open_ports: HashMap::new(),
            slices: SliceCache::default(),
            endpoints: HashMap::new(),
            tasks,
            shutdown,
        }
    }

    /// The state this proxier reports into.
    pub fn state(&self) -> &Arc<ProxyState> {
        &self.state
    }

    /// A Service was added or changed: open its new ports, close the ones it lost, and update the
    /// affinity of the others.
    pub fn on_service_update(&mut self, service: &Service) {
        let key = ObjectKey::of(&service.metadata);
        let desired = service_ports(service);
        let stale: Vec<ServicePortName> = self
            .open_ports
            .iter()
            .filter(|(name, open)| {
                name.service == key
                    && !desired.iter().any(|spec| {
                        spec.name == **name && spec.cluster_addr == open.spec.cluster_addr
                    })
            })
            .map(|(name, _)| name.clone())
            .collect();
        // A closed listener's socket is released only when its accept loop has stopped, a moment
        // later, so a port that was renamed (same address) could not bind again right away: its
        // socket is handed over to the new accept loop instead.
        let mut handover: HashMap<SocketAddr, Handover> = HashMap::new();
        for name in stale {
            if let Some(mut open) = self.close_port(&name) {
                if let Some(node) = open.node.take() {
                    handover.insert(node.address, (node.close(), false));
                }
                handover.insert(open.spec.cluster_addr, (open.listener, open.fallback));
            }
        }
        for spec in desired {
            let name = spec.name.clone();
            match self.open_ports.get_mut(&spec.name) {
                Some(open) => {
                    open.proxy.balancer.set_affinity(spec.affinity);
                    open.spec = spec;
                }
                None => {
                    let reuse = handover.remove(&spec.cluster_addr);
                    self.open_port(spec, reuse);
                }
            }
            self.sync_node_port(&name, &mut handover);
        }
    }

    /// Opens, moves or closes a service port's node listener to match its spec. A node port that
    /// cannot be bound is reported (log and Warning Event) and tried again on the next change.
    fn sync_node_port(
        &mut self,
        name: &ServicePortName,
        handover: &mut HashMap<SocketAddr, Handover>,
    ) {
        let Some(open) = self.open_ports.get_mut(name) else {
            return;
        };
        let desired = desired_node_address(&open.spec, self.config.node_address);
        if desired == open.node.as_ref().map(|node| node.address) {
            return;
        }
        if let Some(old) = open.node.take() {
            old.close();
        }
        if let Some(address) = desired {
            let reuse = handover.remove(&address).map(|(listener, _)| listener);
            match node_port::open(
                address,
                reuse,
                open.proxy.clone(),
                &self.tasks,
                &self.shutdown,
            ) {
                Opened::Listening(node) => open.node = Some(node),
                Opened::Failed(message) => self.state.record_problem(name, message),
            }
        }
        self.publish_listener(name);
    }

    /// A Service was deleted: close all its ports.
    pub fn on_service_delete(&mut self, key: &ObjectKey) {
        let names: Vec<_> = self
            .open_ports
            .keys()
            .filter(|name| name.service == *key)
            .cloned()
            .collect();
        for name in names {
            self.close_port(&name);
        }
    }

    /// A relist of every Service: apply each, and close the ports of services that are gone.
    pub fn on_services_synced(&mut self, services: &[Service]) {
        let keep: Vec<ObjectKey> = services
            .iter()
            .map(|s| ObjectKey::of(&s.metadata))
            .collect();
        let gone: Vec<ObjectKey> = self
            .open_ports
            .keys()
            .map(|name| name.service.clone())
            .filter(|key| !keep.contains(key))
            .collect();
        for key in gone {
            self.on_service_delete(&key);
        }
        for service in services {
            self.on_service_update(service);
        }
    }

    /// EndpointSlices were added or changed: each of their Services gets its merged endpoints
    /// (applied once per Service, however many of its slices came).
    pub fn on_slices_update(&mut self, slices: &[EndpointSlice]) {
        for service in self.slices.update(slices) {
            self.sync_service_endpoints(service);
        }
    }

    /// An EndpointSlice was deleted: its Service keeps what its other slices say.
    pub fn on_slice_delete(&mut self, slice: &EndpointSlice) {
        if let Some(service) = self.slices.delete(slice) {
            self.sync_service_endpoints(service);
        }
    }

    /// A relist of every EndpointSlice: Services that lost all their slices have no endpoint left.
    pub fn on_slices_synced(&mut self, all: &[EndpointSlice]) {
        for service in self.slices.replace_all(all) {
            self.sync_service_endpoints(service);
        }
    }

    /// Merges a Service's slices and hands the result to its ports.
    fn sync_service_endpoints(&mut self, service: ObjectKey) {
        let by_port = self.slices.endpoints(&service);
        self.apply_endpoints(service, by_port);
    }

    /// Closes every listener (the proxy is stopping).
    pub fn close_all(&mut self) {
        let names: Vec<_> = self.open_ports.keys().cloned().collect();
        for name in names {
            self.close_port(&name);
        }
    }

    /// Hands a service's endpoints to its ports' balancers, and records each port whose set differs
    /// from the last one applied (a relist repeats unchanged objects: nothing is recorded then).
    fn apply_endpoints(&mut self, key: ObjectKey, by_port: BTreeMap<String, Vec<SocketAddr>>) {
        for (name, open) in self
            .open_ports
            .iter()
            .filter(|(name, _)| name.service == key)
        {
            let list = by_port
                .get(&name.port)
                .map(Vec::as_slice)
                .unwrap_or_default();
            open.proxy.balancer.update(list);
        }
        let previous = self.endpoints.remove(&key).unwrap_or_default();
        let port_names: BTreeSet<&String> = previous.keys().chain(by_port.keys()).collect();
        for port in port_names {
            let before = previous.get(port).map(Vec::as_slice).unwrap_or_default();
            let after = by_port.get(port).map(Vec::as_slice).unwrap_or_default();
            if before != after {
                let name = ServicePortName {
                    service: key.clone(),
                    port: port.clone(),
                };
                self.record_applied(&name, after);
            }
        }
        if !by_port.is_empty() {
            self.endpoints.insert(key, by_port);
        }
    }

    /// Logs an applied change and keeps it in the proxy's record (`GET /applied`, the Event).
    fn record_applied(&self, name: &ServicePortName, endpoints: &[SocketAddr]) {
        let list = format_endpoint_list(endpoints);
        info!(service = %name, endpoints = %list, "applied endpoints");
        self.state.record_applied(AppliedChange {
            service: name.service.to_string(),
            port: name.port.clone(),
            endpoints: endpoints.to_vec(),
            time: jiff::Timestamp::now(),
        });
    }

    /// Opens the listener of a service port and starts its accept loop.
    fn open_port(&mut self, spec: ServicePortSpec, reuse: Option<Handover>) {
        let Some((listener, fallback)) = reuse.or_else(|| self.bind(&spec)) else {
            return;
        };
        let Ok(listen_address) = listener.local_addr() else {
            return;
        };
        let balancer = Arc::new(LoadBalancer::new(spec.affinity));
        let known = self
            .endpoints
            .get(&spec.name.service)
            .and_then(|ports| ports.get(&spec.name.port));
        balancer.update(known.map(Vec::as_slice).unwrap_or_default());
        let proxy = Arc::new(PortProxy {
            name: spec.name.clone(),
            balancer,
            metrics: self.state.metrics.port(&spec.name),
            dial_timeout: self.config.dial_timeout,
            dial_attempts: self.config.dial_attempts,
            connections: self.state.connections.clone(),
        });
        let stop = self.shutdown.child_token();
        let serve = tcp::serve(
            listener.clone(),
            proxy.clone(),
            stop.clone(),
            self.tasks.clone(),
            self.shutdown.clone(),
        );
        self.tasks.spawn(serve);
        info!(service = %spec.name, address = %listen_address, fallback, "opened proxy port");
        let name = spec.name.clone();
        self.open_ports.insert(
            name.clone(),
            OpenPort {
                spec,
                proxy,
                listener,
                fallback,
                stop,
                node: None,
            },
        );
        self.publish_listener(&name);
    }

    /// Tells [`ProxyState`] where a service port listens (`GET /proxies`).
    fn publish_listener(&self, name: &ServicePortName) {
        let Some(open) = self.open_ports.get(name) else {
            return;
        };
        let Ok(listen_address) = open.listener.local_addr() else {
            return;
        };
        let info = ListenInfo {
            service: name.service.to_string(),
            port: name.port.clone(),
            cluster_address: open.spec.cluster_addr,
            listen_address,
            fallback: open.fallback,
            node_address: open.node.as_ref().map(|node| node.address),
        };
        self.state.set_listener(name, info);
    }

    /// Closes a service port's listener; its established connections carry on until they end.
    /// Returns what was open, for a possible handover of its socket.
    fn close_port(&mut self, name: &ServicePortName) -> Option<OpenPort> {
        let mut open = self.open_ports.remove(name)?;
        open.stop.cancel();
        if let Some(node) = open.node.take() {
            node.close();
        }
        self.state.remove_listener(name);
        info!(service = %name, "closed proxy port");
        Some(open)
    }

    /// Binds `clusterIP:port`, or the fallback on 127.0.0.1. Returns the listener and whether it
    /// is the fallback; `None` (logged) when even the fallback failed.
    fn bind(&self, spec: &ServicePortSpec) -> Option<Handover> {
        let error = match bind_now(spec.cluster_addr) {
            Ok(listener) => return Some((Arc::new(listener), false)),
            Err(error) => error,
        };
        error!(
            service = %spec.name, address = %spec.cluster_addr, %error,
            "cannot listen on the cluster address, falling back to a node port on 127.0.0.1"
        );
        // A fallback must not take a port some Service's node listener wants.
        let node_ports: BTreeSet<u16> = self
            .open_ports
            .values()
            .filter_map(|open| open.spec.node_port)
            .chain(spec.node_port)
            .collect();
        let candidates = fallback_ports(&spec.name, &self.config.node_port_range)
            .filter(|port| !node_ports.contains(port));
        for port in candidates.chain(std::iter::once(0)) {
            if let Ok(listener) = bind_now(SocketAddr::from((Ipv4Addr::LOCALHOST, port))) {
                return Some((Arc::new(listener), true));
            }
        }
        warn!(service = %spec.name, "no fallback port could be bound; service port not proxied");
        None
    }
}
