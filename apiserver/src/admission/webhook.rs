//! The admission webhook dispatcher: which webhooks a write goes to, in which order, and what
//! their answers do to it.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/admission/plugin/webhook/mutating/dispatcher.go`
//! and `validating/dispatcher.go`, fed by `configuration/*_webhook_manager.go`. Mutating webhooks
//! run first, one after the other (configurations sorted by name, webhooks in their listed
//! order), each seeing the object as the previous ones patched it; then the registry validates
//! the result, then the validating webhooks are called in parallel and any denial refuses the
//! write (the first in configuration order is reported). A failed call refuses the write under
//! `failurePolicy: Fail` (500) and is skipped under `Ignore`; webhook warnings become `Warning`
//! headers. `matchConditions` decide (after the selectors) whether a webhook is called, and a
//! mutating webhook with `reinvocationPolicy: IfNeeded` runs once more when a later webhook
//! changed the object. minik simplifies: no CONNECT (exec, attach, port-forward are not sent),
//! and the configurations are read from storage on each write (no informer cache).

use std::sync::Mutex;

use futures::future::join_all;
use minik_api::resource::lookup;
use minik_api::status;
use serde_json::Value;
use tracing::{info, warn};

use super::match_conditions::{self, Outcome};
use super::webhook_client;
use super::webhook_match::{
    is_exempt, labels_of, rules_match, selector_matches, Operation, Resource, Webhook,
};
use super::webhook_review::{
    apply_patch, call_failure, denial, parse_response, request_body, Attributes, Verdict,
};
use crate::error::{ApiError, ApiResult};
use crate::request::{storage_key, ApiRequest};
use crate::AppState;

/// The registry step an update runs again on what mutating webhooks changed.
pub type Prepare<'f> = dyn Fn(Value, &Value) -> ApiResult<Value> + Sync + 'f;

/// One write's admission by webhooks: the webhooks whose rules cover it, and the warnings they
/// gave.
pub struct Review<'a> {
    state: &'a AppState,
    attributes: Attributes,
    mutating: Vec<Webhook>,
    validating: Vec<Webhook>,
    warnings: Mutex<Vec<String>>,
}

/// The attributes of an API request (the name may be replaced, as for a create's body name).
pub fn attributes(request: &ApiRequest, operation: Operation) -> Attributes {
    let target = &request.target;
    let info = target.info;
    let version = info.api_version.rsplit('/').next().unwrap_or("");
    Attributes {
        operation,
        resource: Resource {
            group: info.group().to_string(),
            version: version.to_string(),
            resource: info.plural.to_string(),
            subresource: target.subresource.clone().unwrap_or_default(),
            kind: info.kind.to_string(),
            namespaced: info.namespaced,
        },
        namespace: target.namespace.clone().filter(|_| info.namespaced),
        name: target.name().to_string(),
        user: request.user.clone(),
        dry_run: request.params.dry_run(),
    }
}

