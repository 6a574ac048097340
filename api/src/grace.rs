//! Grace periods: how long a pod gets to stop, decided in one place.
//!
//! Kubernetes counterpart: upstream spreads the rule over three components:
//!
//! - the API server, on a DELETE: `CheckGracefulDelete` in `pkg/registry/core/pod/strategy.go`
//!   picks the grace, and `BeforeDelete` in `k8s.io/apiserver/pkg/registry/rest/delete.go` lets a
//!   repeated DELETE only shorten it;
//! - the kubelet, terminating a pod: `calculateEffectiveGracePeriod` in
//!   `pkg/kubelet/pod_workers.go`, where the API server's `deletionGracePeriodSeconds` is the
//!   "bedrock truth";
//! - the kubelet, killing one container (a failed liveness probe, say):
//!   `setTerminationGracePeriod` in `pkg/kubelet/kuberuntime/kuberuntime_container.go`.
//!
//! minik writes them all here as pure functions over [`PodGrace`], the four fields of a pod that
//! matter. The API server holds pods as JSON and the kubelet as typed objects; both views turn
//! into a `PodGrace`, so the two sides cannot disagree on the rule. Every case is a row of the
//! table tests at the bottom of this file.
//!
//! The rules, in short:
//!
//! 1. A DELETE uses `gracePeriodSeconds` from its `DeleteOptions` if given, else the pod's
//!    `spec.terminationGracePeriodSeconds`, else 30 (the default defaulting writes).
//! 2. A pod that is not scheduled (`spec.nodeName` empty) or already finished (phase `Succeeded`
//!    or `Failed`) is deleted at once: grace 0. No kubelet has anything to stop.
//! 3. A negative grace becomes 1.
//! 4. A DELETE of a pod that is already terminating may only shorten its grace, never lengthen it,
//!    and only with a `gracePeriodSeconds` of its own: without one, the pending grace stands.
//! 5. The kubelet stops a terminating pod within its `deletionGracePeriodSeconds` (else the
//!    spec's, else 30), and never gives less than 1 s: a force delete (grace 0) still gets 1 s.
//!
//! minik simplifies: no kubelet-side overrides (eviction's shorter grace), and 0 from the API
//! server is never "kill without a signal" on the node (see rule 5).

use serde_json::Value;

use crate::core::Pod;

/// `spec.terminationGracePeriodSeconds` when a pod does not say (`SetDefaults_PodSpec`).
pub const DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS: i64 = 30;

/// The fields of a pod that decide its grace period.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PodGrace<'a> {
    /// `spec.terminationGracePeriodSeconds`: what the pod asks for.
    pub termination_grace_period_seconds: Option<i64>,
    /// `metadata.deletionGracePeriodSeconds`: what the API server granted (set once deleted).
    pub deletion_grace_period_seconds: Option<i64>,
    /// `spec.nodeName` (empty: not scheduled).
    pub node_name: &'a str,
    /// `status.phase` (empty: not reported yet).
    pub phase: &'a str,
}

impl<'a> From<&'a Pod> for PodGrace<'a> {
    fn from(pod: &'a Pod) -> Self {
        let spec = pod.spec.as_ref();
        PodGrace {
            termination_grace_period_seconds: spec.and_then(|s| s.termination_grace_period_seconds),
            deletion_grace_period_seconds: pod.metadata.deletion_grace_period_seconds,
            node_name: spec.and_then(|s| s.node_name.as_deref()).unwrap_or(""),
            phase: pod
                .status
                .as_ref()
                .and_then(|s| s.phase.as_deref())
                .unwrap_or(""),
        }
    }
}

/// The API server's view: a pod as stored JSON.
impl<'a> From<&'a Value> for PodGrace<'a> {
    fn from(pod: &'a Value) -> Self {
        let text = |value: &'a Value| value.as_str().unwrap_or("");
        PodGrace {
            termination_grace_period_seconds: pod["spec"]["terminationGracePeriodSeconds"].as_i64(),
            deletion_grace_period_seconds: pod["metadata"]["deletionGracePeriodSeconds"].as_i64(),
            node_name: text(&pod["spec"]["nodeName"]),
            phase: text(&pod["status"]["phase"]),
        }
    }
}

