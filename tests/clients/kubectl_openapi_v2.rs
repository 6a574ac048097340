//! kubectl 1.27, unmodified, on the protobuf `/openapi/v2`: its `explain` and its client-side
//! validation of `apply` read only client-go's `OpenAPISchema()`, which asks for gnostic's
//! protobuf `Document` and nothing else (a 406 made 1.27's `apply` fail: docs/real-clients.md).
//!
//! Kubernetes counterpart: `staging/src/k8s.io/kubectl/pkg/explain` (v2) and
//! `staging/src/k8s.io/kubectl/pkg/validation` over `k8s.io/kube-openapi/pkg/util/proto`.

use crate::support::{pod_yaml, stop_clean, Kubectl};

/// kubectl 1.27 beside the dispatcher (the Google Cloud SDK packages), or `None` with a notice.
fn kubectl_1_27() -> Option<std::path::PathBuf> {
    let path = std::path::PathBuf::from("/usr/lib/google-cloud-sdk/bin/kubectl.1.27");
    if path.exists() {
        return Some(path);
    }
    eprintln!("SKIPPED: kubectl 1.27 not found at {}", path.display());
    None
}

#[tokio::test]
async fn kubectl_1_27_explains_and_validates_from_the_protobuf_openapi_v2() {
    let Some(binary) = kubectl_1_27() else {
        return;
    };
    let cluster = crate::support::control_plane().await;
    let kubectl = Kubectl::new(binary, &cluster);
    // 1.27 explains from v3 unless told otherwise: `--output=plaintext-openapiv2` picks v2.
    let explain = kubectl
        .command(&[
            "explain",
            "pod.spec.containers",
            "--output=plaintext-openapiv2",
            "-v=6",
        ])
        .output();
    let explain = tokio::time::timeout(std::time::Duration::from_secs(60), explain)
        .await
        .expect("kubectl explain in time")
        .expect("run kubectl");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&explain.stdout),
        String::from_utf8_lossy(&explain.stderr),
    );
    assert!(explain.status.success(), "{stdout}\n{stderr}");
    let v2 = stderr.lines().find(|l| l.contains("/openapi/v2"));
    assert!(v2.is_some_and(|l| l.contains("200 OK")), "{stderr}");
    for expected in [
        "KIND:     Pod",
        "List of containers belonging to the pod.",
        "image\t<string>",
    ] {
        assert!(
            stdout.contains(expected),
            "{expected:?} in:\n{stdout}\n{stderr}"
        );
    }

    // apply validates on the client with the same document, then creates.
    let pod = kubectl.manifest("pod.yaml", &pod_yaml("web", "app: web", ""));
    let created = kubectl.ok(&["apply", "-f", pod.to_str().unwrap()]).await;
    assert_eq!(created.trim(), "pod/web created");
    let typo = pod_yaml("typo", "app: web", "").replace("image: nginx", "imagee: nginx");
    let typo = kubectl.manifest("typo.yaml", &typo);
    let refused = kubectl.run(&["apply", "-f", typo.to_str().unwrap()]).await;
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert!(refused.stderr.contains("imagee"), "{refused:#?}");
    stop_clean(cluster).await;
}
