//! Images as users write them (issue 18): busybox with only `args`, python, nginx serving a
//! mounted ConfigMap, agnhost's netexec, an unknown image; and finished pods giving back their
//! IP, so 300 short-lived pods run on one node's /24.
//!
//! Kubernetes counterpart: the pods of `test/e2e/common/node/containers.go` (command and args
//! against ENTRYPOINT and CMD) and `test/e2e/network/` (agnhost netexec).

use minik_api::core::{ConfigMap, Pod};
use minik_client::{Api, ListParams};
use minik_tests::wait::{pod as p, wait_for, wait_for_all};
use serde_json::{json, Value};

use crate::support::{http_answer, one_node, run_pod, stop_clean, RUNNING};

fn pod(name: &str, spec: Value) -> Pod {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": name}}, "spec": spec}))
    .expect("pod")
}

async fn get(address: &str, path: &str) -> Option<String> {
    let http = reqwest::Client::builder().no_proxy().build().ok()?;
    http.get(format!("http://{address}{path}"))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn busybox_python_nginx_and_agnhost_run_as_written() {
    let _machine = crate::support::shared().await;
    let cluster = one_node().await;
    // busybox with only args (the Python client's e2e pod), and with neither (CMD `sh`, exits).
    let sleeper = run_pod(
        &cluster,
        &pod(
            "sleeper",
            json!({"containers": [
        {"name": "main", "image": "busybox", "args": ["sleep", "3600"]}]}),
        ),
    )
    .await;
    assert_eq!(p::restarts(&sleeper), 0);
    let processes = cluster.pod_processes("sleeper");
    assert!(
        processes.iter().any(|proc| proc.cmdline == "sleep 3600"),
        "{processes:#?}"
    );

    let python = run_pod(
        &cluster,
        &pod(
            "python",
            json!({"containers": [{"name": "main",
        "image": "python:3.12-slim",
        "command": ["python", "-m", "http.server", "8080", "--bind", "$(POD_IP)"],
        "ports": [{"containerPort": 8080}]}]}),
        ),
    )
    .await;
    let listing = http_answer(&format!("{}:8080", p::ip(&python).unwrap())).await;
    assert!(listing.contains("Directory listing"), "{listing}");

    let page: ConfigMap = serde_json::from_value(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "page"}, "data": {"index.html": "<h1>hello from a configmap</h1>\n"}}))
    .unwrap();
    Api::<ConfigMap>::namespaced(cluster.client(), "default")
        .create(&page)
        .await
        .expect("configmap");
    let nginx = run_pod(
        &cluster,
        &pod(
            "nginx",
            json!({"containers": [{"name": "nginx",
        "image": "nginx:1.27", "ports": [{"containerPort": 8080}],
        "volumeMounts": [{"name": "html", "mountPath": "/usr/share/nginx/html"}]}],
        "volumes": [{"name": "html", "configMap": {"name": "page"}}]}),
        ),
    )
    .await;
    let body = http_answer(&format!("{}:8080", p::ip(&nginx).unwrap())).await;
    assert_eq!(body, "<h1>hello from a configmap</h1>\n");

    let agnhost = run_pod(
        &cluster,
        &pod(
            "netexec",
            json!({"containers": [{"name": "agnhost",
        "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
        "args": ["netexec", "--http-port=8081"]}]}),
        ),
    )
    .await;
    let address = format!("{}:8081", p::ip(&agnhost).unwrap());
    http_answer(&address).await;
    assert_eq!(get(&address, "/hostname").await.as_deref(), Some("netexec"));
    assert_eq!(get(&address, "/echo?msg=hi").await.as_deref(), Some("hi"));

    cluster
        .pods()
        .create(&pod(
            "unknown",
            json!({"containers": [
        {"name": "db", "image": "postgres:16"}]}),
        ))
        .await
        .expect("create");
    let failed = wait_for(
        &cluster.pods(),
        "unknown",
        |pod| {
            matches!(
                p::waiting_reason(pod),
                Some("ErrImagePull" | "ImagePullBackOff")
            )
        },
        RUNNING,
    )
    .await
    .expect("ErrImagePull");
    let message =
        p::container(&failed).and_then(|c| c.state.as_ref()?.waiting.as_ref()?.message.clone());
    assert!(
        message.unwrap_or_default().contains("busybox"),
        "the message says what minik can run"
    );
    stop_clean(cluster).await;
}

/// 300 pods that exit at once, 30 at a time, on one node whose pool has 254 addresses: each gets
/// an IP and finishes, because a finished pod gives its address back (and keeps it in status).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_hundred_short_lived_pods_do_not_exhaust_the_node_pool() {
    let _machine = crate::support::shared().await;
    let cluster = one_node().await;
    let started = std::time::Instant::now();
    for batch in 0..10 {
        for index in 0..30 {
            let name = format!("short-{batch}-{index}");
            let mut fixture = pod(
                &name,
                json!({"restartPolicy": "Never", "containers": [
                {"name": "main", "image": "busybox", "args": ["true"]}]}),
            );
            fixture.metadata.labels = Some([("batch".to_string(), batch.to_string())].into());
            cluster.pods().create(&fixture).await.expect("create");
        }
        let selector = ListParams::default().labels(&format!("batch={batch}"));
        let done = wait_for_all(
            &cluster.pods(),
            selector,
            |pods| pods.len() == 30 && pods.iter().all(|pod| p::phase(pod) == "Succeeded"),
            std::time::Duration::from_secs(120),
        )
        .await
        .unwrap_or_else(|e| panic!("batch {batch}: {e}"));
        assert!(
            done.iter().all(|pod| p::ip(pod).is_some()),
            "finished pods keep their IP in status"
        );
    }
    let all = cluster
        .pods()
        .list(&ListParams::default())
        .await
        .expect("list");
    assert_eq!(all.items.len(), 300);
    eprintln!(
        "300 pods ran to completion in {:.1}s",
        started.elapsed().as_secs_f64()
    );
    stop_clean(cluster).await;
}
