//! DELETE of one object or of a collection.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/endpoints/handlers/delete.go` (`DeleteResource`,
//! `DeleteCollection`) and the generic store's `Delete`. What a DELETE actually does — remove now,
//! or only stamp a `deletionTimestamp` for a graceful pod shutdown — is decided by
//! [`crate::registry::deletion::plan`] and carried out by
//! [`crate::store::delete`]. Like upstream's pod store (`ReturnDeletedObject: true`),
//! minik answers 200 with the object (its last state, or the state marked for deletion).

use axum::http::StatusCode;
use axum::response::Response;
use minik_api::status;
use serde_json::json;

use crate::admission::webhook::{self, Review};
use crate::admission::webhook_match::Operation;
use crate::error::{json_response, ApiError, ApiResult};
use crate::field_validation::with_warnings;
use crate::registry::deletion::DeleteOptions;
use crate::request::body::body_format;
use crate::request::query::ListOptions;
use crate::request::selection::{check_field_selector, matches};
use crate::request::{storage_key, ApiRequest, Target};
use crate::store::delete::{delete_one, Deleted};
use crate::store::namespaces::{self, INITIAL_NAMESPACES};
use crate::AppState;

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
    let review = Review::prepare(state, webhook::attributes(request, Operation::Delete));
    admit(state, review.as_ref(), &target.key()).await?;
    let deleted = delete_one(state, target, &target.key(), target.name(), &options).await?;
    let object = finish(state, target, deleted).await?;
    if target.info.kind == "Namespace" && !options.dry_run && namespaces::is_terminating(&object) {
        let latest = namespaces::delete_contents(state, target.name(), object).await?;
        return Ok(json_response(StatusCode::OK, &latest));
    }
    let response = json_response(StatusCode::OK, &object);
    let mut warnings = orphaning_warning(target.info.kind, &options);
    warnings.extend(review.iter().flat_map(Review::warnings));
    Ok(with_warnings(response, &warnings))
}

/// Admission webhooks on a DELETE: the stored object is the review's `oldObject` (nothing
/// stored: the store's 404 comes next).
async fn admit(state: &AppState, review: Option<&Review<'_>>, key: &str) -> ApiResult<()> {
    let Some(review) = review else {
        return Ok(());
    };
    let stored = state.storage.get(key).ok().flatten();
    match stored {
        Some(record) => review.admit_delete(&record.value).await,
        None => Ok(()),
    }
}

/// A Job deleted without a policy keeps its pods; upstream warns, as `jobStrategy.WarningsOnDelete`
/// does (docs/workloads.md#garbage-collector).
fn orphaning_warning(kind: &str, options: &DeleteOptions) -> Vec<String> {
    let policy = options
        .propagation_policy
        .as_deref()
        .filter(|p| !p.is_empty());
    if kind == "Job" && policy.is_none() {
        let text = "child pods are preserved by default when jobs are deleted; set \
                    propagationPolicy=Background to remove them or set propagationPolicy=Orphan to \
                    suppress this warning";
        vec![text.to_string()]
    } else {
        Vec::new()
    }
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
        .map_err(|e| ApiError::from_storage(e, &target.info.group_resource(), ""))?;
    let mut items = Vec::new();
    let review = Review::prepare(state, webhook::attributes(request, Operation::Delete));
    for record in records.iter().filter(|r| matches(&selectors, &r.value)) {
        let name = record.value["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let namespace = record.value["metadata"]["namespace"]
            .as_str()
            .map(str::to_string);
        let key = storage_key(target.info, namespace.as_deref(), &name);
        // Upstream's DeleteCollection admits each object as its own DELETE.
        if let Some(review) = &review {
            review
                .named(&name, namespace.as_deref())
                .admit_delete(&record.value)
                .await?;
        }
        match delete_one(state, target, &key, &name, &options).await {
            Ok(deleted) => items.push(finish(state, target, deleted).await?),
            Err(e) if e.code() == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let list = json!({
        "kind": format!("{}List", target.info.kind), "apiVersion": target.info.api_version,
        "metadata": {"resourceVersion": revision.to_string()}, "items": items,
    });
    Ok(json_response(StatusCode::OK, &list))
}

/// After a removal, a terminating namespace that is now empty goes too; returns the object.
async fn finish(
    state: &AppState,
    target: &Target,
    deleted: Deleted,
) -> ApiResult<serde_json::Value> {
    if deleted.removed {
        if let Some(namespace) = target
            .namespace
            .as_deref()
            .filter(|_| target.info.namespaced)
        {
            namespaces::finish_if_empty(state, namespace).await?;
        }
    }
    Ok(deleted.object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_job_deleted_without_a_policy_is_warned_about() {
        let none = DeleteOptions::default();
        assert_eq!(orphaning_warning("Job", &none).len(), 1);
        assert!(orphaning_warning("Job", &none)[0].starts_with("child pods are preserved"));
        assert!(orphaning_warning("Deployment", &none).is_empty());
        let background = DeleteOptions {
            propagation_policy: Some("Background".into()),
            ..DeleteOptions::default()
        };
        assert!(orphaning_warning("Job", &background).is_empty());
    }
}
