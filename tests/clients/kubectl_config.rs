//! kubectl 1.32, unmodified, with ConfigMaps and Secrets: `create configmap` and `create secret
//! generic` from literals, files and env files (protobuf bodies), `get` with the server's
//! Tables, a docs manifest with `stringData` applied, and an immutable ConfigMap refusing an edit.

use minik_api::core::{ConfigMap, Secret};
use minik_client::Api;

use crate::support::{cells, cluster, kubectl_binary, line_of, stop_clean, Kubectl};

#[tokio::test]
async fn kubectl_creates_configmaps_and_secrets_from_literals_files_and_env_files() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);
    let file = kubectl.manifest("game.properties", "lives=3\nsecret.code=uuddlrlr\n");
    let env_file = kubectl.manifest("app.env", "# settings\nMODE=fast\nLEVEL=debug\n");
    let (file, env_file) = (
        file.to_string_lossy().into_owned(),
        env_file.to_string_lossy().into_owned(),
    );

    kubectl
        .ok(&[
            "create",
            "configmap",
            "game",
            "--from-literal=player=one",
            &format!("--from-file={file}"),
        ])
        .await;
    kubectl
        .ok(&[
            "create",
            "configmap",
            "app",
            &format!("--from-env-file={env_file}"),
        ])
        .await;
    kubectl
        .ok(&[
            "create",
            "secret",
            "generic",
            "db",
            "--from-literal=password=s3cr3t",
            &format!("--from-file=props={file}"),
        ])
        .await;

    let config_maps: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let game = config_maps.get("game").await.expect("game");
    let data = game.data.unwrap_or_default();
    assert_eq!(data["player"], "one");
    assert_eq!(data["game.properties"], "lives=3\nsecret.code=uuddlrlr\n");
    let app = config_maps
        .get("app")
        .await
        .expect("app")
        .data
        .unwrap_or_default();
    assert_eq!(
        (app["MODE"].as_str(), app["LEVEL"].as_str()),
        ("fast", "debug")
    );
    let secrets: Api<Secret> = Api::namespaced(cluster.client(), "default");
    let db = secrets.get("db").await.expect("db");
    assert_eq!(db.type_.as_deref(), Some("Opaque"));
    assert_eq!(db.data.unwrap_or_default()["password"].0, b"s3cr3t");

    let table = kubectl.ok(&["get", "configmaps"]).await;
    assert_eq!(
        cells(table.lines().next().unwrap()),
        ["NAME", "DATA", "AGE"],
        "{table}"
    );
    assert_eq!(cells(line_of(&table, "game").unwrap())[..2], ["game", "2"]);
    let table = kubectl.ok(&["get", "secrets"]).await;
    assert_eq!(
        cells(line_of(&table, "db").unwrap())[..3],
        ["db", "Opaque", "2"],
        "{table}"
    );

    // The docs' Secret with stringData, then an immutable ConfigMap that refuses an edit (422).
    let manifest = kubectl.manifest(
        "secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: basic}\ntype: kubernetes.io/basic-auth\n\
         stringData: {username: admin, password: t0p-Secret}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {name: frozen}\nimmutable: true\ndata: {mode: fast}\n",
    );
    kubectl
        .ok(&["apply", "-f", &manifest.to_string_lossy()])
        .await;
    let basic = secrets.get("basic").await.expect("basic");
    assert_eq!(basic.data.unwrap_or_default()["username"].0, b"admin");
    let refused = kubectl
        .run(&[
            "patch",
            "configmap",
            "frozen",
            "-p",
            "{\"data\":{\"mode\":\"slow\"}}",
        ])
        .await;
    assert_ne!(refused.code, 0);
    assert!(
        refused
            .stderr
            .contains("field is immutable when `immutable` is set"),
        "{refused:#?}"
    );
    stop_clean(cluster).await;
}
