//! minik-controller-manager: the controllers that turn Deployments into ReplicaSets into Pods (and
//! Jobs into pods that run to completion), and the garbage collector that deletes what lost its
//! owner.
//!
//! Kubernetes counterpart: `kube-controller-manager` (`cmd/kube-controller-manager/app/
//! controllermanager.go`): one process, leader election on a Lease, one shared informer per kind,
//! and a list of controllers started together once this instance leads. The pieces:
//!
//! 1. [`leader`]: acquire and renew `kube-system/kube-controller-manager`; only the leader acts;
//! 2. [`informers`]: one list+watch per kind, fanned out to every controller's event handlers;
//! 3. [`controller`]: the [`controller::Controller`] trait, and the workers that drain each
//!    controller's `minik_client::WorkQueue` with per-key rate-limited retries;
//! 4. the controllers, listed in one place ([`start_controllers`]): [`replicaset`] (also the
//!    replication manager, over ReplicationControllers), [`deployment`], [`job`], [`daemonset`],
//!    [`cronjob`], [`disruption`] (PodDisruptionBudgets), [`serviceaccount`] (a `default`
//!    ServiceAccount per namespace), [`statefulset`] (ordered pods with their own claims), [`volume`]
//!    (the PersistentVolume binder and the local-path provisioner), [`ttlafterfinished`] (finished
//!    Jobs deleted after their TTL), [`rootcacert`] (the `kube-root-ca.crt` ConfigMap per namespace), [`nodelifecycle`] (dead nodes: Unknown, tainted, their pods
//!    evicted), [`podgc`] (finished and orphaned pods), [`hpa`] (HorizontalPodAutoscalers: replicas
//!    from CPU utilisation through metrics.k8s.io), [`idle`] (annotated Deployments scaled to zero
//!    when no connection has been open for a while) and [`gc`] (the garbage collector).
//!
//! ```text
//!  Lease ──► leader? ──► SharedInformers (pods, replicasets, deployments, every kind's metadata)
//!                            │ handlers: object → keys
//!                            ▼
//!              WorkQueue per controller ──► workers ──► sync(key) ──► apiserver writes
//! ```
//!
//! minik simplifies: few controller-specific flags (workers, the node grace period, the pod GC
//! threshold), no metrics, no API throttling
//! (upstream holds the whole process to 20 writes/s).
//!
//! Read next: [`deployment::rolling`], the arithmetic of a rolling update.

pub mod controller;
pub mod cronjob;
pub mod daemonset;
pub mod deployment;
pub mod disruption;
pub mod expectations;
pub mod gc;
pub mod hpa;
pub mod idle;
pub mod informers;
pub mod job;
pub mod leader;
pub mod nodelifecycle;
pub mod ownership;
pub mod pod_control;
pub mod podgc;
pub mod replicaset;
pub mod rootcacert;
pub mod serviceaccount;
pub mod statefulset;
pub mod ttlafterfinished;
pub mod volume;

use std::path::PathBuf;
use std::time::Duration;

use futures::future::BoxFuture;
use minik_client::Client;
use tokio_util::sync::CancellationToken;

use crate::informers::SharedInformers;
use crate::leader::LeaderElectionConfig;
use crate::nodelifecycle::NodeLifecycleOptions;
use crate::podgc::PodGcOptions;

/// What can stop the controller manager.
// The client error carries a whole `Status`, as everywhere in minik; it is returned once, at exit.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The apiserver URL is not usable.
    #[error("client: {0}")]
    Client(#[from] minik_client::Error),
    /// Another instance took the lease, or it could not be renewed in time; upstream exits
    /// ("leaderelection lost") and is restarted by its supervisor.
    #[error("leader election lost")]
    LeaderLost,
}

/// The controller manager's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The controller manager's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The apiserver, e.g. `http://127.0.0.1:6443`.
    pub server: String,
    /// A kubeconfig to connect with instead of plain http to `server` (its server wins).
    pub kubeconfig: Option<PathBuf>,
    /// Workers per controller (upstream `--concurrent-deployment-syncs`, `…-replicaset-syncs`: 5).
    pub workers: usize,
    /// Leader election on the `kube-system/kube-controller-manager` Lease.
    pub leader_election: LeaderElectionConfig,
    /// The node lifecycle controller's grace period.
    pub node_lifecycle: NodeLifecycleOptions,
    /// The pod garbage collector's threshold and quarantine.
    pub pod_gc: PodGcOptions,
    /// How far ahead of the real clock the CronJob controller runs (tests drive schedules so).
    pub cronjob_clock_offset: Duration,
    /// The cluster CA the root CA publisher puts in every namespace (`--root-ca-file`).
    pub root_ca_file: Option<PathBuf>,
    /// How often each HorizontalPodAutoscaler is synced (upstream 15 s).
    pub hpa_sync_period: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            server: "http://127.0.0.1:6443".to_string(),
            kubeconfig: None,
            workers: 5,
            leader_election: LeaderElectionConfig::default(),
            node_lifecycle: NodeLifecycleOptions::default(),
            pod_gc: PodGcOptions::default(),
            cronjob_clock_offset: Duration::ZERO,
            root_ca_file: None,
            hpa_sync_period: Duration::from_secs(15),
        }
    }
}

