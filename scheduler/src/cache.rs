//! The scheduler cache: one [`NodeInfo`] per node, kept up to date incrementally, plus the pods the
//! scheduler has *assumed* onto a node before the watch confirmed their binding.
//!
//! Kubernetes counterpart: `pkg/scheduler/backend/cache/cache.go` (`AssumePod`, `FinishBinding`,
//! `ForgetPod`, `AddPod`, `UpdatePod`, `RemovePod`, `AddNode`, …). Binding is an API call that takes
//! a round trip, and the watch event that shows `spec.nodeName` arrives later still. If the next
//! decision only looked at the watch, it would not see the pod it just placed and would overcommit
//! the node. So the scheduler *assumes* the pod onto the node at once, counts its requests there, and
//! forgets the assumption only if the bind fails; the watch event later turns it into a confirmed pod.
//!
//! Every update is O(1) (a new node is O(pods), once), so a decision costs O(nodes), never O(pods).
//!
//! minik simplifies: assumed pods never expire on a timer (upstream's cache has a TTL for binds whose
//! result never came back); minik always gets a result from its own bind task.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use minik_api::core::{Node, Pod};
use minik_api::ObjectKey;

use crate::node_info::{is_terminated, NodeInfo, PodRequests};

/// Where a pod sits, as far as resource accounting is concerned.
#[derive(Clone, Debug)]
struct PodState {
    node: String,
    requests: PodRequests,
    /// Placed by this scheduler, not yet seen bound in the watch.
    assumed: bool,
}

/// Nodes and the pods occupying them.
#[derive(Debug, Default)]
pub struct SchedulerCache {
    /// Sorted by name so that decisions are deterministic.
    nodes: BTreeMap<String, NodeInfo>,
    /// Every pod that holds resources on some node: bound and running, or assumed.
    pods: HashMap<ObjectKey, PodState>,
}

impl SchedulerCache {
    /// An empty cache.
    pub fn new() -> Self {
        SchedulerCache::default()
    }

    /// The nodes, in name order, for [`crate::algorithm::schedule_on`].
    pub fn node_infos(&self) -> impl Iterator<Item = &NodeInfo> {
        self.nodes.values()
    }

    /// The node named `name`, if known.
    pub fn node(&self, name: &str) -> Option<&NodeInfo> {
        self.nodes.get(name)
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Adds or updates a node. A new node's usage is rebuilt from the pods already known to be on it
    /// (the watch may show a pod bound to a node before it shows the node).
    pub fn set_node(&mut self, node: Arc<Node>) {
        let name = node.metadata.name.clone().unwrap_or_default();
        if let Some(info) = self.nodes.get_mut(&name) {
            info.set_node(node);
            return;
        }
        let mut info = NodeInfo::new(node);
        for state in self.pods.values().filter(|state| state.node == name) {
            info.add_pod(&state.requests);
        }
        self.nodes.insert(name, info);
    }

    /// Removes a node (its pods stay accounted, in case it comes back).
    pub fn remove_node(&mut self, name: &str) {
        self.nodes.remove(name);
    }

    /// Replaces every node after a relist.
    pub fn reset_nodes(&mut self, nodes: impl IntoIterator<Item = Arc<Node>>) {
        self.nodes.clear();
        for node in nodes {
            self.set_node(node);
        }
    }

    /// Whether the scheduler has assumed this pod onto a node and is waiting for the watch to agree.
    pub fn is_assumed(&self, key: &ObjectKey) -> bool {
        self.pods.get(key).is_some_and(|state| state.assumed)
    }

    /// Counts `requests` on `node` now, before the binding is confirmed.
    pub fn assume(&mut self, key: ObjectKey, node: &str, requests: PodRequests) {
        self.remove(&key);
        self.insert(
            key,
            PodState {
                node: node.to_string(),
                requests,
                assumed: true,
            },
        );
    }

    /// Undoes an assumption whose bind failed.
    pub fn forget(&mut self, key: &ObjectKey) {
        if self.is_assumed(key) {
            self.remove(key);
        }
    }

    /// Applies a pod seen by the watch (added or modified). A bound, unfinished pod holds its node's
    /// resources; a finished one frees them; an unbound one holds nothing unless it is assumed (the
    /// watch can lag behind the bind). Returns whether resources were freed, which may let a parked
    /// pod fit.
    pub fn update_pod(&mut self, pod: &Pod) -> bool {
        let key = ObjectKey::of(&pod.metadata);
        let node = pod.spec.as_ref().and_then(|s| s.node_name.as_deref());
        match node {
            Some(_) if is_terminated(pod) => self.remove(&key),
            Some(node) => {
                let unchanged = self
                    .pods
                    .get(&key)
                    .is_some_and(|s| s.node == node && !s.assumed);
                if !unchanged {
                    self.remove(&key);
                    let state = PodState {
                        node: node.to_string(),
                        requests: PodRequests::of(pod),
                        assumed: false,
                    };
                    self.insert(key, state);
                }
                false
            }
            None if self.is_assumed(&key) => false,
            None => self.remove(&key),
        }
    }

    /// Forgets a deleted pod; returns whether it held resources.
    pub fn delete_pod(&mut self, key: &ObjectKey) -> bool {
        self.remove(key)
    }

    /// Rebuilds the pod accounting after a relist, keeping assumptions the list does not contradict.
    pub fn reset_pods<'a>(&mut self, pods: impl IntoIterator<Item = &'a Pod>) {
        let assumed: Vec<(ObjectKey, PodState)> =
            self.pods.drain().filter(|(_, s)| s.assumed).collect();
        for info in self.nodes.values_mut() {
            *info = NodeInfo::new(info.node.clone());
        }
        let mut listed = std::collections::HashSet::new();
        for pod in pods {
            listed.insert(ObjectKey::of(&pod.metadata));
            self.update_pod(pod);
        }
        for (key, state) in assumed {
            // Keep the assumption if the pod is listed but not yet bound (bind in flight).
            if listed.contains(&key) && !self.pods.contains_key(&key) {
                self.insert(key, state);
            }
        }
    }

