//! The controller manager against a real minik apiserver (in memory, on 127.0.0.1:0).
//!
//! - `cronjobs`: CronJobs on a driven clock: each concurrency policy, the deadline, history limits;
//! - `history`: rollback, pause and resume, scaling in the middle of a rollout;
//! - `jobs`: Jobs' completions, failures, deadline, suspend, and tracking finalizers across a restart;
//! - `leader`: two candidates on one Lease; one leads, the other takes over when it stops;
//! - `ownership`: adoption and release by labels, collection of dependents of missing owners;
//! - `restart`: `minik controller-manager` killed with SIGKILL mid-rollout and started again;
//! - `rollout`: seed 002 scaled: a rolling update's budget, beside slow Terminating pods;
//! - `scale`: (ignored) a rough figure for 1,000 replicas;
//! - `workloads`: Deployments, ReplicaSets and the garbage collector, with a fake kubelet.

mod cluster;
mod cronjobs;
mod history;
mod jobs;
mod kubelet;
mod leader;
mod ownership;
mod restart;
mod rollout;
mod scale;
mod workloads;
