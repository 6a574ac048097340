//! The idle controller: a Deployment annotated `minik.dev/scale-to-zero-after: 60s` is scaled to 0
//! once none of its pods has had an open connection through the proxy or the ingress for that long.
//!
//! Kubernetes counterpart: none in core; KEDA's `ScaledObject` with a `cooldownPeriod` does this
//! (an HTTP add-on counts the requests), and seed 002 suggests it to clean up the old colours of a
//! rainbow deployment. minik's version, in the controller manager:
//!
//! 1. informers on Deployments, Pods and the connection reports (ConfigMaps labelled
//!    `minik.dev/connection-report`, one per proxy or ingress: `minik_client::connections`);
//! 2. a report change or an annotated Deployment's change queues the annotated Deployments;
//! 3. the sync gathers the records of the Deployment's pods (by pod IP, ignoring records older than
//!    the pod, whose IP an earlier pod may have had) and [`decide`]s: some connection open → nothing
//!    (the report's next change queues it again); idle for less than the annotation → look again
//!    when it would be long enough; idle long enough → scale to 0 through the `scale` subresource,
//!    with a `ScaledToZero` Event.
//!
//! The idle clock starts at the latest of: the Deployment's creation, the moment this controller
//! first saw it annotated, its newest pod's creation (scaling up again restarts it), and the last time one of its pods went from some connections to
//! none. What minik simplifies: no scale-from-zero (KEDA's interceptor holds the first request and
//! scales up; here a person or a pipeline scales up), and connections are counted per pod IP, not
//! per port.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::apps::v1::Deployment;
use minik_api::core::{ConfigMap, Pod};
use minik_api::ObjectKey;
use minik_client::connections::{self, PodConnections};
use minik_client::{Client, Method, Store, WorkQueue};
use serde_json::Value;
use tracing::{debug, info};

use crate::controller::Controller;
use crate::informers::{Change, SharedInformers};

#[cfg(test)]
mod tests;

/// The annotation that opts a Deployment in, with how long it may stay idle (`60s`, `10m`).
pub const ANNOTATION: &str = "minik.dev/scale-to-zero-after";

/// What the idle rule says about one Deployment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Idle {
    /// A pod has a connection open: it is in use.
    Active,
    /// Idle, but not for long enough: look again after this.
    Wait(Duration),
    /// Idle since this moment, for at least the annotation's time: scale to 0.
    ScaleToZero {
        /// When the last activity ended (or the newest pod was created).
        idle_since: Timestamp,
    },
}

/// The idle rule, a pure function: `records` are the connection records of the Deployment's pods
/// (from every report), `started` when the idle clock would start without any connection.
pub fn decide(
    now: Timestamp,
    after: Duration,
    started: Timestamp,
    records: &[PodConnections],
) -> Idle {
    if records.iter().any(|record| record.open > 0) {
        return Idle::Active;
    }
    let last = records
        .iter()
        .map(|record| record.since)
        .fold(started, Timestamp::max);
    let idle_for = now.duration_since(last);
    let after_signed = SignedDuration::try_from(after).unwrap_or(SignedDuration::MAX);
    if idle_for >= after_signed {
        Idle::ScaleToZero { idle_since: last }
    } else {
        let left = after_signed - idle_for;
        Idle::Wait(Duration::try_from(left).unwrap_or(after))
    }
}

/// The annotation's duration, when the Deployment has a valid one.
pub fn idle_after(deployment: &Deployment) -> Option<Duration> {
    let annotations = deployment.metadata.annotations.as_ref()?;
    humantime::parse_duration(annotations.get(ANNOTATION)?.trim()).ok()
}

/// The controller: three stores and a queue of Deployment keys.
pub struct IdleController {
    deployments: Store<Deployment>,
    pods: Store<Pod>,
    reports: Store<ConfigMap>,
    queue: Arc<WorkQueue>,
    client: Client,
    recorder: minik_client::events::Recorder,
    /// When this process first saw each Deployment annotated: the clock never starts earlier,
    /// so a report not written yet (at most a second behind) cannot make a Deployment look idle.
    first_seen: Mutex<HashMap<ObjectKey, Timestamp>>,
}

impl IdleController {
    /// Registers the handlers on the shared Deployment and ConfigMap informers.
    pub fn new(informers: &SharedInformers, client: Client) -> Arc<Self> {
        let deployment_informer = informers.informer::<Deployment>();
        let report_informer = informers.informer::<ConfigMap>();
        let controller = Arc::new(IdleController {
            deployments: deployment_informer.store(),
            pods: informers.informer::<Pod>().store(),
            reports: report_informer.store(),
            queue: Arc::new(WorkQueue::new()),
            first_seen: Mutex::default(),
            recorder: minik_client::events::Recorder::new(client.clone(), "idle-controller", None),
            client,
        });
        let queue = controller.queue.clone();
        deployment_informer.add_handler(move |change: &Change<Deployment>| {
            if let Change::Added(new) | Change::Updated { new, .. } = change {
                if idle_after(new).is_some() {
                    queue.add(ObjectKey::of(&new.metadata));
                }
            }
        });
        let weak = Arc::downgrade(&controller);
        report_informer.add_handler(move |change: &Change<ConfigMap>| {
            let meta = &change.object().metadata;
            let is_report = meta
                .labels
                .as_ref()
                .is_some_and(|l| l.contains_key(connections::LABEL));
            if let (true, Some(controller)) = (is_report, weak.upgrade()) {
                controller.queue_annotated();
            }
        });
        controller
    }

