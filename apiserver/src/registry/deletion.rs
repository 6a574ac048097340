//! Graceful deletion: what a DELETE does to an object (docs/kubernetes-rules.md#deletion, D1-D5).
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/registry/rest/delete.go` (`BeforeDelete`),
//! `pkg/registry/generic/registry/store.go` (`updateForGracefulDeletionAndFinalizers`) and the pod
//! strategy's `CheckGracefulDelete` (`pkg/registry/core/pod/strategy.go`).
//!
//! A DELETE of a running pod does not remove it: it stamps `deletionTimestamp = now + grace` and
//! `deletionGracePeriodSeconds`, which watchers see as MODIFIED. The kubelet then stops the
//! containers and finishes with a grace-0 DELETE. A second DELETE may only shorten the deadline.
//! Finalizers keep any object around until an update empties them. The decision is a pure
//! function ([`plan`]) so each rule is unit-tested here; the pod's grace itself (and the rule that
//! a second DELETE only shortens it) is `minik_api::grace`, which the kubelet shares.

use jiff::{SignedDuration, Timestamp};
use minik_api::{grace, status};
use serde_json::Value;

use super::meta::meta_str;
use crate::error::{ApiError, ApiResult};
use crate::request::body::{decode, BodyFormat};
use crate::request::query::Params;

/// The `DeleteOptions` minik honours, read from the body or the query.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DeleteOptions {
    /// `gracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
    /// `preconditions.uid`.
    pub uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub resource_version: Option<String>,
    /// `propagationPolicy` (accepted; minik has no owner references to follow).
    pub propagation_policy: Option<String>,
    /// `dryRun: ["All"]`.
    pub dry_run: bool,
}

impl DeleteOptions {
    /// Reads the body (kubectl, kube-rs) and then the query (the Python client); the body wins.
    pub fn from_request(body: &[u8], format: BodyFormat, params: &Params) -> ApiResult<Self> {
        let body: Value = if body.iter().all(u8::is_ascii_whitespace) {
            Value::Null
        } else {
            decode(body, format)?
        };
        if !body.is_null() && !body.is_object() {
            return Err(ApiError::bad_request("DeleteOptions must be a JSON object"));
        }
        let grace =
            match body.get("gracePeriodSeconds") {
                Some(Value::Null) | None => params.int("gracePeriodSeconds")?,
                Some(value) => Some(value.as_i64().ok_or_else(|| {
                    ApiError::bad_request("gracePeriodSeconds must be an integer")
                })?),
            };
        let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_string);
        let preconditions = body.get("preconditions");
        let dry_run_body = body
            .get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|a| a.iter().any(|v| v == "All"));
        Ok(DeleteOptions {
            grace_period_seconds: grace,
            uid: text(preconditions.and_then(|p| p.get("uid"))),
            resource_version: text(preconditions.and_then(|p| p.get("resourceVersion"))),
            propagation_policy: text(body.get("propagationPolicy"))
                .or_else(|| params.get("propagationPolicy").map(str::to_string)),
            dry_run: dry_run_body || params.dry_run(),
        })
    }

    /// Preconditions: a uid or resourceVersion that does not match the stored object is a 409.
    pub fn check_preconditions(&self, object: &Value, plural: &str, name: &str) -> ApiResult<()> {
        for (field, wanted) in [
            ("uid", &self.uid),
            ("resourceVersion", &self.resource_version),
        ] {
            let Some(wanted) = wanted else { continue };
            let actual = meta_str(object, field).unwrap_or("");
            if wanted != actual {
                let label = if field == "uid" {
                    "UID"
                } else {
                    "ResourceVersion"
                };
                let why = format!("Precondition failed: {label} in precondition: {wanted}, {label} in object meta: {actual}");
                return Err(status::conflict(plural, name, &why).into());
            }
        }
        Ok(())
    }
}

/// What a DELETE does to the stored object.
#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    /// Remove it from storage now (watchers see DELETED).
    RemoveNow,
    /// Store this new state (deletion requested; watchers see MODIFIED).
    Update(Value),
    /// A pod deleted with no grace left: store this marked state (`deletionTimestamp`, grace 0),
    /// then remove it, so watchers see MODIFIED then DELETED as upstream's
    /// `updateForGracefulDeletionAndFinalizers` produces ("intentionally delete gracelessly").
    MarkThenRemove(Value),
    /// Leave it as it is: a deletion is already pending and this one does not shorten it.
    Unchanged,
}

