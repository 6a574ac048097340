//! Tests of `ignored_fields.rs`: minik's own manifests are quiet, every ignored field is named
//! with its path, and every path in the tables is a real field of its kind.

use serde_json::{json, Map, Value};

use super::*;
use crate::field_validation::unknown_fields;
use crate::registry::{pods, services};

/// The pods minik applies itself: the demo's (`lab/src/demo/manifests.rs`), the test
/// fixtures with every builder option (`tests/src/fixtures.rs`), the benchmarks', the clients'
/// tests and the seeds' pod with a preStop hook.
fn minik_pods() -> Vec<Value> {
    let demo = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web-1", "labels": {"app": "web"}},
        "spec": {"terminationGracePeriodSeconds": 30, "containers": [{
            "name": "web", "image": "minik/web", "ports": [{"name": "http", "containerPort": 8080}],
            "env": [{"name": "MINIK_ON_SIGTERM", "value": "drain:1000"}],
            "lifecycle": {"postStart": {"sleep": {"seconds": 1}}, "preStop": {"exec": {"command": ["sleep", "1.500"]}}},
            "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}, "periodSeconds": 1}}]}});
    let fixture = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"restartPolicy": "OnFailure", "terminationGracePeriodSeconds": 3,
            "nodeSelector": {"disk": "ssd"},
            "initContainers": [{"name": "first", "image": "busybox", "command": ["sh", "-c", "true"]}],
            "containers": [{"name": "app", "image": "minik/web", "workingDir": "/tmp",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "env": [{"name": "PORT", "value": "8080"}],
                "resources": {"requests": {"cpu": "100m", "memory": "32Mi"}},
                "lifecycle": {"preStop": {"sleep": {"seconds": 2}}},
                "readinessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 1, "failureThreshold": 1},
                "livenessProbe": {"exec": {"command": ["sh", "-c", "true"]}, "periodSeconds": 1, "failureThreshold": 1}}]}});
    let bench = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pause"},
        "spec": {"nodeSelector": {"minik.dev/hollow": "true"}, "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "sleep", "image": "minik/sleep", "command": ["sleep", "3600"],
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}});
    let clients = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "py-web"},
        "spec": {"terminationGracePeriodSeconds": 5, "containers": [{"name": "web", "image": "nginx",
            "env": [{"name": "PORT", "value": "8080"}], "ports": [{"containerPort": 8080}]}]}});
    let seed = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "my-pod"},
        "spec": {"containers": [{"name": "web", "image": "nginx",
            "ports": [{"name": "web", "containerPort": 80}],
            "lifecycle": {"preStop": {"exec": {"command": ["sleep", "15"]}}}}]}});
    vec![demo, fixture, bench, clients, seed]
}

/// The Services minik applies itself: the demo's and fixtures' (named target port), the clients'
/// and the seeds' (numeric target port).
fn minik_services() -> Vec<Value> {
    let demo = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 8080, "targetPort": "http"}]}});
    let seed = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "my-service"},
        "spec": {"ports": [{"port": 80, "targetPort": 3000, "protocol": "TCP"}], "selector": {"name": "app"}}});
    vec![demo, seed]
}

#[test]
fn pods_and_services_minik_applies_itself_get_no_warning() {
    for pod in minik_pods() {
        assert_eq!(warnings("Pod", &pod), Vec::<String>::new(), "{pod:#}");
    }
    for service in minik_services() {
        assert_eq!(
            warnings("Service", &service),
            Vec::<String>::new(),
            "{service:#}"
        );
    }
}

#[test]
fn stored_objects_written_back_get_no_warning_for_the_defaults_the_apiserver_set() {
    // A client that reads an object and PUTs it back sends every default the registry filled in.
    for pod in minik_pods() {
        let stored = pods::prepare_create(pod).expect("valid pod");
        assert_eq!(warnings("Pod", &stored), Vec::<String>::new(), "{stored:#}");
    }
    for service in minik_services() {
        let stored = services::prepare_create(service, &Default::default()).expect("valid service");
        assert_eq!(
            warnings("Service", &stored),
            Vec::<String>::new(),
            "{stored:#}"
        );
    }
}

