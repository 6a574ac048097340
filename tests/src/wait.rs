//! Waiting for the cluster to reach a state: on a watch, always with a timeout, never a sleep.
//!
//! Kubernetes counterpart: the e2e framework's `WaitForPodCondition` / `WaitForPodNotFound`
//! (`test/e2e/framework/pod/wait.go`). The waiting itself is `minik_client::wait` (client-go's
//! `watchtools.UntilWithSync`: list, then watch, the condition checked on the listed state and on
//! each event after it, so a state reached before the wait starts is seen too); this module adds
//! the timeout every test needs and an error that names what was awaited.
//!
//! [`eventually`] is the one exception: for conditions no watch can tell (an HTTP answer, a
//! process in `/proc`, a line in a log file) it checks every 50 ms until the deadline. Use it only
//! for those.

use std::future::Future;
use std::time::Duration;

use minik_api::core::Pod;
use minik_client::{wait, Api, ListParams, Object};

use crate::error::{Error, Result};

/// How often [`eventually`] checks.
const EVENTUALLY_INTERVAL: Duration = Duration::from_millis(50);

/// Waits until the object `name` exists and `condition` holds for it; returns that version.
pub async fn wait_for<K, F>(api: &Api<K>, name: &str, condition: F, timeout: Duration) -> Result<K>
where
    K: Object + k8s_openapi::ListableResource,
    F: FnMut(&K) -> bool,
{
    let what = format!("{} {name}", K::KIND);
    within(what, timeout, wait::await_condition(api, name, condition)).await
}

/// Waits until the object `name` does not exist (it may already be gone).
pub async fn wait_deleted<K>(api: &Api<K>, name: &str, timeout: Duration) -> Result<()>
where
    K: Object + k8s_openapi::ListableResource,
{
    let what = format!("{} {name} to be deleted", K::KIND);
    within(what, timeout, wait::await_deleted(api, name)).await
}

/// Waits until `condition` holds for the whole set of objects matching `lp` (e.g. "3 pods are
/// Running"); returns that set, sorted by namespace and name.
pub async fn wait_for_all<K, F>(
    api: &Api<K>,
    lp: ListParams,
    condition: F,
    timeout: Duration,
) -> Result<Vec<K>>
where
    K: Object + k8s_openapi::ListableResource,
    F: FnMut(&[K]) -> bool,
{
    let what = format!("a set of {} objects", K::KIND);
    within(what, timeout, wait::await_all(api, lp, condition)).await
}

/// One of `minik_client::wait`'s waits, bounded by `timeout`.
async fn within<T>(
    what: String,
    timeout: Duration,
    wait: impl Future<Output = Option<T>>,
) -> Result<T> {
    match tokio::time::timeout(timeout, wait).await {
        Ok(Some(found)) => Ok(found),
        Ok(None) => Err(Error::WatchEnded(what)),
        Err(_) => Err(Error::Timeout { what, timeout }),
    }
}

/// Checks `check` every 50 ms until it returns `Some`, or fails after `timeout`. Only for
/// conditions no watch can report (HTTP answers, `/proc`, log files): `what` names it in the error.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let poll = async {
        loop {
            if let Some(value) = check().await {
                return value;
            }
            tokio::time::sleep(EVENTUALLY_INTERVAL).await;
        }
    };
    tokio::time::timeout(timeout, poll)
        .await
        .map_err(|_| Error::Timeout {
            what: what.into(),
            timeout,
        })
}

/// Pod predicates for [`wait_for`], named as kubectl shows the states.
pub mod pod {
    use super::Pod;

    /// `status.phase`, or "" before the kubelet reported.
    pub fn phase(pod: &Pod) -> &str {
        pod.status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("")
    }

    /// Phase Running with an IP.
    pub fn is_running(pod: &Pod) -> bool {
        phase(pod) == "Running" && ip(pod).is_some()
    }

    /// Bound to a node.
    pub fn is_scheduled(pod: &Pod) -> bool {
        node(pod).is_some()
    }

    /// The `Ready` condition is True.
    pub fn is_ready(pod: &Pod) -> bool {
        condition(pod, "Ready") == Some("True")
    }

    /// Phase Succeeded or Failed.
    pub fn is_finished(pod: &Pod) -> bool {
        matches!(phase(pod), "Succeeded" | "Failed")
    }

    /// The status of a pod condition (`PodScheduled`, `Ready`, …).
    pub fn condition<'a>(pod: &'a Pod, type_: &str) -> Option<&'a str> {
        let conditions = pod.status.as_ref()?.conditions.as_ref()?;
        conditions
            .iter()
            .find(|c| c.type_ == type_)
            .map(|c| c.status.as_str())
    }

    /// The reason of a pod condition (`Unschedulable`).
    pub fn condition_reason<'a>(pod: &'a Pod, type_: &str) -> Option<&'a str> {
        let conditions = pod.status.as_ref()?.conditions.as_ref()?;
        conditions
            .iter()
            .find(|c| c.type_ == type_)?
            .reason
            .as_deref()
    }

    /// `status.podIP`.
    pub fn ip(pod: &Pod) -> Option<&str> {
        pod.status.as_ref()?.pod_ip.as_deref()
    }

    /// `spec.nodeName`.
    pub fn node(pod: &Pod) -> Option<&str> {
        pod.spec.as_ref()?.node_name.as_deref()
    }

    /// The first container's status.
    pub fn container(pod: &Pod) -> Option<&k8s_openapi::api::core::v1::ContainerStatus> {
        pod.status.as_ref()?.container_statuses.as_ref()?.first()
    }

    /// The first container's waiting reason (`CrashLoopBackOff`, `ErrImagePull` …).
    pub fn waiting_reason(pod: &Pod) -> Option<&str> {
        container(pod)?
            .state
            .as_ref()?
            .waiting
            .as_ref()?
            .reason
            .as_deref()
    }

    /// The first container's restart count.
    pub fn restarts(pod: &Pod) -> i32 {
        container(pod).map(|c| c.restart_count).unwrap_or(0)
    }

    /// The first container's exit code, once terminated.
    pub fn exit_code(pod: &Pod) -> Option<i32> {
        container(pod)?
            .state
            .as_ref()?
            .terminated
            .as_ref()
            .map(|t| t.exit_code)
    }
}
