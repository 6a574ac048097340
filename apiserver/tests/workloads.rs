//! apps/v1 Deployments and ReplicaSets over HTTP: discovery, CRUD with defaults and
//! generation, every patch type, the scale and status subresources, Tables, and the 422s.

mod common;

use common::{rv, TestServer};
use serde_json::{json, Value};

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const REPLICASETS: &str = "/apis/apps/v1/namespaces/default/replicasets";
const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

fn deployment(name: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [
                    {"name": "web", "image": "nginx:1"},
                    {"name": "log", "image": "busybox"}
                ]}
            }
        }
    })
}

fn replica_set(name: &str) -> Value {
    let mut object = deployment(name);
    object["kind"] = json!("ReplicaSet");
    object
}

/// A change that makes a valid workload invalid.
type Mutation = fn(&mut Value);

fn generation(object: &Value) -> i64 {
    object["metadata"]["generation"]
        .as_i64()
        .expect("generation")
}

/// The field paths of a 422's causes.
fn cause_fields(status: &Value) -> Vec<String> {
    status["details"]["causes"]
        .as_array()
        .map(|causes| {
            causes
                .iter()
                .filter_map(|c| c["field"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Discovery lists both kinds under apps/v1 with kubectl's short names and the scale
/// subresource in autoscaling/v1, so `kubectl get deploy,rs` and `kubectl scale` resolve them.
#[tokio::test]
async fn apps_v1_is_discovered_with_short_names_and_scale() {
    let server = TestServer::start().await;
    let (code, groups) = server.get("/apis").await;
    assert_eq!(code, 200);
    assert!(groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["name"] == "apps" && g["preferredVersion"]["groupVersion"] == "apps/v1"));
    let (code, list) = server.get("/apis/apps/v1").await;
    assert_eq!(code, 200);
    let entry = |name: &str| {
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} in {list}"))
    };
    assert_eq!(entry("deployments")["shortNames"], json!(["deploy"]));
    assert_eq!(entry("replicasets")["shortNames"], json!(["rs"]));
    assert_eq!(entry("deployments")["categories"], json!(["all"]));
    let scale = entry("deployments/scale");
    assert_eq!(
        (&scale["group"], &scale["version"], &scale["kind"]),
        (&json!("autoscaling"), &json!("v1"), &json!("Scale"))
    );
    entry("replicasets/scale");
    entry("deployments/status");
    let (code, _) = server.get("/openapi/v3/apis/apps/v1").await;
    assert_eq!(code, 200);
}

/// Create fills upstream's defaults and generation 1; spec changes bump the generation, label
/// changes and status writes do not; `set image`'s strategic merge patch merges containers by
/// name; JSON patch, server-side apply, delete and deletecollection work as for any kind.
#[tokio::test]
async fn deployment_crud_defaults_and_generation() {
    let server = TestServer::start().await;
    let (code, created) = server.post(DEPLOYMENTS, &deployment("web")).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(generation(&created), 1);
    assert_eq!(created["status"], json!({}));
    let spec = &created["spec"];
    assert_eq!(spec["strategy"]["rollingUpdate"]["maxSurge"], "25%");
    assert_eq!(spec["strategy"]["rollingUpdate"]["maxUnavailable"], "25%");
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(spec["progressDeadlineSeconds"], 600);
    assert_eq!(spec["template"]["spec"]["restartPolicy"], "Always");
    assert_eq!(
        spec["template"]["spec"]["terminationGracePeriodSeconds"],
        30
    );

    let web = format!("{DEPLOYMENTS}/web");
    let (code, labelled) = server
        .patch(
            &web,
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"tier": "front"}}}),
        )
        .await;
    assert_eq!((code, generation(&labelled)), (200, 1), "{labelled}");

    let set_image = json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}}}});
    let (code, patched) = server
        .patch(&web, "application/strategic-merge-patch+json", &set_image)
        .await;
    assert_eq!(code, 200, "{patched}");
    assert_eq!(generation(&patched), 2);
    let containers = &patched["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers[0]["image"], "nginx:2");
    assert_eq!(containers[1]["name"], "log", "other containers are kept");

    let mut status = patched.clone();
    status["status"] = json!({"observedGeneration": 2, "replicas": 3});
    let (code, with_status) = server.put(&format!("{web}/status"), &status).await;
    assert_eq!(code, 200, "{with_status}");
    assert_eq!(generation(&with_status), 2);
    assert_eq!(with_status["status"]["observedGeneration"], 2);

    let undo = json!([{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": "nginx:1"}]);
    let (code, undone) = server
        .patch(&web, "application/json-patch+json", &undo)
        .await;
    assert_eq!((code, generation(&undone)), (200, 3), "{undone}");
    assert_eq!(
        undone["status"]["replicas"], 3,
        "a main write keeps the status"
    );

    let mut applied = deployment("web");
    applied["spec"]["replicas"] = json!(4);
    let (code, applied) = server
        .patch(
            &format!("{web}?fieldManager=test"),
            "application/apply-patch+yaml",
            &applied,
        )
        .await;
    assert_eq!(code, 200, "{applied}");
    assert_eq!(
        (applied["spec"]["replicas"].as_i64(), generation(&applied)),
        (Some(4), 4)
    );

    server.post(DEPLOYMENTS, &deployment("api")).await;
    let (code, list) = server.get(DEPLOYMENTS).await;
    assert_eq!((code, list["kind"].as_str()), (200, Some("DeploymentList")));
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
    let (code, _) = server.delete(&web, None).await;
    assert_eq!(code, 200);
    assert_eq!(server.get(&web).await.0, 404);
    let (code, _) = server
        .delete(&format!("{DEPLOYMENTS}?labelSelector=app%3Dapi"), None)
        .await;
    assert_eq!(code, 200);
    assert_eq!(server.get(DEPLOYMENTS).await.1["items"], json!([]));
}

/// The scale subresource: GET shows the selector string, a merge PATCH (what `kubectl scale`
/// sends) and a PUT change `spec.replicas` and the generation; a stale resourceVersion is a 409
/// and a negative count a 422 on `spec.replicas`.
#[tokio::test]
async fn scale_subresource_reads_and_writes_replicas() {
    let server = TestServer::start().await;
    server.post(DEPLOYMENTS, &deployment("web")).await;
    let scale_path = format!("{DEPLOYMENTS}/web/scale");
    let (code, scale) = server.get(&scale_path).await;
    assert_eq!(code, 200, "{scale}");
    assert_eq!(
        (&scale["kind"], &scale["apiVersion"]),
        (&json!("Scale"), &json!("autoscaling/v1"))
    );
    assert_eq!(scale["spec"]["replicas"], 3);
    assert_eq!(scale["status"]["selector"], "app=web");

    let (code, scaled) = server
        .patch(
            &scale_path,
            "application/merge-patch+json",
            &json!({"spec": {"replicas": 5}}),
        )
        .await;
    assert_eq!(
        (code, &scaled["spec"]["replicas"]),
        (200, &json!(5)),
        "{scaled}"
    );
    let (_, object) = server.get(&format!("{DEPLOYMENTS}/web")).await;
    assert_eq!(
        (object["spec"]["replicas"].as_i64(), generation(&object)),
        (Some(5), 2)
    );

    let mut stale = scale.clone();
    stale["spec"]["replicas"] = json!(7);
    let (code, _) = server.put(&scale_path, &stale).await;
    assert_eq!(code, 409, "the first GET's resourceVersion is stale");
    stale["metadata"]["resourceVersion"] = json!(rv(&object).to_string());
    let (code, put) = server.put(&scale_path, &stale).await;
    assert_eq!((code, &put["spec"]["replicas"]), (200, &json!(7)), "{put}");

    let (code, invalid) = server
        .patch(
            &scale_path,
            "application/merge-patch+json",
            &json!({"spec": {"replicas": -1}}),
        )
        .await;
    assert_eq!(code, 422, "{invalid}");
    assert_eq!(cause_fields(&invalid), ["spec.replicas"]);

    server.post(REPLICASETS, &replica_set("web-1")).await;
    let (code, rs_scale) = server
        .patch(
            &format!("{REPLICASETS}/web-1/scale"),
            "application/merge-patch+json",
            &json!({"spec": {"replicas": 0}}),
        )
        .await;
    assert_eq!(
        (code, &rs_scale["spec"]["replicas"]),
        (200, &json!(0)),
        "{rs_scale}"
    );
    assert_eq!(
        server.get(&format!("{DEPLOYMENTS}/missing/scale")).await.0,
        404
    );
}

/// Each invalid workload is a 422 whose cause names the field, as upstream's validation does.
#[tokio::test]
async fn invalid_workloads_are_422_with_field_paths() {
    let server = TestServer::start().await;
    let cases: Vec<(&str, Mutation, &str)> = vec![
        (
            "empty selector",
            |d| d["spec"]["selector"] = json!({}),
            "spec.selector",
        ),
        (
            "selector not matching the template",
            |d| d["spec"]["selector"] = json!({"matchLabels": {"app": "other"}}),
            "spec.template.metadata.labels",
        ),
        (
            "negative replicas",
            |d| d["spec"]["replicas"] = json!(-1),
            "spec.replicas",
        ),
        (
            "maxSurge and maxUnavailable both 0",
            |d| {
                d["spec"]["strategy"] = json!({"type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}})
            },
            "spec.strategy.rollingUpdate.maxUnavailable",
        ),
        (
            "restartPolicy Never",
            |d| d["spec"]["template"]["spec"]["restartPolicy"] = json!("Never"),
            "spec.template.spec.restartPolicy",
        ),
    ];
    for (what, change, field) in cases {
        for path in [DEPLOYMENTS, REPLICASETS] {
            let mut object = if path == DEPLOYMENTS {
                deployment("bad")
            } else {
                replica_set("bad")
            };
            change(&mut object);
            if path == REPLICASETS && field.starts_with("spec.strategy") {
                continue;
            }
            let (code, status) = server.post(path, &object).await;
            assert_eq!(code, 422, "{what} on {path}: {status}");
            assert_eq!(status["reason"], "Invalid");
            assert_eq!(cause_fields(&status), [field], "{what} on {path}");
        }
    }
    server.post(DEPLOYMENTS, &deployment("web")).await;
    let mut moved = deployment("web");
    moved["spec"]["selector"] = json!({"matchLabels": {"app": "web", "v": "2"}});
    moved["spec"]["template"]["metadata"]["labels"] = json!({"app": "web", "v": "2"});
    let (code, status) = server.put(&format!("{DEPLOYMENTS}/web"), &moved).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        cause_fields(&status),
        ["spec.selector"],
        "immutable in apps/v1"
    );
}

/// `kubectl get deploy,rs` asks for Tables: upstream's columns, the wide ones at priority 1.
#[tokio::test]
async fn tables_have_kubectls_columns() {
    let server = TestServer::start().await;
    server.post(DEPLOYMENTS, &deployment("web")).await;
    server.post(REPLICASETS, &replica_set("web-1")).await;
    for (path, columns, row, selector) in [
        (
            DEPLOYMENTS,
            [
                "Name",
                "Ready",
                "Up-to-date",
                "Available",
                "Age",
                "Containers",
                "Images",
                "Selector",
            ],
            json!(["web", "0/3", "0", "0"]),
            "app=web",
        ),
        (
            REPLICASETS,
            [
                "Name",
                "Desired",
                "Current",
                "Ready",
                "Age",
                "Containers",
                "Images",
                "Selector",
            ],
            json!(["web-1", "3", "0", "0"]),
            "app=web-1",
        ),
    ] {
        let request = server
            .http
            .get(server.url(path))
            .header("accept", TABLE_ACCEPT);
        let (code, table) = server.send(request).await;
        assert_eq!(
            (code, table["kind"].as_str()),
            (200, Some("Table")),
            "{table}"
        );
        let names: Vec<&str> = table["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, columns);
        let cells = &table["rows"][0]["cells"];
        assert_eq!(cells.as_array().unwrap()[..4], row.as_array().unwrap()[..]);
        assert_eq!(cells[5], "web,log");
        assert_eq!(cells[6], "nginx:1,busybox");
        assert_eq!(cells[7], selector);
    }
}

/// A Deployment's annotations are copied to its ReplicaSets, so upstream counts them as desired
/// state: changing them bumps the generation. A ReplicaSet's annotations and any labels do not.
#[tokio::test]
async fn deployment_annotations_bump_the_generation_replica_set_ones_do_not() {
    let server = TestServer::start().await;
    server.post(DEPLOYMENTS, &deployment("web")).await;
    server.post(REPLICASETS, &replica_set("web-1")).await;
    let annotate = json!({"metadata": {"annotations": {"deployment.kubernetes.io/revision": "1"}}});
    let (code, web) = server
        .patch(
            &format!("{DEPLOYMENTS}/web"),
            "application/merge-patch+json",
            &annotate,
        )
        .await;
    assert_eq!((code, generation(&web)), (200, 2), "{web}");
    let (code, rs) = server
        .patch(
            &format!("{REPLICASETS}/web-1"),
            "application/merge-patch+json",
            &annotate,
        )
        .await;
    assert_eq!((code, generation(&rs)), (200, 1), "{rs}");
}
