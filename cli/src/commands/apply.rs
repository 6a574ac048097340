//! `minik apply -f FILE|DIR|-`: create each object, or bring the existing one in line with the file.
//!
//! Kubernetes counterpart: `kubectl apply` (client-side apply,
//! `staging/src/k8s.io/kubectl/pkg/cmd/apply/{apply.go,patcher.go}`). For each object: GET it; if
//! it is absent, POST it (`pod/web created`); if it exists, merge the file into the live object and
//! PUT the result with the live `resourceVersion` (`pod/web configured`), or send nothing when the
//! merge changes nothing (`pod/web unchanged`). A 409 Conflict (someone wrote in between) is
//! retried up to 5 times, as kubectl's `maxPatchRetry`. Whether a change is allowed (a pod's spec is
//! mostly immutable) is the apiserver's call: its 422 is printed as kubectl prints it.
//!
//! minik simplifies: no `last-applied-configuration` annotation, so a field removed from the file is
//! not removed from the object (kubectl's three-way merge would); lists of containers, ports, env …
//! merge by their Kubernetes merge key and otherwise take the file's order and membership.

use anyhow::{bail, Context};
use reqwest::Method;
use serde_json::{Map, Value};

use minik_api::resource::by_kind;
use minik_client::Client;

use super::resources::{collection_path, object_path, GlobalFlags};
use crate::manifest::{self, Manifest};
use crate::output::{self, Reported};
use crate::printers::kind_prefix;

/// Flags of `minik apply`.
#[derive(clap::Args, Debug)]
pub struct ApplyArgs {
    /// A manifest file, a directory of them, or `-` for stdin (repeatable).
    #[arg(short = 'f', long = "filename", required = true)]
    pub filenames: Vec<String>,
}

/// Runs `minik apply`: every object is tried; failures are printed and make the exit code 1.
pub async fn apply(args: ApplyArgs, flags: &GlobalFlags) -> anyhow::Result<()> {
    let manifests = manifest::read_all(&args.filenames)?;
    let client = flags.client()?;
    let mut failed = false;
    for manifest in &manifests {
        match apply_one(&client, manifest, flags.namespace()).await {
            Ok(line) => println!("{line}"),
            Err(error) if is_connect(&error) => return Err(error),
            Err(error) => {
                eprintln!("{}", output::error_line(&error));
                failed = true;
            }
        }
    }
    if failed {
        return Err(Reported.into());
    }
    Ok(())
}

fn is_connect(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<minik_client::Error>()
            .is_some_and(minik_client::Error::is_connect)
    })
}

/// Applies one object and returns the line to print (`pod/web created`).
async fn apply_one(
    client: &Client,
    manifest: &Manifest,
    default_namespace: &str,
) -> anyhow::Result<String> {
    let object = &manifest.object;
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    if kind.is_empty() || api_version.is_empty() {
        bail!(
            "error validating {:?}: apiVersion and kind must be set",
            manifest.source
        );
    }
    let Some(info) = by_kind(api_version, kind) else {
        bail!("resource mapping not found for name: {name:?} from {:?}: no matches for kind {kind:?} in version {api_version:?}", manifest.source);
    };
    if name.is_empty() {
        bail!("error when retrieving current configuration of {kind} from {:?}: resource name may not be empty", manifest.source);
    }
    let namespace = object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or(default_namespace)
        .to_string();
    let desired = clean_manifest(object, info.namespaced.then_some(namespace.as_str()));
    let line = |outcome: &str| format!("{}/{name} {outcome}", kind_prefix(info));
    let path = object_path(info, &namespace, name);
    for _attempt in 0..5 {
        let live = match client.request_json(Method::GET, &path, None).await {
            Ok(live) => live,
            Err(error) if error.is_not_found() => {
                client
                    .request_json(
                        Method::POST,
                        &collection_path(info, Some(&namespace)),
                        Some(&desired),
                    )
                    .await
                    .with_context(|| format!("error when creating {:?}", manifest.source))?;
                return Ok(line("created"));
            }
            Err(error) => return Err(error.into()),
        };
        let merged = merge(&live, &desired);
        if merged == live {
            return Ok(line("unchanged"));
        }
        match client.request_json(Method::PUT, &path, Some(&merged)).await {
            Ok(_) => return Ok(line("configured")),
            Err(error) if error.is_conflict() => continue,
            Err(error) => {
                return Err(error)
                    .with_context(|| format!("error when applying {:?}", manifest.source))
            }
        }
    }
    bail!(
        "error when applying {:?}: the object kept changing (5 conflicts)",
        manifest.source
    )
}