/// Decides what a DELETE with the given grace does (D3-D5). `kind` decides whether the object has
/// graceful deletion at all: only pods do; other kinds are removed at once unless finalizers hold them.
pub fn plan(kind: &str, object: &Value, requested: Option<i64>, now: Timestamp) -> Plan {
    if kind == "Namespace" {
        return plan_namespace(object, now);
    }
    // A CRD waits for its objects: `apiextensions/crd.rs` adds the cleanup finalizer.
    if kind == "CustomResourceDefinition" {
        return crate::apiextensions::crd::plan_delete(object, now);
    }
    // The pod rule lives in `minik_api::grace`, shared with the kubelet.
    let grace = if kind == "Pod" {
        grace::delete_grace(object, requested)
    } else {
        0
    };
    let meta = object.get("metadata");
    let has_finalizers = meta
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty());
    let old_stamp = meta
        .and_then(|m| m.get("deletionTimestamp"))
        .and_then(Value::as_str);
    let old_grace = meta
        .and_then(|m| m.get("deletionGracePeriodSeconds"))
        .and_then(Value::as_i64);

    match (old_stamp, old_grace) {
        // D4: already terminating. Without a grace of its own, a DELETE changes nothing
        // (`BeforeDelete`: "graceful deletion is pending, do nothing").
        (Some(stamp), Some(old)) if old > 0 => {
            if requested.is_none() || !grace::shortens(old, grace) {
                return Plan::Unchanged;
            }
            let old_time: Timestamp = stamp.parse().unwrap_or(now);
            let deadline =
                old_time - SignedDuration::from_secs(old) + SignedDuration::from_secs(grace);
            let marked = mark_deleted(object, deadline, grace);
            if grace == 0 && !has_finalizers {
                return Plan::MarkThenRemove(marked);
            }
            Plan::Update(marked)
        }
        (Some(_), _) => {
            if has_finalizers {
                Plan::Unchanged
            } else {
                Plan::RemoveNow
            }
        }
        // D3 / D5: the first DELETE.
        (None, _) if grace > 0 => Plan::Update(mark_deleted(
            object,
            now + SignedDuration::from_secs(grace),
            grace,
        )),
        (None, _) if has_finalizers => Plan::Update(mark_deleted(object, now, 0)),
        // Pods have graceful deletion even at grace 0 (force, unscheduled, finished).
        (None, _) if kind == "Pod" => Plan::MarkThenRemove(mark_deleted(object, now, 0)),
        (None, _) => Plan::RemoveNow,
    }
}

/// A namespace is never removed by the DELETE itself: it turns Terminating, held by the
/// `kubernetes` entry of `spec.finalizers` until its contents are gone (`store/namespaces.rs`).
fn plan_namespace(object: &Value, now: Timestamp) -> Plan {
    if object["metadata"]["deletionTimestamp"].is_string() {
        return Plan::Unchanged;
    }
    let mut marked = mark_deleted(object, now, 0);
    marked["spec"]["finalizers"] = serde_json::json!(["kubernetes"]);
    marked["status"]["phase"] = Value::String("Terminating".into());
    Plan::Update(marked)
}

