//! A CRD's `spec.conversion`: which converter its versions use, and the validation of a
//! conversion webhook's settings.
//!
//! Kubernetes counterpart: `validateCustomResourceConversion` and
//! `validateConversionReviewVersions` in
//! `staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go`,
//! and `webhook.ValidateWebhookURL`/`ValidateWebhookService`/`ValidateCABundle` of
//! `k8s.io/apiserver/pkg/util/webhook/validation.go`. The strategy is `None` or `Webhook`; a
//! webhook needs exactly one of `url` and `service`, a parseable `caBundle` when one is given, and
//! `conversionReviewVersions` with `v1` or `v1beta1`, unique DNS labels. Errors carry upstream's
//! paths, which are those of its internal type: `spec.conversion.webhookClientConfig.url`,
//! `spec.conversion.conversionReviewVersions`, not the v1 field names.
//!
//! minik simplifies: a `url` must name a loopback host, as for admission webhooks
//! (docs/architecture.md#network); an invalid `caBundle` is refused even on CRDs stored before
//! (upstream tolerates an invalid one that was already there).

use std::sync::Arc;

use minik_api::k8s_openapi::api::admissionregistration::v1::WebhookClientConfig;
use minik_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceConversion, CustomResourceDefinition,
};
use serde_json::Value;

use super::field::FieldError;
use super::names::is_dns_label;
use crate::admission::webhook_config::url_problem;

/// The ConversionReview versions this server speaks (upstream's `acceptedConversionReviewVersions`).
pub const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// How the objects of a CRD with `strategy: Webhook` change version.
#[derive(Clone, Debug)]
pub struct ConversionWebhook {
    /// The CRD's name, for the logs.
    pub crd: String,
    /// Where the webhook is, in the shape admission webhooks use (the fields are the same).
    pub client_config: WebhookClientConfig,
    /// The first of `conversionReviewVersions` this server speaks.
    pub review_version: Option<String>,
}

/// The webhook a CRD converts with; `None` for the `None` strategy.
pub fn webhook_of(crd: &CustomResourceDefinition) -> Option<Arc<ConversionWebhook>> {
    let conversion = crd.spec.conversion.as_ref()?;
    if conversion.strategy != "Webhook" {
        return None;
    }
    let webhook = conversion.webhook.as_ref()?;
    let config = serde_json::to_value(webhook.client_config.as_ref()?).ok()?;
    let review_version = webhook
        .conversion_review_versions
        .iter()
        .find(|v| REVIEW_VERSIONS.contains(&v.as_str()))
        .cloned();
    Some(Arc::new(ConversionWebhook {
        crd: crd.metadata.name.clone().unwrap_or_default(),
        client_config: serde_json::from_value(config).ok()?,
        review_version,
    }))
}

const PATH: &str = "spec.conversion";

/// Every problem of `spec.conversion` (defaults already applied).
pub fn validate(conversion: Option<&CustomResourceConversion>) -> Vec<FieldError> {
    let Some(conversion) = conversion else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    let client_path = format!("{PATH}.webhookClientConfig");
    let versions_path = format!("{PATH}.conversionReviewVersions");
    let webhook = conversion.webhook.as_ref();
    let client = webhook.and_then(|w| w.client_config.as_ref());
    let versions = webhook
        .map(|w| &w.conversion_review_versions[..])
        .unwrap_or(&[]);
    match conversion.strategy.as_str() {
        "" => errors.push(FieldError::required(&format!("{PATH}.strategy"), "")),
        "Webhook" => {
            match client {
                None => errors.push(FieldError::required(
                    &client_path,
                    "required when strategy is set to Webhook",
                )),
                Some(client) => {
                    let config = serde_json::to_value(client).unwrap_or(Value::Null);
                    errors.extend(validate_client(&config, &client_path));
                }
            }
            errors.extend(validate_review_versions(versions, &versions_path));
        }
        "None" => {
            if client.is_some() {
                errors.push(FieldError::forbidden(
                    &client_path,
                    "should not be set when strategy is not set to Webhook",
                ));
            }
            if !versions.is_empty() {
                errors.push(FieldError::forbidden(
                    &versions_path,
                    "should not be set when strategy is not set to Webhook",
                ));
            }
        }
        other => errors.push(FieldError::not_supported(
            &format!("{PATH}.strategy"),
            Value::from(other),
            &["None".to_string(), "Webhook".to_string()],
        )),
    }
    errors
}

/// `url` xor `service`, each valid, and a `caBundle` that holds certificates.
fn validate_client(config: &Value, path: &str) -> Vec<FieldError> {
    let url = config.get("url").filter(|u| !u.is_null());
    let service = config.get("service").filter(|s| !s.is_null());
    let mut errors = match (url, service) {
        (Some(url), None) => match url_problem(url.as_str().unwrap_or("")) {
            Some(why) => vec![FieldError::invalid(
                &format!("{path}.url"),
                url.clone(),
                why,
            )],
            None => Vec::new(),
        },
        (None, Some(service)) => validate_service(service, &format!("{path}.service")),
        _ => vec![FieldError::required(
            path,
            "exactly one of url or service is required",
        )],
    };
    let bundle = config["caBundle"].as_str().unwrap_or("");
    if !bundle.is_empty() && !holds_certificates(bundle) {
        errors.push(FieldError::invalid(
            &format!("{path}.caBundle"),
            Value::from(bundle),
            "data does not contain any valid RSA or ECDSA certificates",
        ));
    }
    errors
}

