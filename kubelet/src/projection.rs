//! The files of configMap, secret, downwardAPI and projected volumes, computed from the pod.
//!
//! Kubernetes counterpart: `MakePayload` in `pkg/volume/configmap/configmap.go` and
//! `pkg/volume/secret/secret.go`, `CollectData` in `pkg/volume/downwardapi/downwardapi.go` and
//! `collectData` in `pkg/volume/projected/projected.go`. Each key becomes a file (or only the
//! listed `items`, at their `path`), with mode `items[].mode`, else `defaultMode`, else 0644. A
//! missing ConfigMap or Secret that is not `optional` is an error (the pod waits in
//! `ContainerCreating` with a `FailedMount` event); an optional one gives no files.
//! `atomic_writer.rs` then writes the payload. Pure.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{DownwardAPIVolumeFile, KeyToPath, Pod, Volume};

use crate::downward::{field_value, resource_value, PodFacts};
use crate::sources::ObjectLookup;

/// Upstream's `ConfigMapVolumeSourceDefaultMode` (and the secret, downwardAPI, projected ones).
pub const DEFAULT_MODE: u32 = 0o644;

/// One file of a volume.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileProjection {
    /// The content.
    pub data: Vec<u8>,
    /// Its permission bits.
    pub mode: u32,
}

/// Relative path → file.
pub type Payload = BTreeMap<String, FileProjection>;

/// Whether minik computes this volume's files (the four kinds of this module).
pub fn is_projected(volume: &Volume) -> bool {
    volume.config_map.is_some()
        || volume.secret.is_some()
        || volume.downward_api.is_some()
        || volume.projected.is_some()
}

/// The files of `volume`, or the `MountVolume.SetUp` error.
pub fn payload(
    pod: &Pod,
    volume: &Volume,
    facts: &PodFacts,
    lookup: &dyn ObjectLookup,
) -> Result<Payload, String> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let mode = |m: Option<i32>| m.map_or(DEFAULT_MODE, |m| m as u32);
    let mut out = Payload::new();
    if let Some(source) = &volume.config_map {
        let default = mode(source.default_mode);
        let files = config_map_files(namespace, &source.name, source.optional, lookup)?;
        project(
            files,
            source.items.as_deref(),
            default,
            "configmap",
            source.optional,
            &mut out,
        )?;
    } else if let Some(source) = &volume.secret {
        let default = mode(source.default_mode);
        let name = source.secret_name.clone().unwrap_or_default();
        let files = secret_files(namespace, &name, source.optional, lookup)?;
        project(
            files,
            source.items.as_deref(),
            default,
            "secret",
            source.optional,
            &mut out,
        )?;
    } else if let Some(source) = &volume.downward_api {
        let default = mode(source.default_mode);
        downward_files(pod, source.items.as_deref(), default, facts, &mut out)?;
    } else if let Some(source) = &volume.projected {
        let default = mode(source.default_mode);
        for projection in source.sources.iter().flatten() {
            if let Some(cm) = &projection.config_map {
                let files = config_map_files(namespace, &cm.name, cm.optional, lookup)?;
                project(
                    files,
                    cm.items.as_deref(),
                    default,
                    "configmap",
                    cm.optional,
                    &mut out,
                )?;
            }
            if let Some(secret) = &projection.secret {
                let files = secret_files(namespace, &secret.name, secret.optional, lookup)?;
                project(
                    files,
                    secret.items.as_deref(),
                    default,
                    "secret",
                    secret.optional,
                    &mut out,
                )?;
            }
            if let Some(downward) = &projection.downward_api {
                downward_files(pod, downward.items.as_deref(), default, facts, &mut out)?;
            }
        }
    }
    Ok(out)
}

fn config_map_files(
    namespace: &str,
    name: &str,
    optional: Option<bool>,
    lookup: &dyn ObjectLookup,
) -> Result<BTreeMap<String, Vec<u8>>, String> {
    match lookup.config_map(namespace, name)? {
        Some(map) => {
            let mut files: BTreeMap<String, Vec<u8>> = map
                .data
                .clone()
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, v.into_bytes()))
                .collect();
            for (key, value) in map.binary_data.clone().unwrap_or_default() {
                files.insert(key, value.0);
            }
            Ok(files)
        }
        None if optional == Some(true) => Ok(BTreeMap::new()),
        None => Err(format!("configmap \"{name}\" not found")),
    }
}

fn secret_files(
    namespace: &str,
    name: &str,
    optional: Option<bool>,
    lookup: &dyn ObjectLookup,
) -> Result<BTreeMap<String, Vec<u8>>, String> {
    match lookup.secret(namespace, name)? {
        Some(secret) => Ok(secret
            .data
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect()),
        None if optional == Some(true) => Ok(BTreeMap::new()),
        None => Err(format!("secret \"{name}\" not found")),
    }
}

/// Every key at its own name, or only `items` at their paths (a listed key that is missing is an
/// error unless the source is optional).
fn project(
    files: BTreeMap<String, Vec<u8>>,
    items: Option<&[KeyToPath]>,
    default: u32,
    kind: &str,
    optional: Option<bool>,
    out: &mut Payload,
) -> Result<(), String> {
    let Some(items) = items.filter(|i| !i.is_empty()) else {
        for (key, data) in files {
            out.insert(
                key,
                FileProjection {
                    data,
                    mode: default,
                },
            );
        }
        return Ok(());
    };
    for item in items {
        let Some(data) = files.get(&item.key) else {
            if optional == Some(true) {
                continue;
            }
            return Err(format!(
                "{kind} references non-existent {} key: {}",
                if kind == "secret" { "secret" } else { "config" },
                item.key
            ));
        };
        let mode = item.mode.map_or(default, |m| m as u32);
        out.insert(
            item.path.clone(),
            FileProjection {
                data: data.clone(),
                mode,
            },
        );
    }
    Ok(())
}

fn downward_files(
    pod: &Pod,
    items: Option<&[DownwardAPIVolumeFile]>,
    default: u32,
    facts: &PodFacts,
    out: &mut Payload,
) -> Result<(), String> {
    for item in items.into_iter().flatten() {
        let value = if let Some(field) = &item.field_ref {
            field_value(pod, &field.field_path, facts)?
        } else if let Some(resource) = &item.resource_field_ref {
            let container = resource.container_name.clone().unwrap_or_default();
            resource_value(pod, &container, resource, facts)?
        } else {
            continue;
        };
        let mode = item.mode.map_or(default, |m| m as u32);
        out.insert(
            item.path.clone(),
            FileProjection {
                data: value.into_bytes(),
                mode,
            },
        );
    }
    Ok(())
}

#[cfg(test)]
#[path = "projection_tests.rs"]
mod tests;
