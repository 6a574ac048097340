//! Unit tests of the pod row: every STATUS rule of `printPod`, READY, RESTARTS and the wide columns.

use serde_json::{json, Value};

use super::*;

fn pod(spec: Value, status: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "default", "creationTimestamp": "2026-11-22T02:00:00Z"},
        "spec": spec,
        "status": status,
    }))
    .unwrap()
}

fn now() -> Timestamp {
    "2026-11-22T02:05:00Z".parse().unwrap()
}

fn one_container() -> Value {
    json!({"containers": [{"name": "web", "image": "nginx"}]})
}

fn two_inits() -> Value {
    json!({"initContainers": [{"name": "i1", "image": "x"}, {"name": "i2", "image": "x"}], "containers": [{"name": "web", "image": "nginx"}]})
}

fn container(name: &str, ready: bool, state: Value) -> Value {
    json!({"name": name, "ready": ready, "restartCount": 0, "image": "nginx", "imageID": "", "state": state})
}

#[test]
fn a_pending_pod_shows_its_phase_and_a_creating_container_its_reason() {
    assert_eq!(
        pod_status(&pod(one_container(), json!({"phase": "Pending"}))),
        "Pending"
    );
    let creating = pod(
        one_container(),
        json!({"phase": "Pending", "containerStatuses": [container("web", false, json!({"waiting": {"reason": "ContainerCreating"}}))]}),
    );
    assert_eq!(pod_status(&creating), "ContainerCreating");
}

#[test]
fn a_running_ready_pod_reads_running_one_of_one() {
    let running = pod(
        one_container(),
        json!({"phase": "Running", "podIP": "127.244.1.2", "containerStatuses": [container("web", true, json!({"running": {"startedAt": "2026-11-22T02:00:01Z"}}))]}),
    );
    assert_eq!(
        pod_row(&running, false, now()),
        ["web", "1/1", "Running", "0", "5m"]
    );
    assert_eq!(
        pod_row(&running, true, now())[5..],
        ["127.244.1.2", "<none>", "<none>", "<none>"]
    );
}

#[test]
fn crash_loop_shows_the_waiting_reason_and_restarts_ago() {
    let mut status = container(
        "web",
        false,
        json!({"waiting": {"reason": "CrashLoopBackOff"}}),
    );
    status["restartCount"] = json!(3);
    status["lastState"] = json!({"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": "2026-11-22T02:04:00Z"}});
    let crashing = pod(
        one_container(),
        json!({"phase": "Running", "containerStatuses": [status]}),
    );
    assert_eq!(pod_status(&crashing), "CrashLoopBackOff");
    assert_eq!(pod_restarts(&crashing, now()), "3 (60s ago)");
}

#[test]
fn terminated_containers_give_their_reason_or_exit_code_or_signal() {
    let completed = pod(
        one_container(),
        json!({"phase": "Succeeded", "containerStatuses": [container("web", false, json!({"terminated": {"exitCode": 0, "reason": "Completed"}}))]}),
    );
    assert_eq!(pod_status(&completed), "Completed");
    let exit = pod(
        one_container(),
        json!({"phase": "Failed", "containerStatuses": [container("web", false, json!({"terminated": {"exitCode": 3}}))]}),
    );
    assert_eq!(pod_status(&exit), "ExitCode:3");
    let signal = pod(
        one_container(),
        json!({"phase": "Failed", "containerStatuses": [container("web", false, json!({"terminated": {"exitCode": 137, "signal": 9}}))]}),
    );
    assert_eq!(pod_status(&signal), "Signal:9");
}

