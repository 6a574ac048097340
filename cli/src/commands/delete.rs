//! `minik delete KIND NAME… [--grace-period N] [--force] [--now] [--wait=true|false]
//! [--cascade=background|foreground|orphan]`.
//!
//! Kubernetes counterpart: `kubectl delete` (`staging/src/k8s.io/kubectl/pkg/cmd/delete/delete.go`).
//! The flags become `DeleteOptions.gracePeriodSeconds` by kubectl's rules
//! (docs/kubernetes-rules.md#d7): `--now` is 1; `--grace-period=0` without `--force` is sent as 1,
//! "to prevent accidental data loss"; `--force` (alone or with `--grace-period=0`) sends 0, prints
//! a warning and says `force deleted`. With `--wait` (the default), minik returns once the object
//! is gone, which for a running pod means: after the kubelet stopped its containers and removed it.
//! The wait is a watch with `fieldSelector=metadata.name=NAME` from the resourceVersion of a list,
//! never a polling loop. `--cascade` becomes `propagationPolicy` (kubectl's `GetCascadingStrategy`):
//! with `foreground` the owner stays (with the `foregroundDeletion` finalizer) until the garbage
//! collector removed its dependents, so `--wait` returns only once they are gone too.

use std::time::Duration;

use anyhow::bail;
use futures::StreamExt;
use reqwest::Method;
use serde_json::{json, Value};

use minik_api::{ResourceInfo, WatchEvent};
use minik_client::Client;

use super::resources::{collection_path, object_path, targets, with_query, GlobalFlags};
use crate::output::{self, Reported};
use crate::printers::{kind_prefix, name_of};

/// Flags of `minik delete`.
#[derive(clap::Args, Debug)]
pub struct DeleteArgs {
    /// KIND NAME…, or KIND/NAME…
    #[arg(value_name = "KIND [NAME]", required_unless_present = "filenames")]
    pub args: Vec<String>,
    /// Delete the objects of these manifests (files, directories, `-`).
    #[arg(short = 'f', long = "filename")]
    pub filenames: Vec<String>,
    /// Seconds the object's owner has to shut it down (-1: the object's own default).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub grace_period: i64,
    /// Remove the object at once, without waiting for the kubelet to confirm the processes stopped.
    #[arg(long)]
    pub force: bool,
    /// Shorthand for --grace-period=1.
    #[arg(long)]
    pub now: bool,
    /// Return only once the objects are gone.
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub wait: bool,
    /// Give up waiting after this long (`0s`: wait as long as it takes).
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
    /// Treat a missing object as deleted.
    #[arg(long)]
    pub ignore_not_found: bool,
    /// Delete every object of the kind matching this label selector.
    #[arg(short = 'l', long)]
    pub selector: Option<String>,
    /// Delete every object of the kind.
    #[arg(long)]
    pub all: bool,
    /// What happens to the objects' dependents (pods of a ReplicaSet, ReplicaSets of a
    /// Deployment): `background` (deleted after the owner), `foreground` (before it), `orphan`
    /// (left running).
    #[arg(long, default_value = "background", num_args = 0..=1, default_missing_value = "background")]
    pub cascade: String,
}

/// The `propagationPolicy` for `--cascade` (kubectl still takes the deprecated `true`/`false`).
pub fn propagation_policy(cascade: &str) -> anyhow::Result<&'static str> {
    match cascade {
        "background" | "true" => Ok("Background"),
        "foreground" => Ok("Foreground"),
        "orphan" | "false" => Ok("Orphan"),
        other => bail!(
            "invalid cascade value ({other}). Must be \"background\", \"foreground\", or \"orphan\""
        ),
    }
}

/// The `gracePeriodSeconds` kubectl sends for these flags, or `None` for the server's default.
pub fn grace_period(grace_period: i64, force: bool, now: bool) -> anyhow::Result<Option<i64>> {
    if now && grace_period >= 0 {
        bail!("--now and --grace-period cannot be specified together");
    }
    Ok(match (grace_period, force, now) {
        (_, _, true) => Some(1),
        (0, false, _) => Some(1),
        (g, true, _) if g < 0 => Some(0),
        (g, _, _) if g >= 0 => Some(g),
        _ => None,
    })
}

/// Runs `minik delete`.
pub async fn delete(args: DeleteArgs, flags: &GlobalFlags) -> anyhow::Result<()> {
    let grace = grace_period(args.grace_period, args.force, args.now)?;
    let policy = propagation_policy(&args.cascade)?;
    let client = flags.client()?;
    let objects = resolve(&client, &args, flags.namespace()).await?;
    let force = grace == Some(0);
    if force {
        eprintln!("Warning: Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely.");
    }
    let verb = if force { "force deleted" } else { "deleted" };
    let mut body =
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": policy});
    if let Some(grace) = grace {
        body["gracePeriodSeconds"] = json!(grace);
    }
    let mut failed = false;
    let mut pending = Vec::new();
    for (info, namespace, name) in objects {
        let path = object_path(info, &namespace, &name);
        match client
            .request_json(Method::DELETE, &path, Some(&body))
            .await
        {
            Ok(answer) if args.wait && !force => {
                pending.push((info, namespace, name, uid_of(&answer)))
            }
            Ok(_) => println!("{} \"{name}\" {verb}", kind_prefix(info)),
            Err(error) if error.is_not_found() && args.ignore_not_found => {}
            Err(error) if error.is_not_found() => {
                eprintln!("{}", output::error_line(&error.into()));
                failed = true;
            }
            Err(error) => return Err(error.into()),
        }
    }
    for (info, namespace, name, uid) in pending {
        let gone = wait_until_gone(&client, info, &namespace, &name, uid.as_deref());
        if args.timeout.is_zero() {
            gone.await?;
        } else if tokio::time::timeout(args.timeout, gone).await.is_err() {
            bail!(
                "timed out waiting for the condition on {}/{name}",
                info.plural
            );
        }
        println!("{} \"{name}\" {verb}", kind_prefix(info));
    }
    if failed {
        return Err(Reported.into());
    }
    Ok(())
}

