//! Tests of the volume plan (pure) and of setup/teardown on a temp dir.

use super::*;

fn pod(spec: serde_json::Value) -> Pod {
    serde_json::from_value(
        serde_json::json!({ "metadata": { "name": "p", "uid": "u1" }, "spec": spec }),
    )
    .unwrap()
}

fn web_pod(host: &Path) -> Pod {
    pod(serde_json::json!({
        "volumes": [
            { "name": "html", "emptyDir": {} },
            { "name": "host-data", "hostPath": { "path": host, "type": "DirectoryOrCreate" } },
        ],
        "initContainers": [ { "name": "init", "volumeMounts": [ { "name": "html", "mountPath": "/work" } ] } ],
        "containers": [ { "name": "web", "volumeMounts": [
            { "name": "html", "mountPath": "/usr/share/nginx/html", "readOnly": true },
            { "name": "host-data", "mountPath": "/data", "subPath": "logs" },
        ] } ],
    }))
}

#[test]
fn plan_maps_empty_dirs_under_the_pod_and_host_paths_as_given() {
    let root = Path::new("/r");
    let plan = plan(root, "u1", &web_pod(Path::new("/srv/data"))).unwrap();
    assert_eq!(
        plan.volumes[0].path,
        PathBuf::from("/r/pods/u1/volumes/html")
    );
    assert_eq!(plan.volumes[1].path, PathBuf::from("/srv/data"));
    let web = &plan.mounts["web"];
    assert_eq!(web[0].host_path, PathBuf::from("/r/pods/u1/volumes/html"));
    assert!(web[0].read_only);
    assert_eq!(web[1].host_path, PathBuf::from("/srv/data/logs"));
    assert_eq!(plan.mounts["init"][0].mount_path, "/work");
    let env = plan.env_for(root, "u1", "web");
    assert_eq!(env["MINIK_MOUNT_HTML"], "/r/pods/u1/volumes/html");
    assert_eq!(env["MINIK_MOUNT_HOST_DATA"], "/srv/data/logs");
    assert_eq!(
        env["MINIK_CONTAINER_ROOT"],
        "/r/pods/u1/containers/web/root"
    );
}

#[test]
fn plan_rejects_unknown_volumes_and_escaping_paths() {
    let bad_mounts = [
        serde_json::json!({ "name": "nope", "mountPath": "/x" }),
        serde_json::json!({ "name": "v", "mountPath": "/a/../../etc" }),
        serde_json::json!({ "name": "v", "mountPath": "relative" }),
        serde_json::json!({ "name": "v", "mountPath": "/" }),
        serde_json::json!({ "name": "v", "mountPath": "/x", "subPath": "../up" }),
    ];
    for mount in bad_mounts {
        let p = pod(serde_json::json!({
            "volumes": [ { "name": "v", "emptyDir": {} } ],
            "containers": [ { "name": "c", "volumeMounts": [ mount.clone() ] } ],
        }));
        assert!(
            matches!(plan(Path::new("/r"), "u1", &p), Err(Error::Invalid(_))),
            "{mount}"
        );
    }
    let relative_host = pod(
        serde_json::json!({ "volumes": [ { "name": "v", "hostPath": { "path": "data" } } ], "containers": [] }),
    );
    assert!(plan(Path::new("/r"), "u1", &relative_host).is_err());
}

#[test]
fn config_volumes_are_projected_and_unsupported_kinds_empty_dirs_with_a_warning() {
    let p = pod(serde_json::json!({ "volumes": [
        { "name": "cfg", "configMap": { "name": "x" } },
        { "name": "claim", "persistentVolumeClaim": { "claimName": "x" } } ], "containers": [] }));
    let plan = plan(Path::new("/r"), "u1", &p).unwrap();
    assert_eq!(plan.volumes[0].kind, VolumeKind::Projected);
    assert_eq!(
        plan.volumes[1].kind,
        VolumeKind::Unsupported("persistentVolumeClaim".into())
    );
    assert_eq!(plan.warnings.len(), 1);
}

#[test]
fn setup_links_mounts_into_the_container_tree_and_teardown_spares_host_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("kubelet");
    let host = tmp.path().join("host");
    let plan = plan(&root, "u1", &web_pod(&host)).unwrap();
    setup(&root, "u1", &plan).unwrap();
    setup(&root, "u1", &plan).unwrap(); // idempotent

    let tree = container_root(&root, "u1", "web");
    std::fs::write(tree.join("usr/share/nginx/html/index.html"), "hi").unwrap();
    let html = root.join("pods/u1/volumes/html/index.html");
    assert_eq!(std::fs::read_to_string(&html).unwrap(), "hi");
    assert!(host.is_dir(), "DirectoryOrCreate made the host path");
    std::fs::create_dir_all(host.join("logs")).unwrap();
    std::fs::write(tree.join("data/app.log"), "x").unwrap();
    assert!(host.join("logs/app.log").is_file());

    teardown(&root, "u1").unwrap();
    assert!(!html.exists(), "the emptyDir is gone with the pod");
    assert!(
        host.join("logs/app.log").is_file(),
        "the hostPath is untouched"
    );
    teardown(&root, "u1").unwrap();
}

#[test]
fn host_path_types_are_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("missing");
    assert!(matches!(
        check_host_path(&missing, "Directory"),
        Err(Error::HostPath { .. })
    ));
    assert!(matches!(
        check_host_path(&missing, "File"),
        Err(Error::HostPath { .. })
    ));
    check_host_path(&missing, "FileOrCreate").unwrap();
    assert!(missing.is_file());
    check_host_path(&missing, "File").unwrap();
    check_host_path(&tmp.path().join("any"), "").unwrap();
}
