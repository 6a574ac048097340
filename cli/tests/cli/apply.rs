//! `minik apply`: created, unchanged, configured; multi-document files, stdin, and invalid objects.

use crate::{manifest, pod_yaml, Server};

/// A first apply creates, a second identical one changes nothing, a changed image configures.
#[tokio::test(flavor = "multi_thread")]
async fn apply_creates_then_is_unchanged_then_configures() {
    let server = Server::start().await;
    let (_dir, path) = manifest(&pod_yaml("web", "nginx"));
    assert_eq!(
        server.minik(&["apply", "-f", &path]).await.ok(),
        "pod/web created\n"
    );
    assert_eq!(
        server.minik(&["apply", "-f", &path]).await.ok(),
        "pod/web unchanged\n"
    );
    std::fs::write(&path, pod_yaml("web", "nginx:1.27")).unwrap();
    assert_eq!(
        server.minik(&["apply", "-f", &path]).await.ok(),
        "pod/web configured\n"
    );
    let pods: minik_client::Api<minik_api::core::Pod> =
        minik_client::Api::namespaced(server.client.clone(), "default");
    let live = pods.get("web").await.unwrap();
    assert_eq!(
        live.spec.unwrap().containers[0].image.as_deref(),
        Some("nginx:1.27")
    );
}

/// Every document of a multi-document stream read from stdin is applied, in order; applying the
/// same stream again changes nothing.
#[tokio::test(flavor = "multi_thread")]
async fn apply_reads_every_document_from_stdin() {
    let server = Server::start().await;
    let service = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector:\n    app: web\n  ports:\n  - port: 80\n    targetPort: 8080\n";
    let stream = format!("{service}---\n{}", pod_yaml("web", "nginx"));
    let run = server
        .minik_with_stdin(&["apply", "-f", "-"], Some(&stream))
        .await;
    assert_eq!(run.ok(), "service/web created\npod/web created\n");
    let again = server
        .minik_with_stdin(&["apply", "-f", "-"], Some(&stream))
        .await;
    assert_eq!(
        again.ok(),
        "service/web unchanged\npod/web unchanged\n",
        "server defaults do not count as changes"
    );
}

/// An object the apiserver rejects prints kubectl's `The Pod "…" is invalid: …` and exits 1.
#[tokio::test(flavor = "multi_thread")]
async fn invalid_object_prints_the_causes_and_exits_1() {
    let server = Server::start().await;
    let (_dir, path) = manifest(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bad\nspec:\n  containers:\n  - name: main\n",
    );
    let run = server.minik(&["apply", "-f", &path]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.starts_with("The Pod \"bad\" is invalid: "),
        "{run:?}"
    );
    assert!(run.stderr.contains("image"), "{run:?}");
}

/// A kind minik does not serve is refused without touching the server.
#[tokio::test(flavor = "multi_thread")]
async fn unknown_kind_is_refused() {
    let server = Server::start().await;
    let (_dir, path) =
        manifest("apiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\nmetadata:\n  name: web\n");
    let run = server.minik(&["apply", "-f", &path]).await;
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .contains("no matches for kind \"VolumeAttachment\" in version \"storage.k8s.io/v1\""),
        "{run:?}"
    );
}

/// Changing an immutable pod field is refused by the apiserver, and printed as kubectl prints it.
#[tokio::test(flavor = "multi_thread")]
async fn changing_an_immutable_pod_field_is_refused() {
    let server = Server::start().await;
    let (_dir, path) = manifest(&pod_yaml("web", "nginx"));
    server.minik(&["apply", "-f", &path]).await.ok();
    let with_command = pod_yaml("web", "nginx") + "    command: [\"sleep\", \"5\"]\n";
    std::fs::write(&path, with_command).unwrap();
    let run = server.minik(&["apply", "-f", &path]).await;
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.starts_with(
            "The Pod \"web\" is invalid: spec: Forbidden: pod updates may not change fields"
        ),
        "{run:?}"
    );
}
