//! kubectl's global flags: `-n`, `--server`, `--kubeconfig`, `--context` and `-o` work before the
//! verb as after it, against a real apiserver.

use crate::{manifest, minik_command, pod_yaml, Run, Server};

/// Runs `minik ARGS` as given (no `--kubeconfig` appended).
async fn run(args: &[&str]) -> Run {
    Run::from(minik_command(args).output().await.expect("minik output"))
}

/// `minik --kubeconfig F -n team apply …`, `minik -n team -o name get pods`: the flags before the
/// verb choose the server, the namespace and the format, as kubectl's do; `--server` overrides
/// the kubeconfig's address and keeps its CA and certificate.
#[tokio::test(flavor = "multi_thread")]
async fn flags_before_the_verb_choose_server_namespace_and_format() {
    let server = Server::start().await;
    let namespace = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n";
    let (_dir, path) = manifest(&format!("{namespace}---\n{}", pod_yaml("web", "nginx")));
    let config = server.kubeconfig.to_str().unwrap();
    let applied = run(&["--kubeconfig", config, "-n", "team", "apply", "-f", &path]).await;
    assert_eq!(applied.ok(), "namespace/team created\npod/web created\n");
    let both = ["-s", &server.url, "--kubeconfig", config];
    let names = run(&[&both[..], &["-n", "team", "-o", "name", "get", "pods"]].concat()).await;
    assert_eq!(names.ok(), "pod/web\n");
    let yaml = run(&[
        "-o",
        "yaml",
        "--namespace=team",
        "--kubeconfig",
        config,
        "get",
        "pod",
        "web",
    ])
    .await;
    assert!(yaml.ok().contains("namespace: team"), "{yaml:?}");
    // The same flags after the verb, and the default namespace when none is given.
    let after = run(&[
        "get",
        "pods",
        "-o",
        "name",
        "-n",
        "team",
        "--kubeconfig",
        config,
    ])
    .await;
    assert_eq!(after.ok(), "pod/web\n");
    let default = run(&["--kubeconfig", config, "get", "pods"]).await;
    assert_eq!(
        (default.code, default.stderr.as_str()),
        (0, "No resources found in default namespace.\n")
    );
    // A flag a verb has no use for is ignored, as kubectl does.
    assert!(run(&["-n", "team", "version", "--client"])
        .await
        .ok()
        .starts_with("Client Version:"));
}

/// `--kubeconfig FILE [--context NAME]` names the server; a missing file or context is one line
/// on stderr and exit 1.
#[tokio::test(flavor = "multi_thread")]
async fn kubeconfig_and_context_flags_name_the_server() {
    let server = Server::start().await;
    let admin = minik_cluster::kubeconfig::Entries::from_kubeconfig(&server.kubeconfig).unwrap();
    let kubeconfig = serde_json::json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "minik", "cluster": admin.cluster},
                     {"name": "gone", "cluster": {"server": "http://127.0.0.1:1"}}],
        "users": [{"name": "admin", "user": admin.user}],
        "contexts": [{"name": "minik", "context": {"cluster": "minik", "user": "admin"}},
                     {"name": "lab", "context": {"cluster": "minik", "user": "admin"}},
                     {"name": "gone", "context": {"cluster": "gone"}}],
        "current-context": "gone",
    });
    let (_dir, file) = manifest(&kubeconfig.to_string());
    for args in [
        &["--kubeconfig", &file, "get", "nodes"][..],
        &["get", "nodes", "--kubeconfig", &file],
        &["--context", "lab", "--kubeconfig", &file, "get", "nodes"],
    ] {
        let listed = run(args).await;
        assert_eq!(
            (listed.code, listed.stderr.as_str()),
            (0, "No resources found\n"),
            "{args:?}"
        );
    }
    let missing = run(&["--kubeconfig", "/nonexistent/kubeconfig", "get", "nodes"]).await;
    assert_eq!(missing.code, 1);
    assert_eq!(
        missing.stderr,
        "error: cannot read kubeconfig /nonexistent/kubeconfig: No such file or directory (os error 2)\n"
    );
    let unknown = run(&["--kubeconfig", &file, "--context", "other", "get", "nodes"]).await;
    assert_eq!(unknown.code, 1);
    assert_eq!(
        unknown.stderr,
        format!("error: context \"other\" not found in {file}\n")
    );
}
