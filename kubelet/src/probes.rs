//! Readiness, liveness and startup probes: one task per probe per container.
//!
//! Kubernetes counterpart: the prober manager and its workers (`pkg/kubelet/prober/worker.go`:
//! one goroutine per probe per container, `doProbe` every `periodSeconds`, results counted
//! against `successThreshold`/`failureThreshold`) and the three mechanisms of
//! `pkg/kubelet/prober/prober.go` (`exec`, `httpGet` 200–399, `tcpSocket`). Results reach the
//! pod worker through a channel (upstream: the `results.Manager` updates channel), never by
//! polling the API.
//!
//! Rules (docs/kubernetes-rules.md#probes): defaults initialDelay 0, period 10 s, timeout 1 s,
//! successThreshold 1, failureThreshold 3; readiness starts as Failure ("the default state of
//! readiness before the initial delay is Failure"), liveness as Success; a startup probe holds the
//! other two off until it passes (the pod worker starts them on its first success); a result is
//! reported to the pod worker only when it flips.
//!
//! `initialDelaySeconds` counts from the container's start (`startedAt`), not from the end of its
//! postStart hook, when the probes begin: [`first_probe_delay`].
//!
//! minik simplifies: no gRPC probes, no jitter before the first probe, the HTTP client ignores
//! `host` headers and schemes other than http.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, HTTPGetAction, Pod, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::debug;

use crate::cri::Runtime;
use crate::reporter::PodReporter;

/// Which probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ProbeKind {
    /// `readinessProbe`: drives Ready.
    Readiness,
    /// `livenessProbe`: failure kills the container.
    Liveness,
    /// `startupProbe`: holds the others off; failure kills the container.
    Startup,
}

impl ProbeKind {
    /// `Readiness`, `Liveness`, `Startup` as upstream's event messages spell them.
    pub fn label(self) -> &'static str {
        match self {
            ProbeKind::Readiness => "Readiness",
            ProbeKind::Liveness => "Liveness",
            ProbeKind::Startup => "Startup",
        }
    }
}

/// A probe's timing and thresholds with Kubernetes' defaults applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeSettings {
    /// Wait before the first probe.
    pub initial_delay: Duration,
    /// Time between probes.
    pub period: Duration,
    /// Time one probe may take.
    pub timeout: Duration,
    /// Consecutive successes to count as passing.
    pub success_threshold: u32,
    /// Consecutive failures to count as failing.
    pub failure_threshold: u32,
}

impl ProbeSettings {
    /// Reads a probe's fields, applying defaults and minimums.
    pub fn from_probe(probe: &Probe, kind: ProbeKind) -> Self {
        let secs = |v: Option<i32>, default: i32, min: i32| {
            Duration::from_secs(v.unwrap_or(default).max(min) as u64)
        };
        let success = match kind {
            ProbeKind::Readiness => probe.success_threshold.unwrap_or(1).max(1) as u32,
            // "Must be 1 for liveness and startup probes."
            _ => 1,
        };
        ProbeSettings {
            initial_delay: secs(probe.initial_delay_seconds, 0, 0),
            period: secs(probe.period_seconds, 10, 1),
            timeout: secs(probe.timeout_seconds, 1, 1),
            success_threshold: success,
            failure_threshold: probe.failure_threshold.unwrap_or(3).max(1) as u32,
        }
    }
}

/// Counts consecutive results and says when the probe's verdict flips (pure).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeTracker {
    settings: ProbeSettings,
    verdict: bool,
    successes: u32,
    failures: u32,
}

impl ProbeTracker {
    /// A tracker starting at upstream's initial verdict: liveness passes, the others fail.
    pub fn new(settings: ProbeSettings, kind: ProbeKind) -> Self {
        ProbeTracker {
            settings,
            verdict: kind == ProbeKind::Liveness,
            successes: 0,
            failures: 0,
        }
    }

    /// Records one probe outcome; returns the new verdict when it flips.
    pub fn record(&mut self, success: bool) -> Option<bool> {
        if success {
            self.successes += 1;
            self.failures = 0;
        } else {
            self.failures += 1;
            self.successes = 0;
        }
        let flips_up = !self.verdict && self.successes >= self.settings.success_threshold;
        let flips_down = self.verdict && self.failures >= self.settings.failure_threshold;
        if flips_up || flips_down {
            self.verdict = !self.verdict;
            return Some(self.verdict);
        }
        None
    }
}

/// A verdict change for the pod worker.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeUpdate {
    /// The runtime id of the container probed.
    pub container_id: String,
    /// Which probe.
    pub kind: ProbeKind,
    /// Passing or failing now.
    pub success: bool,
}

/// Everything a probe task needs.
pub struct ProbeTask {
    /// The runtime (for `exec` probes).
    pub runtime: Arc<dyn crate::cri::Runtime>,
    /// For `Unhealthy` events.
    pub reporter: Arc<dyn PodReporter>,
    /// The pod.
    pub pod: Arc<Pod>,
    /// The container's spec (ports for named ports).
    pub container: Container,
    /// The runtime id.
    pub container_id: String,
    /// The pod's IP (the default probe host).
    pub pod_ip: String,
    /// Which probe, and its spec.
    pub kind: ProbeKind,
    /// The probe spec.
    pub probe: Probe,
    /// How long the container has been running already (its `startedAt` to now).
    pub running_for: Duration,
}