/// Command-line flags of `minik controller-manager`.
#[derive(Clone, Debug, clap::Parser)]
#[command(
    about = "The minik controller manager: ReplicaSets, Deployments, Jobs, CronJobs, DaemonSets, ReplicationControllers, disruption budgets, node lifecycle, garbage collection"
)]
pub struct Args {
    /// The apiserver URL.
    #[arg(long, default_value = "http://127.0.0.1:6443")]
    pub server: String,
    /// A kubeconfig to connect with (https, client certificate); its server wins over --server.
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Objects synced concurrently by each controller.
    #[arg(long, default_value_t = 5)]
    pub workers: usize,
    /// How long a leader's lease lasts without renewal (upstream `--leader-elect-lease-duration`).
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub leader_elect_lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up (`--leader-elect-renew-deadline`).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub leader_elect_renew_deadline: Duration,
    /// How often candidates try to acquire or renew (`--leader-elect-retry-period`).
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub leader_elect_retry_period: Duration,
    /// How long a node may go unheard (no Lease renewal, no status) before it is marked Unknown.
    #[arg(long, default_value = "40s", value_parser = parse_duration)]
    pub node_monitor_grace_period: Duration,
    /// Terminated pods kept before the oldest are deleted (0: keep them all).
    #[arg(long, default_value_t = 12_500)]
    pub terminated_pod_gc_threshold: i64,
    /// How long a node must stay missing before its pods are deleted (minik's flag; upstream 40 s).
    #[arg(long, default_value = "40s", value_parser = parse_duration)]
    pub pod_gc_orphan_quarantine: Duration,
    /// Runs the CronJob controller's clock this far ahead (`90m`), to test schedules.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub cronjob_clock_offset: Duration,
    /// The cluster CA to publish as `kube-root-ca.crt` in every namespace (PEM).
    #[arg(long)]
    pub root_ca_file: Option<PathBuf>,
    /// How often each HorizontalPodAutoscaler is synced (upstream's flag of the same name).
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub horizontal_pod_autoscaler_sync_period: Duration,
}

fn parse_duration(text: &str) -> std::result::Result<Duration, humantime::DurationError> {
    humantime::parse_duration(text)
}

impl Args {
    /// The configuration these flags describe.
    pub fn into_config(self) -> Config {
        Config {
            server: self.server,
            kubeconfig: self.kubeconfig,
            workers: self.workers.max(1),
            leader_election: LeaderElectionConfig {
                lease_duration: self.leader_elect_lease_duration,
                renew_deadline: self.leader_elect_renew_deadline,
                retry_period: self.leader_elect_retry_period,
                ..LeaderElectionConfig::default()
            },
            node_lifecycle: NodeLifecycleOptions {
                grace_period: self.node_monitor_grace_period,
            },
            pod_gc: PodGcOptions {
                terminated_threshold: self.terminated_pod_gc_threshold,
                orphan_quarantine: self.pod_gc_orphan_quarantine,
            },
            cronjob_clock_offset: self.cronjob_clock_offset,
            root_ca_file: self.root_ca_file,
            hpa_sync_period: self
                .horizontal_pod_autoscaler_sync_period
                .max(Duration::from_millis(100)),
        }
    }
}

/// Runs the controller manager until `shutdown` is cancelled (`Ok`) or leadership is lost (`Err`).
pub async fn run(config: Config, shutdown: CancellationToken) -> Result<()> {
    let client = Client::connect(&config.server, config.kubeconfig.as_deref())?;
    let leading_client = client.clone();
    let leader_election = config.leader_election.clone();
    leader::run(
        client,
        leader_election,
        shutdown,
        move |leading: CancellationToken| run_controllers(leading_client, config.clone(), leading),
    )
    .await
}

