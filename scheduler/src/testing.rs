//! Test fixtures: small builders for the pods and nodes the scheduler's tests are written with.
//!
//! Kubernetes counterpart: `pkg/scheduler/testing/wrappers.go` (`st.MakePod().Req(…).Obj()`,
//! `st.MakeNode().Capacity(…)`), the fluent wrappers upstream's scheduler tests use.

use std::collections::BTreeMap;

use minik_api::core::{
    Container, Node, NodeCondition, NodeSpec, NodeStatus, Pod, PodSpec, PodStatus,
    ResourceRequirements, Taint, Toleration,
};
use minik_api::k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use minik_api::meta::ObjectMeta;

/// Starts a pod named `name` in namespace `default` with one container and no requests.
pub fn pod(name: &str) -> PodBuilder {
    let container = Container {
        name: "c".into(),
        image: Some("minik/web".into()),
        ..Container::default()
    };
    PodBuilder(Pod {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            uid: Some(format!("uid-{name}")),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![container],
            ..PodSpec::default()
        }),
        status: Some(PodStatus {
            phase: Some("Pending".into()),
            ..PodStatus::default()
        }),
    })
}

/// A pod under construction.
pub struct PodBuilder(Pod);

impl PodBuilder {
    fn spec(&mut self) -> &mut PodSpec {
        self.0.spec.get_or_insert_with(PodSpec::default)
    }

    fn request(mut self, resource: &str, amount: &str) -> Self {
        let container = &mut self.spec().containers[0];
        let requirements = container
            .resources
            .get_or_insert_with(ResourceRequirements::default);
        requirements
            .requests
            .get_or_insert_with(BTreeMap::new)
            .insert(resource.into(), Quantity(amount.into()));
        self
    }

    /// Sets the first container's CPU request.
    pub fn cpu(self, amount: &str) -> Self {
        self.request("cpu", amount)
    }

    /// Sets the first container's memory request.
    pub fn memory(self, amount: &str) -> Self {
        self.request("memory", amount)
    }

    /// Adds a container requesting `cpu` and `memory`.
    pub fn container(mut self, cpu: &str, memory: &str) -> Self {
        let requests = BTreeMap::from([
            ("cpu".into(), Quantity(cpu.into())),
            ("memory".into(), Quantity(memory.into())),
        ]);
        let index = self.spec().containers.len();
        self.spec().containers.push(Container {
            name: format!("c{index}"),
            resources: Some(ResourceRequirements {
                requests: Some(requests),
                ..ResourceRequirements::default()
            }),
            ..Container::default()
        });
        self
    }

    /// Adds a `nodeSelector` entry.
    pub fn node_selector(mut self, key: &str, value: &str) -> Self {
        self.spec()
            .node_selector
            .get_or_insert_with(BTreeMap::new)
            .insert(key.into(), value.into());
        self
    }

    /// Adds a toleration (`operator` is `Equal` or `Exists`).
    pub fn toleration(mut self, key: &str, operator: &str, value: &str, effect: &str) -> Self {
        let some = |text: &str| (!text.is_empty()).then(|| text.to_string());
        self.spec()
            .tolerations
            .get_or_insert_with(Vec::new)
            .push(Toleration {
                key: some(key),
                operator: some(operator),
                value: some(value),
                effect: some(effect),
                ..Toleration::default()
            });
        self
    }

    /// Binds the pod to a node.
    pub fn node_name(mut self, node: &str) -> Self {
        self.spec().node_name = Some(node.into());
        self
    }

    /// Sets `status.phase`.
    pub fn phase(mut self, phase: &str) -> Self {
        self.0.status.get_or_insert_with(PodStatus::default).phase = Some(phase.into());
        self
    }

    /// The pod.
    pub fn build(self) -> Pod {
        self.0
    }
}

/// Starts a Ready node with 4 CPUs, 8 GiB and room for 110 pods.
pub fn node(name: &str) -> NodeBuilder {
    let allocatable = BTreeMap::from([
        ("cpu".into(), Quantity("4".into())),
        ("memory".into(), Quantity("8Gi".into())),
        ("pods".into(), Quantity("110".into())),
    ]);
    let ready = NodeCondition {
        type_: "Ready".into(),
        status: "True".into(),
        ..NodeCondition::default()
    };
    NodeBuilder(Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec::default()),
        status: Some(NodeStatus {
            allocatable: Some(allocatable.clone()),
            capacity: Some(allocatable),
            conditions: Some(vec![ready]),
            ..NodeStatus::default()
        }),
    })
}

/// A node under construction.
pub struct NodeBuilder(Node);

impl NodeBuilder {
    fn allocatable(mut self, resource: &str, amount: &str) -> Self {
        let status = self.0.status.get_or_insert_with(NodeStatus::default);
        status
            .allocatable
            .get_or_insert_with(BTreeMap::new)
            .insert(resource.into(), Quantity(amount.into()));
        self
    }

    /// Sets allocatable CPU.
    pub fn cpu(self, amount: &str) -> Self {
        self.allocatable("cpu", amount)
    }

    /// Sets allocatable memory.
    pub fn memory(self, amount: &str) -> Self {
        self.allocatable("memory", amount)
    }

    /// Sets the maximum number of pods.
    pub fn pods(self, count: u32) -> Self {
        self.allocatable("pods", &count.to_string())
    }

    /// Adds a label.
    pub fn label(mut self, key: &str, value: &str) -> Self {
        self.0
            .metadata
            .labels
            .get_or_insert_with(BTreeMap::new)
            .insert(key.into(), value.into());
        self
    }

    /// Adds a taint.
    pub fn taint(mut self, key: &str, value: &str, effect: &str) -> Self {
        let taint = Taint {
            key: key.into(),
            value: Some(value.into()),
            effect: effect.into(),
            ..Taint::default()
        };
        self.0
            .spec
            .get_or_insert_with(NodeSpec::default)
            .taints
            .get_or_insert_with(Vec::new)
            .push(taint);
        self
    }

    /// Cordons the node (`spec.unschedulable: true`).
    pub fn unschedulable(mut self) -> Self {
        self.0
            .spec
            .get_or_insert_with(NodeSpec::default)
            .unschedulable = Some(true);
        self
    }

    /// Sets the Ready condition's status (`"False"`, `"Unknown"`).
    pub fn ready(mut self, status: &str) -> Self {
        let status_obj = self.0.status.get_or_insert_with(NodeStatus::default);
        for condition in status_obj.conditions.iter_mut().flatten() {
            condition.status = status.into();
        }
        self
    }

    /// The node.
    pub fn build(self) -> Node {
        self.0
    }
}