/// A base64 `caBundle` whose PEM holds at least one certificate.
fn holds_certificates(bundle: &str) -> bool {
    use base64::Engine;
    let Ok(pem) = base64::engine::general_purpose::STANDARD.decode(bundle) else {
        return false;
    };
    reqwest::Certificate::from_pem_bundle(&pem).is_ok_and(|certs| !certs.is_empty())
}

/// `ValidateWebhookService`: name and namespace required, a port in range, a path from `/`.
fn validate_service(service: &Value, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for field in ["name", "namespace"] {
        if service[field].as_str().unwrap_or("").is_empty() {
            errors.push(FieldError::required(&format!("{path}.{field}"), ""));
        }
    }
    let port = service.get("port").cloned().unwrap_or(Value::from(443));
    if !port.as_i64().is_some_and(|p| (1..=65535).contains(&p)) {
        errors.push(FieldError::invalid(
            &format!("{path}.port"),
            port,
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    if let Some(given) = service["path"].as_str().filter(|p| !p.starts_with('/')) {
        errors.push(FieldError::invalid(
            &format!("{path}.path"),
            Value::from(given),
            "must start with a '/'",
        ));
    }
    errors
}

/// At least one version, unique DNS labels, one of them spoken here.
fn validate_review_versions(versions: &[String], path: &str) -> Vec<FieldError> {
    if versions.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let mut errors = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (i, version) in versions.iter().enumerate() {
        let at = format!("{path}[{i}]");
        if !seen.insert(version.as_str()) {
            errors.push(FieldError::invalid(
                &at,
                Value::from(version.clone()),
                "duplicate version",
            ));
            continue;
        }
        if !is_dns_label(version) || !version.starts_with(|c: char| c.is_ascii_lowercase()) {
            errors.push(FieldError::invalid(
                &at,
                Value::from(version.clone()),
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            ));
        }
    }
    if !versions
        .iter()
        .any(|v| REVIEW_VERSIONS.contains(&v.as_str()))
    {
        errors.push(FieldError::invalid(
            path,
            Value::from(versions.to_vec()),
            "must include at least one of v1, v1beta1",
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn conversion(value: Value) -> CustomResourceConversion {
        serde_json::from_value(value).unwrap()
    }

    fn fields(value: Value) -> Vec<String> {
        validate(Some(&conversion(value)))
            .iter()
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn a_webhook_needs_one_place_and_review_versions_spoken_here() {
        assert_eq!(
            fields(json!({"strategy": "Webhook"})),
            [
                "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
                "spec.conversion.conversionReviewVersions: Required value",
            ]
        );
        let both = json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v2", "v2"],
            "clientConfig": {"url": "https://127.0.0.1/convert", "service": {"name": "a", "namespace": "b"}}}});
        assert_eq!(
            fields(both),
            [
                "spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required",
                "spec.conversion.conversionReviewVersions[1]: Invalid value: \"v2\": duplicate version",
                "spec.conversion.conversionReviewVersions: Invalid value: [\"v2\",\"v2\"]: must include at least one of v1, v1beta1",
            ]
        );
        let bad = json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1beta1"],
            "clientConfig": {"url": "http://127.0.0.1/convert", "caBundle": "bm90IGEgY2VydA=="}}});
        assert_eq!(
            fields(bad),
            [
                "spec.conversion.webhookClientConfig.url: Invalid value: \"http://127.0.0.1/convert\": 'https' is the only allowed URL scheme",
                "spec.conversion.webhookClientConfig.caBundle: Invalid value: \"bm90IGEgY2VydA==\": data does not contain any valid RSA or ECDSA certificates",
            ]
        );
        let service = json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
            "clientConfig": {"service": {"name": "conv", "namespace": "", "port": 0, "path": "x"}}}});
        assert_eq!(
            fields(service),
            [
                "spec.conversion.webhookClientConfig.service.namespace: Required value",
                "spec.conversion.webhookClientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
                "spec.conversion.webhookClientConfig.service.path: Invalid value: \"x\": must start with a '/'",
            ]
        );
    }

    #[test]
    fn none_takes_no_webhook_settings_and_other_strategies_are_unsupported() {
        let none = json!({"strategy": "None", "webhook": {"conversionReviewVersions": ["v1"],
            "clientConfig": {"url": "https://127.0.0.1/"}}});
        assert_eq!(fields(none).len(), 2);
        assert_eq!(
            fields(json!({"strategy": "Magic"})),
            ["spec.conversion.strategy: Unsupported value: \"Magic\": supported values: \"None\", \"Webhook\""]
        );
    }

    #[test]
    fn the_first_review_version_spoken_here_is_used() {
        let crd: CustomResourceDefinition = serde_json::from_value(json!({
            "metadata": {"name": "foos.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "foos", "kind": "Foo"}, "versions": [],
                "conversion": {"strategy": "Webhook", "webhook": {
                    "conversionReviewVersions": ["v9", "v1beta1", "v1"],
                    "clientConfig": {"url": "https://127.0.0.1:9443/convert"}}}}}))
        .unwrap();
        let webhook = webhook_of(&crd).unwrap();
        assert_eq!(webhook.review_version.as_deref(), Some("v1beta1"));
        assert_eq!(
            webhook.client_config.url.as_deref(),
            Some("https://127.0.0.1:9443/convert")
        );
    }
}
