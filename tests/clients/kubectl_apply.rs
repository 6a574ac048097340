//! kubectl 1.32, unmodified, writing objects: `apply` (client-side: create, configure, unchanged,
//! a new image the kubelet restarts the container with; strict field validation; warnings for fields minik ignores), `apply --server-side` (managed
//! fields, conflicts, force) and the typed `create namespace` / `create service` commands, which
//! send protobuf bodies.
//!
//! Each test writes a kubeconfig for its cluster (docs/real-clients.md#kubeconfig) and runs
//! `/usr/bin/kubectl` with a private `--cache-dir`, so discovery is fetched fresh. Skipped with a
//! notice when kubectl is not installed, except under CI.

use minik_api::core::Pod;
use minik_tests::wait::{pod, wait_for};

use crate::support::{
    cells, cluster, kubectl_binary, line_of, pod_yaml, stop_clean, Kubectl, RUNNING, SERVICE_YAML,
};

#[tokio::test]
async fn kubectl_apply_creates_configures_leaves_unchanged_and_validates_strictly() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    // securityContext is stored but not acted on: the server says so in a Warning header.
    let security = "  securityContext: {runAsUser: 1000}\n";
    let manifest = kubectl.manifest("pod.yaml", &pod_yaml("web", "app: web", security));
    let file = manifest.to_str().unwrap();

    let created = kubectl.run(&["apply", "-f", file]).await.success();
    assert_eq!(created.stdout.trim(), "pod/web created");
    assert!(
        created
            .stderr
            .contains("Warning: minik: spec.securityContext is ignored"),
        "{created:#?}"
    );
    let again = kubectl.ok(&["apply", "-f", file]).await;
    assert_eq!(again.trim(), "pod/web unchanged");
    kubectl.manifest(
        "pod.yaml",
        &pod_yaml("web", "app: web, tier: front", security),
    );
    // A patch is warned about only for what it adds: securityContext was there already.
    let changed = kubectl.run(&["apply", "-f", file]).await.success();
    assert_eq!(changed.stdout.trim(), "pod/web configured");
    assert!(!changed.stderr.contains("Warning"), "{changed:#?}");
    let deadline = r#"{"spec":{"activeDeadlineSeconds":600}}"#;
    let patched = kubectl
        .run(&["patch", "pod", "web", "-p", deadline])
        .await
        .success();
    // The kubelet honours activeDeadlineSeconds (issue 19): nothing to warn about.
    assert!(!patched.stderr.contains("Warning"), "{patched:#?}");
    let labels = cluster
        .pods()
        .get("web")
        .await
        .unwrap()
        .metadata
        .labels
        .unwrap_or_default();
    assert_eq!(labels.get("tier").map(String::as_str), Some("front"));

    // A new image is the one container change a pod takes: kubectl sends a strategic merge patch
    // with `$setElementOrder/containers`, and the kubelet restarts the container from it.
    kubectl.manifest(
        "pod.yaml",
        &pod_yaml("web", "app: web, tier: front", security)
            .replace("image: nginx", "image: minik/web"),
    );
    let changed = kubectl.run(&["apply", "-f", file, "-v=8"]).await.success();
    assert_eq!(changed.stdout.trim(), "pod/web configured");
    // -v=8 logs the request body as an escaped string.
    assert!(
        changed
            .stderr
            .contains(r#"\"$setElementOrder/containers\":[{\"name\":\"web\"}]"#),
        "{changed:#?}"
    );
    let restarted = |pod: &Pod| {
        pod::is_running(pod)
            && pod
                .status
                .iter()
                .flat_map(|s| s.container_statuses.iter().flatten())
                .any(|c| {
                    c.image == "minik/web"
                        && c.restart_count == 1
                        && c.state.as_ref().is_some_and(|s| s.running.is_some())
                })
    };
    wait_for(&cluster.pods(), "web", restarted, RUNNING)
        .await
        .expect("the container restarted with its new image");

    // A Service minik implements entirely is created without a word; a NodePort one is told
    // that nothing listens on the nodes.
    let service = kubectl.manifest("svc.yaml", SERVICE_YAML);
    let plain = kubectl
        .run(&["apply", "-f", service.to_str().unwrap()])
        .await
        .success();
    assert_eq!(plain.stdout.trim(), "service/web created");
    assert!(!plain.stderr.contains("Warning"), "{plain:#?}");
    let node_port = SERVICE_YAML
        .replace("name: web", "name: web-np")
        .replace("spec:\n", "spec:\n  type: NodePort\n");
    let node_port = kubectl.manifest("svc-np.yaml", &node_port);
    let served = kubectl
        .run(&["apply", "-f", node_port.to_str().unwrap()])
        .await
        .success();
    assert_eq!(served.stdout.trim(), "service/web-np created");
    assert!(
        served.stderr.contains(
            "Warning: minik: spec.type NodePort gets a node port, but nothing listens on it"
        ),
        "{served:#?}"
    );

    // kubectl's default --validate=strict makes the server refuse unknown fields.
    let bad = kubectl.manifest("bad.yaml", &pod_yaml("bad", "", "  foo: 1\n"));
    let run = kubectl.run(&["apply", "-f", bad.to_str().unwrap()]).await;
    assert_eq!(run.code, 1, "{run:#?}");
    assert!(
        run.stderr.contains("unknown field \"spec.foo\""),
        "{run:#?}"
    );
    stop_clean(cluster).await;
}

