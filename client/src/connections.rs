//! Connection reports: how the proxy and the ingress tell the cluster which pods have open
//! connections, so that the controller manager's idle rule can scale a Deployment to zero.
//!
//! Kubernetes counterpart: none in core. KEDA's HTTP add-on counts requests in its interceptor
//! and publishes them to its scaler; seed 002 asks for that for rainbow deployments. minik keeps
//! the rule that components talk only through the API: each data-path component (a *writer*)
//! owns one ConfigMap, `kube-system/connections-<writer>`, whose `data` maps a pod IP to
//! `open=N,since=RFC3339` — N connections open through that writer as of the last write, and
//! the moment the pod last went from none to some or from some to none.
//!
//! Why a ConfigMap per writer rather than an annotation per pod: one write carries every pod that
//! changed since the last one (a rollout of 80 pods is one request, not 80); the writer needs no
//! right on pods and no pod names (its endpoints are addresses), and there is one writer per
//! object, so writes never conflict. Writes are cheap on purpose: a pod is marked changed only when
//! its count goes from 0 to 1 or back to 0 (a busy pod whose count stays above 0 writes nothing),
//! and changes are sent at most once per `interval` (1 s), as a merge patch of the changed keys.
//!
//! What minik simplifies: a writer that dies with connections open leaves `open=N` behind until it
//! starts again (its first write replaces the whole report); records of pods idle for an hour are
//! dropped; a pod IP reused by a later pod inherits the record (the reader ignores records older
//! than the pod).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::{json, Map, Value};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::{Api, Client, Patch};

/// The namespace of every connection report.
pub const NAMESPACE: &str = "kube-system";
/// The label that marks a ConfigMap as a connection report (what the controller watches for).
pub const LABEL: &str = "minik.dev/connection-report";
/// Records of pods idle this long are dropped from the report.
const FORGET_AFTER: Duration = Duration::from_secs(3600);

/// The name of `writer`'s report: `connections-kube-proxy`, `connections-ingress`.
pub fn report_name(writer: &str) -> String {
    format!("connections-{writer}")
}

/// One pod's state in one report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodConnections {
    /// Connections open (as of the last write; only zero or not zero is kept up to date).
    pub open: u32,
    /// When the pod last went from no connection to some, or from some to none.
    pub since: Timestamp,
}

impl PodConnections {
    /// `open=2,since=2026-11-26T03:40:00Z`.
    pub fn encode(&self) -> String {
        format!("open={},since={}", self.open, self.since)
    }

    /// The inverse of [`PodConnections::encode`]; `None` for anything else.
    pub fn parse(text: &str) -> Option<PodConnections> {
        let (open, since) = text.split_once(',')?;
        let open = open.strip_prefix("open=")?.parse().ok()?;
        let since = since.strip_prefix("since=")?.parse().ok()?;
        Some(PodConnections { open, since })
    }
}

/// Every pod of a report's `data`, keyed by pod IP; malformed entries are skipped.
pub fn parse_report(data: &BTreeMap<String, String>) -> Vec<(IpAddr, PodConnections)> {
    data.iter()
        .filter_map(|(ip, value)| Some((ip.parse().ok()?, PodConnections::parse(value)?)))
        .collect()
}

/// The writer's side: open connection counts per pod IP, and which of them changed.
#[derive(Debug, Default)]
pub struct ConnectionTracker {
    state: Mutex<TrackerState>,
    changed: Notify,
}

#[derive(Debug, Default)]
struct TrackerState {
    pods: BTreeMap<IpAddr, PodConnections>,
    dirty: Vec<IpAddr>,
}

/// Held by a connection for as long as it is open; dropping it closes it in the tracker.
#[derive(Debug)]
pub struct ConnectionGuard {
    tracker: Arc<ConnectionTracker>,
    ip: IpAddr,
}

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.tracker.change(self.ip, false);
    }
}

impl ConnectionTracker {
    /// Counts a connection to the pod at `ip` until the returned guard is dropped.
    pub fn open(self: &Arc<Self>, ip: IpAddr) -> ConnectionGuard {
        self.change(ip, true);
        ConnectionGuard {
            tracker: self.clone(),
            ip,
        }
    }

    /// The current state of the pod at `ip` (tests and `/metrics`).
    pub fn get(&self, ip: IpAddr) -> Option<PodConnections> {
        self.state.lock().ok()?.pods.get(&ip).copied()
    }

    fn change(&self, ip: IpAddr, opened: bool) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let now = Timestamp::now();
        let entry = state.pods.entry(ip).or_insert(PodConnections {
            open: 0,
            since: now,
        });
        let before = entry.open;
        entry.open = if opened {
            before + 1
        } else {
            before.saturating_sub(1)
        };
        // Only the transitions between none and some are news for the idle rule.
        if (before == 0) != (entry.open == 0) {
            entry.since = now;
            state.dirty.push(ip);
            self.changed.notify_one();
        }
    }

    /// The data to send: the changed pods' values, and `null` for pods idle long enough to forget.
    fn take_changes(&self, now: Timestamp) -> Map<String, Value> {
        let Ok(mut state) = self.state.lock() else {
            return Map::new();
        };
        let dirty = std::mem::take(&mut state.dirty);
        let mut changes = Map::new();
        for ip in dirty {
            if let Some(pod) = state.pods.get(&ip) {
                changes.insert(ip.to_string(), Value::String(pod.encode()));
            }
        }
        let forget = jiff::SignedDuration::try_from(FORGET_AFTER).unwrap_or_default();
        state.pods.retain(|ip, pod| {
            let keep = pod.open > 0 || now.duration_since(pod.since) < forget;
            if !keep {
                changes.insert(ip.to_string(), Value::Null);
            }
            keep
        });
        changes
    }

    /// Marks every pod changed again (after a failed write, or to replace a whole report).
    fn mark_all_dirty(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.dirty = state.pods.keys().copied().collect();
        }
    }
}

