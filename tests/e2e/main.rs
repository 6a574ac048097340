//! End-to-end tests: a whole minik cluster per test, real processes, real HTTP on loopback.
//!
//! Kubernetes counterpart: `test/e2e` (`e2e/node/pods.go`, `e2e/common/node/lifecycle_hook.go`,
//! `e2e/network/service.go`); one test binary with a module per area, as ripgrep and raft-rs do.
//! Run `cargo build --workspace --bins` first: containers run the `minik` binary.

mod cleanup; // nothing left running after a cluster stops
mod creation; // pods from creation to Running, restarts, init containers, exit codes
mod deletion; // graceful deletion: preStop, SIGTERM, SIGKILL, force delete
mod ingress; // the ingress controller: host/path routing, removal within its lag
mod jobs; // Jobs: completions two at a time, the controller manager killed with -9 mid-job
mod loadbalancer; // the batched load balancer, node ports
mod restarts; // kill -9 of a kubelet or the apiserver (process mode)
mod rollout; // seed 002's rolling update, sampled on a watch
mod scheduling; // unschedulable pods, spreading over nodes
mod services; // endpoints and the proxy
mod strategies; // maxSurge/maxUnavailable, Recreate, minReadySeconds, progress deadline
mod up; // minik up, status, down
mod workload_faults; // scaling mid-rollout, the controller manager killed with -9

/// Shared helpers for the scenarios.
mod support;
