//! Built-in "images": small programs inside the `minik` binary that stand in for container images.
//!
//! Kubernetes counterpart: none in the kubelet — a real node pulls an image and the runtime runs its
//! ENTRYPOINT. minik has no images, so a container without `command` whose image names a built-in
//! is run as `{minik_binary} image NAME` (see [`builtin_for_image`]). The seeds' `nginx` pods thus
//! run unchanged: `nginx`, `nginx:1.19`, `docker.io/library/nginx` and `minik/web` all become `web`.
//!
//! Beyond the built-ins, [`IMAGES`] maps well-known images to an ENTRYPOINT and CMD on the host
//! (busybox, alpine, debian, ubuntu → the host's shell and coreutils; `python` → `python3`), and
//! [`argv`] applies Docker's rules to a container's `command` and `args` (docs/images.md).
//!
//! Programs (`minik image NAME`):
//! - `web` ([`web`]): an HTTP server on `POD_IP:PORT` serving the files of its document root
//!   (`nginx`, `httpd`), else answering its pod name; test knobs in env.
//! - `sleep`: does nothing until SIGTERM (same `MINIK_ON_SIGTERM` knob as `web`); also `pause`.
//! - `agnhost` ([`agnhost`]): the `netexec` and `serve-hostname` subcommands of upstream's e2e
//!   test image.
//!
//! Both print one stdout line per lifecycle event, `event=started t=<RFC 3339 nanos> …`,
//! `event=sigterm t=…`, `event=exit t=…`, which tests and `minik demo` read from the pod's log.

pub mod agnhost;
pub mod lifecycle;
pub mod web;

/// The names `minik image NAME` accepts.
pub const BUILTINS: &[&str] = &["web", "sleep", "agnhost"];

/// What minik runs for a well-known image: its ENTRYPOINT and CMD, as the image defines them.
/// An entrypoint starting with `minik:NAME` is the built-in program `{minik} image NAME`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageEntry {
    /// Repositories (registry host and `library/` removed, no tag).
    pub repos: &'static [&'static str],
    /// ENTRYPOINT.
    pub entrypoint: &'static [&'static str],
    /// CMD.
    pub cmd: &'static [&'static str],
    /// Extra environment (the built-in web server's document root).
    pub env: &'static [(&'static str, &'static str)],
    /// Host programs standing in for the image's own (`python` → `python3`).
    pub aliases: &'static [(&'static str, &'static str)],
}

/// The table (docs/images.md shows it to users).
pub const IMAGES: &[ImageEntry] = &[
    ImageEntry {
        repos: &["minik/web", "nginx"],
        entrypoint: &["minik:web"],
        cmd: &[],
        env: &[("MINIK_WEB_ROOT", "usr/share/nginx/html")],
        aliases: &[],
    },
    ImageEntry {
        repos: &["httpd"],
        entrypoint: &["minik:web"],
        cmd: &[],
        env: &[("MINIK_WEB_ROOT", "usr/local/apache2/htdocs")],
        aliases: &[],
    },
    ImageEntry {
        repos: &[
            "minik/sleep",
            "pause",
            "registry.k8s.io/pause",
            "k8s.gcr.io/pause",
        ],
        entrypoint: &["minik:sleep"],
        cmd: &[],
        env: &[],
        aliases: &[],
    },
    ImageEntry {
        repos: &["busybox"],
        entrypoint: &[],
        cmd: &["sh"],
        env: &[],
        aliases: &[],
    },
    ImageEntry {
        repos: &["alpine"],
        entrypoint: &[],
        cmd: &["/bin/sh"],
        env: &[],
        aliases: &[],
    },
    ImageEntry {
        repos: &["debian", "ubuntu"],
        entrypoint: &[],
        cmd: &["bash"],
        env: &[],
        aliases: &[],
    },
    ImageEntry {
        repos: &["python"],
        entrypoint: &[],
        cmd: &["python3"],
        env: &[],
        aliases: &[("python", "python3")],
    },
    ImageEntry {
        repos: &[
            "agnhost",
            "registry.k8s.io/e2e-test-images/agnhost",
            "k8s.gcr.io/e2e-test-images/agnhost",
        ],
        entrypoint: &["minik:agnhost"],
        cmd: &["pause"],
        env: &[],
        aliases: &[("/agnhost", "minik:agnhost"), ("agnhost", "minik:agnhost")],
    },
];

