//! Helpers of the runtime integration tests: a tiny test runner (the binary has its own `main`),
//! a fixture owning a temp dir and a `ProcessRuntime`, FIFOs to synchronise with scripts, and
//! CRI log parsing.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use minik_kubelet::cri::process::ProcessRuntime;
use minik_kubelet::cri::{
    ContainerConfig, ContainerId, ContainerState, ContainerStatus, Runtime, StopSignal,
};
use tokio::io::AsyncBufReadExt;

pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
const TEST_LIMIT: Duration = Duration::from_secs(30);
const WAIT_LIMIT: Duration = Duration::from_secs(10);

/// One named test: runs an async fn on a fresh runtime.
pub type Test = (&'static str, fn());

/// `tests![a, b]` → `[("a", || block_on(a())), …]`.
#[macro_export]
macro_rules! tests {
    ($($name:ident),* $(,)?) => {
        &[$((stringify!($name), (|| $crate::support::block_on($name())) as fn())),*]
    };
}

/// Runs a test body on a multi-thread runtime with a time limit.
pub fn block_on<F: std::future::Future<Output = ()>>(test: F) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let outcome = runtime.block_on(async { tokio::time::timeout(TEST_LIMIT, test).await });
    runtime.shutdown_timeout(Duration::from_secs(1));
    outcome.expect("test timed out");
}

/// A minimal libtest: `--list`, a name filter, `test NAME ... ok|FAILED`, exit code.
pub fn run_tests(tests: &[Test]) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        for (name, _) in tests {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    let filter = args
        .iter()
        .find(|a| !a.starts_with('-'))
        .cloned()
        .unwrap_or_default();
    let selected: Vec<&Test> = tests
        .iter()
        .filter(|(name, _)| name.contains(&filter))
        .collect();
    println!("\nrunning {} tests", selected.len());
    let mut failed = Vec::new();
    for (name, test) in &selected {
        println!("test {name} ...");
        match std::panic::catch_unwind(test) {
            Ok(()) => println!("test {name} ... ok"),
            Err(_) => {
                println!("test {name} ... FAILED");
                failed.push(*name);
            }
        }
    }
    let result = if failed.is_empty() { "ok" } else { "FAILED" };
    println!(
        "\ntest result: {result}. {} passed; {} failed",
        selected.len() - failed.len(),
        failed.len()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        println!("failures: {failed:?}");
        ExitCode::FAILURE
    }
}

/// A temp dir with a runtime on it; running containers are SIGKILLed on drop (failed tests).
pub struct Fixture {
    pub tmp: tempfile::TempDir,
    pub root: PathBuf,
    pub rt: ProcessRuntime,
}

impl Fixture {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("runtime");
        let rt = ProcessRuntime::new(root.clone(), std::env::current_exe().unwrap()).unwrap();
        Fixture { tmp, root, rt }
    }

    /// A config with `PATH` set (unless given) and the log in `{tmp}/logs/{name}.log`.
    pub fn config(&self, name: &str, argv: &[&str], env: &[(&str, &str)]) -> ContainerConfig {
        let mut env: std::collections::BTreeMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        env.entry("PATH".into())
            .or_insert_with(|| DEFAULT_PATH.into());
        ContainerConfig {
            pod_uid: "pod-1".into(),
            pod_key: "default/test".into(),
            name: name.into(),
            image: "busybox".into(),
            attempt: 0,
            argv: argv.iter().map(|s| s.to_string()).collect(),
            env,
            working_dir: None,
            log_path: self.log(name),
            mounts: None,
            pod_ip: None,
            stop_grace_seconds: None,
            stdin: false,
            stdin_once: false,
            tty: false,
        }
    }

    pub fn log(&self, name: &str) -> PathBuf {
        self.tmp.path().join("logs").join(format!("{name}.log"))
    }

    /// Starts a container and checks it runs.
    pub async fn start(&self, config: ContainerConfig) -> ContainerId {
        let status = self.rt.start_container(config).await.unwrap();
        assert!(
            matches!(status.state, ContainerState::Running { .. }),
            "{status:?}"
        );
        status.id
    }

    /// A named pipe in the temp dir: a script writes a line, the test blocks reading it.
    pub fn fifo(&self, name: &str) -> PathBuf {
        let path = self.tmp.path().join(name);
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        path
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        // A fresh runtime on the same root also sees containers started by other runtimes.
        let rt = ProcessRuntime::new(self.root.clone(), std::env::current_exe().unwrap()).unwrap();
        for container in rt.list_containers() {
            let _ = rt.signal_container(&container.id, StopSignal::Kill);
        }
    }
}

