//! From a container in a pod spec to the exact process the runtime starts: argv, environment, logs.
//!
//! Kubernetes counterpart: `generateContainerConfig` in
//! `pkg/kubelet/kuberuntime/kuberuntime_container.go` and `makeEnvironmentVariables` in
//! `pkg/kubelet/kubelet_pods.go` (the spec's `env`, `valueFrom.fieldRef`, `$(VAR)` expansion in
//! `command`/`args`), plus the image pull step (`pkg/kubelet/images/image_manager.go`).
//!
//! minik simplifies: there are no images. A table of well-known images (`images/mod.rs`,
//! docs/images.md) gives each an ENTRYPOINT and CMD on the host, and Docker's rules combine them
//! with `command` and `args`: `busybox` with `args: [sleep, "3600"]` runs the host's `sleep`,
//! `nginx` runs `{minik} image web`. A `command` runs that host program (no shell) whatever the
//! image; an unknown image without one fails like an image pull would (`ErrImagePull`). The environment is built from scratch (nothing leaks from the kubelet
//! except `PATH` and `HOME`), with the variables a pod needs to find itself and the API server.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, Pod};

use crate::cri::ContainerConfig;
use crate::downward::PodFacts;
use crate::env::{make_environment, Environment};
use crate::sources::ObjectLookup;

/// What the kubelet knows about the node and the pod that goes into every container's config.
#[derive(Clone, Debug, Default)]
pub struct PodContext {
    /// The pod's IP (`POD_IP`, `status.podIP`).
    pub pod_ip: String,
    /// This node (`NODE_NAME`, `spec.nodeName`).
    pub node_name: String,
    /// The API server's address as `(host, port)`, for `KUBERNETES_SERVICE_HOST`/`_PORT`.
    pub api_host: String,
    /// See `api_host`.
    pub api_port: String,
    /// The `minik` binary that runs built-in images.
    pub minik_binary: PathBuf,
    /// The kubelet's own `PATH`, so host programs resolve.
    pub path: String,
    /// `HOME` for the processes.
    pub home: String,
    /// Extra variables per container name (volume mounts, from `volumes.rs`).
    pub volume_env: BTreeMap<String, BTreeMap<String, String>>,
    /// The directory holding the pod's container logs.
    pub log_dir: PathBuf,
    /// Each container's own directory, its working directory when the spec names none.
    pub working_dirs: BTreeMap<String, PathBuf>,
    /// This node's IP (`status.hostIP`).
    pub host_ip: String,
    /// The node's allocatable `cpu` and `memory` (unset limits in `resourceFieldRef`).
    pub allocatable: BTreeMap<String, String>,
    /// Each container's bind mounts, when the node gives containers mount namespaces.
    pub mounts: BTreeMap<String, Vec<crate::mountns::BindMount>>,
    /// Rewrite the processes' wildcard binds to the pod IP (`shim/bind_rewrite/`).
    pub rewrite_binds: bool,
}

impl PodContext {
    /// What the downward API needs of this context.
    pub fn facts(&self) -> PodFacts {
        PodFacts {
            pod_ip: self.pod_ip.clone(),
            host_ip: self.host_ip.clone(),
            node_name: self.node_name.clone(),
            allocatable: self.allocatable.clone(),
        }
    }
}

/// A container whose image is not one of minik's built-in programs.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ImageError {
    /// The text shown as the waiting message and in the `Failed` event.
    pub message: String,
}

/// The built-in program an image names, if any (`web`, `sleep`, `agnhost`; see `images/mod.rs`).
pub fn builtin_image(image: &str) -> Option<&'static str> {
    crate::images::builtin_for_image(image)
}

/// The message of an image minik cannot run.
pub fn image_error(image: &str) -> ImageError {
    ImageError {
        message: format!(
            "minik runs no container images: image \"{image}\" is not in its image table ({}); \
             set command to run a host program",
            crate::images::known_images()
        ),
    }
}

/// The argv to run, by Docker's rules over the image table (`images::argv`), with `$(VAR)`
/// expanded in `command` and `args`; a built-in program runs as `{minik} image NAME`.
pub fn resolve_argv(
    container: &Container,
    minik_binary: &Path,
    env: &BTreeMap<String, String>,
) -> Result<Vec<String>, ImageError> {
    let expand_all = |items: &Option<Vec<String>>| -> Vec<String> {
        items.iter().flatten().map(|a| expand(a, env)).collect()
    };
    let image = container.image.as_deref().unwrap_or_default();
    let mut argv = crate::images::argv(
        image,
        &expand_all(&container.command),
        &expand_all(&container.args),
    )
    .ok_or_else(|| image_error(image))?;
    if let Some(program) = argv[0].strip_prefix("minik:").map(str::to_string) {
        argv.splice(
            0..1,
            [minik_binary.display().to_string(), "image".into(), program],
        );
    }
    Ok(argv)
}

