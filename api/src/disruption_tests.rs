//! Tests of the eviction rules: the 429 and its cause, budgets not yet observed, pods that ignore
//! budgets, unready pods, and the condition's transition time.

use super::*;
use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn budget(allowed: i32, generation: i64, observed: i64) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some("web".into()),
            generation: Some(generation),
            ..Default::default()
        },
        spec: None,
        status: Some(PodDisruptionBudgetStatus {
            disruptions_allowed: allowed,
            current_healthy: 2 + allowed,
            desired_healthy: 2,
            expected_pods: 2 + allowed,
            observed_generation: Some(observed),
            ..Default::default()
        }),
    }
}

fn pod(phase: &str, ready: bool) -> Pod {
    Pod {
        status: Some(PodStatus {
            phase: Some(phase.into()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn an_allowed_eviction_takes_one_disruption_and_records_the_pod() {
    let now = Timestamp::now();
    let next = check_and_decrement(&budget(1, 1, 1), "web-a", now).unwrap();
    assert_eq!(next.disruptions_allowed, 0);
    assert!(next.disrupted_pods.unwrap().contains_key("web-a"));
    let condition = &next.conditions.unwrap()[0];
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("False", INSUFFICIENT_PODS)
    );
}

#[test]
fn no_disruption_left_is_a_429_naming_the_budget() {
    let answer = check_and_decrement(&budget(0, 1, 1), "web-a", Timestamp::now()).unwrap_err();
    assert_eq!(answer.code, Some(429));
    assert_eq!(answer.message.as_deref(), Some(VIOLATION));
    let cause = &answer.details.unwrap().causes.unwrap()[0];
    assert_eq!(cause.reason.as_deref(), Some("DisruptionBudget"));
    assert_eq!(
        cause.message.as_deref(),
        Some("The disruption budget web needs 2 healthy pods and has 2 currently")
    );
}

#[test]
fn a_budget_not_yet_observed_is_a_429_and_a_negative_one_a_403() {
    let unobserved = check_and_decrement(&budget(3, 2, 1), "p", Timestamp::now()).unwrap_err();
    assert_eq!(unobserved.code, Some(429));
    let negative = check_and_decrement(&budget(-1, 1, 1), "p", Timestamp::now()).unwrap_err();
    assert_eq!(negative.code, Some(403));
}

#[test]
fn terminal_pending_and_terminating_pods_ignore_budgets() {
    assert!(can_ignore_budget(&pod("Succeeded", false)));
    assert!(can_ignore_budget(&pod("Pending", false)));
    assert!(!can_ignore_budget(&pod("Running", true)));
    let mut terminating = pod("Running", true);
    terminating.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
    assert!(can_ignore_budget(&terminating));
}

#[test]
fn an_unready_pod_goes_freely_only_while_the_budget_is_healthy() {
    let healthy = budget(1, 1, 1);
    assert!(unready_pod_may_go(&pod("Running", false), &healthy));
    assert!(!unready_pod_may_go(&pod("Running", true), &healthy));
    let mut short = budget(0, 1, 1);
    short.status.as_mut().unwrap().current_healthy = 1;
    assert!(!unready_pod_may_go(&pod("Running", false), &short));
}

#[test]
fn the_condition_keeps_its_transition_time_while_its_status_holds() {
    let (then, later) = (
        Timestamp::from_second(1_000).unwrap(),
        Timestamp::from_second(2_000).unwrap(),
    );
    let mut status = PodDisruptionBudgetStatus {
        disruptions_allowed: 1,
        ..Default::default()
    };
    set_disruption_allowed_condition(&mut status, then);
    set_disruption_allowed_condition(&mut status, later);
    let condition = &status.conditions.as_ref().unwrap()[0];
    assert_eq!(condition.last_transition_time, Time(then));
    status.disruptions_allowed = 0;
    set_disruption_allowed_condition(&mut status, later);
    let condition = &status.conditions.as_ref().unwrap()[0];
    assert_eq!(
        (condition.status.as_str(), &condition.last_transition_time),
        ("False", &Time(later))
    );
}
