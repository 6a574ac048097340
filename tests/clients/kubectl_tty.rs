//! kubectl 1.32, unmodified, on a real terminal (issue 21): `kubectl run -it`, `attach -it` and
//! `debug -it` give a shell on a pseudo-terminal kept by the container's shim: `tty` names a
//! `/dev/pts` device, `stty size` is kubectl's window and follows a resize; detaching hangs up a
//! `stdinOnce` container's terminal (its shell ends with SIGHUP) and leaves a
//! container without `stdinOnce` running, and a second attach (over plain SPDY this time,
//! `kubectl_spdy.rs`) finds the same shell and resizes it.
//!
//! Kubernetes counterpart: `test/e2e/kubectl/kubectl.go` ("should support inline execution and
//! attach", with `-t`) and `test/e2e/common/node/ephemeral_containers.go`; the terminal is the
//! test's own (`terminal.rs`), as a person's terminal emulator.

use std::time::Duration;

use minik_tests::wait::{pod, wait_for};

use crate::support::{cluster, kubectl_binary, running, stop_clean, Kubectl};
use crate::terminal::Terminal;

/// How long one answer of the shell may take on a loaded machine.
const ANSWER: Duration = Duration::from_secs(30);

/// A shell on a terminal, with a stdin kept across attach sessions (no `stdinOnce`).
const SHELL_YAML: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: shell\nspec:\n  \
    terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: busybox\n    \
    command: [sh]\n    stdin: true\n    tty: true\n";

/// busybox sleeping, for a debugger to join.
const TARGET_YAML: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: target\nspec:\n  \
    terminationGracePeriodSeconds: 1\n  containers:\n  - name: main\n    image: busybox\n    \
    args: [sleep, \"3600\"]\n";

/// Checks the shell is on a terminal of `rows` × `cols`, then resizes kubectl's window and
/// waits for `stty size` to follow.
async fn terminal_follows_resizes(terminal: &mut Terminal, rows: u16, cols: u16) {
    terminal.send("tty\r");
    terminal.expect("/dev/pts/", ANSWER).await;
    size_becomes(terminal, rows, cols).await;
    terminal.resize(rows + 10, cols + 20);
    size_becomes(terminal, rows + 10, cols + 20).await;
}

/// Asks `stty size` until it answers `rows cols`. A size travels beside the typed input, as
/// upstream's does (kubectl's SIGWINCH handler, its own channel, the shim's control FIFO), so
/// a command typed right after it may still see the old one.
async fn size_becomes(terminal: &mut Terminal, rows: u16, cols: u16) {
    let size = format!("\n{rows} {cols}\r");
    for _ in 0..50 {
        terminal.send("stty size\r");
        if terminal
            .shows(&size, Duration::from_millis(500))
            .await
            .is_some()
        {
            return;
        }
    }
    terminal.expect(&size, Duration::ZERO).await;
}

/// The shell's pid, printed as `[PID]`: brackets the typed line (or the shell's redraw of it
/// after a SIGWINCH) never shows around digits.
const PRINT_PID: &str = "echo \"<$$>\" | tr '<>' '[]'\r";

#[tokio::test]
async fn kubectl_run_it_and_debug_it_give_a_shell_on_a_terminal_that_follows_resizes() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary, &cluster);

    // `run -it` makes a pod with stdin, stdinOnce and tty, waits for it and attaches.
    let run = kubectl.command(&["run", "it", "-it", "--image=busybox", "--restart=Never"]);
    let mut run = Terminal::spawn(with_command(run, &["sh"]), 30, 100);
    run.expect("If you don't see a command prompt", ANSWER)
        .await;
    terminal_follows_resizes(&mut run, 30, 100).await;
    run.send("exit 0\r");
    let status = tokio::time::timeout(ANSWER, run.child.wait())
        .await
        .expect("kubectl run -it ends with the shell")
        .unwrap();
    assert!(status.success(), "{status:?}");
    let logs = kubectl.ok(&["logs", "it"]).await;
    assert!(logs.contains("/dev/pts/"), "tty output is logged: {logs:?}");

    // `stdinOnce`: the end of the first session closes the stdin, which for a terminal is a
    // hang-up; the shell ends with SIGHUP (129) when kubectl goes away.
    let hup = kubectl.command(&["run", "hup", "-it", "--image=busybox", "--restart=Never"]);
    let mut hup = Terminal::spawn(with_command(hup, &["sh"]), 24, 80);
    hup.expect("If you don't see a command prompt", ANSWER)
        .await;
    hup.send("tty\r");
    hup.expect("/dev/pts/", ANSWER).await;
    hup.child.kill().await.unwrap();
    let ended = wait_for(&cluster.pods(), "hup", pod::is_finished, ANSWER)
        .await
        .expect("the hung-up shell ends");
    assert_eq!(pod::exit_code(&ended), Some(129), "{ended:#?}");

    // `debug -it`: an ephemeral container with stdin and tty, attached to at once.
    let manifest = kubectl.manifest("target.yaml", TARGET_YAML);
    kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    running(&cluster, "target").await;
    let debug = kubectl.command(&["debug", "-it", "target", "--image=busybox", "-c", "dbg"]);
    let mut debug = Terminal::spawn(with_command(debug, &["sh"]), 24, 80);
    debug
        .expect("If you don't see a command prompt", ANSWER)
        .await;
    terminal_follows_resizes(&mut debug, 24, 80).await;
    debug.send("exit 0\r");
    tokio::time::timeout(ANSWER, debug.child.wait())
        .await
        .expect("kubectl debug -it ends with the shell")
        .unwrap();
    kubectl
        .ok(&["delete", "pod", "it", "hup", "target", "--wait"])
        .await;
    stop_clean(cluster).await;
}

