//! `minik up --one-process`: every component a task of the one `minik up` process, each still
//! logging to its own file.
//!
//! Kubernetes counterpart: `k3s server`, which runs the apiserver, scheduler, controller manager,
//! kubelet and kube-proxy as goroutines of one process (k3s `pkg/daemons`), each started from the
//! same flags its own binary would take. minik does the same through [`Mode::InProcess`]
//! (`component.rs`: one configuration path for both modes); containers stay `minik shim`
//! processes. One process maps the binary's code and relocated data once instead of once per
//! component, which is most of a small cluster's memory (BENCHMARKS.md, "Idle memory").
//!
//! What differs from the processes mode: a component cannot be killed or signalled alone (`minik
//! status` shows `minik up`'s pid for each); one that returns or panics is restarted as a task, as
//! a process would be. k3s writes every component to one stream; minik keeps a file per component,
//! chosen by the crate that wrote the line ([`log_name`]): `minik_kubelet` → `kubelet.log` (every
//! node's kubelet shares it), and lines of shared crates (the client, the launcher, hyper) go to
//! `up.log`.
//!
//! [`Mode::InProcess`]: crate::Mode::InProcess

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

use crate::component::Component;

/// The log of lines no component crate wrote: `DATA/logs/up.log`.
pub const SHARED_LOG: &str = "up";

/// Installs the process's `tracing` subscriber: `info` (or `RUST_LOG`), plain text, each line
/// appended to `log_dir/COMPONENT.log`. Returns false if a subscriber was already installed.
pub fn install_logging(log_dir: &Path) -> bool {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(ComponentLogs::new(log_dir))
        .with_ansi(false)
        .try_init()
        .is_ok()
}

/// The log file a line belongs to, by its target's crate: `minik_proxy::tcp` → `proxy`.
pub fn log_name(target: &str) -> &'static str {
    let krate = target.split("::").next().unwrap_or(target);
    Component::ALL
        .iter()
        .map(|c| c.subcommand())
        .find(|name| {
            // `minik_endpoint_controller` names `endpoint-controller`; compared without allocating,
            // since this runs for every log line.
            krate.strip_prefix("minik_").is_some_and(|rest| {
                rest.len() == name.len()
                    && rest
                        .bytes()
                        .zip(name.bytes())
                        .all(|(a, b)| a == b || (a == b'_' && b == b'-'))
            })
        })
        .unwrap_or(SHARED_LOG)
}

/// A `MakeWriter` that appends each event to its component's file, opened on first use (mode
/// 0600, as every file of the data directory).
pub struct ComponentLogs {
    dir: PathBuf,
    files: Mutex<HashMap<&'static str, Arc<File>>>,
}

impl ComponentLogs {
    /// Logs under `dir` (`DATA/logs`).
    pub fn new(dir: &Path) -> Self {
        ComponentLogs {
            dir: dir.to_path_buf(),
            files: Mutex::new(HashMap::new()),
        }
    }

    /// The open file for `name`; `None` if it cannot be opened (the line is then dropped, as a
    /// full disk drops a process's stderr).
    fn file(&self, name: &'static str) -> Option<Arc<File>> {
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(file) = files.get(name) {
            return Some(file.clone());
        }
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::create_dir_all(&self.dir).ok()?;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(self.dir.join(format!("{name}.log")))
            .ok()?;
        let file = Arc::new(file);
        files.insert(name, file.clone());
        Some(file)
    }
}

impl<'a> MakeWriter<'a> for ComponentLogs {
    type Writer = LogFile;

    fn make_writer(&'a self) -> LogFile {
        LogFile(self.file(SHARED_LOG))
    }

    fn make_writer_for(&'a self, meta: &tracing::Metadata<'_>) -> LogFile {
        LogFile(self.file(log_name(meta.target())))
    }
}

/// One event's writer: the formatter writes a whole line at once, appended (`O_APPEND`).
pub struct LogFile(Option<Arc<File>>);

impl Write for LogFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &self.0 {
            Some(file) => (&**file).write(buf),
            None => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A component crate's lines go to its component's log; everything else to `up.log`.
    #[test]
    fn lines_are_routed_by_their_crate() {
        assert_eq!(log_name("minik_apiserver::handlers::write"), "apiserver");
        assert_eq!(log_name("minik_kubelet"), "kubelet");
        assert_eq!(log_name("minik_proxy::tcp"), "proxy");
        assert_eq!(
            log_name("minik_controller_manager::gc"),
            "controller-manager"
        );
        assert_eq!(log_name("minik_endpoint_controller"), "endpoint-controller");
        assert_eq!(log_name("minik_metrics_server::scrape"), "metrics-server");
        assert_eq!(log_name("minik_client::watcher"), SHARED_LOG);
        assert_eq!(log_name("minik_cluster::cluster"), SHARED_LOG);
        assert_eq!(log_name("hyper::proto"), SHARED_LOG);
        assert_eq!(log_name("minik_proxyish"), SHARED_LOG);
        // The launcher's log column (`cluster.rs`) names the same file for every component.
        for component in Component::ALL {
            let krate = format!("minik_{}", component.subcommand().replace('-', "_"));
            assert_eq!(log_name(&krate), component.subcommand());
        }
    }

    /// Two components' lines land in two files under the log directory, appended.
    #[test]
    fn each_component_writes_its_own_file() {
        let dir = tempfile::tempdir().unwrap();
        let logs = ComponentLogs::new(dir.path());
        for (name, line) in [
            ("apiserver", "a1\n"),
            ("kubelet", "k1\n"),
            ("apiserver", "a2\n"),
        ] {
            LogFile(logs.file(log_name(&format!("minik_{name}"))))
                .write_all(line.as_bytes())
                .unwrap();
        }
        let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert_eq!(read("apiserver.log"), "a1\na2\n");
        assert_eq!(read("kubelet.log"), "k1\n");
    }
}