/// The webhooks of every configuration of `plural`, configurations sorted by name.
fn configured(state: &AppState, plural: &str) -> Vec<Webhook> {
    let Ok((mut records, _)) = state.storage.list(&format!("/registry/{plural}/")) else {
        return Vec::new();
    };
    records.sort_by(|a, b| a.key.cmp(&b.key));
    let hooks = records.iter().flat_map(|record| {
        record.value["webhooks"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    });
    hooks
        .filter_map(|hook| serde_json::from_value(hook).ok())
        .collect()
}

impl<'a> Review<'a> {
    /// The review of a write; `None` when no webhook's rules cover it (the usual case, at the
    /// cost of two listings).
    pub fn prepare(state: &'a AppState, attributes: Attributes) -> Option<Self> {
        if is_exempt(&attributes.resource) {
            return None;
        }
        let covers =
            |webhook: &Webhook| rules_match(webhook, attributes.operation, &attributes.resource);
        let mutating: Vec<Webhook> = configured(state, "mutatingwebhookconfigurations")
            .into_iter()
            .filter(covers)
            .collect();
        let validating: Vec<Webhook> = configured(state, "validatingwebhookconfigurations")
            .into_iter()
            .filter(covers)
            .collect();
        if mutating.is_empty() && validating.is_empty() {
            return None;
        }
        Some(Review {
            state,
            attributes,
            mutating,
            validating,
            warnings: Mutex::new(Vec::new()),
        })
    }

    /// The same review for one object of a collection (a cluster-wide list names no namespace).
    pub fn named(&self, name: &str, namespace: Option<&str>) -> Self {
        let mut attributes = self.attributes.clone();
        attributes.name = name.to_string();
        if attributes.resource.namespaced {
            attributes.namespace = namespace.map(str::to_string);
        }
        Review {
            state: self.state,
            attributes,
            mutating: self.mutating.clone(),
            validating: self.validating.clone(),
            warnings: Mutex::new(Vec::new()),
        }
    }

    /// The warnings webhooks gave, for the response's `Warning` headers.
    pub fn warnings(&self) -> Vec<String> {
        self.warnings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The mutating webhooks, in order: the object as they patched it. A webhook with
    /// `reinvocationPolicy: IfNeeded` that was called is called once more when a later one
    /// changed the object (upstream's reinvocation: a single second pass, in order).
    pub async fn mutate(&self, mut object: Value, old: Option<&Value>) -> ApiResult<Value> {
        let mut called_if_needed = Vec::new();
        let mut again = std::collections::BTreeSet::new();
        for (i, webhook) in self.mutating.iter().enumerate() {
            let (next, called, changed) = self.mutate_once(webhook, object, old).await?;
            object = next;
            if changed {
                again.extend(called_if_needed.drain(..));
            }
            if called && webhook.reinvocation_policy.as_deref() == Some("IfNeeded") {
                called_if_needed.push(i);
            }
        }
        for i in again {
            let webhook = &self.mutating[i];
            info!(webhook = %webhook.name, "reinvoking the webhook (reinvocationPolicy IfNeeded)");
            object = self.mutate_once(webhook, object, old).await?.0;
        }
        Ok(object)
    }

    /// One mutating webhook: the object, whether it was called, whether its patch changed it.
    async fn mutate_once(
        &self,
        webhook: &Webhook,
        object: Value,
        old: Option<&Value>,
    ) -> ApiResult<(Value, bool, bool)> {
        if !self.selected(webhook, Some(&object), old)? {
            return Ok((object, false, false));
        }
        let Some(verdict) = self.call(webhook, Some(&object), old, true).await? else {
            return Ok((object, true, false));
        };
        if let Some(given) = &verdict.denied {
            return Err(denial(&webhook.name, given).into());
        }
        // A DELETE has no object to patch (upstream's patch of a nil object).
        let Some(patch) = verdict
            .patch
            .filter(|_| self.attributes.operation != Operation::Delete)
        else {
            return Ok((object, true, false));
        };
        let patched = apply_patch(&object, &patch).map_err(|e| {
            ApiError::from(status::internal(format!("Internal error occurred: {e}")))
        })?;
        info!(webhook = %webhook.name, "applied the webhook's patch");
        let changed = patched != object;
        Ok((patched, true, changed))
    }

    /// The validating webhooks, called in parallel: the first denial or failure refuses.
    pub async fn validate(&self, object: Option<&Value>, old: Option<&Value>) -> ApiResult<()> {
        let mut calls = Vec::new();
        for webhook in &self.validating {
            if self.selected(webhook, object, old)? {
                calls.push(async move { (webhook, self.call(webhook, object, old, false).await) });
            }
        }
        for (webhook, answer) in join_all(calls).await {
            if let Some(given) = answer?.and_then(|verdict| verdict.denied) {
                return Err(denial(&webhook.name, &given).into());
            }
        }
        Ok(())
    }

    /// An update's admission inside the store's retry loop: mutate, run the registry step again
    /// on what the webhooks changed (it validates them), validate.
    pub async fn admit_update(
        &self,
        object: Value,
        old: &Value,
        prepare: &Prepare<'_>,
    ) -> ApiResult<Value> {
        let mutated = self.mutate(object.clone(), Some(old)).await?;
        let object = if mutated == object {
            object
        } else {
            prepare(mutated, old)?
        };
        self.validate(Some(&object), Some(old)).await?;
        Ok(object)
    }

    /// A delete's admission: the stored object is the `oldObject`, there is no new one.
    pub async fn admit_delete(&self, old: &Value) -> ApiResult<()> {
        self.mutate(Value::Null, Some(old)).await?;
        self.validate(None, Some(old)).await
    }

    /// `namespaceSelector` and `objectSelector` (either the new or the old object's labels).
    /// A selector that does not parse is a 500, as upstream's matcher errors.
    fn selected(
        &self,
        webhook: &Webhook,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> ApiResult<bool> {
        let own: Vec<_> = object.into_iter().chain(old).map(labels_of).collect();
        let own: Vec<_> = own.iter().collect();
        let internal = |e: String| status::internal(format!("Internal error occurred: {e}"));
        let namespace_matches = match &self.attributes.namespace {
            // A Namespace is matched by its own labels.
            _ if self.attributes.resource.kind == "Namespace" => {
                selector_matches(webhook.namespace_selector.as_ref(), &own)
            }
            Some(namespace) => {
                let labels = self.namespace_labels(namespace)?;
                selector_matches(webhook.namespace_selector.as_ref(), &[&labels])
            }
            // Cluster-scoped kinds are not subject to the namespace selector.
            None => Ok(true),
        };
        let object_matches = selector_matches(webhook.object_selector.as_ref(), &own);
        Ok(namespace_matches.map_err(internal)?
            && object_matches.map_err(internal)?
            && self.conditions_hold(webhook, object, old)?)
    }

    /// `matchConditions`: false skips the webhook; an error refuses the request with a 403
    /// under `failurePolicy: Fail` (upstream's `NewForbidden`) and skips it under `Ignore`.
    fn conditions_hold(
        &self,
        webhook: &Webhook,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> ApiResult<bool> {
        if webhook.match_conditions.is_empty() {
            return Ok(true);
        }
        let review = request_body(&self.attributes, "", object, old);
        match match_conditions::evaluate(&webhook.match_conditions, &review["request"]) {
            Outcome::Call => Ok(true),
            Outcome::Skip => Ok(false),
            Outcome::Error(error) if webhook.ignores_failures() => {
                warn!(webhook = %webhook.name, %error, "match conditions failed, webhook skipped (failurePolicy Ignore)");
                Ok(false)
            }
            Outcome::Error(error) => {
                let r = &self.attributes.resource;
                let resource = if r.group.is_empty() {
                    r.resource.clone()
                } else {
                    format!("{}.{}", r.resource, r.group)
                };
                let message = format!(
                    "{resource} {:?} is forbidden: {error}",
                    self.attributes.name
                );
                Err(status::failure(403, "Forbidden", message).into())
            }
        }
    }

    /// The labels of the request's namespace.
    fn namespace_labels(
        &self,
        namespace: &str,
    ) -> ApiResult<std::collections::BTreeMap<String, String>> {
        let info = lookup("namespaces")
            .ok_or_else(|| ApiError::from(status::internal("no namespaces")))?;
        let record = self
            .state
            .storage
            .get(&storage_key(info, None, namespace))
            .map_err(|e| ApiError::from_storage(e, "namespaces", namespace))?;
        Ok(record.map(|r| labels_of(&r.value)).unwrap_or_default())
    }

    /// One call; `None` when it failed under `failurePolicy: Ignore`.
    async fn call(
        &self,
        webhook: &Webhook,
        object: Option<&Value>,
        old: Option<&Value>,
        mutating: bool,
    ) -> ApiResult<Option<Verdict>> {
        let started = std::time::Instant::now();
        let uid = uuid::Uuid::new_v4().to_string();
        let answer = if webhook.admission_review_versions.iter().any(|v| v == "v1") {
            let review = request_body(&self.attributes, &uid, object, old);
            match webhook_client::post(self.state, webhook, &review).await {
                Ok(body) => parse_response(&body, &uid, mutating),
                Err(error) => Err(error),
            }
        } else {
            Err("webhook does not accept v1 AdmissionReview".to_string())
        };
        let elapsed_ms = started.elapsed().as_millis() as u64;
        let a = &self.attributes;
        match answer {
            Ok(verdict) => {
                info!(webhook = %webhook.name, operation = a.operation.as_str(), resource = %a.resource.resource, name = %a.name, allowed = verdict.denied.is_none(), elapsed_ms, "called admission webhook");
                self.warnings
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .extend(verdict.warnings.iter().cloned());
                Ok(Some(verdict))
            }
            Err(error) if webhook.ignores_failures() => {
                warn!(webhook = %webhook.name, %error, elapsed_ms, "admission webhook failed, ignored (failurePolicy Ignore)");
                Ok(None)
            }
            Err(error) => {
                warn!(webhook = %webhook.name, %error, elapsed_ms, "admission webhook failed, request refused");
                Err(call_failure(&webhook.name, &error).into())
            }
        }
    }
}
