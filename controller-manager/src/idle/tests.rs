//! The idle rule's decisions, without a cluster.

use super::*;

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).unwrap()
}

fn record(open: u32, since: i64) -> PodConnections {
    PodConnections {
        open,
        since: at(since),
    }
}

const MINUTE: Duration = Duration::from_secs(60);

#[test]
fn an_open_connection_keeps_it_whatever_the_time() {
    let records = [record(0, 0), record(1, 5)];
    assert_eq!(decide(at(10_000), MINUTE, at(0), &records), Idle::Active);
}

#[test]
fn idle_is_counted_from_the_last_close() {
    let records = [record(0, 100), record(0, 130)];
    // 50 s after the last close: 10 s to go.
    assert_eq!(
        decide(at(180), MINUTE, at(0), &records),
        Idle::Wait(Duration::from_secs(10))
    );
    assert_eq!(
        decide(at(190), MINUTE, at(0), &records),
        Idle::ScaleToZero {
            idle_since: at(130)
        }
    );
}

#[test]
fn without_any_connection_the_clock_starts_at_the_newest_pod() {
    assert_eq!(
        decide(at(59), MINUTE, at(0), &[]),
        Idle::Wait(Duration::from_secs(1))
    );
    assert_eq!(
        decide(at(60), MINUTE, at(0), &[]),
        Idle::ScaleToZero { idle_since: at(0) }
    );
    // A pod newer than the last close restarts the clock (scaled up again by hand).
    assert_eq!(
        decide(at(100), MINUTE, at(90), &[record(0, 10)]),
        Idle::Wait(Duration::from_secs(50))
    );
}

#[test]
fn the_annotation_takes_humantime_durations() {
    let mut deployment = Deployment::default();
    assert_eq!(idle_after(&deployment), None);
    let annotations = [(ANNOTATION.to_string(), "90s".to_string())];
    deployment.metadata.annotations = Some(annotations.into_iter().collect());
    assert_eq!(idle_after(&deployment), Some(Duration::from_secs(90)));
    let bad = [(ANNOTATION.to_string(), "soon".to_string())];
    deployment.metadata.annotations = Some(bad.into_iter().collect());
    assert_eq!(idle_after(&deployment), None);
}
