//! Tests of the correlator: repeats patch, similar events combine, the spam filter limits.

use super::*;
use minik_api::core::{EventSource, ObjectReference};

fn event(reason: &str, message: &str) -> Event {
    Event {
        metadata: minik_api::meta::ObjectMeta {
            name: Some(format!("web.{message}")),
            namespace: Some("default".into()),
            ..Default::default()
        },
        involved_object: ObjectReference {
            kind: Some("Pod".into()),
            name: Some("web".into()),
            namespace: Some("default".into()),
            uid: Some("u1".into()),
            ..Default::default()
        },
        type_: Some("Warning".into()),
        reason: Some(reason.into()),
        message: Some(message.into()),
        count: Some(1),
        source: Some(EventSource {
            component: Some("kubelet".into()),
            host: Some("node-1".into()),
        }),
        ..Default::default()
    }
}

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).unwrap()
}

fn written(correlator: &mut Correlator, decision: &Decision) {
    match decision {
        Decision::Create(event) | Decision::Patch { event, .. } => correlator.written(event),
        Decision::Skip => {}
    }
}

#[test]
fn a_repeated_event_patches_the_first_object_with_a_growing_count() {
    let mut correlator = Correlator::new(Options::default());
    let first = correlator.correlate(event("BackOff", "Back-off restarting"), at(0));
    let Decision::Create(created) = &first else {
        panic!("{first:?}")
    };
    written(&mut correlator, &first);
    for (n, second) in [(2, 10), (3, 20)] {
        let again = correlator.correlate(event("BackOff", "Back-off restarting"), at(second));
        let Decision::Patch { event, patch } = &again else {
            panic!("{again:?}")
        };
        assert_eq!(
            event.metadata.name, created.metadata.name,
            "the same object"
        );
        assert_eq!(patch["count"], n);
        assert_eq!(event.first_timestamp, created.first_timestamp);
        assert_eq!(
            patch["lastTimestamp"],
            serde_json::to_value(Time(at(second))).unwrap()
        );
        written(&mut correlator, &again);
    }
}

#[test]
fn a_different_message_is_a_new_event_until_ten_are_combined() {
    let mut correlator = Correlator::new(Options::default());
    for n in 0..9 {
        let decision = correlator.correlate(event("Failed", &format!("error {n}")), at(n));
        assert!(matches!(decision, Decision::Create(_)), "{n}: {decision:?}");
        written(&mut correlator, &decision);
    }
    let tenth = correlator.correlate(event("Failed", "error 9"), at(9));
    let Decision::Create(combined) = &tenth else {
        panic!("{tenth:?}")
    };
    assert_eq!(
        combined.message.as_deref(),
        Some("(combined from similar events): error 9")
    );
    written(&mut correlator, &tenth);
    let eleventh = correlator.correlate(event("Failed", "error 10"), at(10));
    let Decision::Patch {
        event: patched,
        patch,
    } = &eleventh
    else {
        panic!("{eleventh:?}")
    };
    assert_eq!(patched.metadata.name, combined.metadata.name);
    assert_eq!(patch["count"], 2);
    assert_eq!(patch["message"], "(combined from similar events): error 10");
    // Another reason is counted apart.
    let other = correlator.correlate(event("Killing", "error 11"), at(11));
    assert!(matches!(other, Decision::Create(ref e) if e.message.as_deref() == Some("error 11")));
}

#[test]
fn similar_events_are_counted_per_ten_minutes() {
    let mut correlator = Correlator::new(Options::default());
    for n in 0..9 {
        correlator.correlate(event("Failed", &format!("error {n}")), at(n));
    }
    let later = correlator.correlate(event("Failed", "error 9"), at(9 + 601));
    assert!(matches!(later, Decision::Create(ref e) if e.message.as_deref() == Some("error 9")));
}

#[test]
fn the_spam_filter_allows_a_burst_of_25_then_one_per_five_minutes() {
    let mut correlator = Correlator::new(Options::default());
    let decisions: Vec<Decision> = (0..30)
        .map(|n| correlator.correlate(event(&format!("R{n}"), "m"), at(0)))
        .collect();
    assert_eq!(
        decisions.iter().filter(|d| **d != Decision::Skip).count(),
        25
    );
    assert_eq!(
        correlator.correlate(event("R30", "m"), at(299)),
        Decision::Skip
    );
    assert!(correlator.correlate(event("R31", "m"), at(301)) != Decision::Skip);
    // Another object has its own bucket.
    let mut other = event("R0", "m");
    other.involved_object.name = Some("db".into());
    assert!(correlator.correlate(other, at(301)) != Decision::Skip);
}
