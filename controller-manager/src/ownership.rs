//! Who owns what: label selectors, controller references, and the claim that adopts and releases.
//!
//! Kubernetes counterpart: `metav1.LabelSelectorAsSelector`, `metav1.GetControllerOf`, and the
//! `ControllerRefManager` of `pkg/controller/controller_ref_manager.go` (`ClaimObject`):
//!
//! - an object whose controller reference is ours (same uid) stays ours while the selector matches
//!   it, and is **released** (reference patched away) when its labels stop matching;
//! - an object with no controller reference, not being deleted, whose labels match is **adopted**
//!   (reference patched on), unless the owner itself is being deleted;
//! - an object controlled by someone else is never touched.
//!
//! minik simplifies: patches carry no uid precondition, and there is no fresh GET of the owner before adopting (upstream's `canAdopt` re-reads it
//! to see a deletionTimestamp the informer may not show yet).

use std::collections::BTreeMap;

use minik_api::meta::{LabelSelector, LabelSelectorRequirement, ObjectMeta, OwnerReference};

/// Whether `selector` (matchLabels AND matchExpressions) selects `labels`. An empty selector selects
/// everything, as `LabelSelectorAsSelector` makes it; a missing one selects nothing.
pub fn selects(
    selector: Option<&LabelSelector>,
    labels: Option<&BTreeMap<String, String>>,
) -> bool {
    let Some(selector) = selector else {
        return false;
    };
    let empty = BTreeMap::new();
    let labels = labels.unwrap_or(&empty);
    let match_labels = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(key, value)| labels.get(key) == Some(value));
    let match_expressions = selector
        .match_expressions
        .iter()
        .flatten()
        .all(|requirement| expression_holds(requirement, labels));
    match_labels && match_expressions
}

fn expression_holds(
    requirement: &LabelSelectorRequirement,
    labels: &BTreeMap<String, String>,
) -> bool {
    let value = labels.get(&requirement.key);
    let values = requirement.values.as_deref().unwrap_or_default();
    match requirement.operator.as_str() {
        "In" => value.is_some_and(|v| values.contains(v)),
        "NotIn" => value.is_none_or(|v| !values.contains(v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        _ => false,
    }
}

/// Whether a selector is `{}` (selects every object; a Deployment with it does nothing, DP7).
pub fn selects_everything(selector: Option<&LabelSelector>) -> bool {
    selector.is_some_and(|s| {
        s.match_labels.as_ref().is_none_or(|m| m.is_empty())
            && s.match_expressions.as_ref().is_none_or(|e| e.is_empty())
    })
}

/// The controller reference of an object (`metav1.GetControllerOf`).
pub fn controller_of(meta: &ObjectMeta) -> Option<&OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|reference| reference.controller == Some(true))
}

