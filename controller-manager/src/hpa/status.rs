//! The HPA's inputs read from objects, and its status written back: pure functions.
//!
//! Kubernetes counterpart: `pkg/controller/podautoscaler/horizontal.go` (`setCondition`,
//! `setCurrentReplicasAndMetricsInStatus`, `setStatus`) and `replica_calculator.go`
//! (`calculatePodRequests`, `groupPods`), and metrics-server's quantities as the metrics client
//! reads them (`pkg/controller/podautoscaler/metrics/client.go`).

use std::collections::HashMap;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::autoscaling::v2::{
    HPAScalingRules, HorizontalPodAutoscaler, HorizontalPodAutoscalerCondition,
    HorizontalPodAutoscalerSpec, HorizontalPodAutoscalerStatus, MetricStatus, MetricValueStatus,
    ResourceMetricStatus,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use minik_api::core::Pod;
use serde_json::Value;

use super::replicas::{Behavior, Limited, Recommendation};

/// What one sync found, for the status.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The target's replicas before the sync.
    pub current: i32,
    /// What it should have now.
    pub desired: i32,
    /// The metric's reading, if one was made.
    pub recommendation: Option<Recommendation>,
    /// Why `desired` was bounded.
    pub limited: Limited,
    /// A failure: (condition type, reason, message).
    pub failure: Option<(&'static str, String, String)>,
    /// The scale was written this sync.
    pub rescaled: bool,
    /// The stabilised recommendation, before the step and min/max bounds.
    pub stabilized: i32,
}

impl Outcome {
    /// A computed count.
    pub fn computed(
        current: i32,
        desired: i32,
        recommendation: Recommendation,
        limited: Limited,
    ) -> Outcome {
        Outcome {
            current,
            desired,
            recommendation: Some(recommendation),
            limited,
            failure: None,
            rescaled: false,
            stabilized: desired,
        }
    }

    /// A failure before a count was computed; `FailedGetScale` is about scaling, the rest about metrics.
    pub fn failed(reason: &str, message: &str, current: i32) -> Outcome {
        let condition = if reason == "FailedGetScale" {
            "AbleToScale"
        } else {
            "ScalingActive"
        };
        Outcome {
            current,
            desired: current,
            recommendation: None,
            limited: Limited::No,
            failure: Some((condition, reason.into(), message.into())),
            rescaled: false,
            stabilized: current,
        }
    }

    /// The scale could not be written.
    pub fn failed_update(message: &str, current: i32) -> Outcome {
        Outcome {
            failure: Some(("AbleToScale", "FailedUpdateScale".into(), message.into())),
            ..Outcome::failed("", "", current)
        }
    }

    /// The target has 0 replicas: autoscaling is off until it has some.
    pub fn disabled(current: i32) -> Outcome {
        let message = "scaling is disabled since the replica count of the target is zero";
        Outcome::failed("ScalingDisabled", message, current)
    }
}

/// The CPU utilisation target, percent (the one metric minik's HPA supports).
pub fn cpu_target(spec: &HorizontalPodAutoscalerSpec) -> Option<i32> {
    let metrics = spec.metrics.as_deref().unwrap_or_default();
    if metrics.is_empty() {
        return Some(80); // upstream's default when no metric is given
    }
    metrics.iter().find_map(|m| {
        let resource = m.resource.as_ref().filter(|_| m.type_ == "Resource")?;
        (resource.name == "cpu" && resource.target.type_ == "Utilization").then_some(())?;
        resource.target.average_utilization
    })
}

fn rules(
    rules: Option<&HPAScalingRules>,
    window: &mut Duration,
    policies: &mut Vec<(bool, i32)>,
    select_min: &mut bool,
) {
    let Some(rules) = rules else { return };
    if let Some(seconds) = rules.stabilization_window_seconds {
        *window = Duration::from_secs(seconds.max(0) as u64);
    }
    if let Some(list) = &rules.policies {
        *policies = list.iter().map(|p| (p.type_ == "Pods", p.value)).collect();
    }
    *select_min = rules.select_policy.as_deref() == Some("Min");
}

/// `spec.behavior` with upstream's defaults for what it leaves out.
pub fn behavior(spec: &HorizontalPodAutoscalerSpec) -> Behavior {
    let mut b = Behavior::default();
    let given = spec.behavior.as_ref();
    rules(
        given.and_then(|g| g.scale_up.as_ref()),
        &mut b.up_window,
        &mut b.up_policies,
        &mut b.up_select_min,
    );
    rules(
        given.and_then(|g| g.scale_down.as_ref()),
        &mut b.down_window,
        &mut b.down_policies,
        &mut b.down_select_min,
    );
    b
}

/// A CPU quantity in millicores (`250m`, `1`, `1.5`, `123456n`, `5u`).
pub fn cpu_milli(text: &str) -> Option<i64> {
    let (number, factor) = match text.char_indices().last()? {
        (i, 'n') => (&text[..i], 1e-6),
        (i, 'u') => (&text[..i], 1e-3),
        (i, 'm') => (&text[..i], 1.0),
        _ => (text, 1000.0),
    };
    Some((number.parse::<f64>().ok()? * factor).round() as i64)
}

/// The sum of a pod's containers' CPU requests; `None` if one has none.
pub fn cpu_request_milli(pod: &Pod) -> Option<i64> {
    let containers = &pod.spec.as_ref()?.containers;
    containers
        .iter()
        .map(|c| cpu_milli(&c.resources.as_ref()?.requests.as_ref()?.get("cpu")?.0))
        .sum()
}

/// Whether a pod is Ready.
pub fn is_ready(pod: &Pod) -> bool {
    let conditions = pod.status.as_ref().and_then(|s| s.conditions.as_ref());
    conditions.is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// Whether a pod counts at all: not being deleted, not Failed (`groupPods` ignores those).
pub fn counts(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    pod.metadata.deletion_timestamp.is_none() && phase != Some("Failed")
}

/// Each pod's CPU usage in millicores, from a PodMetricsList.
pub fn usage_by_pod(list: &Value) -> HashMap<String, i64> {
    let items = list
        .get("items")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    items
        .iter()
        .filter_map(|item| {
            let name = item.pointer("/metadata/name")?.as_str()?.to_string();
            let containers = item.get("containers")?.as_array()?;
            let milli = containers
                .iter()
                .map(|c| cpu_milli(c.pointer("/usage/cpu")?.as_str()?))
                .sum::<Option<i64>>()?;
            Some((name, milli))
        })
        .collect()
}

fn condition(
    old: Option<&HorizontalPodAutoscalerStatus>,
    type_: &str,
    ok: bool,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> HorizontalPodAutoscalerCondition {
    let status = if ok { "True" } else { "False" };
    let previous = old
        .and_then(|s| s.conditions.as_ref())
        .and_then(|c| c.iter().find(|c| c.type_ == type_));
    let since = match previous {
        Some(p) if p.status == status => p.last_transition_time.clone(),
        _ => Some(Time(now)),
    };
    HorizontalPodAutoscalerCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_transition_time: since,
    }
}

fn limited_condition(limited: Limited) -> (bool, &'static str, &'static str) {
    match limited {
        Limited::No => (
            false,
            "DesiredWithinRange",
            "the desired count is within the acceptable range",
        ),
        Limited::TooMany => (
            true,
            "TooManyReplicas",
            "the desired replica count is more than the maximum replica count",
        ),
        Limited::TooFew => (
            true,
            "TooFewReplicas",
            "the desired replica count is less than the minimum replica count",
        ),
        Limited::UpLimit => (
            true,
            "ScaleUpLimit",
            "the desired replica count is increasing faster than the maximum scale rate",
        ),
        Limited::DownLimit => (
            true,
            "ScaleDownLimit",
            "the desired replica count is decreasing faster than the maximum scale rate",
        ),
    }
}

/// The status after a sync with `outcome`.
pub fn next_status(
    hpa: &HorizontalPodAutoscaler,
    outcome: &Outcome,
    now: Timestamp,
) -> HorizontalPodAutoscalerStatus {
    let old = hpa.status.as_ref();
    let mut conditions = Vec::new();
    let cond = |t: &str, ok: bool, reason: &str, message: &str| {
        condition(old, t, ok, reason, message, now)
    };
    match &outcome.failure {
        Some((type_, reason, message)) => {
            if *type_ == "ScalingActive" {
                conditions.push(cond(
                    "AbleToScale",
                    true,
                    "SucceededGetScale",
                    "the HPA controller was able to get the target's current scale",
                ));
            }
            conditions.push(cond(type_, false, reason, message));
        }
        None => {
            let (reason, message) = if outcome.rescaled {
                (
                    "SucceededRescale".to_string(),
                    format!(
                        "the HPA controller was able to update the target scale to {}",
                        outcome.desired
                    ),
                )
            } else if outcome
                .recommendation
                .is_some_and(|r| r.replicas < outcome.stabilized)
            {
                ("ScaleDownStabilized".into(), "recent recommendations were higher than current one, applying the highest recent recommendation".into())
            } else {
                (
                    "ReadyForNewScale".into(),
                    "recommended size matches current size".into(),
                )
            };
            conditions.push(cond("AbleToScale", true, &reason, &message));
            conditions.push(cond("ScalingActive", true, "ValidMetricFound", "the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)"));
            let (limited, reason, message) = limited_condition(outcome.limited);
            conditions.push(cond("ScalingLimited", limited, reason, message));
        }
    }
    let current_metrics = outcome.recommendation.map(|r| {
        vec![MetricStatus {
            type_: "Resource".into(),
            resource: Some(ResourceMetricStatus {
                name: "cpu".into(),
                current: MetricValueStatus {
                    average_utilization: Some(r.utilization),
                    average_value: Some(Quantity(format!("{}m", r.average_milli))),
                    value: None,
                },
            }),
            ..MetricStatus::default()
        }]
    });
    let last_scale_time = if outcome.rescaled {
        Some(Time(now))
    } else {
        old.and_then(|s| s.last_scale_time.clone())
    };
    HorizontalPodAutoscalerStatus {
        current_replicas: Some(outcome.current),
        desired_replicas: outcome.desired,
        current_metrics: current_metrics.or_else(|| old.and_then(|s| s.current_metrics.clone())),
        conditions: Some(conditions),
        last_scale_time,
        observed_generation: hpa.metadata.generation,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_quantities_become_millicores() {
        assert_eq!(cpu_milli("250m"), Some(250));
        assert_eq!(cpu_milli("1"), Some(1000));
        assert_eq!(cpu_milli("1.5"), Some(1500));
        assert_eq!(cpu_milli("123456789n"), Some(123));
        assert_eq!(cpu_milli("5000u"), Some(5));
        assert_eq!(cpu_milli("x"), None);
    }

    #[test]
    fn a_pod_metrics_list_sums_each_pods_containers() {
        let list = serde_json::json!({"items": [
            {"metadata": {"name": "a"}, "containers": [{"usage": {"cpu": "100m"}}, {"usage": {"cpu": "50000000n"}}]},
            {"metadata": {"name": "b"}, "containers": [{"usage": {"cpu": "0"}}]},
        ]});
        let usage = usage_by_pod(&list);
        assert_eq!((usage["a"], usage["b"]), (150, 0));
    }

    #[test]
    fn a_rescale_sets_the_conditions_and_keeps_transition_times_of_unchanged_ones() {
        let hpa = HorizontalPodAutoscaler::default();
        let earlier = Timestamp::from_second(1_000).unwrap();
        let recommendation = Recommendation {
            replicas: 3,
            utilization: 150,
            average_milli: 150,
        };
        let mut outcome = Outcome::computed(1, 3, recommendation, Limited::No);
        outcome.rescaled = true;
        let first = next_status(&hpa, &outcome, earlier);
        let find = |s: &HorizontalPodAutoscalerStatus, t: &str| {
            s.conditions
                .as_ref()
                .unwrap()
                .iter()
                .find(|c| c.type_ == t)
                .cloned()
                .unwrap()
        };
        assert_eq!(
            find(&first, "AbleToScale").reason.as_deref(),
            Some("SucceededRescale")
        );
        assert_eq!(find(&first, "ScalingLimited").status, "False");
        assert_eq!(first.desired_replicas, 3);
        assert_eq!(
            first.current_metrics.as_ref().unwrap()[0]
                .resource
                .as_ref()
                .unwrap()
                .current
                .average_utilization,
            Some(150)
        );
        let hpa = HorizontalPodAutoscaler {
            status: Some(first),
            ..HorizontalPodAutoscaler::default()
        };
        let later = Timestamp::from_second(2_000).unwrap();
        let steady = Outcome::computed(
            3,
            3,
            Recommendation {
                replicas: 3,
                ..recommendation
            },
            Limited::TooMany,
        );
        let second = next_status(&hpa, &steady, later);
        assert_eq!(
            find(&second, "ScalingActive").last_transition_time,
            Some(Time(earlier))
        );
        assert_eq!(
            find(&second, "ScalingLimited").last_transition_time,
            Some(Time(later))
        );
        assert_eq!(
            find(&second, "ScalingLimited").reason.as_deref(),
            Some("TooManyReplicas")
        );
        assert_eq!(second.last_scale_time, Some(Time(earlier)));
    }
}
