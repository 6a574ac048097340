//! Reading Events back as facts of a pod's pipeline: when, who, and which pod or addresses.
//!
//! Kubernetes counterpart: what `kubectl get events` shows in its LAST SEEN and FROM columns,
//! plus the messages of minik's own measurement Events (`EndpointsApplied` from the proxy, the
//! ingress controller and the load balancer; `EndpointAdded`/`EndpointRemoved` and
//! `EndpointReady`/`EndpointNotReady` from the endpoint controllers). `minik demo`
//! (`lab/src/demo`) and the dashboard's journey (`dashboard/src/journey.rs`) both read Events
//! through these functions, so the same Event gives both the same moment and the same pod.
//! Pure functions, no I/O.

use jiff::Timestamp;
use minik_api::core::Event;

/// When an Event happened: `eventTime` (microseconds) if set, else `lastTimestamp`, else
/// `firstTimestamp` (seconds: events.k8s.io's order of preference).
pub fn event_time(event: &Event) -> Option<Timestamp> {
    event
        .event_time
        .as_ref()
        .map(|time| time.0)
        .or_else(|| event.last_timestamp.as_ref().map(|time| time.0))
        .or_else(|| event.first_timestamp.as_ref().map(|time| time.0))
}

/// Who reported an Event: `reportingComponent` (events.k8s.io), else the legacy `source.component`.
pub fn event_component(event: &Event) -> Option<&str> {
    event
        .reporting_component
        .as_deref()
        .filter(|component| !component.is_empty())
        .or_else(|| event.source.as_ref()?.component.as_deref())
}

/// The Service port and the endpoints (`ip:port`) of an `EndpointsApplied` message:
/// `Applied endpoints for default/web:http: 127.244.1.2:8080,127.244.1.3:8080` (or `<none>`).
pub fn applied_endpoints(message: &str) -> Option<(&str, Vec<&str>)> {
    let rest = message.strip_prefix("Applied endpoints for ")?;
    let (port, list) = rest.rsplit_once(": ")?;
    let endpoints = list
        .trim()
        .split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty() && *entry != "<none>")
        .collect();
    Some((port, endpoints))
}

/// The host part of an `ip:port` endpoint.
pub fn endpoint_ip(endpoint: &str) -> &str {
    endpoint.rsplit_once(':').map_or(endpoint, |(ip, _)| ip)
}

/// The pod and IP an endpoint controller's Event names: `Pod web-1 (127.244.1.2) removed from
/// the Endpoints`, `Pod web-1 (127.244.1.2) no longer ready in the EndpointSlices`.
pub fn endpoint_pod(message: &str) -> Option<(&str, &str)> {
    let rest = message.strip_prefix("Pod ")?;
    let (pod, rest) = rest.split_once(" (")?;
    let (ip, _) = rest.split_once(')')?;
    Some((pod, ip))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_applied_message_gives_its_port_and_endpoints() {
        let message = "Applied endpoints for default/web:http: 127.244.1.2:8080,127.244.1.3:8080";
        let (port, endpoints) = applied_endpoints(message).unwrap();
        assert_eq!(port, "default/web:http");
        assert_eq!(endpoints, ["127.244.1.2:8080", "127.244.1.3:8080"]);
        assert_eq!(endpoint_ip(endpoints[1]), "127.244.1.3");
        let none = applied_endpoints("Applied endpoints for default/web:80: <none>").unwrap();
        assert_eq!(none, ("default/web:80", vec![]));
        assert_eq!(applied_endpoints("Started container app"), None);
    }

    #[test]
    fn an_endpoint_message_names_its_pod_and_ip() {
        let removed = "Pod race-plain-1 (127.244.1.2) removed from the Endpoints";
        assert_eq!(endpoint_pod(removed), Some(("race-plain-1", "127.244.1.2")));
        assert_eq!(endpoint_pod("Applied endpoints for x: <none>"), None);
    }

    #[test]
    fn the_event_time_prefers_the_microsecond_field() {
        let micro: Timestamp = "2026-11-22T10:00:00.123456Z".parse().unwrap();
        let second: Timestamp = "2026-11-22T10:00:00Z".parse().unwrap();
        let event = Event {
            event_time: Some(minik_api::meta::MicroTime(micro)),
            last_timestamp: Some(minik_api::meta::Time(second)),
            ..Event::default()
        };
        assert_eq!(event_time(&event), Some(micro));
        let legacy = Event {
            first_timestamp: Some(minik_api::meta::Time(second)),
            ..Event::default()
        };
        assert_eq!(event_time(&legacy), Some(second));
    }
}
