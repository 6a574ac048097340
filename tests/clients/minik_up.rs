//! The seeds' own kubectl commands against a real `minik up`, through the kubeconfig it merged.
//!
//! This is issue 7's "done when" as a user meets it: a kubeconfig that already holds another
//! cluster, `minik up` in the background, then plain `kubectl` (no `--server`, no `--context`):
//! `kubectl apply -f pod.yaml` (seed 000), `kubectl get services,endpoints` (seeds 000 and 002)
//! and `kubectl delete pod … --grace-period=100` (seed 001). The seeds are listed by title in
//! docs/seeds.md.

use std::os::unix::fs::PermissionsExt;

use minik_api::core::Endpoints;
use minik_client::Api;
use minik_tests::up::Up;
use minik_tests::wait::{pod, wait_for};

use crate::support::{cells, kubectl_binary, line_of, Kubectl, RUNNING};

/// A kubeconfig the user had before: another cluster, the current context, a preference.
const EXISTING: &str = "apiVersion: v1\nkind: Config\n\
    clusters: [{name: elsewhere, cluster: {server: \"http://127.0.0.1:1\"}}]\n\
    contexts: [{name: elsewhere, context: {cluster: elsewhere, user: someone}}]\n\
    users: [{name: someone, user: {token: secret}}]\n\
    current-context: elsewhere\n\
    preferences: {colors: true}\n";

/// Seed 000's `pod.yaml`, with the label its Service selects and port 8080 instead of 80 (only
/// root may bind a port below 1024, and minik runs without root).
const SEED_POD: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: my-pod\n  labels:\n    \
    name: app\nspec:\n  containers:\n    - name: web\n      image: nginx\n      ports:\n        \
    - name: web\n          containerPort: 8080\n";

/// Seed 000's `service.yaml`, its `targetPort` pointed at the pod's port.
const SEED_SERVICE: &str =
    "apiVersion: v1\nkind: Service\nmetadata:\n  name: my-service\nspec:\n  \
    ports:\n  - port: 80\n    targetPort: 8080\n  selector:\n    name: app\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_seeds_kubectl_commands_work_against_minik_up_and_its_kubeconfig() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let kubectl = Kubectl::without_config(binary);
    let config = kubectl.kubeconfig();
    std::fs::write(&config, EXISTING).unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();

    let up = Up::start_with_kubeconfig(1, &config).await;
    let said = up.transcript.join("\n");
    assert!(
        said.contains(&format!(
            "Set kubectl context to \"minik\" in {}",
            config.display()
        )),
        "{said}"
    );
    assert!(
        up.transcript.iter().any(|l| l.trim() == "kubectl get pods"),
        "up names `kubectl get pods` as the next step:\n{said}"
    );

    // The merge: mode 0600, the user's entries kept, minik current.
    let mode = std::fs::metadata(&config).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the kubeconfig holds credentials");
    let contexts = kubectl.ok(&["config", "get-contexts", "-o", "name"]).await;
    assert_eq!(contexts.lines().collect::<Vec<_>>(), ["elsewhere", "minik"]);
    let current = kubectl.ok(&["config", "current-context"]).await;
    assert_eq!(current.trim(), "minik");
    let kept = kubectl
        .ok(&[
            "config",
            "view",
            "--raw",
            "-o",
            "jsonpath={.users[?(@.name==\"someone\")].user.token} {.preferences.colors}",
        ])
        .await;
    assert_eq!(kept, "secret true");

    // Nothing yet: kubectl's message goes to stderr and it exits 0.
    let empty = kubectl.run(&["get", "pods"]).await.success();
    assert_eq!(
        (empty.stdout.as_str(), empty.stderr.trim()),
        ("", "No resources found in default namespace.")
    );

    // Seed 000: `kubectl apply -f pod.yaml`, then the Service.
    let pod_file = kubectl.manifest("pod.yaml", SEED_POD);
    let service_file = kubectl.manifest("service.yaml", SEED_SERVICE);
    let applied = kubectl
        .ok(&["apply", "-f", pod_file.to_str().unwrap()])
        .await;
    assert_eq!(applied.trim(), "pod/my-pod created");
    let applied = kubectl
        .ok(&["apply", "-f", service_file.to_str().unwrap()])
        .await;
    assert_eq!(applied.trim(), "service/my-service created");
    let met = kubectl
        .ok(&[
            "wait",
            "--for=condition=Ready",
            "pod/my-pod",
            "--timeout=60s",
        ])
        .await;
    assert_eq!(met.trim(), "pod/my-pod condition met");
    let ready = wait_for(&up.pods(), "my-pod", pod::is_ready, RUNNING)
        .await
        .expect("my-pod Ready");
    let ip = pod::ip(&ready).expect("pod IP").to_string();

    // `kubectl get services,endpoints`: the endpoint is the pod's IP and the target port.
    let endpoints: Api<Endpoints> = Api::namespaced(up.client(), "default");
    wait_for(&endpoints, "my-service", |ep| addresses(ep) == 1, RUNNING)
        .await
        .expect("the pod in the Endpoints");
    let both = kubectl.ok(&["get", "services,endpoints"]).await;
    let tables: Vec<&str> = both.split("\n\n").collect();
    assert_eq!(tables.len(), 2, "{both}");
    let service = cells(line_of(tables[0], "service/my-service").expect("service row"));
    assert_eq!(
        (service[1], service[3], service[4]),
        ("ClusterIP", "<none>", "80/TCP")
    );
    let endpoint = cells(line_of(tables[1], "endpoints/my-service").expect("endpoints row"));
    assert_eq!(endpoint[1], format!("{ip}:8080"), "{both}");

    // Seed 001: a longer grace period; kubectl returns once the pod is gone, and the web server
    // exits on SIGTERM at once, so that is long before 100 s.
    let deleted = kubectl
        .ok(&["delete", "pod", "my-pod", "--grace-period=100"])
        .await;
    assert_eq!(deleted.trim(), "pod \"my-pod\" deleted");
    assert!(up.pods().get_opt("my-pod").await.unwrap().is_none());
    wait_for(&endpoints, "my-service", |ep| addresses(ep) == 0, RUNNING)
        .await
        .expect("the pod out of the Endpoints");
    let after = kubectl.ok(&["get", "endpoints"]).await;
    assert_eq!(cells(line_of(&after, "my-service").unwrap())[1], "<none>");
    up.down().await;
}

/// How many ready addresses the Endpoints list.
fn addresses(endpoints: &Endpoints) -> usize {
    endpoints
        .subsets
        .iter()
        .flatten()
        .filter_map(|subset| subset.addresses.as_ref())
        .map(Vec::len)
        .sum()
}
