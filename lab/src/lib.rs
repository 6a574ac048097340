//! minik-lab: what measures and teaches minik — the narrated demo, the benchmark harness and
//! hollow (simulated) nodes.
//!
//! Kubernetes counterpart: the tooling around Kubernetes rather than Kubernetes itself.
//!
//! - [`hollow`] mirrors kwok (`kubernetes-sigs/kwok`) and kubemark's hollow nodes
//!   (`cmd/kubemark`): one task registers many Ready nodes and plays kubelet for the pods bound to
//!   them, so the control plane can be measured at a scale the machine could not run for real.
//! - [`bench`] mirrors the e2e performance tests (perf-tests' ClusterLoader2: pod startup latency,
//!   API call latency), `test/integration/scheduler_perf` (scheduling throughput onto fake
//!   nodes) and etcd's `benchmark` tool (write throughput, watch fan-out), each at a small size,
//!   in one command against one private cluster.
//! - [`demo`] has no upstream counterpart: it is the guided tour, a pod's creation and deletion
//!   on real processes, narrated, measured and drawn.
//!
//! What it leaves out: no ClusterLoader2 configs or measurement plug-ins, no Prometheus scraping
//! (figures come from watches, Events and `/proc`), no kubemark hollow proxy, no kwok stages
//! (hollow pods go straight to Running), no SLO dashboards.
//!
//! Every cluster it starts is a [`minik_cluster::Cluster`], the one launcher `minik up` uses.
//! The `minik` binary parses the flags and calls [`demo::run`] and [`bench::run`].
//!
//! Read next: `demo/mod.rs` for the tour, `bench/mod.rs` for the measurements, `hollow/mod.rs`
//! for the simulated nodes.

pub mod bench;
pub mod demo;
mod error;
pub mod hollow;

pub use error::{Error, Result};

use std::net::{SocketAddr, TcpListener};

use error::Context;

/// A free port on 127.0.0.1 (bound and released; the race with another process is accepted):
/// the apiserver of a private cluster binds it next.
fn free_loopback_port() -> Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").context("finding a free loopback port")?;
    Ok(listener.local_addr()?)
}
