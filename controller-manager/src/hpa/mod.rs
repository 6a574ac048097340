//! The horizontal pod autoscaler: a workload's replicas follow its pods' CPU utilisation.
//!
//! Kubernetes counterpart: `pkg/controller/podautoscaler/horizontal.go` (`reconcileAutoscaler`).
//! Every `--horizontal-pod-autoscaler-sync-period` (15 s) each HorizontalPodAutoscaler is synced:
//!
//! 1. read the target's `scale` subresource (current replicas, the pod selector);
//! 2. list its pods (the shared pod informer) and their usage from `metrics.k8s.io` (through the
//!    apiserver, which proxies to metrics-server);
//! 3. compute the replicas the CPU target asks for, stabilise and bound them ([`replicas`]);
//! 4. write the new count through the scale subresource, and the HPA's status: current and
//!    desired replicas, `currentMetrics`, `lastScaleTime` and the conditions `AbleToScale`,
//!    `ScalingActive` and `ScalingLimited` ([`status`]).
//!
//! minik simplifies: only `Resource` metrics for `cpu` with an `Utilization` or `AverageValue`
//! target (memory, pods, object and external metrics are reported as not supported); the
//! recommendation history lives in memory (a restarted controller manager starts a new window).

pub mod replicas;
pub mod status;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::autoscaling::v2::HorizontalPodAutoscaler;
use minik_api::core::Pod;
use minik_api::selector::LabelSelector;
use minik_api::ObjectKey;
use minik_client::{Api, Client, Method, Store, WorkQueue};
use serde_json::Value;
use tracing::info;

use crate::controller::Controller;
use crate::informers::{Change, SharedInformers};
use replicas::{CalcError, History, PodSample};
use status::Outcome;

/// The controller: HPAs and pods from the shared informers, a queue of HPA keys.
pub struct HorizontalController {
    autoscalers: Store<HorizontalPodAutoscaler>,
    pods: Store<Pod>,
    queue: Arc<WorkQueue>,
    client: Client,
    sync_period: Duration,
    recommendations: Mutex<HashMap<ObjectKey, History>>,
    recorder: minik_client::events::Recorder,
}

impl HorizontalController {
    /// Registers the handler on the shared HPA informer; each HPA is resynced every `sync_period`.
    pub fn new(informers: &SharedInformers, client: Client, sync_period: Duration) -> Arc<Self> {
        let hpa_informer = informers.informer::<HorizontalPodAutoscaler>();
        let controller = Arc::new(HorizontalController {
            autoscalers: hpa_informer.store(),
            pods: informers.informer::<Pod>().store(),
            queue: Arc::new(WorkQueue::new()),
            recorder: minik_client::events::Recorder::new(
                client.clone(),
                "horizontal-pod-autoscaler",
                None,
            ),
            client,
            sync_period,
            recommendations: Mutex::new(HashMap::new()),
        });
        let queue = controller.queue.clone();
        hpa_informer.add_handler(move |change: &Change<HorizontalPodAutoscaler>| {
            // Its own status writes are not a reason to sync again; the resync period is.
            let wanted = match change {
                Change::Added(_) => true,
                Change::Updated { old, new } => old.spec != new.spec,
                Change::Deleted(_) => false,
            };
            if wanted {
                queue.add(ObjectKey::of(&change.object().metadata));
            }
        });
        controller
    }

    /// `reconcileAutoscaler` for `key`, then schedules the next sync.
    pub async fn sync_autoscaler(&self, key: &ObjectKey) -> minik_client::Result<()> {
        let Some(hpa) = self.autoscalers.get(key) else {
            self.recommendations.lock().map(|mut r| r.remove(key)).ok();
            return Ok(());
        };
        let result = self.reconcile(key, &hpa).await;
        self.queue.add_after(key.clone(), self.sync_period);
        result
    }

