//! The HPA's arithmetic: how many replicas a CPU utilisation target asks for, stabilised and bounded.
//!
//! Kubernetes counterpart: `pkg/controller/podautoscaler/replica_calculator.go`
//! (`GetResourceReplicas`, `groupPods`, `calculatePodRequests`) and `horizontal.go`
//! (`stabilizeRecommendationWithBehaviors`, `convertDesiredReplicasWithBehaviorRate`):
//!
//! - usage ratio = (the ready pods' CPU usage / their CPU requests) / target utilisation;
//! - within the 10 % tolerance nothing changes; otherwise `ceil(ratio × ready pods)`;
//! - pods without metrics count as using 100 % of their request when scaling down and 0 % when
//!   scaling up; not-yet-ready pods count as 0 % when scaling up (and are ignored otherwise); if
//!   that flips the direction, or lands within tolerance, nothing changes;
//! - the recommendation is stabilised: scale up to the lowest recommendation of the scale-up
//!   window (default 0 s), down to the highest of the scale-down window (default 300 s);
//! - one step is bounded by the behaviour's policies (default up: max(+100 %, +4 pods), down:
//!   −100 %), then by `minReplicas`/`maxReplicas`.
//!
//! minik simplifies: a policy's `periodSeconds` is not tracked across syncs (each sync is one
//! period), and unready pods are those not Ready (upstream also looks at the CPU initialisation
//! period and readiness delay since start).

use std::time::{Duration, Instant};

/// The tolerance within which a ratio is "close enough" (`--horizontal-pod-autoscaler-tolerance`).
pub const TOLERANCE: f64 = 0.1;

/// One pod, as the calculation sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct PodSample {
    /// The sum of its containers' CPU requests, millicores (`None`: some container has none).
    pub request_milli: Option<i64>,
    /// Its CPU usage from metrics.k8s.io, millicores (`None`: no metrics for it).
    pub usage_milli: Option<i64>,
    /// Whether it is Ready (not-yet-ready pods are treated as upstream treats unready ones).
    pub ready: bool,
}

/// What the calculation could not do.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CalcError {
    /// A pod has no CPU request, so utilisation means nothing.
    #[error("missing request for cpu in a pod of the target")]
    MissingRequest,
    /// No ready pod has metrics yet.
    #[error("did not receive metrics for targeted pods (pods might be unready)")]
    NoMetrics,
}

/// The calculation's answer: the replicas it asks for and the utilisation it saw (percent).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recommendation {
    /// The replicas wanted.
    pub replicas: i32,
    /// The ready pods' average utilisation, percent of request.
    pub utilization: i32,
    /// The ready pods' average usage, millicores.
    pub average_milli: i64,
}

/// `GetResourceReplicas` for CPU utilisation `target_percent` with `current` replicas.
pub fn cpu_replicas(
    current: i32,
    target_percent: i32,
    pods: &[PodSample],
) -> Result<Recommendation, CalcError> {
    if pods.iter().any(|p| p.request_milli.is_none()) {
        return Err(CalcError::MissingRequest);
    }
    let request = |p: &PodSample| p.request_milli.unwrap_or(0);
    let measured: Vec<&PodSample> = pods
        .iter()
        .filter(|p| p.ready && p.usage_milli.is_some())
        .collect();
    if measured.is_empty() {
        return Err(CalcError::NoMetrics);
    }
    let missing: Vec<&PodSample> = pods
        .iter()
        .filter(|p| p.ready && p.usage_milli.is_none())
        .collect();
    let unready = pods.iter().filter(|p| !p.ready).count();
    let usage: i64 = measured.iter().filter_map(|p| p.usage_milli).sum();
    let requests: i64 = measured.iter().map(|p| request(p)).sum::<i64>().max(1);
    let utilization = (usage * 100 / requests) as i32;
    let target = f64::from(target_percent.max(1)) / 100.0;
    let ratio = usage as f64 / requests as f64 / target;
    let recommendation = |replicas: i32| Recommendation {
        replicas,
        utilization,
        average_milli: usage / measured.len() as i64,
    };
    let scale_up = ratio > 1.0;
    if missing.is_empty() && (unready == 0 || !scale_up) {
        if (ratio - 1.0).abs() <= TOLERANCE {
            return Ok(recommendation(current));
        }
        return Ok(recommendation((ratio * measured.len() as f64).ceil() as i32));
    }
    // Fill in the pods without metrics the way that moves least, and unready ones as idle.
    let (mut usage_all, mut requests_all, mut count) = (usage, requests, measured.len());
    for pod in &missing {
        usage_all += if scale_up { 0 } else { request(pod) };
        requests_all += request(pod);
        count += 1;
    }
    if scale_up {
        for pod in pods.iter().filter(|p| !p.ready) {
            requests_all += request(pod);
            count += 1;
        }
    }
    let new_ratio = usage_all as f64 / requests_all.max(1) as f64 / target;
    let flipped = (ratio < 1.0 && new_ratio > 1.0) || (ratio > 1.0 && new_ratio < 1.0);
    if (new_ratio - 1.0).abs() <= TOLERANCE || flipped {
        return Ok(recommendation(current));
    }
    Ok(recommendation((new_ratio * count as f64).ceil() as i32))
}

