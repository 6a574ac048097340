//! Tidy checks over the whole workspace, in the spirit of rust-analyzer's `tidy` test: every Rust
//! source file starts with a `//!` module doc saying what it is (docs/style.md#module-docs), and
//! every repository path a comment or a doc cites exists (`cited_paths.rs`).

mod cited_paths;

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
    files_ending_in(dir, &[".rs"], found);
}

/// Every file under `dir` whose name ends in one of `suffixes`, skipping `target/` and hidden
/// directories.
fn files_ending_in(dir: &Path, suffixes: &[&str], found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                files_ending_in(&path, suffixes, found);
            }
        } else if suffixes.iter().any(|suffix| name.ends_with(suffix)) {
            found.push(path);
        }
    }
}

/// `file` relative to the workspace root, for messages.
fn relative(file: &Path) -> String {
    file.strip_prefix(workspace_root())
        .unwrap_or(file)
        .display()
        .to_string()
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
        .map(|file| relative(file))
        .collect();
    assert!(
        missing.is_empty(),
        "files without a `//!` module doc:\n{}",
        missing.join("\n")
    );
}

/// Every repository file cited in a Rust comment or a Markdown file exists (and a cited Markdown
/// anchor exists in its file), so a reader can follow every reference.
#[test]
fn every_cited_repository_path_exists() {
    let root = workspace_root();
    let mut files = Vec::new();
    files_ending_in(&root, &[".rs", ".md"], &mut files);
    let mut stale = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let is_rust = file.extension().is_some_and(|extension| extension == "rs");
        let bases = cited_paths::bases(&root, file);
        for citation in cited_paths::citations(&text, is_rust) {
            checked += 1;
            if let Some(problem) = cited_paths::problem(&citation, &bases) {
                stale.push(format!("{}:{}: {problem}", relative(file), citation.line));
            }
        }
    }
    assert!(checked > 50, "found the workspace's citations ({checked})");
    assert!(stale.is_empty(), "stale citations:\n{}", stale.join("\n"));
}

/// Nothing cites the reference files outside the repository, nor the common-rules file it never
/// had: their rules live in `docs/`.
#[test]
fn nothing_cites_files_outside_the_repository() {
    let root = workspace_root();
    // Spelled in pieces so that this file does not cite them itself.
    let forbidden = [
        ["../", "shared/"].concat(),
        ["shared/", "reference/"].concat(),
        ["shared/", "seeds"].concat(),
        ["COMMON", ".md"].concat(),
    ];
    let mut files = Vec::new();
    let suffixes = [".rs", ".md", ".toml", ".py", ".yaml", ".yml", ".sh"];
    files_ending_in(&root, &suffixes, &mut files);
    files_ending_in(&root.join(".ci"), &[""], &mut files);
    let offenders: Vec<String> = files
        .iter()
        .flat_map(|file| {
            let text = std::fs::read_to_string(file).unwrap_or_default();
            let found: Vec<String> = text
                .lines()
                .enumerate()
                .filter(|(_, line)| {
                    forbidden
                        .iter()
                        .any(|needle| line.contains(needle.as_str()))
                })
                .map(|(index, _)| format!("{}:{}", relative(file), index + 1))
                .collect();
            found
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "cite docs/ instead of files outside the repository:\n{}",
        offenders.join("\n")
    );
}

/// The workspace members, as `Cargo.toml` lists them (`"api",` lines inside `members = [...]`).
fn workspace_members(manifest: &str) -> Vec<String> {
    let Some(start) = manifest.find("members = [") else {
        return Vec::new();
    };
    let list = &manifest[start..];
    let list = &list[..list.find(']').unwrap_or(list.len())];
    list.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The README's code map names every crate of the workspace, and every crate it names exists:
/// the map a newcomer reads first matches the tree.
#[test]
fn the_readme_code_map_names_every_crate() {
    let root = workspace_root();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml");
    let members = workspace_members(&manifest);
    assert!(members.len() >= 8, "found the members: {members:?}");
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    let start = readme.find("### Code map").expect("a code map section");
    let map = &readme[start..];
    let map = &map[..map[4..].find("\n### ").map_or(map.len(), |end| end + 4)];
    let named: Vec<&str> = map
        .lines()
        .filter_map(|line| line.strip_prefix("- `"))
        .filter_map(|rest| rest.split_once("/`").map(|(name, _)| name))
        .collect();
    let missing: Vec<&String> = members
        .iter()
        .filter(|m| !named.contains(&m.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "crates missing from the README code map: {missing:?}"
    );
    let stale: Vec<&&str> = named
        .iter()
        .filter(|name| !root.join(name).is_dir())
        .collect();
    assert!(
        stale.is_empty(),
        "the code map names directories that do not exist: {stale:?}"
    );
}

#[test]
fn workspace_members_are_read_from_the_manifest() {
    let manifest = "[workspace]\nmembers = [\n    \"api\",\n    \"cli\",\n]\n[x]\ny = [\"z\"]\n";
    assert_eq!(workspace_members(manifest), ["api", "cli"]);
}
