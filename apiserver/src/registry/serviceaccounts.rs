//! The ServiceAccount strategy and the pod admission that reads ServiceAccounts.
//!
//! Kubernetes counterpart: `pkg/registry/core/serviceaccount/strategy.go` (a ServiceAccount is
//! stored as sent, normalised) and the ServiceAccount admission plugin
//! (`plugin/pkg/admission/serviceaccount/admission.go`), which runs on every pod create: the pod
//! runs as `default` unless it names an account, and gets the token volume unless
//! `automountServiceAccountToken` says no (docs/security.md#s12). The rule itself is the pure
//! `minik_api::serviceaccounts::admit_pod`; here it meets the stored account.

use minik_api::core::{Pod, ServiceAccount};
use minik_api::serviceaccounts::{admit_pod, DEFAULT_SERVICE_ACCOUNT};
use rand::distr::{Alphanumeric, SampleString};
use serde_json::Value;

use super::{typed, untyped};
use crate::error::{ApiError, ApiResult};
use crate::storage::Storage;

/// The storage key of a ServiceAccount.
pub fn key(namespace: &str, name: &str) -> String {
    format!("/registry/serviceaccounts/{namespace}/{name}")
}

/// Reads the ServiceAccount `namespace/name`, if it exists.
pub fn get(
    storage: &dyn Storage,
    namespace: &str,
    name: &str,
) -> ApiResult<Option<(ServiceAccount, Value)>> {
    let record = storage
        .get(&key(namespace, name))
        .map_err(|e| ApiError::from_storage(e, "serviceaccounts", name))?;
    record
        .map(|r| {
            let value = r.value.as_ref().clone();
            Ok((typed(value.clone(), "ServiceAccount")?, value))
        })
        .transpose()
}

/// The admission on a new pod's body (before the pod strategy runs).
pub fn admit(
    storage: &dyn Storage,
    body: Value,
    namespace: &str,
    issues_tokens: bool,
) -> ApiResult<Value> {
    let mut pod: Pod = typed(body, "Pod")?;
    let name = pod
        .spec
        .as_ref()
        .and_then(|s| s.service_account_name.clone().or(s.service_account.clone()))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| DEFAULT_SERVICE_ACCOUNT.to_string());
    let account = get(storage, namespace, &name)?.map(|(account, _)| account);
    // Upstream's `names.SimpleNameGenerator`: five random lowercase alphanumerics.
    let suffix = Alphanumeric
        .sample_string(&mut rand::rng(), 5)
        .to_ascii_lowercase();
    admit_pod(&mut pod, account.as_ref(), &suffix, issues_tokens);
    untyped(&pod)
}
