//! Taints and tolerations: the well-known node taints and the one matching rule.
//!
//! Kubernetes counterpart: `k8s.io/api/core/v1/well_known_taints.go` and `Toleration.ToleratesTaint`
//! (`k8s.io/api/core/v1/toleration.go`). The scheduler filters with it, the node lifecycle
//! controller evicts with it, the apiserver's default tolerations name the keys. No I/O.

use k8s_openapi::api::core::v1::Toleration;

/// The node's `Ready` condition is `False`.
pub const TAINT_NOT_READY: &str = "node.kubernetes.io/not-ready";
/// The node's `Ready` condition is `Unknown`: its kubelet stopped posting status.
pub const TAINT_UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// The node is cordoned (`spec.unschedulable`).
pub const TAINT_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

/// Whether one toleration tolerates a taint (upstream `ToleratesTaint`): the effect matches or is
/// empty, the key matches or is empty with `Exists`, and the value matches under `Equal` (the
/// default operator) or anything goes under `Exists`.
pub fn toleration_tolerates(toleration: &Toleration, key: &str, value: &str, effect: &str) -> bool {
    let effect_ok = toleration
        .effect
        .as_deref()
        .is_none_or(|e| e.is_empty() || e == effect);
    let toleration_key = toleration.key.as_deref().unwrap_or("");
    let operator = toleration.operator.as_deref().unwrap_or("Equal");
    let key_ok = toleration_key == key || (toleration_key.is_empty() && operator == "Exists");
    let value_ok = match operator {
        "Exists" => true,
        "Equal" | "" => toleration.value.as_deref().unwrap_or("") == value,
        _ => false,
    };
    effect_ok && key_ok && value_ok
}

/// Whether any of `tolerations` tolerates the taint.
pub fn tolerates(tolerations: &[Toleration], key: &str, value: &str, effect: &str) -> bool {
    tolerations
        .iter()
        .any(|toleration| toleration_tolerates(toleration, key, value, effect))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toleration(key: &str, operator: &str, value: &str, effect: &str) -> Toleration {
        let some = |text: &str| (!text.is_empty()).then(|| text.to_string());
        Toleration {
            key: some(key),
            operator: some(operator),
            value: some(value),
            effect: some(effect),
            ..Toleration::default()
        }
    }

    #[test]
    fn keys_values_and_effects_match_as_upstream() {
        let equal = toleration("dedicated", "Equal", "gpu", "NoSchedule");
        assert!(toleration_tolerates(
            &equal,
            "dedicated",
            "gpu",
            "NoSchedule"
        ));
        assert!(!toleration_tolerates(
            &equal,
            "dedicated",
            "cpu",
            "NoSchedule"
        ));
        assert!(!toleration_tolerates(
            &equal,
            "dedicated",
            "gpu",
            "NoExecute"
        ));
        let exists = toleration(TAINT_UNREACHABLE, "Exists", "", "");
        assert!(toleration_tolerates(
            &exists,
            TAINT_UNREACHABLE,
            "",
            "NoExecute"
        ));
        assert!(!toleration_tolerates(
            &exists,
            TAINT_NOT_READY,
            "",
            "NoExecute"
        ));
        let wildcard = toleration("", "Exists", "", "");
        assert!(tolerates(&[equal, wildcard], "anything", "x", "NoExecute"));
    }
}
