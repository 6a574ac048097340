//! Writes a volume's files so that a reader never sees a half-updated set.
//!
//! Kubernetes counterpart: `AtomicWriter.Write` in `pkg/volume/util/atomic_writer.go`. The
//! layout is upstream's:
//!
//! ```text
//! mode -> ..data/mode                      (one symlink per top-level name)
//! ..data -> ..2026_11_25_16_47_03.2993910  (a symlink, replaced atomically by a rename)
//! ..2026_11_25_16_47_03.2993910/mode       (the files, in a fresh timestamped directory)
//! ```
//!
//! A write that changes nothing does nothing. Otherwise: the new files go into a fresh
//! timestamped directory, a `..data_tmp` symlink to it is renamed over `..data` (the atomic
//! step), the user-visible symlinks are added or removed, and the old directory is deleted.

use std::collections::BTreeSet;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path};

use crate::projection::Payload;

const DATA_DIR: &str = "..data";
const DATA_TMP: &str = "..data_tmp";

/// Writes `payload` under `dir`; `Ok(true)` when the files changed.
pub fn write(dir: &Path, payload: &Payload) -> io::Result<bool> {
    for path in payload.keys() {
        check_path(path)?;
    }
    std::fs::create_dir_all(dir)?;
    let old = std::fs::read_link(dir.join(DATA_DIR)).ok();
    if let Some(old) = &old {
        if same(&dir.join(old), payload) {
            return Ok(false);
        }
    }
    let stamp = jiff::Zoned::now()
        .with_time_zone(jiff::tz::TimeZone::UTC)
        .strftime("..%Y_%m_%d_%H_%M_%S.")
        .to_string()
        + &rand::random::<u32>().to_string();
    let fresh = dir.join(&stamp);
    std::fs::create_dir(&fresh)?;
    for (path, file) in payload {
        let target = fresh.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&target, &file.data)?;
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(file.mode))?;
    }
    let tmp = dir.join(DATA_TMP);
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(&stamp, &tmp)?;
    std::fs::rename(&tmp, dir.join(DATA_DIR))?;
    update_user_links(dir, payload)?;
    if let Some(old) = old {
        std::fs::remove_dir_all(dir.join(old))?;
    }
    Ok(true)
}

/// A payload path: relative, no `..` element, not starting with `..`.
fn check_path(path: &str) -> io::Result<()> {
    let bad = path.is_empty()
        || path.starts_with("..")
        || Path::new(path)
            .components()
            .any(|c| !matches!(c, Component::Normal(_)));
    if bad {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid volume file path {path:?}"),
        ));
    }
    Ok(())
}

/// Whether the directory `current` holds exactly `payload` (contents and modes).
fn same(current: &Path, payload: &Payload) -> bool {
    let mut found = BTreeSet::new();
    if !collect(current, current, &mut found) {
        return false;
    }
    found.len() == payload.len()
        && payload.iter().all(|(path, file)| {
            let target = current.join(path);
            let mode = std::fs::metadata(&target).map(|m| m.permissions().mode() & 0o7777);
            std::fs::read(&target).ok().as_ref() == Some(&file.data) && mode.ok() == Some(file.mode)
        })
}

fn collect(root: &Path, dir: &Path, found: &mut BTreeSet<String>) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if !collect(root, &path, found) {
                return false;
            }
        } else if let Ok(relative) = path.strip_prefix(root) {
            found.insert(relative.to_string_lossy().into_owned());
        }
    }
    true
}

/// One symlink `name -> ..data/name` per top-level name of the payload; stale ones removed.
fn update_user_links(dir: &Path, payload: &Payload) -> io::Result<()> {
    let wanted: BTreeSet<String> = payload
        .keys()
        .filter_map(|p| p.split('/').next().map(str::to_string))
        .collect();
    for entry in std::fs::read_dir(dir)?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("..") && !wanted.contains(&name) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    for name in &wanted {
        let link = dir.join(name);
        if std::fs::symlink_metadata(&link).is_err() {
            std::os::unix::fs::symlink(Path::new(DATA_DIR).join(name), &link)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::projection::FileProjection;

    fn file(text: &str, mode: u32) -> FileProjection {
        FileProjection {
            data: text.as_bytes().to_vec(),
            mode,
        }
    }

    #[test]
    fn files_are_links_through_data_and_an_update_swaps_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let first = Payload::from([
            ("mode".to_string(), file("fast", 0o644)),
            ("conf/app.ini".to_string(), file("[a]", 0o400)),
        ]);
        assert!(write(dir.path(), &first).unwrap());
        assert_eq!(
            std::fs::read_link(dir.path().join("mode")).unwrap(),
            Path::new("..data/mode")
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("conf/app.ini")).unwrap(),
            "[a]"
        );
        let data = std::fs::read_link(dir.path().join("..data")).unwrap();
        assert!(data.to_string_lossy().starts_with("..20"), "{data:?}");
        let mode = std::fs::metadata(dir.path().join("conf/app.ini"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o400);

        assert!(!write(dir.path(), &first).unwrap(), "nothing changed");
        assert_eq!(std::fs::read_link(dir.path().join("..data")).unwrap(), data);

        let second = Payload::from([("mode".to_string(), file("slow", 0o644))]);
        assert!(write(dir.path(), &second).unwrap());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("mode")).unwrap(),
            "slow"
        );
        assert!(
            !dir.path().join("conf").exists(),
            "a removed key's link is gone"
        );
        assert!(
            !dir.path().join(&data).exists(),
            "the old directory is gone"
        );
    }

    #[test]
    fn paths_that_escape_the_volume_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for path in ["../x", "/etc/passwd", "..data", "a/../../b"] {
            let payload = Payload::from([(path.to_string(), file("x", 0o644))]);
            assert!(write(dir.path(), &payload).is_err(), "{path}");
        }
    }
}
