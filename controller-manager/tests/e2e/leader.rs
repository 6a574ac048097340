//! Leader election: only one of two candidates leads; a clean stop hands the Lease over at once.

use std::time::Duration;

use minik_api::k8s_openapi::api::coordination::v1::Lease;
use minik_client::Api;
use minik_controller_manager::leader;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::cluster::{apiserver, fast_election, wait_until, PATIENCE};

/// Starts a candidate that reports on `leading` when it starts leading.
fn candidate(
    url: &str,
    identity: &'static str,
    leading: mpsc::UnboundedSender<&'static str>,
) -> CancellationToken {
    let shutdown = CancellationToken::new();
    let client = minik_client::Client::new(url).unwrap();
    tokio::spawn(leader::run(
        client,
        fast_election(identity),
        shutdown.clone(),
        move |token| async move {
            let _ = leading.send(identity);
            token.cancelled().await;
        },
    ));
    shutdown
}

fn holder(lease: &Lease) -> Option<&str> {
    lease.spec.as_ref()?.holder_identity.as_deref()
}

/// Two instances: the first leads and holds `kube-system/kube-controller-manager`; the second
/// waits however long it tries; when the first stops it releases the Lease and the second leads.
#[tokio::test]
async fn one_of_two_candidates_leads_and_the_other_takes_over_on_release() {
    let server = apiserver().await;
    let (leading_tx, mut leading) = mpsc::unbounded_channel();
    let first = candidate(&server.url, "first", leading_tx.clone());
    let leader = tokio::time::timeout(PATIENCE, leading.recv())
        .await
        .unwrap();
    assert_eq!(leader, Some("first"));
    let leases = Api::<Lease>::namespaced(server.client.clone(), "kube-system");
    wait_until(&leases, |all| {
        all.iter().any(|l| holder(l) == Some("first"))
    })
    .await;

    let _second = candidate(&server.url, "second", leading_tx);
    // Twenty retry periods, well within the 2 s lease the first keeps renewing.
    let nobody = tokio::time::timeout(Duration::from_secs(2), leading.recv()).await;
    assert!(
        nobody.is_err(),
        "the second candidate led while the first held the lease: {nobody:?}"
    );

    first.cancel();
    let leader = tokio::time::timeout(PATIENCE, leading.recv())
        .await
        .unwrap();
    assert_eq!(leader, Some("second"));
    let all = wait_until(&leases, |all| {
        all.iter().any(|l| holder(l) == Some("second"))
    })
    .await;
    let lease = all
        .iter()
        .find(|l| l.metadata.name.as_deref() == Some("kube-controller-manager"))
        .unwrap();
    assert_eq!(lease.spec.as_ref().unwrap().lease_transitions, Some(1));
}
