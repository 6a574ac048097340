//! What the scheduler knows about a node: its allocatable resources and what its pods already request.
//!
//! Kubernetes counterpart: `framework.NodeInfo` (`pkg/scheduler/framework/types.go`) and the
//! resource helpers of `k8s.io/component-helpers/resource` (`PodRequests`). Upstream keeps one
//! `NodeInfo` per node in the scheduler cache and updates it incrementally as pods come and go, so a
//! scheduling decision never has to walk every pod in the cluster. minik does the same.
//!
//! minik simplifies: only cpu, memory and the pod count are tracked (no ephemeral storage, extended
//! resources or host ports); sidecar init containers (`restartPolicy: Always`) count as ordinary
//! init containers.

use std::collections::BTreeMap;
use std::sync::Arc;

use minik_api::core::{Container, Node, Pod};
use minik_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::quantity;

/// Scoring counts a container without a CPU request as asking for this much (upstream
/// `DefaultMilliCPURequest`), so that pods without requests still spread over the nodes.
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// The memory counterpart of [`DEFAULT_MILLI_CPU_REQUEST`] (upstream `DefaultMemoryRequest`, 200 MB).
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// An amount of the resources the scheduler accounts for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    /// CPU in millicores (1000 = one core).
    pub milli_cpu: i64,
    /// Memory in bytes.
    pub memory: i64,
    /// Number of pods.
    pub pods: i64,
}

impl Resources {
    fn add(&mut self, other: &Resources) {
        self.milli_cpu += other.milli_cpu;
        self.memory += other.memory;
        self.pods += other.pods;
    }

    fn subtract(&mut self, other: &Resources) {
        self.milli_cpu -= other.milli_cpu;
        self.memory -= other.memory;
        self.pods -= other.pods;
    }

    fn max(self, other: Resources) -> Resources {
        Resources {
            milli_cpu: self.milli_cpu.max(other.milli_cpu),
            memory: self.memory.max(other.memory),
            pods: self.pods.max(other.pods),
        }
    }
}

/// What one pod asks of a node, computed once per pod.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PodRequests {
    /// The real requests, used by the fit filter (`pods` is always 1).
    pub requests: Resources,
    /// The requests with defaults for missing values, used only for scoring (upstream
    /// `NonZeroRequested`).
    pub non_zero: Resources,
}

impl PodRequests {
    /// The effective requests of a pod: `max(sum of containers, largest init container) + overhead`,
    /// the rule of upstream `PodRequests`. A container that sets only a limit requests its limit (the
    /// apiserver's defaulting does this upstream). An unparsable quantity counts as zero.
    pub fn of(pod: &Pod) -> PodRequests {
        let Some(spec) = &pod.spec else {
            return PodRequests::default();
        };
        let mut requests = Resources::default();
        let mut non_zero = Resources::default();
        for container in &spec.containers {
            requests.add(&container_requests(container, false));
            non_zero.add(&container_requests(container, true));
        }
        for init in spec.init_containers.iter().flatten() {
            requests = requests.max(container_requests(init, false));
            non_zero = non_zero.max(container_requests(init, true));
        }
        if let Some(overhead) = &spec.overhead {
            let overhead = resources_of(overhead);
            requests.add(&overhead);
            non_zero.add(&overhead);
        }
        requests.pods = 1;
        non_zero.pods = 1;
        PodRequests { requests, non_zero }
    }
}

fn container_requests(container: &Container, non_zero: bool) -> Resources {
    let resources = container.resources.as_ref();
    let requests = resources.and_then(|r| r.requests.as_ref());
    let limits = resources.and_then(|r| r.limits.as_ref());
    let mut amount = Resources {
        milli_cpu: lookup(requests, limits, "cpu")
            .and_then(|q| quantity::cpu_millis(&q.0))
            .unwrap_or(-1),
        memory: lookup(requests, limits, "memory")
            .and_then(|q| quantity::bytes(&q.0))
            .unwrap_or(-1),
        pods: 0,
    };
    // -1 marks "not set": zero for fitting, the default for scoring.
    if amount.milli_cpu < 0 {
        amount.milli_cpu = if non_zero {
            DEFAULT_MILLI_CPU_REQUEST
        } else {
            0
        };
    }
    if amount.memory < 0 {
        amount.memory = if non_zero { DEFAULT_MEMORY_REQUEST } else { 0 };
    }
    amount
}

fn lookup<'a>(
    requests: Option<&'a BTreeMap<String, Quantity>>,
    limits: Option<&'a BTreeMap<String, Quantity>>,
    name: &str,
) -> Option<&'a Quantity> {
    requests
        .and_then(|r| r.get(name))
        .or_else(|| limits.and_then(|l| l.get(name)))
}