/// The manifest without what only the server may set (status, uid, resourceVersion …), with its namespace.
fn clean_manifest(object: &Value, namespace: Option<&str>) -> Value {
    let mut object = object.clone();
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
        let metadata = map
            .entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(metadata) = metadata.as_object_mut() {
            for field in [
                "resourceVersion",
                "uid",
                "creationTimestamp",
                "generation",
                "managedFields",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "selfLink",
            ] {
                metadata.remove(field);
            }
            if let Some(namespace) = namespace {
                metadata.insert("namespace".to_string(), Value::from(namespace));
            }
        }
    }
    object
}

/// The live object with the manifest's fields laid over it. Maps merge key by key (`null` removes
/// a key); lists whose elements have a merge key (containers by `name`, ports by `containerPort` or
/// `port`, mounts by `mountPath`) merge element by element in the manifest's order; any other value
/// is the manifest's.
pub fn merge(live: &Value, manifest: &Value) -> Value {
    match (live, manifest) {
        (Value::Object(live_map), Value::Object(manifest_map)) => {
            let mut merged = live_map.clone();
            for (key, value) in manifest_map {
                match (value, live_map.get(key)) {
                    (Value::Null, _) => {
                        merged.remove(key);
                    }
                    (value, Some(live_value)) => {
                        merged.insert(key.clone(), merge(live_value, value));
                    }
                    (value, None) => {
                        merged.insert(key.clone(), value.clone());
                    }
                }
            }
            Value::Object(merged)
        }
        (Value::Array(live_items), Value::Array(manifest_items)) => match merge_key(manifest_items)
        {
            Some(key) => Value::Array(
                manifest_items
                    .iter()
                    .map(|item| {
                        match live_items
                            .iter()
                            .find(|live_item| live_item.get(key) == item.get(key))
                        {
                            Some(live_item) => merge(live_item, item),
                            None => item.clone(),
                        }
                    })
                    .collect(),
            ),
            None => manifest.clone(),
        },
        _ => manifest.clone(),
    }
}

/// The strategic-merge key of a list, guessed from its elements
/// (docs/real-clients.md#strategic-merge).
fn merge_key(items: &[Value]) -> Option<&'static str> {
    ["name", "containerPort", "mountPath", "port", "ip"]
        .into_iter()
        .find(|key| !items.is_empty() && items.iter().all(|item| item.get(*key).is_some()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn live_pod() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "web", "namespace": "default", "uid": "u1", "resourceVersion": "7", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx", "imagePullPolicy": "Always",
                                     "ports": [{"containerPort": 80, "protocol": "TCP"}]}],
                     "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "nodeName": "node-1"},
            "status": {"phase": "Running"},
        })
    }

    fn manifest(image: &str) -> Value {
        clean_manifest(
            &json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": image, "ports": [{"containerPort": 80}]}]}}),
            Some("default"),
        )
    }

    #[test]
    fn an_unchanged_manifest_merges_into_the_live_object_unchanged() {
        assert_eq!(merge(&live_pod(), &manifest("nginx")), live_pod());
    }

    #[test]
    fn a_changed_image_keeps_server_defaults_and_the_resource_version() {
        let merged = merge(&live_pod(), &manifest("nginx:1.27"));
        assert_eq!(merged["spec"]["containers"][0]["image"], "nginx:1.27");
        assert_eq!(merged["spec"]["containers"][0]["imagePullPolicy"], "Always");
        assert_eq!(
            merged["spec"]["containers"][0]["ports"][0]["protocol"],
            "TCP"
        );
        assert_eq!(merged["metadata"]["resourceVersion"], "7");
        assert_eq!(merged["spec"]["nodeName"], "node-1");
    }

    #[test]
    fn null_removes_and_lists_take_the_manifests_membership() {
        let live = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"containers": [{"name": "a"}, {"name": "b"}], "args": ["x", "y"]}});
        let patch = json!({"metadata": {"labels": {"b": null}}, "spec": {"containers": [{"name": "b", "image": "i"}], "args": ["z"]}});
        let merged = merge(&live, &patch);
        assert_eq!(
            merged,
            json!({"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "b", "image": "i"}], "args": ["z"]}})
        );
    }

    #[test]
    fn server_only_fields_are_dropped_from_the_manifest() {
        let cleaned = clean_manifest(&live_pod(), Some("other"));
        assert!(cleaned.get("status").is_none());
        assert!(
            cleaned["metadata"].get("resourceVersion").is_none()
                && cleaned["metadata"].get("uid").is_none()
        );
        assert_eq!(cleaned["metadata"]["namespace"], "other");
    }
}
