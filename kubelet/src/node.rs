//! The kubelet's Node: registration, and the two heartbeats (a Lease, and the node status).
//!
//! Kubernetes counterpart: `registerWithAPIServer` / `initialNode` (`pkg/kubelet/
//! kubelet_node_status.go`), the node status setters (`pkg/kubelet/nodestatus/setters.go`:
//! addresses, capacity, nodeInfo, daemonEndpoints, the Ready condition) and the node lease
//! controller (`pkg/kubelet/nodelease`, `k8s.io/component-helpers/apimachinery/lease`).
//!
//! Heartbeats (docs/kubernetes-rules.md#n1): the Lease `kube-node-lease/<node>` is renewed every
//! `heartbeat_interval` (10 s upstream); the node status — with `Ready=True` and a fresh
//! `lastHeartbeatTime` — is written at registration, then every 5 minutes, and at once when the
//! Node in the API says otherwise (a watch on this one Node): after the node lifecycle controller
//! marked a silent node `Unknown`, the kubelet that is back makes it Ready again. A failed
//! renewal is retried at the next tick.
//!
//! minik simplifies: the node always reports Ready (there is no pressure detection).

use std::collections::BTreeMap;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{
    DaemonEndpoint, Namespace, Node, NodeAddress, NodeCondition, NodeDaemonEndpoints, NodeSpec,
    NodeStatus, NodeSystemInfo,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use minik_client::{watcher, Api, Client, Event, ListParams, Patch};
use tokio_util::sync::CancellationToken;
use tracing::{debug, info, warn};

/// The version the node reports (`kubectl get nodes` VERSION column).
pub const KUBELET_VERSION: &str = "v1.32.0-minik";

/// The namespace of node leases.
pub const LEASE_NAMESPACE: &str = "kube-node-lease";

/// How often the node status is written when nothing changed (upstream
/// `nodeStatusReportFrequency`).
pub const STATUS_REPORT_FREQUENCY: Duration = Duration::from_secs(300);

/// What the Node object says about this kubelet.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeInfo {
    /// `metadata.name`.
    pub name: String,
    /// `spec.podCIDR`.
    pub pod_cidr: String,
    /// Capacity (= allocatable): `cpu`, `memory`, `pods`.
    pub capacity: BTreeMap<String, String>,
    /// The logs server's port (`status.daemonEndpoints.kubeletEndpoint.Port`).
    pub kubelet_port: u16,
    /// `--node-labels`, beside the well-known ones.
    pub labels: BTreeMap<String, String>,
}

/// The Node object to register (pure but for the clock).
pub fn node_object(info: &NodeInfo) -> Node {
    let mut labels = BTreeMap::from([
        ("kubernetes.io/hostname".to_string(), info.name.clone()),
        ("kubernetes.io/os".to_string(), "linux".to_string()),
        ("kubernetes.io/arch".to_string(), go_arch().to_string()),
    ]);
    labels.extend(info.labels.clone());
    Node {
        metadata: ObjectMeta {
            name: Some(info.name.clone()),
            labels: Some(labels),
            ..Default::default()
        },
        spec: Some(NodeSpec {
            pod_cidr: Some(info.pod_cidr.clone()),
            pod_cidrs: Some(vec![info.pod_cidr.clone()]),
            ..Default::default()
        }),
        status: Some(node_status(info)),
    }
}

/// The node status: addresses, capacity, Ready, daemon endpoint and system info.
pub fn node_status(info: &NodeInfo) -> NodeStatus {
    let quantities: BTreeMap<String, Quantity> = info
        .capacity
        .iter()
        .map(|(k, v)| (k.clone(), Quantity(v.clone())))
        .collect();
    let now = Time(jiff::Timestamp::now());
    NodeStatus {
        addresses: Some(vec![
            NodeAddress {
                type_: "InternalIP".into(),
                address: "127.0.0.1".into(),
            },
            NodeAddress {
                type_: "Hostname".into(),
                address: info.name.clone(),
            },
        ]),
        capacity: Some(quantities.clone()),
        allocatable: Some(quantities),
        conditions: Some(vec![NodeCondition {
            type_: "Ready".into(),
            status: "True".into(),
            reason: Some("KubeletReady".into()),
            message: Some("kubelet is posting ready status".into()),
            last_heartbeat_time: Some(now.clone()),
            last_transition_time: Some(now),
        }]),
        daemon_endpoints: Some(NodeDaemonEndpoints {
            kubelet_endpoint: Some(DaemonEndpoint {
                port: i32::from(info.kubelet_port),
            }),
        }),
        node_info: Some(system_info()),
        phase: None,
        ..Default::default()
    }
}

