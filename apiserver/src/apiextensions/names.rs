//! Validation of a CustomResourceDefinition's spec: its name, group, names, scope and versions.
//!
//! Kubernetes counterpart: `ValidateCustomResourceDefinition` and its helpers in
//! `staging/src/k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation/validation.go`.
//! The rules, with upstream's paths: `metadata.name` is `<plural>.<group>`; the group is a domain
//! with a dot (and one under `k8s.io` or `kubernetes.io` needs the `api-approved.kubernetes.io`
//! annotation); plural, singular and short names are DNS labels, the kind a CamelCase word unlike
//! its `listKind`; the scope `Cluster` or `Namespaced`; versions have unique DNS-label names,
//! exactly one is `storage: true`, at least one `served: true`, each has a structural schema,
//! its scale paths point under `.spec`/`.status` and its printer columns have a name, a known type
//! and a JSONPath.
//!
//! minik simplifies: the printer columns' JSONPath is only checked to start with `.`.

use minik_api::k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionVersion,
};
use serde_json::Value;

use super::conversion_config;
use super::field::FieldError;
use super::schema::structural;

/// Every problem of `crd` (defaults already applied).
pub fn validate(crd: &CustomResourceDefinition) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let spec = &crd.spec;
    let name = crd.metadata.name.as_deref().unwrap_or("");
    if name != format!("{}.{}", spec.names.plural, spec.group) {
        errors.push(FieldError::invalid(
            "metadata.name",
            Value::from(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    validate_group(crd, &mut errors);
    validate_names(crd, &mut errors);
    match spec.scope.as_str() {
        "" => errors.push(FieldError::required("spec.scope", "")),
        "Cluster" | "Namespaced" => {}
        other => errors.push(FieldError::not_supported(
            "spec.scope",
            Value::from(other),
            &["Cluster".to_string(), "Namespaced".to_string()],
        )),
    }
    validate_versions(crd, &mut errors);
    errors.extend(conversion_config::validate(spec.conversion.as_ref()));
    errors
}

fn validate_group(crd: &CustomResourceDefinition, errors: &mut Vec<FieldError>) {
    let group = crd.spec.group.as_str();
    if group.is_empty() {
        errors.push(FieldError::required("spec.group", ""));
        return;
    }
    if !is_dns_subdomain(group) || !group.contains('.') {
        errors.push(FieldError::invalid(
            "spec.group",
            Value::from(group),
            "should be a domain with at least one dot",
        ));
    }
    let protected = ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|domain| group == *domain || group.ends_with(&format!(".{domain}")));
    let approved = crd
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key("api-approved.kubernetes.io"));
    if protected && !approved {
        errors.push(FieldError::required(
            "metadata.annotations[api-approved.kubernetes.io]",
            "protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111",
        ));
    }
}

fn validate_names(crd: &CustomResourceDefinition, errors: &mut Vec<FieldError>) {
    let names = &crd.spec.names;
    label("spec.names.plural", &names.plural, true, errors);
    label(
        "spec.names.singular",
        names.singular.as_deref().unwrap_or(""),
        true,
        errors,
    );
    for (i, short) in names.short_names.iter().flatten().enumerate() {
        label(&format!("spec.names.shortNames[{i}]"), short, false, errors);
    }
    for (i, category) in names.categories.iter().flatten().enumerate() {
        label(
            &format!("spec.names.categories[{i}]"),
            category,
            false,
            errors,
        );
    }
    kind_name("spec.names.kind", &names.kind, errors);
    let list_kind = names.list_kind.as_deref().unwrap_or("");
    kind_name("spec.names.listKind", list_kind, errors);
    if !names.kind.is_empty() && list_kind == names.kind {
        errors.push(FieldError::invalid(
            "spec.names.listKind",
            Value::from(list_kind),
            "kind and listKind cannot be the same",
        ));
    }
}

/// A lower-case RFC 1123 label (`IsDNS1035Label` for names upstream checks that way).
fn label(path: &str, value: &str, required: bool, errors: &mut Vec<FieldError>) {
    if value.is_empty() {
        if required {
            errors.push(FieldError::required(path, ""));
        }
        return;
    }
    if !is_dns_label(value) {
        errors.push(FieldError::invalid(
            path,
            Value::from(value),
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ));
    }
}

fn kind_name(path: &str, value: &str, errors: &mut Vec<FieldError>) {
    if value.is_empty() {
        errors.push(FieldError::required(path, ""));
    } else if !is_dns_label(&value.to_lowercase()) {
        errors.push(FieldError::invalid(
            path,
            Value::from(value),
            "may have mixed case, but should otherwise match: [a-z0-9]([-a-z0-9]*[a-z0-9])?",
        ));
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters.
pub fn is_dns_label(value: &str) -> bool {
    !value.is_empty()
        && value.len() <= 63
        && value
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !value.starts_with('-')
        && !value.ends_with('-')
}

fn is_dns_subdomain(value: &str) -> bool {
    value.len() <= 253 && value.split('.').all(is_dns_label)
}

fn validate_versions(crd: &CustomResourceDefinition, errors: &mut Vec<FieldError>) {
    let versions = &crd.spec.versions;
    if versions.is_empty() {
        errors.push(FieldError::required(
            "spec.versions",
            "must have exactly one version marked as storage version",
        ));
        return;
    }
    let all = serde_json::to_value(versions).unwrap_or(Value::Null);
    let mut seen = std::collections::BTreeSet::new();
    for (i, version) in versions.iter().enumerate() {
        let path = format!("spec.versions[{i}]");
        if !is_dns_label(&version.name)
            || !version.name.starts_with(|c: char| c.is_ascii_lowercase())
        {
            errors.push(FieldError::invalid(
                &format!("{path}.name"),
                Value::from(version.name.clone()),
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            ));
        }
        if !seen.insert(version.name.as_str()) {
            errors.push(FieldError::invalid(
                "spec.versions",
                all.clone(),
                "must contain unique version names",
            ));
        }
        validate_version(version, &path, errors);
    }
    if versions.iter().filter(|v| v.storage).count() != 1 {
        errors.push(FieldError::invalid(
            "spec.versions",
            all.clone(),
            "must have exactly one version marked as storage version",
        ));
    }
    if !versions.iter().any(|v| v.served) {
        errors.push(FieldError::invalid(
            "spec.versions",
            all,
            "must have at least one version marked as served",
        ));
    }
}

fn validate_version(
    version: &CustomResourceDefinitionVersion,
    path: &str,
    errors: &mut Vec<FieldError>,
) {
    let schema_path = format!("{path}.schema.openAPIV3Schema");
    match version
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
    {
        None => errors.push(FieldError::required(&schema_path, "schemas are required")),
        Some(schema) => errors.extend(structural::check(schema, &schema_path)),
    }
    if let Some(scale) = version.subresources.as_ref().and_then(|s| s.scale.as_ref()) {
        let scale_path = format!("{path}.subresources.scale");
        json_path_under(
            &format!("{scale_path}.specReplicasPath"),
            &scale.spec_replicas_path,
            &[".spec."],
            errors,
        );
        json_path_under(
            &format!("{scale_path}.statusReplicasPath"),
            &scale.status_replicas_path,
            &[".status."],
            errors,
        );
        if let Some(selector) = &scale.label_selector_path {
            json_path_under(
                &format!("{scale_path}.labelSelectorPath"),
                selector,
                &[".spec.", ".status."],
                errors,
            );
        }
    }
    let types = ["integer", "number", "string", "boolean", "date"].map(String::from);
    for (i, column) in version
        .additional_printer_columns
        .iter()
        .flatten()
        .enumerate()
    {
        let column_path = format!("{path}.additionalPrinterColumns[{i}]");
        if column.name.is_empty() {
            errors.push(FieldError::required(&format!("{column_path}.name"), ""));
        }
        if !types.contains(&column.type_) {
            errors.push(FieldError::not_supported(
                &format!("{column_path}.type"),
                Value::from(column.type_.clone()),
                &types,
            ));
        }
        if column.json_path.is_empty() {
            errors.push(FieldError::required(&format!("{column_path}.jsonPath"), ""));
        } else if !column.json_path.starts_with('.') {
            errors.push(FieldError::invalid(
                &format!("{column_path}.jsonPath"),
                Value::from(column.json_path.clone()),
                "must be a simple json path starting with .",
            ));
        }
    }
}

fn json_path_under(path: &str, value: &str, prefixes: &[&str], errors: &mut Vec<FieldError>) {
    if value.is_empty() {
        errors.push(FieldError::required(path, ""));
    } else if !prefixes.iter().any(|p| value.starts_with(p)) {
        let under = prefixes
            .iter()
            .map(|p| p.trim_end_matches('.'))
            .collect::<Vec<_>>()
            .join(" or ");
        errors.push(FieldError::invalid(
            path,
            Value::from(value),
            format!("should be a json path under {under}"),
        ));
    }
}