/// Reads everything a writer puts in the FIFO (blocks until it opens and closes it).
pub async fn read_fifo(path: &Path) -> String {
    let path = path.to_path_buf();
    let read = tokio::task::spawn_blocking(move || {
        let mut text = String::new();
        std::fs::File::open(&path)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        text
    });
    tokio::time::timeout(WAIT_LIMIT, read)
        .await
        .expect("fifo never written")
        .unwrap()
}

pub async fn read_first_line(stdout: tokio::process::ChildStdout) -> String {
    let mut line = String::new();
    let mut reader = tokio::io::BufReader::new(stdout);
    tokio::time::timeout(WAIT_LIMIT, reader.read_line(&mut line))
        .await
        .unwrap()
        .unwrap();
    line
}

/// Waits until the container log contains `needle`. The log is a file written by another
/// process, so this re-reads it every 10 ms until a deadline (a condition, not a fixed sleep).
pub async fn wait_for_log(path: &Path, needle: &str) {
    let what = format!("{needle:?} appears in {}", path.display());
    wait_until(&what, || {
        std::fs::read_to_string(path).is_ok_and(|text| text.contains(needle))
    })
    .await;
}

/// Waits until `condition` holds, checking every 10 ms until a deadline (for state owned by
/// another process, where there is nothing to subscribe to).
pub async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT_LIMIT;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting until {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// One parsed CRI log record.
#[derive(Debug)]
pub struct LogLine {
    pub stream: String,
    pub content: String,
}

/// Parses a CRI log, checking every record's shape: `RFC3339-with-9-digits STREAM F|P content`.
pub fn parse_log(path: &Path) -> Vec<LogLine> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|line| {
            let mut parts = line.splitn(4, ' ');
            let (ts, stream, tag) = (
                parts.next().unwrap(),
                parts.next().unwrap(),
                parts.next().unwrap(),
            );
            let content = parts.next().unwrap_or("");
            assert!(
                ts.parse::<jiff::Timestamp>().is_ok() && ts.len() == 30 && ts.ends_with('Z'),
                "timestamp {ts:?}"
            );
            assert!(
                stream == "stdout" || stream == "stderr",
                "stream {stream:?}"
            );
            assert!(tag == "F" || tag == "P", "tag {tag:?}");
            LogLine {
                stream: stream.into(),
                content: content.into(),
            }
        })
        .collect()
}

pub fn exit_code(status: &ContainerStatus) -> Option<i32> {
    match status.state {
        ContainerState::Exited { exit_code, .. } => Some(exit_code),
        ContainerState::Running { .. } => None,
    }
}

pub fn running_pid(rt: &ProcessRuntime, id: &str) -> u32 {
    match rt.container_status(id).unwrap().state {
        ContainerState::Running { pid, .. } => pid,
        other => panic!("not running: {other:?}"),
    }
}

/// No child of the test process is a zombie.
pub fn assert_no_zombies() {
    let me = std::process::id();
    let zombies: Vec<u32> = minik_kubelet::shim::descendants(me)
        .into_iter()
        .filter(|pid| minik_kubelet::shim::proc_stat(*pid).is_some_and(|s| s.state == 'Z'))
        .collect();
    assert!(zombies.is_empty(), "zombies: {zombies:?}");
}
