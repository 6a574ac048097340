//! The rows of `get jobs`.
//!
//! Kubernetes counterpart: `printJob` in `pkg/printers/internalversion/printers.go` (1.32).
//! STATUS is the first of Complete, Failed, Terminating, Suspended, FailureTarget,
//! SuccessCriteriaMet that holds, else Running; COMPLETIONS is `succeeded/completions` (a work
//! queue Job shows `n/1`, or `n/1 of P` with parallelism P > 1); DURATION runs from `startTime` to
//! `completionTime` (or to now while the Job runs). The wide columns are a workload's.

use jiff::Timestamp;
use k8s_openapi::api::batch::v1::{Job, JobCondition};

use super::duration::{age, human_duration};
use super::workloads::template_cells;

/// NAME STATUS COMPLETIONS DURATION AGE [CONTAINERS IMAGES SELECTOR].
pub fn job_row(job: &Job, wide: bool, now: Timestamp) -> Vec<String> {
    let spec = job.spec.clone().unwrap_or_default();
    let status = job.status.clone().unwrap_or_default();
    let conditions = status.conditions.as_deref().unwrap_or_default();
    let succeeded = status.succeeded.unwrap_or(0);
    let completions = match (spec.completions, spec.parallelism.unwrap_or(0)) {
        (Some(completions), _) => format!("{succeeded}/{completions}"),
        (None, parallelism) if parallelism > 1 => format!("{succeeded}/1 of {parallelism}"),
        (None, _) => format!("{succeeded}/1"),
    };
    let start = status.start_time.as_ref().map(|t| t.0);
    let end = status.completion_time.as_ref().map_or(now, |t| t.0);
    let duration = start
        .map(|start| human_duration(end.duration_since(start).as_secs()))
        .unwrap_or_default();
    let mut row = vec![
        job.metadata.name.clone().unwrap_or_default(),
        job_status(conditions, job.metadata.deletion_timestamp.is_some()).to_string(),
        completions,
        duration,
        age(job.metadata.creation_timestamp.as_ref().map(|t| t.0), now),
    ];
    if wide {
        let selector = spec.selector.clone().unwrap_or_default();
        row.extend(template_cells(Some(&spec.template), &selector));
    }
    row
}

fn job_status(conditions: &[JobCondition], terminating: bool) -> &'static str {
    let has = |type_: &str| {
        conditions
            .iter()
            .any(|c| c.type_ == type_ && c.status == "True")
    };
    if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if terminating {
        "Terminating"
    } else if has("Suspended") {
        "Suspended"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else if has("SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> Timestamp {
        "2026-11-22T02:05:00Z".parse().unwrap()
    }

    fn job(spec: serde_json::Value, status: serde_json::Value) -> Job {
        let mut spec = spec;
        spec["template"] = json!({"spec": {"containers": [{"name": "pi", "image": "perl"}]}});
        spec["selector"] = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}});
        serde_json::from_value(json!({
            "metadata": {"name": "pi", "creationTimestamp": "2026-11-22T02:03:00Z"},
            "spec": spec, "status": status}))
        .unwrap()
    }

    #[test]
    fn a_running_job_counts_succeeded_of_completions_and_runs_its_duration_to_now() {
        let running = job(
            json!({"completions": 3, "parallelism": 2}),
            json!({"succeeded": 1, "startTime": "2026-11-22T02:04:30Z"}),
        );
        assert_eq!(
            job_row(&running, true, now()),
            [
                "pi",
                "Running",
                "1/3",
                "30s",
                "2m",
                "pi",
                "perl",
                "batch.kubernetes.io/controller-uid=u1"
            ]
        );
    }

    #[test]
    fn a_finished_job_stops_its_duration_and_names_its_terminal_condition() {
        let complete = job(
            json!({"completions": 1}),
            json!({"succeeded": 1, "startTime": "2026-11-22T02:03:00Z",
                   "completionTime": "2026-11-22T02:03:07Z",
                   "conditions": [{"type": "SuccessCriteriaMet", "status": "True"},
                                  {"type": "Complete", "status": "True"}]}),
        );
        assert_eq!(
            job_row(&complete, false, now())[1..4],
            ["Complete", "1/1", "7s"]
        );
        let failing = job(
            json!({"completions": 1}),
            json!({"conditions": [{"type": "FailureTarget", "status": "True"}]}),
        );
        assert_eq!(job_row(&failing, false, now())[1], "FailureTarget");
        assert_eq!(job_row(&failing, false, now())[3], "");
    }

    #[test]
    fn a_work_queue_job_shows_one_completion_of_its_parallelism() {
        let queue = job(json!({"parallelism": 3}), json!({"succeeded": 0}));
        assert_eq!(job_row(&queue, false, now())[2], "0/1 of 3");
        let single = job(json!({"parallelism": 1}), json!({}));
        assert_eq!(job_row(&single, false, now())[2], "0/1");
    }
}
