//! Publishes each applied backend change as an `EndpointsApplied` Event on its Service, as the
//! proxy does (`proxy/src/events.rs`), so a pod's journey shows when every consumer stopped
//! sending it traffic.
//!
//! Kubernetes counterpart: none. ingress-nginx updates its Lua balancer's endpoints without an
//! Event (it records one only for a full reload, `RELOAD` on its own pod) and a cloud load
//! balancer's endpoint programming is not reported either; seed 003 measures those lags from the
//! outside. minik writes **its own reason** `EndpointsApplied`, component `ingress` or
//! `loadbalancer`, an `eventTime` taken when the change was applied, and the message the proxy
//! writes: `Applied endpoints for default/web:http: 127.244.1.2:8080` (or `<none>`). The ingress
//! controller and the load balancer both use it; `/metrics` keeps the counters.
//!
//! Publishing is an API call, so it runs in its own task: the sync loop never waits for it.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use minik_api::core::{Event, ObjectReference};
use minik_api::ObjectKey;
use minik_client::events::Recorder;
use minik_client::Client;
use tokio_util::task::TaskTracker;
use tracing::{debug, warn};

/// minik's own Event reason for "this consumer now routes to this endpoint set" (the proxy's).
pub const REASON_ENDPOINTS_APPLIED: &str = "EndpointsApplied";

/// The endpoints applied per Service port, keyed `ns/name:port`.
pub type Sets = BTreeMap<String, Vec<SocketAddr>>;

/// The key of a Service port in [`Sets`].
pub fn key(service: &ObjectKey, port: &str) -> String {
    format!("{service}:{port}")
}

/// The Service ports whose endpoints differ between `before` and `after`, with their new
/// endpoints (empty for a port no longer served).
pub fn changed(before: &Sets, after: &Sets) -> Vec<(String, Vec<SocketAddr>)> {
    let mut out: Vec<(String, Vec<SocketAddr>)> = after
        .iter()
        .filter(|(key, now)| before.get(*key) != Some(*now))
        .map(|(key, now)| (key.clone(), now.clone()))
        .collect();
    let gone = before.keys().filter(|key| !after.contains_key(*key));
    out.extend(gone.map(|key| (key.clone(), Vec::new())));
    out
}

/// `Applied endpoints for ns/name:port: ip:port,ip:port` (or `<none>`), as the proxy writes it.
pub fn message(key: &str, endpoints: &[SocketAddr]) -> String {
    let list: Vec<String> = endpoints.iter().map(SocketAddr::to_string).collect();
    let list = if list.is_empty() {
        "<none>".to_string()
    } else {
        list.join(",")
    };
    format!("Applied endpoints for {key}: {list}")
}

/// The endpoints of every backend of a route table.
pub fn of_table(table: &crate::routes::RouteTable) -> Sets {
    let routes = table.hosts.values().flatten().chain(&table.catch_all);
    let backends = routes
        .map(|route| &route.backend)
        .chain(&table.default_backend);
    backends
        .map(|b| (key(&b.service, &b.port), b.endpoints.clone()))
        .collect()
}

/// Remembers what was last applied and writes an Event per changed Service port.
pub struct Publisher {
    recorder: Recorder,
    last: Sets,
}

impl Publisher {
    /// A publisher reporting as `component` (`ingress`, `loadbalancer`).
    pub fn new(client: Client, component: &str) -> Publisher {
        // Every Event is a measurement read one by one: none is aggregated or dropped.
        let recorder = Recorder::new(client, component, None).without_correlation();
        Publisher {
            recorder,
            last: Sets::new(),
        }
    }

    /// `after` was just applied: builds the Events now (their `eventTime` is this moment) and
    /// writes them in a task of `tasks`.
    pub fn applied(&mut self, after: Sets, tasks: &TaskTracker) {
        let events: Vec<Event> = changed(&self.last, &after)
            .into_iter()
            .map(|(key, endpoints)| {
                let regarding = service_reference(&key);
                let text = message(&key, &endpoints);
                self.recorder
                    .build(&regarding, "Normal", REASON_ENDPOINTS_APPLIED, &text)
            })
            .collect();
        self.last = after;
        if events.is_empty() {
            return;
        }
        let recorder = self.recorder.clone();
        tasks.spawn(async move {
            for event in events {
                match recorder.write(event).await {
                    Ok(()) => debug!("published endpoints event"),
                    Err(error) => warn!(%error, "cannot publish endpoints event"),
                }
            }
        });
    }
}

/// A reference to the Service of `ns/name:port`.
fn service_reference(key: &str) -> ObjectReference {
    let service = key.rsplit_once(':').map_or(key, |(service, _)| service);
    let parsed = ObjectKey::parse(service);
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Service".into()),
        namespace: parsed.namespace,
        name: Some(parsed.name),
        ..ObjectReference::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sets(entries: &[(&str, &[&str])]) -> Sets {
        entries
            .iter()
            .map(|(key, list)| {
                let list = list.iter().map(|a| a.parse().unwrap()).collect();
                (key.to_string(), list)
            })
            .collect()
    }

    #[test]
    fn only_changed_ports_are_published_and_a_vanished_port_applies_none() {
        let before = sets(&[
            (
                "default/web:http",
                &["127.244.1.2:8080", "127.244.1.3:8080"],
            ),
            ("default/old:80", &["127.244.1.9:8080"]),
            ("default/same:80", &["127.244.1.5:8080"]),
        ]);
        let after = sets(&[
            ("default/web:http", &["127.244.1.3:8080"]),
            ("default/same:80", &["127.244.1.5:8080"]),
        ]);
        let messages: Vec<String> = changed(&before, &after)
            .iter()
            .map(|(key, list)| message(key, list))
            .collect();
        assert_eq!(
            messages,
            [
                "Applied endpoints for default/web:http: 127.244.1.3:8080",
                "Applied endpoints for default/old:80: <none>",
            ]
        );
    }

    #[test]
    fn the_event_is_about_the_service() {
        let reference = service_reference("shop/web:http");
        assert_eq!(reference.namespace.as_deref(), Some("shop"));
        assert_eq!(reference.name.as_deref(), Some("web"));
        assert_eq!(reference.kind.as_deref(), Some("Service"));
    }
}