/// A controller reference to `owner` (`metav1.NewControllerRef`): `controller` and
/// `blockOwnerDeletion` both true.
pub fn controller_ref(api_version: &str, kind: &str, owner: &ObjectMeta) -> OwnerReference {
    OwnerReference {
        api_version: api_version.to_string(),
        kind: kind.to_string(),
        name: owner.name.clone().unwrap_or_default(),
        uid: owner.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// Whether `meta` is controlled by the object with `uid`.
pub fn is_controlled_by(meta: &ObjectMeta, uid: Option<&str>) -> bool {
    controller_of(meta).is_some_and(|reference| Some(reference.uid.as_str()) == uid)
}

/// What [`claim`] decided for one object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// Ours, and still selected.
    Owned,
    /// An orphan to adopt; ours once the patch succeeded.
    Adopt,
    /// Ours, no longer selected: patch the reference away.
    Release,
    /// Not ours (another controller's, or an orphan we may not take).
    Ignore,
}

/// The claim of one object by an owner (`ClaimObject`).
pub fn claim(owner: &ObjectMeta, selector: Option<&LabelSelector>, object: &ObjectMeta) -> Claim {
    let matches = selects(selector, object.labels.as_ref());
    match controller_of(object) {
        Some(reference) if Some(reference.uid.as_str()) != owner.uid.as_deref() => Claim::Ignore,
        Some(_) if matches => Claim::Owned,
        Some(_) => Claim::Release,
        None if owner.deletion_timestamp.is_some() || object.deletion_timestamp.is_some() => {
            Claim::Ignore
        }
        None if matches => Claim::Adopt,
        None => Claim::Ignore,
    }
}

/// The merge patch that adopts an object: the controller reference added to its ownerReferences.
pub fn adopt_patch(object: &ObjectMeta, reference: OwnerReference) -> serde_json::Value {
    let mut references = object.owner_references.clone().unwrap_or_default();
    references.push(reference);
    serde_json::json!({"metadata": {"ownerReferences": references}})
}

/// The merge patch that releases an object: every reference to `owner_uid` removed.
pub fn release_patch(object: &ObjectMeta, owner_uid: &str) -> serde_json::Value {
    let references: Vec<&OwnerReference> = object
        .owner_references
        .iter()
        .flatten()
        .filter(|reference| reference.uid != owner_uid)
        .collect();
    serde_json::json!({"metadata": {"ownerReferences": references}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(uid: &str, labels: &[(&str, &str)], owner: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            uid: Some(uid.into()),
            name: Some(uid.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            owner_references: owner.map(|uid| {
                vec![OwnerReference {
                    uid: uid.into(),
                    controller: Some(true),
                    ..OwnerReference::default()
                }]
            }),
            ..ObjectMeta::default()
        }
    }

    fn app_web() -> LabelSelector {
        LabelSelector {
            match_labels: Some([("app".to_string(), "web".to_string())].into()),
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tier".into(),
                operator: "NotIn".into(),
                values: Some(vec!["db".into()]),
            }]),
        }
    }

    #[test]
    fn selectors_combine_labels_and_expressions() {
        let labels = |pairs: &[(&str, &str)]| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        };
        assert!(selects(Some(&app_web()), Some(&labels(&[("app", "web")]))));
        assert!(!selects(
            Some(&app_web()),
            Some(&labels(&[("app", "web"), ("tier", "db")]))
        ));
        assert!(!selects(None, Some(&labels(&[("app", "web")]))));
        assert!(selects(Some(&LabelSelector::default()), None));
        assert!(selects_everything(Some(&LabelSelector::default())));
    }

    #[test]
    fn claim_adopts_orphans_releases_strays_and_ignores_others() {
        let owner = meta("rs", &[], None);
        let selector = app_web();
        assert_eq!(
            claim(
                &owner,
                Some(&selector),
                &meta("a", &[("app", "web")], Some("rs"))
            ),
            Claim::Owned
        );
        assert_eq!(
            claim(&owner, Some(&selector), &meta("b", &[("app", "web")], None)),
            Claim::Adopt
        );
        assert_eq!(
            claim(
                &owner,
                Some(&selector),
                &meta("c", &[("app", "db")], Some("rs"))
            ),
            Claim::Release
        );
        assert_eq!(
            claim(
                &owner,
                Some(&selector),
                &meta("d", &[("app", "web")], Some("other"))
            ),
            Claim::Ignore
        );
        let mut deleting = owner.clone();
        deleting.deletion_timestamp = Some(minik_api::now());
        assert_eq!(
            claim(
                &deleting,
                Some(&selector),
                &meta("b", &[("app", "web")], None)
            ),
            Claim::Ignore
        );
    }

    #[test]
    fn release_keeps_other_references() {
        let mut object = meta("p", &[], Some("rs"));
        object
            .owner_references
            .as_mut()
            .unwrap()
            .push(OwnerReference {
                uid: "other".into(),
                ..OwnerReference::default()
            });
        let patch = release_patch(&object, "rs");
        assert_eq!(
            patch["metadata"]["ownerReferences"]
                .as_array()
                .unwrap()
                .len(),
            1
        );
        assert_eq!(patch["metadata"]["ownerReferences"][0]["uid"], "other");
    }
}
