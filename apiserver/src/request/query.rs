//! The query of a request: its parameters, and the list/watch options among them.
//!
//! Kubernetes counterpart: the query decoding of `metav1.ListOptions` and `metav1.DeleteOptions`
//! (`k8s.io/apimachinery/pkg/apis/meta/v1/conversion.go`, `runtime.NewParameterCodec`). Real
//! clients are sloppy in ways the server must accept (docs/real-clients.md#must-haves): kube-rs sends
//! `?&labelSelector=…`, Python sends DeleteOptions as query parameters, `watch` may be
//! `true` or `1`. minik decodes the query into pairs once and reads what each verb needs.

use minik_api::selector::{FieldSelector, LabelSelector};

use crate::error::{ApiError, ApiResult};

/// The query string as name/value pairs (repeated names keep their first value).
#[derive(Clone, Debug, Default)]
pub struct Params {
    pairs: Vec<(String, String)>,
}

impl Params {
    /// Wraps decoded pairs.
    pub fn new(pairs: Vec<(String, String)>) -> Self {
        Params { pairs }
    }

    /// The value of a parameter, if present.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// A boolean parameter: `true`/`1` (Kubernetes accepts both for `watch`).
    pub fn flag(&self, name: &str) -> bool {
        matches!(self.get(name), Some("true" | "1" | "True"))
    }

    /// An integer parameter; a malformed one is a 400.
    pub fn int(&self, name: &str) -> ApiResult<Option<i64>> {
        match self.get(name).filter(|v| !v.is_empty()) {
            None => Ok(None),
            Some(text) => text.parse().map(Some).map_err(|_| {
                ApiError::bad_request(format!(
                    "invalid value for query parameter {name}: {text:?} is not an integer"
                ))
            }),
        }
    }

    /// `resourceVersion`, if given: it must be a revision (a malformed one is a 400, worded as
    /// upstream's `ParseResourceVersion` error wrapped by the etcd3 store).
    pub fn resource_version(&self) -> ApiResult<Option<String>> {
        let Some(text) = self.get("resourceVersion").filter(|v| !v.is_empty()) else {
            return Ok(None);
        };
        if text.parse::<u64>().is_err() {
            return Err(ApiError::bad_request(format!(
                "invalid resource version: resourceVersion: Invalid value: {text:?}: strconv.ParseUint: parsing {text:?}: invalid syntax"
            )));
        }
        Ok(Some(text.to_string()))
    }

    /// `dryRun=All`: validate and answer, but store nothing.
    pub fn dry_run(&self) -> bool {
        self.get("dryRun").is_some_and(|v| v == "All")
    }

    /// `ValidateDryRun` and `ValidateFieldManager` of the Create/Update/Patch/DeleteOptions:
    /// `All` is the only dry run, a field manager has at most 128 bytes (else upstream's 422).
    pub fn check_dry_run(&self) -> ApiResult<()> {
        if let Some(manager) = self.get("fieldManager").filter(|m| m.len() > 128) {
            let message = format!(
                "fieldManager: Too long: may not be more than 128 bytes (got {})",
                manager.len()
            );
            return Err(invalid_options("CreateOptions", message));
        }
        match self.get("dryRun") {
            None | Some("" | "All") => Ok(()),
            Some(other) => Err(invalid_options(
                "CreateOptions",
                format!("dryRun: Unsupported value: {other:?}: supported values: \"All\""),
            )),
        }
    }
}

/// A 422 for query options that parse but break `ValidateListOptions` / `ValidateCreateOptions`.
fn invalid_options(kind: &str, message: String) -> ApiError {
    let message = format!("{kind}.meta.k8s.io \"\" is invalid: {message}");
    ApiError::from(minik_api::status::failure(422, "Invalid", message))
}

/// `ValidateListOptions`: `resourceVersionMatch` needs a `resourceVersion` and is `Exact` or
/// `NotOlderThan`; `sendInitialEvents` is for watches only.
fn check_list_options(params: &Params) -> ApiResult<()> {
    let invalid = |message: &str| Err(invalid_options("ListOptions", message.to_string()));
    match params.get("resourceVersionMatch").filter(|v| !v.is_empty()) {
        None | Some("Exact" | "NotOlderThan") => {}
        Some(other) => {
            return invalid(&format!(
                "resourceVersionMatch: Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\""
            ))
        }
    }
    let has_match = params
        .get("resourceVersionMatch")
        .is_some_and(|v| !v.is_empty());
    if has_match && params.get("resourceVersion").is_none_or(str::is_empty) {
        return invalid("resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided");
    }
    if params.get("sendInitialEvents").is_some() && !params.flag("watch") {
        return invalid("sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list");
    }
    Ok(())
}

