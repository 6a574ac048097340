//! The rows of `get horizontalpodautoscalers`.
//!
//! Kubernetes counterpart: `printHorizontalPodAutoscaler` and `formatHPAMetrics` in
//! `pkg/printers/internalversion/printers.go` (1.32): REFERENCE is `Kind/name`, TARGETS lists
//! each metric as `cpu: 40%/50%` (`<unknown>` before the first reading), then the bounds and the
//! current replicas. minik prints the Resource metrics (the only kind its controller reads).

use jiff::Timestamp;
use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;

use super::duration::age;

/// `cpu: 40%/50%` for each Resource metric of the spec, with the status's current value.
pub fn targets(hpa: &HorizontalPodAutoscaler) -> String {
    let specs = hpa
        .spec
        .as_ref()
        .and_then(|s| s.metrics.clone())
        .unwrap_or_default();
    let current = hpa
        .status
        .as_ref()
        .and_then(|s| s.current_metrics.clone())
        .unwrap_or_default();
    let cells: Vec<String> = specs
        .iter()
        .filter_map(|m| m.resource.as_ref())
        .map(|resource| {
            let now = current
                .iter()
                .filter_map(|c| c.resource.as_ref())
                .find(|c| c.name == resource.name)
                .and_then(|c| c.current.average_utilization)
                .map_or("<unknown>".to_string(), |u| format!("{u}%"));
            let target = resource
                .target
                .average_utilization
                .map_or_else(|| "<unknown>".to_string(), |t| format!("{t}%"));
            format!("{}: {now}/{target}", resource.name)
        })
        .collect();
    if cells.is_empty() {
        "<none>".into()
    } else {
        cells.join(", ")
    }
}

/// NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE.
pub fn hpa_row(hpa: &HorizontalPodAutoscaler, now: Timestamp) -> Vec<String> {
    let spec = hpa.spec.clone().unwrap_or_default();
    let target = &spec.scale_target_ref;
    vec![
        hpa.metadata.name.clone().unwrap_or_default(),
        format!("{}/{}", target.kind, target.name),
        targets(hpa),
        spec.min_replicas.unwrap_or(1).to_string(),
        spec.max_replicas.to_string(),
        hpa.status
            .as_ref()
            .and_then(|s| s.current_replicas)
            .unwrap_or(0)
            .to_string(),
        age(hpa.metadata.creation_timestamp.as_ref().map(|t| t.0), now),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_show_the_current_and_the_wanted_utilisation() {
        let mut hpa: HorizontalPodAutoscaler = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5,
                     "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 50}}}]}}))
        .unwrap();
        assert_eq!(targets(&hpa), "cpu: <unknown>/50%");
        hpa.status = serde_json::from_value(serde_json::json!({"desiredReplicas": 2, "currentReplicas": 2,
            "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 99}}}]}))
        .unwrap();
        let row = hpa_row(&hpa, Timestamp::now());
        assert_eq!(row[1..6], ["Deployment/web", "cpu: 99%/50%", "1", "5", "2"]);
    }
}
