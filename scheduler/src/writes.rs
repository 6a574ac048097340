//! Everything the scheduler writes to the cluster, behind one small trait so tests can record it.
//!
//! Kubernetes counterpart: the scheduler's `DefaultBinder` plugin (`pkg/scheduler/framework/plugins/
//! defaultbinder/default_binder.go`, a POST of a `Binding`), `updatePod` in `schedule_one.go` (the
//! `PodScheduled=False` condition on failure) and its event recorder (`Scheduled`,
//! `FailedScheduling`, reported by `default-scheduler`).
//!
//! minik simplifies: the condition is written with a JSON merge patch of the whole `conditions` list
//! (upstream uses a strategic merge patch keyed by `type`); nobody else writes the status of a pod
//! that is not bound yet, so the list the scheduler sends is the current one.

use std::future::Future;

use minik_api::core::{Pod, PodCondition};
use minik_client::events::{object_reference, Recorder};
use minik_client::{Api, Client, Patch};
use serde_json::json;

/// The component name on the scheduler's Events, as upstream.
pub const COMPONENT: &str = "default-scheduler";

/// The scheduler's writes. `Send + Sync + 'static` because binds run on their own tasks.
pub trait SchedulerWrites: Send + Sync + 'static {
    /// POST `pods/{name}/binding` assigning the pod to `node`.
    fn bind(&self, pod: &Pod, node: &str) -> impl Future<Output = minik_client::Result<()>> + Send;
    /// Sets the pod's `PodScheduled` condition to False, reason `Unschedulable`, with `message`.
    fn set_unschedulable(
        &self,
        pod: &Pod,
        message: &str,
    ) -> impl Future<Output = minik_client::Result<()>> + Send;
    /// Records an Event about the pod.
    fn event(
        &self,
        pod: &Pod,
        type_: &str,
        reason: &str,
        message: &str,
    ) -> impl Future<Output = minik_client::Result<()>> + Send;
}

/// The real writes, through the apiserver.
#[derive(Clone, Debug)]
pub struct ApiWrites {
    client: Client,
    recorder: Recorder,
}

impl ApiWrites {
    /// Writes through `client`, reporting Events as `default-scheduler`.
    pub fn new(client: Client) -> Self {
        let recorder = Recorder::new(client.clone(), COMPONENT, None);
        ApiWrites { client, recorder }
    }

    fn pods(&self, pod: &Pod) -> Api<Pod> {
        Api::namespaced(
            self.client.clone(),
            pod.metadata.namespace.as_deref().unwrap_or("default"),
        )
    }
}

fn name(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or_default()
}

impl SchedulerWrites for ApiWrites {
    async fn bind(&self, pod: &Pod, node: &str) -> minik_client::Result<()> {
        self.pods(pod).bind(name(pod), node).await
    }

    async fn set_unschedulable(&self, pod: &Pod, message: &str) -> minik_client::Result<()> {
        let Some(conditions) = unschedulable_conditions(pod, message) else {
            return Ok(());
        };
        let patch = Patch::Merge(json!({ "status": { "conditions": conditions } }));
        self.pods(pod)
            .patch_status(name(pod), &patch)
            .await
            .map(|_| ())
    }

    async fn event(
        &self,
        pod: &Pod,
        type_: &str,
        reason: &str,
        message: &str,
    ) -> minik_client::Result<()> {
        self.recorder
            .publish(&object_reference(pod), type_, reason, message)
            .await
    }
}

/// The pod's conditions with `PodScheduled` set to False/Unschedulable/`message`, or `None` when the
/// pod already says exactly that (upstream skips the write too, so a parked pod retried many times
/// does not rewrite its status each time).
pub fn unschedulable_conditions(pod: &Pod, message: &str) -> Option<Vec<PodCondition>> {
    let mut conditions = pod
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    let existing = conditions.iter().position(|c| c.type_ == "PodScheduled");
    if let Some(index) = existing {
        let current = &conditions[index];
        if current.status == "False"
            && current.reason.as_deref() == Some("Unschedulable")
            && current.message.as_deref() == Some(message)
        {
            return None;
        }
    }
    let transitioned = existing.is_none_or(|index| conditions[index].status != "False");
    let previous_transition =
        existing.and_then(|index| conditions[index].last_transition_time.clone());
    let condition = PodCondition {
        type_: "PodScheduled".to_string(),
        status: "False".to_string(),
        reason: Some("Unschedulable".to_string()),
        message: Some(message.to_string()),
        last_transition_time: if transitioned {
            Some(minik_api::now())
        } else {
            previous_transition
        },
        ..PodCondition::default()
    };
    match existing {
        Some(index) => conditions[index] = condition,
        None => conditions.push(condition),
    }
    Some(conditions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::pod;

    #[test]
    fn unschedulable_condition_is_added_then_not_rewritten() {
        let mut p = pod("web").build();
        let conditions =
            unschedulable_conditions(&p, "0/1 nodes are available: 1 Insufficient cpu.").unwrap();
        assert_eq!(conditions.len(), 1);
        assert_eq!(
            (
                conditions[0].status.as_str(),
                conditions[0].reason.as_deref()
            ),
            ("False", Some("Unschedulable"))
        );
        assert!(conditions[0].last_transition_time.is_some());
        p.status.as_mut().unwrap().conditions = Some(conditions);
        assert_eq!(
            unschedulable_conditions(&p, "0/1 nodes are available: 1 Insufficient cpu."),
            None
        );
        let changed =
            unschedulable_conditions(&p, "0/2 nodes are available: 2 Insufficient cpu.").unwrap();
        assert_eq!(
            changed.len(),
            1,
            "the condition is replaced, not duplicated"
        );
    }
}
