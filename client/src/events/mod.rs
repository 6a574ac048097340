//! The event recorder: writes core/v1 Events (`Scheduled`, `Started`, `Killing` …) about an object.
//!
//! Kubernetes counterpart: client-go's `record.EventRecorder` (`staging/src/k8s.io/client-go/tools/record/event.go`)
//! and the events.k8s.io `EventRecorder`. An Event is an ordinary namespaced object named
//! `{involved name}.{unique hex}`, pointing at its object through `involvedObject`; `kubectl describe`
//! finds them with a field selector on `involvedObject.{name,namespace,uid}`.
//!
//! Each Event carries both field sets clients read: the newer `eventTime` (MicroTime),
//! `reportingComponent`, `reportingInstance`, `action`, and the legacy `source`, `firstTimestamp`,
//! `lastTimestamp`, `count`.
//!
//! Before writing, every event goes through the recorder's [`correlator::Correlator`] as in
//! client-go: a repeat patches the first object (`count`, `lastTimestamp`), ten similar events
//! in ten minutes are combined, and a token bucket per source and object drops floods.
//!
//! minik simplifies: publishing is awaited (callers usually ignore its error after logging it),
//! rather than queued to a broadcaster goroutine.

pub mod correlator;
pub mod facts;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use correlator::{Correlator, Decision};
use minik_api::core::{Event, EventSource, ObjectReference};
use minik_api::meta::ObjectMeta;

use crate::api::Api;
use crate::client::Client;
use crate::error::Result;
use crate::params::Patch;

/// Writes Events on behalf of one component (`minik-scheduler`, `kubelet` …).
#[derive(Clone, Debug)]
pub struct Recorder {
    client: Client,
    component: String,
    /// The node name for the kubelet; `None` for control-plane components.
    host: Option<String>,
    /// Shared by clones; `None` writes every event as its own object.
    correlator: Option<Arc<Mutex<Correlator>>>,
}

/// Added to the clock's nanoseconds so that names from one process strictly increase, even for
/// two events of one object in the same nanosecond.
static SEQUENCE: AtomicU64 = AtomicU64::new(0);

impl Recorder {
    /// A recorder reporting as `component` (and `host`, the node, if any).
    pub fn new(client: Client, component: &str, host: Option<String>) -> Self {
        Recorder {
            client,
            component: component.to_string(),
            host,
            correlator: Some(Arc::new(Mutex::new(Correlator::new(
                correlator::Options::default(),
            )))),
        }
    }

    /// A recorder with other correlation settings.
    pub fn with_options(mut self, options: correlator::Options) -> Self {
        self.correlator = Some(Arc::new(Mutex::new(Correlator::new(options))));
        self
    }

    /// A recorder that writes every event as a new object, unaggregated and unlimited: for events
    /// that are measurements (the proxy's `EndpointsApplied`, read back one by one by the demo).
    pub fn without_correlation(mut self) -> Self {
        self.correlator = None;
        self
    }

    fn decide(&self, event: Event) -> Decision {
        // The event's own time: a queued event is correlated as of when it happened.
        let now = event
            .event_time
            .as_ref()
            .map_or_else(jiff::Timestamp::now, |time| time.0);
        match &self.correlator {
            Some(correlator) => correlator
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .correlate(event, now),
            None => Decision::Create(event),
        }
    }

    fn written(&self, event: &Event) {
        if let Some(correlator) = &self.correlator {
            correlator
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .written(event);
        }
    }

    /// Writes one Event about `regarding`. `type_` is `Normal` or `Warning`; `reason` is
    /// UpperCamelCase (`Scheduled`); `message` is a sentence for humans.
    pub async fn publish(
        &self,
        regarding: &ObjectReference,
        type_: &str,
        reason: &str,
        message: &str,
    ) -> Result<()> {
        self.write(self.build(regarding, type_, reason, message))
            .await
    }

    /// Writes an Event [`Recorder::build`] made earlier (the kubelet queues them): created, or
    /// patched as a repeat, or dropped by the spam filter, as the correlator decides.
    pub async fn write(&self, event: Event) -> Result<()> {
        let reason = event.reason.clone().unwrap_or_default();
        let namespace = event
            .metadata
            .namespace
            .clone()
            .unwrap_or_else(|| "default".to_string());
        let events = Api::<Event>::namespaced(self.client.clone(), &namespace);
        let written = match self.decide(event) {
            Decision::Skip => {
                tracing::debug!(%reason, "event dropped by the spam filter");
                return Ok(());
            }
            Decision::Create(event) => self.create(&events, event).await?,
            Decision::Patch { event, patch } => {
                let name = event.metadata.name.clone().unwrap_or_default();
                match events.patch(&name, &Patch::Strategic(patch)).await {
                    // The first object is gone (expired or deleted): write this one afresh.
                    Err(error) if error.is_not_found() => self.create(&events, event).await?,
                    result => result?,
                }
            }
        };
        self.written(&written);
        Ok(())
    }

