//! Watch streams over HTTP: start points, ordering under concurrent writers, 410, selectors,
//! bookmarks, streaming lists, timeouts and shutdown.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use common::{pod, rv, Options, TestServer, PODS};
use serde_json::json;

#[tokio::test]
async fn watch_from_a_revision_misses_nothing_across_1000_writes_by_8_writers() {
    let server = Arc::new(TestServer::start().await);
    let (_, list) = server.get(PODS).await;
    let start = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    let mut watch = server
        .watch(&format!("{PODS}?watch=true&resourceVersion={start}"))
        .await;
    // The watcher reads while the writers write, as a real client does.
    let reader = tokio::spawn(async move {
        let mut seen = Vec::new();
        let mut last_label: BTreeMap<String, u64> = BTreeMap::new();
        while seen.len() < 1000 {
            let event = watch.next().await.expect("stream open");
            let object = &event["object"];
            let revision = rv(object);
            assert!(
                seen.last().is_none_or(|last| *last < revision),
                "events arrive in revision order"
            );
            seen.push(revision);
            let name = object["metadata"]["name"].as_str().unwrap().to_string();
            let label = object["metadata"]["labels"]["i"]
                .as_str()
                .map(|i| i.parse().unwrap())
                .unwrap_or(0);
            let expected_type = if label == 0 { "ADDED" } else { "MODIFIED" };
            assert_eq!(event["type"], expected_type);
            let previous = last_label.insert(name, label);
            assert!(
                previous.is_none_or(|previous| previous + 1 == label),
                "no write skipped per object"
            );
        }
        seen
    });

    let writers: Vec<_> = (0..8)
        .map(|w| {
            let server = server.clone();
            tokio::spawn(async move {
                let mut revisions = Vec::new();
                let name = format!("writer-{w}");
                let (code, created) = server.post(PODS, &pod(&name)).await;
                assert_eq!(code, 201);
                revisions.push(rv(&created));
                for i in 1..125 {
                    let patch = json!({"metadata": {"labels": {"i": i.to_string()}}});
                    let path = format!("{PODS}/{name}");
                    let (code, patched) = server
                        .patch(&path, "application/merge-patch+json", &patch)
                        .await;
                    assert_eq!(code, 200, "{patched}");
                    revisions.push(rv(&patched));
                }
                revisions
            })
        })
        .collect();
    let mut acknowledged = Vec::new();
    for writer in writers {
        acknowledged.extend(writer.await.expect("writer"));
    }
    acknowledged.sort();
    assert_eq!(acknowledged.len(), 1000);
    let seen = reader.await.expect("reader");
    assert_eq!(
        seen, acknowledged,
        "every acknowledged write arrives exactly once"
    );
}

#[tokio::test]
async fn a_watch_older_than_the_window_gets_one_410_error_event_and_ends() {
    let server = TestServer::start_with(Options {
        event_window: 5,
        ..Options::default()
    })
    .await;
    let (_, first) = server.post(PODS, &pod("p0")).await;
    for i in 1..20 {
        server.post(PODS, &pod(&format!("p{i}"))).await;
    }
    let mut watch = server
        .watch(&format!("{PODS}?watch=1&resourceVersion={}", rv(&first)))
        .await;
    let event = watch.next().await.expect("an error event");
    assert_eq!(event["type"], "ERROR");
    assert_eq!(event["object"]["kind"], "Status");
    assert_eq!(event["object"]["code"], 410);
    assert_eq!(event["object"]["reason"], "Expired");
    assert!(event["object"]["message"]
        .as_str()
        .unwrap()
        .starts_with("too old resource version:"));
    assert!(
        watch.next().await.is_none(),
        "the stream ends after the error"
    );
    server.stop().await;
}

#[tokio::test]
async fn resource_version_zero_sends_current_objects_then_live_events() {
    let server = TestServer::start().await;
    server.post(PODS, &pod("old")).await;
    for query in ["watch=true&resourceVersion=0", "watch=true"] {
        let mut watch = server.watch(&format!("{PODS}?{query}")).await;
        let event = watch.next().await.unwrap();
        assert_eq!(
            (
                event["type"].as_str(),
                event["object"]["metadata"]["name"].as_str()
            ),
            (Some("ADDED"), Some("old"))
        );
        assert_eq!(
            (
                event["object"]["kind"].as_str(),
                event["object"]["apiVersion"].as_str()
            ),
            (Some("Pod"), Some("v1"))
        );
        let name = format!("new-{}", query.len());
        server.post(PODS, &pod(&name)).await;
        let event = watch.next().await.unwrap();
        assert_eq!(
            (
                event["type"].as_str(),
                event["object"]["metadata"]["name"].as_str()
            ),
            (Some("ADDED"), Some(name.as_str()))
        );
        server.delete(&format!("{PODS}/{name}"), None).await;
        // A pod is marked (deletionTimestamp, grace 0) before it goes, even when unscheduled.
        let event = watch.next().await.unwrap();
        assert_eq!(event["type"], "MODIFIED");
        assert!(event["object"]["metadata"]["deletionTimestamp"].is_string());
        let event = watch.next().await.unwrap();
        assert_eq!(event["type"], "DELETED");
    }
    server.stop().await;
}

