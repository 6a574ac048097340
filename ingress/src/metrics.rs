//! Counting and timing each backend change, and its Prometheus text rendering for `GET /metrics`.
//!
//! Kubernetes counterpart: kube-proxy's `network_programming_duration_seconds` (from an Endpoints
//! change, read from the `endpoints.kubernetes.io/last-change-trigger-time` annotation, to the
//! rules that carry it; `pkg/proxy/metrics`) and ingress-nginx's
//! `nginx_ingress_controller_config_last_reload_successful*`. minik's consumers, the ingress and
//! the load balancer, each render:
//!
//! ```text
//! minik_ingress_backend_updates_total 3
//! minik_ingress_sync_lag_seconds_bucket{le="0.1"} 2
//! minik_ingress_sync_lag_seconds_sum 1.21
//! minik_ingress_sync_lag_seconds_count 3
//! minik_ingress_last_sync_lag_seconds 1.004
//! minik_ingress_last_update_timestamp_seconds 1795000000.123
//! ```
//!
//! An update counts when the backends (the endpoints that get traffic) changed; its lag is timed
//! from each EndpointSlice change it carries. The last two gauges let a test or the demo place
//! the update on a timeline.

use std::fmt::Write as _;
use std::sync::Mutex;

use jiff::Timestamp;

/// Upper bounds of the lag histogram, in seconds.
const BUCKETS: [f64; 12] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The counters of one consumer, behind one lock (written once per sync, read per scrape).
#[derive(Debug)]
pub struct SyncMetrics {
    prefix: &'static str,
    inner: Mutex<Counts>,
}

/// The values at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counts {
    /// Backend changes applied.
    pub updates: u64,
    /// How many lags fell at or under each bucket's bound (cumulative, as Prometheus wants).
    pub buckets: [u64; BUCKETS.len()],
    /// Sum of every lag, seconds.
    pub lag_sum: f64,
    /// Lags observed.
    pub lag_count: u64,
    /// The longest lag of the last update, seconds.
    pub last_lag: f64,
    /// When the last update was applied (Unix seconds).
    pub last_update: f64,
}

impl SyncMetrics {
    /// Metrics named `{prefix}_backend_updates_total` and so on.
    pub fn new(prefix: &'static str) -> Self {
        SyncMetrics {
            prefix,
            inner: Mutex::new(Counts::default()),
        }
    }

    /// Records one applied update at `now` carrying the slice changes of `triggers`.
    pub fn observe_update(&self, triggers: &[Timestamp], now: Timestamp) {
        let mut counts = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        counts.updates += 1;
        counts.last_update = now.as_millisecond() as f64 / 1000.0;
        counts.last_lag = 0.0;
        for trigger in triggers {
            let lag = (now.as_millisecond() - trigger.as_millisecond()).max(0) as f64 / 1000.0;
            for (bound, count) in BUCKETS.iter().zip(counts.buckets.iter_mut()) {
                if lag <= *bound {
                    *count += 1;
                }
            }
            counts.lag_sum += lag;
            counts.lag_count += 1;
            counts.last_lag = counts.last_lag.max(lag);
        }
    }

    /// A copy of the counters.
    pub fn snapshot(&self) -> Counts {
        self.inner.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The Prometheus text format.
    pub fn render(&self) -> String {
        let c = self.snapshot();
        let p = self.prefix;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP {p}_backend_updates_total Backend changes applied."
        );
        let _ = writeln!(out, "# TYPE {p}_backend_updates_total counter");
        let _ = writeln!(out, "{p}_backend_updates_total {}", c.updates);
        let _ = writeln!(out, "# HELP {p}_sync_lag_seconds From an EndpointSlice change to the update that applied it.");
        let _ = writeln!(out, "# TYPE {p}_sync_lag_seconds histogram");
        for (bound, count) in BUCKETS.iter().zip(c.buckets) {
            let _ = writeln!(out, "{p}_sync_lag_seconds_bucket{{le=\"{bound}\"}} {count}");
        }
        let _ = writeln!(
            out,
            "{p}_sync_lag_seconds_bucket{{le=\"+Inf\"}} {}",
            c.lag_count
        );
        let _ = writeln!(out, "{p}_sync_lag_seconds_sum {}", c.lag_sum);
        let _ = writeln!(out, "{p}_sync_lag_seconds_count {}", c.lag_count);
        let _ = writeln!(
            out,
            "# HELP {p}_last_sync_lag_seconds The longest lag of the last update."
        );
        let _ = writeln!(out, "# TYPE {p}_last_sync_lag_seconds gauge");
        let _ = writeln!(out, "{p}_last_sync_lag_seconds {}", c.last_lag);
        let _ = writeln!(
            out,
            "# HELP {p}_last_update_timestamp_seconds When the last update was applied."
        );
        let _ = writeln!(out, "# TYPE {p}_last_update_timestamp_seconds gauge");
        let _ = writeln!(
            out,
            "{p}_last_update_timestamp_seconds {:.3}",
            c.last_update
        );
        out
    }
}

/// Reads one unlabelled sample (`name value`) from Prometheus text, for tests and the demo.
pub fn sample(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_counts_once_and_times_each_change_it_carries() {
        let metrics = SyncMetrics::new("minik_ingress");
        let now: Timestamp = "2026-11-25T12:00:02Z".parse().unwrap();
        let triggers = [
            "2026-11-25T12:00:00Z".parse().unwrap(),
            "2026-11-25T12:00:01.950Z".parse().unwrap(),
        ];
        metrics.observe_update(&triggers, now);
        let text = metrics.render();
        assert_eq!(
            sample(&text, "minik_ingress_backend_updates_total"),
            Some(1.0)
        );
        assert_eq!(
            sample(&text, "minik_ingress_sync_lag_seconds_count"),
            Some(2.0)
        );
        assert_eq!(
            sample(&text, "minik_ingress_last_sync_lag_seconds"),
            Some(2.0)
        );
        assert!(text.contains("minik_ingress_sync_lag_seconds_bucket{le=\"0.05\"} 1\n"));
        assert!(text.contains("minik_ingress_sync_lag_seconds_bucket{le=\"2.5\"} 2\n"));
    }
}
