//! Integration tests of bind rewriting (`shim/bind_rewrite/`): real shims, real Python servers
//! binding the wildcard address, each landing on its own pod IP.
//!
//! Like `runtime.rs`, this binary has its own `main` (`harness = false`): run as `bind_rewrite shim
//! …` it is the shim the runtime starts. The tests skip (saying so) where the kernel has no
//! seccomp user notification, or python3 is missing.

#[allow(dead_code)] // shared with runtime.rs, which uses all of it
mod support;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use minik_kubelet::cri::Runtime;
use minik_kubelet::shim::bind_rewrite;
use support::*;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("shim") {
        std::process::exit(minik_kubelet::shim::main(args[2..].to_vec()));
    }
    run_tests(tests![
        two_wildcard_servers_on_one_port_each_get_their_pod_ip,
        containers_of_a_pod_and_its_execs_reach_it_on_localhost,
        a_rewritten_listener_serves_every_request_like_a_plain_one,
        static_busybox_httpds_on_one_port_each_get_their_pod_ip,
    ])
}

/// Two distinct pod IPs in a range no cluster of the tests uses, and a port free on the host.
fn pod_ips_and_port() -> (Ipv4Addr, Ipv4Addr, u16) {
    let third = (std::process::id() % 250) as u8 + 1;
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    (
        Ipv4Addr::new(127, 251, third, 1),
        Ipv4Addr::new(127, 251, third, 2),
        port,
    )
}

fn usable() -> bool {
    if let Err(why) = bind_rewrite::support() {
        println!("skipped: no bind rewriting here ({why})");
        return false;
    }
    if std::process::Command::new("python3")
        .arg("-V")
        .output()
        .is_err()
    {
        println!("skipped: python3 is missing");
        return false;
    }
    true
}

/// `GET /path` over HTTP/1.0; the body.
fn get(addr: SocketAddr, path: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: x\r\n\r\n")?;
    let mut text = String::new();
    stream.read_to_string(&mut text)?;
    Ok(text
        .split_once("\r\n\r\n")
        .map_or(text.clone(), |(_, b)| b.to_string()))
}

/// Waits until `GET addr/who` answers (the server is up).
async fn wait_serving(addr: SocketAddr) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match get(addr, "/who") {
            Ok(body) => return body,
            Err(err) => assert!(Instant::now() < deadline, "{addr} never served: {err}"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A directory with a file `who` holding `name`, and a `python3 -m http.server` config serving it.
fn server(
    fx: &Fixture,
    name: &str,
    port: u16,
    bind: Option<&str>,
    pod_ip: Ipv4Addr,
) -> minik_kubelet::cri::ContainerConfig {
    let dir = fx.tmp.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("who"), name).unwrap();
    let port = port.to_string();
    let mut argv = vec!["python3", "-m", "http.server", &port, "--directory"];
    let dir = dir.to_string_lossy().into_owned();
    argv.push(&dir);
    if let Some(bind) = bind {
        argv.extend(["--bind", bind]);
    }
    let mut config = fx.config(name, &argv, &[]);
    config.pod_ip = Some(pod_ip);
    config
}

/// Whether anything listens on the host's wildcard addresses at `port` (`/proc/net/tcp*`).
fn wildcard_listener(port: u16) -> bool {
    let (v4, v6) = (
        format!("00000000:{port:04X}"),
        format!("{}:{port:04X}", "0".repeat(32)),
    );
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|table| {
        std::fs::read_to_string(table).unwrap().lines().any(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            f.len() > 3 && f[3] == "0A" && (f[1] == v4 || f[1] == v6)
        })
    })
}

async fn two_wildcard_servers_on_one_port_each_get_their_pod_ip() {
    if !usable() {
        return;
    }
    let fx = Fixture::new();
    let (ip_a, ip_b, port) = pod_ips_and_port();
    // `a` binds `::` (http.server's default, a dual-stack socket), `b` binds 0.0.0.0.
    fx.start(server(&fx, "a", port, None, ip_a)).await;
    fx.start(server(&fx, "b", port, Some("0.0.0.0"), ip_b))
        .await;
    assert_eq!(wait_serving(SocketAddr::new(ip_a.into(), port)).await, "a");
    assert_eq!(wait_serving(SocketAddr::new(ip_b.into(), port)).await, "b");
    assert!(!wildcard_listener(port), "a wildcard listener on {port}");
    let refused = TcpStream::connect(("127.0.0.1", port)).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
}