    async fn reconcile(
        &self,
        key: &ObjectKey,
        hpa: &HorizontalPodAutoscaler,
    ) -> minik_client::Result<()> {
        let namespace = key.namespace.clone().unwrap_or_else(|| "default".into());
        let spec = hpa.spec.clone().unwrap_or_default();
        let target = &spec.scale_target_ref;
        let api_version = target.api_version.as_deref().unwrap_or_default();
        let Some(scale_path) = scale_path(&namespace, api_version, &target.kind, &target.name)
        else {
            let message = format!(
                "the HPA controller was unable to get the target's current scale: no {} {:?}",
                target.kind, target.api_version
            );
            return self
                .write_status(key, hpa, Outcome::failed("FailedGetScale", &message, 0))
                .await;
        };
        let scale = match self
            .client
            .request_json(Method::GET, &scale_path, None)
            .await
        {
            Ok(scale) => scale,
            Err(e) => {
                let message =
                    format!("the HPA controller was unable to get the target's current scale: {e}");
                return self
                    .write_status(key, hpa, Outcome::failed("FailedGetScale", &message, 0))
                    .await;
            }
        };
        let current = scale
            .pointer("/spec/replicas")
            .and_then(Value::as_i64)
            .unwrap_or(0) as i32;
        if current == 0 && spec.min_replicas.unwrap_or(1) != 0 {
            let outcome = Outcome::disabled(current);
            return self.write_status(key, hpa, outcome).await;
        }
        let selector = scale
            .pointer("/status/selector")
            .and_then(Value::as_str)
            .unwrap_or("");
        let Some(target_percent) = status::cpu_target(&spec) else {
            let message =
                "minik's HPA supports only a Resource metric for cpu with an Utilization target";
            return self
                .write_status(
                    key,
                    hpa,
                    Outcome::failed("InvalidMetricSourceType", message, current),
                )
                .await;
        };
        let samples = match self.samples(&namespace, selector).await {
            Ok(samples) => samples,
            Err(message) => {
                return self
                    .write_status(
                        key,
                        hpa,
                        Outcome::failed("FailedGetResourceMetric", &message, current),
                    )
                    .await;
            }
        };
        let recommendation = match replicas::cpu_replicas(current, target_percent, &samples) {
            Ok(recommendation) => recommendation,
            Err(e @ (CalcError::MissingRequest | CalcError::NoMetrics)) => {
                let message = format!("failed to get cpu utilization: {e}");
                return self
                    .write_status(
                        key,
                        hpa,
                        Outcome::failed("FailedGetResourceMetric", &message, current),
                    )
                    .await;
            }
        };
        let behavior = status::behavior(&spec);
        let stabilized = {
            let mut all = self
                .recommendations
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let history = all.entry(key.clone()).or_default();
            replicas::stabilize(
                history,
                Instant::now(),
                current,
                recommendation.replicas,
                &behavior,
            )
        };
        let (desired, limited) = replicas::bound(
            current,
            stabilized,
            spec.min_replicas.unwrap_or(1),
            spec.max_replicas,
            &behavior,
        );
        let mut outcome = Outcome::computed(current, desired, recommendation, limited);
        outcome.stabilized = stabilized;
        if desired != current {
            let mut scaled = scale.clone();
            scaled["spec"]["replicas"] = Value::from(desired);
            if let Err(e) = self
                .client
                .request_json(Method::PUT, &scale_path, Some(&scaled))
                .await
            {
                let message =
                    format!("the HPA controller was unable to update the target scale: {e}");
                return self
                    .write_status(key, hpa, Outcome::failed_update(&message, current))
                    .await;
            }
            let reason = if desired > current { "above" } else { "below" };
            let message = format!("New size: {desired}; reason: cpu resource utilization (percentage of request) {reason} target");
            info!(hpa = %key, from = current, to = desired, utilization = recommendation.utilization, target = target_percent, "rescaled");
            let reference = minik_client::events::object_reference(hpa);
            let _ = self
                .recorder
                .publish(&reference, "Normal", "SuccessfulRescale", &message)
                .await;
            outcome.rescaled = true;
        }
        self.write_status(key, hpa, outcome).await
    }

    /// The target's pods with their CPU requests, readiness and usage.
    async fn samples(&self, namespace: &str, selector: &str) -> Result<Vec<PodSample>, String> {
        let parsed = LabelSelector::parse(selector)
            .map_err(|e| format!("invalid selector {selector:?}: {}", e.0))?;
        let pods: Vec<Arc<Pod>> = self
            .pods
            .state()
            .into_iter()
            .filter(|p| p.metadata.namespace.as_deref() == Some(namespace))
            .filter(|p| parsed.matches(p.metadata.labels.as_ref().unwrap_or(&Default::default())))
            .filter(|p| status::counts(p))
            .collect();
        let path = format!(
            "/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods?labelSelector={}",
            encode(selector)
        );
        let metrics = self
            .client
            .request_json(Method::GET, &path, None)
            .await
            .map_err(|e| format!("unable to get metrics for resource cpu: {e}"))?;
        let usage = status::usage_by_pod(&metrics);
        Ok(pods
            .iter()
            .map(|pod| PodSample {
                request_milli: status::cpu_request_milli(pod),
                usage_milli: usage
                    .get(pod.metadata.name.as_deref().unwrap_or(""))
                    .copied(),
                ready: status::is_ready(pod),
            })
            .collect())
    }

    async fn write_status(
        &self,
        key: &ObjectKey,
        hpa: &HorizontalPodAutoscaler,
        outcome: Outcome,
    ) -> minik_client::Result<()> {
        let next = status::next_status(hpa, &outcome, jiff::Timestamp::now());
        if hpa.status.as_ref() == Some(&next) {
            return Ok(());
        }
        let mut updated = hpa.clone();
        updated.status = Some(next);
        let namespace = key.namespace.as_deref().unwrap_or("default");
        Api::<HorizontalPodAutoscaler>::namespaced(self.client.clone(), namespace)
            .replace_status(&key.name, &updated)
            .await
            .map(|_| ())
    }
}

/// `/apis/apps/v1/namespaces/NS/deployments/NAME/scale` for a target reference.
pub fn scale_path(namespace: &str, api_version: &str, kind: &str, name: &str) -> Option<String> {
    let info = minik_api::resource::by_kind(api_version, kind)?;
    Some(format!(
        "{}/namespaces/{namespace}/{}/{name}/scale",
        info.group_version_path(),
        info.plural
    ))
}

/// Percent-encodes a label selector for a query string.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect()
}

impl Controller for HorizontalController {
    type Key = ObjectKey;

    fn name(&self) -> &'static str {
        "horizontal-pod-autoscaler"
    }

    fn queue(&self) -> &Arc<WorkQueue> {
        &self.queue
    }

    async fn sync(&self, key: &ObjectKey) -> minik_client::Result<()> {
        self.sync_autoscaler(key).await
    }
}
