//! The controller manager against a real minik apiserver (in memory, on 127.0.0.1:0).
//!
//! - `leader`: two candidates on one Lease; one leads, the other takes over when it stops;
//! - `ownership`: adoption and release by labels, collection of dependents of missing owners;
//! - `workloads`: Deployments, ReplicaSets and the garbage collector, with a fake kubelet.

mod cluster;
mod kubelet;
mod leader;
mod ownership;
mod workloads;
