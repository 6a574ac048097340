//! kubectl 1.32 with a two-version, namespaced CRD: both versions served from one storage version
//! (conversion `None`: only `apiVersion` differs), the preferred version by upstream's order,
//! `x-kubernetes-int-or-string` and `x-kubernetes-preserve-unknown-fields`, `kubectl get crd`'s
//! columns, and a namespace's deletion taking the custom resources in it.
//!
//! Kubernetes counterpart: the "Versions in CustomResourceDefinitions" page of the Kubernetes docs
//! and the namespace controller's deletion of every namespaced resource discovery lists
//! (`pkg/controller/namespace/deletion/namespaced_resources_deleter.go`).

use crate::support::{cells, kubectl_binary, line_of, stop_clean, Kubectl};

const WIDGET_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, kind: Widget}
  versions:
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema: &schema
        type: object
        properties:
          spec:
            type: object
            properties:
              port: {x-kubernetes-int-or-string: true}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
  - name: v1
    served: true
    storage: false
    schema:
      openAPIV3Schema: *schema
"#;

const WIDGET: &str =
    "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: gear\n  namespace: team\n\
    spec:\n  port: http\n  extra: {anything: {goes: [1, 2]}}\n";

#[tokio::test]
async fn kubectl_serves_both_versions_of_a_crd_and_namespace_deletion_takes_its_objects() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = crate::support::control_plane().await;
    let kubectl = Kubectl::new(binary, &cluster);
    let crd = kubectl.manifest("crd.yaml", WIDGET_CRD);
    kubectl.ok(&["apply", "-f", crd.to_str().unwrap()]).await;
    kubectl.wait_established("widgets.example.com").await;
    let crds = kubectl.ok(&["get", "crd"]).await;
    assert_eq!(
        cells(crds.lines().next().unwrap_or("")),
        ["NAME", "CREATED", "AT"],
        "{crds}"
    );
    assert!(line_of(&crds, "widgets.example.com").is_some(), "{crds}");
    let group = kubectl.ok(&["get", "--raw", "/apis/example.com"]).await;
    assert!(
        group.contains(r#""preferredVersion":{"groupVersion":"example.com/v1","version":"v1"}"#),
        "{group}"
    );

    kubectl.ok(&["create", "namespace", "team"]).await;
    let widget = kubectl.manifest("widget.yaml", WIDGET);
    kubectl.ok(&["apply", "-f", widget.to_str().unwrap()]).await;
    let as_v1 = kubectl
        .ok(&[
            "get",
            "widget",
            "gear",
            "-n",
            "team",
            "-o",
            "jsonpath={.apiVersion} {.spec.port} {.spec.extra.anything.goes[1]}",
        ])
        .await;
    assert_eq!(as_v1, "example.com/v1 http 2");
    let as_beta = kubectl
        .ok(&[
            "get",
            "widgets.v1beta1.example.com",
            "gear",
            "-n",
            "team",
            "-o",
            "jsonpath={.apiVersion}",
        ])
        .await;
    assert_eq!(
        as_beta, "example.com/v1beta1",
        "the same object in the other version"
    );
    let port = kubectl
        .ok(&[
            "patch",
            "widgets.v1beta1.example.com",
            "gear",
            "-n",
            "team",
            "--type=merge",
            "-p",
            r#"{"spec":{"port":8080}}"#,
        ])
        .await;
    assert!(port.contains("patched"), "{port}");
    let patched = kubectl
        .ok(&[
            "get",
            "widget",
            "gear",
            "-n",
            "team",
            "-o",
            "jsonpath={.spec.port}",
        ])
        .await;
    assert_eq!(patched, "8080");
    let wrong = kubectl
        .run(&[
            "patch",
            "widget",
            "gear",
            "-n",
            "team",
            "--type=merge",
            "-p",
            r#"{"spec":{"port":true}}"#,
        ])
        .await;
    assert!(wrong.stderr.contains(r#"spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean""#), "{wrong:#?}");

    // `minik get` learns the custom kind from discovery and prints the same server Table.
    let expected = kubectl.ok(&["get", "widgets", "-n", "team"]).await;
    let minik = tokio::process::Command::new(cluster.minik_binary())
        .args(["get", "widgets", "-n", "team"])
        .env("KUBECONFIG", kubectl.kubeconfig())
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("run minik");
    let printed = String::from_utf8_lossy(&minik.stdout);
    assert!(minik.status.success(), "{minik:?}");
    assert_eq!(printed.lines().next(), expected.lines().next(), "{printed}");
    assert!(line_of(&printed, "gear").is_some(), "{printed}");

    // `kubectl delete namespace` waits until the namespace is gone, its widgets first.
    kubectl.ok(&["delete", "namespace", "team"]).await;
    let left = kubectl.run(&["get", "widgets", "-A"]).await.success();
    assert!(left.stderr.contains("No resources found"), "{left:#?}");
    stop_clean(cluster).await;
}
