//! Integration tests of the process runtime: real shims, real processes, real signals.
//!
//! How the shim is found without building the `minik` CLI: this test binary has its own `main`
//! (`harness = false` in Cargo.toml). Run as `runtime shim …` or `runtime image NAME` it *is* the
//! shim or the built-in image — exactly what `minik shim …` / `minik image …` do — so the tests
//! give `ProcessRuntime` `std::env::current_exe()` as its "minik binary". Run as
//! `runtime crash-helper …` it plays a kubelet that starts a container and is then `kill -9`ed.
//! Otherwise it runs the tests below one by one (a name filter as first free argument works, as
//! with libtest), each on a fresh tokio runtime with a 30 s limit.

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use minik_kubelet::cri::process::ProcessRuntime;
use minik_kubelet::cri::{ContainerState, Error, Runtime, StopSignal};
use minik_kubelet::shim::proc_stat;
use support::*;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("shim") => std::process::exit(minik_kubelet::shim::main(args[2..].to_vec())),
        Some("image") => std::process::exit(minik_kubelet::images::run(
            args.get(2).map_or("", String::as_str),
        )),
        Some("crash-helper") => std::process::exit(crash_helper(&args[2..])),
        _ => {}
    }
    run_tests(tests![
        logs_are_cri_lines_and_the_environment_is_exact,
        sigterm_ends_a_plain_process_with_exit_code_143,
        a_process_ignoring_sigterm_is_killed_with_137,
        a_grandchild_that_called_setsid_dies_with_the_container,
        a_new_runtime_adopts_containers_after_a_kubelet_kill_9,
        a_container_whose_shim_died_is_killed_and_reported_as_255,
        a_killed_shim_gives_255_and_takes_its_container_along,
        exec_sync_uses_the_container_env_and_times_out,
        a_missing_program_fails_to_start_with_a_clear_message,
        a_shim_that_dies_before_its_handshake_fails_the_start_with_its_stderr,
        a_started_container_has_only_its_config_and_started_record,
        web_image_answers_its_pod_name_and_drains_on_sigterm,
        remove_kills_a_running_container_and_forgets_it,
        no_zombies_are_left_behind,
        starting_a_container_takes_milliseconds,
        pod_containers_lists_one_pod_and_its_exits,
    ])
}

async fn logs_are_cri_lines_and_the_environment_is_exact() {
    let fx = Fixture::new();
    let env = [("FOO", "bar baz"), ("PATH", DEFAULT_PATH)];
    let printer = fx.start(fx.config("env", &["env"], &env)).await;
    assert_eq!(
        exit_code(&fx.rt.wait_container(&printer).await.unwrap()),
        Some(0)
    );
    let lines = parse_log(&fx.log("env"));
    let mut printed: Vec<&str> = lines.iter().map(|l| l.content.as_str()).collect();
    printed.sort();
    assert_eq!(
        printed,
        vec!["FOO=bar baz", &format!("PATH={DEFAULT_PATH}")]
    );

    let both = fx
        .start(fx.config(
            "streams",
            &["sh", "-c", "echo to-out; echo to-err >&2"],
            &[],
        ))
        .await;
    fx.rt.wait_container(&both).await.unwrap();
    let lines = parse_log(&fx.log("streams"));
    assert!(
        lines
            .iter()
            .any(|l| l.stream == "stdout" && l.content == "to-out"),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.stream == "stderr" && l.content == "to-err"),
        "{lines:?}"
    );
    assert_no_zombies();
}

async fn sigterm_ends_a_plain_process_with_exit_code_143() {
    let fx = Fixture::new();
    let id = fx
        .start(fx.config("sleeper", &["sleep", "1000"], &[]))
        .await;
    let pid = running_pid(&fx.rt, &id);
    fx.rt.signal_container(&id, StopSignal::Term).unwrap();
    let status = fx.rt.wait_container(&id).await.unwrap();
    assert_eq!(exit_code(&status), Some(143));
    assert!(proc_stat(pid).is_none(), "the process is gone and reaped");
    let ContainerState::Exited {
        started_at,
        finished_at,
        ..
    } = status.state
    else {
        unreachable!()
    };
    assert!(finished_at >= started_at);
    // Signalling an exited container is not an error.
    fx.rt.signal_container(&id, StopSignal::Kill).unwrap();
}

