//! ConfigMaps, Secrets and the downward API as a pod sees them (issue 18): environment
//! variables, `envFrom`, files in configMap/secret/downwardAPI/projected volumes that follow an
//! update, the service link variables, and `CreateContainerConfigError` until a missing
//! reference appears.
//!
//! Kubernetes counterpart: `test/e2e/common/node/configmap.go`, `secrets.go`,
//! `downwardapi.go`, `test/e2e/common/storage/configmap_volume.go` and
//! `test/e2e/common/node/expansion.go`.

use minik_api::core::{ConfigMap, Event, Pod, Secret};
use minik_client::{Api, ListParams, LogParams, Patch};
use minik_tests::fixtures::service;
use minik_tests::wait::{eventually, pod as p, wait_for, wait_for_all};
use minik_tests::Cluster;
use serde_json::{json, Value};

use crate::support::{one_node, stop_clean, RUNNING};

fn config_maps(cluster: &Cluster) -> Api<ConfigMap> {
    Api::namespaced(cluster.client(), "default")
}

fn secrets(cluster: &Cluster) -> Api<Secret> {
    Api::namespaced(cluster.client(), "default")
}

async fn create_config_map(cluster: &Cluster, name: &str, data: Value) {
    let object: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}))
    .expect("config map");
    config_maps(cluster)
        .create(&object)
        .await
        .expect("create configmap");
}

async fn create_secret(cluster: &Cluster, name: &str, strings: Value) {
    let object: Secret = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "stringData": strings}))
    .expect("secret");
    secrets(cluster)
        .create(&object)
        .await
        .expect("create secret");
}

/// Creates a pod from its JSON `spec` (one container, `busybox`, `restartPolicy: Never`).
async fn create_pod(cluster: &Cluster, name: &str, container: Value, extra: Value) {
    let mut spec = json!({"restartPolicy": "Never", "containers": [container]});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
        spec.extend(extra.clone());
    }
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}))
    .expect("pod");
    cluster.pods().create(&pod).await.expect("create pod");
}

/// The log of a pod that ran to completion.
async fn finished_log(cluster: &Cluster, name: &str) -> String {
    let pod = wait_for(&cluster.pods(), name, p::is_finished, RUNNING)
        .await
        .expect("pod finished");
    assert_eq!(p::phase(&pod), "Succeeded", "{:?}", pod.status);
    cluster
        .pods()
        .logs(name, &LogParams::default())
        .await
        .expect("logs")
}

fn busybox(script: &str) -> Value {
    // `busybox` with only `args`: the image table runs them on the host (no ENTRYPOINT).
    json!({"name": "main", "image": "busybox:1.36", "args": ["sh", "-c", script]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn env_comes_from_configmaps_secrets_and_the_downward_api() {
    let _machine = crate::support::shared().await;
    let cluster = one_node().await;
    create_config_map(
        &cluster,
        "settings",
        json!({"mode": "fast", "log.level": "debug", "1bad": "x"}),
    )
    .await;
    create_secret(&cluster, "db", json!({"password": "s3cr3t"})).await;
    let mut container = busybox(
        "echo \"MODE=$MODE PASSWORD=$PASSWORD CFG=$CFG_mode POD=$MY_POD NS=$MY_NS NODE=$MY_NODE \
         IP=$MY_IP HOST=$MY_HOST TIER=$TIER MEM=$MEM_MI OPT=${OPTIONAL:-unset}\"",
    );
    container["resources"] = json!({"limits": {"memory": "64Mi"}});
    container["envFrom"] = json!([
        {"configMapRef": {"name": "settings"}, "prefix": "CFG_"},
        {"configMapRef": {"name": "settings"}},
        {"secretRef": {"name": "absent", "optional": true}}]);
    let field = |path: &str| json!({"fieldRef": {"fieldPath": path}});
    container["env"] = json!([
        {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "mode"}}},
        {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "db", "key": "password"}}},
        {"name": "OPTIONAL", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "nope", "optional": true}}},
        {"name": "MY_POD", "valueFrom": field("metadata.name")},
        {"name": "MY_NS", "valueFrom": field("metadata.namespace")},
        {"name": "MY_NODE", "valueFrom": field("spec.nodeName")},
        {"name": "MY_IP", "valueFrom": field("status.podIP")},
        {"name": "MY_HOST", "valueFrom": field("status.hostIP")},
        {"name": "TIER", "valueFrom": field("metadata.labels['tier']")},
        {"name": "MEM_MI", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}}]);
    let pod: Pod = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "env", "labels": {"tier": "front"}},
        "spec": {"restartPolicy": "Never", "containers": [container]}}))
    .expect("pod");
    cluster.pods().create(&pod).await.expect("create pod");
    let log = finished_log(&cluster, "env").await;
    let running = cluster.pods().get("env").await.expect("pod");
    let ip = p::ip(&running).expect("pod IP kept after it finished");
    assert_eq!(
        log.trim(),
        format!("MODE=fast PASSWORD=s3cr3t CFG=fast POD=env NS=default NODE=node-1 IP={ip} HOST=127.0.0.1 TIER=front MEM=64 OPT=unset")
    );
    // The invalid key `1bad` (no prefix) was skipped with an event, as upstream.
    let events: Api<Event> = Api::namespaced(cluster.client(), "default");
    wait_for_all(
        &events,
        ListParams::default(),
        |all| {
            all.iter()
                .any(|e| e.reason.as_deref() == Some("InvalidEnvironmentVariableNames"))
        },
        RUNNING,
    )
    .await
    .expect("InvalidEnvironmentVariableNames event");
    stop_clean(cluster).await;
}

