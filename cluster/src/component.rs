//! The components of a cluster, in start order: their flags, and how one runs in-process.
//!
//! Kubernetes counterpart: the static pod manifests kubeadm writes for the control plane (one per
//! component, with its command line) plus the kubelet's unit; `test/integration/framework` runs the
//! same pieces in-process. minik describes each component once, as the command line of `minik
//! <component> …`. As a process that command line is run; in-process the same flags are parsed by
//! the component's own clap `Args` and turned into its `Config` by `into_config()`, and its crate's
//! `run(config, token)` runs on a tokio task — both modes go through one configuration path.
//!
//! Adding a component is four small edits here: a variant of [`Component`], its place in
//! [`Component::ALL`], its flags in [`Component::args`] and its `run` in [`Component::run`].

use std::future::Future;
use std::pin::Pin;

use clap::Parser;
use tokio_util::sync::CancellationToken;

use crate::cluster::ClusterConfig;
use crate::{Error, Result};

/// One kind of component; a cluster runs one of each, and one kubelet per node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    /// `minik apiserver`: storage and the REST API.
    Apiserver,
    /// `minik scheduler`: binds pending pods to nodes.
    Scheduler,
    /// `minik controller-manager`: Deployments, ReplicaSets and the garbage collector.
    ControllerManager,
    /// `minik kubelet`: one per node, runs the node's pods.
    Kubelet,
    /// `minik endpoint-controller`: Endpoints and EndpointSlices from Services.
    EndpointController,
    /// `minik kube-proxy`: the Services' virtual IPs (`minik proxy` is kubectl's API proxy).
    Proxy,
    /// `minik ingress`: the Ingresses' HTTP routes, straight to ready pods.
    Ingress,
    /// `minik loadbalancer`: LoadBalancer Services, programmed in batches.
    LoadBalancer,
    /// `minik dashboard`: the live web view (only with `minik up --dashboard`).
    Dashboard,
    /// `minik metrics-server`: the kubelets' usage as `metrics.k8s.io` (`kubectl top`, the HPA).
    MetricsServer,
    /// `minik dns`: the cluster DNS (started before the kubelets, which point pods at it).
    Dns,
    /// `minik cluster-autoscaler` (only with `minik up --max-nodes`): started last, after the
    /// node-group API it uses (`node_group_server.rs`).
    ClusterAutoscaler,
}

/// How the launcher knows a component is ready before it starts the next one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Readiness {
    /// `GET /readyz` answers 200.
    Readyz,
    /// Its log has a `ready` line (a process) / its task runs (in-process).
    ReadyLine,
    /// Every node is `Ready`, seen through a watch on nodes.
    NodesReady,
}

/// A component's `run` on a task: `Err` carries its error as text.
pub(crate) type Run = Pin<Box<dyn Future<Output = std::result::Result<(), String>> + Send>>;

impl Component {
    /// Every component, in start order; a cluster stops them in the reverse order.
    pub const ALL: [Component; 12] = [
        Component::Apiserver,
        Component::Scheduler,
        Component::ControllerManager,
        Component::Dns,
        Component::Kubelet,
        Component::EndpointController,
        Component::Proxy,
        Component::Ingress,
        Component::LoadBalancer,
        Component::Dashboard,
        Component::MetricsServer,
        Component::ClusterAutoscaler,
    ];

    /// What a cluster starts unless told otherwise: all but the dashboard, which is asked for.
    pub fn defaults() -> Vec<Component> {
        let mut all = Component::ALL.to_vec();
        all.retain(|c| *c != Component::Dashboard);
        all
    }