/// `nodeInfo`, read from the host where it can be.
fn system_info() -> NodeSystemInfo {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let machine_id = read("/etc/machine-id");
    let os_image = read("/etc/os-release")
        .lines()
        .find_map(|l| {
            l.strip_prefix("PRETTY_NAME=")
                .map(|v| v.trim_matches('"').to_string())
        })
        .unwrap_or_else(|| "Linux".into());
    NodeSystemInfo {
        architecture: go_arch().into(),
        boot_id: read("/proc/sys/kernel/random/boot_id"),
        container_runtime_version: format!("minik://{}", env!("CARGO_PKG_VERSION")),
        kernel_version: read("/proc/sys/kernel/osrelease"),
        kube_proxy_version: KUBELET_VERSION.into(),
        kubelet_version: KUBELET_VERSION.into(),
        system_uuid: machine_id.clone(),
        machine_id,
        operating_system: "linux".into(),
        os_image,
        swap: None,
    }
}

/// Go's name of this architecture (`amd64`, `arm64`).
fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// The host's capacity: cpu = available cores, memory = MemTotal, pods = 110 (upstream default).
pub fn host_capacity() -> (String, String) {
    let cpu = std::thread::available_parallelism().map_or(1, |n| n.get());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
            line.split_whitespace().nth(1).map(|kib| format!("{kib}Ki"))
        })
        .unwrap_or_else(|| "4Gi".into());
    (cpu.to_string(), memory)
}

/// Creates the Node, or updates the existing one's spec and status (a restarted kubelet).
pub async fn register_node(client: &Client, info: &NodeInfo) -> minik_client::Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    let node = node_object(info);
    match nodes.create(&node).await {
        Ok(_) => {}
        Err(error) if error.is_already_exists() => {
            let spec = serde_json::json!({ "metadata": { "labels": info.labels },
                "spec": { "podCIDR": info.pod_cidr, "podCIDRs": [info.pod_cidr] } });
            nodes.patch(&info.name, &Patch::Merge(spec)).await?;
        }
        Err(error) => return Err(error),
    }
    // The status subresource is what the create may have ignored, so always write it.
    let status = serde_json::json!({ "status": node_status(info) });
    nodes
        .patch_status(&info.name, &Patch::Merge(status))
        .await?;
    info!(node = %info.name, port = info.kubelet_port, "registered node");
    Ok(())
}

/// Whether the Node in the API says something this kubelet would not: not Ready (the node
/// lifecycle controller marked it), or another capacity. Then the status is written at once.
pub fn status_differs(node: &Node, info: &NodeInfo) -> bool {
    let status = node.status.as_ref();
    let ready = status
        .and_then(|s| s.conditions.as_deref())
        .and_then(|c| c.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|c| c.status == "True");
    let capacity = status.and_then(|s| s.capacity.as_ref());
    let same_capacity = capacity.is_some_and(|c| {
        info.capacity
            .iter()
            .all(|(k, v)| c.get(k).is_some_and(|q| &q.0 == v))
    });
    !ready || !same_capacity
}

/// Renews the Lease every `interval`, and writes the node status every
/// [`STATUS_REPORT_FREQUENCY`] or as soon as the Node differs from it, until shutdown.
pub async fn heartbeat(
    client: Client,
    info: NodeInfo,
    interval: Duration,
    shutdown: CancellationToken,
) {
    let nodes: Api<Node> = Api::all(client.clone());
    let own = ListParams::default().fields(&format!("metadata.name={}", info.name));
    let own_node = watcher(nodes, own);
    tokio::pin!(own_node);
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Registration has just written the status.
    let mut last_status = tokio::time::Instant::now();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            Some(event) = own_node.next() => {
                let differs = match event {
                    Ok(Event::Applied(node)) => status_differs(&node, &info),
                    Ok(Event::Restarted(nodes)) => nodes.iter().any(|n| status_differs(n, &info)),
                    _ => false,
                };
                if differs {
                    info!(node = %info.name, "the Node differs from this kubelet's status; updating it");
                    update_status(&client, &info).await;
                    last_status = tokio::time::Instant::now();
                }
                continue;
            }
            _ = ticker.tick() => {}
        }
        if let Err(error) = renew_lease(&client, &info.name, interval).await {
            warn!(node = %info.name, %error, "could not renew node lease");
        }
        if last_status.elapsed() >= STATUS_REPORT_FREQUENCY {
            update_status(&client, &info).await;
            last_status = tokio::time::Instant::now();
        }
    }
}

/// Writes the node status (registering the node again if it was deleted).
async fn update_status(client: &Client, info: &NodeInfo) {
    let nodes: Api<Node> = Api::all(client.clone());
    let status = serde_json::json!({ "status": node_status(info) });
    match nodes.patch_status(&info.name, &Patch::Merge(status)).await {
        Ok(_) => debug!(node = %info.name, "updated node status"),
        Err(error) if error.is_not_found() => {
            warn!(node = %info.name, "node object is gone; registering again");
            let _ = register_node(client, info).await;
        }
        Err(error) => warn!(node = %info.name, %error, "could not update node status"),
    }
}