/// The repository of an image reference: no tag, no digest, no `docker.io/` or `library/`.
pub fn repository(image: &str) -> &str {
    let without_digest = image.split('@').next().unwrap_or(image);
    // A tag is a `:` after the last `/` (a `:` before it belongs to a registry host:port).
    let last_slash = without_digest.rfind('/').map_or(0, |i| i + 1);
    let repo = match without_digest[last_slash..].find(':') {
        Some(colon) => &without_digest[..last_slash + colon],
        None => without_digest,
    };
    let repo = repo.strip_prefix("docker.io/").unwrap_or(repo);
    repo.strip_prefix("library/").unwrap_or(repo)
}

/// The table's entry for an image, if minik knows it.
pub fn lookup(image: &str) -> Option<&'static ImageEntry> {
    let repo = repository(image);
    IMAGES.iter().find(|entry| entry.repos.contains(&repo))
}

/// The argv of a container, by Docker's rules: `command` replaces ENTRYPOINT (and drops CMD);
/// `args` replace CMD. `None` when there is nothing to run (no command, unknown image).
pub fn argv(image: &str, command: &[String], args: &[String]) -> Option<Vec<String>> {
    let entry = lookup(image);
    let owned = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut argv: Vec<String> = match (entry, command.is_empty()) {
        (_, false) => command.iter().chain(args).cloned().collect(),
        (None, true) => return None,
        (Some(entry), true) => {
            let tail = if args.is_empty() {
                owned(entry.cmd)
            } else {
                args.to_vec()
            };
            owned(entry.entrypoint).into_iter().chain(tail).collect()
        }
    };
    if let (Some(entry), Some(first)) = (entry, argv.first_mut()) {
        if let Some((_, to)) = entry.aliases.iter().find(|(from, _)| from == first) {
            *first = to.to_string();
        }
    }
    (!argv.is_empty()).then_some(argv)
}

/// Maps a pod's `image` to a built-in program name, or `None` if it runs none.
pub fn builtin_for_image(image: &str) -> Option<&'static str> {
    lookup(image)?.entrypoint.first()?.strip_prefix("minik:")
}

/// What an error says minik can run.
pub fn known_images() -> String {
    let names: Vec<&str> = IMAGES.iter().map(|e| e.repos[0]).collect();
    names.join(", ")
}

/// Entry point of `minik image NAME`; returns the process exit code.
pub fn run(name: &str) -> i32 {
    match name {
        "web" => web::run(),
        "sleep" => lifecycle::run_sleep(),
        "agnhost" => agnhost::run(std::env::args().skip(3).collect()),
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
    fn docker_rules_command_replaces_entrypoint_args_replace_cmd() {
        let v = |items: &[&str]| items.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(argv("busybox", &[], &[]), Some(v(&["sh"])));
        assert_eq!(
            argv("busybox:1.36", &[], &v(&["sleep", "3600"])),
            Some(v(&["sleep", "3600"]))
        );
        assert_eq!(
            argv(
                "python:3.12-slim",
                &v(&["python", "-m", "http.server"]),
                &[]
            ),
            Some(v(&["python3", "-m", "http.server"]))
        );
        assert_eq!(argv("python", &[], &[]), Some(v(&["python3"])));
        assert_eq!(
            argv("nginx", &[], &v(&["-g"])),
            Some(v(&["minik:web", "-g"]))
        );
        assert_eq!(
            argv("registry.k8s.io/pause:3.10", &[], &[]),
            Some(v(&["minik:sleep"]))
        );
        assert_eq!(
            argv(
                "registry.k8s.io/e2e-test-images/agnhost:2.53",
                &[],
                &v(&["netexec", "--http-port=8080"])
            ),
            Some(v(&["minik:agnhost", "netexec", "--http-port=8080"]))
        );
        assert_eq!(
            argv(
                "registry.k8s.io/e2e-test-images/agnhost:2.53",
                &v(&["/agnhost", "serve-hostname"]),
                &[]
            ),
            Some(v(&["minik:agnhost", "serve-hostname"]))
        );
        assert_eq!(
            argv("postgres:16", &v(&["echo"]), &v(&["hi"])),
            Some(v(&["echo", "hi"]))
        );
        assert_eq!(argv("postgres:16", &[], &v(&["hi"])), None);
    }

    #[test]
    fn unknown_images_resolve_to_nothing() {
        for image in [
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
