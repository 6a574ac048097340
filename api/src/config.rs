//! ConfigMaps and Secrets: key names, Secret types, `stringData`, and `immutable`.
//!
//! Kubernetes counterpart: `ValidateConfigMap`, `ValidateConfigMapUpdate`, `ValidateSecret` and
//! `ValidateSecretUpdate` in `pkg/apis/core/validation/validation.go`, `IsConfigMapKey` in
//! `k8s.io/apimachinery/pkg/util/validation`, and the secret strategy's `PrepareForCreate`
//! (`pkg/registry/core/secret/strategy.go`), which merges `stringData` into `data` and drops it.
//! The rules, in our words, are in docs/kubernetes-rules.md#configmaps-and-secrets.
//!
//! minik simplifies: a dockercfg payload is checked to be JSON, not decoded further.

use crate::core::{ConfigMap, Secret};
use crate::meta::StatusCause;
use crate::status::cause;

/// etcd's object limit is what upstream checks a ConfigMap's or Secret's total size against.
pub const MAX_DATA_BYTES: usize = 1024 * 1024;

const KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
const IMMUTABLE_MSG: &str = "field is immutable when `immutable` is set";

/// `IsConfigMapKey`: why `key` cannot name a file or a variable source, or `None` if it can.
pub fn config_key_error(key: &str) -> Option<&'static str> {
    if key.len() > 253 {
        Some("must be no more than 253 characters")
    } else if key.is_empty()
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        Some(KEY_MSG)
    } else if key == "." {
        Some("must not be '.'")
    } else if key == ".." {
        Some("must not be '..'")
    } else if key.starts_with("..") {
        Some("must not start with '..'")
    } else {
        None
    }
}

fn key_causes<'a>(field: &str, keys: impl Iterator<Item = &'a String>) -> Vec<StatusCause> {
    keys.filter_map(|key| {
        config_key_error(key).map(|why| {
            cause(
                format!("{field}[{key}]"),
                "FieldValueInvalid",
                format!("Invalid value: \"{key}\": {why}"),
            )
        })
    })
    .collect()
}

fn too_long(field: &str, size: usize) -> Option<StatusCause> {
    (size > MAX_DATA_BYTES).then(|| {
        cause(
            field,
            "FieldValueTooLong",
            format!("Too long: may not be more than {MAX_DATA_BYTES} bytes"),
        )
    })
}

/// `ValidateConfigMap`: valid keys, no key in both `data` and `binaryData`, at most 1 MiB.
pub fn validate_config_map(config_map: &ConfigMap) -> Vec<StatusCause> {
    let data = config_map.data.clone().unwrap_or_default();
    let binary = config_map.binary_data.clone().unwrap_or_default();
    let mut causes = key_causes("data", data.keys());
    causes.extend(key_causes("binaryData", binary.keys()));
    for key in binary.keys().filter(|key| data.contains_key(*key)) {
        causes.push(cause(
            "binaryData",
            "FieldValueInvalid",
            format!("Invalid value: \"{key}\": duplicate of key present in data"),
        ));
    }
    let size: usize = data.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>()
        + binary
            .iter()
            .map(|(k, v)| k.len() + v.0.len())
            .sum::<usize>();
    causes.extend(too_long("", size));
    causes
}

/// `immutable: true` freezes the payload and the flag itself (a 422 names each changed field).
fn immutable_causes(
    old_immutable: Option<bool>,
    new_immutable: Option<bool>,
    changed: &[(&str, bool)],
) -> Vec<StatusCause> {
    if old_immutable != Some(true) {
        return Vec::new();
    }
    let forbidden = |field: &str| {
        cause(
            field,
            "FieldValueForbidden",
            format!("Forbidden: {IMMUTABLE_MSG}"),
        )
    };
    let mut causes = Vec::new();
    if new_immutable != Some(true) {
        causes.push(forbidden("immutable"));
    }
    causes.extend(
        changed
            .iter()
            .filter(|(_, c)| *c)
            .map(|(field, _)| forbidden(field)),
    );
    causes
}