/// Sets `spec.renewTime` of the node's Lease to now, creating the Lease (and its namespace).
pub async fn renew_lease(
    client: &Client,
    node: &str,
    interval: Duration,
) -> minik_client::Result<()> {
    let leases: Api<Lease> = Api::namespaced(client.clone(), LEASE_NAMESPACE);
    let renew = serde_json::json!({ "spec": { "renewTime": MicroTime(jiff::Timestamp::now()), "holderIdentity": node } });
    match leases.patch(node, &Patch::Merge(renew)).await {
        Ok(_) => return Ok(()),
        Err(error) if !error.is_not_found() => return Err(error),
        Err(_) => {}
    }
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(LEASE_NAMESPACE.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    match namespaces.create(&namespace).await {
        Ok(_) => {}
        Err(error) if error.is_already_exists() => {}
        Err(error) => debug!(%error, "could not create the lease namespace"),
    }
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(node.into()),
            namespace: Some(LEASE_NAMESPACE.into()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(node.into()),
            // Upstream: 40 s for a 10 s renewal, i.e. four renewals.
            lease_duration_seconds: Some(((interval.as_secs_f64() * 4.0).ceil() as i32).max(1)),
            renew_time: Some(MicroTime(jiff::Timestamp::now())),
            ..Default::default()
        }),
    };
    match leases.create(&lease).await {
        Ok(_) => Ok(()),
        Err(error) if error.is_already_exists() => Ok(()),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_object_has_what_the_scheduler_and_kubectl_read() {
        let info = NodeInfo {
            name: "node-1".into(),
            pod_cidr: "127.244.1.0/24".into(),
            capacity: BTreeMap::from([
                ("cpu".to_string(), "4".to_string()),
                ("memory".to_string(), "8Gi".to_string()),
                ("pods".to_string(), "110".to_string()),
            ]),
            kubelet_port: 10250,
            labels: BTreeMap::from([("minik.dev/autoscaled".into(), "true".into())]),
        };
        let node = node_object(&info);
        let labels = node.metadata.labels.as_ref().unwrap();
        assert_eq!(
            labels["minik.dev/autoscaled"], "true",
            "--node-labels are added"
        );
        assert_eq!(labels["kubernetes.io/hostname"], "node-1");
        assert_eq!(
            node.spec.as_ref().and_then(|s| s.pod_cidr.as_deref()),
            Some("127.244.1.0/24")
        );
        let status = node.status.expect("status");
        let ready = &status.conditions.as_ref().expect("conditions")[0];
        assert_eq!(
            (ready.type_.as_str(), ready.status.as_str()),
            ("Ready", "True")
        );
        assert!(ready.last_heartbeat_time.is_some());
        assert_eq!(
            status
                .daemon_endpoints
                .and_then(|d| d.kubelet_endpoint)
                .map(|e| e.port),
            Some(10250)
        );
        assert_eq!(
            status
                .node_info
                .as_ref()
                .map(|i| i.kubelet_version.as_str()),
            Some(KUBELET_VERSION)
        );
        let addresses = status.addresses.expect("addresses");
        assert_eq!(addresses[0].address, "127.0.0.1");
        assert_eq!(addresses[0].type_, "InternalIP");
        assert_eq!(
            status.allocatable.and_then(|a| a.get("pods").cloned()),
            Some(Quantity("110".into()))
        );
    }

    /// A Node marked Unknown by the node lifecycle controller, or with another capacity, is
    /// rewritten at once; one that says what this kubelet says is not.
    #[test]
    fn a_node_marked_unknown_gets_the_status_at_once() {
        let info = NodeInfo {
            name: "node-1".into(),
            pod_cidr: "127.244.1.0/24".into(),
            capacity: BTreeMap::from([("pods".to_string(), "110".to_string())]),
            kubelet_port: 10250,
            labels: BTreeMap::new(),
        };
        let mut node = node_object(&info);
        assert!(!status_differs(&node, &info));
        let conditions = node.status.as_mut().unwrap().conditions.as_mut().unwrap();
        conditions[0].status = "Unknown".into();
        assert!(status_differs(&node, &info));
        let mut bigger = info.clone();
        bigger.capacity.insert("pods".into(), "300".into());
        assert!(status_differs(&node_object(&info), &bigger));
    }

    #[test]
    fn host_capacity_reads_cores_and_memory() {
        let (cpu, memory) = host_capacity();
        assert!(cpu.parse::<u32>().is_ok_and(|n| n >= 1));
        assert!(memory.ends_with("Ki") || memory.ends_with("Gi"));
    }
}
