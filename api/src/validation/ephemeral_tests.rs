//! Tests of the ephemeral container rules: pure functions on pods, no I/O.

use super::*;
use crate::core::{ContainerPort, Probe};

fn pod(ephemeral: Vec<EphemeralContainer>) -> Pod {
    let mut pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"containers": [{"name": "main", "image": "busybox"}]}
    }))
    .unwrap();
    let spec = pod.spec.as_mut().unwrap();
    spec.ephemeral_containers = (!ephemeral.is_empty()).then_some(ephemeral);
    pod
}

fn debugger(name: &str) -> EphemeralContainer {
    EphemeralContainer {
        name: name.into(),
        image: Some("busybox".into()),
        target_container_name: Some("main".into()),
        resources: Some(Default::default()),
        stdin: Some(true),
        ..Default::default()
    }
}

fn fields(causes: &[StatusCause]) -> Vec<(String, String)> {
    causes
        .iter()
        .map(|c| (c.field.clone().unwrap(), c.message.clone().unwrap()))
        .collect()
}

#[test]
fn a_debugger_as_kubectl_sends_it_is_valid() {
    let causes = validate_update(&pod(vec![debugger("debugger-x")]), &pod(vec![]));
    assert!(causes.is_empty(), "{causes:?}");
}

#[test]
fn names_are_unique_across_all_containers_and_the_target_must_exist() {
    let mut bad_target = debugger("dbg");
    bad_target.target_container_name = Some("nope".into());
    let new = pod(vec![debugger("main"), bad_target]);
    let found = fields(&validate_update(&new, &pod(vec![])));
    assert!(found.contains(&(
        "spec.ephemeralContainers[0].name".into(),
        "Duplicate value: \"main\"".into()
    )));
    assert!(found.contains(&(
        "spec.ephemeralContainers[1].targetContainerName".into(),
        "Not found: \"nope\"".into()
    )));
}

#[test]
fn ports_probes_resources_and_lifecycle_are_forbidden() {
    let mut ephemeral = debugger("dbg");
    ephemeral.ports = Some(vec![ContainerPort {
        container_port: 80,
        ..Default::default()
    }]);
    ephemeral.readiness_probe = Some(Probe::default());
    ephemeral.lifecycle = Some(Default::default());
    ephemeral.resources = Some(crate::core::ResourceRequirements {
        limits: Some([("cpu".to_string(), Default::default())].into()),
        ..Default::default()
    });
    let found = fields(&validate_update(&pod(vec![ephemeral]), &pod(vec![])));
    for field in ["ports", "readinessProbe", "lifecycle", "resources"] {
        let expected = (
            format!("spec.ephemeralContainers[0].{field}"),
            NOT_ALLOWED.to_string(),
        );
        assert!(found.contains(&expected), "{field}: {found:?}");
    }
}

#[test]
fn an_added_container_may_be_neither_changed_nor_removed() {
    let old = pod(vec![debugger("a"), debugger("b")]);
    let mut changed = debugger("a");
    changed.image = Some("alpine".into());
    let found = fields(&validate_update(&pod(vec![changed]), &old));
    assert!(found.contains(&(
        LIST.into(),
        "Forbidden: existing ephemeral containers \"a\" may not be changed".into()
    )));
    assert!(found.contains(&(
        LIST.into(),
        "Forbidden: existing ephemeral containers \"b\" may not be removed".into()
    )));
    let kept = pod(vec![debugger("a"), debugger("b"), debugger("c")]);
    assert!(validate_update(&kept, &old).is_empty());
}

#[test]
fn a_create_may_not_carry_ephemeral_containers() {
    assert_eq!(
        fields(&forbid_on_create(&pod(vec![debugger("a")]))),
        vec![(LIST.into(), "Forbidden: cannot be set on create".into())]
    );
    assert!(forbid_on_create(&pod(vec![])).is_empty());
}

#[test]
fn defaults_and_the_container_view_keep_every_field() {
    let mut pod = pod(vec![debugger("a")]);
    default_ephemeral_containers(pod.spec.as_mut().unwrap());
    let ephemeral = &pod
        .spec
        .as_ref()
        .unwrap()
        .ephemeral_containers
        .as_ref()
        .unwrap()[0];
    assert_eq!(
        ephemeral.termination_message_policy.as_deref(),
        Some("File")
    );
    assert_eq!(ephemeral.image_pull_policy.as_deref(), Some("Always"));
    let container = as_container(ephemeral);
    assert_eq!(container.name, "a");
    assert_eq!(container.stdin, Some(true));
}
