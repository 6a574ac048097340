//! The lease endpoint reconciler: each API server holds a Lease, and the `kubernetes` Endpoints
//! list the API servers whose Lease is live.
//!
//! Kubernetes counterpart: `pkg/controlplane/reconcilers/lease.go` (`--endpoint-reconciler-type=
//! lease`, the default since 1.11): every apiserver writes its address under `/masterleases/IP`
//! with a TTL of 15 s, refreshed every 10 s, then sets the Endpoints to the addresses of the
//! unexpired leases; on a clean stop it removes its own (`RemoveEndpoints`). A killed apiserver
//! drops out of the Endpoints once its lease expires.
//!
//! What minik changes: the leases are ordinary `coordination.k8s.io` Leases in `kube-system`
//! (`apiserver-127-0-0-1-PORT`, labelled like upstream's identity leases), so `kubectl get leases
//! -n kube-system` shows them; all apiservers share `127.0.0.1`, so the Endpoints have one subset
//! per port. Renewed every third of the TTL.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use minik_api::resource::by_plural;
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::error::{ApiError, ApiResult};
use crate::kubernetes_service::{ensure_endpoints, ensure_service, NAME};
use crate::registry;
use crate::storage::Error as StorageError;
use crate::AppState;

/// How long a lease lives without renewal (upstream's `masterLeaseTTL`, 15 s).
pub const LEASE_TTL: Duration = Duration::from_secs(15);
const LEASES: &str = "/registry/leases/kube-system/";
/// The label upstream's apiserver identity leases carry.
const IDENTITY_LABEL: &str = "apiserver.kubernetes.io/identity";

/// The Lease's name for an apiserver at `listen`: `apiserver-127-0-0-1-6443`.
pub fn lease_name(listen: SocketAddr) -> String {
    let ip = listen.ip().to_string().replace('.', "-");
    format!("apiserver-{ip}-{}", listen.port())
}

/// The Lease an apiserver at `listen` renews, as of `now`.
fn lease(listen: SocketAddr, now: jiff::Timestamp) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": lease_name(listen), "namespace": "kube-system",
                     "labels": {IDENTITY_LABEL: "kube-apiserver"}},
        "spec": {
            "holderIdentity": listen.to_string(),
            "leaseDurationSeconds": LEASE_TTL.as_secs(),
            "renewTime": minik_api::meta::MicroTime(now),
        },
    })
}

/// The apiservers whose lease is live at `now`, sorted (pure: the reconciler's decision).
pub fn live_apiservers(leases: &[Value], now: jiff::Timestamp) -> Vec<SocketAddr> {
    let mut live: Vec<SocketAddr> = leases
        .iter()
        .filter(|l| l["metadata"]["labels"][IDENTITY_LABEL] == "kube-apiserver")
        .filter(|l| {
            let spec = &l["spec"];
            let renewed = spec["renewTime"].as_str().and_then(|t| t.parse().ok());
            let seconds = spec["leaseDurationSeconds"].as_i64().unwrap_or(0);
            renewed.is_some_and(|r: jiff::Timestamp| {
                r + jiff::SignedDuration::from_secs(seconds) > now
            })
        })
        .filter_map(|l| l["spec"]["holderIdentity"].as_str()?.parse().ok())
        .collect();
    live.sort();
    live.dedup();
    live
}

/// The Endpoints listing `live`: one subset per port, its addresses sorted.
pub fn endpoints_of(live: &[SocketAddr]) -> Value {
    let mut by_port: BTreeMap<u16, Vec<String>> = BTreeMap::new();
    for address in live {
        by_port
            .entry(address.port())
            .or_default()
            .push(address.ip().to_string());
    }
    let subsets: Vec<Value> = by_port
        .into_iter()
        .map(|(port, ips)| {
            let addresses: Vec<Value> = ips.into_iter().map(|ip| json!({"ip": ip})).collect();
            json!({"addresses": addresses,
                   "ports": [{"name": "https", "port": port, "protocol": "TCP"}]})
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "Endpoints",
           "metadata": {"name": NAME, "namespace": "default"}, "subsets": subsets})
}

