//! Tidy checks over the whole workspace, in the spirit of rust-analyzer's `tidy` test: every Rust
//! source file starts with a `//!` module doc saying what it is (docs/style.md#module-docs).

use std::path::{Path, PathBuf};

/// The workspace root: this crate lives in `tests/`.
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

/// Every `.rs` file under `dir`, skipping `target/` and hidden directories.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, found);
            }
        } else if name.ends_with(".rs") {
            found.push(path);
        }
    }
}

/// Every Rust file of the workspace starts with a `//!` module doc.
#[test]
fn every_rust_file_starts_with_a_module_doc() {
    let mut files = Vec::new();
    rust_files(&workspace_root(), &mut files);
    assert!(files.len() > 10, "found the workspace's sources");
    let missing: Vec<String> = files
        .iter()
        .filter(|file| {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            !text.trim_start().starts_with("//!")
        })
        .map(|file| {
            file.strip_prefix(workspace_root())
                .unwrap_or(file)
                .display()
                .to_string()
        })
        .collect();
    assert!(
        missing.is_empty(),
        "files without a `//!` module doc:\n{}",
        missing.join("\n")
    );
}
