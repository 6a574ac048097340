//! Unmodified kubectl 1.32 against the apiserver alone, for the Deployment verbs that are pure
//! API calls: `create deployment`, `get deploy,rs -o wide`, `scale`, `set image`, `set env`,
//! `rollout pause/resume/restart/undo` and `delete --cascade`. No controller runs here, so what
//! is checked is what kubectl prints and what the server stored. Skipped with a notice when
//! kubectl is missing (`MINIK_KUBECTL`, else `/usr/bin/kubectl`), failed under CI (`CI` set).

mod common;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use common::TestServer;
use serde_json::{json, Value};
use tempfile::TempDir;

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const REPLICASETS: &str = "/apis/apps/v1/namespaces/default/replicasets";

/// kubectl with its own kubeconfig and cache, pointed at one test server.
struct Kubectl {
    binary: PathBuf,
    dir: TempDir,
}

impl Kubectl {
    fn find(server: &TestServer) -> Option<Kubectl> {
        let binary = std::env::var_os("MINIK_KUBECTL")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/usr/bin/kubectl"));
        if !binary.exists() {
            assert!(std::env::var_os("CI").is_none(), "CI must provide kubectl");
            eprintln!("SKIPPED: kubectl not found at {}", binary.display());
            return None;
        }
        let dir = tempfile::tempdir().expect("temp dir");
        let config = format!(
            "apiVersion: v1\nkind: Config\n\
             clusters: [{{name: minik, cluster: {{server: \"{}\"}}}}]\n\
             contexts: [{{name: minik, context: {{cluster: minik, user: minik, namespace: default}}}}]\n\
             users: [{{name: minik, user: {{}}}}]\ncurrent-context: minik\n",
            server.base
        );
        std::fs::write(dir.path().join("config"), config).expect("kubeconfig");
        Some(Kubectl { binary, dir })
    }

    /// Runs kubectl; panics with its output unless it exits 0. Returns stdout.
    async fn ok(&self, args: &[&str]) -> String {
        let output = tokio::process::Command::new(&self.binary)
            .env("KUBECONFIG", self.dir.path().join("config"))
            .env("HOME", self.dir.path())
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .args(args)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(Duration::from_secs(60), output)
            .await
            .expect("kubectl in time")
            .expect("run kubectl");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "kubectl {args:?} failed:\n{stdout}\n{stderr}"
        );
        stdout
    }
}

fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// A ReplicaSet as the Deployment controller would have written it for one revision.
fn owned_replica_set(name: &str, owner: &Value, revision: &str, image: &str) -> Value {
    let mut template = owner["spec"]["template"].clone();
    template["metadata"]["labels"]["pod-template-hash"] = json!(name);
    template["spec"]["containers"][0]["image"] = json!(image);
    json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {
            "name": format!("web-{name}"),
            "labels": {"app": "web", "pod-template-hash": name},
            "annotations": {"deployment.kubernetes.io/revision": revision},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                 "uid": owner["metadata"]["uid"], "controller": true,
                                 "blockOwnerDeletion": true}]
        },
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web", "pod-template-hash": name}},
                 "template": template}
    })
}

