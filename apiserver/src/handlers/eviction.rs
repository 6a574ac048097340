//! `POST …/pods/{name}/eviction`: delete a pod unless that would break its disruption budget.
//!
//! Kubernetes counterpart: `EvictionREST.Create` in `pkg/registry/core/pod/storage/eviction.go`.
//! kubectl drain sends a policy/v1 Eviction (policy/v1beta1 is accepted as well), as protobuf. In
//! order:
//!
//! 1. the pod is read; a terminal, pending or terminating pod is deleted without a budget check;
//! 2. the budgets whose selector matches it are listed: none → delete; more than one → 500, as
//!    upstream ("does not support");
//! 3. an unready pod under a healthy budget goes without taking a disruption; otherwise
//!    [`check_and_decrement`] decides, and the budget's status is written **first**, compare-and-
//!    swap on the revision read (a concurrent eviction or controller write makes it re-read), so
//!    two evictions never spend the same disruption;
//! 4. the pod gets the `DisruptionTarget` condition and is deleted gracefully with the Eviction's
//!    `deleteOptions`; the answer is a 201 `Success` Status.
//!
//! A refused eviction is a 429 (`TooManyRequests`) that kubectl drain retries every 5 s.

use axum::http::StatusCode;
use axum::response::Response;
use jiff::Timestamp;
use minik_api::core::Pod;
use minik_api::disruption::{can_ignore_budget, check_and_decrement, unready_pod_may_go};
use minik_api::policy::PodDisruptionBudget;
use minik_api::resource::by_plural;
use minik_api::status;
use serde_json::{json, Value};
use tracing::info;

use crate::error::{json_response, ApiError, ApiResult};
use crate::registry::deletion::DeleteOptions;
use crate::registry::{typed, untyped};
use crate::request::body::{body_format, decode_object, BodyFormat};
use crate::request::query::Params;
use crate::request::{ApiRequest, Target};
use crate::store::delete::delete_one;
use crate::store::update::guaranteed_update;
use crate::{storage, AppState};

/// How many times a budget write that lost a race is retried (upstream `EvictionsRetry`).
const MAX_ATTEMPTS: usize = 5;

/// `POST …/pods/{name}/eviction`.
pub async fn evict(state: &AppState, request: &ApiRequest) -> ApiResult<Response> {
    let body = decode_object(&request.body, body_format(request.content_type())?)?;
    let target = &request.target;
    let options = eviction_options(&body, target.name())?;
    let dry_run = options.dry_run || request.params.dry_run();
    let pod_target = Target {
        subresource: None,
        ..target.clone()
    };
    let mut charged = false;
    for _ in 0..MAX_ATTEMPTS {
        let pod = read_pod(state, &pod_target)?;
        if charged || can_ignore_budget(&pod) {
            break;
        }
        let (budget, revision) = match budgets_of(state, &pod)?.as_slice() {
            [] => break,
            [one] => one.clone(),
            _ => {
                return Err(status::internal(
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                )
                .into())
            }
        };
        if unready_pod_may_go(&pod, &budget) {
            break;
        }
        let next = check_and_decrement(&budget, target.name(), Timestamp::now())
            .map_err(|status| ApiError::from(*status))?;
        if dry_run {
            break;
        }
        charged = write_budget_status(state, &budget, next, revision).await?;
    }
    if !dry_run {
        add_disruption_target(state, &pod_target).await?;
        delete_one(
            state,
            &pod_target,
            &pod_target.key(),
            target.name(),
            &options,
        )
        .await?;
    }
    info!(pod = %format!("{}/{}", target.namespace.as_deref().unwrap_or(""), target.name()), charged, "evicted pod");
    let success = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201});
    Ok(json_response(StatusCode::CREATED, &success))
}

/// Checks the Eviction names the pod of the path and reads its `deleteOptions`.
fn eviction_options(body: &Value, pod_name: &str) -> ApiResult<DeleteOptions> {
    let kind = body
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("Eviction");
    let version = body
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("policy/v1");
    if kind != "Eviction" || !matches!(version, "policy/v1" | "policy/v1beta1") {
        return Err(ApiError::bad_request(format!(
            "expected a policy/v1 Eviction, got {version} {kind}"
        )));
    }
    let name = body
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if name != pod_name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let options = body.get("deleteOptions").cloned().unwrap_or(Value::Null);
    let bytes = serde_json::to_vec(&options).unwrap_or_default();
    DeleteOptions::from_request(&bytes, BodyFormat::Json, &Params::new(Vec::new()))
}

