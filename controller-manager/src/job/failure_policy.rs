//! A Job's `podFailurePolicy`: what a failed pod means, rule by rule.
//!
//! Kubernetes counterpart: `pkg/controller/job/pod_failure_policy.go` (`matchPodFailurePolicy`,
//! `matchOnExitCodes`, `matchOnPodConditions`, `getMatchingContainerFromList`). The first rule
//! that matches decides: `FailJob` fails the Job at once (FailureTarget, reason
//! `PodFailurePolicy`), `Ignore` does not count the failure against `backoffLimit` (the pod is
//! replaced), `Count` counts it as usual; no match counts it too. `onExitCodes` looks at the
//! terminated containers (init containers first) whose exit code is not 0, optionally only the one
//! named; `onPodConditions` at the pod's conditions (a `DisruptionTarget` of an eviction). With a
//! policy, a pod counts as failed only once it reached phase Failed (`podReplacementPolicy:
//! Failed`).
//!
//! minik simplifies: no `FailIndex` (it needs `backoffLimitPerIndex`, which minik does not run).

use k8s_openapi::api::batch::v1::{PodFailurePolicy, PodFailurePolicyRule};
use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

use super::decide::{pod_state, PodState, Uncounted};

/// What the policy says about one failed pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Fail the Job; the message names the pod and the rule.
    FailJob(String),
    /// Do not count the failure.
    Ignore,
    /// Count the failure (a `Count` rule, or no rule matched).
    Count,
}

/// `matchPodFailurePolicy`: the verdict of the first matching rule.
pub fn evaluate(policy: &PodFailurePolicy, pod: &Pod) -> Verdict {
    for (index, rule) in policy.rules.iter().enumerate() {
        let Some(why) = matches(rule, pod) else {
            continue;
        };
        return match rule.action.as_str() {
            "FailJob" => Verdict::FailJob(format!("{why} matching FailJob rule at index {index}")),
            "Ignore" => Verdict::Ignore,
            _ => Verdict::Count,
        };
    }
    Verdict::Count
}

/// Why the rule matches the pod (the start of upstream's message), or `None`.
fn matches(rule: &PodFailurePolicyRule, pod: &Pod) -> Option<String> {
    let key = format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    );
    if let Some(requirement) = &rule.on_exit_codes {
        let status = pod.status.as_ref()?;
        let containers = status
            .init_container_statuses
            .iter()
            .flatten()
            .chain(status.container_statuses.iter().flatten());
        let matching = containers.filter(|c| {
            requirement
                .container_name
                .as_ref()
                .is_none_or(|name| *name == c.name)
        });
        for container in matching {
            let Some(code) = exit_code(container).filter(|code| *code != 0) else {
                continue;
            };
            let listed = requirement.values.contains(&code);
            let hit = match requirement.operator.as_str() {
                "In" => listed,
                "NotIn" => !listed,
                _ => false,
            };
            if hit {
                return Some(format!(
                    "Container {} for pod {key} failed with exit code {code}",
                    container.name
                ));
            }
        }
        return None;
    }
    let patterns = rule.on_pod_conditions.as_ref()?;
    let conditions = pod.status.as_ref()?.conditions.as_ref()?;
    patterns.iter().find_map(|pattern| {
        conditions
            .iter()
            .any(|c| c.type_ == pattern.type_ && c.status == pattern.status)
            .then(|| format!("Pod {key} has condition {} matching", pattern.type_))
    })
}

/// What the policy did to a sync's newly failed pods.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Uids of the failures not counted: their finalizers go, their pods are replaced.
    pub ignored: Vec<String>,
    /// The first FailJob message, if a rule failed the Job.
    pub fail_job: Option<String>,
}

/// Applies the policy to the newly failed pods of `fresh` (by uid among `pods`): a pod still
/// terminating waits for phase Failed, an ignored one leaves `fresh.failed`.
pub fn apply(policy: &PodFailurePolicy, pods: &[&Pod], fresh: &mut Uncounted) -> Outcome {
    let mut outcome = Outcome::default();
    for uid in fresh.failed.clone() {
        let Some(pod) = pods
            .iter()
            .find(|p| p.metadata.uid.as_deref() == Some(&uid))
        else {
            continue;
        };
        if pod_state(pod) != PodState::Failed {
            fresh.failed.remove(&uid);
            continue;
        }
        match evaluate(policy, pod) {
            Verdict::Ignore => {
                fresh.failed.remove(&uid);
                outcome.ignored.push(uid);
            }
            Verdict::FailJob(message) => {
                outcome.fail_job.get_or_insert(message);
            }
            Verdict::Count => {}
        }
    }
    outcome
}

fn exit_code(container: &ContainerStatus) -> Option<i32> {
    container
        .state
        .as_ref()?
        .terminated
        .as_ref()
        .map(|t| t.exit_code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn policy(rules: serde_json::Value) -> PodFailurePolicy {
        serde_json::from_value(json!({ "rules": rules })).unwrap()
    }

    fn failed(code: i32, conditions: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "pi-x", "namespace": "default"},
            "status": {"phase": "Failed", "conditions": conditions,
                       "containerStatuses": [{"name": "main", "image": "busybox", "imageID": "",
                           "ready": false, "restartCount": 0,
                           "state": {"terminated": {"exitCode": code}}}]}
        }))
        .unwrap()
    }

    #[test]
    fn the_first_matching_rule_decides() {
        let rules = policy(json!([
            {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
            {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1]}}
        ]));
        assert_eq!(
            evaluate(&rules, &failed(42, json!([]))),
            Verdict::FailJob(
                "Container main for pod default/pi-x failed with exit code 42 matching FailJob rule at index 0"
                    .into()
            )
        );
        let evicted = failed(137, json!([{"type": "DisruptionTarget", "status": "True"}]));
        assert_eq!(evaluate(&rules, &evicted), Verdict::Ignore);
        assert_eq!(evaluate(&rules, &failed(3, json!([]))), Verdict::Count);
        assert_eq!(
            evaluate(&rules, &failed(1, json!([]))),
            Verdict::Count,
            "no rule matched"
        );
    }

    #[test]
    fn exit_code_zero_never_matches_and_other_containers_are_skipped() {
        let not_in = policy(
            json!([{"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [5]}}]),
        );
        assert_eq!(evaluate(&not_in, &failed(0, json!([]))), Verdict::Count);
        let other = policy(json!([{"action": "FailJob",
            "onExitCodes": {"containerName": "sidecar", "operator": "In", "values": [42]}}]));
        assert_eq!(evaluate(&other, &failed(42, json!([]))), Verdict::Count);
    }
}
