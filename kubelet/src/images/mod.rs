//! Built-in "images": small programs inside the `minik` binary that stand in for container images.
//!
//! Kubernetes counterpart: none in the kubelet — a real node pulls an image and the runtime runs its
//! ENTRYPOINT. minik has no images, so a container without `command` whose image names a built-in
//! is run as `{minik_binary} image NAME` (see [`builtin_for_image`]). The seeds' `nginx` pods thus
//! run unchanged: `nginx`, `nginx:1.19`, `docker.io/library/nginx` and `minik/web` all become `web`.
//!
//! Programs (`minik image NAME`):
//! - `web` ([`web`]): an HTTP server on `POD_IP:PORT` answering its pod name; test knobs in env.
//! - `sleep`: does nothing until SIGTERM (same `MINIK_ON_SIGTERM` knob as `web`).
//!
//! Both print one stdout line per lifecycle event, `event=started t=<RFC 3339 nanos> …`,
//! `event=sigterm t=…`, `event=exit t=…`, which tests and `minik demo` read from the pod's log.

pub mod lifecycle;
pub mod web;

/// The names `minik image NAME` accepts.
pub const BUILTINS: &[&str] = &["web", "sleep"];

/// Maps a pod's `image` to a built-in program name, or `None` if minik has nothing for it.
/// A registry host and `library/` are ignored; a tag or digest is accepted for any built-in.
pub fn builtin_for_image(image: &str) -> Option<&'static str> {
    let without_digest = image.split('@').next().unwrap_or(image);
    // A tag is a `:` after the last `/` (a `:` before it belongs to a registry host:port).
    let last_slash = without_digest.rfind('/').map_or(0, |i| i + 1);
    let repo = match without_digest[last_slash..].find(':') {
        Some(colon) => &without_digest[..last_slash + colon],
        None => without_digest,
    };
    let repo = repo.strip_prefix("docker.io/").unwrap_or(repo);
    let repo = repo.strip_prefix("library/").unwrap_or(repo);
    match repo {
        "minik/web" | "nginx" => Some("web"),
        "minik/sleep" => Some("sleep"),
        _ => None,
    }
}

/// Entry point of `minik image NAME`; returns the process exit code.
pub fn run(name: &str) -> i32 {
    match name {
        "web" => web::run(),
        "sleep" => lifecycle::run_sleep(),
        other => {
            eprintln!(
                "minik image: unknown built-in image {other:?} (known: {})",
                BUILTINS.join(", ")
            );
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nginx_in_every_spelling_is_the_web_image() {
        for image in [
            "nginx",
            "nginx:1.19",
            "docker.io/library/nginx:1.14.2",
            "library/nginx",
            "minik/web",
            "nginx@sha256:abc",
        ] {
            assert_eq!(builtin_for_image(image), Some("web"), "{image}");
        }
        assert_eq!(builtin_for_image("minik/sleep:latest"), Some("sleep"));
    }

    #[test]
    fn unknown_images_resolve_to_nothing() {
        for image in [
            "busybox",
            "quay.io/nyan/lifecycle:latest",
            "registry:5000/nginx-extra",
            "nginxx",
        ] {
            assert_eq!(builtin_for_image(image), None, "{image}");
        }
    }

    #[test]
    fn unknown_builtin_exits_with_2() {
        assert_eq!(run("nope"), 2);
    }
}
