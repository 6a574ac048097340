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
