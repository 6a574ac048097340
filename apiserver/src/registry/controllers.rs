//! The ReplicationController, DaemonSet and CronJob strategies: defaults, validation, a status
//! written only by the controllers.
//!
//! Kubernetes counterpart: `pkg/registry/core/replicationcontroller/strategy.go` and
//! `pkg/registry/apps/daemonset/strategy.go` and `pkg/registry/batch/cronjob/strategy.go`. `PrepareForCreate` clears the status (the controller
//! writes it through `/status`); `Validate` runs the kind's spec validation after defaulting. A
//! ReplicationController's selector may change (core/v1 never froze it); a DaemonSet's may not,
//! as every apps/v1 selector. The rules themselves are pure, in `minik_api::replication` and
//! `minik_api::daemonsets`.

use minik_api::apps::DaemonSet;
use minik_api::batch::CronJob;
use minik_api::core::ReplicationController;
use minik_api::cronjobs::{default_cron_job, validate_cron_job};
use minik_api::daemonsets::{default_daemon_set, validate_daemon_set};
use minik_api::meta::{ObjectMeta, StatusCause};
use minik_api::replication::{default_replication_controller, validate_replication_controller};
use minik_api::status;
use minik_api::workloads::validate_selector_update;
use serde_json::Value;

use super::{typed, untyped};
use crate::error::ApiResult;

/// A new ReplicationController: defaults, an empty status, validation.
pub fn prepare_create_replication_controller(object: Value) -> ApiResult<Value> {
    let mut rc: ReplicationController = typed(object, "ReplicationController")?;
    default_replication_controller(&mut rc);
    rc.status = Some(Default::default());
    let causes = validate_replication_controller(&rc);
    check("ReplicationController", &rc.metadata, causes)?;
    untyped(&rc)
}

/// An updated ReplicationController (main resource, `/status` or `/scale`).
pub fn prepare_update_replication_controller(object: Value) -> ApiResult<Value> {
    let mut rc: ReplicationController = typed(object, "ReplicationController")?;
    default_replication_controller(&mut rc);
    let causes = validate_replication_controller(&rc);
    check("ReplicationController", &rc.metadata, causes)?;
    untyped(&rc)
}

/// A new DaemonSet: defaults, an empty status, validation.
pub fn prepare_create_daemon_set(object: Value) -> ApiResult<Value> {
    let mut ds: DaemonSet = typed(object, "DaemonSet")?;
    default_daemon_set(&mut ds);
    ds.status = Some(Default::default());
    check("DaemonSet", &ds.metadata, validate_daemon_set(&ds))?;
    untyped(&ds)
}

/// An updated DaemonSet: defaults, validation, the same selector.
pub fn prepare_update_daemon_set(object: Value, old: &Value) -> ApiResult<Value> {
    let mut ds: DaemonSet = typed(object, "DaemonSet")?;
    let old: DaemonSet = typed(old.clone(), "DaemonSet")?;
    default_daemon_set(&mut ds);
    let mut causes = validate_daemon_set(&ds);
    if let (Some(new), Some(old)) = (&ds.spec, &old.spec) {
        causes.extend(validate_selector_update(&new.selector, &old.selector));
    }
    check("DaemonSet", &ds.metadata, causes)?;
    untyped(&ds)
}

/// A new CronJob: defaults, an empty status, validation.
pub fn prepare_create_cron_job(object: Value) -> ApiResult<Value> {
    let mut cj: CronJob = typed(object, "CronJob")?;
    default_cron_job(&mut cj);
    cj.status = Some(Default::default());
    check("CronJob", &cj.metadata, validate_cron_job(&cj))?;
    untyped(&cj)
}

/// An updated CronJob (main resource or `/status`): defaults, validation.
pub fn prepare_update_cron_job(object: Value) -> ApiResult<Value> {
    let mut cj: CronJob = typed(object, "CronJob")?;
    default_cron_job(&mut cj);
    check("CronJob", &cj.metadata, validate_cron_job(&cj))?;
    untyped(&cj)
}

fn check(kind: &str, metadata: &ObjectMeta, causes: Vec<StatusCause>) -> ApiResult<()> {
    if causes.is_empty() {
        return Ok(());
    }
    let name = metadata.name.as_deref().unwrap_or("");
    Err(status::invalid(kind, name, causes).into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template() -> Value {
        json!({"metadata": {"labels": {"app": "web"}},
               "spec": {"containers": [{"name": "web", "image": "nginx"}]}})
    }

    #[test]
    fn a_replication_controller_gets_its_selector_from_the_template_and_may_change_it() {
        let rc = json!({"apiVersion": "v1", "kind": "ReplicationController",
                        "metadata": {"name": "web"}, "spec": {"template": template()},
                        "status": {"replicas": 4}});
        let created = prepare_create_replication_controller(rc).unwrap();
        assert_eq!(created["spec"]["selector"], json!({"app": "web"}));
        assert_eq!(created["status"], json!({"replicas": 0}));
        let mut changed = created.clone();
        changed["spec"]["template"]["metadata"]["labels"]["tier"] = json!("front");
        changed["spec"]["selector"]["tier"] = json!("front");
        assert!(prepare_update_replication_controller(changed).is_ok());
        let mut bad = created;
        bad["spec"]["selector"] = json!({"app": "api"});
        let error = prepare_update_replication_controller(bad).unwrap_err();
        assert_eq!(error.code(), 422);
    }

    #[test]
    fn a_daemon_set_selector_is_immutable() {
        let ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "web"},
                        "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": template()}});
        let created = prepare_create_daemon_set(ds).unwrap();
        assert_eq!(created["spec"]["updateStrategy"]["type"], "RollingUpdate");
        let mut changed = created.clone();
        changed["spec"]["selector"] = json!({"matchLabels": {"app": "api"}});
        changed["spec"]["template"]["metadata"]["labels"] = json!({"app": "api"});
        let error = prepare_update_daemon_set(changed, &created).unwrap_err();
        let causes = error.0.details.unwrap().causes.unwrap();
        assert_eq!(causes[0].field.as_deref(), Some("spec.selector"));
    }
}
