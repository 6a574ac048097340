//! The PodDisruptionBudget strategy: an empty status on create, and the spec's validation.
//!
//! Kubernetes counterpart: `pkg/registry/policy/poddisruptionbudget/strategy.go` and
//! `ValidatePodDisruptionBudgetSpec` (`pkg/apis/policy/validation/validation.go`):
//! `PrepareForCreate` clears the status (the disruption controller writes it through `/status`);
//! `minAvailable` and `maxUnavailable` are a non-negative number or a percentage from 0% to 100%,
//! and at most one of them is set. Since policy/v1 the spec is mutable.

use minik_api::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use minik_api::meta::StatusCause;
use minik_api::policy::PodDisruptionBudget;
use minik_api::status::{self, cause};
use serde_json::Value;

use super::{typed, untyped};
use crate::error::ApiResult;

const KIND: &str = "PodDisruptionBudget";

/// A new budget: validated, with an empty status.
pub fn prepare_create(object: Value) -> ApiResult<Value> {
    let mut pdb: PodDisruptionBudget = typed(object, KIND)?;
    pdb.status = Some(Default::default());
    check(&pdb)?;
    untyped(&pdb)
}

/// An updated budget (main resource or `/status`): validated again.
pub fn prepare_update(object: Value) -> ApiResult<Value> {
    let pdb: PodDisruptionBudget = typed(object, KIND)?;
    check(&pdb)?;
    untyped(&pdb)
}

fn check(pdb: &PodDisruptionBudget) -> ApiResult<()> {
    let causes = validate(pdb);
    if causes.is_empty() {
        return Ok(());
    }
    let name = pdb.metadata.name.as_deref().unwrap_or("");
    Err(status::invalid(KIND, name, causes).into())
}

/// `ValidatePodDisruptionBudgetSpec`.
pub fn validate(pdb: &PodDisruptionBudget) -> Vec<StatusCause> {
    let spec = pdb.spec.clone().unwrap_or_default();
    let mut causes = Vec::new();
    if spec.min_available.is_some() && spec.max_unavailable.is_some() {
        causes.push(cause(
            "spec",
            "FieldValueInvalid",
            "Invalid value: minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (field, value) in [
        ("spec.minAvailable", &spec.min_available),
        ("spec.maxUnavailable", &spec.max_unavailable),
    ] {
        if let Some(why) = value.as_ref().and_then(invalid_bound) {
            causes.push(cause(field, "FieldValueInvalid", why));
        }
    }
    causes
}

/// Why a bound is invalid: a negative number, or a percentage that is malformed or over 100%.
fn invalid_bound(value: &IntOrString) -> Option<String> {
    match value {
        IntOrString::Int(n) if *n < 0 => Some(format!(
            "Invalid value: {n}: must be greater than or equal to 0"
        )),
        IntOrString::Int(_) => None,
        IntOrString::String(text) => match text.strip_suffix('%').map(str::parse::<i64>) {
            Some(Ok(n)) if (0..=100).contains(&n) => None,
            Some(Ok(_)) => Some(format!(
                "Invalid value: \"{text}\": must be no greater than 100%"
            )),
            _ => Some(format!(
                "Invalid value: \"{text}\": a valid percent string must be a numeric string followed by an ending '%'"
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pdb(spec: Value) -> Value {
        json!({"apiVersion": "policy/v1", "kind": KIND, "metadata": {"name": "web"},
               "spec": spec, "status": {"disruptionsAllowed": 9}})
    }

    #[test]
    fn create_clears_the_status() {
        let created = prepare_create(pdb(json!({"minAvailable": 2}))).unwrap();
        assert_eq!(created["status"]["disruptionsAllowed"], 0);
        assert_eq!(created["spec"]["minAvailable"], 2);
    }

    #[test]
    fn both_bounds_negative_numbers_and_bad_percentages_are_422() {
        for spec in [
            json!({"minAvailable": 1, "maxUnavailable": 1}),
            json!({"minAvailable": -1}),
            json!({"maxUnavailable": "150%"}),
            json!({"maxUnavailable": "lots"}),
        ] {
            let error = prepare_create(pdb(spec.clone())).unwrap_err();
            assert_eq!(error.code(), 422, "{spec}");
        }
        assert!(prepare_create(pdb(json!({"maxUnavailable": "25%"}))).is_ok());
    }
}