#[tokio::test]
async fn kubectl_server_side_apply_upserts_and_removes_fields_dropped_from_the_manifest() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    let manifest = kubectl.manifest("pod.yaml", &pod_yaml("web2", "app: web, tier: front", ""));
    let file = manifest.to_str().unwrap();
    let apply = ["apply", "--server-side", "-f", file];

    assert_eq!(
        kubectl.ok(&apply).await.trim(),
        "pod/web2 serverside-applied"
    );
    let pod = cluster.pods().get("web2").await.unwrap();
    let managers: Vec<_> = pod
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .map(|m| m.manager)
        .collect();
    assert_eq!(managers, [Some("kubectl".to_string())]);

    kubectl.manifest("pod.yaml", &pod_yaml("web2", "app: web", ""));
    assert_eq!(
        kubectl.ok(&apply).await.trim(),
        "pod/web2 serverside-applied"
    );
    let labels = cluster
        .pods()
        .get("web2")
        .await
        .unwrap()
        .metadata
        .labels
        .unwrap_or_default();
    assert_eq!(
        labels.keys().collect::<Vec<_>>(),
        ["app"],
        "the dropped label is removed"
    );

    // Another manager changing kubectl's image conflicts, unless it forces the take-over.
    let other = pod_yaml("web2", "app: web", "").replace("image: nginx", "image: nginx:2");
    let other_file = kubectl.manifest("other.yaml", &other);
    let other_file = other_file.to_str().unwrap();
    let conflict = kubectl
        .run(&[
            "apply",
            "--server-side",
            "--field-manager=ci",
            "-f",
            other_file,
        ])
        .await;
    assert_eq!(conflict.code, 1, "{conflict:#?}");
    assert!(
        conflict.stderr.contains("conflict with \"kubectl\"")
            && conflict
                .stderr
                .contains(".spec.containers[name=\"web\"].image"),
        "{conflict:#?}"
    );
    let forced = kubectl
        .ok(&[
            "apply",
            "--server-side",
            "--field-manager=ci",
            "--force-conflicts",
            "-f",
            other_file,
        ])
        .await;
    assert_eq!(forced.trim(), "pod/web2 serverside-applied");
    let image = cluster
        .pods()
        .get("web2")
        .await
        .unwrap()
        .spec
        .unwrap()
        .containers[0]
        .image
        .clone();
    assert_eq!(image.as_deref(), Some("nginx:2"));
    stop_clean(cluster).await;
}

#[tokio::test]
async fn kubectl_create_namespace_and_service_send_protobuf_the_server_decodes() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = crate::support::control_plane().await;
    let kubectl = Kubectl::new(binary, &cluster);
    // kubectl's typed clients POST these with Content-Type: application/vnd.kubernetes.protobuf.
    assert_eq!(
        kubectl.ok(&["create", "namespace", "team-a"]).await.trim(),
        "namespace/team-a created"
    );
    let namespaces = kubectl
        .ok(&["get", "namespace", "team-a", "--show-labels"])
        .await;
    let row = cells(line_of(&namespaces, "team-a").unwrap());
    assert_eq!(
        (row[1], row[3]),
        ("Active", "kubernetes.io/metadata.name=team-a"),
        "{namespaces}"
    );

    let created = kubectl
        .ok(&[
            "create",
            "service",
            "clusterip",
            "api",
            "--tcp=80:8080",
            "-n",
            "team-a",
        ])
        .await;
    assert_eq!(created.trim(), "service/api created");
    let ports = kubectl
        .ok(&[
            "get",
            "svc",
            "api",
            "-n",
            "team-a",
            "-o",
            "jsonpath={.spec.ports[0]}",
        ])
        .await;
    let port: serde_json::Value = serde_json::from_str(&ports).expect("port JSON");
    assert_eq!(
        port,
        serde_json::json!({"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080})
    );
    stop_clean(cluster).await;
}
