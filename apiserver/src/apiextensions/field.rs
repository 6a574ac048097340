//! Field errors: one problem at one path, worded as upstream's `field.Error`.
//!
//! Kubernetes counterpart: `staging/src/k8s.io/apimachinery/pkg/util/validation/field/errors.go`.
//! An error prints as `<path>: <type>[: <bad value>][: <detail>]` — `spec.replicas: Invalid value:
//! 11: spec.replicas in body should be less than or equal to 10`, `spec.cronSpec: Required value`
//! — and travels in a 422 `Status` as a cause `{reason: FieldValueInvalid, field, message}`.
//! [`invalid_status`] builds that Status for a custom resource, naming its group and kind in
//! `details` as upstream's `errors.NewInvalid(GroupKind, name, errs)` does.
//!
//! minik simplifies: a bad value that is an object or a list prints as JSON (upstream prints Go
//! syntax).

use minik_api::meta::{Status, StatusCause, StatusDetails};
use minik_api::status;
use serde_json::Value;

/// The kinds of field error upstream has (the ones CRDs and custom resources use).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorType {
    /// `FieldValueRequired`: "Required value".
    Required,
    /// `FieldValueInvalid`: "Invalid value".
    Invalid,
    /// `FieldValueTypeInvalid`: also printed "Invalid value".
    TypeInvalid,
    /// `FieldValueNotSupported`: "Unsupported value".
    NotSupported,
    /// `FieldValueTooLong`: "Too long".
    TooLong,
    /// `FieldValueTooMany`: "Too many".
    TooMany,
    /// `FieldValueForbidden`: "Forbidden".
    Forbidden,
    /// `FieldValueDuplicate`: "Duplicate value".
    Duplicate,
}

impl ErrorType {
    /// The cause's `reason`.
    pub fn reason(self) -> &'static str {
        match self {
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::Duplicate => "FieldValueDuplicate",
        }
    }

    fn words(self) -> &'static str {
        match self {
            ErrorType::Required => "Required value",
            ErrorType::Invalid | ErrorType::TypeInvalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::Duplicate => "Duplicate value",
        }
    }

    /// Upstream prints the bad value for every type but these.
    fn shows_value(self) -> bool {
        !matches!(
            self,
            ErrorType::Required | ErrorType::Forbidden | ErrorType::TooLong
        )
    }
}

/// One problem at one path.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// What went wrong.
    pub error_type: ErrorType,
    /// `spec.items[0].name`.
    pub field: String,
    /// The offending value.
    pub bad_value: Value,
    /// Why.
    pub detail: String,
}

impl FieldError {
    fn new(error_type: ErrorType, field: &str, bad_value: Value, detail: String) -> Self {
        FieldError {
            error_type,
            field: field.to_string(),
            bad_value,
            detail,
        }
    }

    /// A required field is missing.
    pub fn required(field: &str, detail: &str) -> Self {
        Self::new(ErrorType::Required, field, Value::Null, detail.to_string())
    }

    /// A value breaks a rule.
    pub fn invalid(field: &str, bad_value: Value, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Invalid, field, bad_value, detail.into())
    }

    /// A value of the wrong type or format.
    pub fn type_invalid(field: &str, bad_value: Value, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::TypeInvalid, field, bad_value, detail.into())
    }

    /// A value outside an enum.
    pub fn not_supported(field: &str, bad_value: Value, supported: &[String]) -> Self {
        let quoted: Vec<String> = supported.iter().map(|v| format!("{v:?}")).collect();
        let detail = format!("supported values: {}", quoted.join(", "));
        Self::new(ErrorType::NotSupported, field, bad_value, detail)
    }

    /// A string over `maxLength` (upstream's `TooLong`).
    pub fn too_long(field: &str, bad_value: Value, max: i64) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        let detail = format!("may not be more than {max} {unit}");
        Self::new(ErrorType::TooLong, field, bad_value, detail)
    }

    /// A list or map over its most items.
    pub fn too_many(field: &str, actual: i64, max: i64) -> Self {
        let unit = if max == 1 { "item" } else { "items" };
        let detail = format!("must have at most {max} {unit}");
        Self::new(ErrorType::TooMany, field, Value::from(actual), detail)
    }

    /// Something not allowed at all.
    pub fn forbidden(field: &str, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Forbidden, field, Value::Null, detail.into())
    }

    /// A value given twice.
    pub fn duplicate(field: &str, bad_value: Value) -> Self {
        Self::new(ErrorType::Duplicate, field, bad_value, String::new())
    }

    /// What follows the path: `Invalid value: 11: spec.replicas in body should be …`.
    pub fn body(&self) -> String {
        let mut text = self.error_type.words().to_string();
        if self.error_type.shows_value() {
            text.push_str(": ");
            text.push_str(&go_value(&self.bad_value));
        }
        if !self.detail.is_empty() {
            text.push_str(": ");
            text.push_str(&self.detail);
        }
        text
    }

    /// The Status cause this error travels as.
    pub fn cause(&self) -> StatusCause {
        status::cause(self.field.clone(), self.error_type.reason(), self.body())
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// A value as upstream prints a bad value: strings quoted, numbers and booleans bare.
fn go_value(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::String(s) => format!("{s:?}"),
        Value::Number(n) => match n.as_f64() {
            Some(f) if !(n.is_i64() || n.is_u64()) => super::schema::validate::go_number(f),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

/// The 422 for an object of `group`/`kind` named `name`: `Kind.group "name" is invalid: …`, with
/// the group and kind in `details` as upstream's `NewInvalid(GroupKind, …)` has them.
pub fn invalid_status(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> Status {
    let qualified = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    let causes = errors.iter().map(FieldError::cause).collect();
    let mut status = status::invalid(&qualified, name, causes);
    if let Some(details) = status.details.as_mut() {
        *details = StatusDetails {
            group: (!group.is_empty()).then(|| group.to_string()),
            kind: Some(kind.to_string()),
            ..details.clone()
        };
    }
    status
}
