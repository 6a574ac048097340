//! The Secret strategy: `stringData` merged into `data`, `type` defaulted, per-type keys, and
//! `immutable` honoured on update.
//!
//! Kubernetes counterpart: `pkg/registry/core/secret/strategy.go` (`PrepareForCreate` and
//! `PrepareForUpdate` fold `stringData` into `data`; `Validate` → `ValidateSecret`,
//! `ValidateUpdate` → `ValidateSecretUpdate`). `data` is base64 on the wire: a value that is not
//! base64 fails to decode, a 400 as upstream. The rules are pure, in `minik_api::config`.

use minik_api::config::{normalize_secret, validate_secret, validate_secret_update};
use minik_api::core::Secret;
use minik_api::meta::StatusCause;
use minik_api::status;
use serde_json::Value;

use super::{typed, untyped};
use crate::error::ApiResult;

/// A new Secret: `stringData` folded into `data`, type `Opaque` unless given, validated.
pub fn prepare_create(object: Value) -> ApiResult<Value> {
    let mut secret: Secret = typed(object, "Secret")?;
    normalize_secret(&mut secret);
    check(&secret, validate_secret(&secret))?;
    untyped(&secret)
}

/// An updated Secret: same folding; its type never changes, an immutable one's data neither.
pub fn prepare_update(object: Value, old: &Value) -> ApiResult<Value> {
    let mut secret: Secret = typed(object, "Secret")?;
    let old: Secret = typed(old.clone(), "Secret")?;
    normalize_secret(&mut secret);
    check(&secret, validate_secret_update(&secret, &old))?;
    untyped(&secret)
}

fn check(secret: &Secret, causes: Vec<StatusCause>) -> ApiResult<()> {
    if causes.is_empty() {
        return Ok(());
    }
    let name = secret.metadata.name.as_deref().unwrap_or("");
    Err(status::invalid("Secret", name, causes).into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn string_data_is_stored_base64_in_data() {
        let created = prepare_create(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "db"}, "data": {"user": "b2xk"},
            "stringData": {"user": "admin", "password": "s3cr3t"}}))
        .unwrap();
        assert_eq!(created["type"], "Opaque");
        assert_eq!(
            created["data"],
            json!({"user": "YWRtaW4=", "password": "czNjcjN0"})
        );
        assert!(created.get("stringData").is_none());
    }

    #[test]
    fn a_tls_secret_without_its_key_is_a_422_and_type_is_immutable() {
        let tls = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "t"},
                         "type": "kubernetes.io/tls", "stringData": {"tls.crt": "c"}});
        assert_eq!(prepare_create(tls).unwrap_err().code(), 422);
        let opaque = prepare_create(json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "o"}}))
        .unwrap();
        let mut retyped = opaque.clone();
        retyped["type"] = json!("example.com/other");
        assert_eq!(prepare_update(retyped, &opaque).unwrap_err().code(), 422);
    }
}
