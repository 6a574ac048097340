//! The patch types whose semantics depend on the kind: strategic merge patch and server-side apply.
//!
//! Kubernetes counterpart: `k8s.io/apimachinery/pkg/util/strategicpatch` (strategic merge patch,
//! driven by the `patchStrategy` / `patchMergeKey` struct tags of `k8s.io/api/core/v1/types.go`)
//! and `k8s.io/apiserver/pkg/endpoints/handlers/fieldmanager` + `sigs.k8s.io/structured-merge-diff`
//! (server-side apply and `metadata.managedFields`). JSON merge patch (RFC 7396) and JSON patch
//! (RFC 6902) need no knowledge of the kind and come from the `json-patch` crate (see
//! `registry/patch.rs`).
//!
//! Everything here is a pure function over `serde_json::Value`: the handler reads the live object,
//! calls [`strategic::merge`] or [`apply::apply`], and stores the result under the usual
//! compare-and-swap. [`schema`] is the small table of list strategies (which lists merge by which
//! key) that upstream reads from struct tags and the OpenAPI document.
//!
//! minik simplifies: the list strategies are a hand-written table for the kinds minik serves;
//! server-side apply tracks only appliers' field sets (see `apply.rs`).

pub mod apply;
pub mod fieldset;
pub mod schema;
pub mod strategic;

use minik_api::meta::Status;
use minik_api::status;

/// Why a patch cannot be applied.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// The patch document is malformed (400 BadRequest upstream).
    #[error("{0}")]
    BadPatch(String),
    /// The patch is well formed but cannot apply to this object (422 Invalid upstream).
    #[error("{0}")]
    Invalid(String),
    /// Server-side apply without `fieldManager` (422: upstream validates the PatchOptions).
    #[error("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch")]
    MissingFieldManager,
    /// Server-side apply would take fields another applier owns (409 Conflict).
    #[error("{message}")]
    Conflict {
        /// `Apply failed with 1 conflict: conflict with "other" using v1: .spec.x`.
        message: String,
        /// One `(field, manager)` per conflicting field.
        conflicts: Vec<(String, String)>,
    },
}

/// Result of the patch functions.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The `Status` the API answers with.
    pub fn to_status(&self) -> Status {
        match self {
            Error::BadPatch(message) => status::bad_request(message.clone()),
            Error::MissingFieldManager => {
                let cause = status::cause(
                    "fieldManager",
                    "FieldValueRequired",
                    "Required value: is required for apply patch",
                );
                let mut invalid = status::invalid("PatchOptions.meta.k8s.io", "", vec![cause]);
                if let Some(details) = invalid.details.as_mut() {
                    details.group = Some("meta.k8s.io".into());
                    details.kind = Some("PatchOptions".into());
                    details.name = None;
                }
                invalid
            }
            Error::Invalid(message) => status::failure(422, "Invalid", message.clone()),
            Error::Conflict { message, conflicts } => {
                let mut answer = status::failure(409, "Conflict", message.clone());
                let causes = conflicts
                    .iter()
                    .map(|(field, manager)| {
                        status::cause(
                            field.clone(),
                            "FieldManagerConflict",
                            format!("conflict with \"{manager}\" using v1"),
                        )
                    })
                    .collect();
                answer.details = Some(minik_api::meta::StatusDetails {
                    causes: Some(causes),
                    ..Default::default()
                });
                answer
            }
        }
    }
}