#[tokio::test]
async fn kubectl_attach_it_detaches_without_ending_the_shell_and_reattaches() {
    let Some(binary) = kubectl_binary() else {
        return;
    };
    let cluster = cluster().await;
    let kubectl = Kubectl::new(binary.clone(), &cluster);
    let spdy = crate::kubectl_spdy::spdy_kubectl(Kubectl::new(binary, &cluster));
    let manifest = kubectl.manifest("shell.yaml", SHELL_YAML);
    kubectl
        .ok(&["apply", "-f", manifest.to_str().unwrap()])
        .await;
    running(&cluster, "shell").await;

    let mut first = Terminal::spawn(kubectl.command(&["attach", "-it", "shell"]), 30, 100);
    first
        .expect("If you don't see a command prompt", ANSWER)
        .await;
    first.send(PRINT_PID);
    let said = first.expect("]\r\n", ANSWER).await;
    let pid = said
        .rsplit('[')
        .next()
        .and_then(|rest| rest.strip_suffix("]\r\n"))
        .filter(|pid| pid.parse::<u32>().is_ok())
        .unwrap_or_else(|| panic!("no pid in {said:?}"))
        .to_string();
    size_becomes(&mut first, 30, 100).await;
    // Detach: kubectl goes away, the stream closes; without stdinOnce the shell stays.
    first.child.kill().await.unwrap();
    drop(first);

    let mut second = Terminal::spawn(spdy.command(&["attach", "-it", "shell"]), 24, 80);
    second
        .expect("If you don't see a command prompt", ANSWER)
        .await;
    second.send(PRINT_PID);
    second.expect(&format!("[{pid}]"), ANSWER).await;
    terminal_follows_resizes(&mut second, 24, 80).await;
    second.child.kill().await.unwrap();
    let pod = kubectl.ok(&["get", "pod", "shell", "-o", "json"]).await;
    let pod: serde_json::Value = serde_json::from_str(&pod).unwrap();
    let main = &pod["status"]["containerStatuses"][0];
    assert!(main["state"]["running"].is_object(), "{pod:#}");
    assert_eq!(main["restartCount"], 0, "{pod:#}");
    kubectl.ok(&["delete", "pod", "shell", "--wait"]).await;
    stop_clean(cluster).await;
}

/// Appends `-- ARGS` to a kubectl command.
fn with_command(mut command: tokio::process::Command, args: &[&str]) -> tokio::process::Command {
    command.arg("--").args(args);
    command
}
