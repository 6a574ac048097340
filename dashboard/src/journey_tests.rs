//! Tests of the journey's pure step functions, on pods and slices written as JSON.

use super::*;
use serde_json::json;

fn pod(value: serde_json::Value) -> Pod {
    serde_json::from_value(value).unwrap()
}

fn names(steps: &[Step]) -> Vec<&str> {
    steps.iter().map(|s| s.step.as_str()).collect()
}

/// Each transition of the creation path gives one step, at the moment the watch saw it.
#[test]
fn a_pod_s_creation_path_gives_its_steps_once() {
    let created = pod(json!({"metadata": {"name": "web", "namespace": "default",
        "creationTimestamp": "2026-01-01T00:00:00Z"}, "spec": {"containers": [{"name": "app"}]}}));
    assert_eq!(names(&pod_steps(None, &created, 5, false)), ["created"]);
    assert_eq!(pod_steps(None, &created, 5, false)[0].at, 5);
    // From a list, the creation is the object's own timestamp.
    let listed = pod_steps(None, &created, 5, true);
    assert_eq!(listed[0].at, 1_767_225_600_000);

    let mut bound = created.clone();
    bound.spec.as_mut().unwrap().node_name = Some("node-1".into());
    assert_eq!(
        names(&pod_steps(Some(&created), &bound, 7, false)),
        ["bound to node"]
    );

    let running = pod(json!({"metadata": {"name": "web", "namespace": "default"},
        "spec": {"nodeName": "node-1", "containers": [{"name": "app"}]},
        "status": {"phase": "Running", "podIP": "127.244.1.2",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "app", "ready": true, "restartCount": 0, "image": "", "imageID": "",
                "state": {"running": {}}}]}}));
    let steps = pod_steps(Some(&bound), &running, 9, false);
    assert_eq!(
        names(&steps),
        ["IP assigned", "containers running", "Ready"]
    );
    assert!(pod_steps(Some(&running), &running, 10, false).is_empty());
}

/// Deletion: the deletionTimestamp with its grace, then the exit code, then gone.
#[test]
fn a_deletion_gives_the_timestamp_the_exit_and_gone() {
    let running = pod(
        json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "app"}]},
        "status": {"containerStatuses": [{"name": "app", "ready": true, "restartCount": 0, "image": "", "imageID": "",
            "state": {"running": {}}}]}}),
    );
    let mut deleting = running.clone();
    deleting.metadata.deletion_timestamp = Some(minik_api::now());
    deleting.metadata.deletion_grace_period_seconds = Some(30);
    let steps = pod_steps(Some(&running), &deleting, 1, false);
    assert_eq!(names(&steps), ["deletionTimestamp"]);
    assert_eq!(steps[0].detail, "grace 30s");
    let mut exited = deleting.clone();
    exited
        .status
        .as_mut()
        .unwrap()
        .container_statuses
        .as_mut()
        .unwrap()[0]
        .state = serde_json::from_value(json!({"terminated": {"exitCode": 143}})).unwrap();
    let steps = pod_steps(Some(&deleting), &exited, 2, false);
    assert_eq!(names(&steps), ["container terminated"]);
    assert_eq!(steps[0].detail, "app: exit code 143");
    assert_eq!(gone(3).step, "gone");
}