/// When the first probe goes, counted from now: `initialDelaySeconds` runs from the container's
/// start, not from the moment its probes begin (upstream's worker compares with
/// `State.Running.StartedAt`), so a postStart longer than the delay means probing at once.
pub fn first_probe_delay(initial_delay: Duration, running_for: Duration) -> Duration {
    initial_delay.saturating_sub(running_for)
}

/// Runs one probe until cancelled, sending verdict flips on `updates`.
pub async fn run(
    task: ProbeTask,
    updates: mpsc::UnboundedSender<ProbeUpdate>,
    token: CancellationToken,
) {
    let settings = ProbeSettings::from_probe(&task.probe, task.kind);
    let mut tracker = ProbeTracker::new(settings, task.kind);
    let first = first_probe_delay(settings.initial_delay, task.running_for);
    let mut next = tokio::time::Instant::now() + first;
    loop {
        tokio::select! {
            _ = token.cancelled() => break,
            _ = tokio::time::sleep_until(next) => {}
        }
        next += settings.period;
        let outcome = tokio::select! {
            _ = token.cancelled() => break,
            outcome = check(&task, settings.timeout) => outcome,
        };
        if let Err(message) = &outcome {
            let text = format!("{} probe failed: {message}", task.kind.label());
            task.reporter.event(
                &task.pod,
                Some(&task.container.name),
                "Warning",
                "Unhealthy",
                &text,
            );
        }
        debug!(container = %task.container.name, kind = ?task.kind, ok = outcome.is_ok(), "probe");
        if let Some(success) = tracker.record(outcome.is_ok()) {
            let update = ProbeUpdate {
                container_id: task.container_id.clone(),
                kind: task.kind,
                success,
            };
            if updates.send(update).is_err() {
                break;
            }
        }
    }
}

/// One probe attempt by whichever mechanism the spec names.
async fn check(task: &ProbeTask, timeout: Duration) -> Result<(), String> {
    let probe = &task.probe;
    if let Some(exec) = &probe.exec {
        let argv = exec.command.clone().unwrap_or_default();
        return exec_check(task.runtime.as_ref(), &task.container_id, argv, timeout).await;
    }
    if let Some(http) = &probe.http_get {
        return http_get(http, &task.container, &task.pod_ip, timeout).await;
    }
    if let Some(tcp) = &probe.tcp_socket {
        let host = tcp.host.clone().unwrap_or_else(|| task.pod_ip.clone());
        let port = resolve_port(&tcp.port, &task.container)?;
        return tcp_check(&host, port, timeout).await;
    }
    Err("probe has no handler (grpc is not supported by minik)".into())
}

/// `exec`: the command exits 0.
pub async fn exec_check(
    runtime: &dyn Runtime,
    id: &str,
    argv: Vec<String>,
    timeout: Duration,
) -> Result<(), String> {
    match runtime.exec_sync(id, argv, timeout).await {
        Ok(result) if result.exit_code == 0 => Ok(()),
        Ok(result) => Err(format!(
            "command exited with {}: {}",
            result.exit_code,
            result.output.trim()
        )),
        Err(error) => Err(error.to_string()),
    }
}

/// `httpGet`: a status in 200–399 (to `host`, default the pod IP).
pub async fn http_get(
    action: &HTTPGetAction,
    container: &Container,
    pod_ip: &str,
    timeout: Duration,
) -> Result<(), String> {
    match http_status(action, container, pod_ip, timeout).await? {
        status if (200..400).contains(&status) => Ok(()),
        status => Err(format!("HTTP probe failed with statuscode: {status}")),
    }
}

/// Sends the `httpGet` request; the status of any answer, or why none came.
pub async fn http_status(
    action: &HTTPGetAction,
    container: &Container,
    pod_ip: &str,
    timeout: Duration,
) -> Result<u16, String> {
    let port = resolve_port(&action.port, container)?;
    let host = action.host.clone().unwrap_or_else(|| pod_ip.to_string());
    let path = action.path.clone().unwrap_or_else(|| "/".into());
    let path = if path.starts_with('/') {
        path
    } else {
        format!("/{path}")
    };
    let url = format!("http://{host}:{port}{path}");
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .build()
        .map_err(|e| e.to_string())?;
    let mut request = client
        .get(&url)
        .header("User-Agent", "kube-probe/1.32")
        .header("Accept", "*/*");
    for header in action.http_headers.iter().flatten() {
        request = request.header(header.name.as_str(), header.value.as_str());
    }
    match request.send().await {
        Ok(response) => Ok(response.status().as_u16()),
        Err(error) => Err(format!("Get \"{url}\": {error}")),
    }
}

/// `tcpSocket`: the connection opens within the timeout.
pub async fn tcp_check(host: &str, port: u16, timeout: Duration) -> Result<(), String> {
    match tokio::time::timeout(timeout, tokio::net::TcpStream::connect((host, port))).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(error)) => Err(format!("dial tcp {host}:{port}: {error}")),
        Err(_) => Err(format!("dial tcp {host}:{port}: i/o timeout")),
    }
}

