//! kube-rs 5, unmodified, against the TLS apiserver with nothing but a written kubeconfig: the
//! admin creates and lists; a node's refusal arrives as kube's `Error::Api` with code 403.

mod secure;

use kube::api::{DeleteParams, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Api, Client, Config};
use minik_api::core::Pod;
use minik_cluster::pki::Identity;
use secure::SecureServer;
use serde_json::json;

async fn kube_client(server: &SecureServer, identity: &Identity) -> Client {
    let path = server.dir.path().join(format!("{}.kube-rs", identity.name));
    server
        .pki
        .write_kubeconfig(identity, &server.url, &path)
        .unwrap();
    let kubeconfig = Kubeconfig::read_from(&path).expect("read kubeconfig");
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kube config");
    Client::try_from(config).expect("kube client")
}

#[tokio::test]
async fn kube_rs_connects_with_only_the_written_kubeconfig() {
    let server = SecureServer::start().await;
    let admin: Api<Pod> =
        Api::namespaced(kube_client(&server, &Identity::admin()).await, "default");
    let pod: Pod = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "theirs"},
        "spec": {"nodeName": "node-2", "containers": [{"name": "c", "image": "busybox"}]},
    }))
    .unwrap();
    admin
        .create(&PostParams::default(), &pod)
        .await
        .expect("create");
    let listed = admin.list(&ListParams::default()).await.expect("list");
    assert_eq!(listed.items.len(), 1);

    let node: Api<Pod> = Api::namespaced(
        kube_client(&server, &Identity::node("node-1")).await,
        "default",
    );
    match node.delete("theirs", &DeleteParams::default()).await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 403, "{status:?}");
            assert_eq!(status.reason, "Forbidden");
        }
        other => panic!("node-1 deleted node-2's pod: {other:?}"),
    }
}
