//! The checks every object's `metadata` gets, whatever its kind: its JSON shape, its labels, its
//! annotations and its finalizers. Found missing by the reliability suite's hostile-input table
//! (`tests/reliability/`): a ConfigMap with a label key `-bad-/key` or a `generation` of `"x"` was
//! stored.
//!
//! Kubernetes counterpart: decoding into `metav1.ObjectMeta` (a field of the wrong JSON type is a
//! 400 before any strategy runs) and `ValidateObjectMeta` in
//! `k8s.io/apimachinery/pkg/api/validation/objectmeta.go` (`ValidateLabels`,
//! `ValidateAnnotations` with their 256 KiB total, `ValidateFinalizers`). minik simplifies: the
//! finalizer rule is the qualified-name check only (upstream's core types also refuse an unprefixed
//! name that is not a standard finalizer), and `ownerReferences` are not validated here.

use minik_api::meta::{ObjectMeta, StatusCause};
use minik_api::status;
use serde_json::Value;

use super::typed;
use crate::error::ApiResult;

/// `TotalAnnotationSizeLimitB`: keys and values of all annotations together.
pub const MAX_ANNOTATION_BYTES: usize = 256 * 1024;

/// Decodes `metadata` (a 400 when a field has the wrong type) and validates it (a 422 naming the
/// fields).
pub fn check(object: &Value, kind: &str) -> ApiResult<()> {
    let Some(metadata) = object.get("metadata") else {
        return Ok(());
    };
    let meta: ObjectMeta = typed(metadata.clone(), kind)?;
    let causes = validate(&meta);
    if causes.is_empty() {
        return Ok(());
    }
    let name = meta.name.as_deref().unwrap_or("");
    Err(status::invalid(kind, name, causes).into())
}

/// `ValidateObjectMeta`'s label, annotation and finalizer rules.
pub fn validate(meta: &ObjectMeta) -> Vec<StatusCause> {
    let mut causes = Vec::new();
    for (key, value) in meta.labels.iter().flatten() {
        if let Some(why) = qualified_name_error(key) {
            causes.push(bad("metadata.labels", key, &why));
        }
        if !is_label_value(value) {
            let why = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
            causes.push(bad("metadata.labels", value, why));
        }
    }
    let mut size = 0;
    for (key, value) in meta.annotations.iter().flatten() {
        if let Some(why) = qualified_name_error(&key.to_ascii_lowercase()) {
            causes.push(bad("metadata.annotations", key, &why));
        }
        size += key.len() + value.len();
    }
    if size > MAX_ANNOTATION_BYTES {
        let message = format!("Too long: may not be more than {MAX_ANNOTATION_BYTES} bytes");
        causes.push(status::cause(
            "metadata.annotations",
            "FieldValueTooLong",
            message,
        ));
    }
    for (index, finalizer) in meta.finalizers.iter().flatten().enumerate() {
        if let Some(why) = qualified_name_error(finalizer) {
            causes.push(bad(
                &format!("metadata.finalizers[{index}]"),
                finalizer,
                &why,
            ));
        }
    }
    causes
}

fn bad(field: &str, value: &str, why: &str) -> StatusCause {
    let message = format!("Invalid value: {value:?}: {why}");
    status::cause(field, "FieldValueInvalid", message)
}

/// `IsQualifiedName`: an optional DNS-subdomain prefix and `/`, then a name of at most 63
/// characters of alphanumerics, `-`, `_` and `.`, starting and ending alphanumeric.
fn qualified_name_error(text: &str) -> Option<String> {
    let (prefix, name) = match text.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, text),
    };
    if let Some(prefix) = prefix {
        if !minik_api::validation::is_dns1123_subdomain(prefix) {
            return Some("prefix part must be a lowercase RFC 1123 subdomain".into());
        }
    }
    if name.is_empty() || name.len() > 63 || !is_label_value(name) || name.contains('/') {
        return Some(
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (at most 63 characters)"
                .into(),
        );
    }
    None
}

/// `IsValidLabelValue`: empty, or at most 63 alphanumerics, `-`, `_`, `.`, alphanumeric at both ends.
fn is_label_value(text: &str) -> bool {
    if text.is_empty() {
        return true;
    }
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    text.len() <= 63
        && edge(text.chars().next())
        && edge(text.chars().last())
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(value: Value) -> ObjectMeta {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn good_labels_annotations_and_finalizers_pass() {
        let good = meta(json!({"name": "x",
            "labels": {"app": "web", "app.kubernetes.io/name": "", "k8s.io/a_b.c": "v-1"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{…}", "Note": "x"},
            "finalizers": ["kubernetes.io/pvc-protection", "foregroundDeletion"]}));
        assert_eq!(validate(&good), vec![]);
    }

    #[test]
    fn bad_labels_annotations_and_finalizers_are_named() {
        let bad = meta(json!({"name": "x",
            "labels": {"-bad-/key": "v", "k": "sp ace", "ok": "x".repeat(64)},
            "annotations": {"a b": "v"},
            "finalizers": ["Not A Name!"]}));
        let fields: Vec<_> = validate(&bad).into_iter().filter_map(|c| c.field).collect();
        assert_eq!(
            fields,
            [
                "metadata.labels",
                "metadata.labels",
                "metadata.labels",
                "metadata.annotations",
                "metadata.finalizers[0]"
            ]
        );
    }

    #[test]
    fn annotations_are_limited_to_256_kib_in_total() {
        let big = meta(json!({"annotations": {"a": "x".repeat(MAX_ANNOTATION_BYTES)}}));
        assert_eq!(
            validate(&big)[0].reason.as_deref(),
            Some("FieldValueTooLong")
        );
    }

    #[test]
    fn metadata_of_the_wrong_shape_is_a_400() {
        let object = json!({"metadata": {"name": "x", "generation": "one"}});
        assert_eq!(check(&object, "ConfigMap").unwrap_err().code(), 400);
        let object = json!({"metadata": {"name": 7}});
        assert_eq!(check(&object, "ConfigMap").unwrap_err().code(), 400);
        let object = json!({"metadata": {"name": "x", "labels": {"k": "sp ace"}}});
        assert_eq!(check(&object, "ConfigMap").unwrap_err().code(), 422);
    }
}
