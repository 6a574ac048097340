//! `minik image agnhost`: the subcommands of upstream's e2e test image that its tests use.
//!
//! Kubernetes counterpart: `test/images/agnhost` (`netexec/netexec.go`,
//! `serve-hostname/serve_hostname.go`, `pause/pause.go`). minik implements:
//! - `netexec [--http-port=8080]`: `/` (`NOW: <time>`), `/hostname`, `/echo?msg=…`,
//!   `/shell?cmd=…` (runs `sh -c`, answers `{"output": …}`), `/healthz`, `/exit?code=…`;
//! - `serve-hostname [--port=9376]`: answers every request with the hostname;
//! - `pause`: waits for SIGTERM.
//!
//! The hostname is the pod's name, as in a pod whose `hostname` is not set. It binds `POD_IP`.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use axum::extract::Query;
use axum::routing::get;
use axum::Router;

use super::lifecycle::{event, sigterm_stream, until_exit, OnSigterm};

/// The port flag of `args` (`--http-port=8080` or `--http-port 8080`), else `default`.
fn port_flag(args: &[String], flag: &str, default: u16) -> Result<u16, String> {
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let value = if let Some(v) = arg.strip_prefix(&format!("{flag}=")) {
            Some(v.to_string())
        } else if arg == flag {
            iter.next().cloned()
        } else {
            None
        };
        if let Some(value) = value {
            return value
                .parse()
                .map_err(|_| format!("{flag}: {value:?} is not a port"));
        }
    }
    Ok(default)
}

/// Entry point: `args` are what follows `minik image agnhost`.
pub fn run(args: Vec<String>) -> i32 {
    let sub = args.first().map(String::as_str).unwrap_or("pause");
    let port = match sub {
        "netexec" => port_flag(&args, "--http-port", 8080),
        "serve-hostname" => port_flag(&args, "--port", 9376),
        "pause" => return super::lifecycle::run_sleep(),
        other => {
            eprintln!("minik image agnhost: subcommand {other:?} is not implemented (netexec, serve-hostname, pause)");
            return 2;
        }
    };
    let port = match port {
        Ok(port) => port,
        Err(message) => {
            eprintln!("minik image agnhost: {message}");
            return 2;
        }
    };
    let ip: IpAddr = std::env::var("POD_IP")
        .ok()
        .and_then(|ip| ip.parse().ok())
        .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
    let hostname = std::env::var("POD_NAME").unwrap_or_else(|_| "localhost".into());
    let app = match sub {
        "netexec" => netexec(hostname),
        _ => Router::new().fallback(move || {
            let hostname = hostname.clone();
            async move { hostname }
        }),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("minik image agnhost: {error}");
            return 1;
        }
    };
    runtime.block_on(serve(SocketAddr::new(ip, port), app))
}

async fn serve(addr: SocketAddr, app: Router) -> i32 {
    let Ok(mut sigterm) = sigterm_stream() else {
        return 1;
    };
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("minik image agnhost: cannot listen on {addr}: {error}");
            return 1;
        }
    };
    event("started", &format!("addr={addr}"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    until_exit(&mut sigterm, OnSigterm::Exit).await;
    0
}

fn netexec(hostname: String) -> Router {
    Router::new()
        .route(
            "/",
            get(|| async { format!("NOW: {}", jiff::Timestamp::now()) }),
        )
        .route("/hostname", get(move || async move { hostname }))
        .route(
            "/echo",
            get(|Query(q): Query<HashMap<String, String>>| async move {
                q.get("msg").cloned().unwrap_or_default()
            }),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/shell",
            get(|Query(q): Query<HashMap<String, String>>| async move {
                let cmd = q
                    .get("shellCommand")
                    .or_else(|| q.get("cmd"))
                    .cloned()
                    .unwrap_or_default();
                let output = tokio::process::Command::new("sh")
                    .arg("-c")
                    .arg(&cmd)
                    .output()
                    .await;
                let text = match output {
                    Ok(out) => String::from_utf8_lossy(&out.stdout).into_owned(),
                    Err(error) => error.to_string(),
                };
                serde_json::json!({ "output": text }).to_string()
            }),
        )
        .route(
            "/exit",
            get(|Query(q): Query<HashMap<String, String>>| async move {
                let code: i32 = q.get("code").and_then(|c| c.parse().ok()).unwrap_or(0);
                std::process::exit(code);
                #[allow(unreachable_code)]
                String::new()
            }),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_flags_take_both_spellings_and_a_default() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            port_flag(&args(&["netexec", "--http-port=8081"]), "--http-port", 8080),
            Ok(8081)
        );
        assert_eq!(
            port_flag(
                &args(&["netexec", "--http-port", "9000"]),
                "--http-port",
                8080
            ),
            Ok(9000)
        );
        assert_eq!(
            port_flag(&args(&["serve-hostname"]), "--port", 9376),
            Ok(9376)
        );
        assert!(port_flag(&args(&["netexec", "--http-port=x"]), "--http-port", 8080).is_err());
    }
}
