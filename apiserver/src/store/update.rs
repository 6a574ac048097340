//! Updating one object: read, transform, compare-and-swap, retry.
//!
//! Kubernetes counterpart: the generic store's `Update` and etcd3's `GuaranteedUpdate`
//! (`k8s.io/apiserver/pkg/storage/etcd3/store.go`): read the object, compute its new state,
//! write it only if the revision read is still the current one, else read again. A client that
//! pinned a `resourceVersion` gets a 409 instead of a retry (optimistic concurrency,
//! kubernetes-rules A2). Every PUT, PATCH, binding and scale write goes through here.

use std::sync::Arc;

use minik_api::status;
use serde_json::Value;
use tracing::info;

use super::namespaces;
use crate::admission::webhook::{Prepare, Review};
use crate::apiextensions::conversion;
use crate::error::{ApiError, ApiResult};
use crate::registry::meta;
use crate::request::Target;
use crate::storage;
use crate::AppState;

/// How many times a write without a client `resourceVersion` is retried after a conflict.
const MAX_ATTEMPTS: usize = 8;

/// Read, transform, compare-and-swap; retried on conflict unless the client pinned a revision.
/// A write that changes nothing is not stored (no new revision), as etcd3's `GuaranteedUpdate`.
pub async fn guaranteed_update(
    state: &AppState,
    target: &Target,
    precondition: Option<u64>,
    dry_run: bool,
    transform: impl Fn(&Value) -> ApiResult<Value>,
) -> ApiResult<Arc<Value>> {
    guaranteed_update_admitted(state, target, precondition, dry_run, transform, None).await
}

/// [`guaranteed_update`] with admission webhooks: on each attempt, after the transform, the
/// review's mutating webhooks, the registry step `prepare` again on what they changed, and
/// the validating webhooks (upstream calls admission inside `GuaranteedUpdate`'s try, too).
pub async fn guaranteed_update_admitted(
    state: &AppState,
    target: &Target,
    precondition: Option<u64>,
    dry_run: bool,
    transform: impl Fn(&Value) -> ApiResult<Value>,
    admission: Option<(&Review<'_>, &Prepare<'_>)>,
) -> ApiResult<Arc<Value>> {
    let group_resource = target.info.group_resource();
    let (plural, name, key) = (group_resource.as_str(), target.name(), target.key());
    let storage_error = |e| ApiError::from_storage(e, plural, name);
    for _ in 0..MAX_ATTEMPTS {
        let stored = state
            .storage
            .get(&key)
            .map_err(storage_error)?
            .ok_or_else(|| ApiError::from(status::not_found(plural, name)))?;
        if precondition.is_some_and(|rv| rv != stored.revision) {
            return Err(storage_error(storage::Error::Conflict {
                key,
                expected: precondition.unwrap_or(0),
                actual: stored.revision,
            }));
        }
        // A custom resource is changed in the request's version, stored in the storage one.
        let view = conversion::for_request(state, target.info, &stored.value).await?;
        let old = view.as_ref().unwrap_or(&stored.value);
        let mut object = transform(old)?;
        if let Some((review, prepare)) = admission {
            object = review.admit_update(object, old, prepare).await?;
        }
        let mut object = conversion::for_storage(state, target.info, object).await?;
        meta::meta_mut(&mut object)?.insert(
            "resourceVersion".into(),
            Value::String(stored.revision.to_string()),
        );
        if object == *stored.value {
            return Ok(stored.value);
        }
        if dry_run {
            return Ok(Arc::new(object));
        }
        match state
            .storage
            .update(&key, object, Some(stored.revision))
            .await
        {
            Ok(record) => {
                info!(kind = target.info.kind, key = %key, revision = record.revision, "updated object");
                if meta::should_delete_during_update(&record.value) {
                    let deleted = state
                        .storage
                        .delete(&key, Some(record.revision))
                        .await
                        .map_err(storage_error)?;
                    info!(kind = target.info.kind, key = %key, "deleted object after its finalizers were removed");
                    if let Some(namespace) = target
                        .namespace
                        .as_deref()
                        .filter(|_| target.info.namespaced)
                    {
                        namespaces::finish_if_empty(state, namespace).await?;
                    }
                    return Ok(deleted.value);
                }
                // The stored value itself, shared: the binding path drops it unread.
                return Ok(record.value);
            }
            Err(storage::Error::Conflict { .. }) if precondition.is_none() => continue,
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
