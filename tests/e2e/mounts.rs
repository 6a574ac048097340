//! Pods that see what their spec says (issue 18): names resolved by the cluster DNS from inside
//! a pod, volumes at their `mountPath` in each container's mount namespace (an emptyDir shared by
//! two containers, a ConfigMap updated in place, readOnly and subPath), and the pod's own
//! `/etc/hosts` and `/etc/resolv.conf`.
//!
//! Kubernetes counterpart: `test/e2e/network/dns.go` ("should provide DNS for services", "for
//! pods for Subdomain"), `test/e2e/common/storage/empty_dir.go` ("pod should support shared
//! volumes between containers") and `configmap_volume.go` ("updates should be reflected in
//! volume"). Skipped, with a message, where the machine cannot make user + mount namespaces.

use std::time::Duration;

use minik_api::core::{ConfigMap, Node, Pod};
use minik_client::{Api, LogParams, Patch};
use minik_tests::fixtures::service;
use minik_tests::wait::{eventually, pod as p, wait_for};
use minik_tests::Cluster;
use serde_json::{json, Value};

use crate::support::{stop_clean, RUNNING};

/// Whether the cluster's node reported mount namespaces (`minik.io/mount-namespaces`).
async fn namespaces_available(cluster: &Cluster) -> bool {
    let node: Node = eventually("the node's namespace annotation", RUNNING, || async {
        let node = cluster.nodes().get("node-1").await.ok()?;
        let annotations = node.metadata.annotations.as_ref()?;
        annotations
            .contains_key("minik.io/mount-namespaces")
            .then_some(node)
    })
    .await
    .expect("annotation");
    let value = &node.metadata.annotations.unwrap_or_default()["minik.io/mount-namespaces"];
    if value != "true" {
        eprintln!("skipped: this machine has no mount namespaces ({value})");
    }
    value == "true"
}

async fn create(cluster: &Cluster, pod: Value) {
    let pod: Pod = serde_json::from_value(pod).expect("pod");
    cluster.pods().create(&pod).await.expect("create pod");
}

async fn finished_log(cluster: &Cluster, name: &str, container: Option<&str>) -> String {
    let finished = wait_for(
        &cluster.pods(),
        name,
        p::is_finished,
        Duration::from_secs(60),
    )
    .await;
    let params = LogParams {
        container: container.map(String::from),
        ..Default::default()
    };
    let log = cluster.pods().logs(name, &params).await.expect("logs");
    let pod = finished.unwrap_or_else(|e| panic!("pod {name} did not finish: {e:?}\n{log}"));
    assert_eq!(p::phase(&pod), "Succeeded", "{:?}\n{log}", pod.status);
    log
}

fn sleeper(name: &str, labels: Value, extra: Value) -> Value {
    let mut spec =
        json!({"containers": [{"name": "main", "image": "busybox", "args": ["sleep", "3600"]}]});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}, "spec": spec})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pod_resolves_a_service_and_a_headless_pod_through_the_cluster_dns() {
    let _machine = crate::support::shared().await;
    let cluster = Cluster::builder().start().await.expect("cluster");
    if !namespaces_available(&cluster).await {
        return stop_clean(cluster).await;
    }
    let web = service("web")
        .selector("app", "web")
        .port(80, "8080")
        .build();
    let web = cluster.services().create(&web).await.expect("service");
    let cluster_ip = web.spec.and_then(|s| s.cluster_ip).expect("cluster IP");
    let mut db = service("db")
        .selector("app", "db")
        .port(5432, "5432")
        .build();
    db.spec.as_mut().expect("spec").cluster_ip = Some("None".into());
    cluster
        .services()
        .create(&db)
        .await
        .expect("headless service");
    create(
        &cluster,
        sleeper(
            "db-0",
            json!({"app": "db"}),
            json!({"hostname": "db-0", "subdomain": "db"}),
        ),
    )
    .await;
    let db_pod = wait_for(&cluster.pods(), "db-0", p::is_running, RUNNING)
        .await
        .expect("db-0 Running");
    let db_ip = p::ip(&db_pod).expect("db-0 IP");

    // Python's getaddrinfo is glibc's resolver: /etc/hosts, then resolv.conf's search path.
    let script = r#"
import socket, sys
print(open('/etc/resolv.conf').read().strip().replace('\n', ' | '), flush=True)
for name in sys.argv[1:]:
    for attempt in range(1 if name.startswith('nope') else 50):
        try:
            print(name, socket.gethostbyname(name), flush=True); break
        except OSError as e:
            err = e
            __import__('time').sleep(0.2)
    else:
        print(name, 'FAILED', err)
"#;
    let names = [
        "web",
        "web.default.svc.cluster.local",
        "db",
        "db-0.db",
        "nope.default.svc.cluster.local",
    ];
    let mut args = vec!["-c".to_string(), script.to_string()];
    args.extend(names.iter().map(|n| n.to_string()));
    create(&cluster, json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "client"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "python:3.12", "command": ["python3"], "args": args}]}})).await;
    let log = finished_log(&cluster, "client", None).await;
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines[0].starts_with("nameserver 127."), "{log}");
    // The host's own search domains, if it has any, follow the cluster's (upstream's GetPodDNS).
    assert!(
        lines[0].contains("search default.svc.cluster.local svc.cluster.local cluster.local"),
        "{log}"
    );
    assert!(lines[0].ends_with("options ndots:5"), "{log}");
    assert_eq!(lines[1], format!("web {cluster_ip}"), "{log}");
    assert_eq!(
        lines[2],
        format!("web.default.svc.cluster.local {cluster_ip}"),
        "{log}"
    );
    assert_eq!(lines[3], format!("db {db_ip}"), "{log}");
    assert_eq!(lines[4], format!("db-0.db {db_ip}"), "{log}");
    assert!(
        lines[5].starts_with("nope.default.svc.cluster.local FAILED"),
        "{log}"
    );
    stop_clean(cluster).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn volumes_sit_at_their_mount_path_shared_read_only_and_updated_in_place() {
    let _machine = crate::support::shared().await;
    let cluster = Cluster::builder()
        .without_services()
        .start()
        .await
        .expect("cluster");
    if !namespaces_available(&cluster).await {
        return stop_clean(cluster).await;
    }
    let config: ConfigMap = serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "live"}, "data": {"greeting": "hello"}}))
    .expect("configmap");
    let maps: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    maps.create(&config).await.expect("create configmap");
    // The writer fills /data (a path that does not exist on the host) and a subPath; the reader
    // waits for the file, checks readOnly, and follows the ConfigMap until it changes.
    let writer = "echo from-writer > /data/shared.txt && echo sub > /sub/file && sleep 3600";
    let reader = r#"until [ -f /shared/shared.txt ]; do sleep 0.1; done
