//! kubectl 1.32, unmodified, over resource metrics (issues 18 and 20): `top pods`, `top pods
//! --containers` and `top nodes` show a CPU-burning pod's usage through metrics-server, and
//! `autoscale deployment` (an autoscaling/v1 HPA in protobuf) scales a Deployment up under a
//! CPU-burning pod and back down once the load stops, with a short scale-down window set through
//! v2's `behavior`. Every answer is checked on what kubectl prints.

use std::time::{Duration, Instant};

use minik_api::apps::Deployment;
use minik_client::Api;
use minik_tests::wait::{eventually, wait_for};
use minik_tests::Cluster;

use crate::support::{cells, kubectl_binary, line_of, stop_clean, Kubectl};

/// CPU in millicores as kubectl top prints it (`123m`, `1`).
fn millicores(cell: &str) -> u64 {
    match cell.strip_suffix('m') {
        Some(milli) => milli.parse().unwrap_or(0),
        None => cell.parse::<u64>().map(|cores| cores * 1000).unwrap_or(0),
    }
}

/// A bounded busy loop: spins for `seconds` at most, then sleeps.
fn burner(seconds: u32) -> String {
    format!(
        "end=$(($(date +%s)+{seconds})); while [ $(date +%s) -lt $end ]; do :; done; sleep 3600"
    )
}

fn metrics_cluster(extra_controller_args: &[&str]) -> minik_tests::ClusterBuilder {
    Cluster::builder()
        .nodes(1)
        .without_services()
        .metrics_server(&["--metric-resolution", "1s"])
        .controller_manager_args(extra_controller_args)
}

#[tokio::test]
async fn kubectl_top_shows_a_cpu_burning_pod_and_the_node() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = metrics_cluster(&[]).start().await.expect("start cluster");
    let kubectl = Kubectl::new(binary, &cluster);
    let yaml = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: burn\nspec:\n  containers:\n  - name: spin\n    image: busybox\n    command: [\"sh\", \"-c\", \"{}\"]\n    resources:\n      requests: {{cpu: 100m}}\n",
        burner(60)
    );
    let manifest = kubectl.manifest("burn.yaml", &yaml);
    kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    let started = Instant::now();
    let top = eventually(
        "kubectl top pods to show burn's CPU",
        Duration::from_secs(60),
        || {
            let kubectl = &kubectl;
            async move {
                let run = kubectl.run(&["top", "pods"]).await;
                let row = cells(line_of(&run.stdout, "burn")?)
                    .iter()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>();
                (millicores(&row[1]) > 0).then_some(run.stdout)
            }
        },
    )
    .await
    .expect("kubectl top pods");
    eprintln!(
        "kubectl top: burn's CPU shown {:?} after apply:\n{top}",
        started.elapsed()
    );
    assert_eq!(
        cells(top.lines().next().unwrap()),
        ["NAME", "CPU(cores)", "MEMORY(bytes)"]
    );
    let containers = kubectl.ok(&["top", "pods", "--containers"]).await;
    let row = cells(line_of(&containers, "burn").expect("a row for burn"));
    assert_eq!(row[..2], ["burn", "spin"], "{containers}");
    let nodes = kubectl.ok(&["top", "nodes"]).await;
    let row = cells(line_of(&nodes, "node-1").expect("a row for node-1"));
    assert!(millicores(row[1]) > 0 && row[2].ends_with('%'), "{nodes}");
    // Aggregated discovery lists the APIService's resources, asked of metrics-server (issue 21).
    let resources = kubectl
        .ok(&["api-resources", "--api-group=metrics.k8s.io"])
        .await;
    let pods = cells(line_of(&resources, "pods").expect("metrics pods listed"));
    assert_eq!(
        pods[1..],
        ["metrics.k8s.io/v1beta1", "true", "PodMetrics"],
        "{resources}"
    );
    kubectl
        .ok(&["delete", "pod", "burn", "--grace-period=0", "--force"])
        .await;
    stop_clean(cluster).await;
}

