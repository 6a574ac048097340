//! Leader election on a `coordination.k8s.io/v1` Lease, so that only one instance acts.
//!
//! Kubernetes counterpart: client-go's `tools/leaderelection` (`leaderelection.go`,
//! `resourcelock/leaselock.go`) as kube-controller-manager uses it: Lease
//! `kube-system/kube-controller-manager`, leaseDuration 15 s, renewDeadline 10 s, retryPeriod 2 s.
//!
//! - A candidate tries every `retry_period`. It takes the Lease when nobody holds it, when it holds
//!   it already, or when the holder's record has not changed for `lease_duration` **as measured by
//!   the candidate's own clock** since it first saw that record (upstream's `observedTime`: clock
//!   skew between machines does not matter).
//! - Every write carries the `resourceVersion` it read, so two candidates racing for an expired
//!   Lease cannot both win: the second gets 409 Conflict.
//! - The leader renews every `retry_period`; if it could not renew for `renew_deadline` it stops
//!   leading: its controllers are cancelled and [`run`] returns [`Error::LeaderLost`] (upstream
//!   exits the process). On a clean shutdown it releases the Lease (client-go's
//!   `ReleaseOnCancel`) so the next instance takes over at once.

use std::future::Future;
use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use minik_api::meta::ObjectMeta;
use minik_client::{Api, Client};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

use crate::{Error, Result};

/// Where and how often to elect.
#[derive(Clone, Debug)]
pub struct LeaderElectionConfig {
    /// `kube-system`.
    pub namespace: String,
    /// `kube-controller-manager`.
    pub name: String,
    /// This candidate's name in `holderIdentity` (`hostname_uuid` upstream).
    pub identity: String,
    /// How long others wait after the last renewal they saw before taking over.
    pub lease_duration: Duration,
    /// How long the leader keeps retrying a failed renewal before it stops leading.
    pub renew_deadline: Duration,
    /// How often to try to acquire or renew.
    pub retry_period: Duration,
}

impl Default for LeaderElectionConfig {
    fn default() -> Self {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "minik".to_string());
        LeaderElectionConfig {
            namespace: "kube-system".to_string(),
            name: "kube-controller-manager".to_string(),
            identity: format!("{host}_{}", uuid::Uuid::new_v4()),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// The candidate's memory of the record it last saw, and when it saw it change.
struct Observed {
    spec: Option<LeaseSpec>,
    at: Instant,
}

/// The pure decision: the spec to write to hold the Lease, or `None` when another holder's
/// record is still fresh. `record_expired`: the record has not changed for `lease_duration`.
pub fn next_spec(
    current: Option<&LeaseSpec>,
    identity: &str,
    record_expired: bool,
    lease_duration: Duration,
    now: jiff::Timestamp,
) -> Option<LeaseSpec> {
    let now_micro = minik_api::meta::MicroTime(now);
    let holder = current
        .and_then(|spec| spec.holder_identity.as_deref())
        .unwrap_or("");
    let held_by_other = !holder.is_empty() && holder != identity;
    if held_by_other && !record_expired {
        return None;
    }
    let mut spec = current.cloned().unwrap_or_default();
    if holder != identity {
        spec.acquire_time = Some(now_micro.clone());
        spec.lease_transitions =
            Some(spec.lease_transitions.unwrap_or(0) + i32::from(current.is_some()));
    }
    spec.holder_identity = Some(identity.to_string());
    spec.lease_duration_seconds = Some(lease_duration.as_secs().max(1) as i32);
    spec.renew_time = Some(now_micro);
    Some(spec)
}

struct Elector {
    api: Api<Lease>,
    config: LeaderElectionConfig,
    observed: Observed,
}

impl Elector {
    /// One attempt to acquire or renew (client-go `tryAcquireOrRenew`); `Ok(true)`: we hold it.
    async fn try_acquire_or_renew(&mut self) -> minik_client::Result<bool> {
        let now = jiff::Timestamp::now();
        let Some(lease) = self.api.get_opt(&self.config.name).await? else {
            let spec = next_spec(
                None,
                &self.config.identity,
                true,
                self.config.lease_duration,
                now,
            );
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.config.name.clone()),
                    namespace: Some(self.config.namespace.clone()),
                    ..ObjectMeta::default()
                },
                spec,
            };
            return match self.api.create(&lease).await {
                Ok(_) => Ok(true),
                Err(error) if error.is_already_exists() => Ok(false),
                Err(error) => Err(error),
            };
        };
        if lease.spec != self.observed.spec {
            self.observed = Observed {
                spec: lease.spec.clone(),
                at: Instant::now(),
            };
        }
        let expired = self.observed.at.elapsed() >= self.config.lease_duration;
        let Some(spec) = next_spec(
            lease.spec.as_ref(),
            &self.config.identity,
            expired,
            self.config.lease_duration,
            now,
        ) else {
            return Ok(false);
        };
        let updated = Lease {
            spec: Some(spec),
            ..lease
        };
        match self.api.replace(&self.config.name, &updated).await {
            Ok(written) => {
                self.observed = Observed {
                    spec: written.spec,
                    at: Instant::now(),
                };
                Ok(true)
            }
            Err(error) if error.is_conflict() => Ok(false),
            Err(error) => Err(error),
        }
    }

    /// Gives the Lease up: empty holder, so the next candidate need not wait out the duration.
    async fn release(&mut self) {
        let Ok(Some(mut lease)) = self.api.get_opt(&self.config.name).await else {
            return;
        };
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        if spec.holder_identity.as_deref() != Some(self.config.identity.as_str()) {
            return;
        }
        spec.holder_identity = None;
        spec.lease_duration_seconds = Some(1);
        match self.api.replace(&self.config.name, &lease).await {
            Ok(_) => info!(lease = %self.config.name, "released the lease"),
            Err(error) => warn!(%error, "could not release the lease"),
        }
    }
}