cat /shared/shared.txt; cat /shared/sub/file
touch /shared/nope 2>/dev/null && echo writable || echo read-only
cat /etc/config/greeting; echo
until [ "$(cat /etc/config/greeting)" = "changed" ]; do sleep 0.2; done; echo updated
grep -c mounts-host /etc/hosts; test -d /data && echo host-has-data || echo no-data-here"#;
    create(&cluster, json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "mounts"},
        "spec": {"restartPolicy": "Never", "hostname": "mounts-host",
            "volumes": [{"name": "scratch", "emptyDir": {}}, {"name": "config", "configMap": {"name": "live"}}],
            "containers": [
                {"name": "writer", "image": "busybox", "args": ["sh", "-c", writer],
                 "volumeMounts": [{"name": "scratch", "mountPath": "/data"},
                                  {"name": "scratch", "mountPath": "/sub", "subPath": "sub"}]},
                {"name": "reader", "image": "busybox", "args": ["sh", "-c", reader],
                 "volumeMounts": [{"name": "scratch", "mountPath": "/shared", "readOnly": true},
                                  {"name": "config", "mountPath": "/etc/config"}]}]}})).await;
    wait_for(&cluster.pods(), "mounts", p::is_running, RUNNING)
        .await
        .expect("Running");
    eventually("the reader's first lines", RUNNING, || async {
        let params = LogParams {
            container: Some("reader".into()),
            ..Default::default()
        };
        let log = cluster.pods().logs("mounts", &params).await.ok()?;
        log.contains("hello").then_some(())
    })
    .await
    .expect("reader started");
    maps.patch(
        "live",
        &Patch::Merge(json!({"data": {"greeting": "changed"}})),
    )
    .await
    .expect("patch");
    let params = LogParams {
        container: Some("reader".into()),
        ..Default::default()
    };
    let log = eventually(
        "the reader saw the update",
        Duration::from_secs(60),
        || async {
            let log = cluster.pods().logs("mounts", &params).await.ok()?;
            log.contains("here").then_some(log)
        },
    )
    .await
    .expect("reader finished");
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(
        lines,
        [
            "from-writer",
            "sub",
            "read-only",
            "hello",
            "updated",
            "1",
            "no-data-here"
        ],
        "{log}"
    );
    // Nothing was created on the host's filesystem for /data, /shared or /sub.
    for path in ["/data", "/shared", "/sub"] {
        assert!(
            !std::path::Path::new(path).exists(),
            "{path} appeared on the host"
        );
    }
    stop_clean(cluster).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_next_container_starts_after_the_previous_post_start_returned() {
    let _machine = crate::support::shared().await;
    let cluster = Cluster::builder()
        .without_services()
        .start()
        .await
        .expect("cluster");
    // The hook takes a second, then leaves a file; the second container reads it at once.
    let hook = "sleep 1; echo hook-done > \"$MINIK_MOUNT_SHARED/hook\"";
    create(
        &cluster,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ordered"},
        "spec": {"restartPolicy": "Never", "volumes": [{"name": "shared", "emptyDir": {}}],
            "containers": [
                {"name": "first", "image": "busybox", "args": ["sleep", "3600"],
                 "volumeMounts": [{"name": "shared", "mountPath": "/shared"}],
                 "lifecycle": {"postStart": {"exec": {"command": ["sh", "-c", hook]}}}},
                {"name": "second", "image": "busybox",
                 "args": ["sh", "-c", "cat \"$MINIK_MOUNT_SHARED/hook\" || echo too-early"],
                 "volumeMounts": [{"name": "shared", "mountPath": "/shared"}]}]}}),
    )
    .await;
    let params = LogParams {
        container: Some("second".into()),
        ..Default::default()
    };
    let log = eventually("the second container's line", RUNNING, || async {
        let log = cluster.pods().logs("ordered", &params).await.ok()?;
        (!log.is_empty()).then_some(log)
    })
    .await
    .expect("second container ran");
    assert_eq!(log.trim(), "hook-done");
    stop_clean(cluster).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pod_authenticates_with_its_projected_service_account_token() {
    let _machine = crate::support::shared().await;
    let cluster = Cluster::builder()
        .without_services()
        .start()
        .await
        .expect("cluster");
    if !namespaces_available(&cluster).await {
        return stop_clean(cluster).await;
    }
    // What client-go's and the Python client's in-cluster config read, at the upstream path.
    let script = r#"
import json, os, ssl, urllib.request
d = '/var/run/secrets/kubernetes.io/serviceaccount/'
token = open(d + 'token').read()
print('namespace', open(d + 'namespace').read())
ctx = ssl.create_default_context(cafile=d + 'ca.crt')
url = 'https://%s:%s/apis/authentication.k8s.io/v1/selfsubjectreviews' % (
    os.environ['KUBERNETES_SERVICE_HOST'], os.environ['KUBERNETES_SERVICE_PORT'])
body = json.dumps({'apiVersion': 'authentication.k8s.io/v1', 'kind': 'SelfSubjectReview'}).encode()
req = urllib.request.Request(url, data=body, method='POST', headers={
    'Authorization': 'Bearer ' + token, 'Content-Type': 'application/json'})
review = json.load(urllib.request.urlopen(req, context=ctx))
print('user', review['status']['userInfo']['username'])
"#;
    create(
        &cluster,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "in-cluster"},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "python:3.12",
            "command": ["python3", "-c", script]}]}}),
    )
    .await;
    let log = finished_log(&cluster, "in-cluster", None).await;
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(
        lines,
        [
            "namespace default",
            "user system:serviceaccount:default:default"
        ],
        "{log}"
    );
    stop_clean(cluster).await;
}

