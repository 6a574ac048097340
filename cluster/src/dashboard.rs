//! The dashboard's token when a cluster starts it (`minik up --dashboard`).
//!
//! Kubernetes counterpart: none (the Kubernetes Dashboard is an add-on one logs in to with a
//! bearer token); here the launcher makes the URL token, as Jupyter's launcher does, so `minik
//! up` can print the URL. It lives in `DATA/dashboard.token` (mode 0600, never on a command line,
//! where `ps` would show it to every user) and is kept across restarts, so the URL stays valid.

use std::path::{Path, PathBuf};

use crate::Result;

/// `DATA/dashboard.token`.
pub fn token_file(data_dir: &Path) -> PathBuf {
    data_dir.join("dashboard.token")
}

/// Writes a fresh random token unless one is there already.
pub(crate) fn prepare(data_dir: &Path) -> Result<()> {
    let path = token_file(data_dir);
    if path.exists() {
        return Ok(());
    }
    let token = minik_dashboard::security::random_token();
    crate::pki::write_private(&path, format!("{token}\n").as_bytes())
}
