//! The cited-paths check: every repository file a comment or a doc names must exist, so a reader who
//! clones minik can follow every reference (issue 14).
//!
//! A citation is a path-like token with a `/` and a file extension (`kubelet/src/hooks.rs`,
//! `docs/kubernetes-rules.md#d5`, `registry/services.rs`), found in a Rust comment or anywhere in a
//! Markdown file. It resolves if it names a file relative to the repository root, the citing
//! file's crate root or its `src/`, or the citing file's directory; a `#anchor` on a Markdown
//! target must name one of its headings or `<a id>` anchors. Upstream paths are not ours to check:
//! Go files, Kubernetes' `pkg/`, `staging/`, `cmd/`, `test/e2e`, `keps/`, `k8s.io/…`, URLs, and
//! the path part of `owner/repo:path`, and any relative path whose first directory exists under
//! none of the bases (`slos/…`, `kube-runtime/src/…`). So is anything under `target/`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// File extensions that make a token a file citation.
const EXTENSIONS: [&str; 8] = ["rs", "md", "toml", "yaml", "yml", "py", "sh", "json"];

/// Prefixes of upstream paths, cited by design and never resolved here.
const UPSTREAM_PREFIXES: [&str; 6] = ["pkg/", "staging/", "cmd/", "k8s.io/", "test/e2e", "keps/"];

/// One citation found in a text, with its line number (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Citation {
    pub line: usize,
    /// The path as written, without its `#anchor`.
    pub path: String,
    /// The anchor after `#`, if any.
    pub anchor: Option<String>,
}

/// The citations in `text`. In Rust only comments count (the part of a line after `//`); in
/// Markdown every line does.
pub fn citations(text: &str, is_rust: bool) -> Vec<Citation> {
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let scanned = if is_rust {
            match comment_of(line) {
                Some(comment) => comment,
                None => continue,
            }
        } else {
            line
        };
        for token in tokens(scanned) {
            if let Some(citation) = citation(index + 1, token) {
                found.push(citation);
            }
        }
    }
    found
}

/// The comment part of a Rust line: after the first `//` that does not belong to a URL.
fn comment_of(line: &str) -> Option<&str> {
    let mut from = 0;
    while let Some(at) = line[from..].find("//") {
        let at = from + at;
        if !line[..at].ends_with(':') {
            return Some(&line[at + 2..]);
        }
        from = at + 2;
    }
    None
}

/// Runs of characters that can make up a path (and an anchor). A run right after a `:` is the
/// path part of an upstream `owner/repo:path` citation and is left out.
fn tokens(text: &str) -> Vec<&str> {
    let is_path_char = |c: char| c.is_ascii_alphanumeric() || "_./#-{}".contains(c);
    let mut found = Vec::new();
    let mut start = None;
    for (at, c) in text.char_indices().chain([(text.len(), ' ')]) {
        match (start, is_path_char(c)) {
            (None, true) => start = Some(at),
            (Some(from), false) => {
                let token = text[from..at].trim_end_matches(['.', '#']);
                if !token.is_empty() && !text[..from].ends_with(':') {
                    found.push(token);
                }
                start = None;
            }
            _ => {}
        }
    }
    found
}

/// `token` as a citation of a repository file, or `None` if it is not one.
fn citation(line: usize, token: &str) -> Option<Citation> {
    let (path, anchor) = match token.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor.to_string())),
        None => (token, None),
    };
    let extension = path.rsplit_once('.').map(|(_, extension)| extension)?;
    let is_citation = path.contains('/')
        && EXTENSIONS.contains(&extension)
        && !path.contains(['{', '}'])
        && !path.starts_with("//")
        && !UPSTREAM_PREFIXES
            .iter()
            .any(|prefix| path.starts_with(prefix))
        && !path.split('/').any(|segment| segment == "target")
        && !looks_like_a_host(path);
    is_citation.then(|| Citation {
        line,
        path: path.to_string(),
        anchor,
    })
}

/// Whether the first segment is a host name (`kubernetes.io/docs/…`, `docs.k3s.io/…`).
fn looks_like_a_host(path: &str) -> bool {
    let first = path.split('/').next().unwrap_or_default();
    first.contains('.') && first != "." && first != ".."
}

