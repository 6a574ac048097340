//! Measurement 7: the idle footprint, RSS and CPU of the whole stack with no pods.
//!
//! Kubernetes counterpart: k3s' resource profiling (docs.k3s.io/reference/resource-profiling: a
//! server with a workload at 1.6 GB and 6 % of a core) and etcd's RSS column. minik reads the same
//! numbers `top` does: `VmRSS` from `/proc/PID/status` and `utime + stime` from `/proc/PID/stat`,
//! summed over every component process (apiserver, scheduler, kubelet, endpoint-controller,
//! proxy, …). The process that supervises them (`minik up`, here the bench itself) is not counted.
//!
//! The goal is judged on the sum of `Pss` (`/proc/PID/smaps_rollup`), not of VmRSS: every
//! component is a process of the one `minik` binary, and VmRSS counts the code pages they share
//! once per process (ten times for a one-node cluster), while PSS splits each shared page between
//! the processes that map it, so the sum is the memory the cluster really occupies.
//!
//! The stack is first left to settle (its start-up writes and watches done), then CPU is sampled
//! over a window: 10 s, or 2 s with `--quick`. `one_process.rs` then measures the same cluster run
//! as one process (`minik up --one-process`), in a row of its own.

use std::time::{Duration, Instant};

use crate::error::Context;

use super::report::{ms, Row};
use super::Bench;
use minik_cluster::ClusterState;

/// The rows this measurement fills.
pub fn templates() -> Vec<Row> {
    vec![
        Row::new(
            "idle_memory",
            "7. idle footprint: memory (PSS) of all components",
            "≤ 50 MB",
            "k3s server 1.6 GB; etcd alone 48 MB",
        ),
        Row::new(
            "idle_cpu",
            "7. idle footprint: CPU of all components",
            "≤ 1 % of a core",
            "k3s server 6 % of a core",
        ),
    ]
}

/// Samples RSS and CPU time of every component.
pub async fn measure(ctx: &Bench, state: ClusterState) -> crate::Result<Vec<Row>> {
    tokio::time::sleep(ctx.size(Duration::from_millis(500), Duration::from_secs(2))).await;
    let window = ctx.size(Duration::from_secs(2), Duration::from_secs(10));
    let pids: Vec<(String, u32)> = state
        .components
        .iter()
        .map(|c| (c.name.clone(), c.pid))
        .collect();
    let ticks = clock_ticks()?;
    let before: Vec<u64> = pids
        .iter()
        .map(|(_, pid)| cpu_ticks(*pid))
        .collect::<crate::Result<_>>()?;
    let start = Instant::now();
    tokio::time::sleep(window).await;
    let after: Vec<u64> = pids
        .iter()
        .map(|(_, pid)| cpu_ticks(*pid))
        .collect::<crate::Result<_>>()?;
    let seconds = start.elapsed().as_secs_f64();
    let rss: Vec<u64> = pids
        .iter()
        .map(|(_, pid)| rss_kib(*pid))
        .collect::<crate::Result<_>>()?;
    // PSS splits the pages the five processes share (the one `minik` binary's code) between them;
    // RssAnon is what each process allocated itself. Both are reported beside the plain VmRSS sum.
    let pss_mb = pids
        .iter()
        .filter_map(|(_, pid)| rollup_kib(*pid, "Pss:"))
        .sum::<u64>() as f64
        / 1024.0;
    let anon_mb = pids
        .iter()
        .filter_map(|(_, pid)| status_kib(*pid, "RssAnon:"))
        .sum::<u64>() as f64
        / 1024.0;

    let total_mb = rss.iter().sum::<u64>() as f64 / 1024.0;
    let per_component: Vec<String> = pids
        .iter()
        .zip(&rss)
        .map(|((name, _), kib)| format!("{name} {:.1}", *kib as f64 / 1024.0))
        .collect();
    let mut memory = templates()
        .remove(0)
        .result(format!(
            "{pss_mb:.1} MB PSS, anonymous {anon_mb:.1} MB; VmRSS summed {total_mb:.1} MB ({})",
            per_component.join(", ")
        ))
        .value("total_mb", total_mb)
        .value("pss_mb", pss_mb)
        .value("anon_mb", anon_mb);
    for ((name, _), kib) in pids.iter().zip(&rss) {
        memory = memory.value(&format!("{name}_mb"), *kib as f64 / 1024.0);
    }
    let memory = memory.met(pss_mb <= 50.0);

    let used: Vec<f64> = before
        .iter()
        .zip(&after)
        .map(|(b, a)| a.saturating_sub(*b) as f64 / ticks)
        .collect();
    let percent = used.iter().sum::<f64>() / seconds * 100.0;
    let busiest = pids
        .iter()
        .zip(&used)
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|((name, _), s)| format!("busiest {name} {}", ms(s * 1e3)))
        .unwrap_or_default();
    let cpu = templates()
        .remove(1)
        .result(format!(
            "{percent:.2} % of a core over {seconds:.0} s ({busiest} of CPU)"
        ))
        .value("percent_of_a_core", percent)
        .value("window_s", seconds)
        .met(percent <= 1.0);
    Ok(vec![memory, cpu])
}

