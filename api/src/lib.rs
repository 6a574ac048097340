//! minik-api: the Kubernetes objects minik speaks, and the few small types every crate shares.
//!
//! Kubernetes counterpart: `k8s.io/api` (the object types) and `k8s.io/apimachinery` (ObjectMeta,
//! Status, watch events, selectors). Like kube-rs's `kube-core`, this crate does no I/O: no sockets,
//! no files, no tokio. It is the vocabulary the rest of minik is written in.
//!
//! The object types come from `k8s-openapi`, generated from Kubernetes' own OpenAPI document, so
//! their JSON is exactly what kubectl, client-go and the Python client expect (field names, required
//! fields, RFC 3339 timestamps, int-or-string ports). minik adds only what the generated types lack:
//!
//! - [`resource`]: the table of kinds minik serves (plural, short names, namespaced or not);
//! - [`key`]: `ObjectKey`, the `namespace/name` every controller's work queue is keyed by;
//! - [`watch`]: `WatchEvent`, one line of a watch stream;
//! - [`status`]: builders for the `Status` object every API error is;
//! - [`selector`]: label and field selectors, parsed and matched;
//! - [`printers`]: the columns and cells of `get` for each kind (the server's Tables);
//! - [`table`]: the `meta.k8s.io/v1` Table those cells travel in (k8s-openapi lacks it);
//! - [`grace`]: which grace period a pod gets, for the API server and the kubelet alike;
//! - [`workloads`]: defaults and validation of apps/v1 Deployments and ReplicaSets;
//! - [`jobs`]: defaults, generated selector and validation of batch/v1 Jobs;
//! - [`config`]: ConfigMap and Secret keys, Secret types, `stringData` and `immutable`.
//! - [`serviceaccounts`]: ServiceAccount user names and the pod admission (default account, token volume).
//! - [`replication`]: core/v1 ReplicationControllers, and their view as ReplicaSets;
//! - [`daemonsets`]: defaults and validation of apps/v1 DaemonSets;
//! - [`cron`]: cron schedules parsed, and the next time they fire;
//! - [`cronjobs`]: defaults and validation of batch/v1 CronJobs.
//! - [`networking`]: validation of networking.k8s.io/v1 Ingresses and IngressClasses.
//! - [`statefulsets`]: defaults, validation and names of apps/v1 StatefulSets;
//! - [`storage`]: PersistentVolumes, PersistentVolumeClaims and StorageClasses (defaults, validation).
//!
//! minik leaves out: more than one version of a kind (so no conversion), protobuf types, apply
//! configurations and the internal (hub) types upstream converts through.
//!
//! Read next: `apiserver/src/lib.rs`, where these objects are stored and served.

pub mod config;
pub mod cron;
pub mod cronjobs;
pub mod daemonsets;
pub mod defaults;
pub mod disruption;
pub mod grace;
pub mod jobs;
pub mod key;
pub mod networking;
pub mod printers;
pub mod replication;
pub mod resource;
pub mod selector;
pub mod serviceaccounts;
pub mod statefulsets;
pub mod status;
pub mod storage;
pub mod table;
pub mod taints;
pub mod validation;
pub mod watch;
pub mod workloads;

pub use k8s_openapi;
/// The apps/v1 kinds (Deployment, ReplicaSet) and their specs.
pub use k8s_openapi::api::apps::v1 as apps;
/// The batch/v1 kinds (Job) and their specs.
pub use k8s_openapi::api::batch::v1 as batch;
/// The core/v1 kinds (Pod, Service, Endpoints, Node, Event, Namespace, Binding …).
pub use k8s_openapi::api::core::v1 as core;
/// The networking.k8s.io/v1 kinds (Ingress, IngressClass).
pub use k8s_openapi::api::networking::v1 as networking_v1;
/// policy/v1: PodDisruptionBudget and Eviction.
pub use k8s_openapi::api::policy::v1 as policy;
/// ObjectMeta, Status, Time, MicroTime, ListMeta, LabelSelector and the other meta/v1 types.
pub use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;

pub use key::ObjectKey;
pub use resource::ResourceInfo;
pub use table::Table;
pub use watch::WatchEvent;

/// The current time as a Kubernetes `Time` (second precision on the wire, RFC 3339).
pub fn now() -> meta::Time {
    meta::Time(jiff::Timestamp::now())
}

/// The current time as a Kubernetes `MicroTime` (microsecond precision, used by Events' `eventTime`).
pub fn now_micro() -> meta::MicroTime {
    meta::MicroTime(jiff::Timestamp::now())
}
