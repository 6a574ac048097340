//! The Kubernetes documentation's own examples, applied unmodified with `kubectl apply -f`
//! (issue 18's done-when): the ConfigMap task (env from keys of two ConfigMaps, `envFrom`, a
//! volume), the downward API in env, and the nginx Deployment + Service of "Connecting
//! Applications with Services", answered through the Service, a Secret volume and a native
//! sidecar. The YAML files are in
//! `tests/clients/manifests/`, each naming its page; each check is what that page says to expect.
//! The volume example needs mount namespaces (volumes at their mountPath) and says so otherwise.

use std::path::PathBuf;
use std::time::Duration;

use minik_tests::wait::{eventually, pod, wait_deleted, wait_for};
use minik_tests::Cluster;

use crate::support::{kubectl_binary, stop_clean, Kubectl, RUNNING};

fn manifest(name: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("clients/manifests");
    dir.join(name).display().to_string()
}

async fn apply(kubectl: &Kubectl, name: &str) -> String {
    kubectl.ok(&["apply", "-f", &manifest(name)]).await
}

/// Applies the pod example `file`, waits until its pod `name` has finished, returns its log and
/// deletes it (the examples share the name `dapi-test-pod`).
async fn run_to_completion(kubectl: &Kubectl, cluster: &Cluster, file: &str, name: &str) -> String {
    apply(kubectl, file).await;
    let done = wait_for(
        &cluster.pods(),
        name,
        pod::is_finished,
        Duration::from_secs(60),
    )
    .await;
    let log = kubectl.ok(&["logs", name]).await;
    let done = done.unwrap_or_else(|e| panic!("{file}: {e:?}\n{log}"));
    assert_eq!(pod::phase(&done), "Succeeded", "{file}\n{log}");
    kubectl.ok(&["delete", "pod", name]).await;
    wait_deleted(&cluster.pods(), name, RUNNING)
        .await
        .expect("deleted");
    log
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_configmap_and_downward_api_examples_run_as_the_docs_say() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = crate::support::cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    let created = apply(&kubectl, "configmaps.yaml").await;
    assert!(
        created.contains("configmap/special-config created"),
        "{created}"
    );

    // "The output of the Pod now includes SPECIAL_LEVEL_KEY=very and LOG_LEVEL=INFO."
    let log = run_to_completion(
        &kubectl,
        &cluster,
        "pod-multiple-configmap-env-variable.yaml",
        "dapi-test-pod",
    )
    .await;
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines.contains(&"SPECIAL_LEVEL_KEY=very"), "{log}");
    assert!(lines.contains(&"LOG_LEVEL=INFO"), "{log}");

    // envFrom: "SPECIAL_LEVEL=very, SPECIAL_TYPE=charm".
    let configured = apply(&kubectl, "configmap-multikeys.yaml").await;
    assert!(
        configured.contains("configmap/special-config configured"),
        "{configured}"
    );
    let log = run_to_completion(
        &kubectl,
        &cluster,
        "pod-configmap-envFrom.yaml",
        "dapi-test-pod",
    )
    .await;
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines.contains(&"SPECIAL_LEVEL=very"), "{log}");
    assert!(lines.contains(&"SPECIAL_TYPE=charm"), "{log}");

    // The volume: "SPECIAL_LEVEL SPECIAL_TYPE", one file per key at /etc/config.
    if mount_namespaces(&cluster).await {
        let log = run_to_completion(
            &kubectl,
            &cluster,
            "pod-configmap-volume.yaml",
            "dapi-test-pod",
        )
        .await;
        assert_eq!(
            log.split_whitespace().collect::<Vec<_>>(),
            ["SPECIAL_LEVEL", "SPECIAL_TYPE"]
        );
    } else {
        eprintln!("pod-configmap-volume.yaml skipped: no mount namespaces, the volume is not at /etc/config");
    }

    // The downward API in env: the node, the pod's name, namespace, IP and service account.
    apply(&kubectl, "dapi-envars-pod.yaml").await;
    let running = wait_for(
        &cluster.pods(),
        "dapi-envars-fieldref",
        pod::is_running,
        RUNNING,
    )
    .await
    .expect("Running");
    let ip = pod::ip(&running).expect("podIP").to_string();
    let expected = [
        "node-1",
        "dapi-envars-fieldref",
        "default",
        ip.as_str(),
        "default",
    ];
    let log = eventually("the printenv lines", RUNNING, || async {
        let log = kubectl.ok(&["logs", "dapi-envars-fieldref"]).await;
        let lines: Vec<String> = log
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('-'))
            .map(String::from)
            .collect();
        (lines.len() >= 5).then_some(lines)
    })
    .await
    .expect("log");
    assert_eq!(&log[..5], expected.map(String::from), "{log:?}");
    stop_clean(cluster).await;
}

