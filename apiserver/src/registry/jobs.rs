//! The Job strategy: defaults, the generated selector, validation, an immutable template.
//!
//! Kubernetes counterpart: `pkg/registry/batch/job/strategy.go`. `PrepareForCreate` clears the
//! status (the Job controller writes it through `/status`) and generates the selector from the
//! uid the generic store just assigned; `Validate` runs `ValidateJob`; `ValidateUpdate` adds that
//! the selector, template, completions and completionMode never change. The rules are in
//! `minik_api::jobs`, pure.

use minik_api::batch::Job;
use minik_api::jobs::{default_job, generate_selector, validate_job, validate_job_update};
use minik_api::status;
use serde_json::Value;

use super::{typed, untyped};
use crate::error::ApiResult;

/// A new Job: defaults, the generated selector, an empty status, validation.
pub fn prepare_create(object: Value) -> ApiResult<Value> {
    let mut job: Job = typed(object, "Job")?;
    default_job(&mut job);
    generate_selector(&mut job);
    job.status = Some(Default::default());
    check(&job, validate_job(&job))?;
    untyped(&job)
}

/// An updated Job (main resource or `/status`): defaults, validation, immutable fields.
pub fn prepare_update(object: Value, old: &Value) -> ApiResult<Value> {
    let mut job: Job = typed(object, "Job")?;
    let old: Job = typed(old.clone(), "Job")?;
    default_job(&mut job);
    let mut causes = validate_job(&job);
    causes.extend(validate_job_update(&job, &old));
    check(&job, causes)?;
    untyped(&job)
}

fn check(job: &Job, causes: Vec<minik_api::meta::StatusCause>) -> ApiResult<()> {
    if causes.is_empty() {
        return Ok(());
    }
    let name = job.metadata.name.as_deref().unwrap_or("");
    Err(status::invalid("Job", name, causes).into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pi() -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": "pi", "uid": "0b1c"},
               "spec": {"template": {"spec": {"restartPolicy": "Never",
                        "containers": [{"name": "pi", "image": "perl"}]}}},
               "status": {"succeeded": 5}})
    }

    #[test]
    fn create_generates_the_selector_and_clears_the_status() {
        let created = prepare_create(pi()).unwrap();
        assert_eq!(created["status"], json!({}));
        assert_eq!(
            created["spec"]["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "0b1c"}})
        );
        assert_eq!(created["metadata"]["labels"]["job-name"], "pi");
        assert_eq!(created["spec"]["backoffLimit"], 6);
    }

    #[test]
    fn an_update_of_the_template_is_a_422_on_spec_template() {
        let created = prepare_create(pi()).unwrap();
        let mut changed = created.clone();
        changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("busybox");
        let error = prepare_update(changed, &created).unwrap_err();
        assert_eq!(error.code(), 422);
        let causes = error.0.details.unwrap().causes.unwrap();
        assert_eq!(causes[0].field.as_deref(), Some("spec.template"));
        let mut suspended = created.clone();
        suspended["spec"]["suspend"] = json!(true);
        assert!(prepare_update(suspended, &created).is_ok());
    }

    #[test]
    fn restart_policy_always_is_a_422() {
        let mut always = pi();
        always["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        let error = prepare_create(always).unwrap_err();
        assert_eq!(error.code(), 422);
    }
}