#[test]
fn fields_minik_implements_get_no_warning() {
    let pod = json!({"spec": {
        "nodeName": "node-1", "schedulerName": "default-scheduler", "priority": 0,
        "preemptionPolicy": "Never", "restartPolicy": "Never", "activeDeadlineSeconds": 0,
        "hostPID": true, "hostIPC": true, "shareProcessNamespace": true, "hostUsers": true,
        "dnsPolicy": "ClusterFirst", "enableServiceLinks": true, "securityContext": {},
        "overhead": {"cpu": "10m"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
        "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [{"name": "a", "image": "busybox", "command": ["sh"], "args": ["-c", "echo $(POD_IP)"],
            "imagePullPolicy": "Always", "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File", "stdin": false,
            "env": [{"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {"name": "SA", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
                    {"name": "I", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}],
            "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
            "volumeMounts": [{"name": "data", "mountPath": "/data", "subPath": "x", "readOnly": false,
                              "mountPropagation": "None"}],
            "startupProbe": {"tcpSocket": {"port": 80}, "terminationGracePeriodSeconds": 5},
            "livenessProbe": {"httpGet": {"port": 80, "scheme": "HTTP", "httpHeaders": [{"name": "X", "value": "1"}]}},
            "lifecycle": {"postStart": {"httpGet": {"port": 80}}, "preStop": {"sleep": {"seconds": 1}}}}],
        "volumes": [{"name": "data", "emptyDir": {}}, {"name": "host", "hostPath": {"path": "/tmp", "type": "Directory"}}]}});
    assert_eq!(warnings("Pod", &pod), Vec::<String>::new());
    let service = json!({"spec": {"type": "ClusterIP", "clusterIP": "None",
        "sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 60}},
        "publishNotReadyAddresses": true, "internalTrafficPolicy": "Cluster", "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack", "ports": [{"name": "http", "port": 80, "targetPort": "http",
            "protocol": "TCP", "appProtocol": "http"}]}});
    assert_eq!(warnings("Service", &service), Vec::<String>::new());
    // Empty strings are "unset" in Kubernetes' Go types (protobuf bodies carry them).
    let unset = json!({"spec": {"type": "", "ipFamilyPolicy": "", "externalTrafficPolicy": ""}});
    assert_eq!(warnings("Service", &unset), Vec::<String>::new());
}

#[test]
fn each_ignored_pod_field_is_named_with_its_path_and_index() {
    let container = |name: &str| json!({"name": name, "image": "busybox"});
    let pod = json!({"spec": {
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "zone"}]},
            "nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1,
                "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}]}},
        "schedulingGates": [{"name": "wait"}], "priorityClassName": "high", "priority": 1000,
        "tolerations": [{"key": "a", "operator": "Exists"},
                        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}],
        "activeDeadlineSeconds": 60, "readinessGates": [{"conditionType": "x"}],
        "securityContext": {"runAsUser": 1000}, "hostNetwork": true, "hostUsers": false,
        "hostname": "h", "subdomain": "s", "hostAliases": [{"ip": "127.0.0.1", "hostnames": ["db"]}],
        "dnsPolicy": "None", "dnsConfig": {"nameservers": ["1.1.1.1"]},
        "imagePullSecrets": [{"name": "registry"}],
        "initContainers": [container("setup"),
            json!({"name": "sidecar", "image": "busybox", "restartPolicy": "Always"})],
        "containers": [container("a"), json!({"name": "b", "image": "busybox",
            "envFrom": [{"configMapRef": {"name": "c"}}],
            "env": [{"name": "OK", "value": "1"},
                    {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
                    {"name": "GEN", "valueFrom": {"fieldRef": {"fieldPath": "metadata.generateName"}}}],
            "ports": [{"containerPort": 80, "hostPort": 8080}],
            "resources": {"limits": {"memory": "1Gi"}, "requests": {"cpu": "1", "nvidia.com/gpu": "1"}},
            "securityContext": {"privileged": true}, "stdin": true, "tty": true,
            "volumeMounts": [{"name": "v", "mountPath": "/v"}, {"name": "c", "mountPath": "/c", "readOnly": true}],
            "terminationMessagePolicy": "FallbackToLogsOnError",
            "lifecycle": {"preStop": {"httpGet": {"port": 443, "scheme": "HTTPS"}}},
            "livenessProbe": {"grpc": {"port": 9000}},
            "readinessProbe": {"httpGet": {"port": 443, "scheme": "HTTPS"}}})],
        "volumes": [{"name": "v", "emptyDir": {"medium": "Memory"}}, {"name": "c", "persistentVolumeClaim": {"claimName": "x"}}]}});
    assert_eq!(
        warnings("Pod", &pod),
        [
            "minik: spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution is ignored",
            "minik: spec.affinity.podAntiAffinity is ignored",
            "minik: spec.schedulingGates is ignored (the pod is scheduled at once)",
            "minik: spec.priorityClassName is ignored",
            "minik: spec.priority is ignored",
            "minik: spec.securityContext is ignored",
            "minik: spec.hostNetwork is ignored (the pod gets its own IP)",
            "minik: spec.hostUsers false is ignored",
            "minik: spec.hostname is ignored",
            "minik: spec.subdomain is ignored",
            "minik: spec.hostAliases is ignored",
            "minik: spec.dnsPolicy None is ignored (minik has no cluster DNS)",
            "minik: spec.dnsConfig is ignored",
            "minik: spec.imagePullSecrets is ignored (minik pulls no images)",
            "minik: spec.containers[1].env[2].valueFrom.fieldRef.fieldPath metadata.generateName is not supported (the container cannot start)",
            "minik: spec.containers[1].ports[0].hostPort is ignored",
            "minik: spec.containers[1].resources.limits is not enforced",
            "minik: spec.containers[1].resources.requests[nvidia.com/gpu] is ignored",
            "minik: spec.containers[1].securityContext is ignored",
            "minik: spec.containers[1].stdin is ignored (stdin is /dev/null)",
            "minik: spec.containers[1].tty is ignored",
            "minik: spec.containers[1].volumeMounts[1].readOnly is not enforced",
            "minik: spec.containers[1].terminationMessagePolicy FallbackToLogsOnError is ignored",
            "minik: spec.containers[1].lifecycle.preStop.httpGet.scheme HTTPS is sent over plain HTTP",
            "minik: spec.containers[1].livenessProbe.grpc is not supported (the probe always fails)",
            "minik: spec.containers[1].readinessProbe.httpGet.scheme HTTPS is probed over plain HTTP",
            "minik: spec.volumes[0].emptyDir.medium is ignored",
            "minik: spec.volumes[1].persistentVolumeClaim is mounted as an empty directory",
        ]
    );
}

