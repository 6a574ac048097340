//! minik-tests: a whole minik cluster inside a test, and helpers to wait on it.
//!
//! Kubernetes counterpart: the integration framework of `test/integration/framework` (an apiserver
//! started in-process with `StartTestServer`) and the e2e framework of `test/e2e/framework`
//! (`WaitForPodRunningInNamespace`, `WaitForPodNotFound`, pod builders). minik keeps the same
//! split, smaller:
//!
//! - [`cluster`]: `Cluster::builder().nodes(2).start().await` runs every component through
//!   `minik_cluster`, the launcher `minik up` uses — as tokio tasks in this process (the default,
//!   fast) or as `minik <component>` child processes (`.processes(true)`, needed to `kill -9`
//!   one) — on `127.0.0.1` with fast timings, and stops it again proving no process is left;
//! - [`wait`]: waiting on a watch with a timeout (`wait_for`, `wait_deleted`), never a sleep;
//! - [`fixtures`]: builders for the objects tests create (`pod("web").port(8080).build()`);
//! - [`procs`]: reading `/proc`, to prove which processes exist (PIDs kept, nothing left behind);
//! - [`up`]: the real `minik up` in the background, as a user runs it (its transcript, its
//!   kubeconfig, `minik down`).
//!
//! `MINIK_E2E_PROCESSES=1` makes process mode the default, so the whole e2e suite can be run
//! against the real binaries (as rust-analyzer's `RUN_SLOW_TESTS`). `MINIK_BIN` overrides where
//! the `minik` binary is looked for.
//!
//! Container processes are always real: they run the `minik` binary (`minik shim`, `minik image
//! web`), found next to the test executable, so run `cargo build --workspace --bins` before
//! `cargo test --workspace`.
//!
//! Left out from upstream's frameworks: namespaces per test (each test has a cluster of its own),
//! Ginkgo-style specs and conformance tagging.
//!
//! Read next: `tests/e2e/main.rs`, the end-to-end scenarios built on this crate.

pub mod cluster;
pub mod error;
pub mod fixtures;
pub mod procs;
pub mod up;
pub mod wait;

pub use cluster::{Cluster, ClusterBuilder, StopReport};
pub use error::{Error, Result};
