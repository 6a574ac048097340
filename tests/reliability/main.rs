//! The reliability suite (issue 19, docs/reliability.md): faults and hostile input against real
//! components, each test checking a promise of reliability.md's table.
//!
//! Kubernetes counterpart: etcd's robustness tests (`tests/robustness`, kill under load and check
//! every acknowledged write) and the apiserver's negative integration tests
//! (`test/integration/apiserver`), much smaller: no linearizability checker, no failpoints, no
//! network fault proxy. What is here:
//!
//! - [`bad_input`] with the rows of [`table`]: 500+ malformed or hostile requests, each a 4xx
//!   `Status`, never a 5xx, and nothing changed;
//! - [`kill_apiserver`]: `kill -9` of the apiserver under concurrent creates, updates and deletes,
//!   no acknowledged write lost, the revision never going back;
//! - [`kill_components`]: every component of `minik up` killed with -9 in turn, restarted by
//!   `minik up`, and a change made while it was down reconciled.
//!
//! Run `cargo build --workspace --bins` first: the components and containers run the `minik`
//! binary.

mod bad_input;
mod kill_apiserver;
mod kill_components;
mod table;