#[test]
fn the_first_container_that_is_not_running_decides() {
    let spec = json!({"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "x"}]});
    let status = json!({"phase": "Running", "containerStatuses": [
        container("a", false, json!({"waiting": {"reason": "ImagePullBackOff"}})),
        container("b", false, json!({"waiting": {"reason": "CrashLoopBackOff"}})),
    ]});
    assert_eq!(pod_status(&pod(spec, status)), "ImagePullBackOff");
}

#[test]
fn completed_next_to_a_running_container_is_running_or_not_ready() {
    let spec = json!({"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "x"}]});
    let statuses = json!([
        container(
            "a",
            false,
            json!({"terminated": {"exitCode": 0, "reason": "Completed"}})
        ),
        container("b", true, json!({"running": {}})),
    ]);
    let ready = pod(
        spec.clone(),
        json!({"phase": "Running", "containerStatuses": statuses, "conditions": [{"type": "Ready", "status": "True"}]}),
    );
    assert_eq!(pod_status(&ready), "Running");
    let not_ready = pod(
        spec,
        json!({"phase": "Running", "containerStatuses": statuses}),
    );
    assert_eq!(pod_status(&not_ready), "NotReady");
}

#[test]
fn init_containers_show_progress_then_failures() {
    let first_running = pod(
        two_inits(),
        json!({"phase": "Pending", "initContainerStatuses": [
            container("i1", false, json!({"running": {}})),
            container("i2", false, json!({"waiting": {"reason": "PodInitializing"}})),
        ]}),
    );
    assert_eq!(pod_status(&first_running), "Init:0/2");
    let second_running = pod(
        two_inits(),
        json!({"phase": "Pending", "initContainerStatuses": [
            container("i1", false, json!({"terminated": {"exitCode": 0, "reason": "Completed"}})),
            container("i2", false, json!({"running": {}})),
        ]}),
    );
    assert_eq!(pod_status(&second_running), "Init:1/2");
    let failed = pod(
        two_inits(),
        json!({"phase": "Pending", "initContainerStatuses": [
            container("i1", false, json!({"terminated": {"exitCode": 1, "reason": "Error"}})),
        ]}),
    );
    assert_eq!(pod_status(&failed), "Init:Error");
    let backoff = pod(
        two_inits(),
        json!({"phase": "Pending", "initContainerStatuses": [
            container("i1", false, json!({"waiting": {"reason": "CrashLoopBackOff"}})),
        ]}),
    );
    assert_eq!(pod_status(&backoff), "Init:CrashLoopBackOff");
}

#[test]
fn deletion_timestamp_shows_terminating_unless_finished() {
    let mut running = pod(
        one_container(),
        json!({"phase": "Running", "containerStatuses": [container("web", true, json!({"running": {}}))]}),
    );
    running.metadata.deletion_timestamp = Some(crate::meta::Time(now()));
    assert_eq!(pod_status(&running), "Terminating");
    let mut done = pod(
        one_container(),
        json!({"phase": "Succeeded", "containerStatuses": [container("web", false, json!({"terminated": {"exitCode": 0, "reason": "Completed"}}))]}),
    );
    done.metadata.deletion_timestamp = Some(crate::meta::Time(now()));
    assert_eq!(pod_status(&done), "Completed");
}

#[test]
fn ready_counts_only_containers_that_are_ready_and_running() {
    let exited = json!({"terminated": {"exitCode": 0, "reason": "Completed"}});
    let running = json!({"running": {"startedAt": "2026-11-22T02:00:00Z"}});
    let spec = json!({"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "x"}]});
    let status = json!({"phase": "Running", "containerStatuses": [
        container("a", true, exited),
        container("b", true, running),
    ]});
    assert_eq!(pod_ready(&pod(spec, status)), "1/2");
}

#[test]
fn readiness_gates_count_true_conditions() {
    let spec = json!({"containers": [{"name": "web", "image": "x"}], "readinessGates": [{"conditionType": "example.com/lb"}]});
    let gated = pod(
        spec,
        json!({"phase": "Running", "conditions": [{"type": "example.com/lb", "status": "True"}]}),
    );
    assert_eq!(pod_row(&gated, true, now())[8], "1/1");
}
