//! kubectl 1.32 with node ports (issue 17): `kubectl expose --type=NodePort` gives the Service a
//! node port, and curl to 127.0.0.1:nodePort reaches the pod through the proxy; deleting the
//! Service closes the port. And an Ingress created without a class gets the default one
//! (`DefaultIngressClass` admission), as `kubectl get ingress` then shows.

use std::time::Duration;

use minik_api::networking_v1::{Ingress, IngressClass};
use minik_client::Api;
use minik_tests::wait::eventually;
use minik_tests::Cluster;

use crate::support::{kubectl_binary, pod_yaml, running, stop_clean, Kubectl};

/// `curl -s http://127.0.0.1:PORT/`: the body, if curl succeeded.
async fn curl(port: u16) -> Option<String> {
    let output = tokio::process::Command::new("curl")
        .args(["-s", "--max-time", "2"])
        .arg(format!("http://127.0.0.1:{port}/"))
        .output()
        .await
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_string())
}

#[tokio::test]
async fn kubectl_expose_type_node_port_and_curl_reaches_the_pod() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = Cluster::builder().start().await.expect("start cluster");
    let kubectl = Kubectl::new(binary, &cluster);
    let manifest = kubectl.manifest("pod.yaml", &pod_yaml("web", "app: web", ""));
    kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    running(&cluster, "web").await;

    let exposed = kubectl
        .ok(&[
            "expose",
            "pod",
            "web",
            "--type=NodePort",
            "--port=80",
            "--target-port=8080",
            "--name=web-np",
        ])
        .await;
    assert!(exposed.contains("service/web-np exposed"), "{exposed}");
    let service = cluster.services().get("web-np").await.expect("the service");
    let ports = service.spec.and_then(|s| s.ports).unwrap_or_default();
    let node_port = ports[0].node_port.expect("a node port") as u16;
    assert!((30000..=32767).contains(&node_port), "{node_port}");
    let reached = eventually(
        "curl 127.0.0.1:nodePort → web",
        Duration::from_secs(30),
        || async { curl(node_port).await.filter(|body| body == "web") },
    )
    .await;
    assert!(reached.is_ok(), "{:?}", curl(node_port).await);

    kubectl.ok(&["delete", "service", "web-np"]).await;
    let closed = eventually("the node port closes", Duration::from_secs(30), || async {
        curl(node_port).await.is_none().then_some(())
    })
    .await;
    assert!(closed.is_ok(), "the node port still answers");
    stop_clean(cluster).await;
}

#[tokio::test]
async fn an_ingress_without_a_class_gets_the_default_class() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = Cluster::builder()
        .without_proxy()
        .ingress(&[])
        .start()
        .await
        .expect("start cluster");
    let kubectl = Kubectl::new(binary, &cluster);
    // The controller creates its class `minik`, marked default, as it starts.
    let classes: Api<IngressClass> = Api::all(cluster.client());
    eventually("the default class", Duration::from_secs(30), || async {
        classes.get_opt("minik").await.ok().flatten()
    })
    .await
    .expect("the controller's class");
    let created = kubectl
        .ok(&["create", "ingress", "shop", "--rule=shop.example/*=web:80"])
        .await;
    assert!(created.contains("created"), "{created}");
    let explicit = kubectl
        .ok(&[
            "create",
            "ingress",
            "other",
            "--class=elsewhere",
            "--rule=o.example/*=web:80",
        ])
        .await;
    assert!(explicit.contains("created"), "{explicit}");
    let ingresses: Api<Ingress> = Api::namespaced(cluster.client(), "default");
    let class = |name: &'static str| {
        let ingresses = ingresses.clone();
        async move {
            let ingress = ingresses.get(name).await.expect("the ingress");
            ingress.spec.and_then(|s| s.ingress_class_name)
        }
    };
    assert_eq!(class("shop").await.as_deref(), Some("minik"));
    assert_eq!(class("other").await.as_deref(), Some("elsewhere"));
    stop_clean(cluster).await;
}
