//! Resource usage: each container's CPU and memory measured from `/proc`, served as the Summary API.
//!
//! Kubernetes counterpart: cAdvisor's housekeeping and the kubelet's Summary API
//! (`pkg/kubelet/server/stats`, `GET /stats/summary`, types in `k8s.io/kubelet/pkg/apis/stats/
//! v1alpha1`): per node, pod and container a `cpu` (`usageNanoCores`, the cumulative
//! `usageCoreNanoSeconds`) and a `memory` (`workingSetBytes`, `rssBytes`) block. metrics-server
//! scrapes it and turns the cumulative CPU into a rate itself.
//!
//! minik simplifies: no cgroups, so a container's usage is the sum over its process tree (the
//! processes [`crate::pids::pod_processes`] assigns to it): CPU is `utime+stime+cutime+cstime`
//! (children reaped by the tree count in their parent's `c*time`), memory is the RSS, which also
//! stands for the working set. One sampler task reads `/proc` every [`PERIOD`], keeps the latest
//! [`Summary`] for the server and hands each sample to the memory-limit watchdog
//! ([`crate::memory`]). No filesystem, network or swap statistics.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::cri::{ContainerState, Runtime};
use crate::pids::{pod_processes, Proc, RunningContainer};

/// How often `/proc` is read (cAdvisor's housekeeping is 10–15 s; metrics-server's default
/// resolution is 15 s, so one second is more than fresh enough and keeps the watchdog quick).
pub const PERIOD: Duration = Duration::from_secs(1);

/// `/proc` counts CPU in USER_HZ ticks, which Linux fixes at 100 a second for every architecture.
const NANOS_PER_TICK: u64 = 10_000_000;

/// RSS is counted in pages: 4 KiB on the platforms minik runs on.
const PAGE_SIZE: u64 = 4096;

/// CPU usage at one instant (upstream `CPUStats`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuStats {
    /// When it was measured.
    pub time: Option<Timestamp>,
    /// The rate since the previous sample, in billionths of a core.
    pub usage_nano_cores: Option<u64>,
    /// Cumulative CPU time since the container started, in core-nanoseconds.
    pub usage_core_nano_seconds: Option<u64>,
}

/// Memory usage at one instant (upstream `MemoryStats`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryStats {
    /// When it was measured.
    pub time: Option<Timestamp>,
    /// What the node has left (node level only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_bytes: Option<u64>,
    /// Total usage.
    pub usage_bytes: Option<u64>,
    /// What cannot be reclaimed: what limits and `kubectl top` are about.
    pub working_set_bytes: Option<u64>,
    /// Resident anonymous and file memory.
    pub rss_bytes: Option<u64>,
}

/// The node's own usage.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStats {
    /// `node-1`.
    pub node_name: String,
    /// The whole machine's CPU (every node of a minik cluster shares one machine).
    pub cpu: Option<CpuStats>,
    /// The whole machine's memory.
    pub memory: Option<MemoryStats>,
}

/// Which pod a `PodStats` is about.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PodReference {
    /// Its name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// Its uid.
    pub uid: String,
}

/// One container's usage.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerStats {
    /// The container's name in the pod spec.
    pub name: String,
    /// When its current attempt started.
    pub start_time: Option<Timestamp>,
    /// Its CPU.
    pub cpu: Option<CpuStats>,
    /// Its memory.
    pub memory: Option<MemoryStats>,
}

/// One pod's usage: its running containers, and their sum.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStats {
    /// The pod.
    pub pod_ref: PodReference,
    /// Its earliest running container's start.
    pub start_time: Option<Timestamp>,
    /// Each running container.
    pub containers: Vec<ContainerStats>,
    /// The containers' sum.
    pub cpu: Option<CpuStats>,
    /// The containers' sum.
    pub memory: Option<MemoryStats>,
}

/// `GET /stats/summary`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The node.
    pub node: NodeStats,
    /// Every pod with a running container.
    pub pods: Vec<PodStats>,
}

/// One process's counters from `/proc/PID/stat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcUsage {
    /// Its place in the process tree.
    pub proc: Proc,
    /// `utime + stime + cutime + cstime`, in ticks.
    pub cpu_ticks: u64,
    /// Resident set size, in pages.
    pub rss_pages: u64,
}

