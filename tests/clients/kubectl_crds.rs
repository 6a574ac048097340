//! kubectl 1.32, unmodified, with a CustomResourceDefinition: apply the CRD, wait for
//! `Established`, then drive its custom resources as a controller developer would — `apply`, `get`
//! (the CRD's printer columns), `patch --type=merge`, `scale`, `explain`, invalid objects refused
//! with 422 and upstream's field paths (schema and CEL rules), unknown fields refused under
//! kubectl's strict validation and pruned without it, and `delete crd` taking every object with it.
//!
//! Kubernetes counterpart: the CRD walkthrough of the Kubernetes docs
//! ("Extend the Kubernetes API with CustomResourceDefinitions") and the apiextensions e2e tests in
//! `test/e2e/apimachinery/custom_resource_definition.go`.

use std::time::Instant;

use crate::support::{cells, kubectl_binary, line_of, stop_clean, Kubectl};

/// The docs' CronTab, with validation, defaults, a CEL rule, status and scale subresources and
/// printer columns.
pub const CRONTAB_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    additionalPrinterColumns:
    - {name: Spec, type: string, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: The desired schedule.
            required: [cronSpec]
            x-kubernetes-validations:
            - rule: self.replicas <= self.maxReplicas
              message: replicas must not exceed maxReplicas
            properties:
              cronSpec:
                type: string
                description: A cron schedule.
                pattern: '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'
              image: {type: string}
              replicas: {type: integer, minimum: 1, maximum: 10, default: 1}
              maxReplicas: {type: integer, default: 5}
          status:
            type: object
            properties:
              replicas: {type: integer}
"#;

fn crontab(name: &str, spec: &str) -> String {
    format!("apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: {name}\nspec:\n{spec}")
}

#[tokio::test]
async fn kubectl_drives_a_crd_with_validation_defaults_pruning_cel_status_and_scale() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = crate::support::control_plane().await;
    let kubectl = Kubectl::new(binary, &cluster);
    let crd = kubectl.manifest("crd.yaml", CRONTAB_CRD);
    let applied = Instant::now();
    let created = kubectl.ok(&["apply", "-f", crd.to_str().unwrap()]).await;
    assert_eq!(
        created.trim(),
        "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created"
    );
    kubectl
        .wait_established("crontabs.stable.example.com")
        .await;
    let established = applied.elapsed();
    eprintln!("CRD established {established:?} after the apply");
    assert!(established.as_secs_f64() < 5.0, "{established:?}");

    let cron = kubectl.manifest(
        "cron.yaml",
        &crontab(
            "my-cron",
            "  cronSpec: '* * * * */5'\n  image: my-cron-image\n",
        ),
    );
    let made = kubectl.ok(&["apply", "-f", cron.to_str().unwrap()]).await;
    assert_eq!(made.trim(), "crontab.stable.example.com/my-cron created");
    let again = kubectl.ok(&["apply", "-f", cron.to_str().unwrap()]).await;
    assert_eq!(again.trim(), "crontab.stable.example.com/my-cron unchanged");

    let table = kubectl.ok(&["get", "crontabs"]).await;
    let header = cells(table.lines().next().unwrap_or(""));
    assert_eq!(header, ["NAME", "SPEC", "REPLICAS", "AGE"], "{table}");
    let row = cells(line_of(&table, "my-cron").expect("a row"));
    assert_eq!(row[..6], ["my-cron", "*", "*", "*", "*", "*/5"], "{table}");
    assert_eq!(row[6], "1", "the default replicas: {table}");
    let by_short_name = kubectl
        .ok(&["get", "ct", "my-cron", "-o", "jsonpath={.spec.maxReplicas}"])
        .await;
    assert_eq!(by_short_name, "5", "defaulted");
    assert!(kubectl
        .ok(&["get", "all"])
        .await
        .contains("crontab.stable.example.com/my-cron"));

    let patched = kubectl
        .ok(&[
            "patch",
            "crontab",
            "my-cron",
            "--type=merge",
            "-p",
            r#"{"spec":{"image":"other"}}"#,
        ])
        .await;
    assert_eq!(patched.trim(), "crontab.stable.example.com/my-cron patched");
    let scaled = kubectl
        .ok(&["scale", "crontab", "my-cron", "--replicas=3"])
        .await;
    assert_eq!(scaled.trim(), "crontab.stable.example.com/my-cron scaled");
    let replicas = kubectl
        .ok(&[
            "get",
            "crontab",
            "my-cron",
            "-o",
            "jsonpath={.spec.replicas} {.metadata.generation}",
        ])
        .await;
    assert_eq!(replicas, "3 3", "spec changes bump the generation");
    let status = kubectl
        .run(&[
            "patch",
            "crontab",
            "my-cron",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"replicas":2},"spec":{"replicas":9}}"#,
        ])
        .await
        .success();
    assert!(status.stdout.contains("patched"), "{status:#?}");
    let after = kubectl
        .ok(&[
            "get",
            "crontab",
            "my-cron",
            "-o",
            "jsonpath={.spec.replicas} {.status.replicas} {.metadata.generation}",
        ])
        .await;
    assert_eq!(after, "3 2 3", "a status write changes status only");

    refuses_invalid_objects(&kubectl).await;
    let explained = kubectl.ok(&["explain", "crontab.spec"]).await;
    assert!(
        explained.contains("cronSpec") && explained.contains("A cron schedule."),
        "{explained}"
    );

    let deleted = kubectl
        .ok(&["delete", "crd", "crontabs.stable.example.com"])
        .await;
    assert!(deleted.contains("deleted"), "{deleted}");
    let gone = kubectl
        .run(&["get", "crd", "crontabs.stable.example.com"])
        .await;
    assert_eq!(gone.code, 1, "{gone:#?}");
    // Created again, the kind starts empty: deleting the CRD deleted its objects.
    kubectl.ok(&["apply", "-f", crd.to_str().unwrap()]).await;
    kubectl
        .wait_established("crontabs.stable.example.com")
        .await;
    let empty = kubectl.run(&["get", "crontabs"]).await.success();
    assert!(empty.stderr.contains("No resources found"), "{empty:#?}");
    stop_clean(cluster).await;
}

