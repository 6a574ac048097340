//! Per service port counters, and their Prometheus text rendering for `GET /metrics`.
//!
//! Kubernetes counterpart: `pkg/proxy/metrics/metrics.go`. kube-proxy's real metrics are about
//! rule syncing (`sync_proxy_rules_duration_seconds`, `network_programming_duration_seconds`);
//! the userspace proxy had no per-service traffic counters because the kernel did the counting in
//! the other modes. minik's proxy carries the bytes itself, so it counts them:
//!
//! ```text
//! minik_proxy_connections_total{service="default/web",port="http"} 12
//! minik_proxy_dial_failures_total{service="default/web",port="http"} 1
//! minik_proxy_no_endpoints_total{service="default/web",port="http"} 0
//! minik_proxy_bytes_total{service="default/web",port="http",direction="in"} 5120
//! ```
//!
//! `direction="in"` is client → backend, `"out"` backend → client. Byte counts are added when a
//! connection closes (the copy loop reports its totals then), so the data path does no extra work
//! per byte. Counters are plain atomics, incremented with `Relaxed` ordering: each is independent
//! and only ever read for display.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::service_port::ServicePortName;

/// The counters of one service port, shared by its listener and every connection task.
#[derive(Debug, Default)]
pub struct PortMetrics {
    /// Connections accepted on the port's listener.
    pub connections: AtomicU64,
    /// Dials to an endpoint that failed or timed out (each attempt counts).
    pub dial_failures: AtomicU64,
    /// Connections closed at once because the port had no ready endpoint.
    pub no_endpoints: AtomicU64,
    /// Bytes copied from clients to endpoints.
    pub bytes_in: AtomicU64,
    /// Bytes copied from endpoints to clients.
    pub bytes_out: AtomicU64,
}

impl PortMetrics {
    /// Adds one to a counter.
    pub fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A consistent-enough copy of the counters for rendering.
    pub fn snapshot(&self) -> Counts {
        Counts {
            connections: self.connections.load(Ordering::Relaxed),
            dial_failures: self.dial_failures.load(Ordering::Relaxed),
            no_endpoints: self.no_endpoints.load(Ordering::Relaxed),
            bytes_in: self.bytes_in.load(Ordering::Relaxed),
            bytes_out: self.bytes_out.load(Ordering::Relaxed),
        }
    }
}

/// The values of one port's counters at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// See [`PortMetrics::connections`].
    pub connections: u64,
    /// See [`PortMetrics::dial_failures`].
    pub dial_failures: u64,
    /// See [`PortMetrics::no_endpoints`].
    pub no_endpoints: u64,
    /// See [`PortMetrics::bytes_in`].
    pub bytes_in: u64,
    /// See [`PortMetrics::bytes_out`].
    pub bytes_out: u64,
}

/// Every port's counters. A port keeps its counters after its Service is deleted, as Prometheus
/// counters must never go backwards while the process lives.
#[derive(Debug, Default)]
pub struct Metrics {
    ports: Mutex<BTreeMap<ServicePortName, Arc<PortMetrics>>>,
}

impl Metrics {
    /// The counters of a port, created at zero on first use.
    pub fn port(&self, name: &ServicePortName) -> Arc<PortMetrics> {
        let mut ports = self
            .ports
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        ports.entry(name.clone()).or_default().clone()
    }

    /// A snapshot of every port's counters.
    pub fn snapshot(&self) -> BTreeMap<ServicePortName, Counts> {
        let ports = self
            .ports
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        ports
            .iter()
            .map(|(name, metrics)| (name.clone(), metrics.snapshot()))
            .collect()
    }

    /// The Prometheus text exposition of every counter.
    pub fn render(&self) -> String {
        render(&self.snapshot())
    }
}

