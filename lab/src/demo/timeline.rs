//! Timelines: what happened, where, and when, measured from the moment the demo acted.
//!
//! Kubernetes counterpart: there is none in one place. In a real cluster you piece this story
//! together from `kubectl get events`, object timestamps and application logs; this module does
//! exactly that, and nothing more. Every mark comes from data the cluster produced:
//!
//! - core/v1 Events the components wrote (`eventTime` carries microseconds, so the order of
//!   steps a few milliseconds apart is visible);
//! - what the demo itself observed on a watch (the object's `deletionTimestamp` appearing, the
//!   object being removed);
//! - what the application printed (`event=sigterm t=…` lines of the `minik/web` program).
//!
//! The pure functions here turn those into a sorted list of `{component, event, t_ms}` marks.

use jiff::Timestamp;
use minik_api::core::Event;
use minik_client::events::facts;
use serde::Serialize;

/// One row of the picture: which part of the system a mark belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Lane {
    /// What the demo (the user) did and saw: `minik apply`, `minik delete`.
    Client,
    /// The API server: objects stored, deletion requested, object removed.
    Apiserver,
    /// The scheduler: the pod bound to a node.
    Scheduler,
    /// The endpoint controller: the pod added to or removed from the Endpoints.
    EndpointController,
    /// The EndpointSlice controller: the pod's endpoint ready, or not ready (terminating), in the
    /// Service's slices, which the proxy reads.
    #[serde(rename = "endpointslice-controller")]
    EndpointSliceController,
    /// The proxy: the new endpoint set applied to its load balancer.
    Proxy,
    /// The ingress controller: the new backends applied (from its `/metrics`).
    Ingress,
    /// The external load balancer: the batch carrying the change applied (from its `/metrics`).
    #[serde(rename = "loadbalancer")]
    LoadBalancer,
    /// The kubelet: hooks, signals, process start and stop.
    Kubelet,
    /// The application's own view: SIGTERM received, exit.
    Process,
}

impl Lane {
    /// Every lane, top to bottom, as the picture draws them.
    pub const ALL: [Lane; 10] = [
        Lane::Client,
        Lane::Apiserver,
        Lane::Scheduler,
        Lane::EndpointController,
        Lane::EndpointSliceController,
        Lane::Proxy,
        Lane::Ingress,
        Lane::LoadBalancer,
        Lane::Kubelet,
        Lane::Process,
    ];

    /// The lane's name, as the picture and the JSON output show it.
    pub fn name(self) -> &'static str {
        match self {
            Lane::Client => "client",
            Lane::Apiserver => "apiserver",
            Lane::Scheduler => "scheduler",
            Lane::EndpointController => "endpoint-controller",
            Lane::EndpointSliceController => "endpointslice-controller",
            Lane::Proxy => "proxy",
            Lane::Ingress => "ingress",
            Lane::LoadBalancer => "loadbalancer",
            Lane::Kubelet => "kubelet",
            Lane::Process => "process",
        }
    }

    /// The lane of an Event, from the component that reported it.
    pub fn of_component(component: &str) -> Option<Lane> {
        match component {
            "kubelet" => Some(Lane::Kubelet),
            "default-scheduler" | "scheduler" => Some(Lane::Scheduler),
            "endpoint-controller" | "endpoints-controller" => Some(Lane::EndpointController),
            "endpointslice-controller" => Some(Lane::EndpointSliceController),
            "proxy" | "kube-proxy" | "minik-proxy" => Some(Lane::Proxy),
            "apiserver" => Some(Lane::Apiserver),
            _ => None,
        }
    }
}

/// One thing that happened, `t_ms` milliseconds after the demo's reference moment.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Mark {
    /// Where it happened.
    pub component: Lane,
    /// What happened, in a few words (`SIGTERM sent`, `endpoint removed`).
    pub event: String,
    /// Milliseconds since the reference moment (negative if before it).
    pub t_ms: f64,
}

/// A sorted list of marks with the moment they are measured from.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Timeline {
    /// The marks, in time order.
    pub marks: Vec<Mark>,
    /// The reference moment (`t_ms = 0`), in JSON as `origin_ms` (ms since the epoch), so other
    /// views of the same run (the dashboard's journey) can be compared with it.
    #[serde(rename = "origin_ms", serialize_with = "as_millisecond")]
    pub origin: Option<Timestamp>,
}

fn as_millisecond<S: serde::Serializer>(
    origin: &Option<Timestamp>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    origin.map(|at| at.as_millisecond()).serialize(serializer)
}

impl Timeline {
    /// An empty timeline measured from `origin`.
    pub fn new(origin: Timestamp) -> Self {
        Timeline {
            marks: Vec::new(),
            origin: Some(origin),
        }
    }

    /// Adds a mark at an absolute time.
    pub fn add(&mut self, component: Lane, event: impl Into<String>, at: Timestamp) {
        let origin = self.origin.unwrap_or(at);
        let t_ms = (at.as_nanosecond() - origin.as_nanosecond()) as f64 / 1e6;
        self.marks.push(Mark {
            component,
            event: event.into(),
            t_ms,
        });
        self.marks.sort_by(|a, b| a.t_ms.total_cmp(&b.t_ms));
    }

