//! The CLI against a TLS apiserver: `--kubeconfig` alone carries the server, the CA and the
//! client certificate; RBAC refusals print as kubectl prints them.

use std::time::Duration;

use minik_apiserver::tls::TlsFiles;
use minik_cluster::pki::{Identity, Pki};
use tokio_util::sync::CancellationToken;

use crate::{minik_command, Run};

async fn run(args: &[&str]) -> Run {
    let output = minik_command(args).output();
    let output = tokio::time::timeout(Duration::from_secs(30), output)
        .await
        .expect("minik finished in time")
        .expect("minik output");
    Run::from(output)
}

#[tokio::test]
async fn get_over_tls_with_only_a_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let pki = Pki::ensure(dir.path(), &[]).unwrap();
    let (cert_file, key_file) = pki.files("apiserver");
    let options = minik_apiserver::ServeOptions {
        tls: Some(TlsFiles {
            cert_file,
            key_file,
            client_ca_file: Some(pki.ca_file()),
        }),
        ..Default::default()
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    let backend = minik_apiserver::StorageBackend::memory(1000);
    tokio::spawn(minik_apiserver::serve_with(
        listener,
        backend,
        options,
        shutdown.clone(),
    ));
    let admin = dir.path().join("admin.kubeconfig");
    pki.write_kubeconfig(&Identity::admin(), &url, &admin)
        .unwrap();
    let proxy = dir.path().join("proxy.kubeconfig");
    pki.write_kubeconfig(&Identity::kube_proxy(), &url, &proxy)
        .unwrap();

    let listed = run(&["get", "namespaces", "--kubeconfig", admin.to_str().unwrap()]).await;
    assert!(listed.ok().contains("kube-system"), "{listed:?}");
    // --server overrides the address but keeps the context's credentials.
    let both = run(&[
        "get",
        "ns",
        "--server",
        &url,
        "--kubeconfig",
        admin.to_str().unwrap(),
    ])
    .await;
    assert!(both.ok().contains("default"), "{both:?}");
    let refused = run(&["get", "pods", "--kubeconfig", proxy.to_str().unwrap()]).await;
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("Error from server (Forbidden): pods is forbidden: User \"system:kube-proxy\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""),
        "{refused:?}"
    );
    shutdown.cancel();
}

/// `minik up --secure` as real processes: every component binary takes `--kubeconfig`, a pod
/// gets scheduled and Running under RBAC and the Node authorizer, and the CLI reaches it with the
/// written admin kubeconfig.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secure_cluster_of_processes_runs_a_pod() {
    use minik_api::core::Pod;
    use minik_cluster::{Cluster, ClusterConfig, Mode};

    let dir = tempfile::tempdir().unwrap();
    let config = ClusterConfig {
        binary: env!("CARGO_BIN_EXE_minik").into(),
        data_dir: dir.path().join("data"),
        listen: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        nodes: 1,
        progress: false,
        mode: Mode::Processes,
        drain_grace: Some(1),
        reap_leftovers: false,
        secure: true,
        ..ClusterConfig::default()
    };
    let cluster = tokio::time::timeout(Duration::from_secs(60), Cluster::start(config))
        .await
        .expect("started in time")
        .expect("started");
    let kubeconfig = cluster.kubeconfig().unwrap();
    let (_manifest_dir, manifest) = crate::manifest(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: sleeper\nspec:\n  terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: busybox\n    command: [\"sleep\", \"3600\"]\n",
    );
    let applied = run(&[
        "apply",
        "-f",
        &manifest,
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
    ])
    .await;
    assert!(applied.ok().contains("pod/sleeper"), "{applied:?}");
    let pods = minik_client::Api::<Pod>::namespaced(cluster.client().unwrap(), "default");
    let running = tokio::time::timeout(
        Duration::from_secs(60),
        minik_client::wait::await_condition(&pods, "sleeper", |p| {
            p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        }),
    )
    .await;
    assert!(matches!(running, Ok(Some(_))), "the pod never ran");
    let listed = run(&["get", "pods", "--kubeconfig", kubeconfig.to_str().unwrap()]).await;
    assert!(listed.ok().contains("Running"), "{listed:?}");
    cluster.stop().await;
}
