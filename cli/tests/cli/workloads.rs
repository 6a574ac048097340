//! `minik get|describe|scale|rollout|delete` on Deployments and ReplicaSets, against a cluster whose
//! controller manager, scheduler and kubelet really run (in-process, through `minik-cluster`), so
//! that ReplicaSets and pods come and go as the commands ask. Every wait is a `minik rollout
//! status` (a watch) or a read of the watch output of `minik get -w`, each under a timeout.

use std::time::Duration;

use minik_api::apps::{Deployment, ReplicaSet};
use minik_client::{Api, ListParams};
use minik_cluster::{Cluster, ClusterConfig, Component, Mode};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::{manifest, minik_command, Run};

/// A Deployment of `sleep` pods that stop within a second of SIGTERM.
const WEB: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: main
        image: busybox
        command: [\"sleep\", \"3600\"]
";

/// A one-node cluster with the controller manager (no proxy, no endpoint controller).
struct Workloads {
    cluster: Cluster,
    client: minik_client::Client,
    _dir: tempfile::TempDir,
}

impl Workloads {
    async fn start() -> Workloads {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = ClusterConfig {
            binary: env!("CARGO_BIN_EXE_minik").into(),
            data_dir: dir.path().to_path_buf(),
            listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            nodes: 1,
            progress: false,
            mode: Mode::InProcess,
            components: vec![
                Component::Apiserver,
                Component::Scheduler,
                Component::ControllerManager,
                Component::Kubelet,
            ],
            drain_grace: Some(1),
            reap_leftovers: false,
            ..ClusterConfig::default()
        };
        let cluster = Cluster::start(config).await.expect("cluster started");
        let client = cluster.client().expect("client");
        Workloads {
            cluster,
            client,
            _dir: dir,
        }
    }

    /// Runs `minik ARGS --kubeconfig DATA/kubeconfig` to completion (at most 90 s).
    async fn minik(&self, args: &[&str]) -> Run {
        let mut command = self.command(args);
        command.stdin(std::process::Stdio::null());
        let output = tokio::time::timeout(Duration::from_secs(90), command.output())
            .await
            .expect("minik finished in time")
            .expect("minik output");
        Run::from(output)
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut command = minik_command(args);
        let kubeconfig = self.cluster.kubeconfig().expect("a secure cluster");
        command.arg("--kubeconfig").arg(kubeconfig);
        command
    }

    /// `rollout status` until it succeeds; returns its last line.
    async fn rolled_out(&self) -> String {
        let run = self
            .minik(&["rollout", "status", "deployment/web", "--timeout=60s"])
            .await;
        run.ok().lines().last().unwrap_or_default().to_string()
    }

    async fn deployment(&self) -> Deployment {
        let api: Api<Deployment> = Api::namespaced(self.client.clone(), "default");
        api.get("web").await.expect("get deployment")
    }

    async fn replica_sets(&self) -> Vec<ReplicaSet> {
        let api: Api<ReplicaSet> = Api::namespaced(self.client.clone(), "default");
        api.list(&ListParams::default()).await.expect("list").items
    }
}

/// The verbs in the order a user meets them: create, rollout status, get, scale, restart (seen as
/// Terminating pods in `get pods -w`), history, undo, describe, delete --cascade=orphan.
#[tokio::test(flavor = "multi_thread")]
async fn a_deployment_through_every_verb() {
    let cluster = Workloads::start().await;
    let (_dir, path) = manifest(WEB);
    assert_eq!(
        cluster.minik(&["apply", "-f", &path]).await.ok(),
        "deployment.apps/web created\n"
    );
    assert_eq!(
        cluster.rolled_out().await,
        "deployment \"web\" successfully rolled out"
    );

    let listed = cluster.minik(&["get", "deploy,rs"]).await;
    let text = listed.ok();
    assert!(
        text.starts_with(
            "NAME                  READY   UP-TO-DATE   AVAILABLE   AGE\ndeployment.apps/web   2/2 "
        ),
        "{text}"
    );
    assert!(text.contains("\n\nNAME "), "two tables: {text}");
    assert!(text.contains("replicaset.apps/web-"), "{text}");
    let all = cluster.minik(&["get", "all"]).await;
    assert!(all.ok().contains("\ndeployment.apps/web "), "{all:?}");
    let json = cluster.minik(&["get", "deploy", "web", "-o", "json"]).await;
    let object: serde_json::Value = serde_json::from_str(json.ok()).expect("JSON");
    assert_eq!(
        (object["kind"].as_str(), object["apiVersion"].as_str()),
        (Some("Deployment"), Some("apps/v1"))
    );

    assert_eq!(
        cluster
            .minik(&["scale", "deployment/web", "--replicas=3"])
            .await
            .ok(),
        "deployment.apps/web scaled\n"
    );
    cluster.rolled_out().await;
    let status = cluster.deployment().await.status.unwrap_or_default();
    assert_eq!(status.available_replicas, Some(3));

    restart_shows_terminating_pods(&cluster).await;
    cluster.rolled_out().await;
    assert_eq!(
        cluster
            .minik(&["rollout", "history", "deploy/web"])
            .await
            .ok(),
        "deployment.apps/web\nREVISION  CHANGE-CAUSE\n1         <none>\n2         <none>\n\n"
    );

    assert_eq!(
        cluster
            .minik(&["rollout", "undo", "deployment/web"])
            .await
            .ok(),
        "deployment.apps/web rolled back\n"
    );
    cluster.rolled_out().await;
    let template = cluster.deployment().await.spec.unwrap().template;
    let annotations = template.metadata.unwrap().annotations.unwrap_or_default();
    assert!(
        !annotations.contains_key("kubectl.kubernetes.io/restartedAt"),
        "undo went back to revision 1's template: {annotations:?}"
    );
    assert_eq!(
        cluster
            .minik(&["rollout", "history", "deployment/web"])
            .await
            .ok(),
        "deployment.apps/web\nREVISION  CHANGE-CAUSE\n2         <none>\n3         <none>\n\n",
        "revision 1 came back as revision 3"
    );

    let described = cluster.minik(&["describe", "deployment", "web"]).await;
    let text = described.ok();
    assert!(
        text.contains(
            "Replicas:               3 desired | 3 updated | 3 total | 3 available | 0 unavailable\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("RollingUpdateStrategy:  25% max unavailable, 25% max surge\n"),
        "{text}"
    );
    assert!(text.contains("NewReplicaSet:   web-"), "{text}");

    let run = cluster
        .minik(&["delete", "deployment", "web", "--cascade=orphan"])
        .await;
    assert_eq!(run.ok(), "deployment.apps \"web\" deleted\n");
    let sets = cluster.replica_sets().await;
    assert_eq!(sets.len(), 2, "the ReplicaSets stay: {sets:?}");
    assert!(
        sets.iter().all(|rs| rs
            .metadata
            .owner_references
            .as_ref()
            .is_none_or(|o| o.is_empty())),
        "and are orphaned: {sets:?}"
    );
    cluster.cluster.stop().await;
}

/// `rollout restart` replaces every pod: `minik get pods -w` shows old ones Terminating.
async fn restart_shows_terminating_pods(cluster: &Workloads) {
    let mut watch = cluster.command(&["get", "pods", "-w"]).spawn().unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    let header = lines.next_line().await.unwrap().unwrap_or_default();
    assert!(header.starts_with("NAME "), "{header}");
    assert_eq!(
        cluster
            .minik(&["rollout", "restart", "deployment/web"])
            .await
            .ok(),
        "deployment.apps/web restarted\n"
    );
    let terminating = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("Terminating") {
                return line;
            }
        }
        String::new()
    })
    .await
    .expect("a Terminating pod within 30 s");
    assert!(terminating.starts_with("web-"), "{terminating}");
    let _ = watch.kill().await;
}

