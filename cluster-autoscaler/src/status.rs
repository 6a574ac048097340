//! The `cluster-autoscaler-status` ConfigMap in `kube-system`: what the last iteration saw.
//!
//! Kubernetes counterpart: `clusterstate/utils/status.go` (`WriteStatusConfigMap`): a ConfigMap
//! whose `status` key is a YAML text of the cluster-wide health, scale-up and scale-down state,
//! and the annotation `cluster-autoscaler.kubernetes.io/last-updated`. minik writes the same
//! shape, smaller: node counts, the last iteration's activity.

use k8s_openapi::api::core::v1::ConfigMap;
use minik_client::{Api, Client, Patch};
use serde_json::json;
use tracing::debug;

use crate::autoscaler::View;
use crate::simulate;

/// The ConfigMap's name and namespace.
pub const NAME: &str = "cluster-autoscaler-status";
/// Where it lives.
pub const NAMESPACE: &str = "kube-system";

/// What one iteration did.
#[derive(Debug, Default)]
pub struct Activity {
    /// Pods the scheduler found no node for.
    pub unschedulable: usize,
    /// The group's nodes started but not Ready yet.
    pub upcoming: usize,
    /// Nodes asked of the group this iteration.
    pub scaled_up: usize,
    /// Nodes under the utilization threshold.
    pub candidates: usize,
    /// The node removed this iteration.
    pub removed: Option<String>,
}

/// The `status` text (YAML, as upstream's).
pub fn render(view: &View, activity: &Activity, now: &str) -> String {
    let ready = view.nodes.iter().filter(|n| simulate::is_ready(n)).count();
    let scale_up = if activity.scaled_up > 0 || activity.upcoming > 0 {
        "InProgress"
    } else if activity.unschedulable > 0 {
        "NoActivity (pending pods fit on no new node, or max nodes reached)"
    } else {
        "NoActivity"
    };
    let scale_down = match (&activity.removed, activity.candidates) {
        (Some(node), _) => format!("InProgress (removing {node})"),
        (None, 0) => "NoCandidates".to_string(),
        (None, n) => format!("CandidatesPresent ({n})"),
    };
    format!(
        "time: {now}\nautoscalerStatus: Running\nclusterWide:\n  health:\n    status: Healthy\n    \
         nodeCounts:\n      registered: {{total: {}, ready: {ready}}}\n      upcoming: {}\n  \
         scaleUp:\n    status: {scale_up}\n    unschedulablePods: {}\n  scaleDown:\n    status: {scale_down}\n",
        view.nodes.len(),
        activity.upcoming,
        activity.unschedulable,
    )
}

/// Creates or updates the ConfigMap; a failure only logs (the status is informative).
pub(crate) async fn write(client: &Client, view: &View, activity: &Activity) {
    let now = jiff::Timestamp::now().to_string();
    let text = render(view, activity, &now);
    let api = Api::<ConfigMap>::namespaced(client.clone(), NAMESPACE);
    let annotations = json!({ "cluster-autoscaler.kubernetes.io/last-updated": now });
    let patch = Patch::Merge(json!({
        "metadata": { "annotations": annotations },
        "data": { "status": text },
    }));
    let result = match api.patch(NAME, &patch).await {
        Err(error) if error.is_not_found() => {
            let object: ConfigMap = serde_json::from_value(json!({
                "metadata": { "name": NAME, "namespace": NAMESPACE, "annotations": annotations },
                "data": { "status": text },
            }))
            .expect("a ConfigMap");
            api.create(&object).await.map(|_| ())
        }
        other => other.map(|_| ()),
    };
    if let Err(error) = result {
        debug!(%error, "could not write the status ConfigMap");
    }
}