/// Schema, CEL and strict field validation, as kubectl prints the server's answers.
async fn refuses_invalid_objects(kubectl: &Kubectl) {
    let too_many = kubectl.manifest(
        "bad.yaml",
        &crontab(
            "bad",
            "  cronSpec: '* * * * *'\n  replicas: 20\n  maxReplicas: 30\n",
        ),
    );
    let refused = kubectl
        .run(&["apply", "-f", too_many.to_str().unwrap()])
        .await;
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert!(
        refused.stderr.contains("spec.replicas: Invalid value: 20: spec.replicas in body should be less than or equal to 10"),
        "{refused:#?}"
    );
    let cel = kubectl.manifest(
        "cel.yaml",
        &crontab(
            "cel",
            "  cronSpec: '* * * * *'\n  replicas: 4\n  maxReplicas: 2\n",
        ),
    );
    let refused = kubectl.run(&["apply", "-f", cel.to_str().unwrap()]).await;
    assert!(
        refused
            .stderr
            .contains(r#"spec: Invalid value: "object": replicas must not exceed maxReplicas"#),
        "{refused:#?}"
    );
    let pattern = kubectl.manifest("pattern.yaml", &crontab("pattern", "  cronSpec: 'often'\n"));
    let refused = kubectl
        .run(&["create", "-f", pattern.to_str().unwrap()])
        .await;
    assert!(
        refused.stderr.contains(
            "spec.cronSpec: Invalid value: \"often\": spec.cronSpec in body should match"
        ),
        "{refused:#?}"
    );
    let missing = kubectl.manifest("missing.yaml", &crontab("missing", "  image: x\n"));
    let refused = kubectl
        .run(&["create", "-f", missing.to_str().unwrap()])
        .await;
    assert!(
        refused.stderr.contains("spec.cronSpec: Required value"),
        "{refused:#?}"
    );

    let unknown = kubectl.manifest(
        "unknown.yaml",
        &crontab("unknown", "  cronSpec: '* * * * *'\n  colour: red\n"),
    );
    let strict = kubectl
        .run(&["apply", "-f", unknown.to_str().unwrap()])
        .await;
    assert!(
        strict.stderr.contains(r#"unknown field "spec.colour""#),
        "{strict:#?}"
    );
    kubectl
        .ok(&["apply", "--validate=false", "-f", unknown.to_str().unwrap()])
        .await;
    let pruned = kubectl
        .ok(&["get", "crontab", "unknown", "-o", "jsonpath={.spec}"])
        .await;
    assert!(
        !pruned.contains("colour") && pruned.contains("cronSpec"),
        "{pruned}"
    );
}
