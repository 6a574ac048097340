//! The rollout arithmetic: how many pods each ReplicaSet of a Deployment should have this step.
//!
//! Kubernetes counterpart: `pkg/controller/deployment/rolling.go` (`reconcileNewReplicaSet`,
//! `reconcileOldReplicaSets`, `cleanupUnhealthyReplicas`, `scaleDownOldReplicaSetsForRollingUpdate`),
//! `sync.go` (`scale`, `isScalingEvent`) and `util/deployment_util.go` (`ResolveFenceposts`,
//! `NewRSNewReplicas`, `GetProportion`, `IsSaturated`, `FindActiveOrLatest`). Everything here is a
//! pure function of ReplicaSet counts ([`Rs`]), never of pod lists (DP12): a terminating pod is no
//! longer in any count, so live processes may exceed `replicas + maxSurge` while old pods stop.
//!
//! One rolling step (docs/workloads.md#rolling-update):
//!
//! 1. scale the new RS up, within `replicas + maxSurge` pods in all (DP8); if it moved, stop;
//! 2. budget to scale old RSs down: `all − (replicas − maxUnavailable) − unavailable new` (DP9);
//! 3. old RSs' unavailable pods go first, oldest RS first (DP10);
//! 4. then available old pods, while `available > replicas − maxUnavailable` (DP11).

use std::cmp::Ordering;

use minik_api::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// What the arithmetic needs of one ReplicaSet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rs {
    /// Its name, which identifies it in the result.
    pub name: String,
    /// `spec.replicas`.
    pub spec: i32,
    /// `status.availableReplicas`.
    pub available: i32,
    /// `metadata.creationTimestamp` in seconds: older RSs are scaled down first.
    pub created: i64,
    /// The `deployment.kubernetes.io/desired-replicas` annotation.
    pub desired: Option<i32>,
    /// The `deployment.kubernetes.io/max-replicas` annotation.
    pub max: Option<i32>,
}

/// A Deployment's replicas and its resolved fenceposts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rollout {
    /// `spec.replicas`.
    pub replicas: i32,
    /// Pods allowed above `replicas` (0 for Recreate).
    pub max_surge: i32,
    /// Pods allowed below `replicas` (0 for Recreate).
    pub max_unavailable: i32,
}

/// A new `spec.replicas` for the ReplicaSet `name`.
pub type Scale = (String, i32);

/// `ResolveFenceposts` (DP5): surge rounds up, unavailable rounds down, and when both come to 0
/// unavailable becomes 1 so the rollout can move.
pub fn resolve_fenceposts(
    max_surge: Option<&IntOrString>,
    max_unavailable: Option<&IntOrString>,
    replicas: i32,
) -> (i32, i32) {
    let default = IntOrString::String("25%".into());
    let surge = scaled_value(max_surge.unwrap_or(&default), replicas, true);
    let unavailable = scaled_value(max_unavailable.unwrap_or(&default), replicas, false);
    if surge == 0 && unavailable == 0 {
        return (0, 1);
    }
    (surge, unavailable)
}

/// An int, or a percentage of `total` rounded up or down (`GetScaledValueFromIntOrPercent`).
fn scaled_value(value: &IntOrString, total: i32, round_up: bool) -> i32 {
    match value {
        IntOrString::Int(n) => *n,
        IntOrString::String(text) => {
            let percent: i64 = text.trim_end_matches('%').parse().unwrap_or(0);
            let scaled = percent * i64::from(total);
            let value = if round_up {
                (scaled + 99).div_euclid(100)
            } else {
                scaled.div_euclid(100)
            };
            value as i32
        }
    }
}

/// The Deployment's fenceposts: `MaxSurge` and `MaxUnavailable` (clamped to replicas) for
/// RollingUpdate, both 0 for Recreate.
pub fn rollout(
    replicas: i32,
    rolling: Option<(Option<&IntOrString>, Option<&IntOrString>)>,
) -> Rollout {
    match rolling {
        None => Rollout {
            replicas,
            max_surge: 0,
            max_unavailable: 0,
        },
        Some((surge, unavailable)) => {
            let (max_surge, max_unavailable) = resolve_fenceposts(surge, unavailable, replicas);
            let max_unavailable = if replicas == 0 {
                0
            } else {
                max_unavailable.min(replicas)
            };
            Rollout {
                replicas,
                max_surge,
                max_unavailable,
            }
        }
    }
}

fn total_spec<'a>(sets: impl IntoIterator<Item = &'a Rs>) -> i32 {
    sets.into_iter().map(|rs| rs.spec).sum()
}

fn oldest_first(a: &Rs, b: &Rs) -> Ordering {
    a.created.cmp(&b.created).then_with(|| a.name.cmp(&b.name))
}

/// `NewRSNewReplicas` for RollingUpdate (DP8): grow the new RS within `replicas + maxSurge`.
pub fn new_rs_new_replicas(d: &Rollout, all_spec: i32, new_spec: i32) -> i32 {
    let max_total = d.replicas + d.max_surge;
    if all_spec >= max_total {
        return new_spec;
    }
    new_spec + (max_total - all_spec).min(d.replicas - new_spec)
}

/// One rolling-update step (steps 1–4 of the module doc): the scales to apply, empty when the
/// rollout cannot move until pods become available.
pub fn rolling_step(d: &Rollout, new: &Rs, old: &[Rs]) -> Vec<Scale> {
    let all_spec = new.spec + total_spec(old);
    if new.spec != d.replicas {
        let target = if new.spec > d.replicas {
            d.replicas
        } else {
            new_rs_new_replicas(d, all_spec, new.spec)
        };
        if target != new.spec {
            return vec![(new.name.clone(), target)];
        }
    }
    scale_down_old(d, new, old)
}