/// The image table's environment for `image` (the web server's document root).
pub fn image_env(image: &str) -> BTreeMap<String, String> {
    crate::images::lookup(image)
        .map(|entry| {
            entry
                .env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// The container's environment: PATH and HOME, the pod's own variables, service links, then the
/// spec's `envFrom` and `env` (`env.rs`); `Err` is a CreateContainerConfigError message.
pub fn build_env(
    pod: &Pod,
    container: &Container,
    ctx: &PodContext,
    lookup: &dyn ObjectLookup,
) -> Result<Environment, String> {
    let meta = &pod.metadata;
    let mut base = BTreeMap::from([
        ("PATH".to_string(), ctx.path.clone()),
        ("HOME".to_string(), ctx.home.clone()),
        (
            "POD_NAME".to_string(),
            meta.name.clone().unwrap_or_default(),
        ),
        (
            "POD_NAMESPACE".to_string(),
            meta.namespace.clone().unwrap_or_default(),
        ),
        ("POD_IP".to_string(), ctx.pod_ip.clone()),
        ("NODE_NAME".to_string(), ctx.node_name.clone()),
        ("KUBERNETES_SERVICE_HOST".to_string(), ctx.api_host.clone()),
        ("KUBERNETES_SERVICE_PORT".to_string(), ctx.api_port.clone()),
    ]);
    base.extend(
        ctx.volume_env
            .get(&container.name)
            .cloned()
            .unwrap_or_default(),
    );
    base.extend(image_env(container.image.as_deref().unwrap_or_default()));
    let mut env = make_environment(pod, container, ctx, base, lookup)?;
    let first_port = container
        .ports
        .iter()
        .flatten()
        .next()
        .map(|p| p.container_port);
    if let Some(port) = first_port {
        env.vars
            .entry("MINIK_CONTAINER_PORT".into())
            .or_insert_with(|| port.to_string());
        env.vars
            .entry("PORT".into())
            .or_insert_with(|| port.to_string());
    }
    Ok(env)
}

/// Kubernetes' `$(VAR)` expansion: known variables are replaced, `$$` escapes, the rest stays.
pub fn expand(text: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        if let Some(after) = tail.strip_prefix("$$") {
            out.push('$');
            rest = after;
        } else if let Some((name, after)) = tail.strip_prefix("$(").and_then(|t| t.split_once(')'))
        {
            match env.get(name) {
                Some(value) => out.push_str(value),
                None => out.push_str(&tail[..name.len() + 3]),
            }
            rest = after;
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// Why a container could not be configured (no process was started).
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigError {
    /// The image names nothing minik can run (`ErrImagePull`).
    Image(ImageError),
    /// A reference could not be resolved (`CreateContainerConfigError`).
    Config(String),
}

/// The full runtime config for one attempt of a container, and the warnings of its environment.
pub fn container_config(
    pod: &Pod,
    container: &Container,
    attempt: u32,
    ctx: &PodContext,
    lookup: &dyn ObjectLookup,
) -> Result<(ContainerConfig, Vec<String>), ConfigError> {
    let env = build_env(pod, container, ctx, lookup).map_err(ConfigError::Config)?;
    let argv = resolve_argv(container, &ctx.minik_binary, &env.vars).map_err(ConfigError::Image)?;
    let config = ContainerConfig {
        pod_uid: pod.metadata.uid.clone().unwrap_or_default(),
        pod_key: format!(
            "{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.name.as_deref().unwrap_or_default()
        ),
        name: container.name.clone(),
        image: container.image.clone().unwrap_or_default(),
        attempt,
        argv,
        env: env.vars,
        working_dir: container
            .working_dir
            .as_ref()
            .map(PathBuf::from)
            .or_else(|| ctx.working_dirs.get(&container.name).cloned()),
        log_path: ctx
            .log_dir
            .join(&container.name)
            .join(format!("{attempt}.log")),
        mounts: ctx.mounts.get(&container.name).cloned(),
        pod_ip: ctx.rewrite_binds.then(|| ctx.pod_ip.parse().ok()).flatten(),
        stop_grace_seconds: Some(stop_grace_seconds(pod)),
        stdin: container.stdin == Some(true),
        stdin_once: container.stdin_once == Some(true),
        tty: container.tty == Some(true),
    };
    Ok((config, env.invalid_keys))
}

/// The pod's `terminationGracePeriodSeconds` (30 if unset, the API's default), for the shim.
fn stop_grace_seconds(pod: &Pod) -> u32 {
    let spec = pod.spec.as_ref();
    let grace = spec.and_then(|s| s.termination_grace_period_seconds);
    grace.unwrap_or(30).clamp(0, i64::from(u32::MAX)) as u32
}

/// `{root}/logs/{ns}_{name}_{uid}`, as upstream's `/var/log/pods/<ns>_<name>_<uid>`.
pub fn pod_log_dir(root_dir: &Path, pod: &Pod) -> PathBuf {
    let meta = &pod.metadata;
    root_dir.join("logs").join(format!(
        "{}_{}_{}",
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
        meta.uid.as_deref().unwrap_or_default()
    ))
}

/// Removes the log directories of the pods with these uids (`{root}/logs/*_{uid}`): the end of a
/// deleted pod's logs, as upstream's container GC evicts `/var/log/pods/<ns>_<name>_<uid>` once
/// the pod is gone. Used after a kubelet restart, when only the uid of a vanished pod is known.
pub fn remove_pod_log_dirs(root_dir: &Path, uids: &std::collections::BTreeSet<String>) {
    let Ok(entries) = std::fs::read_dir(root_dir.join("logs")) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let owned = name
            .rsplit_once('_')
            .is_some_and(|(_, uid)| uids.contains(uid));
        if owned {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::StaticLookup;
    use crate::testing::{container, pod};
    use k8s_openapi::api::core::v1::{ContainerPort, EnvVar, EnvVarSource, ObjectFieldSelector};

    fn ctx() -> PodContext {
        PodContext {
            pod_ip: "127.244.1.7".into(),
            node_name: "node-1".into(),
            api_host: "127.0.0.1".into(),
            api_port: "6443".into(),
            minik_binary: PathBuf::from("/usr/bin/minik"),
            path: "/usr/bin:/bin".into(),
            home: "/root".into(),
            log_dir: PathBuf::from("/tmp/logs"),
            ..Default::default()
        }
    }

    #[test]
    fn nginx_and_minik_web_run_the_builtin_web_server_with_args_after() {
        let mut web = container("web");
        web.args = Some(vec!["--delay".into(), "1s".into()]);
        let argv =
            resolve_argv(&web, Path::new("/usr/bin/minik"), &BTreeMap::new()).expect("built-in");
        assert_eq!(argv, ["/usr/bin/minik", "image", "web", "--delay", "1s"]);
        assert_eq!(builtin_image("nginx:1.27"), Some("web"));
        assert_eq!(builtin_image("minik/sleep"), Some("sleep"));
    }

    #[test]
    fn the_shim_gets_the_pods_grace_period_recorded_at_start() {
        let mut with_grace = pod(&["web"], "Always");
        let spec = with_grace.spec.as_mut().unwrap();
        spec.termination_grace_period_seconds = Some(3);
        let config = |pod: &Pod| {
            let (config, _) =
                container_config(pod, &container("web"), 0, &ctx(), &StaticLookup::default())
                    .expect("config");
            config.stop_grace_seconds
        };
        assert_eq!(config(&with_grace), Some(3));
        with_grace
            .spec
            .as_mut()
            .unwrap()
            .termination_grace_period_seconds = None;
        assert_eq!(config(&with_grace), Some(30), "the API's default");
    }

    #[test]
    fn unknown_image_without_command_is_an_image_error_naming_the_image() {
        let mut other = container("db");
        other.image = Some("postgres:16".into());
        let error =
            resolve_argv(&other, Path::new("minik"), &BTreeMap::new()).expect_err("not built in");
        assert!(
            error.message.starts_with("minik runs no container images: image \"postgres:16\" is not in its image table (minik/web, httpd, minik/sleep, busybox"),
            "{}",
            error.message
        );
    }

    #[test]
    fn command_and_args_are_the_exact_argv_with_var_expansion() {
        let mut sh = container("sh");
        sh.image = Some("busybox".into());
        sh.command = Some(vec!["sh".into(), "-c".into()]);
        sh.args = Some(vec!["echo $(POD_NAME) $$(POD_NAME) $(MISSING)".into()]);
        let env = BTreeMap::from([("POD_NAME".to_string(), "web".to_string())]);
        let argv = resolve_argv(&sh, Path::new("minik"), &env).expect("host program");
        assert_eq!(argv, ["sh", "-c", "echo web $(POD_NAME) $(MISSING)"]);
    }

    #[test]
    fn environment_has_pod_identity_api_address_spec_env_and_port() {
        let pod = pod(&["web"], "Always");
        let mut web = container("web");
        web.ports = Some(vec![ContainerPort {
            container_port: 8080,
            ..Default::default()
        }]);
        let field = |path: &str| EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                field_path: path.into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        web.env = Some(vec![
            EnvVar {
                name: "GREETING".into(),
                value: Some("hi $(POD_NAME)".into()),
                ..Default::default()
            },
            EnvVar {
                name: "MY_UID".into(),
                value_from: Some(field("metadata.uid")),
                ..Default::default()
            },
            EnvVar {
                name: "MY_IP".into(),
                value_from: Some(field("status.podIP")),
                ..Default::default()
            },
        ]);
        let env = build_env(&pod, &web, &ctx(), &StaticLookup::default())
            .unwrap()
            .vars;
        for (key, value) in [
            ("POD_NAME", "web"),
            ("POD_NAMESPACE", "default"),
            ("POD_IP", "127.244.1.7"),
            ("NODE_NAME", "node-1"),
            ("KUBERNETES_SERVICE_HOST", "127.0.0.1"),
            ("KUBERNETES_SERVICE_PORT", "6443"),
            ("GREETING", "hi web"),
            ("MY_UID", "uid-1"),
            ("MY_IP", "127.244.1.7"),
            ("PORT", "8080"),
            ("PATH", "/usr/bin:/bin"),
        ] {
            assert_eq!(env.get(key).map(String::as_str), Some(value), "{key}");
        }
    }

    #[test]
    fn field_refs_select_one_label_or_annotation() {
        let mut pod = pod(&["web"], "Never");
        pod.metadata.annotations = Some(BTreeMap::from([(
            "batch.kubernetes.io/job-completion-index".to_string(),
            "2".to_string(),
        )]));
        pod.metadata.labels = Some(BTreeMap::from([("app".to_string(), "pi".to_string())]));
        let var = |name: &str, path: &str| EnvVar {
            name: name.into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: path.into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut web = container("web");
        web.env = Some(vec![
            var(
                "JOB_COMPLETION_INDEX",
                "metadata.annotations['batch.kubernetes.io/job-completion-index']",
            ),
            var("APP", "metadata.labels['app']"),
            var("MISSING", "metadata.labels['nope']"),
        ]);
        let env = build_env(&pod, &web, &ctx(), &StaticLookup::default())
            .unwrap()
            .vars;
        assert_eq!(env["JOB_COMPLETION_INDEX"], "2");
        assert_eq!(env["APP"], "pi");
        assert_eq!(env["MISSING"], "");
    }

    #[test]
    fn explicit_port_env_wins_over_container_port() {
        let pod = pod(&["web"], "Always");
        let mut web = container("web");
        web.ports = Some(vec![ContainerPort {
            container_port: 8080,
            ..Default::default()
        }]);
        web.env = Some(vec![EnvVar {
            name: "PORT".into(),
            value: Some("9000".into()),
            ..Default::default()
        }]);
        assert_eq!(
            build_env(&pod, &web, &ctx(), &StaticLookup::default())
                .unwrap()
                .vars
                .get("PORT")
                .map(String::as_str),
            Some("9000")
        );
    }

    #[test]
    fn config_names_the_attempt_and_its_log_file() {
        let pod = pod(&["web"], "Always");
        let (config, _) =
            container_config(&pod, &container("web"), 3, &ctx(), &StaticLookup::default())
                .expect("config");
        assert_eq!(
            (
                config.pod_uid.as_str(),
                config.pod_key.as_str(),
                config.attempt
            ),
            ("uid-1", "default/web", 3)
        );
        assert_eq!(config.log_path, PathBuf::from("/tmp/logs/web/3.log"));
    }

    #[test]
    fn binds_are_rewritten_to_the_pod_ip_only_where_the_node_can() {
        let pod = pod(&["web"], "Always");
        let lookup = StaticLookup::default();
        let mut ctx = ctx();
        let config = |ctx: &PodContext| container_config(&pod, &container("web"), 0, ctx, &lookup);
        assert_eq!(config(&ctx).expect("config").0.pod_ip, None);
        ctx.rewrite_binds = true;
        let rewritten = config(&ctx).expect("config").0.pod_ip;
        assert_eq!(rewritten, Some(std::net::Ipv4Addr::new(127, 244, 1, 7)));
    }
}
