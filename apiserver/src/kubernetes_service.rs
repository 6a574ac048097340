//! The `kubernetes` Service: how pods find the API server, kept in place by the server itself.
//!
//! Kubernetes counterpart: the API server's bootstrap controller,
//! `pkg/controlplane/controller/kubernetesservice/controller.go` (`UpdateKubernetesService`: the
//! Service `default/kubernetes`, port 443 `https`, on the first address of the service range) and
//! the endpoint reconciler of `pkg/controlplane/reconcilers/` (its Endpoints name the server's own
//! address and secure port) — docs/security.md#s14. The endpoint controller leaves them alone: the
//! Service has no selector; minik's EndpointSlice mirroring makes the slice from the Endpoints.
//!
//! Upstream re-checks both every 10 s; minik reconciles at start and then whenever a watch on the
//! two keys sees a change, so a deleted Service or edited Endpoints are put back at once.
//!
//! What minik simplifies: with one API server the Endpoints hold its address; the Service is
//! re-created when missing but an edited Service is left as it is. Several API servers on one
//! etcd use the lease reconciler instead (`endpoint_leases.rs`).

use std::net::SocketAddr;
use std::time::Duration;

use futures::StreamExt;
use minik_api::resource::by_plural;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::error::{ApiError, ApiResult};
use crate::registry::{self, services};
use crate::AppState;

/// The Service's name and namespace.
pub const NAME: &str = "kubernetes";
const NAMESPACE: &str = "default";
const SERVICE_KEY: &str = "/registry/services/default/kubernetes";
const ENDPOINTS_KEY: &str = "/registry/endpoints/default/kubernetes";

/// The Service as the bootstrap controller writes it (`CreateOrUpdateMasterServiceIfNeeded`).
pub fn service(api_port: u16) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": NAME, "namespace": NAMESPACE,
                     "labels": {"component": "apiserver", "provider": "kubernetes"}},
        "spec": {
            "type": "ClusterIP",
            "clusterIP": services::KUBERNETES_SERVICE_IP.to_string(),
            "sessionAffinity": "None",
            "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": api_port}],
        },
    })
}

/// The Endpoints the reconciler keeps: the server's own address and port.
pub fn endpoints(listen: SocketAddr) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "subsets": [{
            "addresses": [{"ip": listen.ip().to_string()}],
            "ports": [{"name": "https", "port": listen.port(), "protocol": "TCP"}],
        }],
    })
}

/// Creates the Service if it is missing and puts the Endpoints right.
pub async fn reconcile(state: &AppState, listen: SocketAddr) -> ApiResult<()> {
    ensure_service(state, listen.port()).await?;
    ensure_endpoints(state, endpoints(listen), &listen.to_string()).await
}

/// Creates the Service if it is missing (its `targetPort` is `api_port`).
pub(crate) async fn ensure_service(state: &AppState, api_port: u16) -> ApiResult<()> {
    let storage = state.storage.as_ref();
    let stored = |key: &str| {
        storage
            .get(key)
            .map_err(|e| ApiError::from_storage(e, "services", NAME))
    };
    if stored(SERVICE_KEY)?.is_none() {
        let _allocation = state.ip_allocation.lock().await;
        let (records, _) = storage
            .list("/registry/services/")
            .map_err(|e| ApiError::from_storage(e, "services", ""))?;
        let used = services::allocated(&records);
        let mut wanted = service(api_port);
        if used.ips.contains(&services::KUBERNETES_SERVICE_IP) {
            // A Service created before this rule holds the address: take any other.
            warn!(ip = %services::KUBERNETES_SERVICE_IP, "the kubernetes Service's address is taken");
            wanted["spec"]["clusterIP"] = Value::Null;
        }
        let info = by_plural("", "services").expect("services are served");
        let object = registry::prepare_create(info, wanted, Some(NAMESPACE), &used)?;
        match storage.create(SERVICE_KEY, object).await {
            Ok(record) => info!(revision = record.revision, "created the kubernetes Service"),
            Err(crate::storage::Error::AlreadyExists(_)) => {}
            Err(e) => return Err(ApiError::from_storage(e, "services", NAME)),
        }
    }
    Ok(())
}

/// Puts the Endpoints' subsets right: `wanted`'s (`address` says whose, for the log).
pub(crate) async fn ensure_endpoints(
    state: &AppState,
    wanted: Value,
    address: &str,
) -> ApiResult<()> {
    let storage = state.storage.as_ref();
    let stored = |key: &str| {
        storage
            .get(key)
            .map_err(|e| ApiError::from_storage(e, "endpoints", NAME))
    };
    let info = by_plural("", "endpoints").expect("endpoints are served");
    let error = |e| ApiError::from_storage(e, "endpoints", NAME);
    match stored(ENDPOINTS_KEY)? {
        None => {
            let object =
                registry::prepare_create(info, wanted, Some(NAMESPACE), &Default::default())?;
            match storage.create(ENDPOINTS_KEY, object).await {
                Ok(_) | Err(crate::storage::Error::AlreadyExists(_)) => {}
                Err(e) => return Err(error(e)),
            }
            info!(address, "wrote the kubernetes Endpoints");
        }
        Some(record) if record.value.get("subsets") != wanted.get("subsets") => {
            let mut object = record.value.as_ref().clone();
            object["subsets"] = wanted["subsets"].clone();
            let object = registry::prepare_update(
                info,
                object,
                &record.value,
                NAME,
                None,
                &Default::default(),
            )?;
            storage
                .update(ENDPOINTS_KEY, object, Some(record.revision))
                .await
                .map_err(error)?;
            info!(address, "corrected the kubernetes Endpoints");
        }
        Some(_) => {}
    }
    Ok(())
}

/// Reconciles at start, then on every change of the two objects, until `shutdown`.
pub async fn run(state: AppState, listen: SocketAddr, shutdown: CancellationToken) {
    loop {
        let after = state.storage.current_revision();
        if let Err(e) = reconcile(&state, listen).await {
            warn!(error = %e.0.message.clone().unwrap_or_default(), "kubernetes Service not reconciled; retrying");
        }
        let streams: Result<Vec<_>, _> = [SERVICE_KEY, ENDPOINTS_KEY]
            .iter()
            .map(|key| state.storage.watch(key, after))
            .collect();
        if let Ok(streams) = streams {
            let mut events = futures::stream::select_all(streams);
            // The first event after `after` may be this reconcile's own write: harmless, the next
            // reconcile finds everything in place and writes nothing.
            let event = tokio::select! {
                _ = shutdown.cancelled() => return,
                event = events.next() => event,
            };
            if let Some(Ok(_)) = event {
                continue;
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
        }
    }
}
