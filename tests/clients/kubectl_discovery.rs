//! kubectl 1.32 takes the aggregated discovery path: with an empty cache (`--cache-dir`), `kubectl
//! api-resources` and `kubectl get` of a custom kind ask only `/api` and `/apis` (each answering an
//! `apidiscovery.k8s.io/v2` `APIGroupDiscoveryList` with every resource), where the legacy path
//! also asks `/api/v1` and every `/apis/{group}/{version}`. The requests are counted from
//! kubectl's own `-v=6` log.
//!
//! Kubernetes counterpart: client-go's `discovery.DiscoveryClient.GroupsAndMaybeResources`
//! (`staging/src/k8s.io/client-go/discovery/discovery_client.go`), which skips the per-version
//! requests when `/api` and `/apis` answer in the aggregated form, and the e2e test
//! `test/e2e/apimachinery/aggregated_discovery.go`.

use std::collections::BTreeSet;

use crate::kubectl_crds::CRONTAB_CRD;
use crate::support::{cells, kubectl_binary, line_of, stop_clean, Kubectl};

/// The paths (no query) of the GETs kubectl's `-v=6` log reports.
fn requested_paths(log: &str) -> Vec<String> {
    log.lines()
        .filter(|line| line.contains("GET"))
        .filter_map(|line| {
            let start = line.find("https://").or_else(|| line.find("http://"))?;
            let url = line[start..].split([' ', '"']).next()?;
            let after_scheme = url.split_once("://")?.1;
            let path = after_scheme.find('/').map_or("/", |i| &after_scheme[i..]);
            Some(path.split('?').next().unwrap_or(path).to_string())
        })
        .collect()
}

/// The discovery documents among them: `/api`, `/apis`, `/api/v1`, `/apis/{g}` and `/apis/{g}/{v}`.
fn discovery_paths(paths: &[String]) -> BTreeSet<String> {
    paths
        .iter()
        .filter(|path| {
            let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
            matches!(
                segments.as_slice(),
                ["api"] | ["apis"] | ["api", _] | ["apis", _] | ["apis", _, _]
            )
        })
        .cloned()
        .collect()
}

/// The group versions the legacy `/apis` lists: what the legacy path would fetch one by one.
async fn legacy_group_versions(kubectl: &Kubectl) -> usize {
    let groups: serde_json::Value =
        serde_json::from_str(&kubectl.ok(&["get", "--raw", "/apis"]).await).expect("APIGroupList");
    groups["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| g["versions"].as_array().map_or(0, Vec::len))
        .sum()
}

#[tokio::test]
async fn kubectl_discovers_everything_from_api_and_apis_alone() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = crate::support::control_plane().await;
    let kubectl = Kubectl::new(binary.clone(), &cluster);
    let run = kubectl.run(&["api-resources", "-v=6"]).await.success();
    let paths = requested_paths(&run.stderr);
    assert_eq!(
        discovery_paths(&paths),
        BTreeSet::from(["/api".to_string(), "/apis".to_string()]),
        "{}",
        run.stderr
    );
    let pods = cells(line_of(&run.stdout, "pods").expect("pods listed"));
    assert_eq!(pods, ["pods", "po", "v1", "true", "Pod"], "{}", run.stdout);
    let deployments = cells(line_of(&run.stdout, "deployments").expect("deployments"));
    assert_eq!(deployments[2], "apps/v1", "{}", run.stdout);
    let nodes = cells(line_of(&run.stdout, "nodes").expect("nodes"));
    assert_eq!(nodes[3], "false", "cluster-scoped: {}", run.stdout);
    let legacy = 3 + legacy_group_versions(&kubectl).await;
    eprintln!(
        "kubectl api-resources, empty cache: {} requests ({} discovery); the legacy path: {legacy}",
        paths.len(),
        discovery_paths(&paths).len()
    );

    // kubectl 1.27 asks only for v2beta1 (client-go 0.27): the same document, older apiVersion.
    if let Some(old) = kubectl_of_minor(27) {
        let run = Kubectl::new(old, &cluster)
            .run(&["api-resources", "-v=6"])
            .await
            .success();
        let paths = requested_paths(&run.stderr);
        assert_eq!(discovery_paths(&paths).len(), 2, "{}", run.stderr);
        assert!(
            line_of(&run.stdout, "deployments").is_some(),
            "{}",
            run.stdout
        );
    }

    // A CRD made after that discovery: kubectl, not knowing `ct`, asks /api and /apis again.
    let crd = kubectl.manifest("crd.yaml", CRONTAB_CRD);
    kubectl.ok(&["apply", "-f", crd.to_str().unwrap()]).await;
    kubectl
        .wait_established("crontabs.stable.example.com")
        .await;
    for kubectl in [kubectl, Kubectl::new(binary, &cluster)] {
        let run = kubectl.run(&["get", "ct", "-v=6"]).await.success();
        let paths = requested_paths(&run.stderr);
        let discovery = discovery_paths(&paths);
        assert!(
            discovery.iter().all(|p| p == "/api" || p == "/apis"),
            "{}",
            run.stderr
        );
        assert!(
            paths.contains(&"/apis/stable.example.com/v1/namespaces/default/crontabs".to_string()),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("No resources found"), "{run:#?}");
    }
    stop_clean(cluster).await;
}

/// The kubectl of one minor version installed beside the dispatcher (Google Cloud SDK packages
/// ship 1.27–1.33 side by side), or `None` with a notice.
fn kubectl_of_minor(minor: u32) -> Option<std::path::PathBuf> {
    let path = std::path::PathBuf::from(format!("/usr/lib/google-cloud-sdk/bin/kubectl.1.{minor}"));
    if path.exists() {
        return Some(path);
    }
    eprintln!("SKIPPED: kubectl 1.{minor} not found at {}", path.display());
    None
}

#[test]
fn paths_are_read_from_both_log_formats() {
    let old = "I1126 06:00:00.000000 1 round_trippers.go:553] GET https://127.0.0.1:6443/api?timeout=32s 200 OK in 3 milliseconds";
    let new = r#"I1126 06:00:00.000000 1 round_trippers.go:632] "Response" verb="GET" url="https://127.0.0.1:6443/apis/apps/v1?timeout=32s" status="200 OK" milliseconds=3"#;
    let paths = requested_paths(&format!("{old}\n{new}\n"));
    assert_eq!(paths, ["/api", "/apis/apps/v1"]);
    let listed = ["/api/v1/namespaces/default/pods".to_string()];
    assert!(discovery_paths(&listed).is_empty());
}