/// Parses a `/proc/PID/stat` line (fields counted from the last `)`, the name may hold spaces);
/// `None` for a zombie, whose counters no longer mean anything.
pub fn parse_stat(pid: u32, text: &str) -> Option<ProcUsage> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let number = |index: usize| fields.get(index)?.parse::<u64>().ok();
    if fields.first()? == &"Z" {
        return None;
    }
    // Field N of proc(5) is at index N - 3 here: ppid 4, session 6, utime..cstime 14..17, rss 24.
    Some(ProcUsage {
        proc: Proc {
            pid,
            ppid: number(1)? as u32,
            session: number(3)? as u32,
        },
        cpu_ticks: number(11)? + number(12)? + number(13)? + number(14)?,
        rss_pages: number(21)?,
    })
}

/// One container's cumulative usage: CPU in nanoseconds and RSS in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// Cumulative CPU time, nanoseconds.
    pub cpu_nanos: u64,
    /// Resident memory, bytes.
    pub rss_bytes: u64,
}

/// The usage of `container`'s process tree (its main process, what is in its shim's session or
/// below its shim), from one read of the process table.
pub fn container_usage(procs: &[ProcUsage], container: &RunningContainer) -> Usage {
    let table: Vec<Proc> = procs.iter().map(|p| p.proc).collect();
    let one = [RunningContainer {
        pod_uid: "tree".into(),
        ..container.clone()
    }];
    let tree = pod_processes(&table, &one)
        .remove("tree")
        .unwrap_or_default();
    procs
        .iter()
        .filter(|p| tree.contains(&p.proc.pid))
        .fold(Usage::default(), |sum, p| Usage {
            cpu_nanos: sum.cpu_nanos + p.cpu_ticks * NANOS_PER_TICK,
            rss_bytes: sum.rss_bytes + p.rss_pages * PAGE_SIZE,
        })
}

/// The CPU rate between two cumulative readings, in nanocores (0 if the counter went back,
/// as it does when a child exits unreaped).
pub fn nano_cores(before: u64, after: u64, elapsed: Duration) -> u64 {
    let nanos = elapsed.as_nanos().max(1);
    (u128::from(after.saturating_sub(before)) * 1_000_000_000 / nanos) as u64
}

/// Every process `/proc` shows, with its counters.
pub fn read_procs() -> Vec<ProcUsage> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            parse_stat(pid, &text)
        })
        .collect()
}

/// One running container, as the sampler sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Sampled {
    /// The runtime's id (`{pod_uid}-{name}-{attempt}`).
    pub id: String,
    /// The container's name.
    pub name: String,
    /// Its pod and main process.
    pub container: RunningContainer,
    /// When it started.
    pub started_at: Timestamp,
    /// Its usage now.
    pub usage: Usage,
    /// Its CPU rate since the previous sample (`None` on its first).
    pub nano_cores: Option<u64>,
}

/// The latest [`Summary`], shared by the sampler and the server.
#[derive(Clone, Default)]
pub struct StatsCache(Arc<Mutex<Summary>>);

impl StatsCache {
    /// The latest summary.
    pub fn summary(&self) -> Summary {
        self.0.lock().map(|s| s.clone()).unwrap_or_default()
    }

    fn set(&self, summary: Summary) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = summary;
        }
    }
}

/// Builds the summary from one sample (pure: the sampler's I/O is done).
pub fn summarize(node: NodeStats, sampled: &[Sampled], now: Timestamp) -> Summary {
    let mut pods: Vec<PodStats> = Vec::new();
    for s in sampled {
        let (namespace, name) = s
            .container
            .pod_key
            .split_once('/')
            .unwrap_or(("default", s.container.pod_key.as_str()));
        let index = match pods
            .iter()
            .position(|p| p.pod_ref.uid == s.container.pod_uid)
        {
            Some(index) => index,
            None => {
                pods.push(PodStats {
                    pod_ref: PodReference {
                        name: name.into(),
                        namespace: namespace.into(),
                        uid: s.container.pod_uid.clone(),
                    },
                    ..PodStats::default()
                });
                pods.len() - 1
            }
        };
        pods[index].containers.push(ContainerStats {
            name: s.name.clone(),
            start_time: Some(s.started_at),
            cpu: Some(cpu(now, s.nano_cores, s.usage.cpu_nanos)),
            memory: Some(memory(now, s.usage.rss_bytes, None)),
        });
    }
    for pod in &mut pods {
        let sum = |f: &dyn Fn(&ContainerStats) -> Option<u64>| -> Option<u64> {
            pod.containers.iter().map(f).sum()
        };
        let cores = sum(&|c| c.cpu.as_ref()?.usage_nano_cores);
        let total = sum(&|c| c.cpu.as_ref()?.usage_core_nano_seconds).unwrap_or(0);
        let rss = sum(&|c| c.memory.as_ref()?.rss_bytes).unwrap_or(0);
        pod.start_time = pod.containers.iter().filter_map(|c| c.start_time).min();
        pod.cpu = Some(cpu(now, cores, total));
        pod.memory = Some(memory(now, rss, None));
    }
    Summary { node, pods }
}

