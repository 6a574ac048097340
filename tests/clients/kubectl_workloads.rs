//! kubectl 1.32, unmodified, driving Deployments (issue 15): `create deployment`, `get` and
//! `describe` of deployments and replicasets, `scale`, `set image`, `set env`, `rollout
//! status/history/undo/pause/resume/restart`, `expose deployment`, `apply` (client-side and
//! `--server-side`) and `delete` with each `--cascade`. Every answer is checked on what kubectl
//! prints or on the objects it leaves behind.

use std::time::Duration;

use minik_api::k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use minik_client::{Api, ListParams};
use minik_tests::wait::{wait_deleted, wait_for, wait_for_all};

use crate::support::{cells, cluster, kubectl_binary, line_of, stop_clean, Kubectl};

/// Bound for a rollout of a few `sleep` pods.
const ROLLOUT: &str = "--timeout=90s";

/// The ReplicaSets of `app=NAME`, as the API has them.
async fn replica_sets(cluster: &minik_tests::Cluster, app: &str) -> Vec<ReplicaSet> {
    let api: Api<ReplicaSet> = Api::namespaced(cluster.client(), "default");
    let lp = ListParams::default().labels(&format!("app={app}"));
    api.list(&lp).await.expect("list replicasets").items
}

/// The image of the Deployment's first container.
async fn image_of(cluster: &minik_tests::Cluster, name: &str) -> String {
    let api: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    let deployment = api.get(name).await.expect("get deployment");
    let spec = deployment
        .spec
        .and_then(|s| s.template.spec)
        .expect("pod spec");
    spec.containers[0].image.clone().unwrap_or_default()
}

/// `create deployment`, `rollout status`, `get deploy,rs` (plain and wide), `describe`, `scale`.
#[tokio::test]
async fn kubectl_creates_gets_describes_and_scales_a_deployment() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    let args = [
        "create",
        "deployment",
        "web",
        "--image=busybox",
        "--replicas=3",
        "--port=8080",
        "--",
        "sleep",
        "3600",
    ];
    let created = kubectl.ok(&args).await;
    assert!(created.contains("deployment.apps/web created"), "{created}");
    let status = kubectl
        .ok(&["rollout", "status", "deployment/web", ROLLOUT])
        .await;
    assert!(status.contains("successfully rolled out"), "{status}");

    let plain = kubectl.ok(&["get", "deployments"]).await;
    let header = cells(plain.lines().next().unwrap());
    assert_eq!(header, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    let row = cells(line_of(&plain, "web").expect("a row for web"));
    assert_eq!(row[..4], ["web", "3/3", "3", "3"], "{plain}");

    let wide = kubectl.ok(&["get", "rs", "-o", "wide"]).await;
    let header = cells(wide.lines().next().unwrap());
    let expected = [
        "NAME",
        "DESIRED",
        "CURRENT",
        "READY",
        "AGE",
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
    ];
    assert_eq!(header, expected, "{wide}");
    let rs = wide.lines().nth(1).expect("one replicaset");
    assert!(rs.starts_with("web-") && rs.contains("busybox"), "{wide}");

    let described = kubectl.ok(&["describe", "deployment", "web"]).await;
    assert!(described.contains("NewReplicaSet:"), "{described}");
    assert!(
        described.contains("3 desired | 3 updated | 3 total | 3 available"),
        "{described}"
    );

    kubectl
        .ok(&["scale", "deployment/web", "--replicas=5"])
        .await;
    kubectl
        .ok(&["rollout", "status", "deployment/web", ROLLOUT])
        .await;
    let pods = kubectl
        .ok(&["get", "pods", "-l", "app=web", "--no-headers"])
        .await;
    assert_eq!(pods.lines().count(), 5, "{pods}");
    stop_clean(cluster).await;
}

