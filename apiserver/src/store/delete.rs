//! Deleting one object: remove it now, or only mark it, whatever the kind's rules decide.
//!
//! Kubernetes counterpart: the generic store's `Delete` (`k8s.io/apiserver/pkg/registry/generic/
//! registry/store.go`): read the object, check the preconditions, ask the strategy whether the
//! deletion is graceful (`BeforeDelete`), then either update it with a `deletionTimestamp` or
//! remove it, compare-and-swap on the revision read and retry on a conflict. What to do is
//! [`crate::registry::deletion::plan`], after [`crate::registry::propagation`] has set the
//! garbage collector's finalizers for the request's `propagationPolicy`; this module only
//! carries it out.

use jiff::Timestamp;
use minik_api::status;
use serde_json::Value;
use tracing::info;

use crate::error::{ApiError, ApiResult};
use crate::registry::deletion::{plan, DeleteOptions, Plan};
use crate::registry::propagation;
use crate::request::Target;
use crate::storage;
use crate::AppState;

const MAX_ATTEMPTS: usize = 8;

/// What a deletion did to one object.
#[derive(Debug)]
pub struct Deleted {
    /// The object's last state: removed, or marked for deletion, or (dry run) as it is.
    pub object: Value,
    /// Whether the object is gone from storage (a removal may empty a terminating namespace).
    pub removed: bool,
}

impl Deleted {
    fn kept(object: &Value) -> Self {
        Deleted {
            object: object.clone(),
            removed: false,
        }
    }
}

/// Applies the deletion plan to one stored object, retrying when a concurrent write got there first.
pub async fn delete_one(
    state: &AppState,
    target: &Target,
    key: &str,
    name: &str,
    options: &DeleteOptions,
) -> ApiResult<Deleted> {
    let group_resource = target.info.group_resource();
    let (kind, plural) = (target.info.kind, group_resource.as_str());
    let storage_error = |e| ApiError::from_storage(e, plural, name);
    let policy = propagation::parse(options.propagation_policy.as_deref())?;
    for _ in 0..MAX_ATTEMPTS {
        let stored = state
            .storage
            .get(key)
            .map_err(storage_error)?
            .ok_or_else(|| ApiError::from(status::not_found(plural, name)))?;
        options.check_preconditions(&stored.value, plural, name)?;
        let object = propagation::with_finalizers(&stored.value, policy);
        let decision = match plan(
            kind,
            &object,
            options.grace_period_seconds,
            Timestamp::now(),
        ) {
            // A second DELETE may still change the GC finalizers (`updateForGracefulDeletionAndFinalizers`).
            Plan::Unchanged if object != *stored.value => Plan::Update(object),
            decision => decision,
        };
        let result = match decision {
            Plan::Unchanged => return Ok(Deleted::kept(&stored.value)),
            _ if options.dry_run => return Ok(Deleted::kept(&stored.value)),
            Plan::RemoveNow => state
                .storage
                .delete(key, Some(stored.revision))
                .await
                .inspect(|record| {
                    info!(kind, key, revision = record.revision, "deleted object");
                })
                .map(|record| (record, true)),
            Plan::MarkThenRemove(object) => {
                mark_then_remove(state, kind, key, object, stored.revision).await
            }
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
                return Ok(Deleted {
                    object: (*record.value).clone(),
                    removed,
                })
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

/// Stores the marked pod, then removes it (MODIFIED, then DELETED). If another write lands in
/// between, the removal conflicts and the caller's next attempt finds the pod marked with grace
/// 0, which it removes at once.
async fn mark_then_remove(
    state: &AppState,
    kind: &str,
    key: &str,
    object: Value,
    revision: storage::Revision,
) -> Result<(storage::Record, bool), storage::Error> {
    let marked = state.storage.update(key, object, Some(revision)).await?;
    let record = state.storage.delete(key, Some(marked.revision)).await?;
    info!(
        kind,
        key,
        revision = record.revision,
        "deleted object without grace"
    );
    Ok((record, true))
}