/// Each kind of missing reference: a ConfigMap key, a Secret key and an `envFrom` source hold the
/// container in CreateContainerConfigError, a volume holds the pod in ContainerCreating with a
/// FailedMount event; each pod runs as soon as its object is created (no restart of anything).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn missing_references_hold_the_pod_until_the_object_appears() {
    let _machine = crate::support::shared().await;
    let cluster = one_node().await;
    let sleeper = |extra: Value| {
        let mut c = json!({"name": "main", "image": "busybox", "args": ["sleep", "3600"]});
        if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
            c.extend(extra.clone());
        }
        c
    };
    let key = |kind: &str, name: &str| json!({"env": [{"name": "V", "valueFrom": {kind: {"name": name, "key": "k"}}}]});
    create_pod(
        &cluster,
        "cm-key",
        sleeper(key("configMapKeyRef", "late-cm")),
        json!({}),
    )
    .await;
    create_pod(
        &cluster,
        "secret-key",
        sleeper(key("secretKeyRef", "late-secret")),
        json!({}),
    )
    .await;
    create_pod(
        &cluster,
        "env-from",
        sleeper(json!({"envFrom": [{"configMapRef": {"name": "late-env"}}]})),
        json!({}),
    )
    .await;
    let mount = json!({"volumeMounts": [{"name": "config", "mountPath": "/etc/config"}]});
    create_pod(
        &cluster,
        "volume",
        sleeper(mount),
        json!({"volumes": [{"name": "config", "configMap": {"name": "late-vol"}}]}),
    )
    .await;

    let config_error = |pod: &Pod| p::waiting_reason(pod) == Some("CreateContainerConfigError");
    for name in ["cm-key", "secret-key", "env-from"] {
        let held = wait_for(&cluster.pods(), name, config_error, RUNNING)
            .await
            .expect(name);
        assert_eq!(p::phase(&held), "Pending");
    }
    let held = wait_for(&cluster.pods(), "cm-key", config_error, RUNNING)
        .await
        .expect("cm-key");
    let message =
        p::container(&held).and_then(|c| c.state.as_ref()?.waiting.as_ref()?.message.clone());
    assert_eq!(message.as_deref(), Some("configmap \"late-cm\" not found"));
    let events: Api<Event> = Api::namespaced(cluster.client(), "default");
    wait_for_all(
        &events,
        ListParams::default(),
        |all| {
            all.iter().any(|e| {
                e.reason.as_deref() == Some("FailedMount")
                    && e.message
                        .as_deref()
                        .is_some_and(|m| m.contains("configmap \"late-vol\" not found"))
            })
        },
        RUNNING,
    )
    .await
    .expect("FailedMount event");
    let volume = cluster.pods().get("volume").await.expect("pod");
    assert_eq!(p::waiting_reason(&volume), Some("ContainerCreating"));

    create_config_map(&cluster, "late-cm", json!({"k": "v"})).await;
    create_secret(&cluster, "late-secret", json!({"k": "v"})).await;
    create_config_map(&cluster, "late-env", json!({"k": "v"})).await;
    create_config_map(&cluster, "late-vol", json!({"k": "v"})).await;
    for name in ["cm-key", "secret-key", "env-from", "volume"] {
        let running = wait_for(&cluster.pods(), name, p::is_running, RUNNING)
            .await
            .expect(name);
        assert_eq!(p::restarts(&running), 0);
    }
    stop_clean(cluster).await;
}