/// A port given as a number or as the name of one of the container's ports.
pub fn resolve_port(port: &IntOrString, container: &Container) -> Result<u16, String> {
    let number = match port {
        IntOrString::Int(n) => *n,
        IntOrString::String(name) => match name.parse::<i32>() {
            Ok(n) => n,
            Err(_) => container
                .ports
                .iter()
                .flatten()
                .find(|p| p.name.as_deref() == Some(name.as_str()))
                .map(|p| p.container_port)
                .ok_or_else(|| {
                    format!("port {name:?} not found in container {}", container.name)
                })?,
        },
    };
    u16::try_from(number)
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("invalid port {number}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ContainerPort;

    fn settings(success: u32, failure: u32) -> ProbeSettings {
        ProbeSettings {
            initial_delay: Duration::ZERO,
            period: Duration::from_secs(1),
            timeout: Duration::from_secs(1),
            success_threshold: success,
            failure_threshold: failure,
        }
    }

    #[test]
    fn defaults_follow_kubernetes() {
        let s = ProbeSettings::from_probe(&Probe::default(), ProbeKind::Readiness);
        assert_eq!(
            s,
            ProbeSettings {
                period: Duration::from_secs(10),
                ..settings(1, 3)
            }
        );
        let liveness = Probe {
            success_threshold: Some(5),
            ..Default::default()
        };
        assert_eq!(
            ProbeSettings::from_probe(&liveness, ProbeKind::Liveness).success_threshold,
            1
        );
    }

    #[test]
    fn initial_delay_counts_from_the_container_start() {
        let secs = Duration::from_secs;
        assert_eq!(first_probe_delay(secs(5), Duration::ZERO), secs(5));
        // postStart took 3 s of the 5: two are left.
        assert_eq!(first_probe_delay(secs(5), secs(3)), secs(2));
        // postStart outlasted the delay: probe at once.
        assert_eq!(first_probe_delay(secs(5), secs(8)), Duration::ZERO);
    }

    #[test]
    fn readiness_starts_failing_and_passes_after_success_threshold() {
        let mut tracker = ProbeTracker::new(settings(2, 3), ProbeKind::Readiness);
        assert_eq!(tracker.record(true), None);
        assert_eq!(tracker.record(true), Some(true));
        assert_eq!(tracker.record(true), None, "only flips are reported");
    }

    #[test]
    fn liveness_fails_only_after_consecutive_failures() {
        let mut tracker = ProbeTracker::new(settings(1, 3), ProbeKind::Liveness);
        assert_eq!(tracker.record(false), None);
        assert_eq!(tracker.record(false), None);
        assert_eq!(
            tracker.record(true),
            None,
            "a success resets the failure count"
        );
        assert_eq!(tracker.record(false), None);
        assert_eq!(tracker.record(false), None);
        assert_eq!(tracker.record(false), Some(false));
    }

    #[test]
    fn startup_passes_on_first_success() {
        let mut tracker = ProbeTracker::new(settings(1, 30), ProbeKind::Startup);
        assert_eq!(tracker.record(false), None);
        assert_eq!(tracker.record(true), Some(true));
    }

    #[test]
    fn named_ports_resolve_from_the_container() {
        let container = Container {
            name: "web".into(),
            ports: Some(vec![ContainerPort {
                name: Some("http".into()),
                container_port: 8080,
                ..Default::default()
            }]),
            ..Default::default()
        };
        assert_eq!(
            resolve_port(&IntOrString::String("http".into()), &container),
            Ok(8080)
        );
        assert_eq!(resolve_port(&IntOrString::Int(81), &container), Ok(81));
        assert!(resolve_port(&IntOrString::String("nope".into()), &container).is_err());
    }

    /// A one-shot HTTP server answering `status` to every request; returns its port.
    async fn http_server(status: u16) -> u16 {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let mut buffer = [0u8; 1024];
                let _ = socket.read(&mut buffer).await;
                let answer = format!(
                    "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                );
                let _ = socket.write_all(answer.as_bytes()).await;
            }
        });
        port
    }

    #[tokio::test]
    async fn http_probe_passes_on_2xx_3xx_and_fails_otherwise() {
        let action = |port: u16| HTTPGetAction {
            port: IntOrString::Int(i32::from(port)),
            ..Default::default()
        };
        let timeout = Duration::from_secs(2);
        for (status, ok) in [(200, true), (302, true), (404, false), (500, false)] {
            let port = http_server(status).await;
            let result = http_get(&action(port), &Container::default(), "127.0.0.1", timeout).await;
            assert_eq!(result.is_ok(), ok, "status {status}: {result:?}");
        }
    }

    #[tokio::test]
    async fn tcp_probe_passes_on_a_listening_port_and_fails_on_a_closed_one() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        assert!(tcp_check("127.0.0.1", port, Duration::from_secs(1))
            .await
            .is_ok());
        drop(listener);
        assert!(tcp_check("127.0.0.1", port, Duration::from_secs(1))
            .await
            .is_err());
    }
}