fn read_pod(state: &AppState, target: &Target) -> ApiResult<Pod> {
    let record = state
        .storage
        .get(&target.key())
        .map_err(|e| ApiError::from_storage(e, "pods", target.name()))?
        .ok_or_else(|| ApiError::from(status::not_found("pods", target.name())))?;
    typed((*record.value).clone(), "Pod")
}

/// The budgets in the pod's namespace whose selector matches its labels, with their revisions.
fn budgets_of(state: &AppState, pod: &Pod) -> ApiResult<Vec<(PodDisruptionBudget, u64)>> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or("default");
    let prefix = format!("/registry/poddisruptionbudgets/{namespace}/");
    let (records, _) = state
        .storage
        .list(&prefix)
        .map_err(|e| ApiError::from_storage(e, "poddisruptionbudgets.policy", ""))?;
    let mut found = Vec::new();
    for record in records {
        let budget: PodDisruptionBudget = typed((*record.value).clone(), "PodDisruptionBudget")?;
        let selector = budget.spec.as_ref().and_then(|s| s.selector.as_ref());
        if selects(selector, pod.metadata.labels.as_ref()) {
            found.push((budget, record.revision));
        }
    }
    Ok(found)
}

/// `metav1.LabelSelectorAsSelector(...).Matches`: an empty selector matches every pod (policy/v1),
/// a missing one none.
fn selects(
    selector: Option<&minik_api::meta::LabelSelector>,
    labels: Option<&std::collections::BTreeMap<String, String>>,
) -> bool {
    let Some(selector) = selector else {
        return false;
    };
    let Ok(selector) = minik_api::workloads::selector_from_meta(selector) else {
        return false;
    };
    selector.matches(labels.unwrap_or(&Default::default()))
}

/// Writes the budget's next status only if it is still at `revision`; `false` when another
/// write got there first.
async fn write_budget_status(
    state: &AppState,
    budget: &PodDisruptionBudget,
    next: minik_api::policy::PodDisruptionBudgetStatus,
    revision: u64,
) -> ApiResult<bool> {
    let name = budget.metadata.name.as_deref().unwrap_or("");
    let mut updated = budget.clone();
    updated.status = Some(next);
    let info = by_plural("policy", "poddisruptionbudgets")
        .ok_or_else(|| ApiError::from(status::internal("PodDisruptionBudgets are not served")))?;
    let key = crate::request::storage_key(info, budget.metadata.namespace.as_deref(), name);
    match state
        .storage
        .update(&key, untyped(&updated)?, Some(revision))
        .await
    {
        Ok(_) => Ok(true),
        Err(storage::Error::Conflict { .. }) => Ok(false),
        Err(e) => Err(ApiError::from_storage(e, &info.group_resource(), name)),
    }
}

/// `addConditionAndDeletePod`: a pod that is still running learns why it goes.
async fn add_disruption_target(state: &AppState, pod: &Target) -> ApiResult<()> {
    let transform = |stored: &Value| {
        let mut object = stored.clone();
        let phase = object.pointer("/status/phase").and_then(Value::as_str);
        if matches!(phase, Some("Succeeded" | "Failed")) {
            return Ok(object);
        }
        let condition = json!({"type": "DisruptionTarget", "status": "True",
            "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting",
            "lastTransitionTime": crate::registry::meta::now_value()});
        let status = object
            .as_object_mut()
            .ok_or_else(|| ApiError::bad_request("a pod must be an object"))?
            .entry("status")
            .or_insert_with(|| json!({}));
        let conditions = status
            .as_object_mut()
            .ok_or_else(|| ApiError::bad_request("status must be an object"))?
            .entry("conditions")
            .or_insert_with(|| json!([]));
        if let Some(list) = conditions.as_array_mut() {
            list.retain(|c| c["type"] != "DisruptionTarget");
            list.push(condition);
        }
        Ok(object)
    };
    match guaranteed_update(state, pod, None, false, transform).await {
        Ok(_) => Ok(()),
        // Gone in the meantime: the deletion that follows answers the 404.
        Err(e) if e.code() == 404 => Ok(()),
        Err(e) => Err(e),
    }
}