/// The scale-up and scale-down windows and step limits of `spec.behavior`, with defaults filled.
#[derive(Clone, Debug, PartialEq)]
pub struct Behavior {
    /// Scale-up stabilisation window (default 0).
    pub up_window: Duration,
    /// Scale-down stabilisation window (default 300 s).
    pub down_window: Duration,
    /// Scale-up policies: (`Pods` true / `Percent` false, value); `select` Max unless `Min`.
    pub up_policies: Vec<(bool, i32)>,
    /// Scale-down policies.
    pub down_policies: Vec<(bool, i32)>,
    /// `selectPolicy` of scale-up is `Min` (fewest replicas) rather than `Max`.
    pub up_select_min: bool,
    /// `selectPolicy` of scale-down is `Min` (the smallest change) rather than `Max`.
    pub down_select_min: bool,
}

impl Default for Behavior {
    /// Upstream's defaults (`SetDefaults_HorizontalPodAutoscalerBehavior`).
    fn default() -> Self {
        Behavior {
            up_window: Duration::ZERO,
            down_window: Duration::from_secs(300),
            up_policies: vec![(false, 100), (true, 4)],
            down_policies: vec![(false, 100)],
            up_select_min: false,
            down_select_min: false,
        }
    }
}

/// Past recommendations of one HPA, newest last.
pub type History = Vec<(Instant, i32)>;

/// `stabilizeRecommendationWithBehaviors`: records `desired`, and answers what to scale to.
pub fn stabilize(
    history: &mut History,
    now: Instant,
    current: i32,
    desired: i32,
    behavior: &Behavior,
) -> i32 {
    history.push((now, desired));
    let within = |window: Duration| {
        history
            .iter()
            .filter(move |(at, _)| now.duration_since(*at) <= window)
    };
    let up = within(behavior.up_window)
        .map(|(_, r)| *r)
        .min()
        .unwrap_or(desired);
    let down = within(behavior.down_window)
        .map(|(_, r)| *r)
        .max()
        .unwrap_or(desired);
    let longest = behavior.up_window.max(behavior.down_window);
    history.retain(|(at, _)| now.duration_since(*at) <= longest);
    current.max(up).min(down)
}

/// The most one sync may scale up to, and down to, from `current` (`calculateScaleUpLimit`…).
pub fn step_limits(current: i32, behavior: &Behavior) -> (i32, i32) {
    let up = |(pods, value): &(bool, i32)| {
        if *pods {
            current + value
        } else {
            (f64::from(current) * (1.0 + f64::from(*value) / 100.0)).ceil() as i32
        }
    };
    let down = |(pods, value): &(bool, i32)| {
        if *pods {
            current - value
        } else {
            (f64::from(current) * (1.0 - f64::from(*value) / 100.0)).floor() as i32
        }
    };
    let ups = behavior.up_policies.iter().map(up);
    let up_limit = if behavior.up_select_min {
        ups.min()
    } else {
        ups.max()
    }
    .unwrap_or(i32::MAX);
    let downs = behavior.down_policies.iter().map(down);
    let down_limit = if behavior.down_select_min {
        downs.max()
    } else {
        downs.min()
    }
    .unwrap_or(0);
    (up_limit.max(current), down_limit.min(current).max(0))
}

/// Why the final count is what it is (the `ScalingLimited` condition).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limited {
    /// Within range: `DesiredWithinRange`.
    No,
    /// Capped by `maxReplicas`: `TooManyReplicas`.
    TooMany,
    /// Raised to `minReplicas`: `TooFewReplicas`.
    TooFew,
    /// Held back by a scale-up policy: `ScaleUpLimit`.
    UpLimit,
    /// Held back by a scale-down policy: `ScaleDownLimit`.
    DownLimit,
}

/// Bounds `wanted` by one step's limits and by `[min, max]`.
pub fn bound(current: i32, wanted: i32, min: i32, max: i32, behavior: &Behavior) -> (i32, Limited) {
    let (up_limit, down_limit) = step_limits(current, behavior);
    let (mut replicas, mut why) = (wanted, Limited::No);
    if replicas > up_limit {
        (replicas, why) = (up_limit, Limited::UpLimit);
    } else if replicas < down_limit {
        (replicas, why) = (down_limit, Limited::DownLimit);
    }
    if replicas > max {
        (replicas, why) = (max, Limited::TooMany);
    } else if replicas < min {
        (replicas, why) = (min, Limited::TooFew);
    }
    (replicas, why)
}

#[cfg(test)]
#[path = "replicas_tests.rs"]
mod tests;
