//! The generic store: the read–decide–compare-and-swap steps a handler runs against `Storage`,
//! shared by several handlers so that none of them imports another.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/registry/generic/registry/store.go` (the
//! `Store` every kind's REST storage embeds: `Delete`, `DeleteCollection`, `GuaranteedUpdate`)
//! and the namespace lifecycle (`pkg/registry/core/namespace/storage`, the namespace
//! controller). It sits between the HTTP handlers above and [`crate::registry`] (pure per-kind
//! rules) and `crate::storage` (the tiny etcd) below.
//!
//! - [`delete`]: remove one object now, or mark it for a graceful deletion;
//! - [`update`]: read, transform, compare-and-swap, retried on conflict;
//! - [`namespaces`]: the initial namespaces, Terminating, deleting a namespace's contents.

pub mod delete;
pub mod namespaces;
pub mod update;
