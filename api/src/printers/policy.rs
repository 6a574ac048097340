//! The rows of `get poddisruptionbudgets`.
//!
//! Kubernetes counterpart: `printPodDisruptionBudget` in `pkg/printers/internalversion/printers.go`
//! (1.32): MIN AVAILABLE and MAX UNAVAILABLE show the spec's value (a number or a percentage) or
//! `N/A` when unset, ALLOWED DISRUPTIONS is `status.disruptionsAllowed`.

use jiff::Timestamp;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::duration::age;

/// NAME MIN-AVAILABLE MAX-UNAVAILABLE ALLOWED-DISRUPTIONS AGE.
pub fn pdb_row(pdb: &PodDisruptionBudget, now: Timestamp) -> Vec<String> {
    let spec = pdb.spec.clone().unwrap_or_default();
    let shown = |value: Option<&IntOrString>| match value {
        Some(IntOrString::Int(n)) => n.to_string(),
        Some(IntOrString::String(text)) => text.clone(),
        None => "N/A".to_string(),
    };
    let allowed = pdb.status.as_ref().map_or(0, |s| s.disruptions_allowed);
    vec![
        pdb.metadata.name.clone().unwrap_or_default(),
        shown(spec.min_available.as_ref()),
        shown(spec.max_unavailable.as_ref()),
        allowed.to_string(),
        age(pdb.metadata.creation_timestamp.as_ref().map(|t| t.0), now),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::policy::v1::{PodDisruptionBudgetSpec, PodDisruptionBudgetStatus};

    #[test]
    fn unset_bounds_print_not_applicable() {
        let pdb = PodDisruptionBudget {
            metadata: Default::default(),
            spec: Some(PodDisruptionBudgetSpec {
                min_available: Some(IntOrString::String("50%".into())),
                ..Default::default()
            }),
            status: Some(PodDisruptionBudgetStatus {
                disruptions_allowed: 1,
                ..Default::default()
            }),
        };
        let row = pdb_row(&pdb, Timestamp::now());
        assert_eq!(row[1..4], ["50%", "N/A", "1"]);
    }
}
