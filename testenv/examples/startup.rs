//! Measures how long an ephemeral minik takes from "start" to its first successful request (a
//! kube-rs list of namespaces as the admin), 20 runs, and prints the median and the spread.
//!
//! `cargo run -p minik-testenv --example startup` (components in-process), or with
//! `-- --processes target/debug/minik` (components as processes, as `minik up --ephemeral`).

use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use minik_testenv::{Options, TestEnv};

const RUNS: usize = 20;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let processes = match args.get(1).map(String::as_str) {
        Some("--processes") => Some(args.get(2).ok_or("--processes needs a path")?.into()),
        _ => None,
    };
    let mut times = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let started = Instant::now();
        let options = Options {
            processes: processes.clone(),
            ..Options::default()
        };
        let env = TestEnv::start_with(options).await?;
        let namespaces: Api<Namespace> = Api::all(env.client.clone());
        namespaces.list(&ListParams::default()).await?;
        times.push(started.elapsed());
        env.stop().await;
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let mode = if processes.is_some() {
        "processes"
    } else {
        "in-process"
    };
    println!(
        "ephemeral minik ({mode}), start to first successful request over {RUNS} runs: p50 {:.0} ms, min {:.0} ms, max {:.0} ms",
        ms(times[RUNS / 2]),
        ms(times[0]),
        ms(times[RUNS - 1])
    );
    Ok(())
}
