//! The route table: Ingress rules resolved to endpoints, and the lookup of one request in it.
//!
//! Kubernetes counterpart: ingress-nginx's model (`internal/ingress/controller/controller.go`,
//! `getBackendServers`: one server per host, locations per path, upstreams per Service port) and
//! the path rules of the Ingress API (`networking/v1` `HTTPIngressPath` docs):
//!
//! - a request goes to the server of its `Host` (a precise host, else a `*.example.com` wildcard
//!   matching exactly one more label), else to the catch-all server built from rules without host;
//! - within a server the longest matching path wins, and `Exact` beats `Prefix` at equal length;
//!   `Prefix` matches whole path elements (`/foo` matches `/foo/bar`, not `/foobar`);
//!   `ImplementationSpecific` is treated as `Prefix`, as ingress-nginx does without regexes;
//! - the same host and path in two Ingresses: the oldest Ingress wins (creation time, then name);
//! - no path matches: the default backend (the oldest Ingress's `defaultBackend`), else 404.
//!
//! [`compute`] is pure: objects in, table out, so the whole routing logic is tested without I/O.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{Ingress, IngressServiceBackend};
use minik_api::ObjectKey;

use crate::backends::{endpoints_for_port, service_of};

/// How a path is compared with the request's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PathMatch {
    /// The whole path, exactly.
    Exact,
    /// Whole leading path elements.
    Prefix,
}

/// Where matching requests go: one Service port and the endpoints it had when the table was built.
#[derive(Debug)]
pub struct Backend {
    /// `namespace/name` of the Service.
    pub service: ObjectKey,
    /// The port as the Ingress names it (`80` or `http`).
    pub port: String,
    /// The endpoints that get traffic (ready ones, see `backends.rs`).
    pub endpoints: Vec<SocketAddr>,
    next: AtomicUsize,
}

impl PartialEq for Backend {
    fn eq(&self, other: &Self) -> bool {
        (&self.service, &self.port, &self.endpoints)
            == (&other.service, &other.port, &other.endpoints)
    }
}

impl Backend {
    /// The endpoints in round-robin order, starting with the next one's turn (tried in turn on a
    /// failed dial, as nginx's `proxy_next_upstream error`).
    pub fn rotation(&self) -> Vec<SocketAddr> {
        let n = self.endpoints.len();
        if n == 0 {
            return Vec::new();
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed) % n;
        (0..n).map(|i| self.endpoints[(start + i) % n]).collect()
    }
}

/// One path of a server.
#[derive(Debug, PartialEq)]
pub struct Route {
    /// The path, as written (`/` when an ImplementationSpecific path left it out).
    pub path: String,
    /// How it matches.
    pub kind: PathMatch,
    /// Where it sends requests.
    pub backend: Arc<Backend>,
}

/// Everything the controller serves.
#[derive(Debug, Default, PartialEq)]
pub struct RouteTable {
    /// Servers by precise or wildcard host.
    pub hosts: BTreeMap<String, Vec<Route>>,
    /// Rules without a host.
    pub catch_all: Vec<Route>,
    /// The default backend, if an Ingress has one.
    pub default_backend: Option<Arc<Backend>>,
}

/// What the table says about one request.
#[derive(Debug, PartialEq)]
pub enum Decision<'a> {
    /// A rule or the default backend matched.
    Backend(&'a Arc<Backend>),
    /// Nothing matched: upstream's default backend answers 404.
    NotFound,
}

impl RouteTable {
    /// The backend for a request to `host` (without port) and `path`.
    pub fn route(&self, host: &str, path: &str) -> Decision<'_> {
        let host = host.to_ascii_lowercase();
        let wildcard = host.split_once('.').map(|(_, rest)| format!("*.{rest}"));
        let server = self
            .hosts
            .get(&host)
            .or_else(|| wildcard.and_then(|w| self.hosts.get(&w)))
            .unwrap_or(&self.catch_all);
        let found = server.iter().find(|r| matches(r, path)).map(|r| &r.backend);
        match found.or(self.default_backend.as_ref()) {
            Some(backend) => Decision::Backend(backend),
            None => Decision::NotFound,
        }
    }

    /// Every backend, for logs: `host/path → service:port (n endpoints)`.
    pub fn describe(&self) -> Vec<String> {
        let line = |host: &str, r: &Route| {
            format!(
                "{host}{} → {}:{} ({} endpoints)",
                r.path,
                r.backend.service,
                r.backend.port,
                r.backend.endpoints.len()
            )
        };
        let mut lines: Vec<String> = self
            .hosts
            .iter()
            .flat_map(|(host, routes)| routes.iter().map(move |r| line(host, r)))
            .collect();
        lines.extend(self.catch_all.iter().map(|r| line("*", r)));
        lines
    }
}

fn matches(route: &Route, path: &str) -> bool {
    match route.kind {
        PathMatch::Exact => path == route.path,
        PathMatch::Prefix => {
            let prefix = route.path.trim_end_matches('/');
            prefix.is_empty()
                || path == prefix
                || path
                    .strip_prefix(prefix)
                    .is_some_and(|rest| rest.starts_with('/'))
        }
    }
}