/// The kubelet's Events name the seeds' steps; `Killing` is SIGTERM.
#[test]
fn events_become_named_steps_at_their_event_time() {
    let event: Event = serde_json::from_value(json!({
        "metadata": {"name": "web.1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "web"},
        "reason": "Killing", "message": "Stopping container app",
        "eventTime": "2026-01-01T00:00:00.123456Z",
        "reportingComponent": "kubelet"
    }))
    .unwrap();
    let step = event_step(&event).unwrap();
    assert_eq!(
        (step.step.as_str(), step.who.as_str()),
        ("SIGTERM", "kubelet")
    );
    assert_eq!(step.at, 1_767_225_600_123);
}

fn endpoint(pod: &str, ready: bool, terminating: bool) -> SliceEndpoint {
    SliceEndpoint {
        pod: pod.into(),
        ip: "127.244.1.2".into(),
        ready,
        serving: ready || terminating,
        terminating,
    }
}

/// A slice diff: added, changed, removed, and nothing for an endpoint that did not change.
#[test]
fn slice_changes_are_diffed_per_pod() {
    let a = endpoint("a", true, false);
    let b = endpoint("b", true, false);
    let added = slice_steps(std::slice::from_ref(&a), &[a.clone(), b.clone()], 1);
    assert_eq!(added.len(), 1);
    assert_eq!(
        (added[0].0.as_str(), added[0].1.step.as_str()),
        ("b", "added to endpoints")
    );
    let changed = slice_steps(
        &[a.clone(), b.clone()],
        &[a.clone(), endpoint("b", false, true)],
        2,
    );
    assert_eq!(changed[0].1.step, "endpoint changed");
    assert!(changed[0]
        .1
        .detail
        .starts_with("not ready, serving, terminating"));
    let removed = slice_steps(&[a.clone(), b], &[a], 3);
    assert_eq!(
        (removed[0].0.as_str(), removed[0].1.step.as_str()),
        ("b", "removed from endpoints")
    );
}

/// Steps stay in time order, duplicates are dropped, and the first one is kept when trimming.
#[test]
fn insert_keeps_time_order_and_the_anchor() {
    let at = |t: i64, name: &str| step(t, name, "x", String::new(), "watch");
    let mut steps = vec![];
    for s in [
        at(0, "created"),
        at(30, "c"),
        at(10, "a"),
        at(20, "b"),
        at(10, "a"),
    ] {
        insert(&mut steps, s, 3);
    }
    assert_eq!(names(&steps), ["created", "b", "c"]);
}

/// The proxy's Event lists its endpoints; the diff says when it started and stopped routing.
#[test]
fn the_proxy_s_applied_endpoints_become_routing_steps() {
    let (port, ips) = applied_endpoints(
        "Applied endpoints for default/web:http: 127.244.1.2:8080,127.244.1.3:8080",
    )
    .unwrap();
    assert_eq!(
        (port.as_str(), ips.clone()),
        (
            "default/web:http",
            vec!["127.244.1.2".to_string(), "127.244.1.3".to_string()]
        )
    );
    assert_eq!(
        applied_endpoints("Applied endpoints for default/web:http: <none>")
            .unwrap()
            .1,
        Vec::<String>::new()
    );
    assert!(applied_endpoints("Started container app").is_none());
    let steps = consumer_steps("proxy", &ips[..1], &ips[1..], 5);
    let named: Vec<(&str, &str)> = steps
        .iter()
        .map(|(ip, s)| (ip.as_str(), s.step.as_str()))
        .collect();
    assert_eq!(
        named,
        [
            ("127.244.1.3", "proxy: routing to it"),
            ("127.244.1.2", "proxy: stopped routing")
        ]
    );
}

/// The endpoint controllers' Events about a Service name the pod: its journey gets the step, at
/// the Event's own time (the moment `minik demo race` draws for it).
#[test]
fn an_endpoint_controller_event_is_a_step_of_the_pod_it_names() {
    let event: Event = serde_json::from_value(json!({
        "metadata": {"name": "race.1", "namespace": "default"},
        "involvedObject": {"kind": "Service", "namespace": "default", "name": "race"},
        "reason": "EndpointRemoved", "reportingComponent": "endpoint-controller",
        "message": "Pod race-1 (127.244.1.2) removed from the Endpoints",
        "eventTime": "2026-01-01T00:00:00.250123Z"}))
    .unwrap();
    let (pod, step) = endpoint_event_step(&event).unwrap();
    assert_eq!(pod, "race-1");
    assert_eq!(
        (step.step.as_str(), step.who.as_str(), step.at),
        (
            "removed from the Endpoints",
            "endpoint-controller",
            1_767_225_600_250
        )
    );
    let mut other = event.clone();
    other.reason = Some("EndpointsApplied".into());
    assert!(endpoint_event_step(&other).is_none());
}