/// A mounted ConfigMap follows an update through the `..data` swap; the env var taken from the
/// same key at start does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_configmap_update_reaches_the_mounted_file_but_not_the_env() {
    let _machine = crate::support::shared().await;
    let cluster = one_node().await;
    create_config_map(&cluster, "live", json!({"mode": "fast"})).await;
    let container = json!({"name": "main", "image": "busybox",
        "command": ["sh", "-c", "while true; do echo \"file=$(cat etc/config/mode) env=$MODE\"; sleep 0.2; done"],
        "env": [{"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "live", "key": "mode"}}}],
        "volumeMounts": [{"name": "config", "mountPath": "/etc/config"}]});
    create_pod(
        &cluster,
        "reader",
        container,
        json!({"restartPolicy": "Always",
        "volumes": [{"name": "config", "configMap": {"name": "live", "defaultMode": 0o440}}]}),
    )
    .await;
    let running = wait_for(&cluster.pods(), "reader", p::is_running, RUNNING)
        .await
        .expect("Running");
    let log_has = |needle: &'static str| {
        let pods = cluster.pods();
        move || {
            let pods = pods.clone();
            async move {
                let log = pods.logs("reader", &LogParams::default()).await.ok()?;
                log.contains(needle).then_some(())
            }
        }
    };
    eventually("the first value", RUNNING, log_has("file=fast env=fast"))
        .await
        .expect("first value");

    // Upstream's layout: the key is a symlink through `..data`, itself a link to a timestamped dir.
    let uid = running.metadata.uid.clone().expect("uid");
    let volume =
        find_dir(cluster.dir(), &format!("pods/{uid}/volumes/config")).expect("volume dir");
    assert_eq!(
        std::fs::read_link(volume.join("mode")).unwrap(),
        std::path::Path::new("..data/mode")
    );
    let before = std::fs::read_link(volume.join("..data")).expect("..data");
    assert!(before.to_string_lossy().starts_with("..20"), "{before:?}");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(volume.join("mode"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o440, "defaultMode");

    config_maps(&cluster)
        .patch("live", &Patch::Merge(json!({"data": {"mode": "slow"}})))
        .await
        .expect("update configmap");
    eventually("the updated file", RUNNING, log_has("file=slow env=fast"))
        .await
        .expect("file updated in place");
    assert_ne!(
        std::fs::read_link(volume.join("..data")).unwrap(),
        before,
        "swapped"
    );
    assert_eq!(p::restarts(&cluster.pods().get("reader").await.unwrap()), 0);
    stop_clean(cluster).await;
}

/// Secret, downwardAPI and projected volumes, with items and modes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn secret_downward_and_projected_volumes_hold_their_files() {
    let _machine = crate::support::shared().await;
    let cluster = one_node().await;
    create_secret(
        &cluster,
        "creds",
        json!({"user": "admin", "password": "pw"}),
    )
    .await;
    create_config_map(&cluster, "settings", json!({"mode": "fast"})).await;
    let container = busybox("cat etc/secret/user; echo; cat etc/info/name; echo; cat etc/info/labels; echo; cat etc/all/conf/mode; echo; cat etc/all/pw");
    let mut container = container;
    container["volumeMounts"] = json!([
        {"name": "secret", "mountPath": "/etc/secret"},
        {"name": "info", "mountPath": "/etc/info"},
        {"name": "all", "mountPath": "/etc/all"}]);
    let pod: Pod = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "files", "labels": {"app": "files"}},
        "spec": {"restartPolicy": "Never", "containers": [container], "volumes": [
            {"name": "secret", "secret": {"secretName": "creds"}},
            {"name": "info", "downwardAPI": {"items": [
                {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
                {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
            {"name": "all", "projected": {"sources": [
                {"configMap": {"name": "settings", "items": [{"key": "mode", "path": "conf/mode"}]}},
                {"secret": {"name": "creds", "items": [{"key": "password", "path": "pw"}]}}]}}]}}))
    .expect("pod");
    cluster.pods().create(&pod).await.expect("create");
    let log = finished_log(&cluster, "files").await;
    assert_eq!(log.trim(), "admin\nfiles\napp=\"files\"\nfast\npw");
    stop_clean(cluster).await;
}

/// `{SVC}_SERVICE_HOST` and the docker-link variables for the services of the pod's namespace
/// that exist when it starts; none with `enableServiceLinks: false`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn service_links_name_the_services_of_the_namespace() {
    let _machine = crate::support::shared().await;
    let cluster = Cluster::builder().start().await.expect("cluster");
    let created = cluster
        .services()
        .create(&service("redis-primary").build())
        .await
        .expect("service");
    let ip = created.spec.and_then(|s| s.cluster_ip).expect("clusterIP");
    let script = "echo \"$REDIS_PRIMARY_SERVICE_HOST $REDIS_PRIMARY_SERVICE_PORT $REDIS_PRIMARY_PORT $REDIS_PRIMARY_PORT_80_TCP_ADDR\"";
    create_pod(&cluster, "linked", busybox(script), json!({})).await;
    create_pod(
        &cluster,
        "unlinked",
        busybox(script),
        json!({"enableServiceLinks": false}),
    )
    .await;
    assert_eq!(
        finished_log(&cluster, "linked").await.trim(),
        format!("{ip} 80 tcp://{ip}:80 {ip}")
    );
    assert_eq!(finished_log(&cluster, "unlinked").await.trim(), "");
    stop_clean(cluster).await;
}

/// The first directory under `root` whose path ends with `suffix`.
fn find_dir(root: &std::path::Path, suffix: &str) -> Option<std::path::PathBuf> {
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        if dir.ends_with(suffix) {
            return Some(dir);
        }
        for entry in std::fs::read_dir(&dir).ok()?.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            }
        }
    }
    None
}
