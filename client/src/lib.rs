//! minik-client: how every minik component and the `minik` CLI talk to the apiserver.
//!
//! Kubernetes counterpart: client-go (`rest`, typed clientsets, `tools/cache` reflector and store,
//! `tools/record` events) and kube-rs (`kube-client`'s `Client`/`Api`, `kube-runtime`'s `watcher`
//! and `reflector`). The pieces, in the order a component uses them:
//!
//! - [`Client`] sends HTTP to one apiserver; every error answer becomes [`Error::Api`]`(Status)`.
//!   [`kubeconfig`] reads the server, CA and credentials it uses over https.
//! - [`Api<K>`] gives the verbs for one kind: get, list, create, replace, patch, delete, watch
//!   (and for pods: bind, logs).
//! - [`watcher::watcher`] lists, then watches from the list's resourceVersion, resumes after every
//!   disconnect and relists on 410: the only way a component learns about the cluster.
//! - [`store::store`] and [`reflector`] keep an in-memory copy of what the watcher saw.
//! - [`workqueue::WorkQueue`] merges the keys a controller must sync and retries failures.
//! - [`wait`] waits on a watch until a condition holds (tools and tests).
//! - [`events::Recorder`] writes Events (`Scheduled`, `Started` …) that `describe` shows.
//! - [`shutdown::on_signal`] and [`logging::init`] are the two lines every `main` starts with.
//!
//! minik simplifies: JSON only, no informer resync, no credential plugins.
//!
//! Read next: `client/src/watcher.rs`, the state machine every controller stands on.

// `Error::Api` carries the whole `Status` (as kube-rs does) so callers can match on it directly;
// the size of the error type is not a concern next to an HTTP round trip.
#![allow(clippy::result_large_err, clippy::large_enum_variant)]

pub mod api;
pub mod client;
pub mod connections;
pub mod error;
pub mod events;
pub mod kubeconfig;
pub mod logging;
pub mod params;
pub mod shutdown;
pub mod store;
pub mod wait;
mod watch_lines;
pub mod watcher;
pub mod workqueue;

pub use api::{Api, Object};
pub use client::Client;
pub use error::{Error, Result};
pub use kubeconfig::{kubeconfig_path, ClientConfig};
pub use params::{DeleteParams, ListParams, LogParams, Patch};
// `minik_client::store` is both the module and (value namespace) its `store()` constructor.
pub use store::{reflector, store, Store, Writer};
pub use watcher::{watcher, Event};
pub use workqueue::WorkQueue;

/// Re-exported so callers name the same HTTP method type as [`Client::request_json`].
pub use reqwest::Method;