    /// Prints the marks, one a line: time since the origin, lane, what happened.
    pub fn print(&self) {
        for mark in &self.marks {
            println!(
                "  {:>+9.1} ms  {:<24} {}",
                mark.t_ms,
                mark.component.name(),
                mark.event
            );
        }
    }

    /// Adds one mark per Event, for the Events whose component has a lane and whose reason
    /// `describe` knows; `describe(reason, message)` returns the text of the mark.
    pub fn add_events(
        &mut self,
        events: &[Event],
        describe: impl Fn(&str, &str) -> Option<String>,
    ) {
        for event in events {
            let Some(lane) = event_component(event).and_then(Lane::of_component) else {
                continue;
            };
            let Some(at) = event_time(event) else {
                continue;
            };
            let reason = event.reason.as_deref().unwrap_or("");
            let message = event.message.as_deref().unwrap_or("");
            if let Some(text) = describe(reason, message) {
                self.add(lane, text, at);
            }
        }
    }
}

/// Who reported an Event (shared with the dashboard's journey: `minik_client::events::facts`).
pub fn event_component(event: &Event) -> Option<&str> {
    facts::event_component(event)
}

/// When an Event happened (shared with the dashboard's journey: `minik_client::events::facts`).
pub fn event_time(event: &Event) -> Option<Timestamp> {
    facts::event_time(event)
}

/// Reads the `event=NAME t=RFC3339` lines the `minik/web` program prints about itself.
pub fn app_marks(log: &str) -> Vec<(String, Timestamp)> {
    log.lines()
        .filter_map(|line| {
            let mut name = None;
            let mut time = None;
            for field in line.split_whitespace() {
                if let Some(value) = field.strip_prefix("event=") {
                    name = Some(value.to_string());
                } else if let Some(value) = field.strip_prefix("t=") {
                    time = value.parse::<Timestamp>().ok();
                }
            }
            Some((name?, time?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use minik_api::core::EventSource;
    use minik_api::meta::MicroTime;

    fn event(component: &str, reason: &str, at: &str) -> Event {
        Event {
            reason: Some(reason.to_string()),
            source: Some(EventSource {
                component: Some(component.to_string()),
                host: None,
            }),
            event_time: Some(MicroTime(at.parse().unwrap())),
            ..Event::default()
        }
    }

    #[test]
    fn events_become_marks_in_time_order_relative_to_the_origin() {
        let origin: Timestamp = "2026-11-22T10:00:00Z".parse().unwrap();
        let mut timeline = Timeline::new(origin);
        let events = vec![
            event("kubelet", "Killing", "2026-11-22T10:00:00.250Z"),
            event(
                "endpoint-controller",
                "EndpointRemoved",
                "2026-11-22T10:00:00.004Z",
            ),
            event("somebody-else", "Killing", "2026-11-22T10:00:00.100Z"),
            event("kubelet", "Pulled", "2026-11-22T10:00:00.300Z"),
        ];
        timeline.add_events(&events, |reason, _| match reason {
            "Killing" => Some("SIGTERM sent".to_string()),
            "EndpointRemoved" => Some("endpoint removed".to_string()),
            _ => None,
        });
        let marks: Vec<(Lane, &str, f64)> = timeline
            .marks
            .iter()
            .map(|mark| (mark.component, mark.event.as_str(), mark.t_ms))
            .collect();
        assert_eq!(
            marks,
            vec![
                (Lane::EndpointController, "endpoint removed", 4.0),
                (Lane::Kubelet, "SIGTERM sent", 250.0)
            ]
        );
    }

    #[test]
    fn every_lane_has_one_name_in_json_and_in_the_picture() {
        for lane in Lane::ALL {
            assert_eq!(serde_json::to_value(lane).unwrap(), lane.name());
        }
    }

    #[test]
    fn app_lines_are_read_with_their_timestamps() {
        let log = "event=started t=2026-11-22T10:00:00.5Z\nGET / 200\nevent=sigterm t=2026-11-22T10:00:01Z pid=4\n";
        let marks = app_marks(log);
        assert_eq!(marks.len(), 2);
        assert_eq!(marks[1].0, "sigterm");
        assert_eq!(
            marks[1].1,
            "2026-11-22T10:00:01Z".parse::<Timestamp>().unwrap()
        );
    }

    #[test]
    fn timeline_json_is_a_list_of_component_event_and_time() {
        let origin: Timestamp = "2026-11-22T10:00:00Z".parse().unwrap();
        let mut timeline = Timeline::new(origin);
        timeline.add(
            Lane::Process,
            "exit",
            "2026-11-22T10:00:01.5Z".parse().unwrap(),
        );
        let json = serde_json::to_value(&timeline).unwrap();
        assert_eq!(
            json["marks"][0],
            serde_json::json!({"component": "process", "event": "exit", "t_ms": 1500.0})
        );
    }
}
