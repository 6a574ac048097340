//! Unit tests of `env::make_environment`: valueFrom, envFrom with prefixes and invalid keys, missing references.

use std::collections::BTreeMap;
use std::path::PathBuf;

use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapEnvSource, ConfigMapKeySelector, EnvFromSource, EnvVar, EnvVarSource,
    ObjectFieldSelector, Secret, SecretEnvSource, SecretKeySelector,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::ByteString;

use super::*;
use crate::sources::StaticLookup;
use crate::testing::{container, pod};

fn ctx() -> PodContext {
    PodContext {
        pod_ip: "127.244.1.7".into(),
        node_name: "node-1".into(),
        host_ip: "127.0.0.1".into(),
        log_dir: PathBuf::from("/tmp/logs"),
        ..Default::default()
    }
}

fn lookup() -> StaticLookup {
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some("settings".into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([
            ("mode".into(), "fast".into()),
            ("log.level".into(), "debug".into()),
            ("1bad".into(), "x".into()),
        ])),
        ..Default::default()
    };
    let secret = Secret {
        metadata: ObjectMeta {
            name: Some("db".into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "password".into(),
            ByteString(b"s3cr3t".to_vec()),
        )])),
        ..Default::default()
    };
    StaticLookup {
        config_maps: BTreeMap::from([("default/settings".into(), config_map)]),
        secrets: BTreeMap::from([("default/db".into(), secret)]),
        services: Vec::new(),
    }
}

fn key_ref(name: &str, key: &str, optional: Option<bool>) -> EnvVar {
    EnvVar {
        name: format!("FROM_{}", key.to_uppercase().replace('.', "_")),
        value_from: Some(EnvVarSource {
            config_map_key_ref: Some(ConfigMapKeySelector {
                name: name.into(),
                key: key.into(),
                optional,
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn secret_ref(name: &str, key: &str) -> EnvVar {
    EnvVar {
        name: "PASSWORD".into(),
        value_from: Some(EnvVarSource {
            secret_key_ref: Some(SecretKeySelector {
                name: name.into(),
                key: key.into(),
                optional: None,
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn environment(vars: Vec<EnvVar>, from: Vec<EnvFromSource>) -> Result<Environment, String> {
    let pod = pod(&["app"], "Always");
    let mut app = container("app");
    app.env = Some(vars);
    app.env_from = Some(from);
    make_environment(&pod, &app, &ctx(), BTreeMap::new(), &lookup())
}

#[test]
fn config_map_and_secret_keys_become_variables() {
    let env = environment(
        vec![
            key_ref("settings", "mode", None),
            secret_ref("db", "password"),
        ],
        vec![],
    )
    .unwrap();
    assert_eq!(env.vars["FROM_MODE"], "fast");
    assert_eq!(env.vars["PASSWORD"], "s3cr3t");
}

#[test]
fn a_missing_object_or_key_is_a_config_error_unless_optional() {
    let error = environment(vec![key_ref("absent", "mode", None)], vec![]).unwrap_err();
    assert_eq!(error, "configmap \"absent\" not found");
    let error = environment(vec![key_ref("settings", "nope", None)], vec![]).unwrap_err();
    assert_eq!(
        error,
        "couldn't find key nope in ConfigMap default/settings"
    );
    let error = environment(vec![secret_ref("absent", "password")], vec![]).unwrap_err();
    assert_eq!(error, "secret \"absent\" not found");
    let error = environment(vec![secret_ref("db", "user")], vec![]).unwrap_err();
    assert_eq!(error, "couldn't find key user in Secret default/db");
    let env = environment(
        vec![
            key_ref("absent", "mode", Some(true)),
            key_ref("settings", "nope", Some(true)),
        ],
        vec![],
    )
    .unwrap();
    assert!(!env.vars.contains_key("FROM_MODE") && !env.vars.contains_key("FROM_NOPE"));
}

#[test]
fn env_from_adds_the_prefix_and_skips_invalid_names_with_a_warning() {
    let from = vec![
        EnvFromSource {
            config_map_ref: Some(ConfigMapEnvSource {
                name: "settings".into(),
                optional: None,
            }),
            prefix: Some("CFG_".into()),
            secret_ref: None,
        },
        EnvFromSource {
            secret_ref: Some(SecretEnvSource {
                name: "db".into(),
                optional: None,
            }),
            ..Default::default()
        },
        EnvFromSource {
            config_map_ref: Some(ConfigMapEnvSource {
                name: "absent".into(),
                optional: Some(true),
            }),
            ..Default::default()
        },
    ];
    let env = environment(vec![], from.clone()).unwrap();
    assert_eq!(env.vars["CFG_mode"], "fast");
    assert_eq!(env.vars["CFG_log.level"], "debug");
    assert_eq!(env.vars["password"], "s3cr3t");
    assert!(
        env.vars.contains_key("CFG_1bad"),
        "the prefix makes it a valid name"
    );
    let bare = EnvFromSource {
        config_map_ref: Some(ConfigMapEnvSource {
            name: "settings".into(),
            optional: None,
        }),
        ..Default::default()
    };
    let env = environment(vec![], vec![bare]).unwrap();
    assert!(!env.vars.contains_key("1bad"));
    assert_eq!(
        env.invalid_keys,
        ["Keys [1bad] from the EnvFrom configMap default/settings were skipped since they are considered invalid environment variable names."]
    );
    let mut required = from[2].clone();
    required.config_map_ref.as_mut().unwrap().optional = None;
    assert_eq!(
        environment(vec![], vec![required]).unwrap_err(),
        "configmap \"absent\" not found"
    );
}

#[test]
fn env_entries_expand_earlier_ones_and_override_env_from() {
    let from = vec![EnvFromSource {
        config_map_ref: Some(ConfigMapEnvSource {
            name: "settings".into(),
            optional: None,
        }),
        ..Default::default()
    }];
    let vars = vec![
        EnvVar {
            name: "mode".into(),
            value: Some("slow, was $(mode)".into()),
            ..Default::default()
        },
        EnvVar {
            name: "NODE".into(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: "spec.nodeName".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        },
    ];
    let env = environment(vars, from).unwrap();
    assert_eq!(env.vars["mode"], "slow, was fast");
    assert_eq!(env.vars["NODE"], "node-1");
}

#[test]
fn variable_names_follow_is_env_var_name() {
    for ok in ["A", "_x", "log.level", "a-b", "CFG_1"] {
        assert!(is_env_var_name(ok), "{ok}");
    }
    for bad in ["", "1A", "a b", "a=b"] {
        assert!(!is_env_var_name(bad), "{bad}");
    }
}
