//! Table tests of the disruption arithmetic: every form of the spec, evictions that expire,
//! terminating pods, and a budget whose scale cannot be known.

use super::*;
use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use k8s_openapi::api::policy::v1::PodDisruptionBudgetSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn budget(min: Option<IntOrString>, max: Option<IntOrString>) -> PodDisruptionBudget {
    PodDisruptionBudget {
        metadata: ObjectMeta {
            name: Some("web".into()),
            generation: Some(2),
            ..Default::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            min_available: min,
            max_unavailable: max,
            ..Default::default()
        }),
        status: None,
    }
}

fn pod(name: &str, ready: bool) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        status: Some(PodStatus {
            phase: Some("Running".into()),
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

fn int(n: i32) -> Option<IntOrString> {
    Some(IntOrString::Int(n))
}

fn percent(text: &str) -> Option<IntOrString> {
    Some(IntOrString::String(text.into()))
}

/// (spec, ready pods of 3 found, the controllers' scale) → (expected, desired, allowed).
#[test]
fn every_form_of_the_spec_gives_upstreams_counts() {
    let table = [
        (budget(int(2), None), 3, 5, (3, 2, 1)),
        (budget(int(3), None), 3, 5, (3, 3, 0)),
        (budget(percent("50%"), None), 3, 3, (3, 2, 1)),
        (budget(None, int(1)), 3, 3, (3, 2, 1)),
        (budget(None, percent("34%")), 3, 3, (3, 1, 2)),
        (budget(None, int(5)), 3, 3, (3, 0, 3)),
        (budget(int(2), None), 1, 3, (3, 2, 0)),
        (budget(int(0), None), 0, 0, (3, 0, 0)),
    ];
    for (pdb, ready, scale, (expected, desired, allowed)) in table {
        let pods: Vec<Pod> = (0..3).map(|i| pod(&format!("p{i}"), i < ready)).collect();
        let refs: Vec<&Pod> = pods.iter().collect();
        let (status, _) = next_status(&pdb, &refs, || Ok(scale), Timestamp::now());
        let spec = pdb.spec.as_ref().unwrap();
        let got = (
            status.expected_pods,
            status.desired_healthy,
            status.disruptions_allowed,
        );
        assert_eq!(got, (expected, desired, allowed), "{spec:?} ready {ready}");
        assert_eq!(status.current_healthy, ready);
        assert_eq!(status.observed_generation, Some(2));
    }
}

#[test]
fn a_number_needs_no_scale_but_a_percentage_does() {
    let pods = [pod("a", true)];
    let refs: Vec<&Pod> = pods.iter().collect();
    let failing = || Err("found no controllers for pod \"a\"".to_string());
    let (status, _) = next_status(&budget(int(1), None), &refs, failing, Timestamp::now());
    assert_eq!(status.disruptions_allowed, 0);
    assert_eq!(status.current_healthy, 1);
    let (status, _) = next_status(&budget(None, int(1)), &refs, failing, Timestamp::now());
    let condition = &status.conditions.unwrap()[0];
    assert_eq!(
        (condition.reason.as_str(), condition.message.as_str()),
        (SYNC_FAILED, "found no controllers for pod \"a\"")
    );
    assert_eq!(status.disruptions_allowed, 0);
}

#[test]
fn a_just_evicted_pod_is_not_healthy_until_its_eviction_expires() {
    let now = Timestamp::from_second(10_000).unwrap();
    let pods = [pod("a", true), pod("b", true), pod("c", true)];
    let refs: Vec<&Pod> = pods.iter().collect();
    let mut pdb = budget(int(2), None);
    let evicted = BTreeMap::from([("a".to_string(), Time(now))]);
    pdb.status = Some(PodDisruptionBudgetStatus {
        disrupted_pods: Some(evicted),
        ..Default::default()
    });
    let (status, recheck) = next_status(&pdb, &refs, || Ok(3), now);
    assert_eq!((status.current_healthy, status.disruptions_allowed), (2, 0));
    assert_eq!(recheck, Some(now + SignedDuration::from_secs(120)));
    let later = now + SignedDuration::from_secs(121);
    let (status, recheck) = next_status(&pdb, &refs, || Ok(3), later);
    assert_eq!((status.current_healthy, status.disruptions_allowed), (3, 1));
    assert_eq!((status.disrupted_pods, recheck), (None, None));
}

#[test]
fn terminating_pods_are_not_healthy() {
    let mut going = pod("a", true);
    going.metadata.deletion_timestamp = Some(Time(Timestamp::now()));
    let pods = [going, pod("b", true)];
    let refs: Vec<&Pod> = pods.iter().collect();
    let (status, _) = next_status(&budget(int(1), None), &refs, || Ok(2), Timestamp::now());
    assert_eq!((status.current_healthy, status.disruptions_allowed), (1, 0));
}
