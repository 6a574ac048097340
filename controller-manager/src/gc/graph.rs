//! The garbage collector's graph of owners and dependents, and its decisions, without I/O.
//!
//! Kubernetes counterpart: `pkg/controller/garbagecollector/graph.go` (`node`, `owners`,
//! `dependents`), `graph_builder.go` (`processGraphChanges`: which nodes to look at after an event)
//! and `garbagecollector.go` (`attemptToDeleteItem`, `classifyReferences`,
//! `processDeletingDependentsItem`, `orphanDependents`).
//!
//! Every object of every kind is a [`Node`] keyed by uid, with its ownerReferences; the graph also
//! indexes, for each owner uid, the uids of the objects that name it. An event returns the uids the
//! collector must look at:
//!
//! - an object with owners (its owners may be gone, or being deleted in the foreground);
//! - an object being deleted with the `orphan` or `foregroundDeletion` finalizer, and, for
//!   foreground, its dependents;
//! - when an object goes: its dependents (now dangling) and its owners (a foreground owner may be
//!   waiting for exactly this dependent).

use std::collections::{HashMap, HashSet};

use minik_api::meta::{ObjectMeta, OwnerReference};
use minik_api::ResourceInfo;

/// The finalizer of a Foreground delete: the owner stays until blocking dependents are gone.
pub const FOREGROUND: &str = "foregroundDeletion";
/// The finalizer of an Orphan delete: dependents lose the reference, then the owner goes.
pub const ORPHAN: &str = "orphan";