#[test]
fn each_ignored_service_and_node_field_is_named_with_its_path() {
    let service = json!({"spec": {"type": "LoadBalancer", "externalIPs": ["192.0.2.1"],
        "externalTrafficPolicy": "Local", "internalTrafficPolicy": "Local", "loadBalancerIP": "192.0.2.2",
        "ipFamilyPolicy": "PreferDualStack", "ipFamilies": ["IPv4", "IPv6"],
        "ports": [{"name": "web", "port": 80, "nodePort": 30080}, {"name": "dns", "port": 53, "protocol": "UDP"}]}});
    assert_eq!(
        warnings("Service", &service),
        [
            "minik: spec.externalIPs is ignored",
            "minik: spec.externalTrafficPolicy Local is ignored",
            "minik: spec.internalTrafficPolicy Local is ignored (every ready endpoint is used)",
            "minik: spec.loadBalancerIP is ignored",
            "minik: spec.ipFamilyPolicy PreferDualStack is served as SingleStack",
            "minik: spec.ipFamilies[1] IPv6 is served as IPv4",
            "minik: spec.ports[1].protocol UDP is not proxied (TCP only)",
        ]
    );
    let external = json!({"spec": {"type": "ExternalName", "externalName": "example.com"}});
    assert_eq!(
        warnings("Service", &external),
        ["minik: spec.type ExternalName is ignored (minik has no cluster DNS)"]
    );
    let node = json!({"spec": {"unschedulable": true, "taints": [
        {"key": "a", "effect": "NoSchedule"}, {"key": "b", "effect": "NoExecute"}]}});
    assert_eq!(
        warnings("Node", &node),
        ["minik: spec.taints[1].effect NoExecute does not evict running pods"]
    );
    assert!(warnings("Endpoints", &service).is_empty());
}

