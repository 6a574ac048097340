//! batch/v1 Jobs: their defaults, the selector the server generates, their validation.
//!
//! Kubernetes counterpart: `pkg/apis/batch/v1/defaults.go` (`SetDefaults_Job`),
//! `pkg/registry/batch/job/strategy.go` (`generateSelector`, `PrepareForCreate`) and
//! `pkg/apis/batch/validation/validation.go` (`ValidateJob`, `ValidateJobSpecUpdate`). The pod
//! template gets a pod's defaults and validation, with paths under `spec.template.spec`.
//!
//! minik simplifies: `podFailurePolicy`, `successPolicy` and `backoffLimitPerIndex` are stored but
//! not validated; the template and `completions` are immutable outright (upstream lets a suspended
//! Job change some template fields, and an elastic Indexed Job change `completions`).

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::Job;

use crate::core::PodTemplateSpec;
use crate::meta::{LabelSelector as MetaSelector, StatusCause};
use crate::status::cause;
use crate::workloads::{default_template, selector_from_meta, validate_template_as_pod};

/// The label of the generated selector (and of every pod of the Job).
pub const CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
/// The label naming the Job on its pods.
pub const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
/// The unprefixed labels upstream still writes for old selectors.
pub const LEGACY_CONTROLLER_UID_LABEL: &str = "controller-uid";
/// See [`LEGACY_CONTROLLER_UID_LABEL`].
pub const LEGACY_JOB_NAME_LABEL: &str = "job-name";
/// The annotation (and label) carrying an Indexed Job pod's completion index.
pub const COMPLETION_INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// The finalizer that keeps a finished pod until the controller counted it.
pub const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";

/// `SetDefaults_Job`: parallelism (and, when both are unset, completions) 1, backoffLimit 6,
/// NonIndexed, not suspended, the pod replacement policy; labels default to the template's.
pub fn default_job(job: &mut Job) {
    let spec = job.spec.get_or_insert_with(Default::default);
    if spec.completions.is_none() && spec.parallelism.is_none() {
        spec.completions = Some(1);
    }
    spec.parallelism.get_or_insert(1);
    // With backoffLimitPerIndex the global limit is effectively off (`defaults.go`).
    let limit = if spec.backoff_limit_per_index.is_some() {
        i32::MAX
    } else {
        6
    };
    spec.backoff_limit.get_or_insert(limit);
    spec.completion_mode
        .get_or_insert_with(|| "NonIndexed".to_string());
    spec.suspend.get_or_insert(false);
    let replacement = if spec.pod_failure_policy.is_some() {
        "Failed"
    } else {
        "TerminatingOrFailed"
    };
    spec.pod_replacement_policy
        .get_or_insert_with(|| replacement.to_string());
    default_template(&mut spec.template);
    default_labels(job);
}

/// Empty Job labels become the template's.
fn default_labels(job: &mut Job) {
    let template_labels = job
        .spec
        .as_ref()
        .and_then(|s| s.template.metadata.as_ref())
        .and_then(|m| m.labels.clone())
        .filter(|labels| !labels.is_empty());
    if job.metadata.labels.as_ref().is_none_or(BTreeMap::is_empty) {
        job.metadata.labels = template_labels;
    }
}

/// `generateSelector`: unless `manualSelector` is true, the template gets the controller-uid and
/// job-name labels (prefixed and legacy) and an unset selector becomes `controller-uid=<uid>`.
pub fn generate_selector(job: &mut Job) {
    let name = job.metadata.name.clone().unwrap_or_default();
    let uid = job.metadata.uid.clone().unwrap_or_default();
    let Some(spec) = job.spec.as_mut() else {
        return;
    };
    if spec.manual_selector == Some(true) {
        return;
    }
    let labels = spec
        .template
        .metadata
        .get_or_insert_with(Default::default)
        .labels
        .get_or_insert_with(Default::default);
    for (key, value) in [
        (CONTROLLER_UID_LABEL, &uid),
        (JOB_NAME_LABEL, &name),
        (LEGACY_CONTROLLER_UID_LABEL, &uid),
        (LEGACY_JOB_NAME_LABEL, &name),
    ] {
        labels
            .entry(key.to_string())
            .or_insert_with(|| value.clone());
    }
    spec.selector.get_or_insert_with(|| MetaSelector {
        match_labels: Some(BTreeMap::from([(CONTROLLER_UID_LABEL.to_string(), uid)])),
        match_expressions: None,
    });
    default_labels(job);
}