/// Sends `tracker`'s changes to `kube-system/connections-<writer>`, at most once per `interval`,
/// until `shutdown`. The first write replaces the report, dropping what a previous run left.
pub async fn publish(
    client: Client,
    writer: String,
    tracker: Arc<ConnectionTracker>,
    interval: Duration,
    shutdown: CancellationToken,
) {
    let api = Api::<ConfigMap>::namespaced(client, NAMESPACE);
    let name = report_name(&writer);
    let mut replaced = false;
    loop {
        if replaced {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tracker.changed.notified() => {}
            }
        }
        let result = if replaced {
            let changes = tracker.take_changes(Timestamp::now());
            let count = changes.len();
            let patched = write_changes(&api, &name, changes).await;
            if patched.is_ok() && count > 0 {
                info!(report = %name, pods = count, "published connection changes");
            }
            patched
        } else {
            tracker.take_changes(Timestamp::now());
            replace_report(&api, &name, &tracker).await
        };
        match result {
            Ok(()) => replaced = true,
            Err(error) => {
                warn!(report = %name, %error, "cannot publish connections; retrying");
                tracker.mark_all_dirty();
                tracker.changed.notify_one();
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
    }
}

/// Merges `changes` into the report's `data`, creating the report when it is missing.
async fn write_changes(
    api: &Api<ConfigMap>,
    name: &str,
    changes: Map<String, Value>,
) -> crate::Result<()> {
    if changes.is_empty() {
        return Ok(());
    }
    let patch = Patch::Merge(json!({ "data": changes.clone() }));
    match api.patch(name, &patch).await {
        Ok(_) => Ok(()),
        Err(error) if error.is_not_found() => create_report(api, name, changes).await,
        Err(error) => Err(error),
    }
}

/// Writes the whole report: every pod the tracker knows, nothing else.
async fn replace_report(
    api: &Api<ConfigMap>,
    name: &str,
    tracker: &ConnectionTracker,
) -> crate::Result<()> {
    let data: Map<String, Value> = tracker
        .state
        .lock()
        .map(|state| {
            let pods = state.pods.iter();
            pods.map(|(ip, pod)| (ip.to_string(), Value::String(pod.encode())))
                .collect()
        })
        .unwrap_or_default();
    match api.get_opt(name).await? {
        None => create_report(api, name, data).await,
        Some(_) => {
            let patch = Patch::Json(json!([{ "op": "replace", "path": "/data", "value": data }]));
            match api.patch(name, &patch).await {
                Ok(_) => Ok(()),
                // A report with no data at all has no `/data` to replace.
                Err(_) => api
                    .patch(name, &Patch::Merge(json!({ "data": data })))
                    .await
                    .map(|_| ()),
            }
        }
    }
}

async fn create_report(
    api: &Api<ConfigMap>,
    name: &str,
    mut data: Map<String, Value>,
) -> crate::Result<()> {
    data.retain(|_, value| !value.is_null());
    let object: ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": name, "namespace": NAMESPACE, "labels": { LABEL: "true" } },
        "data": data,
    }))
    .unwrap_or_default();
    api.create(&object).await.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn values_round_trip_and_junk_is_skipped() {
        let pod = PodConnections {
            open: 3,
            since: "2026-11-26T03:40:00Z".parse().unwrap(),
        };
        assert_eq!(pod.encode(), "open=3,since=2026-11-26T03:40:00Z");
        assert_eq!(PodConnections::parse(&pod.encode()), Some(pod));
        let data = BTreeMap::from([
            ("127.244.1.5".to_string(), pod.encode()),
            ("not-an-ip".to_string(), pod.encode()),
            ("127.244.1.6".to_string(), "open=x".to_string()),
        ]);
        assert_eq!(parse_report(&data), vec![(ip("127.244.1.5"), pod)]);
    }

    #[test]
    fn only_transitions_between_none_and_some_are_changes() {
        let tracker = Arc::new(ConnectionTracker::default());
        let first = tracker.open(ip("127.244.1.5"));
        assert_eq!(tracker.take_changes(Timestamp::now()).len(), 1);
        let second = tracker.open(ip("127.244.1.5"));
        drop(first);
        assert!(tracker.take_changes(Timestamp::now()).is_empty(), "1→2→1");
        drop(second);
        let changes = tracker.take_changes(Timestamp::now());
        let value = changes["127.244.1.5"].as_str().unwrap();
        assert_eq!(PodConnections::parse(value).unwrap().open, 0);
    }

    #[test]
    fn pods_idle_for_an_hour_are_forgotten() {
        let tracker = Arc::new(ConnectionTracker::default());
        drop(tracker.open(ip("127.244.1.5")));
        tracker.take_changes(Timestamp::now());
        let later = Timestamp::now() + jiff::SignedDuration::from_secs(3601);
        let changes = tracker.take_changes(later);
        assert_eq!(changes["127.244.1.5"], Value::Null);
        assert!(tracker.get(ip("127.244.1.5")).is_none());
    }
}
