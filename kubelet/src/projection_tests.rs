//! Unit tests of `projection::payload`: keys, items, modes, optional sources, downward and projected volumes.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapProjection, ConfigMapVolumeSource, DownwardAPIProjection,
    DownwardAPIVolumeSource, ObjectFieldSelector, ProjectedVolumeSource, Secret,
    SecretVolumeSource, VolumeProjection,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::ByteString;

use super::*;
use crate::sources::StaticLookup;
use crate::testing::pod;

fn lookup() -> StaticLookup {
    let meta = |name: &str| ObjectMeta {
        name: Some(name.into()),
        namespace: Some("default".into()),
        ..Default::default()
    };
    StaticLookup {
        config_maps: BTreeMap::from([(
            "default/settings".into(),
            ConfigMap {
                metadata: meta("settings"),
                data: Some(BTreeMap::from([
                    ("mode".into(), "fast".into()),
                    ("level".into(), "debug".into()),
                ])),
                binary_data: Some(BTreeMap::from([("blob".into(), ByteString(vec![0, 1]))])),
                ..Default::default()
            },
        )]),
        secrets: BTreeMap::from([(
            "default/db".into(),
            Secret {
                metadata: meta("db"),
                data: Some(BTreeMap::from([(
                    "password".into(),
                    ByteString(b"pw".to_vec()),
                )])),
                ..Default::default()
            },
        )]),
        services: Vec::new(),
    }
}

fn config_map_volume(name: &str, items: Option<Vec<KeyToPath>>, optional: Option<bool>) -> Volume {
    Volume {
        name: "config".into(),
        config_map: Some(ConfigMapVolumeSource {
            name: name.into(),
            items,
            optional,
            default_mode: Some(0o600),
        }),
        ..Default::default()
    }
}

fn files(volume: &Volume) -> Result<Vec<(String, String, u32)>, String> {
    let payload = payload(
        &pod(&["web"], "Always"),
        volume,
        &PodFacts::default(),
        &lookup(),
    )?;
    Ok(payload
        .into_iter()
        .map(|(path, f)| (path, String::from_utf8_lossy(&f.data).into_owned(), f.mode))
        .collect())
}

#[test]
fn every_key_is_a_file_with_the_default_mode_and_items_pick_and_rename() {
    let all = files(&config_map_volume("settings", None, None)).unwrap();
    let paths: Vec<_> = all.iter().map(|(p, _, m)| (p.as_str(), *m)).collect();
    assert_eq!(paths, [("blob", 0o600), ("level", 0o600), ("mode", 0o600)]);
    let item = KeyToPath {
        key: "mode".into(),
        path: "conf/mode.txt".into(),
        mode: Some(0o400),
    };
    let picked = files(&config_map_volume("settings", Some(vec![item]), None)).unwrap();
    assert_eq!(
        picked,
        [("conf/mode.txt".to_string(), "fast".to_string(), 0o400)]
    );
}

#[test]
fn missing_objects_and_keys_fail_unless_optional() {
    assert_eq!(
        files(&config_map_volume("absent", None, None)).unwrap_err(),
        "configmap \"absent\" not found"
    );
    assert!(files(&config_map_volume("absent", None, Some(true)))
        .unwrap()
        .is_empty());
    let item = KeyToPath {
        key: "nope".into(),
        path: "nope".into(),
        mode: None,
    };
    assert_eq!(
        files(&config_map_volume("settings", Some(vec![item]), None)).unwrap_err(),
        "configmap references non-existent config key: nope"
    );
    let secret = Volume {
        name: "s".into(),
        secret: Some(SecretVolumeSource {
            secret_name: Some("db".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(
        files(&secret).unwrap(),
        [("password".to_string(), "pw".to_string(), 0o644)]
    );
}

#[test]
fn downward_api_and_projected_volumes_combine_sources() {
    let field = |path: &str, field: &str| DownwardAPIVolumeFile {
        path: path.into(),
        field_ref: Some(ObjectFieldSelector {
            field_path: field.into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let downward = Volume {
        name: "podinfo".into(),
        downward_api: Some(DownwardAPIVolumeSource {
            items: Some(vec![
                field("name", "metadata.name"),
                field("ns", "metadata.namespace"),
            ]),
            ..Default::default()
        }),
        ..Default::default()
    };
    let names: Vec<_> = files(&downward)
        .unwrap()
        .into_iter()
        .map(|(p, v, _)| (p, v))
        .collect();
    assert_eq!(
        names,
        [
            ("name".to_string(), "web".to_string()),
            ("ns".to_string(), "default".to_string())
        ]
    );
    let projected = Volume {
        name: "all".into(),
        projected: Some(ProjectedVolumeSource {
            sources: Some(vec![
                VolumeProjection {
                    config_map: Some(ConfigMapProjection {
                        name: "settings".into(),
                        items: Some(vec![KeyToPath {
                            key: "mode".into(),
                            path: "mode".into(),
                            mode: None,
                        }]),
                        optional: None,
                    }),
                    ..Default::default()
                },
                VolumeProjection {
                    downward_api: Some(DownwardAPIProjection {
                        items: Some(vec![field("uid", "metadata.uid")]),
                    }),
                    ..Default::default()
                },
            ]),
            default_mode: Some(0o444),
        }),
        ..Default::default()
    };
    assert_eq!(
        files(&projected).unwrap(),
        [
            ("mode".to_string(), "fast".to_string(), 0o444),
            ("uid".to_string(), "uid-1".to_string(), 0o444)
        ]
    );
}