async fn containers_of_a_pod_and_its_execs_reach_it_on_localhost() {
    if !usable() {
        return;
    }
    let fx = Fixture::new();
    let (ip, _, port) = pod_ips_and_port();
    let web = fx
        .start(server(&fx, "web", port, Some("0.0.0.0"), ip))
        .await;
    wait_serving(SocketAddr::new(ip.into(), port)).await;
    let fetch = format!(
        "import urllib.request; print('got', urllib.request.urlopen('http://127.0.0.1:{port}/who').read().decode())"
    );
    let mut client = fx.config("client", &["python3", "-c", &fetch], &[]);
    client.pod_ip = Some(ip);
    let id = fx.start(client).await;
    let status = fx.rt.wait_container(&id).await.unwrap();
    assert_eq!(
        exit_code(&status),
        Some(0),
        "{:?}",
        std::fs::read_to_string(fx.log("client"))
    );
    wait_for_log(&fx.log("client"), "got web").await;

    let argv = vec!["python3".to_string(), "-c".to_string(), fetch];
    let exec = fx
        .rt
        .exec_sync(&web, argv, Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!((exec.exit_code, exec.output.trim()), (0, "got web"));
}

/// A listener whose bind was rewritten serves request after request from its pod IP, as the same
/// server bound to its pod IP by hand does: after the bind the socket is the process's own. Prints
/// the requests per second of both (speed is the benchmark's to judge, not a test's: on a loaded
/// machine the two rates move apart by whatever else runs between the rounds).
async fn a_rewritten_listener_serves_every_request_like_a_plain_one() {
    if !usable() {
        return;
    }
    let fx = Fixture::new();
    let (ip_a, ip_b, port) = pod_ips_and_port();
    fx.start(server(&fx, "rewritten", port, Some("0.0.0.0"), ip_a))
        .await;
    let mut plain = server(&fx, "plain", port, Some(&ip_b.to_string()), ip_b);
    plain.pod_ip = None;
    fx.start(plain).await;
    let who_a = wait_serving(SocketAddr::new(ip_a.into(), port)).await;
    let who_b = wait_serving(SocketAddr::new(ip_b.into(), port)).await;
    assert_ne!(who_a, who_b, "two servers, one per pod IP");
    let rate = |ip: Ipv4Addr, who: &str| {
        let addr = SocketAddr::new(ip.into(), port);
        let started = Instant::now();
        let n = 200;
        for _ in 0..n {
            assert_eq!(
                get(addr, "/who").unwrap(),
                who,
                "answered by the server of {ip}"
            );
        }
        n as f64 / started.elapsed().as_secs_f64()
    };
    let (mut rewritten, mut plain) = (0f64, 0f64);
    for _ in 0..3 {
        rewritten = rewritten.max(rate(ip_a, &who_a));
        plain = plain.max(rate(ip_b, &who_b));
    }
    println!("requests/s (best of 3 x 200): rewritten bind {rewritten:.0}, plain bind {plain:.0}");
}

/// A statically linked busybox (no libc to preload into: the reason for seccomp) serving
/// `httpd -p PORT`, its wildcard address, twice.
async fn static_busybox_httpds_on_one_port_each_get_their_pod_ip() {
    if !usable() {
        return;
    }
    let Some(busybox) = ["/usr/bin/busybox", "/bin/busybox"]
        .into_iter()
        .find(|path| std::path::Path::new(path).exists())
    else {
        println!("skipped: no busybox (Debian's busybox-static)");
        return;
    };
    let fx = Fixture::new();
    let (ip_a, ip_b, port) = pod_ips_and_port();
    for (name, ip) in [("a", ip_a), ("b", ip_b)] {
        let dir = fx.tmp.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("who"), name).unwrap();
        let (port, dir) = (port.to_string(), dir.to_string_lossy().into_owned());
        let argv = [busybox, "httpd", "-f", "-p", &port, "-h", &dir];
        let mut config = fx.config(name, &argv, &[]);
        config.pod_ip = Some(ip);
        fx.start(config).await;
    }
    assert_eq!(wait_serving(SocketAddr::new(ip_a.into(), port)).await, "a");
    assert_eq!(wait_serving(SocketAddr::new(ip_b.into(), port)).await, "b");
    assert!(!wildcard_listener(port), "a wildcard listener on {port}");
}
