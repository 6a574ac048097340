//! Pod volumes: minik's fake CSI turns `spec.volumes` and each container's `volumeMounts` into
//! directories and tells the container where they are.
//!
//! Kubernetes counterpart: the kubelet's volume manager (`pkg/kubelet/volumemanager/`) with the
//! in-tree `emptyDir` and `hostPath` plugins (`pkg/volume/emptydir/empty_dir.go`,
//! `pkg/volume/hostpath/host_path.go`): an emptyDir lives at
//! `/var/lib/kubelet/pods/{uid}/volumes/kubernetes.io~empty-dir/{name}` and is deleted with the
//! pod; a hostPath is the node's own path; the runtime then bind-mounts each into the container.
//!
//! Where the node allows user + mount namespaces, each container also sees its volumes at their
//! `mountPath` (bind mounts made by its shim, `mountns/`); the scheme below holds everywhere:
//! - emptyDir `NAME` → `{root}/pods/{uid}/volumes/NAME` (created by [`setup`], removed by
//!   [`teardown`]); `medium: Memory` and `sizeLimit` are ignored.
//! - hostPath → its `path`, checked or created according to `type` (`DirectoryOrCreate`, …).
//! - Each container gets its own tree `{root}/pods/{uid}/containers/{name}/root/` (its default
//!   working directory) in which every mount is a symlink at the mount path without the leading
//!   slash: `usr/share/nginx/html → …/volumes/html`. A program that opens the *relative* path
//!   `usr/share/nginx/html/index.html` finds the volume.
//! - And one env var per mount: `MINIK_MOUNT_<VOLUME_NAME_UPPER>=/abs/path` (non-alphanumerics
//!   become `_`), plus `MINIK_CONTAINER_ROOT` = the tree above.
//! - configMap, secret, downwardAPI and projected volumes are per-pod directories too, whose
//!   files the pod worker writes with upstream's atomic layout (`projection.rs`,
//!   `atomic_writer.rs`).
//! - persistentVolumeClaim → the directory of the volume the claim is bound to, resolved beforehand
//!   by `claims.rs` (created on first mount; it outlives the pod).
//! - `readOnly` is enforced only in a mount namespace; `subPath` selects a sub-directory of the
//!   volume (created if missing). Other volume kinds are mounted as an empty directory and reported
//!   in [`VolumePlan::warnings`] (so is a claim nobody resolved, for the fake sandbox).
//!
//! The plan is a pure function of the pod ([`plan`]); [`setup`] and [`teardown`] do the I/O.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use k8s_openapi::api::core::v1::{Container, Pod, Volume};

/// Errors of the volume manager.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The pod spec asks for something impossible (unknown volume, bad path).
    #[error("invalid volume spec: {0}")]
    Invalid(String),
    /// A hostPath does not match its `type`.
    #[error("hostPath {path}: {message}")]
    HostPath { path: PathBuf, message: String },
    /// Creating or removing a directory failed.
    #[error("volume I/O error at {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Result with the volume [`Error`] as default.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What backs one volume.
#[derive(Clone, Debug, PartialEq)]
pub enum VolumeKind {
    /// A fresh per-pod directory.
    EmptyDir,
    /// A node path, with the hostPath `type` (`""` = no check).
    HostPath { type_: String },
    /// configMap, secret, downwardAPI or projected: a per-pod directory whose files the pod
    /// worker writes (`projection.rs`, `atomic_writer.rs`) before the containers start.
    Projected,
    /// A persistentVolumeClaim: its bound volume's directory.
    Claim,
    /// A kind minik does not implement (named): an empty per-pod directory stands in.
    Unsupported(String),
}

/// One volume of the pod, resolved to a directory.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedVolume {
    pub name: String,
    pub kind: VolumeKind,
    pub path: PathBuf,
}

/// One `volumeMount` of a container, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct PlannedMount {
    pub volume: String,
    /// The `mountPath` from the spec (absolute).
    pub mount_path: String,
    /// Where the data really is (volume path plus `subPath`).
    pub host_path: PathBuf,
    pub read_only: bool,
    /// `MINIK_MOUNT_<VOLUME>`.
    pub env_name: String,
}

/// Everything [`setup`] will create for a pod, and what each container is told.
#[derive(Clone, Debug, PartialEq)]
pub struct VolumePlan {
    /// `{root}/pods/{uid}`.
    pub pod_dir: PathBuf,
    pub volumes: Vec<PlannedVolume>,
    /// Container name → its mounts (app and init containers).
    pub mounts: BTreeMap<String, Vec<PlannedMount>>,
    /// Things minik could not do faithfully (unsupported kinds), for an event.
    pub warnings: Vec<String>,
}

