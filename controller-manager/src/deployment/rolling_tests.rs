//! Table tests of the rollout arithmetic, with upstream's worked examples.

use super::*;

fn pct(text: &str) -> IntOrString {
    IntOrString::String(text.into())
}

fn rs(name: &str, spec: i32, available: i32, created: i64) -> Rs {
    Rs {
        name: name.into(),
        spec,
        available,
        created,
        ..Rs::default()
    }
}

fn scales(pairs: &[(&str, i32)]) -> Vec<Scale> {
    pairs
        .iter()
        .map(|(name, n)| (name.to_string(), *n))
        .collect()
}

/// DP5–DP6: surge rounds up, unavailable down; both zero makes unavailable 1.
#[test]
fn fenceposts_round_as_upstream() {
    let cases = [
        (pct("25%"), pct("25%"), 1, (1, 0)),
        (pct("25%"), pct("25%"), 3, (1, 0)),
        (pct("25%"), pct("25%"), 4, (1, 1)),
        (pct("25%"), pct("25%"), 10, (3, 2)),
        (IntOrString::Int(0), IntOrString::Int(0), 10, (0, 1)),
        (pct("0%"), pct("1%"), 10, (0, 1)),
        (pct("100%"), IntOrString::Int(0), 10, (10, 0)),
        (IntOrString::Int(0), IntOrString::Int(1), 3, (0, 1)),
    ];
    for (surge, unavailable, replicas, expected) in cases {
        assert_eq!(
            resolve_fenceposts(Some(&surge), Some(&unavailable), replicas),
            expected,
            "{surge:?}/{unavailable:?} of {replicas}"
        );
    }
    assert_eq!(
        resolve_fenceposts(None, None, 10),
        (3, 2),
        "defaults are 25%/25%"
    );
    let clamped = rollout(
        2,
        Some((Some(&IntOrString::Int(0)), Some(&IntOrString::Int(5)))),
    );
    assert_eq!(
        clamped.max_unavailable, 2,
        "MaxUnavailable is clamped to replicas"
    );
    assert_eq!(
        rollout(5, None),
        Rollout {
            replicas: 5,
            max_surge: 0,
            max_unavailable: 0
        }
    );
}

/// DP8–DP11: a 10-replica rollout with the defaults (surge 3, unavailable 2), step by step.
#[test]
fn rolling_update_steps() {
    let d = rollout(10, Some((None, None)));
    let cases: Vec<(&str, Rs, Vec<Rs>, Vec<Scale>)> = vec![
        (
            "new RS surges first",
            rs("new", 0, 0, 2),
            vec![rs("old", 10, 10, 1)],
            scales(&[("new", 3)]),
        ),
        (
            "then old goes down to minAvailable",
            rs("new", 3, 0, 2),
            vec![rs("old", 10, 10, 1)],
            scales(&[("old", 8)]),
        ),
        (
            "new grows as old shrank",
            rs("new", 3, 3, 2),
            vec![rs("old", 8, 8, 1)],
            scales(&[("new", 5)]),
        ),
        (
            "available new pods free old ones",
            rs("new", 5, 5, 2),
            vec![rs("old", 8, 8, 1)],
            scales(&[("old", 3)]),
        ),
        (
            "unavailable new pods block old scale-down",
            rs("new", 5, 0, 2),
            vec![rs("old", 8, 8, 1)],
            vec![],
        ),
        (
            "unhealthy old pods go first, oldest RS first",
            rs("new", 3, 0, 3),
            vec![rs("old-b", 8, 8, 2), rs("old-a", 2, 0, 1)],
            scales(&[("old-a", 0)]),
        ),
        (
            "a new RS above replicas comes down",
            rs("new", 12, 12, 2),
            vec![],
            scales(&[("new", 10)]),
        ),
        (
            "complete: nothing to do",
            rs("new", 10, 10, 2),
            vec![rs("old", 0, 0, 1)],
            vec![],
        ),
    ];
    for (name, new, old, expected) in cases {
        assert_eq!(rolling_step(&d, &new, &old), expected, "{name}");
    }
}

/// maxSurge 0 / maxUnavailable 1: old goes first, one pod at a time; maxSurge 100%: all new at once.
#[test]
fn surge_and_unavailable_extremes() {
    let no_surge = rollout(
        3,
        Some((Some(&IntOrString::Int(0)), Some(&IntOrString::Int(1)))),
    );
    assert_eq!(
        rolling_step(&no_surge, &rs("new", 0, 0, 2), &[rs("old", 3, 3, 1)]),
        scales(&[("old", 2)])
    );
    assert_eq!(
        rolling_step(&no_surge, &rs("new", 0, 0, 2), &[rs("old", 2, 2, 1)]),
        scales(&[("new", 1)])
    );
    let full_surge = rollout(10, Some((Some(&pct("100%")), Some(&IntOrString::Int(0)))));
    assert_eq!(
        rolling_step(&full_surge, &rs("new", 0, 0, 2), &[rs("old", 10, 10, 1)]),
        scales(&[("new", 10)])
    );
}

/// DP16, upstream's documented example: 10 → 15 replicas (maxSurge 3) mid-rollout with old 8 and
/// new 5 (max-replicas 13): 5 more pods split 3 to old and 2 to new.
#[test]
fn proportional_scaling_splits_by_size() {
    let d = Rollout {
        replicas: 15,
        max_surge: 3,
        max_unavailable: 2,
    };
    let old = Rs {
        max: Some(13),
        desired: Some(10),
        ..rs("old", 8, 8, 1)
    };
    let new = Rs {
        max: Some(13),
        desired: Some(10),
        ..rs("new", 5, 0, 2)
    };
    assert_eq!(
        proportional_scale(&d, true, 13, Some(&new), std::slice::from_ref(&old)),
        scales(&[("new", 7), ("old", 11)])
    );
    assert!(is_scaling_event(15, &[old, new]));
    let down = Rollout {
        replicas: 0,
        max_surge: 0,
        max_unavailable: 0,
    };
    let old = Rs {
        max: Some(13),
        ..rs("old", 8, 8, 1)
    };
    let new = Rs {
        max: Some(13),
        ..rs("new", 5, 0, 2)
    };
    assert_eq!(
        proportional_scale(&down, true, 13, Some(&new), &[old]),
        scales(&[("new", 0), ("old", 0)])
    );
}

/// DP15: one active RS takes the new size; a saturated new RS zeroes the old ones.
#[test]
fn single_active_or_saturated_replica_sets() {
    let d = Rollout {
        replicas: 20,
        max_surge: 5,
        max_unavailable: 5,
    };
    assert_eq!(
        proportional_scale(
            &d,
            true,
            10,
            Some(&rs("new", 10, 10, 2)),
            &[rs("old", 0, 0, 1)]
        ),
        scales(&[("new", 20)])
    );
    let d = Rollout {
        replicas: 10,
        max_surge: 3,
        max_unavailable: 2,
    };
    let saturated = Rs {
        desired: Some(10),
        ..rs("new", 10, 10, 2)
    };
    assert_eq!(
        proportional_scale(&d, true, 12, Some(&saturated), &[rs("old", 2, 2, 1)]),
        scales(&[("old", 0)])
    );
    assert!(!is_scaling_event(10, &[saturated]));
}