async fn a_process_ignoring_sigterm_is_killed_with_137() {
    let fx = Fixture::new();
    let ready = fx.fifo("ready");
    let script = r#"trap "" TERM; echo ready > "$READY"; exec sleep 1000"#;
    let id = fx
        .start(fx.config(
            "stubborn",
            &["sh", "-c", script],
            &[("READY", ready.to_str().unwrap())],
        ))
        .await;
    read_fifo(&ready).await;
    fx.rt.signal_container(&id, StopSignal::Term).unwrap();
    let still_running =
        tokio::time::timeout(Duration::from_millis(300), fx.rt.wait_container(&id)).await;
    assert!(still_running.is_err(), "SIGTERM was ignored");
    fx.rt.signal_container(&id, StopSignal::Kill).unwrap();
    assert_eq!(
        exit_code(&fx.rt.wait_container(&id).await.unwrap()),
        Some(137)
    );
}

async fn a_grandchild_that_called_setsid_dies_with_the_container() {
    let fx = Fixture::new();
    let fifo = fx.fifo("grandchild");
    let script = r#"setsid sh -c 'echo $$ > "$GC"; exec sleep 1000' & exec sleep 1000"#;
    let id = fx
        .start(fx.config(
            "parent",
            &["sh", "-c", script],
            &[("GC", fifo.to_str().unwrap())],
        ))
        .await;
    let container_pid = running_pid(&fx.rt, &id);
    let grandchild: u32 = read_fifo(&fifo).await.trim().parse().unwrap();
    let stat = proc_stat(grandchild).expect("grandchild runs");
    assert_eq!(
        stat.session, grandchild,
        "the grandchild leads its own session"
    );
    assert_ne!(stat.session, container_pid);

    fx.rt.signal_container(&id, StopSignal::Term).unwrap(); // reaches only the container's group
    assert_eq!(
        exit_code(&fx.rt.wait_container(&id).await.unwrap()),
        Some(143)
    );
    assert!(
        proc_stat(grandchild).is_none(),
        "the shim killed and reaped the escaped grandchild"
    );
}

async fn a_new_runtime_adopts_containers_after_a_kubelet_kill_9() {
    let fx = Fixture::new();
    // A "kubelet" process starts a container, reports its pid, and is killed with SIGKILL.
    let mut kubelet = tokio::process::Command::new(std::env::current_exe().unwrap())
        .arg("crash-helper")
        .arg(&fx.root)
        .arg(fx.tmp.path().join("logs/adopted.log"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid: u32 = read_first_line(kubelet.stdout.take().unwrap())
        .await
        .trim()
        .parse()
        .unwrap();
    kubelet.start_kill().unwrap();
    kubelet.wait().await.unwrap();
    assert!(
        proc_stat(pid).is_some(),
        "the container survives its kubelet"
    );

    let adopted = ProcessRuntime::new(fx.root.clone(), std::env::current_exe().unwrap()).unwrap();
    let listed = adopted.list_containers();
    assert_eq!(listed.len(), 1);
    assert!(
        matches!(listed[0].state, ContainerState::Running { pid: p, .. } if p == pid),
        "{listed:?}"
    );
    assert_eq!(listed[0].config.name, "adopted");

    // The adopted container is not our child: waiting goes through a pidfd on its shim.
    let waiter = adopted.wait_container(&listed[0].id);
    adopted
        .signal_container(&listed[0].id, StopSignal::Term)
        .unwrap();
    assert_eq!(exit_code(&waiter.await.unwrap()), Some(143));
    assert!(proc_stat(pid).is_none());
    // The pidfd watcher recorded the exit: the listing says so too.
    assert_eq!(exit_code(&adopted.list_containers()[0]), Some(143));
}

async fn a_container_whose_shim_died_is_killed_and_reported_as_255() {
    let fx = Fixture::new();
    let id = fx.start(fx.config("orphan", &["sleep", "1000"], &[])).await;
    let pid = running_pid(&fx.rt, &id);
    // Pretend the recorded shim is a process that no longer exists (its start time differs).
    let started = fx.root.join("containers").join(&id).join("started.json");
    let mut record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&started).unwrap()).unwrap();
    record["shim_start_ticks"] = serde_json::json!(1);
    std::fs::write(&started, record.to_string()).unwrap();

    let restarted = ProcessRuntime::new(fx.root.clone(), std::env::current_exe().unwrap()).unwrap();
    let status = restarted.container_status(&id).unwrap();
    assert_eq!(exit_code(&status), Some(255), "{status:?}");
    // The unsupervised container was SIGKILLed (its real shim, still alive here, reaps it).
    wait_until("the container is gone", || proc_stat(pid).is_none()).await;
    fx.rt.wait_container(&id).await.unwrap(); // and its shim has ended and been reaped
}