    /// The `minik` subcommand that runs it: its name, but `kube-proxy` for the proxy, since
    /// `minik proxy` is kubectl's `proxy` (an API proxy for curl), as upstream names them.
    pub fn command(self) -> &'static str {
        match self {
            Component::Proxy => "kube-proxy",
            other => other.subcommand(),
        }
    }

    /// The component's name, also the name of its log file (kubelets add their node).
    pub fn subcommand(self) -> &'static str {
        match self {
            Component::Apiserver => "apiserver",
            Component::Scheduler => "scheduler",
            Component::ControllerManager => "controller-manager",
            Component::Kubelet => "kubelet",
            Component::EndpointController => "endpoint-controller",
            Component::Proxy => "proxy",
            Component::Ingress => "ingress",
            Component::LoadBalancer => "loadbalancer",
            Component::Dashboard => "dashboard",
            Component::MetricsServer => "metrics-server",
            Component::Dns => "dns",
            Component::ClusterAutoscaler => "cluster-autoscaler",
        }
    }

    /// True for the components that create pods (the ReplicaSet controller), which a cluster
    /// stops before it drains the pods.
    pub fn creates_pods(self) -> bool {
        self == Component::ControllerManager
    }

    pub(crate) fn readiness(self) -> Readiness {
        match self {
            Component::Apiserver => Readiness::Readyz,
            Component::Kubelet => Readiness::NodesReady,
            _ => Readiness::ReadyLine,
        }
    }

    /// The address `minik status` shows for the component, if it serves one of its own.
    pub(crate) fn address(self, config: &ClusterConfig) -> Option<String> {
        match self {
            Component::Apiserver => Some(config.listen.to_string()),
            Component::Ingress => Some(format!(
                "http://{} (metrics {})",
                config.ingress_listen, config.ingress_metrics_listen
            )),
            Component::LoadBalancer => Some(format!(
                "metrics http://{}",
                config.loadbalancer_metrics_listen
            )),
            Component::Dashboard => Some(format!("http://{}", config.dashboard_listen)),
            Component::Dns => config.dns_listen.map(|a| format!("udp+tcp {a}")),
            _ => None,
        }
    }

    /// The instance's name: `apiserver`, …, `kubelet-node-1` for the kubelet of node `node-1`.
    pub fn instance(self, node: Option<&str>) -> String {
        match node {
            Some(node) => format!("{}-{node}", self.subcommand()),
            None => self.subcommand().to_string(),
        }
    }

    /// The command line after `minik`: the subcommand and its flags. `node` is the node's index
    /// for a kubelet (`node-N`, pod CIDR block N of the cluster's range, `nodeipam.rs`:
    /// `127.P.N.0/24` by default with P the cluster's `pod_network`, root dir `DATA/nodes/node-N`).
    pub(crate) fn args(self, config: &ClusterConfig, node: u8) -> Vec<String> {
        let server = crate::secure::server_url(config);
        let mut args = vec![self.command().to_string()];
        args.extend(crate::secure::args(config, self, node));
        let mut flag = |name: &str, value: String| args.extend([name.to_string(), value]);
        match self {
            Component::Apiserver => {
                let (listen, dir) = crate::ha::apiserver_listen(config, node);
                flag("--listen", listen.to_string());
                let data = config.data_dir.join(dir);
                flag("--data-dir", data.display().to_string());
                if config.apiservers > 1 {
                    // Each apiserver a Lease; the `kubernetes` Endpoints list the live ones.
                    flag("--endpoint-reconciler-type", "lease".into());
                }
                if let Some(storage) = &config.storage {
                    flag("--storage", storage.clone());
                }
                if config.secure {
                    // ServiceAccount tokens: signed and verified with DATA/pki/sa.key, sa.pub.
                    let pki = crate::pki::Pki {
                        dir: config.data_dir.join("pki"),
                    };
                    let (key, public) = pki.service_account_key_files();
                    flag(
                        "--service-account-signing-key-file",
                        key.display().to_string(),
                    );
                    flag("--service-account-key-file", public.display().to_string());
                }
            }
            Component::Kubelet => {
                let name = format!("node-{node}");
                let root_dir = config.data_dir.join("nodes").join(&name);
                flag("--server", server);
                flag("--node-name", name);
                flag("--root-dir", root_dir.display().to_string());
                // Checked before the kubelet is launched (`Cluster::launch_kubelet`).
                let cidr = crate::nodeipam::node_cidr(config, node);
                flag(
                    "--pod-cidr",
                    cidr.map(|c| c.to_string()).unwrap_or_default(),
                );
                flag("--minik-binary", config.binary.display().to_string());
                optional(&mut flag, "--backoff-base", &config.backoff_base);
                optional(
                    &mut flag,
                    "--heartbeat-interval",
                    &config.heartbeat_interval,
                );
                args.extend(crate::dns::kubelet_flags(config.dns_listen));
                let own = config.node_kubelet_args.get(&format!("node-{node}"));
                args.extend(with_overrides(&config.kubelet_args, own.map(Vec::as_slice)));
            }
            Component::Proxy => {
                flag("--server", server);
                optional(&mut flag, "--sync-delay", &config.sync_delay);
                args.extend(config.proxy_args.iter().cloned());
            }
            Component::ControllerManager => {
                flag("--server", server);
                if config.secure {
                    // Published in every namespace as `kube-root-ca.crt` (pods' `ca.crt`).
                    let ca = config.data_dir.join("pki").join("ca.crt");
                    flag("--root-ca-file", ca.display().to_string());
                }
                args.extend(config.controller_manager_args.iter().cloned());
            }
            Component::Ingress => {
                flag("--server", server);
                flag("--listen", config.ingress_listen.to_string());
                flag(
                    "--metrics-listen",
                    config.ingress_metrics_listen.to_string(),
                );
                args.extend(config.ingress_args.iter().cloned());
            }
            Component::LoadBalancer => {
                flag("--server", server);
                flag(
                    "--metrics-listen",
                    config.loadbalancer_metrics_listen.to_string(),
                );
                args.extend(config.loadbalancer_args.iter().cloned());
            }
            Component::Dashboard => {
                flag("--server", server);
                flag("--listen", config.dashboard_listen.to_string());
                let token = crate::dashboard::token_file(&config.data_dir);
                flag("--token-file", token.display().to_string());
            }
            Component::MetricsServer => {
                flag("--server", server);
                args.extend(config.metrics_server_args.iter().cloned());
            }
            Component::Dns => {
                flag("--server", server);
                let listen = config.dns_listen.unwrap_or(([127, 0, 0, 10], 53).into());
                flag("--listen", listen.to_string());
                flag("--cluster-domain", crate::dns::CLUSTER_DOMAIN.into());
            }
            Component::ClusterAutoscaler => {
                flag("--server", server);
                let cloud = crate::node_group_server::cloud_config(&config.data_dir);
                flag("--cloud-config", cloud.display().to_string());
                let autoscaler = config.autoscaler.clone().unwrap_or_default();
                args.extend(minik_cluster_autoscaler::Args::flags(&autoscaler));
            }
            Component::Scheduler | Component::EndpointController => flag("--server", server),
        }
        args
    }

    /// The component's own `run(config, token)`, configured from `args` (see [`Component::args`]).
    pub(crate) fn run(self, args: &[String], shutdown: CancellationToken) -> Result<Run> {
        // Every component crate has the same three pieces: `Args`, `into_config`, `run`.
        macro_rules! run {
            ($krate:ident) => {
                task($krate::run(
                    parse::<$krate::Args>(args)?.into_config(),
                    shutdown,
                ))
            };
        }
        Ok(match self {
            Component::Apiserver => run!(minik_apiserver),
            Component::Scheduler => run!(minik_scheduler),
            Component::ControllerManager => run!(minik_controller_manager),
            Component::Kubelet => run!(minik_kubelet),
            Component::EndpointController => run!(minik_endpoint_controller),
            Component::Proxy => run!(minik_proxy),
            Component::Ingress => run!(minik_ingress),
            Component::LoadBalancer => run!(minik_loadbalancer),
            Component::Dashboard => run!(minik_dashboard),
            Component::MetricsServer => run!(minik_metrics_server),
            Component::Dns => run!(minik_dns),
            Component::ClusterAutoscaler => run!(minik_cluster_autoscaler),
        })
    }
}