/// The list/watch options of `metav1.ListOptions` that minik honours.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// `labelSelector`.
    pub labels: LabelSelector,
    /// `fieldSelector`.
    pub fields: FieldSelector,
    /// `watch=true|1`.
    pub watch: bool,
    /// `resourceVersion` (list: ignored, current state served; watch: the start point).
    pub resource_version: Option<String>,
    /// `limit` (0 or absent: everything).
    pub limit: Option<usize>,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `timeoutSeconds` for watches.
    pub timeout_seconds: Option<u64>,
    /// `allowWatchBookmarks`.
    pub bookmarks: bool,
    /// `sendInitialEvents` (streaming list).
    pub send_initial_events: bool,
}

impl ListOptions {
    /// Reads the options from the query; a bad selector or number is a 400.
    pub fn parse(params: &Params) -> ApiResult<Self> {
        check_list_options(params)?;
        let labels = LabelSelector::parse(params.get("labelSelector").unwrap_or(""))
            .map_err(|e| ApiError::bad_request(format!("unable to parse labelSelector: {e}")))?;
        let fields = FieldSelector::parse(params.get("fieldSelector").unwrap_or(""))
            .map_err(|e| ApiError::bad_request(format!("unable to parse fieldSelector: {e}")))?;
        let non_negative = |name: &str| -> ApiResult<Option<u64>> {
            match params.int(name)? {
                Some(n) if n < 0 => Err(ApiError::bad_request(format!(
                    "{name} must not be negative"
                ))),
                other => Ok(other.map(|n| n as u64)),
            }
        };
        Ok(ListOptions {
            labels,
            fields,
            watch: params.flag("watch"),
            resource_version: params.resource_version()?,
            limit: non_negative("limit")?
                .filter(|n| *n > 0)
                .map(|n| n as usize),
            continue_token: params
                .get("continue")
                .filter(|v| !v.is_empty())
                .map(str::to_string),
            timeout_seconds: non_negative("timeoutSeconds")?,
            bookmarks: params.flag("allowWatchBookmarks"),
            send_initial_events: params.flag("sendInitialEvents"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_options_read_kube_rs_style_queries() {
        let params = Params::new(vec![
            ("labelSelector".into(), "app=web".into()),
            ("watch".into(), "1".into()),
            ("timeoutSeconds".into(), "290".into()),
        ]);
        let options = ListOptions::parse(&params).unwrap();
        assert!(options.watch);
        assert_eq!(options.timeout_seconds, Some(290));
        let bad = Params::new(vec![("limit".into(), "x".into())]);
        assert_eq!(ListOptions::parse(&bad).unwrap_err().code(), 400);
    }

    #[test]
    fn list_and_dry_run_options_are_validated_as_upstream() {
        let params = |pairs: &[(&str, &str)]| {
            Params::new(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        };
        for bad in [
            params(&[("resourceVersionMatch", "Exact")]),
            params(&[("resourceVersion", "1"), ("resourceVersionMatch", "Bogus")]),
            params(&[("sendInitialEvents", "true")]),
        ] {
            assert_eq!(ListOptions::parse(&bad).unwrap_err().code(), 422, "{bad:?}");
        }
        let good = params(&[
            ("resourceVersion", "0"),
            ("resourceVersionMatch", "NotOlderThan"),
        ]);
        assert!(ListOptions::parse(&good).is_ok());
        let watch = params(&[("watch", "1"), ("sendInitialEvents", "true")]);
        assert!(ListOptions::parse(&watch).is_ok());
        assert_eq!(
            params(&[("dryRun", "Bogus")])
                .check_dry_run()
                .unwrap_err()
                .code(),
            422
        );
        assert!(params(&[("dryRun", "All")]).check_dry_run().is_ok());
        let long = "m".repeat(129);
        let manager = params(&[("fieldManager", long.as_str())]);
        assert_eq!(manager.check_dry_run().unwrap_err().code(), 422);
    }
}
