//! Helpers for driving unmodified clients: a kubeconfig per cluster, running kubectl, finding tools.

use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::Duration;

use minik_api::core::Pod;
use minik_tests::wait::{pod, wait_for};
use minik_tests::Cluster;
use tempfile::TempDir;

/// Generous bound for a pod to reach Running on a loaded 2-core machine.
pub const RUNNING: Duration = Duration::from_secs(30);

/// How long one kubectl invocation may take.
const KUBECTL_TIMEOUT: Duration = Duration::from_secs(60);

/// Starts a one-node cluster (no proxy: these tests never dial a service).
pub async fn cluster() -> Cluster {
    Cluster::builder()
        .nodes(1)
        .without_services()
        .start()
        .await
        .expect("start cluster")
}

/// Starts the control plane alone (no nodes, no services): what API-only tests need.
pub async fn control_plane() -> Cluster {
    Cluster::builder()
        .nodes(0)
        .without_services()
        .start()
        .await
        .expect("start cluster")
}

/// Stops the cluster and asserts it left no process behind.
pub async fn stop_clean(cluster: Cluster) {
    let report = cluster.stop().await.expect("stop cluster");
    assert!(
        report.leftovers.is_empty(),
        "processes left behind: {:#?}",
        report.leftovers
    );
}

/// The kubectl binary (`MINIK_KUBECTL`, else `/usr/bin/kubectl`), or `None` with a notice.
pub fn kubectl_binary() -> Option<PathBuf> {
    let path = std::env::var_os("MINIK_KUBECTL")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/kubectl"));
    if path.exists() {
        Some(path)
    } else {
        skip(&format!(
            "kubectl not found at {} (set MINIK_KUBECTL)",
            path.display()
        ))
    }
}

/// The Python interpreter with `kubernetes==37.0.2` (`MINIK_PYTHON`), or `None` with a notice.
pub fn python_binary() -> Option<PathBuf> {
    let Some(path) = std::env::var_os("MINIK_PYTHON").map(PathBuf::from) else {
        return skip("MINIK_PYTHON is not set (a python with kubernetes==37.0.2; .ci/run sets it)");
    };
    if path.exists() {
        Some(path)
    } else {
        skip(&format!("MINIK_PYTHON={} does not exist", path.display()))
    }
}

/// Skips a test whose client is missing on a developer's machine; under CI (`CI` set, as
/// `.ci/run` runs) a missing client fails the test instead, so a green CI means it ran.
fn skip<T>(why: &str) -> Option<T> {
    assert!(
        std::env::var_os("CI").is_none(),
        "CI must provide every real client: {why}"
    );
    eprintln!("SKIPPED: {why}");
    None
}

/// kubectl pointed at one cluster through a kubeconfig, with its own cache directory.
pub struct Kubectl {
    binary: PathBuf,
    dir: TempDir,
    kubeconfig: PathBuf,
    /// Extra environment of every command (e.g. `KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false`).
    env: Vec<(String, String)>,
}

/// What one kubectl run printed.
#[derive(Debug)]
pub struct Run {
    /// The exit code (-1 if killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    fn from(output: Output) -> Self {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Panics with the whole output unless kubectl exited 0.
    pub fn success(self) -> Self {
        assert_eq!(self.code, 0, "kubectl failed: {self:#?}");
        self
    }
}

impl Kubectl {
    /// kubectl with a private directory and no kubeconfig yet: [`Kubectl::kubeconfig`] is where
    /// it will look (`minik up` writes it in `minik_up.rs`).
    pub fn without_config(binary: PathBuf) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("minik-kubectl-")
            .tempdir()
            .expect("temp dir");
        let kubeconfig = dir.path().join("config");
        Kubectl {
            binary,
            dir,
            kubeconfig,
            env: Vec::new(),
        }
    }

    /// The same kubectl with `key=value` in the environment of every command.
    pub fn with_env(mut self, key: &str, value: &str) -> Self {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// kubectl with the kubeconfig the cluster wrote (`DATA/kubeconfig`: its CA and the admin's
    /// client certificate) and nothing else, as docs/real-clients.md#kubeconfig says.
    pub fn new(binary: PathBuf, cluster: &Cluster) -> Self {
        Kubectl {
            kubeconfig: cluster.kubeconfig(),
            ..Kubectl::without_config(binary)
        }
    }

    /// The kubeconfig path (also used by the Python client).
    pub fn kubeconfig(&self) -> PathBuf {
        self.kubeconfig.clone()
    }

    /// Writes a manifest into the temp dir and returns its path.
    pub fn manifest(&self, name: &str, yaml: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, yaml).expect("write manifest");
        path
    }

    /// A kubectl command with this cluster's kubeconfig and a private cache.
    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.binary);
        command
            .env("KUBECONFIG", self.kubeconfig())
            .env("HOME", self.dir.path())
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .args(args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .kill_on_drop(true);
        command
    }

    /// Runs kubectl to completion.
    pub async fn run(&self, args: &[&str]) -> Run {
        let output = self.command(args).output();
        let output = tokio::time::timeout(KUBECTL_TIMEOUT, output)
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} did not finish in {KUBECTL_TIMEOUT:?}"))
            .expect("run kubectl");
        Run::from(output)
    }

    /// Runs kubectl and returns its stdout, failing the test on a non-zero exit.
    pub async fn ok(&self, args: &[&str]) -> String {
        self.run(args).await.success().stdout
    }

    /// Waits (10 s at most) for a CRD to be `Established`, so its kind is served.
    pub async fn wait_established(&self, crd_name: &str) {
        let crd = format!("crd/{crd_name}");
        self.ok(&["wait", "--for=condition=Established", "--timeout=10s", &crd])
            .await;
    }
}

/// The columns of one line of kubectl's aligned output.
pub fn cells(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// The line of `output` whose first column is `name`.
pub fn line_of<'a>(output: &'a str, name: &str) -> Option<&'a str> {
    output
        .lines()
        .find(|line| line.split_whitespace().next() == Some(name))
}

/// A one-container `nginx` (minik web) pod manifest; `extra_spec` lines go before `containers`.
pub fn pod_yaml(name: &str, labels: &str, extra_spec: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  labels: {{{labels}}}\nspec:\n  \
         terminationGracePeriodSeconds: 5\n{extra_spec}  containers:\n  - name: web\n    image: nginx\n    \
         env: [{{name: PORT, value: \"8080\"}}]\n    ports: [{{containerPort: 8080, name: http}}]\n"
    )
}

/// A ClusterIP Service `web` selecting `app: web`, port 80 → 8080.
pub const SERVICE_YAML: &str = "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  \
    selector: {app: web}\n  ports: [{port: 80, targetPort: 8080, protocol: TCP}]\n";

impl Kubectl {
    /// `kubectl apply -f` of the pod `web` (with `labels`) and the Service `web` in front of it.
    pub async fn apply_web_and_service(&self, labels: &str) {
        let pod = self.manifest("pod.yaml", &pod_yaml("web", labels, ""));
        self.ok(&["apply", "-f", pod.to_str().unwrap()]).await;
        let service = self.manifest("svc.yaml", SERVICE_YAML);
        self.ok(&["apply", "-f", service.to_str().unwrap()]).await;
    }
}

/// Waits until the pod is Running.
pub async fn running(cluster: &minik_tests::Cluster, name: &str) -> Pod {
    wait_for(&cluster.pods(), name, pod::is_running, RUNNING)
        .await
        .expect("pod Running")
}
