//! ServiceAccounts: the identity a pod runs as, its user name, and the token volume a pod gets.
//!
//! Kubernetes counterpart: `k8s.io/apiserver/pkg/authentication/serviceaccount/util.go` (the user
//! name `system:serviceaccount:NS:NAME` and its groups) and the ServiceAccount admission plugin,
//! `plugin/pkg/admission/serviceaccount/admission.go`: a pod without `serviceAccountName` runs as
//! `default`, and unless `automountServiceAccountToken` says no, every container mounts a projected
//! `kube-api-access-XXXXX` volume at `/var/run/secrets/kubernetes.io/serviceaccount` holding
//! `token` (a TokenRequest-issued JWT bound to the pod), `ca.crt` (from the `kube-root-ca.crt`
//! ConfigMap) and `namespace` (downward API) — docs/security.md#s7 and docs/security.md#s12.
//!
//! Pure functions: the apiserver calls [`admit_pod`] with the ServiceAccount it read (if any).
//! minik simplifies: a missing ServiceAccount does not refuse the pod (upstream answers 403 once
//! its retry lookup fails), so a pod created right after its namespace still runs.

use crate::core::{
    ConfigMapProjection, Container, DownwardAPIProjection, DownwardAPIVolumeFile,
    ObjectFieldSelector, Pod, PodSpec, ProjectedVolumeSource, ServiceAccount,
    ServiceAccountTokenProjection, Volume, VolumeMount, VolumeProjection,
};

/// The ServiceAccount every namespace has and every pod defaults to.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
/// Where a pod's containers find their credentials (`DefaultAPITokenMountPath`).
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The prefix of the admission's token volume (`ServiceAccountVolumeName`).
pub const TOKEN_VOLUME_PREFIX: &str = "kube-api-access-";
/// The lifetime the kubelet asks for that volume's token: an hour plus seven seconds, upstream's
/// marker for "a token the kubelet refreshes".
pub const TOKEN_VOLUME_EXPIRATION_SECONDS: i64 = 3607;
/// The ConfigMap holding the cluster CA in every namespace (upstream's root-ca-cert-publisher).
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
/// The prefix of every ServiceAccount's user name.
pub const USER_PREFIX: &str = "system:serviceaccount:";
/// The group of every ServiceAccount.
pub const ALL_SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";

/// `system:serviceaccount:NS:NAME`.
pub fn user_name(namespace: &str, name: &str) -> String {
    format!("{USER_PREFIX}{namespace}:{name}")
}

/// The groups a ServiceAccount's user is in (before `system:authenticated`).
pub fn groups(namespace: &str) -> Vec<String> {
    vec![
        ALL_SERVICE_ACCOUNTS_GROUP.to_string(),
        format!("{ALL_SERVICE_ACCOUNTS_GROUP}:{namespace}"),
    ]
}

/// The namespace and name a ServiceAccount user name stands for.
pub fn split_user_name(user: &str) -> Option<(&str, &str)> {
    let (namespace, name) = user.strip_prefix(USER_PREFIX)?.split_once(':')?;
    (!namespace.is_empty() && !name.is_empty() && !name.contains(':')).then_some((namespace, name))
}

/// Whether the pod gets the token volume: the pod's own `automountServiceAccountToken`, else its
/// ServiceAccount's, else yes (docs/security.md#s12).
pub fn automount(spec: &PodSpec, account: Option<&ServiceAccount>) -> bool {
    spec.automount_service_account_token
        .or_else(|| account.and_then(|a| a.automount_service_account_token))
        .unwrap_or(true)
}

/// The admission: defaults `serviceAccountName` (and the deprecated `serviceAccount` alias), then
/// mounts the token volume named `kube-api-access-{suffix}` in every container that has nothing at
/// [`TOKEN_MOUNT_PATH`] yet, unless [`automount`] says no or the server `issues_tokens` not.
pub fn admit_pod(
    pod: &mut Pod,
    account: Option<&ServiceAccount>,
    suffix: &str,
    issues_tokens: bool,
) {
    let spec = pod.spec.get_or_insert_with(Default::default);
    let name = spec
        .service_account_name
        .clone()
        .or_else(|| spec.service_account.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| DEFAULT_SERVICE_ACCOUNT.to_string());
    spec.service_account_name = Some(name.clone());
    spec.service_account = Some(name);
    // minik's plain-http mode has no token signer (upstream always has one): nothing to mount.
    if !issues_tokens || !automount(spec, account) {
        return;
    }
    let existing = spec
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name.starts_with(TOKEN_VOLUME_PREFIX))
        .map(|v| v.name.clone());
    let volume_name = existing
        .clone()
        .unwrap_or_else(|| format!("{TOKEN_VOLUME_PREFIX}{suffix}"));
    let mut mounted = false;
    let containers = spec
        .init_containers
        .iter_mut()
        .flatten()
        .chain(spec.containers.iter_mut());
    for container in containers {
        mounted |= mount_token(container, &volume_name);
    }
    if mounted && existing.is_none() {
        spec.volumes
            .get_or_insert_with(Vec::new)
            .push(token_volume(volume_name));
    }
}

fn mount_token(container: &mut Container, volume: &str) -> bool {
    let mounts = container.volume_mounts.get_or_insert_with(Vec::new);
    if mounts.iter().any(|m| m.mount_path == TOKEN_MOUNT_PATH) {
        return false;
    }
    mounts.push(VolumeMount {
        name: volume.to_string(),
        mount_path: TOKEN_MOUNT_PATH.to_string(),
        read_only: Some(true),
        ..VolumeMount::default()
    });
    true
}