/// `VmRSS` of a process in KiB.
pub fn rss_kib(pid: u32) -> crate::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    parse_vm_rss(&status).with_context(|| format!("no VmRSS in /proc/{pid}/status"))
}

/// The `VmRSS:   12345 kB` line of `/proc/PID/status`.
fn parse_vm_rss(status: &str) -> Option<u64> {
    parse_kib(status, "VmRSS:")
}

/// A `Key:   12345 kB` line of a /proc file.
fn parse_kib(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with(key))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// A field of `/proc/PID/status` in KiB.
pub(super) fn status_kib(pid: u32, key: &str) -> Option<u64> {
    parse_kib(
        &std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?,
        key,
    )
}

/// A field of `/proc/PID/smaps_rollup` in KiB (`Pss:`).
pub(super) fn rollup_kib(pid: u32, key: &str) -> Option<u64> {
    parse_kib(
        &std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?,
        key,
    )
}

/// `utime + stime` of a process, in clock ticks.
pub fn cpu_ticks(pid: u32) -> crate::Result<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    parse_cpu_ticks(&stat).with_context(|| format!("cannot parse /proc/{pid}/stat"))
}

/// Fields 14 and 15 of `/proc/PID/stat`, counted after the `(comm)` field, which may hold spaces.
fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state), so utime (14) is index 11 and stime (15) index 12.
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// Clock ticks per second of `/proc/PID/stat` (`getconf CLK_TCK`): the kernel reports those times
/// in `USER_HZ`, which is 100 on every Linux architecture minik runs on.
pub fn clock_ticks() -> crate::Result<f64> {
    Ok(100.0)
}

/// The components plus the bench process itself, for CPU accounting of a measurement.
pub fn with_bench(components: &[(String, u32)]) -> Vec<(String, u32)> {
    let mut all = components.to_vec();
    all.push(("bench".to_string(), std::process::id()));
    all
}

/// `name X µs` per unit of work for each process that used CPU between two samples.
pub fn cpu_per_unit(
    processes: &[(String, u32)],
    before: &[f64],
    after: &[f64],
    units: f64,
) -> String {
    processes
        .iter()
        .zip(after.iter().zip(before))
        .map(|((name, _), (a, b))| (name, (a - b) * 1e6 / units.max(1.0)))
        .filter(|(_, us)| *us >= 1.0)
        .map(|(name, us)| format!("{name} {us:.0} µs"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// CPU seconds used so far by each of the given processes (0 for one that is gone).
pub fn cpu_seconds(pids: &[(String, u32)]) -> Vec<f64> {
    pids.iter()
        .map(|(_, pid)| cpu_ticks(*pid).unwrap_or(0) as f64 / 100.0)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// utime and stime are found even when the command name holds spaces and parentheses.
    #[test]
    fn cpu_ticks_are_read_after_the_command_name() {
        let stat = "42 (minik (x) y) S 1 42 42 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 4 0 1000 1 1";
        assert_eq!(parse_cpu_ticks(stat), Some(300));
    }

    /// VmRSS is read in kB.
    #[test]
    fn rss_is_read_from_the_status_file() {
        assert_eq!(
            parse_vm_rss("Name:\tminik\nVmRSS:\t   12345 kB\n"),
            Some(12345)
        );
        assert_eq!(parse_vm_rss("Name:\tminik\n"), None);
    }

    /// Our own process has a resident set and has used some CPU time.
    #[test]
    fn own_process_can_be_sampled() {
        assert!(rss_kib(std::process::id()).unwrap() > 0);
        assert!(cpu_ticks(std::process::id()).is_ok());
    }
}
