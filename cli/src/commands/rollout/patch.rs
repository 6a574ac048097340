//! `rollout pause`, `resume` and `restart`: one patch of the Deployment's spec each.
//!
//! Kubernetes counterpart: `defaultObjectPauser`, `defaultObjectResumer` and
//! `defaultObjectRestarter` (`pkg/polymorphichelpers/`): pause sets `spec.paused`, resume clears it
//! (refusing a no-op with "is already paused" / "is not paused"), restart stamps the pod template
//! with `kubectl.kubernetes.io/restartedAt: <RFC 3339 now>`, which changes the template and so
//! starts a rollout (refused on a paused Deployment). kubectl sends strategic merge patches; these
//! touch only maps and scalars, where strategic and JSON merge patches agree.

use anyhow::bail;
use jiff::Timestamp;
use serde_json::{json, Value};

use minik_api::apps::Deployment;
use minik_client::{Api, Patch};

use super::named;

/// The template annotation `rollout restart` sets.
pub const RESTARTED_AT: &str = "kubectl.kubernetes.io/restartedAt";

/// Runs `rollout pause`.
pub async fn pause(api: &Api<Deployment>, name: &str) -> anyhow::Result<()> {
    if is_paused(&api.get(name).await?) {
        bail!("deployments.apps \"{name}\" is already paused");
    }
    api.patch(name, &Patch::Strategic(json!({"spec": {"paused": true}})))
        .await?;
    println!("{} paused", named(name));
    Ok(())
}

/// Runs `rollout resume`.
pub async fn resume(api: &Api<Deployment>, name: &str) -> anyhow::Result<()> {
    if !is_paused(&api.get(name).await?) {
        bail!("deployments.apps \"{name}\" is not paused");
    }
    // `paused: false` is omitted from kubectl's object, so its computed patch deletes the field.
    api.patch(name, &Patch::Strategic(json!({"spec": {"paused": null}})))
        .await?;
    println!("{} resumed", named(name));
    Ok(())
}

/// Runs `rollout restart`.
pub async fn restart(api: &Api<Deployment>, name: &str) -> anyhow::Result<()> {
    if is_paused(&api.get(name).await?) {
        bail!("deployments.apps \"{name}\" can't restart paused deployment (run rollout resume first)");
    }
    api.patch(name, &Patch::Strategic(restart_patch(Timestamp::now())))
        .await?;
    println!("{} restarted", named(name));
    Ok(())
}

/// The restart patch for `now`, at second precision as Go's `time.RFC3339`.
pub fn restart_patch(now: Timestamp) -> Value {
    let at = now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    json!({"spec": {"template": {"metadata": {"annotations": {RESTARTED_AT: at}}}}})
}

fn is_paused(deployment: &Deployment) -> bool {
    deployment
        .spec
        .as_ref()
        .and_then(|s| s.paused)
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_stamps_the_template_with_an_rfc3339_time() {
        let now: Timestamp = "2026-11-25T15:04:05.123Z".parse().unwrap();
        assert_eq!(
            restart_patch(now),
            json!({"spec": {"template": {"metadata": {"annotations": {
                "kubectl.kubernetes.io/restartedAt": "2026-11-25T15:04:05Z"}}}}})
        );
    }
}