impl PodGrace<'_> {
    /// The spec's grace, or the default 30.
    fn spec_grace(&self) -> i64 {
        self.termination_grace_period_seconds
            .unwrap_or(DEFAULT_TERMINATION_GRACE_PERIOD_SECONDS)
    }
}

/// The grace a DELETE gives a pod (rules 1-3, `CheckGracefulDelete`): `requested` is
/// `DeleteOptions.gracePeriodSeconds`. 0 means "remove the object now".
pub fn delete_grace<'a>(pod: impl Into<PodGrace<'a>>, requested: Option<i64>) -> i64 {
    let pod = pod.into();
    let grace = requested.unwrap_or_else(|| pod.spec_grace());
    // "If the pod is not scheduled, delete immediately"; a finished pod has nothing left to stop.
    if pod.node_name.is_empty() || pod.phase == "Succeeded" || pod.phase == "Failed" {
        return 0;
    }
    if grace < 0 {
        1
    } else {
        grace
    }
}

/// Whether a DELETE with grace `proposed` changes a deletion already pending with grace
/// `current` (rule 4): `deletionGracePeriodSeconds` "may only be shortened".
pub fn shortens(current: i64, proposed: i64) -> bool {
    proposed < current
}

/// The `deletionGracePeriodSeconds` a pod carries once this DELETE is done: its own pending
/// grace if it is already terminating and this DELETE does not shorten it. 0: removed at once
/// (unless finalizers hold it). A client waiting for pods to go uses this as its bound.
pub fn grace_after_delete<'a>(pod: impl Into<PodGrace<'a>>, requested: Option<i64>) -> i64 {
    let pod = pod.into();
    let grace = delete_grace(pod, requested);
    match pod.deletion_grace_period_seconds {
        // Terminating with time left: only a shorter grace replaces it.
        // A DELETE without a grace leaves it alone ("graceful deletion is pending, do nothing"):
        // the spec's grace is not looked at again.
        Some(current) if current > 0 => match requested.is_some() && shortens(current, grace) {
            true => grace,
            false => current,
        },
        // Terminating with no time left: a repeated DELETE removes it now.
        Some(_) => 0,
        None => grace,
    }
}

/// The grace the kubelet gives a terminating pod, in seconds (rule 5,
/// `calculateEffectiveGracePeriod`). `removed_from_api`: the object is already gone (a force
/// delete), so only the grace it carried — if any, and no longer than the spec's — still applies.
pub fn termination_grace<'a>(pod: impl Into<PodGrace<'a>>, removed_from_api: bool) -> i64 {
    let pod = pod.into();
    let grace = match removed_from_api {
        true => pod
            .deletion_grace_period_seconds
            .unwrap_or(0)
            .min(pod.spec_grace()),
        false => pod
            .deletion_grace_period_seconds
            .unwrap_or_else(|| pod.spec_grace()),
    };
    // "No matter what, we always supply a grace period of 1."
    grace.max(1)
}