/// What a leader runs: the shared informers and every controller, until `shutdown`.
async fn run_controllers(client: Client, config: Config, shutdown: CancellationToken) {
    let informers = SharedInformers::new(client.clone());
    let controllers = start_controllers(&informers, &client, &config, &shutdown);
    let count = controllers.len();
    let synced = informers.wait_for_sync();
    let informers_done = informers.start(shutdown.clone());
    // `minik up` waits for this line before it reports the component started.
    let ready = async {
        tokio::select! {
            _ = shutdown.cancelled() => {}
            _ = synced => tracing::info!(controllers = count, "ready"),
        }
    };
    let ((), _) = tokio::join!(ready, futures::future::join_all(controllers));
    informers_done.await;
}

/// The list of controllers: each registers its handlers on the shared informers now and returns
/// the future of its workers. A new controller (DaemonSets, node lifecycle…) is one line here.
pub fn start_controllers(
    informers: &SharedInformers,
    client: &Client,
    config: &Config,
    shutdown: &CancellationToken,
) -> Vec<BoxFuture<'static, ()>> {
    let workers = config.workers;
    vec![
        controller::spawn(
            replicaset::ReplicaSetController::new(informers, client.clone()),
            informers,
            workers,
            shutdown.clone(),
        ),
        controller::spawn(
            deployment::DeploymentController::new(informers, client.clone()),
            informers,
            workers,
            shutdown.clone(),
        ),
        controller::spawn(
            job::JobController::new(informers, client.clone(), job::JobOptions::default()),
            informers,
            workers,
            shutdown.clone(),
        ),
        controller::spawn(
            serviceaccount::ServiceAccountsController::new(informers, client.clone()),
            informers,
            workers,
            shutdown.clone(),
        ),
        // The later workload controllers (issue 20).
        controller::spawn(
            replicaset::ReplicaSetController::new_replication_manager(informers, client.clone()),
            informers,
            workers,
            shutdown.clone(),
        ),
        controller::spawn(
            disruption::DisruptionController::new(informers, client.clone()),
            informers,
            workers,
            shutdown.clone(),
        ),
        controller::spawn(
            daemonset::DaemonSetController::new(informers, client.clone()),
            informers,
            workers,
            shutdown.clone(),
        ),
        controller::spawn(
            nodelifecycle::NodeLifecycleController::new(
                informers,
                client.clone(),
                config.node_lifecycle,
            ),
            informers,
            workers,
            shutdown.clone(),
        ),
        controller::spawn(
            cronjob::CronJobController::new(
                informers,
                client.clone(),
                cronjob::CronJobOptions::with_offset(config.cronjob_clock_offset),
            ),
            informers,
            workers,
            shutdown.clone(),
        ),
        // StatefulSets, the storage they claim, and finished Jobs' TTL (issue 20).
        controller::spawn(
            statefulset::StatefulSetController::new(informers, client.clone()),
            informers,
            workers,
            shutdown.clone(),
        ),
        controller::spawn(
            volume::VolumeController::new(informers, client.clone()),
            informers,
            workers,
            shutdown.clone(),
        ),
        controller::spawn(
            ttlafterfinished::TtlAfterFinishedController::new(informers, client.clone()),
            informers,
            workers,
            shutdown.clone(),
        ),
        // One pass at a time: its key is the whole cluster.
        controller::spawn(
            podgc::PodGc::new(informers, client.clone(), config.pod_gc),
            informers,
            1,
            shutdown.clone(),
        ),
        controller::spawn(
            rootcacert::RootCaPublisher::new(informers, client.clone(), root_ca(config)),
            informers,
            workers,
            shutdown.clone(),
        ),
        controller::spawn(
            hpa::HorizontalController::new(informers, client.clone(), config.hpa_sync_period),
            informers,
            workers,
            shutdown.clone(),
        ),
        // Deployments scaled to zero when idle (issue 24): reads the proxy's and ingress's reports.
        controller::spawn(
            idle::IdleController::new(informers, client.clone()),
            informers,
            workers,
            shutdown.clone(),
        ),
        // The collector registers last: it reuses every typed informer registered above.
        controller::spawn(
            gc::GarbageCollector::new(informers, client.clone()),
            informers,
            workers,
            shutdown.clone(),
        ),
    ]
}

/// The CA the root CA publisher publishes: `--root-ca-file`'s contents, or empty for a plain-http
/// cluster (no CA) or a file that cannot be read (said in the log).
fn root_ca(config: &Config) -> String {
    let Some(path) = &config.root_ca_file else {
        return String::new();
    };
    std::fs::read_to_string(path).unwrap_or_else(|e| {
        tracing::warn!(path = %path.display(), error = %e, "cannot read the root CA");
        String::new()
    })
}