/// The projected volume upstream's admission adds (`TokenVolumeSource`): `token`, `ca.crt`,
/// `namespace`, mode 0644.
pub fn token_volume(name: String) -> Volume {
    let token = VolumeProjection {
        service_account_token: Some(ServiceAccountTokenProjection {
            path: "token".into(),
            expiration_seconds: Some(TOKEN_VOLUME_EXPIRATION_SECONDS),
            audience: None,
        }),
        ..VolumeProjection::default()
    };
    let ca = VolumeProjection {
        config_map: Some(ConfigMapProjection {
            name: ROOT_CA_CONFIG_MAP.into(),
            items: Some(vec![crate::core::KeyToPath {
                key: "ca.crt".into(),
                path: "ca.crt".into(),
                mode: None,
            }]),
            optional: None,
        }),
        ..VolumeProjection::default()
    };
    let namespace = VolumeProjection {
        downward_api: Some(DownwardAPIProjection {
            items: Some(vec![DownwardAPIVolumeFile {
                path: "namespace".into(),
                field_ref: Some(ObjectFieldSelector {
                    api_version: Some("v1".into()),
                    field_path: "metadata.namespace".into(),
                }),
                ..DownwardAPIVolumeFile::default()
            }]),
        }),
        ..VolumeProjection::default()
    };
    Volume {
        name,
        projected: Some(ProjectedVolumeSource {
            default_mode: Some(0o644),
            sources: Some(vec![token, ca, namespace]),
        }),
        ..Volume::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::Container;

    fn pod(containers: &[&str]) -> Pod {
        Pod {
            spec: Some(PodSpec {
                containers: containers
                    .iter()
                    .map(|name| Container {
                        name: name.to_string(),
                        ..Container::default()
                    })
                    .collect(),
                ..PodSpec::default()
            }),
            ..Pod::default()
        }
    }

    fn account(automount: Option<bool>) -> ServiceAccount {
        ServiceAccount {
            automount_service_account_token: automount,
            ..ServiceAccount::default()
        }
    }

    /// A server without a token signer (plain http) still defaults the account, mounts nothing.
    #[test]
    fn without_a_signer_the_pod_gets_its_account_but_no_token_volume() {
        let mut web = pod(&["app"]);
        admit_pod(&mut web, None, "abcde", false);
        let spec = web.spec.unwrap();
        assert_eq!(spec.service_account_name.as_deref(), Some("default"));
        assert!(spec.volumes.is_none());
        assert!(spec.containers[0].volume_mounts.is_none());
    }

    #[test]
    fn a_pod_runs_as_default_and_mounts_the_token_volume_everywhere() {
        let mut web = pod(&["app", "sidecar"]);
        admit_pod(&mut web, None, "abcde", true);
        let spec = web.spec.unwrap();
        assert_eq!(spec.service_account_name.as_deref(), Some("default"));
        assert_eq!(spec.service_account.as_deref(), Some("default"));
        let volumes = spec.volumes.unwrap();
        assert_eq!(volumes.len(), 1);
        assert_eq!(volumes[0].name, "kube-api-access-abcde");
        let sources = volumes[0].projected.as_ref().unwrap().sources.clone();
        assert_eq!(sources.unwrap().len(), 3);
        for container in &spec.containers {
            let mount = &container.volume_mounts.as_ref().unwrap()[0];
            assert_eq!(mount.mount_path, TOKEN_MOUNT_PATH);
            assert_eq!(mount.read_only, Some(true));
        }
    }

    /// The pod's own setting wins over its ServiceAccount's, which wins over the default (yes).
    #[test]
    fn automount_is_the_pods_then_the_accounts_choice() {
        let mut spec = PodSpec::default();
        assert!(automount(&spec, None));
        assert!(!automount(&spec, Some(&account(Some(false)))));
        spec.automount_service_account_token = Some(true);
        assert!(automount(&spec, Some(&account(Some(false)))));
        spec.automount_service_account_token = Some(false);
        assert!(!automount(&spec, Some(&account(Some(true)))));
        let mut quiet = pod(&["app"]);
        quiet.spec.as_mut().unwrap().service_account_name = Some("robot".into());
        admit_pod(&mut quiet, Some(&account(Some(false))), "abcde", true);
        let spec = quiet.spec.unwrap();
        assert_eq!(spec.service_account_name.as_deref(), Some("robot"));
        assert!(spec.volumes.is_none());
    }

    /// A container with its own mount at the path keeps it; nobody needing it means no volume.
    #[test]
    fn an_existing_mount_at_the_path_is_kept() {
        let mut own = pod(&["app"]);
        own.spec.as_mut().unwrap().containers[0].volume_mounts = Some(vec![VolumeMount {
            name: "mine".into(),
            mount_path: TOKEN_MOUNT_PATH.into(),
            ..VolumeMount::default()
        }]);
        admit_pod(&mut own, None, "abcde", true);
        let spec = own.spec.unwrap();
        assert!(spec.volumes.is_none());
        assert_eq!(spec.containers[0].volume_mounts.as_ref().unwrap().len(), 1);
    }

    #[test]
    fn user_names_round_trip() {
        assert_eq!(
            user_name("team", "robot"),
            "system:serviceaccount:team:robot"
        );
        assert_eq!(
            split_user_name("system:serviceaccount:team:robot"),
            Some(("team", "robot"))
        );
        assert_eq!(split_user_name("system:serviceaccount:team"), None);
        assert_eq!(split_user_name("system:node:n1"), None);
        assert_eq!(
            groups("team"),
            ["system:serviceaccounts", "system:serviceaccounts:team"]
        );
    }
}