/// The grace the kubelet gives one container it kills while the pod runs on
/// (`setTerminationGracePeriod`): the pod's deletion grace if it is being deleted, else the
/// probe's own `terminationGracePeriodSeconds` (`probe_grace`, for a liveness or startup probe
/// failure), else the spec's; never less than 1.
pub fn container_kill_grace<'a>(pod: impl Into<PodGrace<'a>>, probe_grace: Option<i64>) -> i64 {
    let pod = pod.into();
    pod.deletion_grace_period_seconds
        .or(probe_grace)
        .unwrap_or_else(|| pod.spec_grace())
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A pod bound to `node-1`, `Running`, with the given spec and deletion graces.
    fn running(spec: Option<i64>, deletion: Option<i64>) -> PodGrace<'static> {
        PodGrace {
            termination_grace_period_seconds: spec,
            deletion_grace_period_seconds: deletion,
            node_name: "node-1",
            phase: "Running",
        }
    }

    #[test]
    fn a_delete_takes_the_request_then_the_spec_then_30() {
        let unscheduled = PodGrace {
            node_name: "",
            phase: "Pending",
            ..running(Some(30), None)
        };
        let succeeded = PodGrace {
            phase: "Succeeded",
            ..running(Some(30), None)
        };
        let failed = PodGrace {
            phase: "Failed",
            ..running(Some(30), None)
        };
        // (pod, DeleteOptions.gracePeriodSeconds, grace, why)
        let table = [
            (running(Some(30), None), None, 30, "the spec's"),
            (running(None, None), None, 30, "the default"),
            (running(Some(12), None), Some(5), 5, "the request wins"),
            (running(Some(12), None), Some(40), 40, "even when longer"),
            (running(Some(12), None), Some(0), 0, "0 removes at once"),
            (running(Some(30), None), Some(-5), 1, "negative becomes 1"),
            (running(Some(-3), None), None, 1, "a negative spec too"),
            (unscheduled, Some(30), 0, "not scheduled: at once"),
            (succeeded, None, 0, "finished: at once"),
            (failed, Some(10), 0, "failed: at once"),
        ];
        for (pod, requested, grace, why) in table {
            assert_eq!(delete_grace(pod, requested), grace, "{why}");
        }
    }

    #[test]
    fn a_second_delete_may_only_shorten() {
        // (pending deletionGracePeriodSeconds, request, grace afterwards, why)
        let table = [
            (None, None, 30, "first delete: the spec's"),
            (Some(100), Some(200), 100, "longer: unchanged"),
            (Some(100), Some(10), 10, "shorter: replaces it"),
            (Some(10), None, 10, "the spec's 30 does not lengthen it"),
            (Some(100), None, 100, "nor does the spec's 30 shorten it"),
            (Some(10), Some(0), 0, "force: at once"),
            (Some(0), None, 0, "nothing left: at once"),
        ];
        for (pending, requested, grace, why) in table {
            let pod = running(Some(30), pending);
            assert_eq!(grace_after_delete(pod, requested), grace, "{why}");
        }
        assert!(shortens(30, 10));
        assert!(!shortens(10, 10));
        assert!(!shortens(10, 30));
    }

    #[test]
    fn the_kubelet_takes_the_deletion_then_the_spec_then_30_and_never_less_than_1() {
        // (spec, deletionGracePeriodSeconds, removed from the API, grace, why)
        let table = [
            (None, None, false, 30, "the default"),
            (Some(12), None, false, 12, "the spec's"),
            (Some(12), Some(4), false, 4, "the API server's"),
            (Some(12), Some(0), false, 1, "never below 1"),
            (Some(12), Some(0), true, 1, "force delete: 1"),
            (Some(12), None, true, 1, "force delete of a running pod: 1"),
            (
                Some(30),
                Some(10),
                true,
                10,
                "removed after a graceful delete",
            ),
            (Some(5), Some(10), true, 5, "no more than the spec's"),
        ];
        for (spec, deletion, removed, grace, why) in table {
            let pod = running(spec, deletion);
            assert_eq!(termination_grace(pod, removed), grace, "{why}");
        }
    }

    #[test]
    fn a_killed_container_takes_the_deletion_then_the_probe_then_the_spec() {
        // (spec, deletionGracePeriodSeconds, probe's grace, grace, why)
        let table = [
            (Some(30), None, None, 30, "the spec's"),
            (None, None, None, 30, "the default"),
            (Some(30), None, Some(5), 5, "the probe's"),
            (Some(30), None, Some(0), 1, "never below 1"),
            (Some(30), Some(3), Some(5), 3, "a deletion wins"),
        ];
        for (spec, deletion, probe, grace, why) in table {
            let pod = running(spec, deletion);
            assert_eq!(container_kill_grace(pod, probe), grace, "{why}");
        }
    }

    #[test]
    fn typed_and_json_pods_give_the_same_view() {
        let json = json!({
            "metadata": {"name": "web", "deletionGracePeriodSeconds": 7},
            "spec": {"nodeName": "node-1", "terminationGracePeriodSeconds": 12,
                     "containers": [{"name": "web", "image": "nginx"}]},
            "status": {"phase": "Running"}
        });
        let typed: Pod = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(PodGrace::from(&typed), running(Some(12), Some(7)));
        assert_eq!(PodGrace::from(&json), running(Some(12), Some(7)));
        assert_eq!(PodGrace::from(&Pod::default()), PodGrace::default());
        assert_eq!(PodGrace::from(&json!({})), PodGrace::default());
    }
}