/// Campaigns until this instance leads, then runs `lead(token)` while it keeps the Lease.
pub async fn run<F, Fut>(
    client: Client,
    config: LeaderElectionConfig,
    shutdown: CancellationToken,
    lead: F,
) -> Result<()>
where
    F: FnOnce(CancellationToken) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let api = Api::namespaced(client, &config.namespace);
    let mut elector = Elector {
        api,
        config,
        observed: Observed {
            spec: None,
            at: Instant::now(),
        },
    };
    if !acquire(&mut elector, &shutdown).await {
        return Ok(());
    }
    info!(identity = %elector.config.identity, lease = %elector.config.name, "became leader");
    let leading = shutdown.child_token();
    let work = tokio::spawn(lead(leading.clone()));
    let lost = renew(&mut elector, &shutdown).await;
    leading.cancel();
    let _ = work.await;
    if lost {
        warn!(identity = %elector.config.identity, "leader election lost");
        return Err(Error::LeaderLost);
    }
    elector.release().await;
    Ok(())
}

/// Retries every `retry_period` until the Lease is ours (`true`) or shutdown (`false`).
async fn acquire(elector: &mut Elector, shutdown: &CancellationToken) -> bool {
    let mut waiting_logged = false;
    loop {
        match elector.try_acquire_or_renew().await {
            Ok(true) => return true,
            Ok(false) if !waiting_logged => {
                info!(lease = %elector.config.name, "another instance leads; waiting");
                waiting_logged = true;
            }
            Ok(false) => {}
            Err(error) => debug!(%error, "could not read the lease"),
        }
        tokio::select! {
            _ = shutdown.cancelled() => return false,
            _ = tokio::time::sleep(elector.config.retry_period) => {}
        }
    }
}

/// Renews every `retry_period`; returns `true` when leadership was lost, `false` on shutdown.
async fn renew(elector: &mut Elector, shutdown: &CancellationToken) -> bool {
    let mut last_renewed = Instant::now();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return false,
            _ = tokio::time::sleep(elector.config.retry_period) => {}
        }
        match elector.try_acquire_or_renew().await {
            Ok(true) => last_renewed = Instant::now(),
            Ok(false) => return true,
            Err(error) => debug!(%error, "could not renew the lease"),
        }
        if last_renewed.elapsed() > elector.config.renew_deadline {
            return true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DURATION: Duration = Duration::from_secs(15);

    fn held_by(holder: &str) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(holder.to_string()),
            lease_transitions: Some(3),
            ..LeaseSpec::default()
        }
    }

    #[test]
    fn a_fresh_lease_of_another_holder_is_left_alone() {
        let now = jiff::Timestamp::now();
        assert_eq!(
            next_spec(Some(&held_by("a")), "b", false, DURATION, now),
            None
        );
    }

    #[test]
    fn an_expired_or_released_lease_is_taken_with_one_more_transition() {
        let now = jiff::Timestamp::now();
        let taken = next_spec(Some(&held_by("a")), "b", true, DURATION, now).unwrap();
        assert_eq!(taken.holder_identity.as_deref(), Some("b"));
        assert_eq!(taken.lease_transitions, Some(4));
        assert_eq!(taken.lease_duration_seconds, Some(15));
        let released = LeaseSpec::default();
        let taken = next_spec(Some(&released), "b", false, DURATION, now).unwrap();
        assert_eq!(taken.holder_identity.as_deref(), Some("b"));
    }

    #[test]
    fn the_holder_renews_without_a_transition() {
        let now = jiff::Timestamp::now();
        let renewed = next_spec(Some(&held_by("a")), "a", false, DURATION, now).unwrap();
        assert_eq!(renewed.lease_transitions, Some(3));
        assert_eq!(renewed.renew_time, Some(minik_api::meta::MicroTime(now)));
        let created = next_spec(None, "a", true, DURATION, now).unwrap();
        assert_eq!(created.lease_transitions, Some(0));
    }
}