/// `ValidateConfigMapUpdate`: the rules of a new one, plus `immutable`.
pub fn validate_config_map_update(new: &ConfigMap, old: &ConfigMap) -> Vec<StatusCause> {
    let mut causes = validate_config_map(new);
    causes.extend(immutable_causes(
        old.immutable,
        new.immutable,
        &[
            ("data", new.data != old.data),
            ("binaryData", new.binary_data != old.binary_data),
        ],
    ));
    causes
}

/// The Secret strategy's `PrepareForCreate`/`PrepareForUpdate`: `type` defaults to `Opaque` and
/// `stringData` is merged into `data` (its keys win) and never stored.
pub fn normalize_secret(secret: &mut Secret) {
    if secret.type_.as_deref().unwrap_or("").is_empty() {
        secret.type_ = Some("Opaque".into());
    }
    if let Some(strings) = secret.string_data.take() {
        let data = secret.data.get_or_insert_with(Default::default);
        for (key, value) in strings {
            data.insert(key, k8s_openapi::ByteString(value.into_bytes()));
        }
    }
}

fn required(field: &str) -> StatusCause {
    cause(field, "FieldValueRequired", "Required value")
}

/// The keys each built-in Secret type must carry (`ValidateSecret`'s switch on the type).
fn type_causes(secret: &Secret) -> Vec<StatusCause> {
    let data = secret.data.clone().unwrap_or_default();
    let has = |key: &str| data.contains_key(key);
    let json_key = |key: &str| -> Vec<StatusCause> {
        match data.get(key) {
            None => vec![required(&format!("data[{key}]"))],
            Some(bytes) if serde_json::from_slice::<serde_json::Value>(&bytes.0).is_err() => {
                vec![cause(
                    format!("data[{key}]"),
                    "FieldValueInvalid",
                    "Invalid value: \"<secret contents redacted>\": invalid JSON",
                )]
            }
            Some(_) => Vec::new(),
        }
    };
    match secret.type_.as_deref().unwrap_or("Opaque") {
        "kubernetes.io/service-account-token" => {
            let annotated = secret.metadata.annotations.as_ref().is_some_and(|a| {
                a.get("kubernetes.io/service-account.name")
                    .is_some_and(|n| !n.is_empty())
            });
            if annotated {
                Vec::new()
            } else {
                vec![required(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                )]
            }
        }
        "kubernetes.io/dockercfg" => json_key(".dockercfg"),
        "kubernetes.io/dockerconfigjson" => json_key(".dockerconfigjson"),
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            vec![required("data[username]"), required("data[password]")]
        }
        "kubernetes.io/ssh-auth" if !has("ssh-privatekey") => {
            vec![required("data[ssh-privatekey]")]
        }
        "kubernetes.io/tls" => ["tls.key", "tls.crt"]
            .into_iter()
            .filter(|key| !has(key))
            .map(|key| required(&format!("data[{key}]")))
            .collect(),
        _ => Vec::new(),
    }
}

/// `ValidateSecret` (after [`normalize_secret`]): valid keys, the type's required keys, ≤ 1 MiB.
pub fn validate_secret(secret: &Secret) -> Vec<StatusCause> {
    let data = secret.data.clone().unwrap_or_default();
    let mut causes = key_causes("data", data.keys());
    causes.extend(type_causes(secret));
    let size: usize = data.iter().map(|(k, v)| k.len() + v.0.len()).sum();
    causes.extend(too_long("data", size));
    causes
}

/// `ValidateSecretUpdate`: the rules of a new one, `type` never changes, plus `immutable`.
pub fn validate_secret_update(new: &Secret, old: &Secret) -> Vec<StatusCause> {
    let mut causes = validate_secret(new);
    if new.type_ != old.type_ {
        causes.push(cause(
            "type",
            "FieldValueInvalid",
            format!(
                "Invalid value: \"{}\": field is immutable",
                new.type_.as_deref().unwrap_or("")
            ),
        ));
    }
    causes.extend(immutable_causes(
        old.immutable,
        new.immutable,
        &[("data", new.data != old.data)],
    ));
    causes
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
