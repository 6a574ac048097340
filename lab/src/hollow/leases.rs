//! The hollow nodes' heartbeats: one Lease per node in `kube-node-lease`, renewed every 10 s.
//!
//! Kubernetes counterpart: kwok's node lease controller (`kubernetes-sigs/kwok`,
//! `pkg/kwok/controllers/node_lease_controller.go`), which stands in for the kubelet's
//! `pkg/kubelet/nodelease`. Without it the node lifecycle controller would mark every hollow node
//! `Unknown` after its grace period (40 s), taint it, and evict its pods.
//!
//! minik simplifies: one pass over every node per period, `concurrency` renewals in flight.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use minik_api::core::Namespace;
use minik_api::meta::ObjectMeta;
use minik_client::{Api, Client, Patch};
use tokio_util::sync::CancellationToken;
use tracing::debug;

/// The namespace of node Leases.
const LEASE_NAMESPACE: &str = "kube-node-lease";
/// How often each Lease is renewed (the kubelet's default).
const RENEW_INTERVAL: Duration = Duration::from_secs(10);

/// Renews the Lease of every node in `names` every 10 s until `shutdown`.
pub async fn renew_leases(
    client: Client,
    names: Vec<String>,
    concurrency: usize,
    shutdown: CancellationToken,
) {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(LEASE_NAMESPACE.into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    if let Err(error) = namespaces.create(&namespace).await {
        debug!(%error, "the lease namespace (it may exist already)");
    }
    let leases: Api<Lease> = Api::namespaced(client, LEASE_NAMESPACE);
    let mut ticker = tokio::time::interval(RENEW_INTERVAL);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = ticker.tick() => {}
        }
        futures::stream::iter(&names)
            .for_each_concurrent(concurrency.max(1), |name| renew(&leases, name))
            .await;
    }
}

/// Moves one Lease's `renewTime` to now, creating the Lease on first use.
async fn renew(leases: &Api<Lease>, name: &str) {
    let now = minik_api::now_micro();
    let patch = serde_json::json!({ "spec": { "renewTime": now } });
    match leases.patch(name, &Patch::Merge(patch)).await {
        Err(error) if error.is_not_found() => {}
        Err(error) => return debug!(node = %name, %error, "could not renew the lease"),
        Ok(_) => return,
    }
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(LEASE_NAMESPACE.into()),
            ..ObjectMeta::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(name.into()),
            lease_duration_seconds: Some(40),
            renew_time: Some(now),
            ..LeaseSpec::default()
        }),
    };
    if let Err(error) = leases.create(&lease).await {
        debug!(node = %name, %error, "could not create the lease");
    }
}
