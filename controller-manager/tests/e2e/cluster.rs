//! An in-process apiserver, fast leader-election timings, and waiting on watches.

use std::time::Duration;

use minik_client::{Api, Client, ListParams, Object};
use minik_controller_manager::leader::LeaderElectionConfig;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// How long any wait may take before the test fails.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// An apiserver, stopped when dropped.
pub struct Apiserver {
    pub url: String,
    pub client: Client,
    shutdown: CancellationToken,
}

impl Drop for Apiserver {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// Starts an in-memory apiserver on a free loopback port.
pub async fn apiserver() -> Apiserver {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let shutdown = CancellationToken::new();
    tokio::spawn(minik_apiserver::serve(
        listener,
        minik_apiserver::StorageBackend::memory(100_000),
        shutdown.child_token(),
    ));
    Apiserver {
        client: Client::new(&url).unwrap(),
        url,
        shutdown,
    }
}

/// Leader election scaled down: a 2 s lease renewed every 100 ms.
pub fn fast_election(identity: &str) -> LeaderElectionConfig {
    LeaderElectionConfig {
        identity: identity.to_string(),
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_secs(1),
        retry_period: Duration::from_millis(100),
        ..LeaderElectionConfig::default()
    }
}

/// Waits (on a watch, with a timeout) until `condition` holds for the listed objects.
pub async fn wait_until<K: Object + minik_api::k8s_openapi::ListableResource>(
    api: &Api<K>,
    condition: impl FnMut(&[K]) -> bool,
) -> Vec<K> {
    let found = minik_client::wait::await_all(api, ListParams::default(), condition);
    tokio::time::timeout(PATIENCE, found)
        .await
        .expect("condition not reached in time")
        .expect("watch ended")
}