#[tokio::test]
async fn kubectl_autoscale_scales_a_deployment_up_under_load_and_back_down() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = metrics_cluster(&["--horizontal-pod-autoscaler-sync-period", "1s"])
        .start()
        .await
        .expect("start cluster");
    let kubectl = Kubectl::new(binary, &cluster);
    let yaml = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: burn\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {{app: burn}}\n  template:\n    metadata:\n      labels: {{app: burn}}\n    spec:\n      terminationGracePeriodSeconds: 1\n      containers:\n      - name: spin\n        image: busybox\n        command: [\"sh\", \"-c\", \"{}\"]\n        resources:\n          requests: {{cpu: 100m}}\n",
        burner(90)
    );
    let manifest = kubectl.manifest("burn.yaml", &yaml);
    kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    let created = kubectl
        .ok(&[
            "autoscale",
            "deployment",
            "burn",
            "--cpu-percent=50",
            "--min=1",
            "--max=2",
        ])
        .await;
    assert!(
        created.contains("horizontalpodautoscaler.autoscaling/burn autoscaled"),
        "{created}"
    );
    // Scale down after 2 s of low recommendations instead of upstream's default 5 minutes.
    let patch = r#"{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":2}}}}"#;
    kubectl
        .ok(&["patch", "hpa", "burn", "--type=merge", "-p", patch])
        .await;
    let deployments: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    let loaded = Instant::now();
    let replicas =
        |n: i32| move |d: &Deployment| d.spec.as_ref().and_then(|s| s.replicas) == Some(n);
    wait_for(&deployments, "burn", replicas(2), Duration::from_secs(60))
        .await
        .expect("scaled up to 2");
    eprintln!(
        "hpa: scaled up {:?} after the load started",
        loaded.elapsed()
    );
    let table = kubectl.ok(&["get", "hpa", "burn"]).await;
    assert_eq!(
        cells(table.lines().next().unwrap()),
        [
            "NAME",
            "REFERENCE",
            "TARGETS",
            "MINPODS",
            "MAXPODS",
            "REPLICAS",
            "AGE"
        ]
    );
    let row = cells(line_of(&table, "burn").expect("a row"));
    assert_eq!(row[1], "Deployment/burn", "{table}");
    // TARGETS is `cpu: 150%/50%`, two cells once split on spaces.
    assert!(row[2] == "cpu:" && row[3].ends_with("/50%"), "{table}");
    let conditions = kubectl
        .ok(&[
            "get",
            "hpa",
            "burn",
            "-o",
            "jsonpath={range .status.conditions[*]}{.type}={.status} {end}",
        ])
        .await;
    assert!(
        conditions.contains("AbleToScale=True") && conditions.contains("ScalingActive=True"),
        "{conditions}"
    );
    // The load stops: the pods' command becomes a sleep (a rollout), and the HPA scales back down.
    let idle = r#"[{"op":"replace","path":"/spec/template/spec/containers/0/command","value":["sleep","3600"]}]"#;
    kubectl
        .ok(&["patch", "deployment", "burn", "--type=json", "-p", idle])
        .await;
    let unloaded = Instant::now();
    wait_for(&deployments, "burn", replicas(1), Duration::from_secs(90))
        .await
        .expect("scaled back down to 1");
    eprintln!(
        "hpa: scaled down {:?} after the load stopped",
        unloaded.elapsed()
    );
    let v1 = kubectl
        .ok(&[
            "get",
            "--raw",
            "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers/burn",
        ])
        .await;
    assert!(v1.contains("\"targetCPUUtilizationPercentage\":50"), "{v1}");
    kubectl.ok(&["delete", "hpa", "burn"]).await;
    kubectl.ok(&["delete", "deployment", "burn"]).await;
    stop_clean(cluster).await;
}
