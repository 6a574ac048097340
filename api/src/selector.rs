//! Label and field selectors: parsed from their query-string form and matched against objects.
//!
//! Kubernetes counterpart: `k8s.io/apimachinery/pkg/labels/selector.go` (label selectors, the
//! `app=web,tier!=db,env in (a,b)` syntax) and `k8s.io/apimachinery/pkg/fields/selector.go` (field
//! selectors, `spec.nodeName=node-1,status.phase!=Failed`). Both are an AND of requirements: a comma
//! means "and". The apiserver applies them to list and watch; controllers use label selectors to
//! find the pods of a Service.
//!
//! minik simplifies: the set-based `>`/`<` numeric operators are supported but rarely used; field
//! selectors know nothing about which fields a kind supports (the apiserver checks that), and a field
//! the object lacks reads as the empty string, as in upstream's field sets.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// A selector that could not be parsed; the apiserver answers 400 BadRequest with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unable to parse requirement: {0}")]
pub struct SelectorError(pub String);

/// How one label requirement compares a label with its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    /// `key=value` or `key==value`.
    Equals,
    /// `key!=value` (also true when the label is absent).
    NotEquals,
    /// `key in (a,b)`.
    In,
    /// `key notin (a,b)` (also true when the label is absent).
    NotIn,
    /// `key`: the label is present, with any value.
    Exists,
    /// `!key`: the label is absent.
    DoesNotExist,
    /// `key>N`: the label is an integer greater than N.
    GreaterThan,
    /// `key<N`: the label is an integer less than N.
    LessThan,
}

/// One requirement of a label selector, such as `tier in (web,api)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    /// The label key (`app`, `app.kubernetes.io/name`).
    pub key: String,
    /// The comparison.
    pub operator: Operator,
    /// The values compared with (empty for `Exists` / `DoesNotExist`).
    pub values: Vec<String>,
}

impl Requirement {
    /// Whether a label set satisfies this requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::Equals | Operator::In => value.is_some_and(|v| self.values.contains(v)),
            Operator::NotEquals | Operator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(v), Some(bound)) = (value, self.values.first()) else {
                    return false;
                };
                match (v.parse::<i64>(), bound.parse::<i64>()) {
                    (Ok(v), Ok(bound)) if self.operator == Operator::GreaterThan => v > bound,
                    (Ok(v), Ok(bound)) => v < bound,
                    _ => false,
                }
            }
        }
    }
}

/// A label selector: every requirement must hold. The empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// The selector that matches every object.
    pub fn everything() -> Self {
        LabelSelector::default()
    }

    /// A selector requiring each `key=value` of the map, as a Service's `spec.selector` does.
    pub fn from_map(map: &BTreeMap<String, String>) -> Self {
        let requirements = map
            .iter()
            .map(|(key, value)| Requirement {
                key: key.clone(),
                operator: Operator::Equals,
                values: vec![value.clone()],
            })
            .collect();
        LabelSelector { requirements }
    }

    /// A selector of these requirements, in this order.
    pub fn from_requirements(requirements: Vec<Requirement>) -> Self {
        LabelSelector { requirements }
    }

    /// Parses the query-string form (`app=web,tier in (a,b),!canary`).
    pub fn parse(text: &str) -> Result<Self, SelectorError> {
        let mut requirements = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            requirements.push(parse_requirement(part)?);
        }
        Ok(LabelSelector { requirements })
    }

    /// True when the selector has no requirement (matches everything).
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The requirements, in the order written.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether a label set satisfies every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements
            .iter()
            .all(|requirement| requirement.matches(labels))
    }
}

