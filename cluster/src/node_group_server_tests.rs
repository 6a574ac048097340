//! Tests of the node-group API (`node_group_server.rs`) against a fake group: the autoscaler's
//! certificate is served, the size bounds hold, any other certificate gets 403 and no
//! certificate fails the handshake.

use std::sync::Mutex;

use futures::future::BoxFuture;
use minik_client::{Client, ClientConfig};
use minik_cluster_autoscaler::cloud::RemoteNodeGroup;

use super::*;

/// A group whose members are names in memory.
#[derive(Default)]
struct FakeGroup(Mutex<Vec<String>>);

impl NodeGroup for FakeGroup {
    fn nodes(&self) -> BoxFuture<'_, std::result::Result<Vec<String>, String>> {
        let nodes = self.0.lock().expect("lock").clone();
        Box::pin(async move { Ok(nodes) })
    }

    fn increase_size(
        &self,
        delta: usize,
    ) -> BoxFuture<'_, std::result::Result<Vec<String>, String>> {
        let mut nodes = self.0.lock().expect("lock");
        let added: Vec<String> = (0..delta)
            .map(|i| format!("node-{}", 101 + nodes.len() + i))
            .collect();
        nodes.extend(added.iter().cloned());
        Box::pin(async move { Ok(added) })
    }

    fn delete_node<'a>(&'a self, name: &'a str) -> BoxFuture<'a, std::result::Result<(), String>> {
        self.0.lock().expect("lock").retain(|n| n != name);
        Box::pin(async move { Ok(()) })
    }
}

#[test]
fn increases_stay_positive_and_under_the_maximum() {
    assert_eq!(decide_increase(0, 2, 3), Ok(2));
    assert_eq!(decide_increase(1, 2, 3), Ok(2));
    assert!(decide_increase(2, 2, 3)
        .unwrap_err()
        .contains("desired 4 max 3"));
    assert!(decide_increase(0, 0, 3).is_err());
    assert!(decide_increase(0, -1, 3).is_err());
}

#[tokio::test]
async fn only_the_autoscalers_certificate_may_resize_the_group() {
    let dir = tempfile::tempdir().expect("temp dir");
    let fake = Arc::new(FakeGroup::default());
    let server = start(dir.path(), fake.clone(), 3).await.expect("server");
    let config = cloud_config(dir.path());
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&config).expect("file").permissions(),
    );
    assert_eq!(mode & 0o777, 0o600, "the credentials are private");

    let group = RemoteNodeGroup::from_kubeconfig(&config).expect("client");
    let groups = group.node_groups().await.expect("NodeGroups");
    assert_eq!(groups[0].max_size, 3);
    assert_eq!(
        group.increase_size(2).await.expect("+2"),
        ["node-101", "node-102"]
    );
    let refused = group.increase_size(2).await.expect_err("past the maximum");
    assert!(refused.contains("max 3"), "{refused}");
    group.delete_node("node-101").await.expect("delete");
    assert_eq!(group.nodes().await.expect("nodes"), ["node-102"]);

    // The admin's certificate chains to the CA but is not the autoscaler's: 403.
    let pki = Pki {
        dir: dir.path().join("pki"),
    };
    let admin = dir.path().join("admin-node-group.kubeconfig");
    pki.write_kubeconfig(&Identity::admin(), &server.url, &admin)
        .expect("kubeconfig");
    let answer = Client::from_kubeconfig(&admin)
        .expect("admin client")
        .raw_request(minik_client::Method::POST, "/NodeGroupNodes")
        .json(&json!({"id": GROUP_ID}))
        .send()
        .await
        .expect("an answer");
    assert_eq!(answer.status(), StatusCode::FORBIDDEN);

    // No client certificate: the handshake fails.
    let ca = std::fs::read(pki.ca_file()).expect("ca");
    let anonymous = Client::from_config(&ClientConfig {
        server: server.url.clone(),
        ca_pem: Some(ca),
        ..ClientConfig::default()
    })
    .expect("anonymous client");
    let failed = anonymous
        .raw_request(minik_client::Method::POST, "/NodeGroupNodes")
        .json(&json!({"id": GROUP_ID}))
        .send()
        .await;
    assert!(failed.is_err(), "no certificate, no connection: {failed:?}");
    assert_eq!(fake.0.lock().expect("lock").len(), 1);
}