    async fn create(&self, events: &Api<Event>, mut event: Event) -> Result<Event> {
        event.metadata.resource_version = None;
        match events.create(&event).await {
            // Another process named an event of the same object in the same nanosecond: rename.
            Err(error) if error.is_already_exists() => {
                let unique = SEQUENCE.fetch_add(1, Ordering::Relaxed);
                let name = event.metadata.name.clone().unwrap_or_default();
                event.metadata.name = Some(format!("{name}{unique:x}"));
                events.create(&event).await
            }
            result => result,
        }
    }

    /// The Event object `publish` writes (a pure function of its inputs and the clock).
    pub fn build(
        &self,
        regarding: &ObjectReference,
        type_: &str,
        reason: &str,
        message: &str,
    ) -> Event {
        let now = minik_api::now_micro();
        let legacy_now = minik_api::meta::Time(now.0);
        let involved_name = regarding.name.clone().unwrap_or_default();
        // Cluster-scoped objects (nodes) get their events in `default`, as upstream does.
        let namespace = regarding
            .namespace
            .clone()
            .filter(|ns| !ns.is_empty())
            .unwrap_or_else(|| "default".to_string());
        let unique =
            (now.0.as_nanosecond() as u64).wrapping_add(SEQUENCE.fetch_add(1, Ordering::Relaxed));
        Event {
            metadata: ObjectMeta {
                name: Some(format!("{involved_name}.{unique:x}")),
                namespace: Some(namespace),
                ..ObjectMeta::default()
            },
            involved_object: regarding.clone(),
            type_: Some(type_.to_string()),
            reason: Some(reason.to_string()),
            message: Some(message.to_string()),
            action: Some(reason.to_string()),
            event_time: Some(now),
            first_timestamp: Some(legacy_now.clone()),
            last_timestamp: Some(legacy_now),
            count: Some(1),
            source: Some(EventSource {
                component: Some(self.component.clone()),
                host: self.host.clone(),
            }),
            reporting_component: Some(self.component.clone()),
            reporting_instance: Some(self.host.clone().unwrap_or_else(|| self.component.clone())),
            ..Event::default()
        }
    }
}

/// An `ObjectReference` to an object, as `involvedObject` wants it (kind, apiVersion, namespace,
/// name, uid, resourceVersion).
pub fn object_reference<K>(object: &K) -> ObjectReference
where
    K: k8s_openapi::Resource + k8s_openapi::Metadata<Ty = ObjectMeta>,
{
    let meta = object.metadata();
    ObjectReference {
        api_version: Some(K::API_VERSION.to_string()),
        kind: Some(K::KIND.to_string()),
        namespace: meta.namespace.clone(),
        name: meta.name.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        ..ObjectReference::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use minik_api::core::Pod;

    #[test]
    fn event_carries_both_the_new_and_the_legacy_fields() {
        let pod = Pod {
            metadata: ObjectMeta {
                name: Some("web".into()),
                namespace: Some("default".into()),
                uid: Some("u1".into()),
                ..ObjectMeta::default()
            },
            ..Pod::default()
        };
        let recorder = Recorder::new(
            Client::new("http://127.0.0.1:1").unwrap(),
            "minik-scheduler",
            None,
        );
        let event = recorder.build(
            &object_reference(&pod),
            "Normal",
            "Scheduled",
            "Successfully assigned default/web to node-1",
        );
        let json = serde_json::to_value(&event).unwrap();
        assert!(json["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("web."));
        assert_eq!(json["metadata"]["namespace"], "default");
        assert_eq!(json["involvedObject"]["kind"], "Pod");
        assert_eq!(json["involvedObject"]["uid"], "u1");
        assert_eq!(json["source"]["component"], "minik-scheduler");
        assert_eq!(json["reportingComponent"], "minik-scheduler");
        assert_eq!(json["reportingInstance"], "minik-scheduler");
        assert_eq!(json["count"], 1);
        assert_eq!(json["action"], "Scheduled");
        assert!(
            json["eventTime"].as_str().unwrap().contains('.'),
            "MicroTime has microseconds"
        );
        assert!(json["firstTimestamp"].is_string() && json["lastTimestamp"].is_string());
        let other = recorder.build(&object_reference(&pod), "Normal", "Scheduled", "again");
        assert_ne!(event.metadata.name, other.metadata.name);
    }
}