/// Reads cpu, memory and pods out of a resource list (an unparsable or missing entry is zero).
fn resources_of(map: &BTreeMap<String, Quantity>) -> Resources {
    let get = |name: &str, parse: fn(&str) -> Option<i64>| {
        map.get(name).and_then(|q| parse(&q.0)).unwrap_or(0)
    };
    Resources {
        milli_cpu: get("cpu", quantity::cpu_millis),
        memory: get("memory", quantity::bytes),
        pods: get("pods", quantity::bytes),
    }
}

/// A node and the sum of the requests of the pods assigned to it.
#[derive(Clone, Debug)]
pub struct NodeInfo {
    /// The node object as last seen by the watch.
    pub node: Arc<Node>,
    /// `status.allocatable` (or `status.capacity` when allocatable is absent).
    pub allocatable: Resources,
    /// Sum of the requests of the non-terminated pods on the node; `pods` is their count.
    pub requested: Resources,
    /// Same sum with scoring defaults for missing requests.
    pub non_zero_requested: Resources,
}

impl NodeInfo {
    /// A node with no pods yet.
    pub fn new(node: Arc<Node>) -> NodeInfo {
        let allocatable = allocatable_of(&node);
        NodeInfo {
            node,
            allocatable,
            requested: Resources::default(),
            non_zero_requested: Resources::default(),
        }
    }

    /// Replaces the node object (after a watch update), keeping the pod accounting.
    pub fn set_node(&mut self, node: Arc<Node>) {
        self.allocatable = allocatable_of(&node);
        self.node = node;
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        self.node.metadata.name.as_deref().unwrap_or_default()
    }

    /// Accounts for a pod placed on this node.
    pub fn add_pod(&mut self, pod: &PodRequests) {
        self.requested.add(&pod.requests);
        self.non_zero_requested.add(&pod.non_zero);
    }

    /// Forgets a pod that left this node (deleted, finished, or an assumption undone).
    pub fn remove_pod(&mut self, pod: &PodRequests) {
        self.requested.subtract(&pod.requests);
        self.non_zero_requested.subtract(&pod.non_zero);
    }
}

fn allocatable_of(node: &Node) -> Resources {
    let status = node.status.as_ref();
    match status.and_then(|s| s.allocatable.as_ref().or(s.capacity.as_ref())) {
        Some(map) => resources_of(map),
        None => Resources::default(),
    }
}

/// Whether a pod has finished (phase Succeeded or Failed): it no longer holds its node's resources.
pub fn is_terminated(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    matches!(phase, Some("Succeeded" | "Failed"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{node, pod};

    #[test]
    fn pod_requests_sum_containers_and_take_the_largest_init_container() {
        let mut p = pod("p")
            .cpu("100m")
            .memory("64Mi")
            .container("500m", "1Gi")
            .build();
        let spec = p.spec.as_mut().unwrap();
        let mut init = spec.containers[0].clone();
        init.name = "init".into();
        init.resources
            .as_mut()
            .unwrap()
            .requests
            .as_mut()
            .unwrap()
            .insert("cpu".into(), Quantity("2".into()));
        spec.init_containers = Some(vec![init]);
        let requests = PodRequests::of(&p).requests;
        assert_eq!(
            requests.milli_cpu, 2000,
            "the init container's 2 cores beat 600m"
        );
        assert_eq!(requests.memory, (64 << 20) + (1 << 30));
        assert_eq!(requests.pods, 1);
    }

    #[test]
    fn missing_requests_fit_as_zero_but_score_as_defaults() {
        let p = pod("p").build();
        let requests = PodRequests::of(&p);
        assert_eq!(requests.requests.milli_cpu, 0);
        assert_eq!(requests.non_zero.milli_cpu, DEFAULT_MILLI_CPU_REQUEST);
        assert_eq!(requests.non_zero.memory, DEFAULT_MEMORY_REQUEST);
    }

    #[test]
    fn node_accounting_adds_and_removes_pods() {
        let mut info = NodeInfo::new(Arc::new(node("n").build()));
        let requests = PodRequests::of(&pod("p").cpu("250m").build());
        info.add_pod(&requests);
        assert_eq!(info.requested.milli_cpu, 250);
        assert_eq!(info.requested.pods, 1);
        info.remove_pod(&requests);
        assert_eq!(info.requested, Resources::default());
        assert_eq!(info.allocatable.pods, 110);
    }
}
