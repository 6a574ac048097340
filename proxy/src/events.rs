//! Publishes each applied endpoint change as a core/v1 Event on its Service.
//!
//! Kubernetes counterpart: none. kube-proxy records no Event when it programs a rule; the closest
//! measure upstream is the `network_programming_duration_seconds` histogram. minik's demo builds its
//! deletion timeline from cluster Events, so the proxy writes one per applied change, with reason
//! `EndpointsApplied` (**minik's own reason**, not an upstream one), component `proxy`, a
//! sub-second `eventTime`, and the endpoint list in the message:
//! `Applied endpoints for default/web:http: 127.244.1.2:8080,127.244.1.3:8080` (or `<none>`).
//!
//! A node port the proxy cannot open is a `Warning` Event on the Service, reason
//! `NodePortUnavailable` (minik's: upstream's iptables proxier writes the bind error as the
//! reason of an Event on the Node, "can't open port …, skipping it").
//!
//! Publishing is an API call, so it runs in its own task fed by [`crate::state::ProxyState`]'s broadcast: the
//! proxier never waits for the apiserver. The exact apply time stays in the proxy's record
//! (`GET /applied`); the Event's `eventTime` follows it within the time of one local request.

use minik_api::core::{ObjectReference, Service};
use minik_api::ObjectKey;
use minik_client::events::Recorder;
use minik_client::Store;
use tokio::sync::broadcast::{self, error::RecvError};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::service_port::format_endpoint_list;
use crate::state::{AppliedChange, Problem};

/// minik's own Event reason for "the proxy now routes to this endpoint set".
pub const REASON_ENDPOINTS_APPLIED: &str = "EndpointsApplied";

/// Writes one Event per applied change until `shutdown` fires.
pub async fn publish_applied(
    recorder: Recorder,
    services: Store<Service>,
    mut applied: broadcast::Receiver<AppliedChange>,
    shutdown: CancellationToken,
) {
    loop {
        let change = tokio::select! {
            _ = shutdown.cancelled() => break,
            change = applied.recv() => change,
        };
        match change {
            Ok(change) => publish_one(&recorder, &services, &change).await,
            Err(RecvError::Lagged(missed)) => {
                warn!(missed, "too many endpoint changes; events skipped")
            }
            Err(RecvError::Closed) => break,
        }
    }
}

/// minik's Event reason for "a node port could not be opened".
pub const REASON_NODE_PORT_UNAVAILABLE: &str = "NodePortUnavailable";

/// Writes one Warning Event per problem until `shutdown` fires.
pub async fn publish_problems(
    recorder: Recorder,
    services: Store<Service>,
    mut problems: broadcast::Receiver<Problem>,
    shutdown: CancellationToken,
) {
    loop {
        let problem = tokio::select! {
            _ = shutdown.cancelled() => break,
            problem = problems.recv() => problem,
        };
        let problem = match problem {
            Ok(problem) => problem,
            Err(RecvError::Lagged(missed)) => {
                warn!(missed, "too many problems; events skipped");
                continue;
            }
            Err(RecvError::Closed) => break,
        };
        let regarding = service_reference(&services, &problem.service);
        let reason = REASON_NODE_PORT_UNAVAILABLE;
        if let Err(error) = recorder
            .publish(&regarding, "Warning", reason, &problem.message)
            .await
        {
            warn!(service = %problem.service, %error, "cannot publish problem event");
        }
    }
}

/// Writes the Event of one change (errors are logged: an Event is never worth failing for).
async fn publish_one(recorder: &Recorder, services: &Store<Service>, change: &AppliedChange) {
    let regarding = service_reference(services, &change.service);
    let message = message(change);
    match recorder
        .publish(&regarding, "Normal", REASON_ENDPOINTS_APPLIED, &message)
        .await
    {
        Ok(()) => debug!(service = %change.service, "published endpoints event"),
        Err(error) => warn!(service = %change.service, %error, "cannot publish endpoints event"),
    }
}

/// `Applied endpoints for ns/name:port: list`.
fn message(change: &AppliedChange) -> String {
    let list = format_endpoint_list(&change.endpoints);
    format!(
        "Applied endpoints for {}:{}: {list}",
        change.service, change.port
    )
}

/// A reference to the Service, with its uid when the Service is in the store (so `describe`
/// finds the Event), or just its kind, namespace and name otherwise.
fn service_reference(services: &Store<Service>, service: &str) -> ObjectReference {
    let key = ObjectKey::parse(service);
    match services.get(&key) {
        Some(object) => minik_client::events::object_reference(object.as_ref()),
        None => ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Service".into()),
            namespace: key.namespace,
            name: Some(key.name),
            ..ObjectReference::default()
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_names_the_service_port_and_its_endpoints() {
        let change = AppliedChange {
            service: "default/web".into(),
            port: "http".into(),
            endpoints: vec![
                "127.244.1.2:8080".parse().unwrap(),
                "127.244.1.3:8080".parse().unwrap(),
            ],
            time: jiff::Timestamp::now(),
        };
        assert_eq!(
            message(&change),
            "Applied endpoints for default/web:http: 127.244.1.2:8080,127.244.1.3:8080"
        );
        let empty = AppliedChange {
            endpoints: vec![],
            ..change
        };
        assert_eq!(
            message(&empty),
            "Applied endpoints for default/web:http: <none>"
        );
    }
}