#[tokio::test]
async fn an_object_that_stops_matching_the_selector_arrives_as_deleted() {
    let server = TestServer::start().await;
    let mut watch = server
        .watch(&format!("{PODS}?watch=true&labelSelector=app%3Dweb"))
        .await;
    let mut other = pod("db");
    other["metadata"]["labels"] = json!({"app": "db"});
    server.post(PODS, &other).await;
    server.post(PODS, &pod("web")).await;
    let event = watch.next().await.unwrap();
    assert_eq!(
        (
            event["type"].as_str(),
            event["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("web"))
    );
    let relabel = json!({"metadata": {"labels": {"app": "other"}}});
    let (_, patched) = server
        .patch(
            &format!("{PODS}/web"),
            "application/merge-patch+json",
            &relabel,
        )
        .await;
    let event = watch.next().await.unwrap();
    assert_eq!(event["type"], "DELETED");
    assert_eq!(rv(&event["object"]), rv(&patched));
    let back = json!({"metadata": {"labels": {"app": "web"}}});
    server
        .patch(
            &format!("{PODS}/web"),
            "application/merge-patch+json",
            &back,
        )
        .await;
    let event = watch.next().await.unwrap();
    assert_eq!(event["type"], "ADDED");
    server.stop().await;
}

#[tokio::test]
async fn kubectl_style_watch_of_one_pod_by_field_selector_and_by_name() {
    let server = TestServer::start().await;
    server.post(PODS, &pod("a")).await;
    server.post(PODS, &pod("b")).await;
    let mut by_field = server
        .watch(&format!(
            "{PODS}?fieldSelector=metadata.name%3Db&resourceVersion=0&watch=true"
        ))
        .await;
    let mut by_name = server.watch(&format!("{PODS}/b?watch=1")).await;
    for watch in [&mut by_field, &mut by_name] {
        let event = watch.next().await.unwrap();
        assert_eq!(
            (
                event["type"].as_str(),
                event["object"]["metadata"]["name"].as_str()
            ),
            (Some("ADDED"), Some("b"))
        );
    }
    server
        .patch(
            &format!("{PODS}/a"),
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"x": "1"}}}),
        )
        .await;
    server
        .patch(
            &format!("{PODS}/b"),
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"x": "1"}}}),
        )
        .await;
    for watch in [&mut by_field, &mut by_name] {
        let event = watch.next().await.unwrap();
        assert_eq!(
            (
                event["type"].as_str(),
                event["object"]["metadata"]["name"].as_str()
            ),
            (Some("MODIFIED"), Some("b"))
        );
    }
    server.stop().await;
}

#[tokio::test]
async fn send_initial_events_ends_the_initial_list_with_an_annotated_bookmark() {
    let server = TestServer::start().await;
    server.post(PODS, &pod("a")).await;
    let (_, b) = server.post(PODS, &pod("b")).await;
    let query = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=0&allowWatchBookmarks=true";
    let mut watch = server.watch(&format!("{PODS}?{query}")).await;
    assert_eq!(watch.next().await.unwrap()["type"], "ADDED");
    assert_eq!(watch.next().await.unwrap()["type"], "ADDED");
    let bookmark = watch.next().await.unwrap();
    assert_eq!(bookmark["type"], "BOOKMARK");
    assert_eq!(bookmark["object"]["kind"], "Pod");
    assert_eq!(
        bookmark["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert!(rv(&bookmark["object"]) >= rv(&b));
    server.stop().await;
}

#[tokio::test]
async fn bookmarks_arrive_periodically_with_the_latest_revision_seen() {
    let server = TestServer::start_with(Options {
        bookmark_interval: Duration::from_millis(100),
        ..Options::default()
    })
    .await;
    let mut watch = server
        .watch(&format!("{PODS}?watch=true&allowWatchBookmarks=true"))
        .await;
    let (_, created) = server.post(PODS, &pod("a")).await;
    assert_eq!(watch.next().await.unwrap()["type"], "ADDED");
    let bookmark = watch.next().await.unwrap();
    assert_eq!(bookmark["type"], "BOOKMARK");
    // The latest revision the store has seen: the pod's, or a later one if the apiserver's own
    // `kubernetes` Service reconciler wrote after it.
    assert!(rv(&bookmark["object"]) >= rv(&created));
    assert_eq!(
        bookmark["object"]["metadata"].as_object().unwrap().len(),
        1,
        "a bookmark carries only its revision"
    );
    // Without allowWatchBookmarks, none come.
    let mut quiet = server
        .watch(&format!(
            "{PODS}?watch=true&resourceVersion={}",
            rv(&created)
        ))
        .await;
    assert!(
        quiet.next_within(Duration::from_millis(400)).await.is_err(),
        "no event within 4 intervals"
    );
    server.stop().await;
}

#[tokio::test]
async fn timeout_seconds_ends_the_stream_cleanly() {
    let server = TestServer::start().await;
    let mut watch = server
        .watch(&format!("{PODS}?watch=true&timeoutSeconds=1"))
        .await;
    let started = std::time::Instant::now();
    assert!(watch.next().await.is_none());
    assert!(started.elapsed() >= Duration::from_millis(900));
    server.stop().await;
}

#[tokio::test]
async fn shutdown_ends_open_watches_and_the_server_returns() {
    let server = TestServer::start().await;
    let mut watch = server.watch(&format!("{PODS}?watch=true")).await;
    let stopped = tokio::spawn(server.stop());
    assert!(
        watch.next().await.is_none(),
        "the stream ends when the server stops"
    );
    stopped.await.expect("server stopped");
}

#[tokio::test]
async fn a_watch_from_a_revision_the_store_never_reached_fails_instead_of_hanging() {
    let server = TestServer::start().await;
    let mut watch = server
        .watch(&format!("{PODS}?watch=true&resourceVersion=999999"))
        .await;
    let event = watch.next().await.expect("an error event");
    assert_eq!(event["type"], "ERROR");
    assert_eq!(event["object"]["code"], 504);
    assert_eq!(
        event["object"]["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
    assert!(watch.next().await.is_none());
    server.stop().await;
}