/// The verbs of `kubectl create/get/scale/set/rollout/delete` work on Deployments as on a real
/// cluster, as far as the API server's part goes.
#[tokio::test]
async fn kubectl_drives_deployments_through_the_api() {
    let server = TestServer::start().await;
    let Some(kubectl) = Kubectl::find(&server) else {
        return;
    };
    let created = kubectl
        .ok(&[
            "create",
            "deployment",
            "web",
            "--image=busybox",
            "--replicas=3",
            "--port=8080",
            "--",
            "sleep",
            "3600",
        ])
        .await;
    assert_eq!(created.trim(), "deployment.apps/web created");
    let (_, web) = server.get(&format!("{DEPLOYMENTS}/web")).await;
    let container = &web["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["command"], json!(["sleep", "3600"]), "{web}");
    assert_eq!(container["ports"][0]["containerPort"], 8080);
    assert_eq!(web["spec"]["replicas"], 3);

    let scaled = kubectl
        .ok(&["scale", "deployment", "web", "--replicas=5"])
        .await;
    assert_eq!(scaled.trim(), "deployment.apps/web scaled");
    let image = kubectl
        .ok(&["set", "image", "deployment/web", "busybox=busybox:1.36"])
        .await;
    assert_eq!(image.trim(), "deployment.apps/web image updated");
    let env = kubectl
        .ok(&["set", "env", "deployment/web", "MODE=prod"])
        .await;
    assert_eq!(env.trim(), "deployment.apps/web env updated");
    let (_, web) = server.get(&format!("{DEPLOYMENTS}/web")).await;
    let container = &web["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(
        (
            web["spec"]["replicas"].as_i64(),
            container["image"].as_str()
        ),
        (Some(5), Some("busybox:1.36")),
        "{web}"
    );
    assert_eq!(container["env"], json!([{"name": "MODE", "value": "prod"}]));
    assert_eq!(
        web["metadata"]["generation"], 4,
        "scale, image and env each bump it"
    );

    let paused = kubectl.ok(&["rollout", "pause", "deployment/web"]).await;
    assert_eq!(paused.trim(), "deployment.apps/web paused");
    let resumed = kubectl.ok(&["rollout", "resume", "deployment/web"]).await;
    assert_eq!(resumed.trim(), "deployment.apps/web resumed");
    let restarted = kubectl.ok(&["rollout", "restart", "deployment/web"]).await;
    assert_eq!(restarted.trim(), "deployment.apps/web restarted");
    let (_, web) = server.get(&format!("{DEPLOYMENTS}/web")).await;
    assert!(web["spec"]["template"]["metadata"]["annotations"]
        ["kubectl.kubernetes.io/restartedAt"]
        .is_string());

    // `rollout undo` is client-side: it reads the owned ReplicaSets' revisions and sends a
    // JSON patch of the template. Stand in for the controller's two ReplicaSets.
    server
        .post(
            REPLICASETS,
            &owned_replica_set("old", &web, "1", "busybox:1.35"),
        )
        .await;
    let mut current = owned_replica_set("new", &web, "2", "busybox:1.36");
    current["spec"]["template"] = web["spec"]["template"].clone();
    current["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] = json!("new");
    let (code, body) = server.post(REPLICASETS, &current).await;
    assert_eq!(code, 201, "{body}");
    let revision = json!({"metadata": {"annotations": {"deployment.kubernetes.io/revision": "2"}}});
    let (code, body) = server
        .patch(
            &format!("{DEPLOYMENTS}/web"),
            "application/merge-patch+json",
            &revision,
        )
        .await;
    assert_eq!(code, 200, "{body}");
    let undone = kubectl.ok(&["rollout", "undo", "deployment/web"]).await;
    assert_eq!(undone.trim(), "deployment.apps/web rolled back");
    let (_, web) = server.get(&format!("{DEPLOYMENTS}/web")).await;
    assert_eq!(
        web["spec"]["template"]["spec"]["containers"][0]["image"],
        "busybox:1.35"
    );

    let wide = kubectl.ok(&["get", "deploy,rs", "-o", "wide"]).await;
    let mut lines = wide.lines();
    assert_eq!(
        words(lines.next().unwrap()),
        [
            "NAME",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "CONTAINERS",
            "IMAGES",
            "SELECTOR"
        ],
        "{wide}"
    );
    let row = words(lines.next().unwrap());
    assert_eq!(
        (row[0], row[1], row[5], row[6], row[7]),
        (
            "deployment.apps/web",
            "0/5",
            "busybox",
            "busybox:1.35",
            "app=web"
        ),
        "{wide}"
    );
    assert!(
        wide.lines()
            .any(|l| words(l).starts_with(&["NAME", "DESIRED", "CURRENT", "READY"])),
        "{wide}"
    );
    assert!(wide.contains("replicaset.apps/web-old"), "{wide}");

    let history = kubectl.ok(&["rollout", "history", "deployment/web"]).await;
    let revisions: Vec<&str> = history
        .lines()
        .filter_map(|l| words(l).first().copied())
        .filter(|w| w.parse::<u32>().is_ok())
        .collect();
    assert_eq!(revisions, ["1", "2"], "{history}");
    let exposed = kubectl
        .ok(&[
            "expose",
            "deployment",
            "web",
            "--port=80",
            "--target-port=8080",
        ])
        .await;
    assert_eq!(exposed.trim(), "service/web exposed");
    let (_, service) = server.get("/api/v1/namespaces/default/services/web").await;
    assert_eq!(
        service["spec"]["selector"],
        json!({"app": "web"}),
        "{service}"
    );

    let deleted = kubectl
        .ok(&[
            "delete",
            "deployment",
            "web",
            "--cascade=orphan",
            "--wait=false",
        ])
        .await;
    assert_eq!(deleted.trim(), "deployment.apps \"web\" deleted");
    let (_, web) = server.get(&format!("{DEPLOYMENTS}/web")).await;
    assert_eq!(web["metadata"]["finalizers"], json!(["orphan"]), "{web}");
}

const API_YAML: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: api\nspec:\n  \
    replicas: 2\n  selector:\n    matchLabels: {app: api}\n  template:\n    metadata:\n      \
    labels: {app: api}\n    spec:\n      containers:\n      - name: api\n        image: IMAGE\n      \
    - name: log\n        image: busybox\n";

/// `kubectl apply` (client-side, then server-side) creates and patches a Deployment, `describe`
/// reads it, and `delete --cascade=foreground` leaves it with `foregroundDeletion`.
#[tokio::test]
async fn kubectl_applies_describes_and_deletes_in_the_foreground() {
    let server = TestServer::start().await;
    let Some(kubectl) = Kubectl::find(&server) else {
        return;
    };
    let manifest = kubectl.dir.path().join("api.yaml");
    std::fs::write(&manifest, API_YAML.replace("IMAGE", "nginx:1")).expect("manifest");
    let file = manifest.to_str().unwrap();
    let applied = kubectl.ok(&["apply", "-f", file]).await;
    assert_eq!(applied.trim(), "deployment.apps/api created");
    std::fs::write(&manifest, API_YAML.replace("IMAGE", "nginx:2")).expect("manifest");
    let applied = kubectl.ok(&["apply", "-f", file]).await;
    assert_eq!(applied.trim(), "deployment.apps/api configured");
    let (_, api) = server.get(&format!("{DEPLOYMENTS}/api")).await;
    let containers = &api["spec"]["template"]["spec"]["containers"];
    assert_eq!(
        (
            containers[0]["image"].as_str(),
            containers[1]["name"].as_str()
        ),
        (Some("nginx:2"), Some("log")),
        "{api}"
    );
    assert_eq!(api["metadata"]["generation"], 2);

    std::fs::write(&manifest, API_YAML.replace("IMAGE", "nginx:3")).expect("manifest");
    let applied = kubectl
        .ok(&["apply", "--server-side", "--force-conflicts", "-f", file])
        .await;
    assert_eq!(applied.trim(), "deployment.apps/api serverside-applied");
    let (_, api) = server.get(&format!("{DEPLOYMENTS}/api")).await;
    assert_eq!(
        api["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:3"
    );

    let described = kubectl.ok(&["describe", "deployment", "api"]).await;
    assert!(
        described.contains("RollingUpdateStrategy:  25% max unavailable, 25% max surge"),
        "{described}"
    );
    assert!(described.contains("nginx:3"), "{described}");

    let deleted = kubectl
        .ok(&[
            "delete",
            "deploy",
            "api",
            "--cascade=foreground",
            "--wait=false",
        ])
        .await;
    assert_eq!(deleted.trim(), "deployment.apps \"api\" deleted");
    let (code, api) = server.get(&format!("{DEPLOYMENTS}/api")).await;
    assert_eq!(
        code, 200,
        "kept until the garbage collector removes the finalizer"
    );
    assert_eq!(api["metadata"]["finalizers"], json!(["foregroundDeletion"]));
}