fn cpu(now: Timestamp, nano_cores: Option<u64>, total: u64) -> CpuStats {
    CpuStats {
        time: Some(now),
        usage_nano_cores: nano_cores,
        usage_core_nano_seconds: Some(total),
    }
}

fn memory(now: Timestamp, working_set: u64, available: Option<u64>) -> MemoryStats {
    MemoryStats {
        time: Some(now),
        available_bytes: available,
        usage_bytes: Some(working_set),
        working_set_bytes: Some(working_set),
        rss_bytes: Some(working_set),
    }
}

/// The sampler: reads `/proc` every [`PERIOD`], publishes the summary in `cache` and hands
/// each sample to `on_sample` (the memory watchdog), until `shutdown`.
pub async fn run(
    runtime: Arc<dyn Runtime>,
    node_name: String,
    cache: StatsCache,
    mut on_sample: impl FnMut(&[Sampled]) + Send,
    shutdown: CancellationToken,
) {
    let mut previous: HashMap<String, (Instant, u64)> = HashMap::new();
    let mut node_previous: Option<(Instant, u64)> = None;
    let mut tick = tokio::time::interval(PERIOD);
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tick.tick() => {}
        }
        let started = Instant::now();
        let sampled = sample(runtime.as_ref(), &mut previous);
        let node = node_stats(&node_name, &mut node_previous);
        cache.set(summarize(node, &sampled, Timestamp::now()));
        on_sample(&sampled);
        tracing::debug!(containers = sampled.len(), took = ?started.elapsed(), "sampled usage");
    }
}

/// Reads the running containers' usage; `previous` carries each one's last cumulative CPU.
fn sample(runtime: &dyn Runtime, previous: &mut HashMap<String, (Instant, u64)>) -> Vec<Sampled> {
    let running: Vec<_> = runtime
        .list_containers()
        .into_iter()
        .filter_map(|c| match c.state {
            ContainerState::Running { pid, started_at } => Some((c, pid, started_at)),
            ContainerState::Exited { .. } => None,
        })
        .collect();
    if running.is_empty() {
        previous.clear();
        return Vec::new();
    }
    let procs = read_procs();
    let now = Instant::now();
    let sampled: Vec<Sampled> = running
        .into_iter()
        .map(|(status, pid, started_at)| {
            let container = RunningContainer {
                pod_key: status.config.pod_key.clone(),
                pod_uid: status.config.pod_uid.clone(),
                pid,
            };
            let usage = container_usage(&procs, &container);
            let nano_cores = previous
                .get(&status.id)
                .map(|(at, before)| nano_cores(*before, usage.cpu_nanos, now - *at));
            Sampled {
                id: status.id,
                name: status.config.name,
                container,
                started_at,
                usage,
                nano_cores,
            }
        })
        .collect();
    previous.clear();
    previous.extend(
        sampled
            .iter()
            .map(|s| (s.id.clone(), (now, s.usage.cpu_nanos))),
    );
    sampled
}

/// The machine's CPU (`/proc/stat`: everything but idle and iowait) and memory (`/proc/meminfo`).
fn node_stats(node_name: &str, previous: &mut Option<(Instant, u64)>) -> NodeStats {
    let now = Timestamp::now();
    let busy = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|text| busy_ticks(&text))
        .map(|ticks| ticks * NANOS_PER_TICK);
    let cpu_stats = busy.map(|total| {
        let at = Instant::now();
        let rate = previous.map(|(then, before)| nano_cores(before, total, at - then));
        *previous = Some((at, total));
        cpu(now, rate, total)
    });
    let memory_stats = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            let total = meminfo_bytes(&text, "MemTotal")?;
            let available = meminfo_bytes(&text, "MemAvailable")?;
            Some(memory(
                now,
                total.saturating_sub(available),
                Some(available),
            ))
        });
    NodeStats {
        node_name: node_name.to_string(),
        cpu: cpu_stats,
        memory: memory_stats,
    }
}

/// The busy ticks of `/proc/stat`'s `cpu` line (user nice system idle iowait irq softirq steal).
pub fn busy_ticks(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|f| f.parse().ok())
        .collect();
    let all: u64 = fields.iter().sum();
    Some(all - fields.get(3)? - fields.get(4).copied().unwrap_or(0))
}

/// A `/proc/meminfo` entry in bytes (`MemTotal:  16303212 kB`).
pub fn meminfo_bytes(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.split(':').next() == Some(key))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
#[path = "stats_tests.rs"]
mod tests;