    /// Queues every annotated Deployment (a report changed: any of them may be concerned).
    fn queue_annotated(&self) {
        for deployment in self.deployments.state() {
            if idle_after(&deployment).is_some() {
                self.queue.add(ObjectKey::of(&deployment.metadata));
            }
        }
    }

    /// Applies the idle rule to one Deployment.
    pub async fn sync_deployment(&self, key: &ObjectKey) -> minik_client::Result<()> {
        let annotated = self
            .deployments
            .get(key)
            .and_then(|d| Some((idle_after(&d)?, d)));
        let Some((after, deployment)) = annotated else {
            self.first_seen.lock().map(|mut seen| seen.remove(key)).ok();
            return Ok(());
        };
        let first_seen = self
            .first_seen
            .lock()
            .map(|mut seen| *seen.entry(key.clone()).or_insert_with(Timestamp::now))
            .unwrap_or_else(|_| Timestamp::now());
        let replicas = deployment
            .spec
            .as_ref()
            .and_then(|s| s.replicas)
            .unwrap_or(1);
        if replicas == 0 || deployment.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let (started, records) = self.activity(&deployment);
        let started = started.max(first_seen);
        match decide(Timestamp::now(), after, started, &records) {
            Idle::Active => debug!(deployment = %key, "connections open"),
            Idle::Wait(left) => self.queue.add_after(key.clone(), left),
            Idle::ScaleToZero { idle_since } => {
                self.scale_to_zero(key, &deployment, after, idle_since, replicas)
                    .await?
            }
        }
        Ok(())
    }

    /// When the idle clock starts without connections, and the records of the Deployment's pods.
    fn activity(&self, deployment: &Deployment) -> (Timestamp, Vec<PodConnections>) {
        let namespace = deployment.metadata.namespace.clone().unwrap_or_default();
        let created = |meta: &minik_api::meta::ObjectMeta| {
            meta.creation_timestamp
                .as_ref()
                .map(|t| t.0)
                .unwrap_or(Timestamp::UNIX_EPOCH)
        };
        let selector = deployment
            .spec
            .as_ref()
            .and_then(|spec| minik_api::workloads::selector_from_meta(&spec.selector).ok());
        let Some(selector) = selector.filter(|s| !s.is_empty()) else {
            return (created(&deployment.metadata), Vec::new());
        };
        let reports: Vec<_> = self
            .reports
            .state()
            .into_iter()
            .filter(|cm| cm.metadata.namespace.as_deref() == Some(connections::NAMESPACE))
            .filter(|cm| {
                cm.metadata
                    .labels
                    .as_ref()
                    .is_some_and(|l| l.contains_key(connections::LABEL))
            })
            .flat_map(|cm| connections::parse_report(&cm.data.clone().unwrap_or_default()))
            .collect();
        let mut started = created(&deployment.metadata);
        let mut records = Vec::new();
        for pod in self.pods.state() {
            let meta = &pod.metadata;
            let labels = meta.labels.clone().unwrap_or_default();
            if meta.namespace.as_deref() != Some(namespace.as_str()) || !selector.matches(&labels) {
                continue;
            }
            let born = created(meta);
            started = started.max(born);
            let ip = pod.status.as_ref().and_then(|s| s.pod_ip.as_deref());
            let Some(ip) = ip.and_then(|ip| ip.parse::<IpAddr>().ok()) else {
                continue;
            };
            // A record older than the pod belongs to an earlier pod that had the same IP.
            let mine = reports
                .iter()
                .filter(|(at, record)| *at == ip && record.since >= born);
            records.extend(mine.map(|(_, record)| *record));
        }
        (started, records)
    }

    /// Sets the Deployment's replicas to 0 through its `scale` subresource, as an autoscaler does.
    async fn scale_to_zero(
        &self,
        key: &ObjectKey,
        deployment: &Deployment,
        after: Duration,
        idle_since: Timestamp,
        replicas: i32,
    ) -> minik_client::Result<()> {
        let namespace = key.namespace.clone().unwrap_or_default();
        let path = format!(
            "/apis/apps/v1/namespaces/{namespace}/deployments/{}/scale",
            key.name
        );
        let mut scale = self.client.request_json(Method::GET, &path, None).await?;
        scale["spec"]["replicas"] = Value::from(0);
        self.client
            .request_json(Method::PUT, &path, Some(&scale))
            .await?;
        let idle = humantime::format_duration(after);
        info!(deployment = %key, from = replicas, %idle_since, %idle, "scaled to zero: idle");
        let message = format!(
            "Scaled down from {replicas} to 0: no connection since {idle_since} ({ANNOTATION}: {idle})"
        );
        let reference = minik_client::events::object_reference(deployment);
        let _ = self
            .recorder
            .publish(&reference, "Normal", "ScaledToZero", &message)
            .await;
        Ok(())
    }
}

impl Controller for IdleController {
    type Key = ObjectKey;

    fn name(&self) -> &'static str {
        "idle"
    }

    fn queue(&self) -> &Arc<WorkQueue> {
        &self.queue
    }

    async fn sync(&self, key: &ObjectKey) -> minik_client::Result<()> {
        self.sync_deployment(key).await
    }
}
