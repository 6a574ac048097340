//! Printers: the columns and cells of `minik get`, shared with the apiserver's Tables.
//!
//! Kubernetes counterpart: `pkg/printers/internalversion/printers.go`, where the Table columns of
//! each kind are defined and kubectl prints the cells verbatim. minik keeps those pure functions in
//! `minik_api::printers`, so the server's Tables (what kubectl shows) and `minik get` are computed
//! by the same code and cannot drift apart.

pub use minik_api::printers::{
    cells as row, cluster, duration, headers, kind_prefix, labels_of, name_column, name_of,
    namespace_of, service,
};