/// `{root}/pods/{uid}`: everything the kubelet keeps for a pod.
pub fn pod_dir(root: &Path, pod_uid: &str) -> PathBuf {
    root.join("pods").join(pod_uid)
}

/// `{root}/pods/{uid}/containers/{name}/root`: the container's tree and default working directory.
pub fn container_root(root: &Path, pod_uid: &str, container: &str) -> PathBuf {
    pod_dir(root, pod_uid)
        .join("containers")
        .join(container)
        .join("root")
}

/// The env var naming a volume's mount: `MINIK_MOUNT_` + the name upper-cased, `-`/`.` → `_`.
pub fn mount_env_name(volume: &str) -> String {
    let upper: String = volume
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("MINIK_MOUNT_{upper}")
}

/// Plans the volumes of `pod` under `root` (pure: touches no file).
pub fn plan(root: &Path, pod_uid: &str, pod: &Pod) -> Result<VolumePlan> {
    plan_with_claims(root, pod_uid, pod, &BTreeMap::new())
}

/// [`plan`], with the directory of each persistentVolumeClaim volume (by volume name).
pub fn plan_with_claims(
    root: &Path,
    pod_uid: &str,
    pod: &Pod,
    claims: &BTreeMap<String, PathBuf>,
) -> Result<VolumePlan> {
    let pod_dir = pod_dir(root, pod_uid);
    let spec = pod.spec.as_ref();
    let mut warnings = Vec::new();
    let volumes: Vec<PlannedVolume> = spec
        .and_then(|s| s.volumes.as_ref())
        .into_iter()
        .flatten()
        .map(|v| match claims.get(&v.name) {
            Some(path) => Ok(PlannedVolume {
                name: v.name.clone(),
                kind: VolumeKind::Claim,
                path: path.clone(),
            }),
            None => plan_volume(&pod_dir, v, &mut warnings),
        })
        .collect::<Result<_>>()?;
    let containers = spec
        .into_iter()
        .flat_map(|s| s.init_containers.iter().flatten().chain(&s.containers));
    let mut mounts = BTreeMap::new();
    for container in containers {
        mounts.insert(container.name.clone(), plan_mounts(container, &volumes)?);
    }
    Ok(VolumePlan {
        pod_dir,
        volumes,
        mounts,
        warnings,
    })
}

fn plan_volume(
    pod_dir: &Path,
    volume: &Volume,
    warnings: &mut Vec<String>,
) -> Result<PlannedVolume> {
    let name = volume.name.clone();
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return Err(Error::Invalid(format!("volume name {name:?}")));
    }
    let own_dir = pod_dir.join("volumes").join(&name);
    let (kind, path) = if volume.empty_dir.is_some() {
        (VolumeKind::EmptyDir, own_dir)
    } else if let Some(host) = &volume.host_path {
        let path = PathBuf::from(&host.path);
        if !path.is_absolute() {
            return Err(Error::Invalid(format!(
                "hostPath of volume {name:?} must be absolute, got {:?}",
                host.path
            )));
        }
        (
            VolumeKind::HostPath {
                type_: host.type_.clone().unwrap_or_default(),
            },
            path,
        )
    } else if crate::projection::is_projected(volume) {
        (VolumeKind::Projected, own_dir)
    } else {
        let kind = unsupported_kind(volume);
        warnings.push(format!("volume {name:?}: minik does not implement {kind} volumes; an empty directory is mounted"));
        (VolumeKind::Unsupported(kind.to_string()), own_dir)
    };
    Ok(PlannedVolume { name, kind, path })
}

fn unsupported_kind(volume: &Volume) -> &'static str {
    match volume {
        v if v.persistent_volume_claim.is_some() => "persistentVolumeClaim",
        _ => "this kind of",
    }
}

fn plan_mounts(container: &Container, volumes: &[PlannedVolume]) -> Result<Vec<PlannedMount>> {
    let mut mounts = Vec::new();
    for mount in container.volume_mounts.iter().flatten() {
        let volume = volumes
            .iter()
            .find(|v| v.name == mount.name)
            .ok_or_else(|| {
                Error::Invalid(format!(
                    "container {:?} mounts volume {:?}, which the pod does not declare",
                    container.name, mount.name
                ))
            })?;
        if !mount.mount_path.starts_with('/') || relative_mount_path(&mount.mount_path).is_none() {
            return Err(Error::Invalid(format!(
                "mountPath {:?} must be absolute, without `..`, and not `/`",
                mount.mount_path
            )));
        }
        let host_path = match mount.sub_path.as_deref().filter(|s| !s.is_empty()) {
            Some(sub) if is_plain_relative(Path::new(sub)) => volume.path.join(sub),
            Some(sub) => {
                return Err(Error::Invalid(format!(
                    "subPath {sub:?} must be relative, without `..`"
                )))
            }
            None => volume.path.clone(),
        };
        mounts.push(PlannedMount {
            volume: volume.name.clone(),
            mount_path: mount.mount_path.clone(),
            host_path,
            read_only: mount.read_only.unwrap_or(false),
            env_name: mount_env_name(&volume.name),
        });
    }
    Ok(mounts)
}