/// Adds `name value` when the value was given.
fn optional(flag: &mut impl FnMut(&str, String), name: &str, value: &Option<String>) {
    if let Some(value) = value {
        flag(name, value.clone());
    }
}

fn task<E: std::fmt::Display>(
    run: impl Future<Output = std::result::Result<(), E>> + Send + 'static,
) -> Run {
    Box::pin(async move { run.await.map_err(|e| e.to_string()) })
}

/// Parses a component's flags with its own clap `Args`, wrapped so both `Args` and `Parser`
/// derives work.
#[derive(Parser)]
struct Flags<A: clap::Args> {
    #[command(flatten)]
    inner: A,
}

fn parse<A: clap::Args>(args: &[String]) -> Result<A> {
    // args[0] is the subcommand (`kubelet`); clap takes it as the program name.
    Flags::<A>::try_parse_from(args)
        .map(|flags| flags.inner)
        .map_err(|err| Error::Start(format!("{}: bad flags: {err}", args[0])))
}

/// `base` (`--flag value` pairs) with the flags `own` sets taken out, then `own`: one node's
/// size wins over every node's.
fn with_overrides(base: &[String], own: Option<&[String]>) -> Vec<String> {
    let own = own.unwrap_or_default();
    let mut out = Vec::with_capacity(base.len() + own.len());
    let mut rest = base.iter();
    while let Some(item) = rest.next() {
        if item.starts_with("--") && own.contains(item) {
            rest.next();
            continue;
        }
        out.push(item.clone());
    }
    out.extend(own.iter().cloned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nodes_own_size_replaces_the_clusters() {
        let base: Vec<String> = ["--cpu", "2", "--max-pods", "20", "--memory", "4Gi"]
            .map(String::from)
            .to_vec();
        let own: Vec<String> = ["--cpu", "4"].map(String::from).to_vec();
        let flags = with_overrides(&base, Some(&own));
        assert_eq!(flags, ["--max-pods", "20", "--memory", "4Gi", "--cpu", "4"]);
        assert_eq!(with_overrides(&base, None), base);
    }

    /// A kubelet gets its node's name, pod CIDR and root directory, then the caller's flags.
    #[test]
    fn kubelet_flags_follow_the_node_index() {
        let config = ClusterConfig {
            data_dir: "/data".into(),
            kubelet_args: vec!["--max-pods".into(), "5".into()],
            ..ClusterConfig::default()
        };
        let args = Component::Kubelet.args(&config, 2).join(" ");
        assert!(args.starts_with("kubelet --kubeconfig /data/pki/node-node-2.kubeconfig"));
        assert!(args.contains("--tls-cert-file /data/pki/kubelet-node-2.crt"));
        assert!(args.contains("--server https://127.0.0.1:6443 --node-name node-2"));
        assert!(args.contains("--root-dir /data/nodes/node-2 --pod-cidr 127.244.2.0/24"));
        assert!(args.ends_with("--max-pods 5"));
        let insecure = ClusterConfig {
            secure: false,
            ..config
        };
        let args = Component::Kubelet.args(&insecure, 2).join(" ");
        assert!(args.starts_with("kubelet --server http://127.0.0.1:6443 --node-name node-2"));
    }

    /// Every component's flags parse with its own `Args`, as `minik <component>` would.
    #[tokio::test]
    async fn every_component_parses_its_own_flags() {
        let config = ClusterConfig::default();
        for component in Component::ALL {
            let args = component.args(&config, 1);
            assert!(component.run(&args, CancellationToken::new()).is_ok());
        }
    }
}
