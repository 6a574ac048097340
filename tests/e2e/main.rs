//! End-to-end tests: a whole minik cluster per test, real processes, real HTTP on loopback.
//!
//! Kubernetes counterpart: `test/e2e` (`e2e/node/pods.go`, `e2e/common/node/lifecycle_hook.go`,
//! `e2e/network/service.go`); one test binary with a module per area, as ripgrep and raft-rs do.
//! Run `cargo build --workspace --bins` first: containers run the `minik` binary.

mod autoscale; // issue 24: node sizes, the cluster autoscaler adding and removing nodes
mod cleanup; // nothing left running after a cluster stops
mod configmaps; // ConfigMaps, Secrets, the downward API, service links in env and volumes
mod creation; // pods from creation to Running, restarts, init containers, exit codes
mod daemonsets; // DaemonSets across nodes joining and leaving, a rollout, kill -9 mid-rollout
mod dashboard; // minik dashboard: its guard, and the page in headless Chromium
mod deletion; // graceful deletion: preStop, SIGTERM, SIGKILL, force delete
mod fidelity; // issue 19: probes while terminating, initialDelay, deadlines, gates, shim stop, up stop
mod ha; // issue 22: three apiservers on one etcd, a watch moved across killed apiservers
mod hook_orphans; // a preStop's setsid child goes with the force-deleted pod
mod idle; // issue 24: idle Deployments scaled to zero by the controller manager
mod images; // busybox, python, nginx, agnhost as written; 300 short-lived pods on one /24
mod ingress; // the ingress controller: host/path routing, removal within its lag
mod job_policies; // ttlSecondsAfterFinished, podFailurePolicy FailJob on an exit code and Ignore on an eviction
mod jobs; // Jobs: completions two at a time, the controller manager killed with -9 mid-job
mod kubelet_gone; // after a kubelet kill -9: the shim's stop grace from the pod, its cgroups removed
mod limits; // a fork bomb stopped by the pod pids limit
mod loadbalancer; // the batched load balancer, node ports
mod metrics; // kubectl top's API: usage through metrics-server; a memory limit OOM-kills
mod mounts; // cluster DNS from inside a pod, volumes at their mountPath (mount namespaces)
mod node_cidr; // a /23 per node: 300 pods on one node, each its own address
mod nodes; // a dead node: Unknown, tainted, its pods evicted; pod GC
mod podnet; // two pods on 0.0.0.0:8080 side by side; localhost inside a pod (bind rewriting)
mod replication; // ReplicationControllers: replicas kept, the scale subresource
mod restarts; // kill -9 of a kubelet or the apiserver (process mode)
mod rollout; // seed 002's rolling update, sampled on a watch
mod scheduling; // unschedulable pods, spreading over nodes
mod security; // 401, foreign CAs, a viewer's 403, the kubelet's authz, minik proxy, file modes
mod services; // endpoints and the proxy
mod sidecars; // init containers with restartPolicy Always
mod slices; // EndpointSlices during a graceful deletion, the proxy's last-resort endpoints
mod statefulset_rollout; // partitioned rolling update, kill -9 mid-rollout: no duplicate ordinal
mod statefulsets; // ordered start/stop, identity and data across deletion, claim retention
mod strategies; // maxSurge/maxUnavailable, Recreate, minReadySeconds, progress deadline
mod supervision; // minik up restarts every component killed with -9, no write lost
mod up; // minik up, status, down
mod watch_resume; // minik get -w across an apiserver restart
mod workload_faults; // scaling mid-rollout, the controller manager killed with -9

/// Shared helpers for the scenarios.
mod support;