/// `set image`, `set env`, `rollout history`, `undo`, `pause`/`resume` and `restart`.
#[tokio::test]
async fn kubectl_rolls_out_undoes_pauses_and_restarts() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    let args = [
        "create",
        "deployment",
        "web",
        "--image=busybox",
        "--replicas=2",
        "--",
        "sleep",
        "3600",
    ];
    kubectl.ok(&args).await;
    kubectl
        .ok(&["rollout", "status", "deployment/web", ROLLOUT])
        .await;

    kubectl
        .ok(&["set", "image", "deployment/web", "busybox=busybox:1.36"])
        .await;
    kubectl
        .ok(&["rollout", "status", "deployment/web", ROLLOUT])
        .await;
    kubectl
        .ok(&["set", "env", "deployment/web", "COLOUR=blue"])
        .await;
    kubectl
        .ok(&["rollout", "status", "deployment/web", ROLLOUT])
        .await;
    let history = kubectl.ok(&["rollout", "history", "deployment/web"]).await;
    for revision in ["1", "2", "3"] {
        assert!(
            line_of(&history, revision).is_some(),
            "revision {revision}:\n{history}"
        );
    }
    assert_eq!(replica_sets(&cluster, "web").await.len(), 3);

    kubectl.ok(&["rollout", "undo", "deployment/web"]).await;
    kubectl
        .ok(&["rollout", "status", "deployment/web", ROLLOUT])
        .await;
    let env = kubectl
        .ok(&["set", "env", "deployment/web", "--list"])
        .await;
    assert!(
        !env.contains("COLOUR"),
        "undo returns revision 2's template: {env}"
    );
    assert_eq!(image_of(&cluster, "web").await, "busybox:1.36");

    kubectl.ok(&["rollout", "pause", "deployment/web"]).await;
    kubectl
        .ok(&["set", "image", "deployment/web", "busybox=busybox:1.37"])
        .await;
    let before = replica_sets(&cluster, "web").await.len();
    // A paused Deployment is still synced (its observedGeneration follows) but gets no new
    // ReplicaSet: wait until the controller has seen the change, then count.
    let api: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    let seen = |d: &Deployment| {
        let observed = d.status.as_ref().and_then(|s| s.observed_generation);
        observed == d.metadata.generation
    };
    wait_for(&api, "web", seen, Duration::from_secs(30))
        .await
        .expect("the paused deployment observed");
    assert_eq!(replica_sets(&cluster, "web").await.len(), before, "paused");
    kubectl.ok(&["rollout", "resume", "deployment/web"]).await;
    kubectl
        .ok(&["rollout", "status", "deployment/web", ROLLOUT])
        .await;
    assert_eq!(replica_sets(&cluster, "web").await.len(), before + 1);

    kubectl.ok(&["rollout", "restart", "deployment/web"]).await;
    kubectl
        .ok(&["rollout", "status", "deployment/web", ROLLOUT])
        .await;
    let template = api.get("web").await.unwrap().spec.unwrap().template;
    let annotations = template
        .metadata
        .and_then(|m| m.annotations)
        .unwrap_or_default();
    assert!(annotations.contains_key("kubectl.kubernetes.io/restartedAt"));
    stop_clean(cluster).await;
}

/// `expose deployment`, `apply` client- and server-side, and `delete` with each `--cascade`.
#[tokio::test]
async fn kubectl_exposes_applies_and_deletes_with_each_cascade() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    let manifest = kubectl.manifest("deploy.yaml", &deployment_yaml("api", 2));
    let path = manifest.to_str().unwrap();
    kubectl.ok(&["apply", "-f", path]).await;
    kubectl
        .ok(&["rollout", "status", "deployment/api", ROLLOUT])
        .await;
    let again = kubectl.ok(&["apply", "--server-side", "-f", path]).await;
    assert!(again.contains("serverside-applied"), "{again}");

    let exposed = kubectl
        .ok(&[
            "expose",
            "deployment",
            "api",
            "--port=80",
            "--target-port=8080",
        ])
        .await;
    assert!(exposed.contains("service/api exposed"), "{exposed}");
    let selector = kubectl
        .ok(&["get", "svc", "api", "-o", "jsonpath={.spec.selector.app}"])
        .await;
    assert_eq!(selector, "api");

    // Orphan: the Deployment goes, its ReplicaSet stays with no owner.
    kubectl
        .ok(&["delete", "deployment", "api", "--cascade=orphan"])
        .await;
    let orphans = replica_sets(&cluster, "api").await;
    assert_eq!(orphans.len(), 1);
    let owners = orphans[0]
        .metadata
        .owner_references
        .clone()
        .unwrap_or_default();
    assert!(
        owners.is_empty(),
        "the orphan finalizer removed the reference: {owners:?}"
    );

    // Foreground on the ReplicaSet: its pods go first, then the ReplicaSet itself.
    let rs = orphans[0].metadata.name.clone().unwrap();
    kubectl
        .ok(&["delete", "rs", &rs, "--cascade=foreground", "--timeout=90s"])
        .await;
    let lp = ListParams::default().labels("app=api");
    wait_for_all(
        &cluster.pods(),
        lp,
        |pods| pods.is_empty(),
        Duration::from_secs(90),
    )
    .await
    .expect("pods collected");

    // Background (the default) on a fresh Deployment: everything goes.
    kubectl.ok(&["apply", "-f", path]).await;
    kubectl
        .ok(&["rollout", "status", "deployment/api", ROLLOUT])
        .await;
    kubectl.ok(&["delete", "deployment", "api"]).await;
    let rs_api: Api<ReplicaSet> = Api::namespaced(cluster.client(), "default");
    let lp = ListParams::default().labels("app=api");
    wait_for_all(&rs_api, lp, |sets| sets.is_empty(), Duration::from_secs(60))
        .await
        .expect("replicasets collected");
    let deployments: Api<Deployment> = Api::namespaced(cluster.client(), "default");
    wait_deleted(&deployments, "api", Duration::from_secs(10))
        .await
        .expect("deployment gone");
    stop_clean(cluster).await;
}

/// A Deployment of `sleep` pods labelled `app=NAME`.
fn deployment_yaml(name: &str, replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\nspec:\n  \
         replicas: {replicas}\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    \
         metadata: {{labels: {{app: {name}}}}}\n    spec:\n      terminationGracePeriodSeconds: 5\n      \
         containers:\n      - name: main\n        image: busybox\n        command: [sleep, \"3600\"]\n"
    )
}