/// Steps 2–4: the old ReplicaSets' scale-down within the availability budget.
fn scale_down_old(d: &Rollout, new: &Rs, old: &[Rs]) -> Vec<Scale> {
    if total_spec(old) == 0 {
        return Vec::new();
    }
    let all_spec = new.spec + total_spec(old);
    let min_available = d.replicas - d.max_unavailable;
    let new_unavailable = new.spec - new.available;
    let max_scaled_down = all_spec - min_available - new_unavailable;
    if max_scaled_down <= 0 {
        return Vec::new();
    }
    let mut sorted: Vec<Rs> = old.to_vec();
    sorted.sort_by(oldest_first);
    let mut cleaned = 0;
    for rs in sorted.iter_mut() {
        if cleaned >= max_scaled_down {
            break;
        }
        if rs.spec == 0 || rs.spec == rs.available {
            continue;
        }
        let cut = (max_scaled_down - cleaned).min(rs.spec - rs.available);
        rs.spec -= cut;
        cleaned += cut;
    }
    let available: i32 = new.available + old.iter().map(|rs| rs.available).sum::<i32>();
    if available > min_available {
        let budget = available - min_available;
        let mut cut_total = 0;
        for rs in sorted.iter_mut() {
            if cut_total >= budget {
                break;
            }
            if rs.spec == 0 {
                continue;
            }
            let cut = rs.spec.min(budget - cut_total);
            rs.spec -= cut;
            cut_total += cut;
        }
    }
    changed(old, &sorted)
}

/// The entries of `after` whose spec differs from `before`'s.
fn changed(before: &[Rs], after: &[Rs]) -> Vec<Scale> {
    let mut scales: Vec<Scale> = after
        .iter()
        .filter(|rs| {
            before
                .iter()
                .any(|b| b.name == rs.name && b.spec != rs.spec)
        })
        .map(|rs| (rs.name.clone(), rs.spec))
        .collect();
    scales.sort();
    scales
}

/// A scaling event (DP14): an active RS whose desired-replicas annotation is not `replicas`.
pub fn is_scaling_event(replicas: i32, sets: &[Rs]) -> bool {
    sets.iter()
        .filter(|rs| rs.spec > 0)
        .any(|rs| rs.desired.is_some_and(|desired| desired != replicas))
}

/// `IsSaturated`: the new RS runs `replicas` available pods and was sized for them.
pub fn is_saturated(replicas: i32, new: Option<&Rs>) -> bool {
    new.is_some_and(|rs| {
        rs.spec == replicas && rs.desired == Some(replicas) && rs.available == replicas
    })
}

/// Proportional scaling (`scale()`, DP15–DP16) after `replicas` changed; `status_replicas` is the
/// Deployment's `status.replicas`, used for RSs without a max-replicas annotation.
pub fn proportional_scale(
    d: &Rollout,
    rolling: bool,
    status_replicas: i32,
    new: Option<&Rs>,
    old: &[Rs],
) -> Vec<Scale> {
    let all: Vec<&Rs> = old.iter().chain(new).collect();
    if all.is_empty() {
        return Vec::new();
    }
    let active: Vec<&Rs> = all.iter().copied().filter(|rs| rs.spec > 0).collect();
    let active_or_latest = match active.len() {
        0 => new.or_else(|| old.iter().max_by(|a, b| oldest_first(a, b))),
        1 => Some(active[0]),
        _ => None,
    };
    if let Some(rs) = active_or_latest {
        return if rs.spec == d.replicas {
            Vec::new()
        } else {
            vec![(rs.name.clone(), d.replicas)]
        };
    }
    if is_saturated(d.replicas, new) {
        let new_name = new.map(|rs| rs.name.as_str());
        return active
            .iter()
            .filter(|rs| Some(rs.name.as_str()) != new_name)
            .map(|rs| (rs.name.clone(), 0))
            .collect();
    }
    if !rolling {
        return Vec::new();
    }
    let allowed = if d.replicas > 0 {
        d.replicas + d.max_surge
    } else {
        0
    };
    let to_add = allowed - active.iter().map(|rs| rs.spec).sum::<i32>();
    let mut sorted: Vec<Rs> = active.into_iter().cloned().collect();
    sorted.sort_by(|a, b| {
        let by_age = oldest_first(a, b);
        b.spec
            .cmp(&a.spec)
            .then(if to_add > 0 { by_age.reverse() } else { by_age })
    });
    let before = sorted.clone();
    let mut added = 0;
    for rs in sorted.iter_mut() {
        let proportion = proportion(rs, d, to_add, added, status_replicas);
        rs.spec += proportion;
        added += proportion;
    }
    if to_add != 0 {
        sorted[0].spec = (sorted[0].spec + to_add - added).max(0);
    }
    changed(&before, &sorted)
}

/// `GetProportion`: this RS's share of `to_add`, capped by what is left of it.
fn proportion(rs: &Rs, d: &Rollout, to_add: i32, added: i32, status_replicas: i32) -> i32 {
    if rs.spec == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = if d.replicas == 0 {
        -rs.spec
    } else {
        let annotated = rs.max.unwrap_or(status_replicas);
        if annotated <= 0 {
            return 0;
        }
        let size = f64::from(rs.spec) * f64::from(d.replicas + d.max_surge) / f64::from(annotated);
        size.round() as i32 - rs.spec
    };
    let allowed = to_add - added;
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

#[cfg(test)]
#[path = "rolling_tests.rs"]
mod tests;