/// `dnsPolicy: None` gets only its `dnsConfig`; `ClusterFirst` with a `dnsConfig` gets the cluster
/// DNS first, then the pod's servers and searches, its options merged by name (GetPodDNS).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dns_policy_none_and_dns_config_shape_the_pods_resolv_conf() {
    let _machine = crate::support::shared().await;
    let cluster = Cluster::builder()
        .without_services()
        .start()
        .await
        .expect("cluster");
    if !namespaces_available(&cluster).await {
        return stop_clean(cluster).await;
    }
    let config = json!({"nameservers": ["192.0.2.53"], "searches": ["corp.example"],
        "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}]});
    for (name, policy) in [("custom", "None"), ("merged", "ClusterFirst")] {
        create(&cluster, json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"restartPolicy": "Never", "dnsPolicy": policy, "dnsConfig": config,
                "containers": [{"name": "main", "image": "busybox", "args": ["cat", "/etc/resolv.conf"]}]}}))
        .await;
    }
    let custom = finished_log(&cluster, "custom", None).await;
    assert_eq!(
        custom,
        "nameserver 192.0.2.53\nsearch corp.example\noptions ndots:2 edns0\n"
    );
    let merged = finished_log(&cluster, "merged", None).await;
    let lines: Vec<&str> = merged.lines().collect();
    assert!(lines[0].starts_with("nameserver 127."), "{merged}");
    assert_eq!(lines[1], "nameserver 192.0.2.53", "{merged}");
    assert!(
        lines[2].starts_with("search default.svc.cluster.local svc.cluster.local cluster.local")
            && lines[2].ends_with(" corp.example"),
        "{merged}"
    );
    assert_eq!(lines[3], "options ndots:2 edns0", "{merged}");
    stop_clean(cluster).await;
}
