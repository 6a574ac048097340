//! What happens to the pods of a node that is not Ready: pure functions.
//!
//! Kubernetes counterpart: `MarkPodsNotReady` (`pkg/controller/util/node/controller_utils.go`) and
//! the taint eviction controller (`pkg/controller/tainteviction/taint_eviction.go`:
//! `processPodOnNode`, `getMinTolerationTime`).
//!
//! - [`needs_not_ready`]: a pod whose Ready condition is not False gets `Ready=False`, so the
//!   endpoint controller drops it at once (docs/workloads.md#nl8);
//! - [`eviction`]: a pod that does not tolerate one of the node's NoExecute taints goes now; one
//!   that tolerates them all goes after the smallest `tolerationSeconds` of the tolerations used,
//!   counted from when the taints were added; none set means never (NL10).
//!
//! minik simplifies: the countdown starts at the taint's `timeAdded` (upstream: when the
//! controller first processed the pod), so a restarted controller keeps the same deadline.

use std::time::Duration;

use jiff::Timestamp;
use minik_api::core::{Pod, Taint};
use minik_api::taints::toleration_tolerates;

/// What taint eviction decides for one pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eviction {
    /// The pod tolerates every NoExecute taint for ever (or there is none).
    Never,
    /// Delete it now.
    Now,
    /// Delete it once this much more time has passed.
    After(Duration),
}

/// Whether the pod's Ready condition must be set to False (it has one, and it is not False).
pub fn needs_not_ready(pod: &Pod) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_deref());
    conditions
        .unwrap_or_default()
        .iter()
        .any(|c| c.type_ == "Ready" && c.status != "False")
}

/// Whether the pod has finished or is already being deleted: eviction leaves it alone.
pub fn is_gone(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    pod.metadata.deletion_timestamp.is_some() || matches!(phase, Some("Succeeded" | "Failed"))
}

/// When the pod must be evicted because of `taints` (the node's NoExecute ones). `since` is when
/// this controller first saw them: it stands in for a missing `timeAdded`, and refines one that
/// lies in the same second.
pub fn eviction(pod: &Pod, taints: &[&Taint], since: Timestamp, now: Timestamp) -> Eviction {
    if taints.is_empty() {
        return Eviction::Never;
    }
    let tolerations = pod
        .spec
        .as_ref()
        .and_then(|s| s.tolerations.as_deref())
        .unwrap_or_default();
    let mut used = Vec::new();
    for taint in taints {
        let value = taint.value.as_deref().unwrap_or("");
        let matching: Vec<_> = tolerations
            .iter()
            .filter(|t| toleration_tolerates(t, &taint.key, value, &taint.effect))
            .collect();
        if matching.is_empty() {
            return Eviction::Now;
        }
        used.extend(matching);
    }
    // `getMinTolerationTime`: tolerations without seconds tolerate for ever.
    let Some(seconds) = used.iter().filter_map(|t| t.toleration_seconds).min() else {
        return Eviction::Never;
    };
    let added = taints
        .iter()
        .filter_map(|t| t.time_added.as_ref().map(|time| time.0))
        .min()
        .unwrap_or(since);
    // `timeAdded` is stored to the second; the controller's own sighting refines it.
    let refined = added
        .checked_add(jiff::SignedDuration::from_secs(1))
        .is_ok_and(|next| since >= added && since < next);
    let added = if refined { since } else { added };
    let deadline = added
        .checked_add(jiff::SignedDuration::from_secs(seconds.max(0)))
        .unwrap_or(Timestamp::MAX);
    match Duration::try_from(now.duration_until(deadline)) {
        Ok(left) if left > Duration::ZERO => Eviction::After(left),
        _ => Eviction::Now,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use minik_api::core::{PodCondition, PodSpec, PodStatus, Toleration};
    use minik_api::meta::Time;
    use minik_api::taints::{TAINT_NOT_READY, TAINT_UNREACHABLE};

    fn pod(tolerations: Vec<Toleration>) -> Pod {
        Pod {
            spec: Some(PodSpec {
                tolerations: Some(tolerations),
                ..PodSpec::default()
            }),
            ..Pod::default()
        }
    }

    fn toleration(key: &str, seconds: Option<i64>) -> Toleration {
        Toleration {
            key: Some(key.into()),
            operator: Some("Exists".into()),
            effect: Some("NoExecute".into()),
            toleration_seconds: seconds,
            ..Toleration::default()
        }
    }

    fn taint(key: &str, added: Timestamp) -> Taint {
        Taint {
            key: key.into(),
            effect: "NoExecute".into(),
            time_added: Some(Time(added)),
            value: None,
        }
    }

    #[test]
    fn a_tolerated_taint_evicts_after_the_toleration_counted_from_time_added() {
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let unreachable = taint(TAINT_UNREACHABLE, t0);
        let default = pod(vec![
            toleration(TAINT_NOT_READY, Some(300)),
            toleration(TAINT_UNREACHABLE, Some(300)),
        ]);
        let at = |secs: i64| t0 + jiff::SignedDuration::from_secs(secs);
        assert_eq!(
            eviction(&default, &[&unreachable], t0, at(100)),
            Eviction::After(Duration::from_secs(200))
        );
        assert_eq!(
            eviction(&default, &[&unreachable], t0, at(300)),
            Eviction::Now
        );
        let forever = pod(vec![toleration(TAINT_UNREACHABLE, None)]);
        assert_eq!(
            eviction(&forever, &[&unreachable], t0, at(9999)),
            Eviction::Never
        );
        let negative = pod(vec![toleration(TAINT_UNREACHABLE, Some(-5))]);
        assert_eq!(eviction(&negative, &[&unreachable], t0, t0), Eviction::Now);
    }

    #[test]
    fn an_untolerated_taint_evicts_now_and_no_taint_never() {
        let t0: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let bare = pod(vec![]);
        assert_eq!(
            eviction(&bare, &[&taint(TAINT_UNREACHABLE, t0)], t0, t0),
            Eviction::Now
        );
        assert_eq!(eviction(&bare, &[], t0, t0), Eviction::Never);
        // The smallest toleration of those used wins.
        let both = pod(vec![
            toleration(TAINT_UNREACHABLE, Some(60)),
            toleration("", Some(10)),
        ]);
        assert_eq!(
            eviction(&both, &[&taint(TAINT_UNREACHABLE, t0)], t0, t0),
            Eviction::After(Duration::from_secs(10))
        );
    }

    #[test]
    fn only_a_pod_that_is_ready_is_marked_not_ready() {
        let with_ready = |status: &str| Pod {
            status: Some(PodStatus {
                conditions: Some(vec![PodCondition {
                    type_: "Ready".into(),
                    status: status.into(),
                    ..PodCondition::default()
                }]),
                ..PodStatus::default()
            }),
            ..Pod::default()
        };
        assert!(needs_not_ready(&with_ready("True")));
        assert!(!needs_not_ready(&with_ready("False")));
        assert!(!needs_not_ready(&Pod::default()));
    }
}
