//! batch/v1 CronJobs: their defaults and their validation.
//!
//! Kubernetes counterpart: `pkg/apis/batch/v1/defaults.go` (`SetDefaults_CronJob`) and
//! `pkg/apis/batch/validation/validation.go` (`ValidateCronJobCreate`, `validateCronJobSpec`,
//! `validateScheduleFormat`, `validateTimeZone`). The Job template's pod template gets a pod's
//! defaults and validation, with paths under `spec.jobTemplate.spec.template.spec`, and
//! `restartPolicy` must be `OnFailure` or `Never` as for any Job.
//!
//! minik simplifies: the Job template's own fields (completions, backoffLimit…) are not
//! validated here; the Job created from it is, when the controller creates it.

use k8s_openapi::api::batch::v1::CronJob;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::StatusCause;

use crate::cron::Schedule;
use crate::status::cause;
use crate::workloads::{default_template, validate_template_as_pod};

/// `SetDefaults_CronJob`: concurrency Allow, not suspended, keep 3 successful and 1 failed Job.
pub fn default_cron_job(cj: &mut CronJob) {
    let spec = cj.spec.get_or_insert_with(Default::default);
    spec.concurrency_policy
        .get_or_insert_with(|| "Allow".to_string());
    spec.suspend.get_or_insert(false);
    spec.successful_jobs_history_limit.get_or_insert(3);
    spec.failed_jobs_history_limit.get_or_insert(1);
    let job_spec = spec.job_template.spec.get_or_insert_with(Default::default);
    default_template(&mut job_spec.template);
}

/// `validateCronJobSpec`: the causes of a 422, with paths from the object's root.
pub fn validate_cron_job(cj: &CronJob) -> Vec<StatusCause> {
    let Some(spec) = &cj.spec else {
        return vec![cause("spec", "FieldValueRequired", "Required value")];
    };
    let mut causes = Vec::new();
    if spec.schedule.contains("TZ=") {
        causes.push(cause(
            "spec.schedule",
            "FieldValueInvalid",
            format!(
                "Invalid value: \"{}\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                spec.schedule
            ),
        ));
    } else if let Err(why) = Schedule::parse(&spec.schedule) {
        causes.push(cause(
            "spec.schedule",
            "FieldValueInvalid",
            format!("Invalid value: \"{}\": {why}", spec.schedule),
        ));
    }
    if let Some(zone) = &spec.time_zone {
        if jiff::tz::TimeZone::get(zone).is_err() || zone.is_empty() {
            causes.push(cause(
                "spec.timeZone",
                "FieldValueInvalid",
                format!("Invalid value: \"{zone}\": unknown time zone {zone}"),
            ));
        }
    }
    let policy = spec.concurrency_policy.as_deref().unwrap_or("Allow");
    if !matches!(policy, "Allow" | "Forbid" | "Replace") {
        causes.push(cause(
            "spec.concurrencyPolicy",
            "FieldValueNotSupported",
            format!(
                "Unsupported value: \"{policy}\": supported values: \"Allow\", \"Forbid\", \"Replace\""
            ),
        ));
    }
    let counts = [
        (
            "spec.startingDeadlineSeconds",
            spec.starting_deadline_seconds,
        ),
        (
            "spec.successfulJobsHistoryLimit",
            spec.successful_jobs_history_limit.map(i64::from),
        ),
        (
            "spec.failedJobsHistoryLimit",
            spec.failed_jobs_history_limit.map(i64::from),
        ),
    ];
    for (path, value) in counts {
        if let Some(value) = value.filter(|v| *v < 0) {
            causes.push(cause(
                path,
                "FieldValueInvalid",
                format!("Invalid value: {value}: must be greater than or equal to 0"),
            ));
        }
    }
    causes.extend(validate_job_template(cj));
    causes
}

/// The Job template's pod template as a pod, paths under `spec.jobTemplate.spec`.
fn validate_job_template(cj: &CronJob) -> Vec<StatusCause> {
    let Some(job_spec) = cj.spec.as_ref().and_then(|s| s.job_template.spec.as_ref()) else {
        return Vec::new();
    };
    let mut causes: Vec<StatusCause> = validate_template_as_pod(&job_spec.template)
        .into_iter()
        .map(|mut cause| {
            cause.field = cause.field.map(|field| format!("spec.jobTemplate.{field}"));
            cause
        })
        .collect();
    let path = "spec.jobTemplate.spec.template.spec.restartPolicy";
    let policy = job_spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .unwrap_or("Always");
    let already = causes.iter().any(|c| c.field.as_deref() == Some(path));
    if !matches!(policy, "OnFailure" | "Never") && !already {
        causes.push(cause(
            path,
            "FieldValueNotSupported",
            format!("Unsupported value: \"{policy}\": supported values: \"OnFailure\", \"Never\""),
        ));
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cron_job(spec: serde_json::Value) -> CronJob {
        let mut spec = spec;
        spec["jobTemplate"] = json!({"spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "tick", "image": "busybox"}]}}}});
        serde_json::from_value(json!({"metadata": {"name": "tick"}, "spec": spec})).unwrap()
    }

    fn fields(causes: &[StatusCause]) -> Vec<&str> {
        causes.iter().filter_map(|c| c.field.as_deref()).collect()
    }

    #[test]
    fn the_defaults_allow_concurrency_and_keep_three_and_one() {
        let mut cj = cron_job(json!({"schedule": "@hourly"}));
        default_cron_job(&mut cj);
        let value = serde_json::to_value(&cj).unwrap();
        assert_eq!(value["spec"]["concurrencyPolicy"], "Allow");
        assert_eq!(value["spec"]["successfulJobsHistoryLimit"], 3);
        assert_eq!(value["spec"]["failedJobsHistoryLimit"], 1);
        assert!(validate_cron_job(&cj).is_empty());
    }

    #[test]
    fn each_bad_field_is_a_cause_at_its_path() {
        let mut cj = cron_job(json!({"schedule": "61 * * * *", "timeZone": "Mars/Olympus",
            "concurrencyPolicy": "Sometimes", "startingDeadlineSeconds": -1}));
        default_cron_job(&mut cj);
        assert_eq!(
            fields(&validate_cron_job(&cj)),
            [
                "spec.schedule",
                "spec.timeZone",
                "spec.concurrencyPolicy",
                "spec.startingDeadlineSeconds"
            ]
        );
        let mut tz = cron_job(json!({"schedule": "TZ=UTC 0 * * * *"}));
        default_cron_job(&mut tz);
        let causes = validate_cron_job(&tz);
        assert!(causes[0]
            .message
            .as_deref()
            .unwrap()
            .contains("use timeZone field"));
        let mut always = cron_job(json!({"schedule": "@daily"}));
        default_cron_job(&mut always);
        let template = &mut always.spec.as_mut().unwrap().job_template;
        template
            .spec
            .as_mut()
            .unwrap()
            .template
            .spec
            .as_mut()
            .unwrap()
            .restart_policy = Some("Always".into());
        assert_eq!(
            fields(&validate_cron_job(&always)),
            ["spec.jobTemplate.spec.template.spec.restartPolicy"]
        );
    }
}