/// What to delete: (kind, namespace, name) from manifests, names, or a list with `-l` / `--all`.
async fn resolve(
    client: &Client,
    args: &DeleteArgs,
    namespace: &str,
) -> anyhow::Result<Vec<(&'static ResourceInfo, String, String)>> {
    if !args.filenames.is_empty() {
        return from_manifests(&args.filenames, namespace);
    }
    super::discovered::learn_unknown_kinds(client, &args.args).await;
    let targets = targets(&args.args)?;
    let mut objects = Vec::new();
    for (info, name) in targets {
        match name {
            Some(name) => objects.push((info, namespace.to_string(), name)),
            None if args.selector.is_some() || args.all => {
                let path = with_query(
                    &collection_path(info, Some(namespace)),
                    &[("labelSelector", args.selector.as_deref())],
                );
                let list = client.request_json(Method::GET, &path, None).await?;
                let items = list
                    .get("items")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                objects.extend(
                    items
                        .iter()
                        .map(|item| (info, namespace.to_string(), name_of(item).to_string())),
                );
            }
            None => bail!("resource(s) were provided, but no name was specified"),
        }
    }
    if objects.is_empty() && (args.selector.is_some() || args.all) {
        eprintln!("No resources found");
    }
    Ok(objects)
}

/// The objects named in manifests (`delete -f`).
fn from_manifests(
    filenames: &[String],
    default_namespace: &str,
) -> anyhow::Result<Vec<(&'static ResourceInfo, String, String)>> {
    let mut objects = Vec::new();
    for manifest in crate::manifest::read_all(filenames)? {
        let field = |pointer: &str| {
            manifest
                .object
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let Some(info) = minik_api::resource::by_kind(&field("/apiVersion"), &field("/kind"))
        else {
            bail!(
                "no matches for kind {:?} in version {:?} (from {:?})",
                field("/kind"),
                field("/apiVersion"),
                manifest.source
            );
        };
        let namespace = Some(field("/metadata/namespace"))
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| default_namespace.to_string());
        objects.push((info, namespace, field("/metadata/name")));
    }
    Ok(objects)
}

fn uid_of(object: &Value) -> Option<String> {
    // A `Status` answer means the object is already gone: nothing to wait for.
    if object.get("kind").and_then(Value::as_str) == Some("Status") {
        return None;
    }
    object
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// Waits until the object `name` (with this uid) no longer exists: list with a name field
/// selector, then watch from the list's resourceVersion until DELETED (re-listing if the watch ends).
pub async fn wait_until_gone(
    client: &Client,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    uid: Option<&str>,
) -> anyhow::Result<()> {
    let Some(uid) = uid else { return Ok(()) };
    let selector = format!("metadata.name={name}");
    let collection = collection_path(info, Some(namespace));
    loop {
        let list = client
            .request_json(
                Method::GET,
                &with_query(&collection, &[("fieldSelector", Some(&selector))]),
                None,
            )
            .await?;
        let still_there = list
            .get("items")
            .and_then(Value::as_array)
            .is_some_and(|items| items.iter().any(|item| has_uid(item, uid)));
        if !still_there {
            return Ok(());
        }
        let resource_version = list
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or("");
        let path = with_query(
            &collection,
            &[
                ("watch", Some("true")),
                ("fieldSelector", Some(&selector)),
                ("resourceVersion", Some(resource_version)),
                ("allowWatchBookmarks", Some("true")),
            ],
        );
        let mut events = client.watch_raw::<Value>(&path).await?;
        while let Some(event) = events.next().await {
            match event? {
                WatchEvent::Deleted(object) if has_uid(&object, uid) => return Ok(()),
                // A new object with the same name means ours is gone.
                WatchEvent::Added(object) if !has_uid(&object, uid) => return Ok(()),
                WatchEvent::Error(status) if status.code == Some(410) => break,
                WatchEvent::Error(status) => return Err(minik_client::Error::Api(status).into()),
                _ => {}
            }
        }
    }
}

fn has_uid(object: &Value, uid: &str) -> bool {
    object.pointer("/metadata/uid").and_then(Value::as_str) == Some(uid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grace_period_follows_kubectls_rules() {
        assert_eq!(grace_period(-1, false, false).unwrap(), None);
        assert_eq!(grace_period(5, false, false).unwrap(), Some(5));
        assert_eq!(
            grace_period(0, false, false).unwrap(),
            Some(1),
            "--grace-period=0 alone is sent as 1"
        );
        assert_eq!(grace_period(0, true, false).unwrap(), Some(0));
        assert_eq!(
            grace_period(-1, true, false).unwrap(),
            Some(0),
            "--force alone means 0"
        );
        assert_eq!(grace_period(7, true, false).unwrap(), Some(7));
        assert_eq!(
            grace_period(-1, false, true).unwrap(),
            Some(1),
            "--now is 1"
        );
        assert!(grace_period(3, false, true).is_err());
    }

    #[test]
    fn cascade_names_the_propagation_policy() {
        assert_eq!(propagation_policy("background").unwrap(), "Background");
        assert_eq!(propagation_policy("foreground").unwrap(), "Foreground");
        assert_eq!(propagation_policy("orphan").unwrap(), "Orphan");
        assert_eq!(propagation_policy("false").unwrap(), "Orphan");
        assert_eq!(
            propagation_policy("sideways").unwrap_err().to_string(),
            "invalid cascade value (sideways). Must be \"background\", \"foreground\", or \"orphan\""
        );
    }
}
