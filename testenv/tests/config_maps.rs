//! `TestEnv` as a controller developer uses it: kube's `Api<ConfigMap>` against a fresh minik,
//! a watch that sees a create, an update and a delete, two environments side by side, and nothing
//! left behind once stopped.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use minik_testenv::TestEnv;
use serde_json::json;

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"mode": "fast"}}))
        .expect("config map")
}

/// The next watch event, or a failed test after 10 s.
async fn next<S>(stream: &mut S) -> WatchEvent<ConfigMap>
where
    S: futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin,
{
    tokio::time::timeout(Duration::from_secs(10), stream.try_next())
        .await
        .expect("a watch event within 10 s")
        .expect("watch")
        .expect("the watch goes on")
}

#[tokio::test]
async fn config_maps_are_created_watched_and_deleted_through_kube() {
    let env = TestEnv::start().await.expect("start minik");
    let dir = env.kubeconfig.parent().expect("data dir").to_path_buf();
    let api: Api<ConfigMap> = Api::namespaced(env.client.clone(), "default");
    let created = api
        .create(&PostParams::default(), &config_map("settings"))
        .await
        .expect("create");
    let from = created.metadata.resource_version.clone().expect("rv");

    let mut watch = api
        .watch(
            &WatchParams::default().fields("metadata.name=settings"),
            &from,
        )
        .await
        .expect("watch")
        .boxed();
    let patch = json!({"data": {"mode": "slow"}});
    api.patch("settings", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("patch");
    match next(&mut watch).await {
        WatchEvent::Modified(cm) => {
            assert_eq!(cm.data.expect("data")["mode"], "slow");
        }
        other => panic!("expected MODIFIED, got {other:?}"),
    }
    api.delete("settings", &DeleteParams::default())
        .await
        .expect("delete");
    assert!(matches!(next(&mut watch).await, WatchEvent::Deleted(_)));
    match api.get("settings").await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 404),
        other => panic!("expected 404, got {other:?}"),
    }

    eprintln!("test environment started in {:?}", env.startup);
    env.stop().await;
    assert!(!dir.exists(), "the temp dir {} is removed", dir.display());
}

#[tokio::test]
async fn two_environments_are_independent() {
    let (a, b) = tokio::join!(TestEnv::start(), TestEnv::start());
    let (a, b) = (a.expect("start a"), b.expect("start b"));
    assert_ne!(a.server_url, b.server_url);
    let in_a: Api<ConfigMap> = Api::namespaced(a.client.clone(), "default");
    let in_b: Api<ConfigMap> = Api::namespaced(b.client.clone(), "default");
    in_a.create(&PostParams::default(), &config_map("only-in-a"))
        .await
        .expect("create in a");
    assert!(in_b.get_opt("only-in-a").await.expect("get in b").is_none());
    a.stop().await;
    // b outlives a, then is dropped without stop(): killed at once, its dir still removed.
    let dir = b.kubeconfig.parent().expect("data dir").to_path_buf();
    assert!(in_b.get_opt("x").await.expect("b still serves").is_none());
    drop(b);
    assert!(!dir.exists());
}