async fn a_killed_shim_gives_255_and_takes_its_container_along() {
    let fx = Fixture::new();
    let id = fx
        .start(fx.config("unlucky", &["sleep", "1000"], &[]))
        .await;
    let pid = running_pid(&fx.rt, &id);
    let started = fx.root.join("containers").join(&id).join("started.json");
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&started).unwrap()).unwrap();
    let shim = nix::unistd::Pid::from_raw(record["shim_pid"].as_i64().unwrap() as i32);
    nix::sys::signal::kill(shim, nix::sys::signal::Signal::SIGKILL).unwrap();

    let status = fx.rt.wait_container(&id).await.unwrap();
    assert_eq!(exit_code(&status), Some(255), "{status:?}");
    wait_until("the unsupervised container is killed", || {
        proc_stat(pid).is_none_or(|s| s.state == 'Z')
    })
    .await;
}

async fn exec_sync_uses_the_container_env_and_times_out() {
    let fx = Fixture::new();
    let mut config = fx.config("app", &["sleep", "1000"], &[("FOO", "from-spec")]);
    config.working_dir = Some(fx.tmp.path().to_path_buf());
    let id = fx.start(config).await;
    let sh = |script: &str| vec!["sh".to_string(), "-c".to_string(), script.to_string()];

    let result = fx
        .rt
        .exec_sync(
            &id,
            sh("echo $FOO; pwd; echo oops >&2; exit 3"),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert_eq!(result.exit_code, 3);
    assert_eq!(
        result.output,
        format!("from-spec\n{}\noops\n", fx.tmp.path().display())
    );

    let t0 = Instant::now();
    let result = fx
        .rt
        .exec_sync(
            &id,
            sh("echo started; sleep 30"),
            Duration::from_millis(300),
        )
        .await
        .unwrap();
    assert_eq!(result.exit_code, 137);
    assert_eq!(result.output, "started\n");
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "timed out after {:?}",
        t0.elapsed()
    );

    let big = fx
        .rt
        .exec_sync(
            &id,
            sh("head -c 100000 /dev/zero | tr '\\0' x"),
            Duration::from_secs(5),
        )
        .await
        .unwrap();
    assert_eq!((big.exit_code, big.output.len()), (0, 4096));
    let missing = fx
        .rt
        .exec_sync(
            &id,
            vec!["no-such-hook-program".into()],
            Duration::from_secs(1),
        )
        .await
        .unwrap();
    assert_eq!(missing.exit_code, 127);
    assert_no_zombies();
}

