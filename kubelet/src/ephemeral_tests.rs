//! Unit tests of the ephemeral container rules: plans and statuses on fixture pods, no I/O.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::EphemeralContainer;

use super::*;
use crate::cri::ContainerStatus;
use crate::plan::{BackoffPolicy, ContainerMemo};
use crate::status::compute;
use crate::testing::{at, exited, pod, running};

fn with_debugger(target: Option<&str>) -> Pod {
    let mut pod = pod(&["web", "side"], "Always");
    pod.spec.as_mut().unwrap().ephemeral_containers = Some(vec![EphemeralContainer {
        name: "debugger".into(),
        image: Some("busybox".into()),
        target_container_name: target.map(str::to_string),
        ..Default::default()
    }]);
    pod
}

fn plan_of(pod: &Pod, containers: &[ContainerStatus]) -> Vec<Action> {
    let (memos, unhealthy) = (BTreeMap::new(), BTreeMap::new());
    let ids = BTreeSet::new();
    crate::plan::plan(&PlanInput {
        pod,
        containers,
        memos: &memos,
        unhealthy: &unhealthy,
        killing: &ids,
        started: &ids,
        post_start_done: &ids,
        backoff: BackoffPolicy::default(),
        now: at(10),
    })
}

fn started(name: &str) -> Action {
    Action::StartContainer {
        name: name.into(),
        init: false,
        attempt: 0,
    }
}

#[test]
fn an_added_ephemeral_container_starts_once_and_is_never_restarted() {
    let pod = with_debugger(Some("web"));
    let apps = [running("web", 0, 0), running("side", 0, 0)];
    assert_eq!(plan_of(&pod, &apps), vec![started("debugger")]);
    let mut after = apps.to_vec();
    after.push(running("debugger", 0, 5));
    assert!(plan_of(&pod, &after).is_empty());
    after.pop();
    after.push(exited("debugger", 0, 5, 6, 1));
    // The pod's restartPolicy is Always: an ephemeral container is still not restarted.
    assert!(plan_of(&pod, &after).is_empty());
}

#[test]
fn the_debugger_takes_its_targets_world_or_the_first_containers() {
    assert_eq!(
        world_of(&with_debugger(Some("side")), "debugger").as_deref(),
        Some("side")
    );
    assert_eq!(
        world_of(&with_debugger(None), "debugger").as_deref(),
        Some("web")
    );
    let mut ctx = PodContext {
        pod_ip: String::new(),
        node_name: String::new(),
        api_host: String::new(),
        api_port: String::new(),
        minik_binary: Default::default(),
        path: String::new(),
        home: String::new(),
        volume_env: BTreeMap::new(),
        log_dir: Default::default(),
        working_dirs: [("side".to_string(), "/pods/side/root".into())].into(),
        host_ip: String::new(),
        allocatable: BTreeMap::new(),
        mounts: BTreeMap::new(),
        rewrite_binds: false,
    };
    lend_world(&mut ctx, &with_debugger(Some("side")), "debugger");
    assert_eq!(
        ctx.working_dirs.get("debugger"),
        Some(&"/pods/side/root".into())
    );
}

#[test]
fn ephemeral_statuses_are_reported_apart_and_never_ready() {
    let pod = with_debugger(Some("web"));
    let containers = [
        running("web", 0, 0),
        running("side", 0, 0),
        exited("debugger", 0, 5, 6, 0),
    ];
    let (memos, backoff): (BTreeMap<String, ContainerMemo>, _) = (BTreeMap::new(), BTreeMap::new());
    let ids: BTreeSet<String> = containers.iter().map(|c| c.id.clone()).collect();
    let status = compute(&PodView {
        pod: &pod,
        containers: &containers,
        memos: &memos,
        post_start_done: &ids,
        startup_passed: &ids,
        readiness_ok: &ids,
        backoff: &backoff,
        pod_ip: Some("127.244.1.2"),
        host_ip: "127.0.0.1",
        terminated_by_kubelet: false,
        now: at(10),
    });
    assert_eq!(status.container_statuses.as_ref().unwrap().len(), 2);
    let ephemeral = status.ephemeral_container_statuses.unwrap();
    assert_eq!(ephemeral[0].name, "debugger");
    assert!(!ephemeral[0].ready);
    let terminated = ephemeral[0].state.clone().unwrap().terminated.unwrap();
    assert_eq!(terminated.reason.as_deref(), Some("Completed"));
    assert_eq!(status.phase.as_deref(), Some("Running"));
}
