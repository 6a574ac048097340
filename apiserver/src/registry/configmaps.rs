//! The ConfigMap strategy: valid keys, and `immutable` honoured on update.
//!
//! Kubernetes counterpart: `pkg/registry/core/configmap/strategy.go` (`Validate` →
//! `ValidateConfigMap`, `ValidateUpdate` → `ValidateConfigMapUpdate`). The rules are pure, in
//! `minik_api::config`.

use minik_api::config::{validate_config_map, validate_config_map_update};
use minik_api::core::ConfigMap;
use minik_api::meta::StatusCause;
use minik_api::status;
use serde_json::Value;

use super::{typed, untyped};
use crate::error::ApiResult;

/// A new ConfigMap: decoded (so `binaryData` must be base64) and validated.
pub fn prepare_create(object: Value) -> ApiResult<Value> {
    let config_map: ConfigMap = typed(object, "ConfigMap")?;
    check(&config_map, validate_config_map(&config_map))?;
    untyped(&config_map)
}

/// An updated ConfigMap: the data of an immutable one may not change (422).
pub fn prepare_update(object: Value, old: &Value) -> ApiResult<Value> {
    let config_map: ConfigMap = typed(object, "ConfigMap")?;
    let old: ConfigMap = typed(old.clone(), "ConfigMap")?;
    check(&config_map, validate_config_map_update(&config_map, &old))?;
    untyped(&config_map)
}

fn check(config_map: &ConfigMap, causes: Vec<StatusCause>) -> ApiResult<()> {
    if causes.is_empty() {
        return Ok(());
    }
    let name = config_map.metadata.name.as_deref().unwrap_or("");
    Err(status::invalid("ConfigMap", name, causes).into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn settings(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"},
               "data": data, "immutable": true})
    }

    #[test]
    fn changing_an_immutable_config_map_is_a_422_on_data() {
        let stored = prepare_create(settings(json!({"mode": "fast"}))).unwrap();
        let error = prepare_update(settings(json!({"mode": "slow"})), &stored).unwrap_err();
        assert_eq!(error.code(), 422);
        let causes = error.0.details.unwrap().causes.unwrap();
        assert_eq!(causes[0].field.as_deref(), Some("data"));
        assert!(prepare_update(settings(json!({"mode": "fast"})), &stored).is_ok());
    }

    #[test]
    fn an_invalid_key_is_a_422_and_bad_base64_a_400() {
        let bad_key = prepare_create(settings(json!({"a/b": "1"}))).unwrap_err();
        assert_eq!(bad_key.code(), 422);
        let bad_base64 = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"},
                                "binaryData": {"k": "not base64!"}});
        assert_eq!(prepare_create(bad_base64).unwrap_err().code(), 400);
    }
}