/// `/usr/share/nginx/html` → `usr/share/nginx/html`; `None` for `/` or a path with `..`.
fn relative_mount_path(mount_path: &str) -> Option<PathBuf> {
    let relative = PathBuf::from(mount_path.trim_start_matches('/'));
    (relative.components().next().is_some() && is_plain_relative(&relative)).then_some(relative)
}

fn is_plain_relative(path: &Path) -> bool {
    path.components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

impl VolumePlan {
    /// The env vars telling `container` where its mounts are (first mount of a volume wins).
    pub fn env_for(&self, root: &Path, pod_uid: &str, container: &str) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        let tree = container_root(root, pod_uid, container);
        env.insert(
            "MINIK_CONTAINER_ROOT".to_string(),
            tree.to_string_lossy().into_owned(),
        );
        for mount in self.mounts.get(container).into_iter().flatten() {
            env.entry(mount.env_name.clone())
                .or_insert_with(|| mount.host_path.to_string_lossy().into_owned());
        }
        env
    }
}

/// Creates the pod's volumes and every container's tree of mount symlinks. Idempotent (a
/// restarted kubelet or a restarted container runs it again).
pub fn setup(root: &Path, pod_uid: &str, plan: &VolumePlan) -> Result<()> {
    for volume in &plan.volumes {
        match &volume.kind {
            VolumeKind::EmptyDir
            | VolumeKind::Projected
            | VolumeKind::Unsupported(_)
            | VolumeKind::Claim => create_dir(&volume.path)?,
            VolumeKind::HostPath { type_ } => check_host_path(&volume.path, type_)?,
        }
    }
    for (container, mounts) in &plan.mounts {
        let tree = container_root(root, pod_uid, container);
        create_dir(&tree)?;
        for mount in mounts {
            // A subPath inside the pod's own volumes is created; a node path is left as it is,
            // and so is a projected volume's subPath (a file the pod worker writes).
            let projected = plan
                .volumes
                .iter()
                .any(|v| v.name == mount.volume && v.kind == VolumeKind::Projected);
            if mount.host_path.starts_with(&plan.pod_dir) && !projected {
                create_dir(&mount.host_path)?;
            }
            let Some(relative) = relative_mount_path(&mount.mount_path) else {
                continue;
            };
            link(&mount.host_path, &tree.join(relative))?;
        }
    }
    Ok(())
}

/// Removes everything [`setup`] made for the pod: emptyDirs and container trees. hostPaths are
/// left alone (removal does not follow the symlinks).
pub fn teardown(root: &Path, pod_uid: &str) -> Result<()> {
    let dir = pod_dir(root, pod_uid);
    for sub in ["volumes", "containers"] {
        let path = dir.join(sub);
        match std::fs::remove_dir_all(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(Error::Io { path, source }),
        }
    }
    Ok(())
}

fn create_dir(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).map_err(|source| Error::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// (Re)creates `at` as a symlink to `target`.
fn link(target: &Path, at: &Path) -> Result<()> {
    let io = |source| Error::Io {
        path: at.to_path_buf(),
        source,
    };
    if let Some(parent) = at.parent() {
        std::fs::create_dir_all(parent).map_err(io)?;
    }
    if std::fs::symlink_metadata(at).is_ok() {
        std::fs::remove_file(at).map_err(io)?;
    }
    std::os::unix::fs::symlink(target, at).map_err(io)
}

/// Applies hostPath `type` semantics (`pkg/volume/hostpath/host_path.go`, `checkType`).
fn check_host_path(path: &Path, type_: &str) -> Result<()> {
    let fail = |message: &str| {
        Err(Error::HostPath {
            path: path.to_path_buf(),
            message: message.to_string(),
        })
    };
    match type_ {
        "DirectoryOrCreate" => create_dir(path),
        "Directory" if !path.is_dir() => fail("is not a directory"),
        "FileOrCreate" if !path.exists() => {
            if let Some(parent) = path.parent() {
                create_dir(parent)?;
            }
            std::fs::File::create(path)
                .map(drop)
                .map_err(|source| Error::Io {
                    path: path.to_path_buf(),
                    source,
                })
        }
        "File" if !path.is_file() => fail("is not a file"),
        "Socket" | "CharDevice" | "BlockDevice" if !path.exists() => fail("does not exist"),
        _ => Ok(()),
    }
}

#[cfg(test)]
#[path = "volumes_tests.rs"]
mod tests;
