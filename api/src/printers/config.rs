//! The rows of `get configmaps` and `get secrets`.
//!
//! Kubernetes counterpart: `printConfigMap` and `printSecret` in
//! `pkg/printers/internalversion/printers.go`: DATA counts the keys (`data` plus `binaryData`
//! for a ConfigMap), TYPE is the Secret's `type`.

use jiff::Timestamp;

use crate::core::{ConfigMap, Secret};

use super::duration::age;

/// NAME DATA AGE.
pub fn config_map_row(config_map: &ConfigMap, now: Timestamp) -> Vec<String> {
    let keys = config_map.data.as_ref().map_or(0, |d| d.len())
        + config_map.binary_data.as_ref().map_or(0, |d| d.len());
    vec![
        config_map.metadata.name.clone().unwrap_or_default(),
        keys.to_string(),
        age(
            config_map.metadata.creation_timestamp.as_ref().map(|t| t.0),
            now,
        ),
    ]
}

/// NAME TYPE DATA AGE.
pub fn secret_row(secret: &Secret, now: Timestamp) -> Vec<String> {
    vec![
        secret.metadata.name.clone().unwrap_or_default(),
        secret.type_.clone().unwrap_or_default(),
        secret.data.as_ref().map_or(0, |d| d.len()).to_string(),
        age(
            secret.metadata.creation_timestamp.as_ref().map(|t| t.0),
            now,
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn data_counts_text_and_binary_keys() {
        let config_map = ConfigMap {
            data: Some(BTreeMap::from([("a".into(), "1".into())])),
            binary_data: Some(BTreeMap::from([(
                "b".into(),
                k8s_openapi::ByteString(vec![1]),
            )])),
            ..Default::default()
        };
        assert_eq!(config_map_row(&config_map, Timestamp::now())[1], "2");
        let secret = Secret {
            type_: Some("Opaque".into()),
            ..Default::default()
        };
        assert_eq!(secret_row(&secret, Timestamp::now())[1..3], ["Opaque", "0"]);
    }
}