/// `ValidateJob`: the causes of a 422, with paths from the object's root.
pub fn validate_job(job: &Job) -> Vec<StatusCause> {
    let Some(spec) = &job.spec else {
        return vec![cause("spec", "FieldValueRequired", "Required value")];
    };
    let mut causes = Vec::new();
    let counts = [
        ("spec.parallelism", spec.parallelism.map(i64::from)),
        ("spec.completions", spec.completions.map(i64::from)),
        ("spec.backoffLimit", spec.backoff_limit.map(i64::from)),
        ("spec.activeDeadlineSeconds", spec.active_deadline_seconds),
        (
            "spec.ttlSecondsAfterFinished",
            spec.ttl_seconds_after_finished.map(i64::from),
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
    causes.extend(validate_completion_mode(
        spec.completion_mode.as_deref(),
        spec.completions,
    ));
    causes.extend(validate_selector(job));
    causes.extend(validate_template(&spec.template));
    causes
}

fn validate_completion_mode(mode: Option<&str>, completions: Option<i32>) -> Vec<StatusCause> {
    match mode {
        None | Some("NonIndexed") => Vec::new(),
        Some("Indexed") if completions.is_none() => vec![cause(
            "spec.completions",
            "FieldValueRequired",
            "Required value: when completion mode is Indexed",
        )],
        Some("Indexed") => Vec::new(),
        Some(other) => vec![cause(
            "spec.completionMode",
            "FieldValueNotSupported",
            format!(
                "Unsupported value: \"{other}\": supported values: \"NonIndexed\", \"Indexed\""
            ),
        )],
    }
}

/// The selector is required, must match the template, and unless `manualSelector` it must be
/// the generated one (`ValidateGeneratedSelector`).
fn validate_selector(job: &Job) -> Vec<StatusCause> {
    let Some(spec) = &job.spec else {
        return Vec::new();
    };
    let Some(selector) = &spec.selector else {
        return vec![cause(
            "spec.selector",
            "FieldValueRequired",
            "Required value",
        )];
    };
    let parsed = match selector_from_meta(selector) {
        Ok(parsed) => parsed,
        Err(error) => return vec![cause("spec.selector", "FieldValueInvalid", error.0)],
    };
    let shown = serde_json::to_string(selector).unwrap_or_default();
    let mut causes = Vec::new();
    if spec.manual_selector != Some(true) {
        let uid = job.metadata.uid.as_deref().unwrap_or_default();
        let generated = selector
            .match_labels
            .as_ref()
            .and_then(|labels| labels.get(CONTROLLER_UID_LABEL))
            .is_some_and(|value| value == uid);
        if !generated {
            causes.push(cause(
                "spec.selector",
                "FieldValueInvalid",
                format!("Invalid value: {shown}: `selector` not auto-generated"),
            ));
        }
    }
    if parsed.is_empty() {
        causes.push(cause(
            "spec.selector",
            "FieldValueInvalid",
            format!("Invalid value: {shown}: empty selector is invalid for job"),
        ));
    }
    let labels = spec
        .template
        .metadata
        .as_ref()
        .and_then(|m| m.labels.clone())
        .unwrap_or_default();
    if !parsed.is_empty() && !parsed.matches(&labels) {
        let shown = serde_json::to_string(&labels).unwrap_or_default();
        causes.push(cause(
            "spec.template.metadata.labels",
            "FieldValueInvalid",
            format!("Invalid value: {shown}: `selector` does not match template `labels`"),
        ));
    }
    causes
}

/// The template as a pod, with `restartPolicy` limited to `OnFailure` or `Never`: a Job's pods
/// end, so `Always` (the pod default) is refused.
fn validate_template(template: &PodTemplateSpec) -> Vec<StatusCause> {
    let mut causes = validate_template_as_pod(template);
    let path = "spec.template.spec.restartPolicy";
    let policy = template
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

/// `ValidateJobSpecUpdate`: selector, template, completions and completionMode never change.
pub fn validate_job_update(new: &Job, old: &Job) -> Vec<StatusCause> {
    let (Some(new), Some(old)) = (&new.spec, &old.spec) else {
        return Vec::new();
    };
    let mut causes = Vec::new();
    let mut immutable = |path: &str, same: bool, shown: String| {
        if !same {
            causes.push(cause(
                path,
                "FieldValueInvalid",
                format!("Invalid value: {shown}: field is immutable"),
            ));
        }
    };
    immutable(
        "spec.selector",
        new.selector == old.selector,
        shown(&new.selector),
    );
    immutable(
        "spec.template",
        new.template == old.template,
        shown(&new.template),
    );
    immutable(
        "spec.completions",
        new.completions == old.completions,
        shown(&new.completions),
    );
    immutable(
        "spec.completionMode",
        new.completion_mode == old.completion_mode,
        shown(&new.completion_mode),
    );
    causes
}

/// A value as upstream's `Invalid value:` shows it (JSON).
fn shown<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

#[cfg(test)]
#[path = "jobs_tests.rs"]
mod tests;
