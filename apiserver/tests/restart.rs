//! Durability across a restart: acknowledged objects survive and revisions keep growing.

mod common;

use common::{pod, rv, Options, TestServer, PODS};

#[tokio::test]
async fn restart_keeps_every_object_and_revisions_keep_growing() {
    let server = TestServer::start().await;
    let mut last = 0;
    for i in 0..20 {
        let (code, created) = server.post(PODS, &pod(&format!("p{i}"))).await;
        assert_eq!(code, 201);
        last = rv(&created);
    }
    let dir = server.stop().await;

    let server = TestServer::start_in(dir, Options::default()).await;
    let (_, list) = server.get(PODS).await;
    assert_eq!(list["items"].as_array().unwrap().len(), 20);
    let list_rv: u64 = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(list_rv >= last);
    let (code, created) = server.post(PODS, &pod("after")).await;
    assert_eq!(code, 201);
    assert!(
        rv(&created) > last,
        "revision {} after restart must exceed {last}",
        rv(&created)
    );
    // The initial namespaces are not duplicated or reset.
    let (_, namespaces) = server.get("/api/v1/namespaces").await;
    assert_eq!(namespaces["items"].as_array().unwrap().len(), 4);
    server.stop().await;
}
