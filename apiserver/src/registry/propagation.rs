//! `propagationPolicy`: the finalizers a DELETE adds so the garbage collector can act first.
//!
//! Kubernetes counterpart: `deletionFinalizersForGarbageCollection` and
//! `shouldOrphanDependents` / `shouldDeleteDependents` in
//! `k8s.io/apiserver/pkg/registry/generic/registry/store.go`. Before a DELETE is planned, the
//! object's `orphan` and `foregroundDeletion` finalizers are set from the policy:
//!
//! - `Foreground`: `foregroundDeletion` — the object stays, with a `deletionTimestamp`, until the
//!   garbage collector has deleted its dependents and removes the finalizer;
//! - `Orphan`: `orphan` — the collector strips this owner from its dependents, then removes it;
//! - `Background`: neither — the object goes at once and the collector deletes the dependents.
//!
//! With no policy the object's own GC finalizers decide, and otherwise the kind's default, which
//! is Background for every kind minik serves but Jobs, which orphan (docs/workloads.md#garbage-collector,
//! GC3-GC5).
//! The finalizers are then what [`super::deletion::plan`] sees, so an object they hold is only
//! marked for deletion.

use minik_api::status;
use serde_json::Value;

use crate::error::ApiResult;

/// The finalizer of a Foreground deletion (`metav1.FinalizerDeleteDependents`).
pub const FOREGROUND_DELETION: &str = "foregroundDeletion";
/// The finalizer of an Orphan deletion (`metav1.FinalizerOrphanDependents`).
pub const ORPHAN: &str = "orphan";

/// A `propagationPolicy` value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Propagation {
    /// Delete the dependents after the owner.
    Background,
    /// Delete the dependents before the owner.
    Foreground,
    /// Keep the dependents, without this owner.
    Orphan,
}

/// Reads the policy; anything else is a 422 on `propagationPolicy` (`ValidateDeleteOptions`).
pub fn parse(policy: Option<&str>) -> ApiResult<Option<Propagation>> {
    match policy {
        None | Some("") => Ok(None),
        Some("Background") => Ok(Some(Propagation::Background)),
        Some("Foreground") => Ok(Some(Propagation::Foreground)),
        Some("Orphan") => Ok(Some(Propagation::Orphan)),
        Some(other) => {
            let message = format!(
                "Unsupported value: \"{other}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
            );
            let cause = status::cause("propagationPolicy", "FieldValueNotSupported", message);
            Err(status::invalid("DeleteOptions", "", vec![cause]).into())
        }
    }
}

/// Whether a DELETE without a policy orphans the dependents of `kind`: batch/v1 Jobs keep their
/// pods, for compatibility (`jobStrategy.DefaultGarbageCollectionPolicy`), so kubectl and the
/// clients always send a policy.
pub fn orphans_by_default(kind: &str) -> bool {
    kind == "Job"
}

/// The object with its GC finalizers set for this DELETE (unchanged when they already are).
pub fn with_finalizers(object: &Value, policy: Option<Propagation>) -> Value {
    let current: Vec<&str> = object["metadata"]["finalizers"]
        .as_array()
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let has = |name: &str| current.contains(&name);
    let (orphan, foreground) = match policy {
        Some(policy) => (
            policy == Propagation::Orphan,
            policy == Propagation::Foreground,
        ),
        None => {
            let kind = object["kind"].as_str().unwrap_or("");
            let orphan_by_default = !has(FOREGROUND_DELETION) && orphans_by_default(kind);
            (has(ORPHAN) || orphan_by_default, has(FOREGROUND_DELETION))
        }
    };
    let mut wanted: Vec<&str> = current
        .iter()
        .copied()
        .filter(|f| *f != ORPHAN && *f != FOREGROUND_DELETION)
        .collect();
    if orphan {
        wanted.push(ORPHAN);
    }
    if foreground {
        wanted.push(FOREGROUND_DELETION);
    }
    let same = wanted.len() == current.len() && wanted.iter().all(|f| has(f));
    if same {
        return object.clone();
    }
    let mut updated = object.clone();
    if let Some(meta) = updated["metadata"].as_object_mut() {
        if wanted.is_empty() {
            meta.remove("finalizers");
        } else {
            meta.insert("finalizers".into(), Value::from(wanted));
        }
    }
    updated
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn owner(finalizers: Value) -> Value {
        json!({"metadata": {"name": "web", "finalizers": finalizers}})
    }

    #[test]
    fn each_policy_sets_its_finalizer_and_keeps_others() {
        let object = owner(json!(["example.com/keep"]));
        let foreground = with_finalizers(&object, Some(Propagation::Foreground));
        assert_eq!(
            foreground["metadata"]["finalizers"],
            json!(["example.com/keep", "foregroundDeletion"])
        );
        let orphan = with_finalizers(&foreground, Some(Propagation::Orphan));
        assert_eq!(
            orphan["metadata"]["finalizers"],
            json!(["example.com/keep", "orphan"])
        );
        let background = with_finalizers(&orphan, Some(Propagation::Background));
        assert_eq!(background, object);
    }

    #[test]
    fn without_a_policy_the_object_keeps_its_own_gc_finalizers() {
        let orphaned = owner(json!(["orphan"]));
        assert_eq!(with_finalizers(&orphaned, None), orphaned);
        let plain = json!({"metadata": {"name": "web"}});
        assert_eq!(with_finalizers(&plain, None), plain);
        assert_eq!(
            with_finalizers(&plain, Some(Propagation::Background)),
            plain
        );
    }

    #[test]
    fn a_job_deleted_without_a_policy_orphans_its_pods() {
        let job = json!({"kind": "Job", "metadata": {"name": "pi"}});
        assert_eq!(
            with_finalizers(&job, None)["metadata"]["finalizers"],
            json!(["orphan"])
        );
        let background = with_finalizers(&job, Some(Propagation::Background));
        assert_eq!(background, job);
        let foreground = with_finalizers(&job, Some(Propagation::Foreground));
        assert_eq!(with_finalizers(&foreground, None), foreground);
    }

    #[test]
    fn unknown_policies_are_422() {
        assert_eq!(parse(Some("Sideways")).unwrap_err().code(), 422);
        assert_eq!(parse(Some("Orphan")).unwrap(), Some(Propagation::Orphan));
        assert_eq!(parse(None).unwrap(), None);
    }
}
