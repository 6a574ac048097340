//! A container's environment: the pod's own variables, service links, `envFrom`, then `env`.
//!
//! Kubernetes counterpart: `Kubelet.makeEnvironmentVariables` in `pkg/kubelet/kubelet_pods.go`.
//! The order is upstream's: service variables first (they never override what the spec sets),
//! then each `envFrom` source (ConfigMap or Secret, with its `prefix`; keys that are not valid
//! variable names are skipped and reported), then `env` in order — literal values with `$(VAR)`
//! expansion over what came before, or `valueFrom` a ConfigMap key, a Secret key, a pod field
//! or a container resource. A missing ConfigMap, Secret or key that is not `optional` is an
//! error: the container is held in `CreateContainerConfigError` with that message.
//!
//! minik adds its own variables before all of these (`POD_NAME`, `POD_IP`, `PORT` …, see
//! `container.rs`); `KUBERNETES_SERVICE_HOST`/`_PORT` name the apiserver's own address, since a
//! process reaches it directly. Pure: the objects come through [`ObjectLookup`].

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, EnvFromSource, EnvVar, Pod};

use crate::container::{expand, PodContext};
use crate::downward::{field_value, resource_value};
use crate::sources::ObjectLookup;

/// A container's environment, and the warnings to report as events.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Environment {
    /// Every variable.
    pub vars: BTreeMap<String, String>,
    /// `InvalidEnvironmentVariableNames` messages (skipped `envFrom` keys).
    pub invalid_keys: Vec<String>,
}

/// `IsEnvVarName`: letters, digits, `_`, `-`, `.`, not starting with a digit.
pub fn is_env_var_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// `makeEnvironmentVariables`: see the module doc. `Err` is the CreateContainerConfigError message.
pub fn make_environment(
    pod: &Pod,
    container: &Container,
    ctx: &PodContext,
    base: BTreeMap<String, String>,
    lookup: &dyn ObjectLookup,
) -> Result<Environment, String> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let links = pod
        .spec
        .as_ref()
        .and_then(|s| s.enable_service_links)
        .unwrap_or(true);
    let services = lookup.services()?;
    let mut env = Environment {
        vars: crate::envvars::service_env(&services, namespace, links),
        ..Default::default()
    };
    env.vars.extend(base);
    for source in container.env_from.iter().flatten() {
        env_from(namespace, source, lookup, &mut env)?;
    }
    for var in container.env.iter().flatten() {
        if let Some(value) = env_value(pod, container, var, ctx, lookup, &env.vars)? {
            env.vars.insert(var.name.clone(), value);
        }
    }
    Ok(env)
}

fn env_from(
    namespace: &str,
    source: &EnvFromSource,
    lookup: &dyn ObjectLookup,
    env: &mut Environment,
) -> Result<(), String> {
    let prefix = source.prefix.clone().unwrap_or_default();
    let (what, name, values) = if let Some(cm) = &source.config_map_ref {
        let optional = cm.optional.unwrap_or(false);
        let values = match lookup.config_map(namespace, &cm.name)? {
            Some(map) => map.data.clone().unwrap_or_default(),
            None if optional => return Ok(()),
            None => return Err(format!("configmap \"{}\" not found", cm.name)),
        };
        ("configMap", cm.name.clone(), values)
    } else if let Some(secret) = &source.secret_ref {
        let optional = secret.optional.unwrap_or(false);
        let values = match lookup.secret(namespace, &secret.name)? {
            Some(found) => found
                .data
                .clone()
                .unwrap_or_default()
                .into_iter()
                .map(|(k, v)| (k, String::from_utf8_lossy(&v.0).into_owned()))
                .collect(),
            None if optional => return Ok(()),
            None => return Err(format!("secret \"{}\" not found", secret.name)),
        };
        ("secret", secret.name.clone(), values)
    } else {
        return Ok(());
    };
    let mut invalid = Vec::new();
    for (key, value) in values {
        let name = format!("{prefix}{key}");
        if is_env_var_name(&name) {
            env.vars.insert(name, value);
        } else {
            invalid.push(name);
        }
    }
    if !invalid.is_empty() {
        env.invalid_keys.push(format!(
            "Keys [{}] from the EnvFrom {what} {namespace}/{name} were skipped since they are considered invalid environment variable names.",
            invalid.join(", ")
        ));
    }
    Ok(())
}

/// One `env` entry; `None` for an optional reference that is missing (the variable is left out).
fn env_value(
    pod: &Pod,
    container: &Container,
    var: &EnvVar,
    ctx: &PodContext,
    lookup: &dyn ObjectLookup,
    so_far: &BTreeMap<String, String>,
) -> Result<Option<String>, String> {
    let namespace = pod.metadata.namespace.as_deref().unwrap_or_default();
    let Some(from) = &var.value_from else {
        return Ok(Some(expand(
            var.value.as_deref().unwrap_or_default(),
            so_far,
        )));
    };
    let facts = ctx.facts();
    if let Some(field) = &from.field_ref {
        return field_value(pod, &field.field_path, &facts).map(Some);
    }
    if let Some(resource) = &from.resource_field_ref {
        return resource_value(pod, &container.name, resource, &facts).map(Some);
    }
    if let Some(key_ref) = &from.config_map_key_ref {
        let optional = key_ref.optional.unwrap_or(false);
        let Some(map) = lookup.config_map(namespace, &key_ref.name)? else {
            return missing(
                optional,
                format!("configmap \"{}\" not found", key_ref.name),
            );
        };
        return match map.data.as_ref().and_then(|d| d.get(&key_ref.key)) {
            Some(value) => Ok(Some(value.clone())),
            None => missing(
                optional,
                format!(
                    "couldn't find key {} in ConfigMap {namespace}/{}",
                    key_ref.key, key_ref.name
                ),
            ),
        };
    }
    if let Some(key_ref) = &from.secret_key_ref {
        let optional = key_ref.optional.unwrap_or(false);
        let Some(secret) = lookup.secret(namespace, &key_ref.name)? else {
            return missing(optional, format!("secret \"{}\" not found", key_ref.name));
        };
        return match secret.data.as_ref().and_then(|d| d.get(&key_ref.key)) {
            Some(value) => Ok(Some(String::from_utf8_lossy(&value.0).into_owned())),
            None => missing(
                optional,
                format!(
                    "couldn't find key {} in Secret {namespace}/{}",
                    key_ref.key, key_ref.name
                ),
            ),
        };
    }
    Ok(None)
}

fn missing(optional: bool, message: String) -> Result<Option<String>, String> {
    if optional {
        Ok(None)
    } else {
        Err(message)
    }
}

#[cfg(test)]
#[path = "env_tests.rs"]
mod tests;