async fn a_shim_that_dies_before_its_handshake_fails_the_start_with_its_stderr() {
    let fx = Fixture::new();
    let broken = fx.tmp.path().join("broken-minik");
    std::fs::write(&broken, "#!/bin/sh\necho 'shim exploded' >&2\nexit 3\n").unwrap();
    std::fs::set_permissions(&broken, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let rt = ProcessRuntime::new(fx.tmp.path().join("broken-runtime"), broken).unwrap();
    let err = rt
        .start_container(fx.config("doomed", &["sleep", "1000"], &[]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::StartFailed { message, .. }
            if message == "the shim did not report a start: shim exploded"),
        "{err}"
    );
    assert!(rt.list_containers().is_empty());
}

async fn a_started_container_has_only_its_config_and_started_record() {
    let fx = Fixture::new();
    let id = fx.start(fx.config("quiet", &["sleep", "1000"], &[])).await;
    let mut files: Vec<String> = std::fs::read_dir(fx.root.join("containers").join(&id))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    // No `pid` (it is in started.json) and no `shim.log` (the shim had nothing to say).
    assert_eq!(files, ["config.json", "started.json"]);
    fx.rt.remove_container(&id).await.unwrap();
}

async fn a_missing_program_fails_to_start_with_a_clear_message() {
    let fx = Fixture::new();
    let err = fx
        .rt
        .start_container(fx.config("ghost", &["no-such-program-xyz"], &[]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::StartFailed { message, .. } if message.contains("executable file not found")),
        "{err}"
    );

    let script = fx.tmp.path().join("not-executable.sh");
    std::fs::write(&script, "#!/bin/sh\n").unwrap();
    let err = fx
        .rt
        .start_container(fx.config("noexec", &[script.to_str().unwrap()], &[]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, Error::StartFailed { message, .. } if message.contains("permission denied")),
        "{err}"
    );

    let mut config = fx.config("nodir", &["true"], &[]);
    config.working_dir = Some(fx.tmp.path().join("missing"));
    let err = fx.rt.start_container(config).await.unwrap_err();
    assert!(
        matches!(&err, Error::StartFailed { message, .. } if message.contains("working directory")),
        "{err}"
    );
    assert!(
        fx.rt.list_containers().is_empty(),
        "failed starts leave no record"
    );
}

async fn web_image_answers_its_pod_name_and_drains_on_sigterm() {
    let fx = Fixture::new();
    let exe = std::env::current_exe().unwrap();
    let port = 20_000 + (std::process::id() % 20_000);
    let unhealthy = fx.tmp.path().join("unhealthy");
    let env = [
        ("POD_NAME", "web-1"),
        ("POD_IP", "127.244.251.7"),
        ("MINIK_CONTAINER_PORT", &port.to_string()),
        ("MINIK_ON_SIGTERM", "drain:400"),
        ("MINIK_WEB_UNHEALTHY_FILE", unhealthy.to_str().unwrap()),
    ];
    let t_start = Instant::now();
    let id = fx
        .start(fx.config("web", &[exe.to_str().unwrap(), "image", "web"], &env))
        .await;
    wait_for_log(&fx.log("web"), "event=started").await;
    println!(
        "    web image: start_container → listening in {:?}",
        t_start.elapsed()
    );

    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let url = format!("http://127.244.251.7:{port}");
    assert_eq!(
        client
            .get(format!("{url}/anything"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
        "web-1\n"
    );
    assert_eq!(
        client
            .get(format!("{url}/healthz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    std::fs::write(&unhealthy, "").unwrap();
    assert_eq!(
        client
            .get(format!("{url}/healthz"))
            .send()
            .await
            .unwrap()
            .status(),
        500
    );

    let t_term = Instant::now();
    fx.rt.signal_container(&id, StopSignal::Term).unwrap();
    wait_for_log(&fx.log("web"), "event=sigterm").await;
    assert_eq!(
        client.get(&url).send().await.unwrap().text().await.unwrap(),
        "web-1\n",
        "still serving while draining"
    );
    assert_eq!(
        exit_code(&fx.rt.wait_container(&id).await.unwrap()),
        Some(0)
    );
    let drained = t_term.elapsed();
    assert!(
        drained >= Duration::from_millis(400) && drained < Duration::from_millis(1500),
        "{drained:?}"
    );

    let events: Vec<String> = parse_log(&fx.log("web"))
        .into_iter()
        .filter_map(|l| {
            l.content
                .strip_prefix("event=")
                .map(|e| e.split(' ').next().unwrap_or("").to_string())
        })
        .collect();
    assert_eq!(events, ["started", "sigterm", "exit"]);
}

async fn remove_kills_a_running_container_and_forgets_it() {
    let fx = Fixture::new();
    let id = fx.start(fx.config("doomed", &["sleep", "1000"], &[])).await;
    let pid = running_pid(&fx.rt, &id);
    fx.rt.remove_container(&id).await.unwrap();
    assert!(proc_stat(pid).is_none());
    assert!(fx.rt.container_status(&id).is_none());
    assert!(!fx.root.join("containers").join(&id).exists());
    assert!(!fx.log("doomed").exists());
    fx.rt.remove_container(&id).await.unwrap(); // removing twice is fine (CRI)
    let again = ProcessRuntime::new(fx.root.clone(), std::env::current_exe().unwrap()).unwrap();
    assert!(again.list_containers().is_empty());
}

async fn no_zombies_are_left_behind() {
    let fx = Fixture::new();
    let mut ids = Vec::new();
    for i in 0..5 {
        // Each container leaves background children behind when its main process exits.
        let name = format!("c{i}");
        ids.push(
            fx.start(fx.config(
                &name,
                &["sh", "-c", "sleep 1000 & sleep 1000 & exit 1"],
                &[],
            ))
            .await,
        );
    }
    for id in &ids {
        assert_eq!(exit_code(&fx.rt.wait_container(id).await.unwrap()), Some(1));
    }
    assert_no_zombies();
    assert!(
        minik_kubelet::shim::descendants(std::process::id()).is_empty(),
        "nothing runs below the test"
    );
}

async fn starting_a_container_takes_milliseconds() {
    let fx = Fixture::new();
    let mut took = Vec::new();
    for i in 0..20 {
        let t0 = Instant::now();
        let id = fx
            .start(fx.config(&format!("quick{i}"), &["sleep", "1000"], &[]))
            .await;
        took.push(t0.elapsed());
        fx.rt.signal_container(&id, StopSignal::Kill).unwrap();
        fx.rt.wait_container(&id).await.unwrap();
    }
    took.sort();
    let (p50, max) = (took[took.len() / 2], took[took.len() - 1]);
    println!(
        "    start_container (shim spawn → process running): p50 {p50:?}, max {max:?} over 20"
    );
    assert!(p50 < Duration::from_millis(500), "p50 {p50:?}");
}

/// `runtime crash-helper ROOT LOG`: a kubelet that starts `sleep 1000`, prints its pid and waits
/// to be killed.
fn crash_helper(args: &[String]) -> i32 {
    let (root, log) = (PathBuf::from(&args[0]), PathBuf::from(&args[1]));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let rt = ProcessRuntime::new(root, std::env::current_exe().unwrap()).unwrap();
        let mut env = BTreeMap::new();
        env.insert("PATH".to_string(), DEFAULT_PATH.to_string());
        let config = minik_kubelet::cri::ContainerConfig {
            pod_uid: "pod-1".into(),
            pod_key: "default/adopted".into(),
            name: "adopted".into(),
            argv: vec!["sleep".into(), "1000".into()],
            env,
            log_path: log,
            ..Default::default()
        };
        let status = rt.start_container(config).await.unwrap();
        let ContainerState::Running { pid, .. } = status.state else {
            return 1;
        };
        println!("{pid}");
        std::future::pending::<i32>().await
    })
}

/// `pod_containers` answers one pod's containers (a uid that is a prefix of another is not
/// confused with it), and their exits show up as they happen, without asking again.
async fn pod_containers_lists_one_pod_and_its_exits() {
    let fx = Fixture::new();
    let mut config = fx.config("quick", &["true"], &[]);
    config.pod_uid = "pod".into();
    let quick = fx.start(config).await;
    let mut config = fx.config("other", &["sleep", "1000"], &[]);
    config.pod_uid = "pod-x".into();
    let other = fx.start(config).await;
    fx.rt.wait_container(&quick).await.unwrap();

    let mine = fx.rt.pod_containers("pod");
    assert_eq!(mine.len(), 1, "{mine:?}");
    assert_eq!(
        (mine[0].id.as_str(), exit_code(&mine[0])),
        (quick.as_str(), Some(0))
    );
    let theirs = fx.rt.pod_containers("pod-x");
    assert_eq!(theirs.len(), 1, "{theirs:?}");
    assert_eq!(
        (theirs[0].id.as_str(), exit_code(&theirs[0])),
        (other.as_str(), None)
    );
    assert!(fx.rt.pod_containers("po").is_empty());

    let waiter = fx.rt.wait_container(&other);
    fx.rt.signal_container(&other, StopSignal::Kill).unwrap();
    waiter.await.unwrap();
    assert_eq!(exit_code(&fx.rt.pod_containers("pod-x")[0]), Some(137));
}
