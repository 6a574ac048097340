//! Container lifecycle hooks: postStart and preStop, with `exec`, `httpGet` and `sleep` handlers.
//!
//! Kubernetes counterpart: `pkg/kubelet/lifecycle/handlers.go` (`HandlerRunner.Run`), called
//! from `startContainer` (postStart, after the process started) and `killContainer` (preStop,
//! bounded by the grace period) in `pkg/kubelet/kuberuntime/kuberuntime_container.go`.
//!
//! - `exec` runs a command with the container's environment and working directory
//!   (`Runtime::exec_sync`), success = exit 0;
//! - `httpGet` sends a GET to `host` (default the pod IP) and the port; any HTTP answer, whatever
//!   its status, completes it (unlike a probe);
//! - `sleep` waits `seconds` (KEP-3960).
//!
//! Timing rules (docs/kubernetes-rules.md#start-path, #t1): postStart runs alongside the process
//! and the container is not Running until it finishes; preStop runs before SIGTERM and its time
//! counts against the grace period. SIGTERM waits for preStop only until the grace deadline; a
//! preStop still running then runs on until the container has stopped, and is then dropped: its
//! exec's processes, also those it `setsid`-ed away, are killed with its future
//! (`cri/process/exec_group.rs`).
//!
//! minik simplifies: the deprecated `tcpSocket` handler is rejected with an error.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, LifecycleHandler};

use crate::cri::Runtime;

/// The longest an `exec` hook may run when its caller sets no deadline.
const EXEC_HOOK_TIMEOUT: Duration = Duration::from_secs(3600);

/// Which hook (for messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    /// `lifecycle.postStart`.
    PostStart,
    /// `lifecycle.preStop`.
    PreStop,
}

/// The container's postStart handler, if any.
pub fn post_start(container: &Container) -> Option<&LifecycleHandler> {
    container.lifecycle.as_ref()?.post_start.as_ref()
}

/// The container's preStop handler, if any.
pub fn pre_stop(container: &Container) -> Option<&LifecycleHandler> {
    container.lifecycle.as_ref()?.pre_stop.as_ref()
}

/// Runs a handler to completion; `Err` carries the reason for the `Failed…Hook` event.
pub async fn run(
    runtime: &dyn Runtime,
    container_id: &str,
    container: &Container,
    handler: &LifecycleHandler,
    pod_ip: &str,
    timeout: Option<Duration>,
) -> Result<(), String> {
    let timeout = timeout.unwrap_or(EXEC_HOOK_TIMEOUT);
    if let Some(exec) = &handler.exec {
        let argv = exec.command.clone().unwrap_or_default();
        if argv.is_empty() {
            return Err("exec handler has an empty command".into());
        }
        return crate::probes::exec_check(runtime, container_id, argv, timeout).await;
    }
    if let Some(http) = &handler.http_get {
        // Any HTTP answer completes the hook, a 500 included (upstream's `runHTTPHandler`
        // discards the status); only a failed request is a hook failure.
        return crate::probes::http_status(http, container, pod_ip, timeout)
            .await
            .map(drop);
    }
    if let Some(sleep) = &handler.sleep {
        tokio::time::sleep(Duration::from_secs(sleep.seconds.max(0) as u64)).await;
        return Ok(());
    }
    if handler.tcp_socket.is_some() {
        return Err("tcpSocket handlers are deprecated and not supported by minik".into());
    }
    Err("handler has no action (exec, httpGet or sleep)".into())
}

/// Upstream's event message for a failed hook.
pub fn failure_message(hook: Hook, container: &str, error: &str) -> String {
    match hook {
        Hook::PostStart => format!("PostStartHook failed: container {container}: {error}"),
        Hook::PreStop => format!("PreStopHook failed: container {container}: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cri::fake::FakeRuntime;
    use crate::cri::ContainerConfig;
    use k8s_openapi::api::core::v1::{ExecAction, SleepAction};

    #[tokio::test]
    async fn an_http_hook_is_done_on_any_answer_even_a_500() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let _ = socket.read(&mut [0u8; 1024]).await;
                let answer = "HTTP/1.1 500 X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
                let _ = socket.write_all(answer.as_bytes()).await;
            }
        });
        let handler = |port: u16| LifecycleHandler {
            http_get: Some(k8s_openapi::api::core::v1::HTTPGetAction {
                port: k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(port.into()),
                ..Default::default()
            }),
            ..Default::default()
        };
        let runtime = FakeRuntime::new();
        let container = Container::default();
        let answered = run(&runtime, "x", &container, &handler(port), "127.0.0.1", None).await;
        assert_eq!(answered, Ok(()));
        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let closed_port = closed.local_addr().unwrap().port();
        drop(closed);
        let refused = run(
            &runtime,
            "x",
            &container,
            &handler(closed_port),
            "127.0.0.1",
            None,
        )
        .await;
        assert!(refused.is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn sleep_handler_waits_its_seconds() {
        let runtime = FakeRuntime::new();
        let handler = LifecycleHandler {
            sleep: Some(SleepAction { seconds: 5 }),
            ..Default::default()
        };
        let started = tokio::time::Instant::now();
        run(
            &runtime,
            "none",
            &Container::default(),
            &handler,
            "127.0.0.1",
            None,
        )
        .await
        .expect("sleep ok");
        assert_eq!(started.elapsed().as_secs(), 5);
    }

    #[tokio::test]
    async fn exec_handler_runs_in_the_container_and_reports_failure() {
        let runtime = FakeRuntime::new();
        let config = ContainerConfig {
            name: "web".into(),
            pod_uid: "u".into(),
            ..Default::default()
        };
        let status = runtime.start_container(config).await.expect("start");
        let handler = LifecycleHandler {
            exec: Some(ExecAction {
                command: Some(vec!["/bin/true".into()]),
            }),
            ..Default::default()
        };
        run(
            &runtime,
            &status.id,
            &Container::default(),
            &handler,
            "127.0.0.1",
            None,
        )
        .await
        .expect("exec ok");
        assert_eq!(runtime.execs().len(), 1);
        let empty = LifecycleHandler {
            exec: Some(ExecAction { command: None }),
            ..Default::default()
        };
        assert!(run(
            &runtime,
            &status.id,
            &Container::default(),
            &empty,
            "127.0.0.1",
            None
        )
        .await
        .is_err());
    }
}