/// Where a table names a field: the enclosing `In` paths and the field's own path.
fn targets(
    rules: &'static [Rule],
    ins: &[&'static str],
    out: &mut Vec<(Vec<&'static str>, &'static str)>,
) {
    for rule in rules {
        let path = match *rule {
            Field { path, .. } | OtherFields { path, .. } | OtherKeys { path, .. } => path,
            In { path, rules } => {
                let inner: Vec<_> = ins.iter().copied().chain([path]).collect();
                targets(rules, &inner, out);
                path
            }
        };
        if !path.is_empty() {
            out.push((ins.to_vec(), path));
        }
    }
}

/// Sets `value` at a dotted path of `object`, creating the objects on the way.
fn put(object: &mut Map<String, Value>, path: &str, value: Value) {
    match path.split_once('.') {
        None => {
            object.insert(path.to_string(), value);
        }
        Some((head, rest)) => {
            let entry = object.entry(head).or_insert_with(|| json!({}));
            if let Value::Object(inner) = entry {
                put(inner, rest, value);
            }
        }
    }
}

/// An object of the kind with `path` set (to null) below the `ins`, a list or an object at each
/// level per `lists`, and a bogus field `0bogus` beside it; plus the bogus field's upstream path.
fn probe(ins: &[&str], path: &str, lists: u32) -> (Value, String) {
    let mut leaf = Map::new();
    leaf.insert("0bogus".into(), Value::Null);
    put(&mut leaf, path, Value::Null);
    let mut value = Value::Object(leaf);
    let mut at = String::new();
    for (level, step) in ins.iter().enumerate() {
        if !step.is_empty() {
            at.push_str(if at.is_empty() { "" } else { "." });
            at.push_str(step);
        }
        if lists & (1 << level) != 0 {
            at.push_str("[0]");
        }
    }
    for (level, step) in ins.iter().enumerate().rev() {
        if lists & (1 << level) != 0 {
            value = json!([value]);
        }
        if !step.is_empty() {
            let mut outer = Map::new();
            put(&mut outer, step, value);
            value = Value::Object(outer);
        }
    }
    let bogus = if at.is_empty() {
        "0bogus".to_string()
    } else {
        format!("{at}.0bogus")
    };
    (value, bogus)
}

#[test]
fn every_path_in_the_tables_is_a_field_of_its_kind() {
    // Deserializing into the typed k8s-openapi object reports unknown keys: a bogus key beside the
    // table's field must be the only one, which proves the walk reached it and knew the field.
    for (kind, table) in [
        ("Pod", POD),
        ("Service", SERVICE),
        ("Node", NODE),
        ("Deployment", WORKLOAD),
    ] {
        let mut found = Vec::new();
        targets(table, &[], &mut found);
        assert!(found.len() > 2, "{kind}");
        for (ins, path) in found {
            let known = (0..1u32 << ins.len()).any(|lists| {
                let (object, bogus) = probe(&ins, path, lists);
                unknown_fields(kind, &object) == [bogus]
            });
            assert!(known, "{kind}: {ins:?} {path} is not a field");
        }
    }
}

#[test]
fn an_ingress_tls_section_is_named_as_ignored() {
    let ingress = json!({"spec": {"tls": [{"hosts": ["shop.example"], "secretName": "shop"}],
        "defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}});
    assert_eq!(
        warnings("Ingress", &ingress),
        ["minik: spec.tls is ignored (minik's ingress controller serves plain HTTP)"]
    );
    for (ins, path) in {
        let mut found = Vec::new();
        targets(INGRESS, &[], &mut found);
        found
    } {
        let (object, bogus) = probe(&ins, path, 0);
        assert_eq!(unknown_fields("Ingress", &object), [bogus], "{path}");
    }
}

#[test]
fn workload_templates_warn_like_pods_and_their_defaults_do_not() {
    for pod in minik_pods() {
        // A controller's pods always restart (`restartPolicy: Always`, validated).
        let mut spec = pod["spec"].clone();
        spec.as_object_mut().map(|s| s.remove("restartPolicy"));
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": spec}}});
        let stored = crate::registry::workloads::prepare_create_deployment(deployment.clone())
            .expect("valid deployment");
        for object in [&deployment, &stored] {
            assert_eq!(
                warnings("Deployment", object),
                Vec::<String>::new(),
                "{object:#}"
            );
        }
    }
    let mut host = json!({"spec": {"template": {"spec": {"hostNetwork": true}}}});
    assert_eq!(
        warnings("ReplicaSet", &host),
        ["minik: spec.template.spec.hostNetwork is ignored (the pod gets its own IP)"]
    );
    host["spec"]["template"]["spec"]["hostNetwork"] = json!(false);
    assert!(warnings("Deployment", &host).is_empty());
}
