//! DELETE of one object or of a collection.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/endpoints/handlers/delete.go` (`DeleteResource`,
//! `DeleteCollection`) and the generic store's `Delete`. What a DELETE actually does — remove now,
//! or only stamp a `deletionTimestamp` for a graceful pod shutdown — is decided by
//! [`crate::registry::deletion::plan`]. Like upstream's pod store (`ReturnDeletedObject: true`),
//! minik answers 200 with the object (its last state, or the state marked for deletion).

use axum::http::StatusCode;
use axum::response::Response;
use jiff::Timestamp;
use minik_api::status;
use serde_json::{json, Value};
use tracing::info;

use super::read::{check_field_selector, matches};
use super::request::{body_format, ListOptions};
use super::{namespaces, object_response, storage_key, ApiRequest, Target, INITIAL_NAMESPACES};
use crate::error::{ApiError, ApiResult};
use crate::registry::deletion::{plan, DeleteOptions, Plan};
use crate::storage;
use crate::AppState;

const MAX_ATTEMPTS: usize = 8;

/// `DELETE …/{plural}/{name}`.
pub async fn delete(state: &AppState, request: &ApiRequest) -> ApiResult<Response> {
    let options = DeleteOptions::from_request(
        &request.body,
        body_format(request.content_type())?,
        &request.params,
    )?;
    let target = &request.target;
    if target.info.kind == "Namespace" && INITIAL_NAMESPACES[..3].contains(&target.name()) {
        let message = format!(
            "namespaces \"{}\" is forbidden: this namespace may not be deleted",
            target.name()
        );
        return Err(status::failure(403, "Forbidden", message).into());
    }
    let object = delete_one(state, target, &target.key(), target.name(), &options).await?;
    if target.info.kind == "Namespace" && !options.dry_run && namespaces::is_terminating(&object) {
        let latest = namespaces::delete_contents(state, target.name(), object).await?;
        return Ok(object_response(StatusCode::OK, &latest));
    }
    Ok(object_response(StatusCode::OK, &object))
}

/// `DELETE …/{plural}` with selectors: deletes each match (gracefully for pods), answers the list.
pub async fn delete_collection(state: &AppState, request: &ApiRequest) -> ApiResult<Response> {
    let target = &request.target;
    let options = DeleteOptions::from_request(
        &request.body,
        body_format(request.content_type())?,
        &request.params,
    )?;
    let selectors = ListOptions::parse(&request.params)?;
    check_field_selector(target.info.kind, &selectors.fields)?;
    let (records, revision) = state
        .storage
        .list(&target.prefix())
        .map_err(|e| ApiError::from_storage(e, target.info.plural, ""))?;
    let mut items = Vec::new();
    for record in records.iter().filter(|r| matches(&selectors, &r.value)) {
        let name = record.value["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let namespace = record.value["metadata"]["namespace"]
            .as_str()
            .map(str::to_string);
        let key = storage_key(target.info, namespace.as_deref(), &name);
        match delete_one(state, target, &key, &name, &options).await {
            Ok(object) => items.push(object),
            Err(e) if e.code() == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let list = json!({
        "kind": format!("{}List", target.info.kind), "apiVersion": target.info.api_version,
        "metadata": {"resourceVersion": revision.to_string()}, "items": items,
    });
    Ok(object_response(StatusCode::OK, &list))
}

/// Applies the deletion plan to one stored object, retrying when a concurrent write got there first.
pub(crate) async fn delete_one(
    state: &AppState,
    target: &Target,
    key: &str,
    name: &str,
    options: &DeleteOptions,
) -> ApiResult<Value> {
    let (kind, plural) = (target.info.kind, target.info.plural);
    let storage_error = |e| ApiError::from_storage(e, plural, name);
    for _ in 0..MAX_ATTEMPTS {
        let stored = state
            .storage
            .get(key)
            .map_err(storage_error)?
            .ok_or_else(|| ApiError::from(status::not_found(plural, name)))?;
        options.check_preconditions(&stored.value, plural, name)?;
        let result = match plan(
            kind,
            &stored.value,
            options.grace_period_seconds,
            Timestamp::now(),
        ) {
            Plan::Unchanged => return Ok((*stored.value).clone()),
            _ if options.dry_run => return Ok((*stored.value).clone()),
            Plan::RemoveNow => state
                .storage
                .delete(key, Some(stored.revision))
                .await
                .inspect(|record| {
                    info!(kind, key, revision = record.revision, "deleted object");
                })
                .map(|record| (record, true)),
            Plan::Update(object) => state
                .storage
                .update(key, object, Some(stored.revision))
                .await
                .inspect(|record| {
                    let grace = record.value["metadata"]["deletionGracePeriodSeconds"]
                        .as_i64()
                        .unwrap_or(0);
                    info!(
                        kind,
                        key,
                        grace,
                        revision = record.revision,
                        "marked object for deletion"
                    );
                })
                .map(|record| (record, false)),
        };
        match result {
            Ok((record, removed)) => {
                if removed {
                    if let Some(namespace) = target
                        .namespace
                        .as_deref()
                        .filter(|_| target.info.namespaced)
                    {
                        namespaces::finish_if_empty(state, namespace).await?;
                    }
                }
                return Ok((*record.value).clone());
            }
            Err(storage::Error::Conflict { .. }) => continue,
            Err(e) => return Err(storage_error(e)),
        }
    }
    Err(status::conflict(
        plural,
        name,
        "the object is being modified too often; please retry",
    )
    .into())
}
