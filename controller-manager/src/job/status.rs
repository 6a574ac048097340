//! The status a Job should carry after a sync, and the pods it stamps out.
//!
//! Kubernetes counterpart: `pkg/controller/job/job_controller.go` (`syncJob`'s status updates,
//! `newCondition`, `ensureJobConditionStatus`, `manageJob`'s pod template with the tracking
//! finalizer) and `indexed_job_utils.go` (`addCompletionIndexEnvVariables`). Pure: the Job, the
//! counts and the clock in, a `JobStatus` or a `Pod` out.

use jiff::Timestamp;
use minik_api::batch::{Job, JobCondition, JobStatus, UncountedTerminatedPods};
use minik_api::core::{EnvVar, EnvVarSource, ObjectFieldSelector, Pod};
use minik_api::jobs::{COMPLETION_INDEX_ANNOTATION, TRACKING_FINALIZER};
use minik_api::meta::{ObjectMeta, Time};

use super::decide::{finish, Counts, Target, Uncounted};
use crate::ownership::controller_ref;

/// What a sync learned, for [`next_status`].
#[derive(Clone, Debug)]
pub struct Observed {
    /// Counts of the Job's pods (succeeded/failed: the status counters, already updated).
    pub counts: Counts,
    /// Finished pods recorded but not yet counted.
    pub uncounted: Uncounted,
    /// The decided outcome, if any.
    pub target: Option<Target>,
    /// `completedIndexes` of an Indexed Job.
    pub completed_indexes: Option<String>,
}

/// The Job's next status: counters, start and completion times, and its conditions.
pub fn next_status(job: &Job, observed: &Observed, now: Timestamp) -> JobStatus {
    let old = job.status.clone().unwrap_or_default();
    let suspend = job.spec.as_ref().and_then(|s| s.suspend).unwrap_or(false);
    let mut conditions = old.conditions.clone().unwrap_or_default();
    let mut status = JobStatus {
        active: Some(observed.counts.active),
        ready: Some(observed.counts.ready),
        terminating: Some(observed.counts.terminating),
        succeeded: Some(observed.counts.succeeded),
        failed: Some(observed.counts.failed),
        uncounted_terminated_pods: Some(UncountedTerminatedPods {
            succeeded: non_empty(&observed.uncounted.succeeded),
            failed: non_empty(&observed.uncounted.failed),
        }),
        completed_indexes: observed.completed_indexes.clone(),
        start_time: old.start_time.clone(),
        completion_time: old.completion_time.clone(),
        ..JobStatus::default()
    };
    if let Some(target) = &observed.target {
        set_condition(
            &mut conditions,
            target.type_,
            target.reason,
            target.message,
            now,
        );
        if finish(&observed.counts, &observed.uncounted) {
            let terminal = target.terminal_type();
            set_condition(
                &mut conditions,
                terminal,
                target.reason,
                target.message,
                now,
            );
            if terminal == "Complete" {
                status.completion_time.get_or_insert(Time(now));
            }
        }
    } else if suspend {
        // A suspended Job forgets its start: the deadline counts again on resume (JB8).
        set_condition(
            &mut conditions,
            "Suspended",
            "JobSuspended",
            "Job suspended",
            now,
        );
        status.start_time = None;
    } else {
        let resumed = conditions
            .iter()
            .any(|c| c.type_ == "Suspended" && c.status == "True");
        if resumed {
            let condition = conditions.iter_mut().find(|c| c.type_ == "Suspended");
            if let Some(condition) = condition {
                *condition = condition_now("Suspended", "False", "JobResumed", "Job resumed", now);
            }
        }
        status.start_time.get_or_insert(Time(now));
    }
    status.conditions = (!conditions.is_empty()).then_some(conditions);
    status
}

fn non_empty(set: &std::collections::BTreeSet<String>) -> Option<Vec<String>> {
    (!set.is_empty()).then(|| set.iter().cloned().collect())
}

/// Adds a True condition of `type_`, or leaves an existing True one as it is.
fn set_condition(
    conditions: &mut Vec<JobCondition>,
    type_: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) {
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(existing) if existing.status == "True" => {}
        Some(existing) => *existing = condition_now(type_, "True", reason, message, now),
        None => conditions.push(condition_now(type_, "True", reason, message, now)),
    }
}

fn condition_now(
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> JobCondition {
    JobCondition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: Some(reason.to_string()),
        message: Some(message.to_string()),
        last_probe_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    }
}

/// Whether the Job has its terminal condition (Complete or Failed).
pub fn is_finished(job: &Job) -> bool {
    job.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| matches!(c.type_.as_str(), "Complete" | "Failed") && c.status == "True")
}

/// A pod of the Job: the template, `generateName: JOB-` (`JOB-INDEX-` for Indexed), the
/// controller reference and the tracking finalizer (JB3); an index adds the annotation, the label
/// and `JOB_COMPLETION_INDEX` from the annotation through the downward API (JB7).
pub fn pod_from_template(job: &Job, index: Option<i32>) -> Pod {
    let template = job.spec.clone().unwrap_or_default().template;
    let template_meta = template.metadata.unwrap_or_default();
    let name = job.metadata.name.as_deref().unwrap_or_default();
    let mut finalizers = template_meta.finalizers.unwrap_or_default();
    finalizers.push(TRACKING_FINALIZER.to_string());
    let mut pod = Pod {
        metadata: ObjectMeta {
            generate_name: Some(match index {
                Some(index) => format!("{name}-{index}-"),
                None => format!("{name}-"),
            }),
            namespace: job.metadata.namespace.clone(),
            labels: template_meta.labels,
            annotations: template_meta.annotations,
            finalizers: Some(finalizers),
            owner_references: Some(vec![controller_ref("batch/v1", "Job", &job.metadata)]),
            ..ObjectMeta::default()
        },
        spec: template.spec,
        status: None,
    };
    if let Some(index) = index {
        add_index(&mut pod, name, index);
    }
    pod
}

fn add_index(pod: &mut Pod, job_name: &str, index: i32) {
    let value = index.to_string();
    let meta = &mut pod.metadata;
    for map in [&mut meta.annotations, &mut meta.labels] {
        map.get_or_insert_with(Default::default)
            .insert(COMPLETION_INDEX_ANNOTATION.to_string(), value.clone());
    }
    let Some(spec) = pod.spec.as_mut() else {
        return;
    };
    spec.hostname
        .get_or_insert_with(|| format!("{job_name}-{index}"));
    let env = EnvVar {
        name: "JOB_COMPLETION_INDEX".to_string(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                api_version: None,
                field_path: format!("metadata.annotations['{COMPLETION_INDEX_ANNOTATION}']"),
            }),
            ..EnvVarSource::default()
        }),
    };
    let containers = spec
        .init_containers
        .iter_mut()
        .flatten()
        .chain(spec.containers.iter_mut());
    for container in containers {
        container.env.get_or_insert_with(Vec::new).push(env.clone());
    }
}

/// The merge patch that removes the tracking finalizer, guarded by the pod's resourceVersion.
pub fn remove_finalizer_patch(pod: &Pod) -> serde_json::Value {
    let kept: Vec<&String> = pod
        .metadata
        .finalizers
        .iter()
        .flatten()
        .filter(|f| *f != TRACKING_FINALIZER)
        .collect();
    serde_json::json!({"metadata": {
        "finalizers": kept,
        "resourceVersion": pod.metadata.resource_version,
    }})
}

#[cfg(test)]
#[path = "status_tests.rs"]
mod tests;
