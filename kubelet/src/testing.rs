//! Test fixtures shared by the kubelet's unit tests: pods and runtime containers built in one line.

use std::collections::BTreeMap;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::cri::{ContainerConfig, ContainerState, ContainerStatus};

/// A pod `default/web` with uid `uid-1`, the given app containers (image `nginx`) and policy.
pub fn pod(containers: &[&str], restart_policy: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some("web".into()),
            namespace: Some("default".into()),
            uid: Some("uid-1".into()),
            ..Default::default()
        },
        spec: Some(PodSpec {
            containers: containers.iter().map(|name| container(name)).collect(),
            restart_policy: Some(restart_policy.into()),
            node_name: Some("node-1".into()),
            ..Default::default()
        }),
        status: None,
    }
}

/// The same pod with init containers in front.
pub fn pod_with_init(init: &[&str], containers: &[&str], restart_policy: &str) -> Pod {
    let mut pod = pod(containers, restart_policy);
    if let Some(spec) = pod.spec.as_mut() {
        spec.init_containers = Some(init.iter().map(|name| container(name)).collect());
    }
    pod
}

/// A container running image `nginx`.
pub fn container(name: &str) -> Container {
    Container {
        name: name.into(),
        image: Some("nginx".into()),
        ..Default::default()
    }
}

/// A time `secs` seconds after a fixed origin.
pub fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid fixture time")
}

/// A running attempt started at `started`.
pub fn running(name: &str, attempt: u32, started: i64) -> ContainerStatus {
    status(
        name,
        attempt,
        ContainerState::Running {
            pid: 1000 + attempt,
            started_at: at(started),
        },
    )
}

/// An exited attempt.
pub fn exited(
    name: &str,
    attempt: u32,
    started: i64,
    finished: i64,
    exit_code: i32,
) -> ContainerStatus {
    status(
        name,
        attempt,
        ContainerState::Exited {
            started_at: at(started),
            finished_at: at(finished),
            exit_code,
        },
    )
}

fn status(name: &str, attempt: u32, state: ContainerState) -> ContainerStatus {
    ContainerStatus {
        id: format!("uid-1-{name}-{attempt}"),
        config: ContainerConfig {
            pod_uid: "uid-1".into(),
            pod_key: "default/web".into(),
            name: name.into(),
            image: "nginx".into(),
            attempt,
            argv: vec!["minik".into(), "image".into(), "web".into()],
            env: BTreeMap::new(),
            ..Default::default()
        },
        state,
    }
}