/// Unknown Deployments are the server's NotFound, on one line, exit 1, for every verb.
#[tokio::test(flavor = "multi_thread")]
async fn a_missing_deployment_is_not_found_for_every_verb() {
    let server = crate::Server::start().await;
    // As kubectl prints it: the resource qualified by its group.
    let not_found = |stderr: &str| {
        stderr == "Error from server (NotFound): deployments.apps \"nope\" not found\n"
    };
    for args in [
        &["rollout", "status", "deployment/nope"][..],
        &["rollout", "history", "deployment/nope"],
        &["rollout", "undo", "deployment/nope"],
        &["rollout", "restart", "deployment/nope"],
        &["rollout", "pause", "deployment/nope"],
        &["describe", "deployment", "nope"],
        &["scale", "deployment/nope", "--replicas=2"],
        &["delete", "deployment", "nope"],
    ] {
        let run = server.minik(args).await;
        assert!(run.code == 1 && not_found(&run.stderr), "{args:?}: {run:?}");
    }
    let run = server.minik(&["rollout", "status", "rs/web"]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
}

/// `delete --cascade=foreground` waits (as `--wait` does) until the Deployment is gone, which the
/// garbage collector allows only once its ReplicaSets and their pods are gone.
#[tokio::test(flavor = "multi_thread")]
async fn a_foreground_delete_returns_once_the_pods_are_gone() {
    let cluster = Workloads::start().await;
    let (_dir, path) = manifest(WEB);
    cluster.minik(&["apply", "-f", &path]).await.ok();
    cluster.rolled_out().await;
    let run = cluster
        .minik(&["delete", "deploy/web", "--cascade=foreground"])
        .await;
    assert_eq!(run.ok(), "deployment.apps \"web\" deleted\n");
    assert!(cluster.replica_sets().await.is_empty());
    let pods: Api<minik_api::core::Pod> = Api::namespaced(cluster.client.clone(), "default");
    let left = pods.list(&ListParams::default()).await.expect("list").items;
    assert!(left.is_empty(), "{left:?}");
    cluster.cluster.stop().await;
}
