//! Printers: how `minik get` turns what the server sent into kubectl's output.
//!
//! Kubernetes counterpart: `staging/src/k8s.io/cli-runtime/pkg/printers/`. The columns and cells
//! of each kind are not computed here: the API server answers `get` with a Table (computed by
//! `minik_api::printers`, upstream's `pkg/printers/internalversion`) and [`table`] prints it as
//! kubectl does. The few helpers re-exported below are for `describe`, `apply` and `delete`, which
//! format single fields the same way the server's Tables do.

pub mod table;

pub use minik_api::printers::{cluster, duration, kind_prefix, name_of, service};
