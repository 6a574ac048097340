//! Tests of the HPA arithmetic against upstream's replica calculator cases.

use super::*;

fn pod(request: i64, usage: Option<i64>, ready: bool) -> PodSample {
    PodSample {
        request_milli: Some(request),
        usage_milli: usage,
        ready,
    }
}

#[test]
fn usage_above_target_scales_to_the_ratio_times_the_pods() {
    // Three pods at 100 % of a 50 % target: ratio 2, so 6 replicas.
    let pods = [
        pod(100, Some(100), true),
        pod(100, Some(100), true),
        pod(100, Some(100), true),
    ];
    let got = cpu_replicas(3, 50, &pods).unwrap();
    assert_eq!(
        (got.replicas, got.utilization, got.average_milli),
        (6, 100, 100)
    );
}

#[test]
fn within_the_ten_percent_tolerance_nothing_changes() {
    let pods = [pod(100, Some(54), true), pod(100, Some(54), true)];
    assert_eq!(cpu_replicas(2, 50, &pods).unwrap().replicas, 2);
    let pods = [pod(100, Some(56), true), pod(100, Some(56), true)];
    assert_eq!(cpu_replicas(2, 50, &pods).unwrap().replicas, 3);
}

#[test]
fn idle_pods_scale_down() {
    let pods = [
        pod(100, Some(10), true),
        pod(100, Some(10), true),
        pod(100, Some(10), true),
        pod(100, Some(10), true),
    ];
    // ratio 0.2 × 4 pods = 0.8 → 1.
    assert_eq!(cpu_replicas(4, 50, &pods).unwrap().replicas, 1);
}

#[test]
fn pods_without_metrics_count_against_the_direction_of_the_change() {
    // Scaling up: the missing pod counts as idle. 2 × 100 over 3 × 100 requests at 50 %: 1.33 → 4.
    let pods = [
        pod(100, Some(100), true),
        pod(100, Some(100), true),
        pod(100, None, true),
    ];
    assert_eq!(cpu_replicas(3, 50, &pods).unwrap().replicas, 4);
    // Scaling down: the missing pod counts as fully used, which here flips to up: no change.
    let pods = [pod(100, Some(10), true), pod(100, None, true)];
    assert_eq!(cpu_replicas(2, 50, &pods).unwrap().replicas, 2);
}

#[test]
fn unready_pods_only_dampen_a_scale_up() {
    // One busy ready pod, one unready: scaling up counts the unready one as idle: 1.0 → no change.
    let pods = [pod(100, Some(100), true), pod(100, Some(0), false)];
    assert_eq!(cpu_replicas(2, 50, &pods).unwrap().replicas, 2);
    // Scaling down ignores it: 10 % of a 50 % target over one pod → 1.
    let pods = [pod(100, Some(10), true), pod(100, None, false)];
    assert_eq!(cpu_replicas(2, 50, &pods).unwrap().replicas, 1);
}

#[test]
fn missing_requests_and_missing_metrics_are_errors() {
    let no_request = PodSample {
        request_milli: None,
        usage_milli: Some(5),
        ready: true,
    };
    assert_eq!(
        cpu_replicas(1, 50, &[no_request]),
        Err(CalcError::MissingRequest)
    );
    assert_eq!(
        cpu_replicas(1, 50, &[pod(100, None, true)]),
        Err(CalcError::NoMetrics)
    );
}

#[test]
fn scale_down_waits_for_the_highest_recommendation_of_its_window() {
    let behavior = Behavior {
        down_window: Duration::from_secs(10),
        ..Behavior::default()
    };
    let start = Instant::now();
    let mut history = History::new();
    assert_eq!(
        stabilize(&mut history, start, 1, 5, &behavior),
        5,
        "up at once"
    );
    let later = start + Duration::from_secs(5);
    assert_eq!(
        stabilize(&mut history, later, 5, 1, &behavior),
        5,
        "5 is still in the window"
    );
    let after = start + Duration::from_secs(11);
    assert_eq!(
        stabilize(&mut history, after, 5, 1, &behavior),
        1,
        "the window has passed"
    );
}

#[test]
fn a_step_is_bounded_by_the_policies_then_by_min_and_max() {
    let behavior = Behavior::default();
    // Up: max(+100 %, +4 pods) from 1 is 5.
    assert_eq!(step_limits(1, &behavior), (5, 0));
    assert_eq!(bound(1, 9, 1, 10, &behavior), (5, Limited::UpLimit));
    assert_eq!(bound(4, 9, 1, 6, &behavior), (6, Limited::TooMany));
    assert_eq!(bound(3, 0, 1, 6, &behavior), (1, Limited::TooFew));
    assert_eq!(bound(3, 4, 1, 6, &behavior), (4, Limited::No));
    let gentle = Behavior {
        down_policies: vec![(true, 1)],
        ..Behavior::default()
    };
    assert_eq!(bound(5, 1, 1, 10, &gentle), (4, Limited::DownLimit));
}