/// "Connecting Applications with Services": two nginx replicas on port 80 behind `my-nginx`;
/// `curl` of the Service's cluster IP is answered by nginx.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_nginx_deployment_and_service_answer_through_the_service() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    if !privileged_ports_allowed() {
        eprintln!("skipped: nginx's port 80 needs root or a lowered ip_unprivileged_port_start");
        return;
    }
    let cluster = Cluster::builder().nodes(1).start().await.expect("cluster");
    let kubectl = Kubectl::new(binary, &cluster);
    apply(&kubectl, "run-my-nginx.yaml").await;
    apply(&kubectl, "nginx-svc.yaml").await;
    let status = kubectl
        .ok(&["rollout", "status", "deployment/my-nginx", "--timeout=60s"])
        .await;
    assert!(status.contains("successfully rolled out"), "{status}");
    let ip = kubectl
        .ok(&[
            "get",
            "service",
            "my-nginx",
            "-o",
            "jsonpath={.spec.clusterIP}",
        ])
        .await;
    let endpoints = kubectl
        .ok(&[
            "get",
            "endpoints",
            "my-nginx",
            "-o",
            "jsonpath={.subsets[*].addresses[*].ip}",
        ])
        .await;
    assert_eq!(
        endpoints.split_whitespace().count(),
        2,
        "two endpoints: {endpoints}"
    );
    let url = format!("http://{ip}:80/");
    let body = eventually("nginx through the Service", RUNNING, || async {
        let answer = reqwest::get(&url).await.ok()?;
        answer.status().is_success().then_some(())?;
        answer.text().await.ok()
    })
    .await
    .expect("an answer through the Service");
    assert!(
        body.contains("my-nginx-"),
        "answered by a my-nginx pod: {body}"
    );
    stop_clean(cluster).await;
}

/// "Distribute Credentials Securely Using Secrets": the Secret's keys are files in the nginx
/// container's `/etc/secret-volume` (`username` is `my-app`), read here through the container's
/// own root (`/proc/PID/root`) where the page uses `kubectl exec`; and the native sidecar example:
/// the `logshipper` init container with `restartPolicy: Always` tails what `myapp` writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_secret_volume_and_the_sidecar_examples_run_as_the_docs_say() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = crate::support::cluster().await;
    if !mount_namespaces(&cluster).await {
        eprintln!("skipped: no mount namespaces, volumes are not at their mountPath");
        return stop_clean(cluster).await;
    }
    let kubectl = Kubectl::new(binary, &cluster);
    apply(&kubectl, "secret.yaml").await;
    apply(&kubectl, "secret-pod.yaml").await;
    wait_for(&cluster.pods(), "secret-test-pod", pod::is_running, RUNNING)
        .await
        .expect("Running");
    let process = cluster
        .pod_processes("secret-test-pod")
        .pop()
        .expect("nginx");
    let volume = PathBuf::from(format!("/proc/{}/root/etc/secret-volume", process.pid));
    let read = |key: &str| std::fs::read_to_string(volume.join(key)).unwrap_or_default();
    assert_eq!(
        (read("username"), read("password")),
        ("my-app".into(), "39528$vdg7Jb".into())
    );

    apply(&kubectl, "deployment-sidecar.yaml").await;
    let status = kubectl
        .ok(&["rollout", "status", "deployment/myapp", "--timeout=60s"])
        .await;
    assert!(status.contains("successfully rolled out"), "{status}");
    let shipped = eventually("the sidecar's log", RUNNING, || async {
        let log = kubectl
            .ok(&["logs", "-l", "app=myapp", "-c", "logshipper"])
            .await;
        (log.lines().filter(|l| *l == "logging").count() >= 2).then_some(log)
    })
    .await
    .expect("logshipper tails myapp's file");
    // The sidecar starts first (it is an init container), so `tail -F` may see no file yet and say so.
    let others = shipped.lines().filter(|l| *l != "logging");
    assert!(
        others.into_iter().all(|l| l.starts_with("tail: ")),
        "{shipped}"
    );
    stop_clean(cluster).await;
}

/// Whether the node reported mount namespaces (`minik.io/mount-namespaces: "true"`).
async fn mount_namespaces(cluster: &Cluster) -> bool {
    let annotated = eventually("the node's namespace annotation", RUNNING, || async {
        let node = cluster.nodes().get("node-1").await.ok()?;
        let annotations = node.metadata.annotations?;
        annotations.get("minik.io/mount-namespaces").cloned()
    })
    .await
    .expect("annotation");
    annotated == "true"
}

/// Whether this user may bind port 80: root, or a lowered `ip_unprivileged_port_start`.
fn privileged_ports_allowed() -> bool {
    let start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_unprivileged_port_start");
    let start: u16 = start
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1024);
    nix::unistd::geteuid().is_root() || start <= 80
}