    fn insert(&mut self, key: ObjectKey, state: PodState) {
        if let Some(info) = self.nodes.get_mut(&state.node) {
            info.add_pod(&state.requests);
        }
        self.pods.insert(key, state);
    }

    fn remove(&mut self, key: &ObjectKey) -> bool {
        let Some(state) = self.pods.remove(key) else {
            return false;
        };
        if let Some(info) = self.nodes.get_mut(&state.node) {
            info.remove_pod(&state.requests);
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{node, pod};

    fn cache_with_node() -> SchedulerCache {
        let mut cache = SchedulerCache::new();
        cache.set_node(Arc::new(node("node-1").build()));
        cache
    }

    fn used_cpu(cache: &SchedulerCache) -> i64 {
        cache.node("node-1").unwrap().requested.milli_cpu
    }

    #[test]
    fn assumed_pod_counts_until_the_watch_confirms_it() {
        let mut cache = cache_with_node();
        let unbound = pod("web").cpu("1").build();
        let key = ObjectKey::of(&unbound.metadata);
        cache.assume(key.clone(), "node-1", PodRequests::of(&unbound));
        assert_eq!(used_cpu(&cache), 1000);
        // A stale event without nodeName must not undo the assumption.
        cache.update_pod(&unbound);
        assert_eq!(used_cpu(&cache), 1000);
        // The watch shows the binding: still counted once, no longer assumed.
        cache.update_pod(&pod("web").cpu("1").node_name("node-1").build());
        assert_eq!(used_cpu(&cache), 1000);
        assert!(!cache.is_assumed(&key));
        cache.forget(&key);
        assert_eq!(used_cpu(&cache), 1000, "forget only undoes assumptions");
    }

    #[test]
    fn forgetting_a_failed_bind_frees_the_resources() {
        let mut cache = cache_with_node();
        let p = pod("web").cpu("1").build();
        let key = ObjectKey::of(&p.metadata);
        cache.assume(key.clone(), "node-1", PodRequests::of(&p));
        cache.forget(&key);
        assert_eq!(used_cpu(&cache), 0);
    }

    #[test]
    fn finished_and_deleted_pods_free_their_node() {
        let mut cache = cache_with_node();
        cache.update_pod(&pod("a").cpu("1").node_name("node-1").build());
        cache.update_pod(&pod("b").cpu("1").node_name("node-1").build());
        assert_eq!(used_cpu(&cache), 2000);
        cache.update_pod(
            &pod("a")
                .cpu("1")
                .node_name("node-1")
                .phase("Succeeded")
                .build(),
        );
        cache.delete_pod(&ObjectKey::new("default", "b"));
        assert_eq!(used_cpu(&cache), 0);
    }

    #[test]
    fn node_seen_after_its_pods_starts_with_their_usage() {
        let mut cache = SchedulerCache::new();
        cache.update_pod(&pod("a").cpu("500m").node_name("node-1").build());
        cache.set_node(Arc::new(node("node-1").build()));
        assert_eq!(used_cpu(&cache), 500);
    }

    #[test]
    fn relist_rebuilds_usage_and_keeps_in_flight_assumptions() {
        let mut cache = cache_with_node();
        let in_flight = pod("new").cpu("1").build();
        cache.assume(
            ObjectKey::of(&in_flight.metadata),
            "node-1",
            PodRequests::of(&in_flight),
        );
        cache.update_pod(&pod("gone").cpu("2").node_name("node-1").build());
        cache.reset_pods([
            &pod("kept").cpu("250m").node_name("node-1").build(),
            &in_flight,
        ]);
        assert_eq!(used_cpu(&cache), 1250);
    }
}
