//! Tests of `protobuf.rs`: each kind kubectl sends as protobuf decodes to the JSON its JSON form
//! would give, and other kinds and garbage are refused.

use super::*;

fn field(number: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![(number << 3 | 2) as u8, payload.len() as u8];
    out.extend_from_slice(payload);
    out
}

fn varint_field(number: u64, value: u8) -> Vec<u8> {
    vec![(number << 3) as u8, value]
}

fn envelope(kind: &str, raw: &[u8]) -> Vec<u8> {
    let type_meta = [field(1, b"v1"), field(2, kind.as_bytes())].concat();
    [
        MAGIC.to_vec(),
        field(1, &type_meta),
        field(2, raw),
        field(4, b"application/vnd.kubernetes.protobuf"),
    ]
    .concat()
}

#[test]
fn kubectl_create_namespace_body_decodes_to_a_namespace() {
    let labels = field(11, &[field(1, b"team"), field(2, b"a")].concat());
    let meta = [field(1, b"foo"), labels].concat();
    let body = envelope(
        "Namespace",
        &[field(1, &meta), field(2, &[]), field(3, &[])].concat(),
    );
    assert_eq!(
        decode(&body).unwrap(),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "foo", "labels": {"team": "a"}}, "spec": {}})
    );
}

#[test]
fn kubectl_create_service_body_decodes_ports_and_target_ports() {
    let target = [varint_field(1, 0), varint_field(2, 32)].concat();
    let port = [
        field(1, b"80-8080"),
        field(2, b"TCP"),
        varint_field(3, 80),
        field(4, &target),
    ]
    .concat();
    let named = [field(3, b"http"), varint_field(1, 1)].concat();
    let second = [varint_field(3, 81), field(4, &named)].concat();
    let spec = [
        field(1, &port),
        field(1, &second),
        field(2, &[field(1, b"app"), field(2, b"s1")].concat()),
        field(4, b"ClusterIP"),
    ]
    .concat();
    let meta = field(1, b"s1");
    let service = decode(&envelope(
        "Service",
        &[field(1, &meta), field(2, &spec)].concat(),
    ))
    .unwrap();
    assert_eq!(
        service["spec"]["ports"][0],
        json!({"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 32})
    );
    assert_eq!(
        service["spec"]["ports"][1],
        json!({"port": 81, "targetPort": "http"})
    );
    assert_eq!(service["spec"]["selector"], json!({"app": "s1"}));
    assert_eq!(service["spec"]["type"], "ClusterIP");
}

#[test]
fn kubectl_create_deployment_body_decodes_replicas_selector_and_template() {
    let labels = field(11, &[field(1, b"app"), field(2, b"web")].concat());
    let port = varint_field(3, 80);
    let container = [
        field(1, b"busybox"),
        field(2, b"busybox"),
        field(3, b"sleep"),
        field(3, b"3600"),
        field(6, &port),
        field(8, &[]),
    ]
    .concat();
    let template = [field(1, &labels), field(2, &field(2, &container))].concat();
    let selector = field(1, &[field(1, b"app"), field(2, b"web")].concat());
    let spec = [
        varint_field(1, 0),
        field(2, &selector),
        field(3, &template),
        field(4, &[]),
    ]
    .concat();
    let meta = [field(1, b"web"), labels.clone()].concat();
    let deployment = decode(&envelope(
        "Deployment",
        &[field(1, &meta), field(2, &spec), field(3, &[])].concat(),
    ))
    .unwrap();
    assert_eq!(deployment["spec"]["replicas"], 0, "a set zero is kept");
    assert_eq!(
        deployment["spec"]["selector"],
        json!({"matchLabels": {"app": "web"}})
    );
    assert_eq!(
        deployment["spec"]["template"]["spec"]["containers"][0],
        json!({"name": "busybox", "image": "busybox", "command": ["sleep", "3600"],
               "ports": [{"containerPort": 80}]})
    );
}

#[test]
fn a_job_from_kubectl_create_job_decodes_with_its_restart_policy() {
    let container = [field(1, b"pi"), field(2, b"busybox"), field(3, b"sh")].concat();
    let pod_spec = [field(2, &container), field(3, b"Never")].concat();
    let template = field(2, &pod_spec);
    let spec = [varint_field(7, 2), field(6, &template)].concat();
    let job = decode(&envelope(
        "Job",
        &[field(1, &field(1, b"pi")), field(2, &spec)].concat(),
    ))
    .unwrap();
    assert_eq!(job["metadata"]["name"], "pi");
    assert_eq!(job["spec"]["backoffLimit"], 2);
    assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
    assert_eq!(
        job["spec"]["template"]["spec"]["containers"][0]["command"],
        json!(["sh"])
    );
}

#[test]
fn a_secret_from_kubectl_create_secret_has_base64_data_and_its_type() {
    let entry = [field(1, b"password"), field(2, &[0, 255])].concat();
    let secret = decode(&envelope(
        "Secret",
        &[
            field(1, &field(1, b"db")),
            field(2, &entry),
            field(3, b"Opaque"),
            varint_field(5, 1),
        ]
        .concat(),
    ))
    .unwrap();
    assert_eq!(secret["data"], json!({"password": "AP8="}));
    assert_eq!(secret["type"], "Opaque");
    assert_eq!(secret["immutable"], true);
    let entry = [field(1, b"mode"), field(2, b"fast")].concat();
    let config_map = decode(&envelope(
        "ConfigMap",
        &[field(1, &field(1, b"s")), field(2, &entry)].concat(),
    ))
    .unwrap();
    assert_eq!(config_map["data"], json!({"mode": "fast"}));
}

#[test]
fn kubectl_drain_eviction_decodes_with_its_delete_options() {
    let preconditions = field(1, b"u-1");
    let options = [varint_field(1, 0), field(2, &preconditions)].concat();
    let raw = [field(1, &field(1, b"web-a")), field(2, &options)].concat();
    let eviction = decode(&envelope("Eviction", &raw)).unwrap();
    assert_eq!(eviction["metadata"]["name"], "web-a");
    assert_eq!(
        eviction["deleteOptions"],
        json!({"gracePeriodSeconds": 0, "preconditions": {"uid": "u-1"}})
    );
}

#[test]
fn an_ingress_from_kubectl_create_ingress_decodes_with_its_inlined_http_rule() {
    let port = varint_field(2, 80);
    let service = [field(1, b"web"), field(2, &port)].concat();
    let backend = field(4, &service);
    let path = [field(1, b"/"), field(2, &backend), field(3, b"Prefix")].concat();
    let rule_value = field(1, &field(1, &path));
    let rule = [field(1, b"shop.example"), field(2, &rule_value)].concat();
    let spec = [field(3, &rule), field(4, b"minik")].concat();
    let ingress = decode(&envelope(
        "Ingress",
        &[field(1, &field(1, b"shop")), field(2, &spec)].concat(),
    ))
    .unwrap();
    assert_eq!(ingress["spec"]["ingressClassName"], "minik");
    assert_eq!(
        ingress["spec"]["rules"][0],
        json!({"host": "shop.example", "http": {"paths": [{"path": "/", "pathType": "Prefix",
               "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}})
    );
}

#[test]
fn kubectl_create_role_and_rolebinding_bodies_decode_with_rules_and_subjects() {
    // `kubectl create role r --verb=get --resource=pods`: the core group is the empty string.
    let rule = [field(1, b"get"), field(2, b""), field(3, b"pods")].concat();
    let role = envelope(
        "Role",
        &[field(1, &field(1, b"r")), field(2, &rule)].concat(),
    );
    assert_eq!(
        decode(&role).unwrap()["rules"],
        json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}])
    );
    // `kubectl create rolebinding b --clusterrole=view --serviceaccount=team:viewer`.
    let subject = [
        field(1, b"ServiceAccount"),
        field(3, b"viewer"),
        field(4, b"team"),
    ]
    .concat();
    let role_ref = [
        field(1, b"rbac.authorization.k8s.io"),
        field(2, b"ClusterRole"),
        field(3, b"view"),
    ]
    .concat();
    let binding = envelope(
        "RoleBinding",
        &[
            field(1, &field(1, b"b")),
            field(2, &subject),
            field(3, &role_ref),
        ]
        .concat(),
    );
    let decoded = decode(&binding).unwrap();
    assert_eq!(
        decoded["subjects"],
        json!([{"kind": "ServiceAccount", "name": "viewer", "namespace": "team"}])
    );
    assert_eq!(
        decoded["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"})
    );
}

#[test]
fn other_kinds_and_garbage_are_refused() {
    assert!(
        matches!(decode(&envelope("Pod", &[])), Err(Error::Unsupported(kind)) if kind == "Pod")
    );
    assert!(matches!(decode(b"{}"), Err(Error::Malformed(_))));
    assert!(matches!(
        decode(&[MAGIC, &[0x0a, 0x7f]].concat()),
        Err(Error::Malformed(_))
    ));
}
