//! Errors: kubectl's wording on stderr and exit code 1, for the server's and the user's mistakes.

use crate::{minik_command, Run, Server};

/// A missing object: `Error from server (NotFound): pods "nope" not found`, exit 1.
#[tokio::test(flavor = "multi_thread")]
async fn missing_pod_is_not_found_with_exit_1() {
    let server = Server::start().await;
    for args in [
        &["get", "pod", "nope"][..],
        &["delete", "pod", "nope"],
        &["describe", "pod", "nope"],
        &["logs", "nope"],
    ] {
        let run = server.minik(args).await;
        assert_eq!(run.code, 1, "{args:?}: {run:?}");
        assert_eq!(
            run.stderr, "Error from server (NotFound): pods \"nope\" not found\n",
            "{args:?}"
        );
    }
}

/// Nothing listening: kubectl's "connection refused" sentence, exit 1.
#[tokio::test(flavor = "multi_thread")]
async fn unreachable_server_is_reported_as_kubectl_does() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let server = format!("http://127.0.0.1:{port}");
    let run = Run::from(
        minik_command(&["get", "pods", "--server", &server])
            .output()
            .await
            .unwrap(),
    );
    assert_eq!(run.code, 1);
    assert_eq!(run.stderr, format!("The connection to the server 127.0.0.1:{port} was refused - did you specify the right host or port?\n"));
}

/// Usage errors exit 1 (not clap's 2); unknown kinds get kubectl's message.
#[tokio::test(flavor = "multi_thread")]
async fn usage_errors_exit_1() {
    let run = Run::from(
        minik_command(&["get", "pods", "--bogus"])
            .output()
            .await
            .unwrap(),
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains("--bogus"), "{run:?}");
    let run = Run::from(
        minik_command(&["get", "volumeattachments", "--server", "http://127.0.0.1:1"])
            .output()
            .await
            .unwrap(),
    );
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            1,
            "error: the server doesn't have a resource type \"volumeattachments\"\n"
        )
    );
    let run = Run::from(minik_command(&["--help"]).output().await.unwrap());
    assert_eq!(run.code, 0);
}

/// A reader that has gone (`minik get pods | head -1`) ends the command as it ends kubectl: by
/// SIGPIPE, with nothing on stderr, rather than a panic about a broken pipe.
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let (read_end, write_end) = nix::unistd::pipe().unwrap();
    drop(read_end); // the reader is gone before the first line is written
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_minik"))
        .args(["version", "--client"])
        .stdout(std::process::Stdio::from(write_end))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let sigpipe = nix::sys::signal::Signal::SIGPIPE as i32;
    assert_eq!(output.status.signal(), Some(sigpipe), "{output:?}");
    assert_eq!(stderr, "", "no panic message");
}