/// The object with `deletionTimestamp`, `deletionGracePeriodSeconds` and a bumped generation.
fn mark_deleted(object: &Value, deadline: Timestamp, grace: i64) -> Value {
    let mut object = object.clone();
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        let stamp = deadline
            .round(jiff::Unit::Second)
            .unwrap_or(deadline)
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string();
        meta.insert("deletionTimestamp".into(), Value::String(stamp));
        meta.insert("deletionGracePeriodSeconds".into(), Value::from(grace));
        if let Some(generation) = meta.get("generation").and_then(Value::as_i64) {
            meta.insert("generation".into(), Value::from(generation + 1));
        }
    }
    object
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bound_pod() -> Value {
        json!({"metadata": {"name": "web", "generation": 1},
               "spec": {"nodeName": "node-1", "terminationGracePeriodSeconds": 30},
               "status": {"phase": "Running"}})
    }

    fn now() -> Timestamp {
        "2026-01-01T00:00:00Z".parse().unwrap()
    }

    #[test]
    fn bound_running_pod_gets_a_deadline_from_its_own_grace() {
        let Plan::Update(pod) = plan("Pod", &bound_pod(), None, now()) else {
            panic!("expected an update")
        };
        assert_eq!(pod["metadata"]["deletionTimestamp"], "2026-01-01T00:00:30Z");
        assert_eq!(pod["metadata"]["deletionGracePeriodSeconds"], 30);
        assert_eq!(pod["metadata"]["generation"], 2);
    }

    #[test]
    fn unscheduled_or_finished_pods_go_at_once() {
        let removed_at_once = |plan: Plan| match plan {
            Plan::MarkThenRemove(marked) => marked["metadata"]["deletionGracePeriodSeconds"] == 0,
            _ => false,
        };
        let mut pending = bound_pod();
        pending["spec"]["nodeName"] = json!("");
        assert!(removed_at_once(plan("Pod", &pending, Some(30), now())));
        let mut done = bound_pod();
        done["status"]["phase"] = json!("Succeeded");
        assert!(removed_at_once(plan("Pod", &done, None, now())));
        assert!(removed_at_once(plan("Pod", &bound_pod(), Some(0), now())));
        // Already marked with grace 0 (the mark was stored, the removal was not): remove now.
        let Plan::MarkThenRemove(marked) = plan("Pod", &bound_pod(), Some(0), now()) else {
            panic!()
        };
        assert_eq!(plan("Pod", &marked, None, now()), Plan::RemoveNow);
    }

    #[test]
    fn a_second_delete_only_shortens() {
        let Plan::Update(first) = plan("Pod", &bound_pod(), Some(100), now()) else {
            panic!()
        };
        assert_eq!(plan("Pod", &first, Some(200), now()), Plan::Unchanged);
        let Plan::Update(shorter) = plan("Pod", &first, Some(10), now()) else {
            panic!()
        };
        assert_eq!(
            shorter["metadata"]["deletionTimestamp"],
            "2026-01-01T00:00:10Z"
        );
        assert_eq!(shorter["metadata"]["deletionGracePeriodSeconds"], 10);
        let Plan::MarkThenRemove(last) = plan("Pod", &shorter, Some(0), now()) else {
            panic!()
        };
        assert_eq!(
            last["metadata"]["deletionTimestamp"],
            "2026-01-01T00:00:00Z"
        );
    }

    #[test]
    fn a_second_delete_without_a_grace_leaves_the_pending_one_alone() {
        // BeforeDelete: "graceful deletion is pending, do nothing" — the spec's 30 is not looked at.
        let Plan::Update(first) = plan("Pod", &bound_pod(), Some(100), now()) else {
            panic!()
        };
        assert_eq!(plan("Pod", &first, None, now()), Plan::Unchanged);
        let mut short_spec = bound_pod();
        short_spec["spec"]["terminationGracePeriodSeconds"] = json!(5);
        let Plan::Update(first) = plan("Pod", &short_spec, Some(60), now()) else {
            panic!()
        };
        assert_eq!(plan("Pod", &first, None, now()), Plan::Unchanged);
    }

    #[test]
    fn negative_grace_becomes_one() {
        assert_eq!(grace::delete_grace(&bound_pod(), Some(-5)), 1);
    }

    #[test]
    fn finalizers_block_removal_even_at_grace_zero() {
        let mut held = bound_pod();
        held["metadata"]["finalizers"] = json!(["example.com/hold"]);
        let Plan::Update(marked) = plan("Pod", &held, Some(0), now()) else {
            panic!()
        };
        assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 0);
        assert_eq!(plan("Pod", &marked, Some(0), now()), Plan::Unchanged);
        let service = json!({"metadata": {"name": "svc", "finalizers": ["x"]}});
        assert!(matches!(
            plan("Service", &service, None, now()),
            Plan::Update(_)
        ));
        assert_eq!(
            plan(
                "Service",
                &json!({"metadata": {"name": "svc"}}),
                None,
                now()
            ),
            Plan::RemoveNow
        );
    }

    #[test]
    fn delete_options_come_from_body_or_query() {
        let params = Params::new(vec![("gracePeriodSeconds".into(), "5".into())]);
        let from_query = DeleteOptions::from_request(b"", BodyFormat::Json, &params).unwrap();
        assert_eq!(from_query.grace_period_seconds, Some(5));
        let body = br#"{"gracePeriodSeconds":0,"preconditions":{"uid":"u1"},"propagationPolicy":"Background"}"#;
        let from_body = DeleteOptions::from_request(body, BodyFormat::Json, &params).unwrap();
        assert_eq!(from_body.grace_period_seconds, Some(0));
        assert_eq!(from_body.uid.as_deref(), Some("u1"));
        let conflict =
            from_body.check_preconditions(&json!({"metadata": {"uid": "u2"}}), "pods", "web");
        assert_eq!(conflict.unwrap_err().code(), 409);
    }
}
