//! Real clients against minik: unmodified kubectl 1.32, the Python `kubernetes` client 37.0.2 and
//! kube-rs 5, each driving a secure test cluster over nothing but the kubeconfig it writes (and,
//! in `minik_up.rs`, over the very file a real `minik up` merged its context into).
//!
//! Kubernetes counterpart: the conformance idea of `test/e2e/kubectl/kubectl.go` (kubectl's own
//! commands checked on their printed output) and the client libraries' integration suites. What
//! each client sends and needs, request by request, is `docs/real-clients.md`.
//! Run `cargo build --workspace --bins` first: containers run the `minik` binary. kubectl and
//! Python tests skip with a notice when the tool is missing on a developer's machine, and fail
//! under CI (`CI` set), where `.ci/run` provides both.

mod docs_examples;
mod kube_rs; // kube::Api<Pod> and kube::runtime::watcher (list-watch and streaming lists)
mod kube_rs_crds; // a CRD: DynamicObject, watcher, a 422, a Controller reconciling into ConfigMaps
mod kubectl_apply; // apply (client- and server-side), create with protobuf bodies
mod kubectl_config; // create configmap/secret (literals, files, env files), immutable
mod kubectl_crd_versions; // two served versions of a CRD, int-or-string, namespace deletion of CRs
mod kubectl_crds; // a CRD: apply, wait Established, get columns, patch, scale, explain, 422s, delete
mod kubectl_daemonsets; // apply ds/rc, rollout status ds, get ds/rc, scale rc
mod kubectl_debug; // debug (ephemeral containers, -it with a shell), attach -i, 422s
mod kubectl_discovery; // aggregated discovery: an empty cache asks only /api and /apis (-v=6 counted)
mod kubectl_drain; // cordon, a PodDisruptionBudget, a refused eviction, drain under the budget
mod kubectl_exec; // exec (stdin, -it, exit codes), cp both ways, 403 on exec without RBAC
mod kubectl_explain; // explain from /openapi/v3; events aggregated, also as events.k8s.io/v1
mod kubectl_ingress; // create ingress, apply an Ingress, get ingress, curl through the controller
mod kubectl_jobs; // create job, wait --for=condition=complete, get jobs, logs job/NAME
mod kubectl_metrics; // top pods/nodes through metrics-server, autoscale up under load and down
mod kubectl_node_port; // expose --type=NodePort, curl the node port; the default IngressClass
mod kubectl_nodes; // cordon, uncordon, taint nodes, and the scheduler's messages
mod kubectl_openapi_v2; // kubectl 1.27's explain and apply validation over the protobuf /openapi/v2
mod kubectl_port_forward; // port-forward pod/x and svc/x (1,000 requests each), a closed port, 403
mod kubectl_statefulsets; // apply sts with a claim template, rollout status sts, scale sts, get sts/pvc/sc
mod kubectl_token; // a secure cluster: default ServiceAccounts, create token, the kubernetes Service
mod kubectl_verbs; // get (plain, wide, yaml, -w), describe, wait, delete, logs
mod kubectl_workloads; // create deployment, scale, set image/env, rollout …, delete --cascade
mod minik_get; // `minik get` prints the same server Tables as `kubectl get`
mod minik_up; // the seeds' kubectl commands against `minik up` and the kubeconfig it merged
mod python; // the Python client's create / list / watch / patch / delete // the Kubernetes docs' ConfigMap, downward API and nginx Service examples, unmodified

mod kubectl_spdy; // exec, cp, port-forward (and attach -it in kubectl_tty) over plain SPDY/3.1
mod kubectl_tty; // run -it, attach -it (detach, reattach), debug -it on a terminal; resizes
/// Shared helpers: clusters, kubeconfigs, running kubectl.
mod support;
/// A pseudo-terminal the tests type into, for kubectl -it.
mod terminal;