/// The objects the table is computed from (the controller's informer stores).
pub struct Inputs<'a> {
    /// The Ingresses of this controller's class.
    pub ingresses: &'a [Arc<Ingress>],
    /// Every Service.
    pub services: &'a [Arc<Service>],
    /// Every EndpointSlice.
    pub slices: &'a [Arc<EndpointSlice>],
}

/// Builds the route table from Ingresses, Services and EndpointSlices.
pub fn compute(inputs: &Inputs<'_>) -> RouteTable {
    let mut ingresses: Vec<&Ingress> = inputs.ingresses.iter().map(|i| i.as_ref()).collect();
    // The oldest Ingress claims a host and path first.
    ingresses.sort_by_key(|i| {
        let created = i.metadata.creation_timestamp.as_ref().map(|t| t.0);
        (created, ObjectKey::of(&i.metadata))
    });
    let resolver = Resolver::new(inputs);
    let mut table = RouteTable::default();
    for ingress in ingresses {
        let namespace = ingress.metadata.namespace.as_deref().unwrap_or("default");
        let Some(spec) = &ingress.spec else { continue };
        if let Some(service) = spec
            .default_backend
            .as_ref()
            .and_then(|b| b.service.as_ref())
        {
            if table.default_backend.is_none() {
                table.default_backend = Some(resolver.backend(namespace, service));
            }
        }
        for rule in spec.rules.iter().flatten() {
            let host = rule.host.clone().unwrap_or_default().to_ascii_lowercase();
            let server = if host.is_empty() {
                &mut table.catch_all
            } else {
                table.hosts.entry(host).or_default()
            };
            for path in rule.http.iter().flat_map(|h| &h.paths) {
                let Some(service) = &path.backend.service else {
                    continue;
                };
                let kind = match path.path_type.as_str() {
                    "Exact" => PathMatch::Exact,
                    _ => PathMatch::Prefix,
                };
                let text = path
                    .path
                    .clone()
                    .filter(|p| !p.is_empty())
                    .unwrap_or("/".into());
                if server.iter().any(|r| r.path == text && r.kind == kind) {
                    continue;
                }
                let backend = resolver.backend(namespace, service);
                server.push(Route {
                    path: text,
                    kind,
                    backend,
                });
            }
        }
    }
    for routes in table.hosts.values_mut().chain([&mut table.catch_all]) {
        // Longest path first; at equal length Exact first.
        routes.sort_by(|a, b| b.path.len().cmp(&a.path.len()).then(a.kind.cmp(&b.kind)));
    }
    table
}

/// Looks Services and their slices up by `namespace/name`.
struct Resolver<'a> {
    services: BTreeMap<ObjectKey, &'a Service>,
    slices: BTreeMap<ObjectKey, Vec<&'a EndpointSlice>>,
}

impl<'a> Resolver<'a> {
    fn new(inputs: &Inputs<'a>) -> Self {
        let services = inputs
            .services
            .iter()
            .map(|s| (ObjectKey::of(&s.metadata), s.as_ref()))
            .collect();
        let mut slices: BTreeMap<ObjectKey, Vec<&EndpointSlice>> = BTreeMap::new();
        for slice in inputs.slices.iter() {
            if let (Some(namespace), Some(service)) = (&slice.metadata.namespace, service_of(slice))
            {
                slices
                    .entry(ObjectKey::new(namespace, service))
                    .or_default()
                    .push(slice);
            }
        }
        Resolver { services, slices }
    }

    /// The backend of a Service port: no endpoints when the Service or its port is missing (a
    /// 503, as ingress-nginx answers for a backend without endpoints).
    fn backend(&self, namespace: &str, backend: &IngressServiceBackend) -> Arc<Backend> {
        let key = ObjectKey::new(namespace, &backend.name);
        let wanted = backend.port.clone().unwrap_or_default();
        let port_label = match (&wanted.name, wanted.number) {
            (Some(name), _) if !name.is_empty() => name.clone(),
            (_, Some(number)) => number.to_string(),
            _ => String::new(),
        };
        let service_port = self.services.get(&key).and_then(|service| {
            let ports = service.spec.as_ref()?.ports.as_ref()?;
            ports.iter().find(|p| match (&wanted.name, wanted.number) {
                (Some(name), _) if !name.is_empty() => p.name.as_deref() == Some(name),
                (_, Some(number)) => p.port == number,
                _ => false,
            })
        });
        let endpoints = match (service_port, self.slices.get(&key)) {
            (Some(port), Some(slices)) => {
                endpoints_for_port(slices.iter().copied(), port.name.as_deref().unwrap_or(""))
            }
            _ => Vec::new(),
        };
        Arc::new(Backend {
            service: key,
            port: port_label,
            endpoints,
            next: AtomicUsize::new(0),
        })
    }
}

#[cfg(test)]
#[path = "routes_tests.rs"]
mod tests;