/// The directories a citation in `file` may be relative to: the repository root, the file's crate
/// root and its `src/`, and the file's own directory.
pub fn bases(root: &Path, file: &Path) -> Vec<PathBuf> {
    let mut bases = vec![root.to_path_buf()];
    let mut dir = file.parent();
    while let Some(current) = dir {
        if current == root || !current.starts_with(root) {
            break;
        }
        if current.join("Cargo.toml").is_file() {
            bases.push(current.to_path_buf());
            bases.push(current.join("src"));
            break;
        }
        dir = current.parent();
    }
    if let Some(parent) = file.parent() {
        bases.push(parent.to_path_buf());
    }
    bases
}

/// Why `citation` does not resolve from `bases`, or `None` if it does (or is not ours to check).
pub fn problem(citation: &Citation, bases: &[PathBuf]) -> Option<String> {
    let first = citation.path.split('/').next().unwrap_or_default();
    let ours = matches!(first, "." | "..") || bases.iter().any(|base| base.join(first).is_dir());
    if !ours {
        return None;
    }
    let Some(target) = bases
        .iter()
        .map(|base| base.join(&citation.path))
        .find(|candidate| candidate.is_file())
    else {
        return Some(format!("{} does not exist", citation.path));
    };
    let anchor = citation
        .anchor
        .as_deref()
        .filter(|anchor| !anchor.is_empty())?;
    if !citation.path.ends_with(".md") {
        return None;
    }
    let text = std::fs::read_to_string(&target).unwrap_or_default();
    let anchors = markdown_anchors(&text);
    let anchor = anchor.to_lowercase();
    (!anchors.contains(&anchor)).then(|| format!("{}#{anchor}: no such anchor", citation.path))
}

/// The anchors a Markdown file defines: GitHub's slugs of its headings and its `<a id="…">`s.
pub fn markdown_anchors(text: &str) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        if let Some(heading) = line.strip_prefix('#') {
            let title = heading.trim_start_matches('#').trim();
            anchors.insert(slug(title));
        }
        let mut rest = line;
        while let Some(at) = rest.find("<a id=\"") {
            rest = &rest[at + 7..];
            if let Some(end) = rest.find('"') {
                anchors.insert(rest[..end].to_lowercase());
            }
        }
    }
    anchors
}

/// GitHub's anchor for a heading: lowercase, punctuation dropped, spaces as hyphens.
fn slug(title: &str) -> String {
    title
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A comment citing one existing file and one missing: only the missing one is a problem.
    #[test]
    fn a_missing_path_is_found_and_an_existing_one_resolves() {
        let root = crate::workspace_root();
        let file = root.join("tests/tidy/main.rs");
        // Built from pieces so that the scan of this very file does not see these citations.
        let text = [
            "/",
            "/! See `tidy/main.rs` and docs/kubernetes-rules.md#d5, not `tidy/gone.rs`.\n",
            "let url = \"https://kubernetes.io/docs/x.md\"; /",
            "/ pkg/kubelet/x.go, k3s-io/kine:docs/flow.md\n",
        ]
        .concat();
        let found = citations(&text, true);
        let paths: Vec<&str> = found.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(
            paths,
            ["tidy/main.rs", "docs/kubernetes-rules.md", "tidy/gone.rs"]
        );
        let bases = bases(&root, &file);
        let problems: Vec<String> = found
            .iter()
            .filter_map(|citation| problem(citation, &bases))
            .collect();
        assert_eq!(problems, ["tidy/gone.rs does not exist"]);
    }

    /// A Markdown anchor must exist in its target: rule ids and heading slugs both count.
    #[test]
    fn anchors_come_from_headings_and_ids() {
        let anchors =
            markdown_anchors("## Start path\n| <a id=\"d5\"></a>D5 | x |\n### Bird's-eye view\n");
        assert!(anchors.contains("start-path"));
        assert!(anchors.contains("d5"));
        assert!(anchors.contains("birds-eye-view"));
        assert!(!anchors.contains("d6"));
    }
}
