//! `rollout status`: the Deployment's progress in kubectl's words, followed on a watch.
//!
//! Kubernetes counterpart: `DeploymentStatusViewer.Status` (`pkg/polymorphichelpers/rollout_status.go`)
//! for the messages and `watchtools.UntilWithSync` in `rollout_status.go` for the loop: list the one
//! Deployment (a name field selector), then watch from the list's resourceVersion, re-listing if
//! the watch ends or answers 410. kubectl prints a line for every event; minik skips a line equal
//! to the one just printed (a status write that changed nothing kubectl reports).

use std::time::Duration;

use anyhow::{anyhow, bail};
use futures::StreamExt;

use minik_api::apps::Deployment;
use minik_api::WatchEvent;
use minik_client::{Api, ListParams};

/// The Progressing condition's reason once `progressDeadlineSeconds` passed without progress.
const TIMED_OUT_REASON: &str = "ProgressDeadlineExceeded";

/// Where a rollout stands: a message, and whether it is done.
#[derive(Debug, PartialEq, Eq)]
pub struct Progress {
    pub message: String,
    pub done: bool,
}

/// kubectl's status of a Deployment, or its error once the progress deadline is exceeded.
pub fn deployment_status(deployment: &Deployment) -> anyhow::Result<Progress> {
    let name = deployment.metadata.name.clone().unwrap_or_default();
    let generation = deployment.metadata.generation.unwrap_or(0);
    let status = deployment.status.clone().unwrap_or_default();
    let waiting = |message: String| Progress {
        message,
        done: false,
    };
    // The controller has not seen the latest spec yet: its counts describe an older one.
    if generation > status.observed_generation.unwrap_or(0) {
        return Ok(waiting(
            "Waiting for deployment spec update to be observed...".to_string(),
        ));
    }
    let progressing = status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "Progressing");
    if progressing.is_some_and(|c| c.reason.as_deref() == Some(TIMED_OUT_REASON)) {
        bail!("deployment \"{name}\" exceeded its progress deadline");
    }
    let desired = deployment.spec.as_ref().and_then(|s| s.replicas);
    let updated = status.updated_replicas.unwrap_or(0);
    let total = status.replicas.unwrap_or(0);
    let available = status.available_replicas.unwrap_or(0);
    if let Some(desired) = desired.filter(|&d| updated < d) {
        return Ok(waiting(format!("Waiting for deployment \"{name}\" rollout to finish: {updated} out of {desired} new replicas have been updated...")));
    }
    if total > updated {
        return Ok(waiting(format!("Waiting for deployment \"{name}\" rollout to finish: {} old replicas are pending termination...", total - updated)));
    }
    if available < updated {
        return Ok(waiting(format!("Waiting for deployment \"{name}\" rollout to finish: {available} of {updated} updated replicas are available...")));
    }
    Ok(Progress {
        message: format!("deployment \"{name}\" successfully rolled out"),
        done: true,
    })
}

/// Runs `rollout status`: prints each new status until the rollout is done.
pub async fn status(
    api: &Api<Deployment>,
    name: &str,
    watch: bool,
    timeout: Duration,
) -> anyhow::Result<()> {
    // A GET first, so that a missing Deployment is the server's NotFound, as with kubectl.
    api.get(name).await?;
    let follow = follow(api, name, watch);
    if timeout.is_zero() {
        return follow.await;
    }
    tokio::time::timeout(timeout, follow)
        .await
        .map_err(|_| anyhow!("timed out waiting for the condition"))?
}

async fn follow(api: &Api<Deployment>, name: &str, watch: bool) -> anyhow::Result<()> {
    let mut printer = Printer::default();
    let lp = ListParams::default().fields(&format!("metadata.name={name}"));
    loop {
        let list = api.list(&lp).await?;
        let Some(deployment) = list.items.first() else {
            bail!("object has been deleted");
        };
        if printer.show(deployment)? || !watch {
            return Ok(());
        }
        let resource_version = list.metadata.resource_version.clone().unwrap_or_default();
        let mut events = api
            .watch(&lp.clone().bookmarks(true), &resource_version)
            .await?;
        while let Some(event) = events.next().await {
            match event? {
                WatchEvent::Added(d) | WatchEvent::Modified(d) if printer.show(&d)? => {
                    return Ok(())
                }
                WatchEvent::Deleted(_) => bail!("object has been deleted"),
                // Too old a resourceVersion: list again.
                WatchEvent::Error(status) if status.code == Some(410) => break,
                WatchEvent::Error(status) => return Err(minik_client::Error::Api(status).into()),
                _ => {}
            }
        }
    }
}

/// Prints statuses, skipping a repeat of the last line.
#[derive(Default)]
struct Printer {
    last: Option<String>,
}

impl Printer {
    /// Prints the Deployment's status if it changed; true once the rollout is done.
    fn show(&mut self, deployment: &Deployment) -> anyhow::Result<bool> {
        let progress = deployment_status(deployment)?;
        if self.last.as_ref() != Some(&progress.message) {
            println!("{}", progress.message);
            self.last = Some(progress.message);
        }
        Ok(progress.done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment(generation: i64, observed: i64, status: serde_json::Value) -> Deployment {
        let mut status = status;
        status["observedGeneration"] = json!(observed);
        serde_json::from_value(json!({
            "metadata": {"name": "web", "generation": generation},
            "spec": {"replicas": 10, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}}},
            "status": status,
        }))
        .unwrap()
    }

    fn message(d: &Deployment) -> String {
        deployment_status(d).unwrap().message
    }

    #[test]
    fn each_stage_of_a_rollout_has_kubectls_message() {
        assert_eq!(
            message(&deployment(2, 1, json!({}))),
            "Waiting for deployment spec update to be observed..."
        );
        assert_eq!(
            message(&deployment(2, 2, json!({"updatedReplicas": 3, "replicas": 12}))),
            "Waiting for deployment \"web\" rollout to finish: 3 out of 10 new replicas have been updated..."
        );
        assert_eq!(
            message(&deployment(2, 2, json!({"updatedReplicas": 10, "replicas": 12}))),
            "Waiting for deployment \"web\" rollout to finish: 2 old replicas are pending termination..."
        );
        assert_eq!(
            message(&deployment(2, 2, json!({"updatedReplicas": 10, "replicas": 10, "availableReplicas": 2}))),
            "Waiting for deployment \"web\" rollout to finish: 2 of 10 updated replicas are available..."
        );
        let done = deployment_status(&deployment(
            2,
            2,
            json!({"updatedReplicas": 10, "replicas": 10, "availableReplicas": 10}),
        ))
        .unwrap();
        assert_eq!(
            (done.message.as_str(), done.done),
            ("deployment \"web\" successfully rolled out", true)
        );
    }

    #[test]
    fn a_missed_progress_deadline_is_an_error() {
        let stalled = deployment(
            1,
            1,
            json!({"conditions": [{"type": "Progressing", "status": "False", "reason": TIMED_OUT_REASON}]}),
        );
        assert_eq!(
            deployment_status(&stalled).unwrap_err().to_string(),
            "deployment \"web\" exceeded its progress deadline"
        );
    }
}
