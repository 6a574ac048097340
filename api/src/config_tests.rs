//! Unit tests of `config`: keys, Secret types, `stringData` and `immutable`.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;

use super::*;

fn fields(causes: &[StatusCause]) -> Vec<&str> {
    causes.iter().filter_map(|c| c.field.as_deref()).collect()
}

fn config_map(data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        data: Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        ..Default::default()
    }
}

#[test]
fn config_keys_follow_is_config_map_key() {
    for key in ["game.properties", "KEY_NAME", "key-name", ".hidden", "a..b"] {
        assert_eq!(config_key_error(key), None, "{key}");
    }
    for key in [
        "",
        ".",
        "..",
        "..data",
        "a/b",
        "with space",
        &"k".repeat(254),
    ] {
        assert!(config_key_error(key).is_some(), "{key}");
    }
}

#[test]
fn a_key_in_data_and_binary_data_is_a_duplicate() {
    let mut both = config_map(&[("a", "1"), ("bad/key", "2")]);
    both.binary_data = Some(BTreeMap::from([("a".into(), ByteString(vec![1]))]));
    assert_eq!(
        fields(&validate_config_map(&both)),
        ["data[bad/key]", "binaryData"]
    );
}

#[test]
fn an_immutable_config_map_keeps_its_data_and_its_flag() {
    let mut old = config_map(&[("a", "1")]);
    old.immutable = Some(true);
    let mut changed = config_map(&[("a", "2")]);
    changed.immutable = Some(true);
    assert_eq!(
        fields(&validate_config_map_update(&changed, &old)),
        ["data"]
    );
    let unfrozen = config_map(&[("a", "1")]);
    assert_eq!(
        fields(&validate_config_map_update(&unfrozen, &old)),
        ["immutable"]
    );
    // A mutable one may change and may become immutable.
    let mut frozen = config_map(&[("a", "3")]);
    frozen.immutable = Some(true);
    assert!(validate_config_map_update(&frozen, &config_map(&[("a", "1")])).is_empty());
}

#[test]
fn string_data_is_merged_into_data_and_type_defaults_to_opaque() {
    let mut secret = Secret {
        data: Some(BTreeMap::from([
            ("user".into(), ByteString(b"old".to_vec())),
            ("keep".into(), ByteString(b"k".to_vec())),
        ])),
        string_data: Some(BTreeMap::from([("user".into(), "admin".into())])),
        ..Default::default()
    };
    normalize_secret(&mut secret);
    assert_eq!(secret.type_.as_deref(), Some("Opaque"));
    assert_eq!(secret.string_data, None);
    let data = secret.data.unwrap();
    assert_eq!(data["user"].0, b"admin");
    assert_eq!(data["keep"].0, b"k");
}

#[test]
fn each_secret_type_requires_its_keys() {
    let typed = |type_: &str, keys: &[&str]| Secret {
        type_: Some(type_.into()),
        data: Some(
            keys.iter()
                .map(|k| (k.to_string(), ByteString(b"{}".to_vec())))
                .collect(),
        ),
        ..Default::default()
    };
    assert_eq!(
        fields(&validate_secret(&typed("kubernetes.io/tls", &["tls.crt"]))),
        ["data[tls.key]"]
    );
    assert!(validate_secret(&typed("kubernetes.io/tls", &["tls.crt", "tls.key"])).is_empty());
    assert_eq!(
        fields(&validate_secret(&typed("kubernetes.io/basic-auth", &[]))),
        ["data[username]", "data[password]"]
    );
    assert!(validate_secret(&typed("kubernetes.io/basic-auth", &["password"])).is_empty());
    assert_eq!(
        fields(&validate_secret(&typed("kubernetes.io/ssh-auth", &[]))),
        ["data[ssh-privatekey]"]
    );
    assert_eq!(
        fields(&validate_secret(&typed(
            "kubernetes.io/dockerconfigjson",
            &[]
        ))),
        ["data[.dockerconfigjson]"]
    );
    assert_eq!(
        fields(&validate_secret(&typed(
            "kubernetes.io/service-account-token",
            &[]
        ))),
        ["metadata.annotations[kubernetes.io/service-account.name]"]
    );
    assert!(validate_secret(&typed("example.com/custom", &[])).is_empty());
}

#[test]
fn a_secret_keeps_its_type_and_immutable_payload() {
    let mut old = Secret {
        type_: Some("Opaque".into()),
        immutable: Some(true),
        ..Default::default()
    };
    let mut new = old.clone();
    new.type_ = Some("kubernetes.io/ssh-auth".into());
    new.data = Some(BTreeMap::from([(
        "ssh-privatekey".into(),
        ByteString(b"k".to_vec()),
    )]));
    assert_eq!(
        fields(&validate_secret_update(&new, &old)),
        ["type", "data"]
    );
    old.immutable = None;
    new.type_ = old.type_.clone();
    assert!(validate_secret_update(&new, &old).is_empty());
}
