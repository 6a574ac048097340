//! kubectl 1.32, unmodified, reading the OpenAPI documents and the Events: `kubectl explain` of a
//! built-in kind (from `/openapi/v3`), and `kubectl events` listing a crash-looping pod's repeated
//! events as one aggregated object each, with a count (client-go's event correlation in minik's
//! recorder), also readable as events.k8s.io/v1.

use std::time::Duration;

use minik_api::core::Event;
use minik_client::{Api, ListParams};
use minik_tests::wait::eventually;

use crate::support::{cluster, kubectl_binary, stop_clean, Kubectl};

#[tokio::test]
async fn kubectl_explain_prints_the_upstream_schema_of_a_built_in_kind() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);

    let containers = kubectl.ok(&["explain", "pod.spec.containers"]).await;
    for expected in [
        "KIND:       Pod",
        "VERSION:    v1",
        "FIELD: containers <[]Container>",
        "List of containers belonging to the pod.",
        "image\t<string>",
        "name\t<string> -required-",
        "ports\t<[]ContainerPort>",
    ] {
        assert!(
            containers.contains(expected),
            "{expected:?} in:\n{containers}"
        );
    }
    let strategy = kubectl
        .ok(&["explain", "deployment.spec.strategy", "--recursive"])
        .await;
    for expected in [
        "GROUP:      apps",
        "KIND:       Deployment",
        "FIELD: strategy <DeploymentStrategy>",
        "rollingUpdate\t<RollingUpdateDeployment>",
        "maxSurge\t<IntOrString>",
        "type\t<string>",
    ] {
        assert!(strategy.contains(expected), "{expected:?} in:\n{strategy}");
    }
    let unknown = kubectl.run(&["explain", "pod.spec.nothing"]).await;
    assert_eq!(unknown.code, 1, "{unknown:#?}");
    assert!(unknown.stderr.contains("nothing"), "{unknown:#?}");
    stop_clean(cluster).await;
}

const CRASH_YAML: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: crash\nspec:\n  \
    terminationGracePeriodSeconds: 1\n  containers:\n  - {name: crash, image: busybox, command: [sh, -c, 'exit 1']}\n";

#[tokio::test]
async fn kubectl_events_lists_a_crash_loop_as_one_event_with_a_count() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    let manifest = kubectl.manifest("crash.yaml", CRASH_YAML);
    kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;

    let events = Api::<Event>::namespaced(cluster.client(), "default");
    let crash_events = ListParams::default().fields("involvedObject.name=crash");
    let repeated = eventually(
        "a BackOff event counted three times",
        Duration::from_secs(60),
        || async {
            let list = events.list(&crash_events).await.ok()?;
            list.items
                .into_iter()
                .find(|e| e.reason.as_deref() == Some("BackOff") && e.count.unwrap_or(0) >= 3)
        },
    )
    .await
    .unwrap();
    let list = events.list(&crash_events).await.unwrap();
    let backoffs: Vec<&Event> = list
        .items
        .iter()
        .filter(|e| e.message == repeated.message)
        .collect();
    assert_eq!(backoffs.len(), 1, "one object, not many: {backoffs:#?}");
    // Timestamps have whole seconds (metav1.Time) and the test cluster backs off from 200 ms,
    // so three BackOffs may share one second.
    assert!(
        repeated.last_timestamp >= repeated.first_timestamp,
        "{repeated:#?}"
    );

    let printed = kubectl.ok(&["events", "--for", "pod/crash"]).await;
    let line = printed
        .lines()
        .find(|l| l.contains("BackOff"))
        .unwrap_or_else(|| panic!("no BackOff line in:\n{printed}"));
    assert!(line.contains(" (x") && line.contains(" over "), "{line}");
    assert!(line.contains("Pod/crash"), "{line}");

    // The same object read as events.k8s.io/v1: `note`, `regarding`, `deprecatedCount`.
    let name = repeated.metadata.name.clone().unwrap();
    let v1 = kubectl
        .ok(&["get", "events.v1.events.k8s.io", &name, "-o", "json"])
        .await;
    let v1: serde_json::Value = serde_json::from_str(&v1).unwrap();
    assert_eq!(v1["apiVersion"], "events.k8s.io/v1");
    assert_eq!(v1["regarding"]["name"], "crash");
    assert_eq!(v1["note"].as_str(), repeated.message.as_deref());
    assert!(v1["deprecatedCount"].as_i64().unwrap() >= 3, "{v1:#}");
    stop_clean(cluster).await;
}