/// Creates or renews this apiserver's Lease (a conflict: another writer won; next round).
async fn renew(state: &AppState, listen: SocketAddr) -> ApiResult<()> {
    let info = by_plural("coordination.k8s.io", "leases").expect("leases are served");
    let key = format!("{LEASES}{}", lease_name(listen));
    let error = |e| ApiError::from_storage(e, "leases", &lease_name(listen));
    let wanted = lease(listen, jiff::Timestamp::now());
    let storage = state.storage.as_ref();
    match storage.get(&key).map_err(error)? {
        None => {
            let object =
                registry::prepare_create(info, wanted, Some("kube-system"), &Default::default())?;
            match storage.create(&key, object).await {
                Ok(_) | Err(StorageError::AlreadyExists(_)) => Ok(()),
                Err(e) => Err(error(e)),
            }
        }
        Some(record) => {
            let mut object = record.value.as_ref().clone();
            object["spec"] = wanted["spec"].clone();
            let name = lease_name(listen);
            let object = registry::prepare_update(
                info,
                object,
                &record.value,
                &name,
                None,
                &Default::default(),
            )?;
            match storage.update(&key, object, Some(record.revision)).await {
                Ok(_) | Err(StorageError::Conflict { .. }) => Ok(()),
                Err(e) => Err(error(e)),
            }
        }
    }
}

/// One round: renew our lease (unless `leaving`), then list the live ones into the Endpoints.
async fn reconcile(state: &AppState, listen: SocketAddr, leaving: bool) -> ApiResult<()> {
    if !leaving {
        renew(state, listen).await?;
    }
    ensure_service(state, listen.port()).await?;
    let (records, _) = state
        .storage
        .list(LEASES)
        .map_err(|e| ApiError::from_storage(e, "leases", ""))?;
    let leases: Vec<Value> = records.iter().map(|r| r.value.as_ref().clone()).collect();
    let mut live = live_apiservers(&leases, jiff::Timestamp::now());
    if leaving {
        live.retain(|a| *a != listen);
    }
    let addresses: Vec<String> = live.iter().map(ToString::to_string).collect();
    ensure_endpoints(state, endpoints_of(&live), &addresses.join(",")).await
}

/// Renews and reconciles every third of [`LEASE_TTL`] until `shutdown`; then removes this
/// apiserver's lease and its address from the Endpoints, as upstream's `RemoveEndpoints`.
pub async fn run(state: AppState, listen: SocketAddr, shutdown: CancellationToken) {
    info!(lease = %lease_name(listen), ttl_s = LEASE_TTL.as_secs(), "lease endpoint reconciler started");
    loop {
        if let Err(e) = reconcile(&state, listen, false).await {
            warn!(error = %e.0.message.clone().unwrap_or_default(), "kubernetes Endpoints not reconciled; retrying");
        }
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(LEASE_TTL / 3) => {}
        }
    }
    // Bounded: the store may be closing too (the etcd mirror stops with the same token).
    let leave = async {
        let key = format!("{LEASES}{}", lease_name(listen));
        let _ = state.storage.delete(&key, None).await;
        reconcile(&state, listen, true).await
    };
    match tokio::time::timeout(Duration::from_secs(2), leave).await {
        Ok(Ok(())) => info!(lease = %lease_name(listen), "left the kubernetes Endpoints"),
        _ => warn!("could not remove this apiserver from the kubernetes Endpoints"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_700_000_000 + seconds).unwrap()
    }

    /// A lease renewed less than its duration ago is live; an older one, or an unlabelled
    /// Lease (a node's, a controller's), is not.
    #[test]
    fn only_unexpired_apiserver_leases_are_live() {
        let a: SocketAddr = "127.0.0.1:7001".parse().unwrap();
        let b: SocketAddr = "127.0.0.1:7002".parse().unwrap();
        let mut other = lease(b, at(0));
        other["metadata"]["labels"] = json!({});
        let leases = [lease(b, at(0)), lease(a, at(10)), other];
        assert_eq!(live_apiservers(&leases, at(14)), [a, b]);
        assert_eq!(live_apiservers(&leases, at(15)), [a]);
        assert!(live_apiservers(&leases, at(30)).is_empty());
    }

    /// One subset per port; an empty list gives no subsets.
    #[test]
    fn endpoints_have_a_subset_per_port() {
        let live: Vec<SocketAddr> = vec![
            "127.0.0.1:7001".parse().unwrap(),
            "127.0.0.2:7001".parse().unwrap(),
            "127.0.0.1:7002".parse().unwrap(),
        ];
        let endpoints = endpoints_of(&live);
        let subsets = endpoints["subsets"].as_array().unwrap();
        assert_eq!(subsets.len(), 2);
        assert_eq!(
            subsets[0]["addresses"],
            json!([{"ip": "127.0.0.1"}, {"ip": "127.0.0.2"}])
        );
        assert_eq!(subsets[1]["ports"][0]["port"], 7002);
        assert_eq!(endpoints_of(&[])["subsets"], json!([]));
        assert_eq!(lease_name(live[0]), "apiserver-127-0-0-1-7001");
    }
}