/// The samples of one family for one port: `(direction label if any, value)`.
type Samples = Vec<(Option<&'static str>, u64)>;

/// One counter family: its name, help text, and how to read it (with an extra label or not).
struct Family {
    name: &'static str,
    help: &'static str,
    values: fn(&Counts) -> Samples,
}

const FAMILIES: [Family; 4] = [
    Family {
        name: "minik_proxy_connections_total",
        help: "Connections accepted per service port.",
        values: |c| vec![(None, c.connections)],
    },
    Family {
        name: "minik_proxy_dial_failures_total",
        help: "Failed dials to an endpoint per service port.",
        values: |c| vec![(None, c.dial_failures)],
    },
    Family {
        name: "minik_proxy_no_endpoints_total",
        help: "Connections closed at once because the service port had no ready endpoint.",
        values: |c| vec![(None, c.no_endpoints)],
    },
    Family {
        name: "minik_proxy_bytes_total",
        help: "Bytes proxied per service port; direction in is client to endpoint.",
        values: |c| vec![(Some("in"), c.bytes_in), (Some("out"), c.bytes_out)],
    },
];

/// Renders counters in the Prometheus text format (version 0.0.4): `# HELP`, `# TYPE`, then one
/// sample line per port (and per direction for bytes).
pub fn render(ports: &BTreeMap<ServicePortName, Counts>) -> String {
    let mut out = String::new();
    for family in &FAMILIES {
        let _ = writeln!(out, "# HELP {} {}", family.name, family.help);
        let _ = writeln!(out, "# TYPE {} counter", family.name);
        for (name, counts) in ports {
            let service = escape_label(&name.service.to_string());
            let port = escape_label(&name.port);
            for (direction, value) in (family.values)(counts) {
                let _ = match direction {
                    Some(direction) => writeln!(
                        out,
                        "{}{{service=\"{service}\",port=\"{port}\",direction=\"{direction}\"}} {value}",
                        family.name
                    ),
                    None => writeln!(
                        out,
                        "{}{{service=\"{service}\",port=\"{port}\"}} {value}",
                        family.name
                    ),
                };
            }
        }
    }
    out
}

/// Label values escape `\`, `"` and newlines, as the text format requires.
fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use minik_api::ObjectKey;

    fn web_http() -> ServicePortName {
        ServicePortName {
            service: ObjectKey::new("default", "web"),
            port: "http".into(),
        }
    }

    #[test]
    fn render_writes_one_labelled_sample_per_port() {
        let metrics = Metrics::default();
        let port = metrics.port(&web_http());
        PortMetrics::inc(&port.connections);
        PortMetrics::inc(&port.connections);
        PortMetrics::inc(&port.dial_failures);
        port.bytes_in.fetch_add(5, Ordering::Relaxed);
        port.bytes_out.fetch_add(7, Ordering::Relaxed);
        let text = metrics.render();
        let expected = [
            "# TYPE minik_proxy_connections_total counter",
            "minik_proxy_connections_total{service=\"default/web\",port=\"http\"} 2",
            "minik_proxy_dial_failures_total{service=\"default/web\",port=\"http\"} 1",
            "minik_proxy_no_endpoints_total{service=\"default/web\",port=\"http\"} 0",
            "minik_proxy_bytes_total{service=\"default/web\",port=\"http\",direction=\"in\"} 5",
            "minik_proxy_bytes_total{service=\"default/web\",port=\"http\",direction=\"out\"} 7",
        ];
        for line in expected {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in:\n{text}"
            );
        }
    }

    #[test]
    fn render_with_no_ports_still_declares_the_families() {
        let text = render(&BTreeMap::new());
        assert_eq!(text.lines().filter(|l| l.starts_with("# TYPE")).count(), 4);
        assert!(!text.lines().any(|l| !l.starts_with('#')));
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }

    #[test]
    fn the_same_port_shares_its_counters() {
        let metrics = Metrics::default();
        PortMetrics::inc(&metrics.port(&web_http()).no_endpoints);
        PortMetrics::inc(&metrics.port(&web_http()).no_endpoints);
        assert_eq!(metrics.snapshot()[&web_http()].no_endpoints, 2);
    }
}