impl FromStr for LabelSelector {
    type Err = SelectorError;
    fn from_str(text: &str) -> Result<Self, SelectorError> {
        LabelSelector::parse(text)
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .requirements
            .iter()
            .map(|r| match r.operator {
                Operator::Equals => format!("{}={}", r.key, r.values.join("")),
                Operator::NotEquals => format!("{}!={}", r.key, r.values.join("")),
                Operator::In => format!("{} in ({})", r.key, r.values.join(",")),
                Operator::NotIn => format!("{} notin ({})", r.key, r.values.join(",")),
                Operator::Exists => r.key.clone(),
                Operator::DoesNotExist => format!("!{}", r.key),
                Operator::GreaterThan => format!("{}>{}", r.key, r.values.join("")),
                Operator::LessThan => format!("{}<{}", r.key, r.values.join("")),
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// Splits on commas that are not inside `( … )`, so `a in (x,y),b` gives two requirements.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (index, ch) in text.char_indices() {
        match ch {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn parse_requirement(part: &str) -> Result<Requirement, SelectorError> {
    let error = || SelectorError(part.to_string());
    if let Some(key) = part.strip_prefix('!') {
        let key = key.trim();
        check_key(key).map_err(|_| error())?;
        return Ok(Requirement {
            key: key.to_string(),
            operator: Operator::DoesNotExist,
            values: vec![],
        });
    }
    let key_end = part
        .find(|c: char| c.is_whitespace() || "=!<>(".contains(c))
        .unwrap_or(part.len());
    let key = &part[..key_end];
    check_key(key).map_err(|_| error())?;
    let rest = part[key_end..].trim_start();
    let single = |operator, value: &str| -> Result<Requirement, SelectorError> {
        let value = value.trim();
        check_value(value).map_err(|_| error())?;
        Ok(Requirement {
            key: key.to_string(),
            operator,
            values: vec![value.to_string()],
        })
    };
    if rest.is_empty() {
        return Ok(Requirement {
            key: key.to_string(),
            operator: Operator::Exists,
            values: vec![],
        });
    }
    if let Some(value) = rest.strip_prefix("!=") {
        return single(Operator::NotEquals, value);
    }
    if let Some(value) = rest.strip_prefix("==").or_else(|| rest.strip_prefix('=')) {
        return single(Operator::Equals, value);
    }
    if let Some(value) = rest.strip_prefix('>') {
        value.trim().parse::<i64>().map_err(|_| error())?;
        return single(Operator::GreaterThan, value);
    }
    if let Some(value) = rest.strip_prefix('<') {
        value.trim().parse::<i64>().map_err(|_| error())?;
        return single(Operator::LessThan, value);
    }
    let (operator, set) = if let Some(set) = rest.strip_prefix("notin") {
        (Operator::NotIn, set)
    } else if let Some(set) = rest.strip_prefix("in") {
        (Operator::In, set)
    } else {
        return Err(error());
    };
    let set = set.trim();
    let inner = set
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(error)?;
    let values: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).collect();
    for value in &values {
        check_value(value).map_err(|_| error())?;
    }
    Ok(Requirement {
        key: key.to_string(),
        operator,
        values,
    })
}

/// A label key: an optional DNS subdomain prefix and `/`, then a name of ≤ 63 characters.
fn check_key(key: &str) -> Result<(), ()> {
    let name = match key.rsplit_once('/') {
        Some((prefix, name)) if !prefix.is_empty() && prefix.len() <= 253 => name,
        Some(_) => return Err(()),
        None => key,
    };
    if name.is_empty() {
        return Err(());
    }
    check_value(name)
}

/// A label value: empty, or ≤ 63 alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric.
fn check_value(value: &str) -> Result<(), ()> {
    if value.is_empty() {
        return Ok(());
    }
    let ok_chars = value
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    let ends_ok = value.starts_with(|c: char| c.is_ascii_alphanumeric())
        && value.ends_with(|c: char| c.is_ascii_alphanumeric());
    if value.len() <= 63 && ok_chars && ends_ok {
        Ok(())
    } else {
        Err(())
    }
}

/// One requirement of a field selector: `spec.nodeName=node-1` or `status.phase!=Failed`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The field path (`metadata.name`).
    pub field: String,
    /// The value compared with (may be empty: `spec.nodeName=` selects unscheduled pods).
    pub value: String,
    /// `true` for `=`/`==`, `false` for `!=`.
    pub equal: bool,
}

/// A field selector: every requirement must hold. The empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parses `field=value,field!=value` (a backslash escapes `,`, `=`, `!` and itself in values).
    pub fn parse(text: &str) -> Result<Self, SelectorError> {
        let mut requirements = Vec::new();
        for part in split_unescaped_commas(text) {
            if part.trim().is_empty() {
                continue;
            }
            let (field, equal, value) = if let Some((field, value)) = part.split_once("!=") {
                (field, false, value)
            } else if let Some((field, value)) = part.split_once("==") {
                (field, true, value)
            } else if let Some((field, value)) = part.split_once('=') {
                (field, true, value)
            } else {
                return Err(SelectorError(format!(
                    "invalid selector: '{text}'; can't understand '{part}'"
                )));
            };
            let field = field.trim();
            if field.is_empty() {
                return Err(SelectorError(format!("invalid selector: '{text}'")));
            }
            requirements.push(FieldRequirement {
                field: field.to_string(),
                value: unescape(value.trim()),
                equal,
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// True when the selector has no requirement.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The requirements, in the order written.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// The value this selector requires `field` to equal, if it has such a requirement (lets the
    /// apiserver narrow a watch on `metadata.name=web` to a single key).
    pub fn required_value(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.equal && r.field == field)
            .map(|r| r.value.as_str())
    }

    /// Whether an object satisfies every requirement; `get` reads a field of the object (a field it
    /// lacks reads as the empty string).
    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements
            .iter()
            .all(|r| (get(&r.field).unwrap_or_default() == r.value) == r.equal)
    }
}

impl FromStr for FieldSelector {
    type Err = SelectorError;
    fn from_str(text: &str) -> Result<Self, SelectorError> {
        FieldSelector::parse(text)
    }
}

fn split_unescaped_commas(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut chars = text.chars();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' => {
                current.push('\\');
                if let Some(next) = chars.next() {
                    current.push(next);
                }
            }
            ',' => parts.push(std::mem::take(&mut current)),
            _ => current.push(ch),
        }
    }
    parts.push(current);
    parts
}

fn unescape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(ch) = chars.next() {
        if ch == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(ch);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn equality_operators_match_as_kubectl_expects() {
        let web = labels(&[("app", "web"), ("tier", "front")]);
        assert!(LabelSelector::parse("app=web").unwrap().matches(&web));
        assert!(LabelSelector::parse("app==web,tier=front")
            .unwrap()
            .matches(&web));
        assert!(!LabelSelector::parse("app=db").unwrap().matches(&web));
        assert!(LabelSelector::parse("app!=db").unwrap().matches(&web));
        assert!(
            LabelSelector::parse("missing!=x").unwrap().matches(&web),
            "!= holds when the label is absent"
        );
    }

    #[test]
    fn set_operators_and_existence_match() {
        let web = labels(&[("app", "web"), ("env", "prod")]);
        assert!(LabelSelector::parse("env in (prod, staging)")
            .unwrap()
            .matches(&web));
        assert!(!LabelSelector::parse("env notin (prod)")
            .unwrap()
            .matches(&web));
        assert!(LabelSelector::parse("canary notin (true)")
            .unwrap()
            .matches(&web));
        assert!(LabelSelector::parse("app").unwrap().matches(&web));
        assert!(!LabelSelector::parse("!app").unwrap().matches(&web));
        assert!(LabelSelector::parse("!canary,app in (web),env")
            .unwrap()
            .matches(&web));
        assert_eq!(
            LabelSelector::parse("a in (x,y),!b,c")
                .unwrap()
                .requirements()
                .len(),
            3
        );
    }

    #[test]
    fn empty_selector_matches_everything() {
        assert!(LabelSelector::parse("").unwrap().matches(&labels(&[])));
        assert!(LabelSelector::parse(" , ").unwrap().is_empty());
    }

    #[test]
    fn malformed_label_selectors_are_rejected() {
        for bad in [
            "app=we b",
            "=web",
            "app in web",
            "app in (a",
            "bad key=x",
            "app=-x",
            "x>y",
        ] {
            assert!(
                LabelSelector::parse(bad).is_err(),
                "{bad:?} should not parse"
            );
        }
    }

    #[test]
    fn prefixed_keys_and_numeric_comparisons_parse() {
        let set = labels(&[("app.kubernetes.io/name", "web"), ("replicas", "3")]);
        assert!(LabelSelector::parse("app.kubernetes.io/name=web")
            .unwrap()
            .matches(&set));
        assert!(LabelSelector::parse("replicas>2").unwrap().matches(&set));
        assert!(!LabelSelector::parse("replicas<3").unwrap().matches(&set));
    }

    #[test]
    fn from_map_selects_like_a_service_selector() {
        let selector = LabelSelector::from_map(&labels(&[("app", "web")]));
        assert!(selector.matches(&labels(&[("app", "web"), ("x", "y")])));
        assert!(!selector.matches(&labels(&[("app", "db")])));
        assert_eq!(selector.to_string(), "app=web");
    }

    #[test]
    fn field_selector_compares_fields_and_treats_missing_as_empty() {
        let pod = |field: &str| match field {
            "metadata.name" => Some("web".to_string()),
            "status.phase" => Some("Running".to_string()),
            _ => None,
        };
        assert!(FieldSelector::parse("metadata.name=web")
            .unwrap()
            .matches(pod));
        assert!(
            FieldSelector::parse("metadata.name==web,status.phase!=Failed")
                .unwrap()
                .matches(pod)
        );
        assert!(!FieldSelector::parse("status.phase=Pending")
            .unwrap()
            .matches(pod));
        assert!(
            FieldSelector::parse("spec.nodeName=").unwrap().matches(pod),
            "unscheduled pods have an empty nodeName"
        );
        assert!(!FieldSelector::parse("spec.nodeName!=")
            .unwrap()
            .matches(pod));
        assert!(FieldSelector::parse("foo").is_err());
    }

    #[test]
    fn field_selector_values_may_escape_commas() {
        let selector =
            FieldSelector::parse(r"involvedObject.name=a\,b,involvedObject.kind=Pod").unwrap();
        assert_eq!(selector.requirements().len(), 2);
        assert_eq!(selector.required_value("involvedObject.name"), Some("a,b"));
    }
}
