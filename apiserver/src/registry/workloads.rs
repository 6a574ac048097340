//! The Deployment and ReplicaSet strategies: defaults, validation, an immutable selector.
//!
//! Kubernetes counterpart: `pkg/registry/apps/deployment/strategy.go` and
//! `pkg/registry/apps/replicaset/strategy.go`. `PrepareForCreate` clears the status (only the
//! controllers write it, through `/status`), `Validate` runs `ValidateDeploymentSpec` /
//! `ValidateReplicaSetSpec` after defaulting, and `ValidateUpdate` adds that the selector of an
//! apps/v1 object never changes. The rules themselves are in `minik_api::workloads`, pure.

use minik_api::apps::{Deployment, ReplicaSet};
use minik_api::meta::StatusCause;
use minik_api::status;
use minik_api::workloads::{
    default_deployment, default_replica_set, validate_deployment, validate_replica_set,
    validate_selector_update,
};
use serde_json::Value;

use super::pods::check_quantities;
use super::{typed, untyped};
use crate::error::ApiResult;

/// A new Deployment: defaults, an empty status, validation.
pub fn prepare_create_deployment(object: Value) -> ApiResult<Value> {
    let mut deployment: Deployment = typed(object, "Deployment")?;
    let template = deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref());
    check_quantities("Deployment", template)?;
    default_deployment(&mut deployment);
    deployment.status = Some(Default::default());
    check(
        "Deployment",
        &deployment.metadata,
        validate_deployment(&deployment),
    )?;
    untyped(&deployment)
}

/// An updated Deployment (main resource or `/status`): defaults, validation, same selector.
pub fn prepare_update_deployment(object: Value, old: &Value) -> ApiResult<Value> {
    let mut deployment: Deployment = typed(object, "Deployment")?;
    let template = deployment
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref());
    check_quantities("Deployment", template)?;
    let old: Deployment = typed(old.clone(), "Deployment")?;
    default_deployment(&mut deployment);
    let mut causes = validate_deployment(&deployment);
    if let (Some(new), Some(old)) = (&deployment.spec, &old.spec) {
        causes.extend(validate_selector_update(&new.selector, &old.selector));
    }
    check("Deployment", &deployment.metadata, causes)?;
    untyped(&deployment)
}

/// A new ReplicaSet: defaults, an empty status, validation.
pub fn prepare_create_replica_set(object: Value) -> ApiResult<Value> {
    let mut replica_set: ReplicaSet = typed(object, "ReplicaSet")?;
    let template = replica_set
        .spec
        .as_ref()
        .and_then(|s| s.template.as_ref())
        .and_then(|t| t.spec.as_ref());
    check_quantities("ReplicaSet", template)?;
    default_replica_set(&mut replica_set);
    replica_set.status = Some(Default::default());
    check(
        "ReplicaSet",
        &replica_set.metadata,
        validate_replica_set(&replica_set),
    )?;
    untyped(&replica_set)
}

/// An updated ReplicaSet: defaults, validation, same selector.
pub fn prepare_update_replica_set(object: Value, old: &Value) -> ApiResult<Value> {
    let mut replica_set: ReplicaSet = typed(object, "ReplicaSet")?;
    let template = replica_set
        .spec
        .as_ref()
        .and_then(|s| s.template.as_ref())
        .and_then(|t| t.spec.as_ref());
    check_quantities("ReplicaSet", template)?;
    let old: ReplicaSet = typed(old.clone(), "ReplicaSet")?;
    default_replica_set(&mut replica_set);
    let mut causes = validate_replica_set(&replica_set);
    if let (Some(new), Some(old)) = (&replica_set.spec, &old.spec) {
        causes.extend(validate_selector_update(&new.selector, &old.selector));
    }
    check("ReplicaSet", &replica_set.metadata, causes)?;
    untyped(&replica_set)
}

fn check(
    kind: &str,
    metadata: &minik_api::meta::ObjectMeta,
    causes: Vec<StatusCause>,
) -> ApiResult<()> {
    if causes.is_empty() {
        return Ok(());
    }
    let name = metadata.name.as_deref().unwrap_or("");
    Err(status::invalid(kind, name, causes).into())
}

/// Whether an update of `kind` moves `metadata.generation` on beyond a `spec` change: a
/// Deployment's annotations are copied to its ReplicaSets, so upstream counts them as desired
/// state too (`deploymentStrategy.PrepareForUpdate`).
pub fn annotations_bump_generation(kind: &str) -> bool {
    kind == "Deployment"
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn web() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "web", "image": "nginx"}]}}},
               "status": {"replicas": 5}})
    }

    #[test]
    fn create_clears_the_status_and_update_keeps_the_selector() {
        let created = prepare_create_deployment(web()).unwrap();
        assert_eq!(created["status"], json!({}));
        assert_eq!(created["spec"]["replicas"], 1);
        let mut changed = created.clone();
        changed["spec"]["selector"] = json!({"matchLabels": {"app": "api"}});
        changed["spec"]["template"]["metadata"]["labels"] = json!({"app": "api"});
        let error = prepare_update_deployment(changed, &created).unwrap_err();
        assert_eq!(error.code(), 422);
        let causes = error.0.details.unwrap().causes.unwrap();
        assert_eq!(causes[0].field.as_deref(), Some("spec.selector"));
    }
}