/// One object, as the collector knows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// `metadata.uid`.
    pub uid: String,
    /// Its kind, for the URL of deletes and patches.
    pub kind: &'static ResourceInfo,
    /// `metadata.namespace`.
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.ownerReferences`.
    pub owners: Vec<OwnerReference>,
    /// `metadata.deletionTimestamp` is set.
    pub deleting: bool,
    /// `metadata.finalizers`.
    pub finalizers: Vec<String>,
}

impl Node {
    /// The node of an object of `kind`; `None` without a uid.
    pub fn of(kind: &'static ResourceInfo, meta: &ObjectMeta) -> Option<Node> {
        Some(Node {
            uid: meta.uid.clone()?,
            kind,
            namespace: meta.namespace.clone(),
            name: meta.name.clone().unwrap_or_default(),
            owners: meta.owner_references.clone().unwrap_or_default(),
            deleting: meta.deletion_timestamp.is_some(),
            finalizers: meta.finalizers.clone().unwrap_or_default(),
        })
    }

    /// Has this finalizer.
    pub fn has_finalizer(&self, finalizer: &str) -> bool {
        self.finalizers.iter().any(|f| f == finalizer)
    }

    /// Being deleted in the foreground: its dependents go first.
    pub fn deleting_dependents(&self) -> bool {
        self.deleting && self.has_finalizer(FOREGROUND)
    }
}

impl std::fmt::Display for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{namespace}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// Every node, and who names whom as owner.
#[derive(Debug, Default)]
pub struct Graph {
    nodes: HashMap<String, Node>,
    /// Owner uid → uids of the objects whose ownerReferences name it.
    dependents: HashMap<String, HashSet<String>>,
}

impl Graph {
    /// The node with `uid`.
    pub fn node(&self, uid: &str) -> Option<&Node> {
        self.nodes.get(uid)
    }

    /// The nodes naming `uid` as an owner.
    pub fn dependents(&self, uid: &str) -> Vec<&Node> {
        self.dependents
            .get(uid)
            .into_iter()
            .flatten()
            .filter_map(|dependent| self.nodes.get(dependent))
            .collect()
    }

    /// Dependents whose reference to `uid` has `blockOwnerDeletion: true`.
    pub fn blocking_dependents(&self, uid: &str) -> Vec<&Node> {
        self.dependents(uid)
            .into_iter()
            .filter(|node| {
                node.owners
                    .iter()
                    .any(|r| r.uid == uid && r.block_owner_deletion == Some(true))
            })
            .collect()
    }

    /// An object was added or changed; returns the uids to look at.
    pub fn upsert(&mut self, node: Node) -> Vec<String> {
        let uid = node.uid.clone();
        if let Some(old) = self.nodes.get(&uid) {
            for owner in &old.owners {
                if let Some(set) = self.dependents.get_mut(&owner.uid) {
                    set.remove(&uid);
                }
            }
        }
        for owner in &node.owners {
            self.dependents
                .entry(owner.uid.clone())
                .or_default()
                .insert(uid.clone());
        }
        let mut attend = Vec::new();
        if !node.owners.is_empty() {
            attend.push(uid.clone());
            attend.extend(self.waiting_owners(&node));
        }
        if node.deleting && (node.has_finalizer(ORPHAN) || node.has_finalizer(FOREGROUND)) {
            attend.push(uid.clone());
            if node.has_finalizer(FOREGROUND) {
                attend.extend(self.dependents(&uid).into_iter().map(|d| d.uid.clone()));
            }
        }
        self.nodes.insert(uid, node);
        attend
    }

    /// An object was deleted; returns the uids to look at.
    pub fn remove(&mut self, uid: &str) -> Vec<String> {
        let Some(node) = self.nodes.remove(uid) else {
            return Vec::new();
        };
        for owner in &node.owners {
            if let Some(set) = self.dependents.get_mut(&owner.uid) {
                set.remove(uid);
            }
        }
        let mut attend: Vec<String> = self
            .dependents(uid)
            .into_iter()
            .map(|d| d.uid.clone())
            .collect();
        attend.extend(self.waiting_owners(&node));
        attend
    }

    /// The owners of `node` that are being deleted in the foreground.
    fn waiting_owners(&self, node: &Node) -> Vec<String> {
        node.owners
            .iter()
            .filter_map(|r| self.nodes.get(&r.uid))
            .filter(|owner| owner.deleting_dependents())
            .map(|owner| owner.uid.clone())
            .collect()
    }
}

/// What an owner reference resolves to (`classifyReferences`, GC6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnerState {
    /// The owner exists and is not being deleted in the foreground.
    Solid,
    /// The owner is gone, or a different object (another uid) has its name.
    Dangling,
    /// The owner is being deleted in the foreground, waiting for its dependents.
    Waiting,
}

/// What to do with a dependent (`attemptToDeleteItem`, GC7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Keep it as it is.
    Keep,
    /// Keep it, but remove these owners' references (dangling or waiting, beside a solid owner).
    RemoveReferences(Vec<String>),
    /// Delete it with this propagation policy.
    Delete(&'static str),
}

/// The decision for `node`, given its owners' states and whether it has dependents itself.
pub fn decide(node: &Node, owners: &[(String, OwnerState)], has_dependents: bool) -> Decision {
    let uids = |state: OwnerState| -> Vec<String> {
        owners
            .iter()
            .filter(|(_, s)| *s == state)
            .map(|(uid, _)| uid.clone())
            .collect()
    };
    let (solid, dangling, waiting) = (
        uids(OwnerState::Solid),
        uids(OwnerState::Dangling),
        uids(OwnerState::Waiting),
    );
    if owners.is_empty() {
        return Decision::Keep;
    }
    if !solid.is_empty() {
        let stale: Vec<String> = dangling.into_iter().chain(waiting).collect();
        return if stale.is_empty() {
            Decision::Keep
        } else {
            Decision::RemoveReferences(stale)
        };
    }
    if !waiting.is_empty() && has_dependents {
        // The cascade recurses: this dependent's own dependents go before it.
        return Decision::Delete("Foreground");
    }
    if node.has_finalizer(ORPHAN) {
        Decision::Delete("Orphan")
    } else if node.has_finalizer(FOREGROUND) {
        Decision::Delete("Foreground")
    } else {
        Decision::Delete("Background")
    }
}

#[cfg(test)]
#[path = "graph_tests.rs"]
mod tests;
