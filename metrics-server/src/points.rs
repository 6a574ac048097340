//! The metrics store: the last two scrapes of every node and container, and the usage between them.
//!
//! Kubernetes counterpart: metrics-server's `pkg/storage` (`nodeStorage`, `podStorage`): each
//! scrape's cumulative CPU (`usageCoreNanoSeconds`) is kept with its timestamp next to the
//! previous one, and the CPU usage served is their difference over the time between them (the
//! `window`); memory is the latest working set. A container seen once, or restarted since (its
//! start time changed, its counter went back), has no usage yet; a pod is served only when every
//! container it reported has one, as upstream.
//!
//! minik simplifies: no `--metric-resolution`-based staleness checks beyond dropping what the
//! latest scrape of a node did not report.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use jiff::Timestamp;
use minik_kubelet::stats::{CpuStats, MemoryStats, Summary};

/// One reading of a node or a container.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Point {
    /// When the kubelet measured it.
    pub time: Timestamp,
    /// Cumulative CPU, core-nanoseconds.
    pub cpu_total: u64,
    /// Working set, bytes.
    pub memory: u64,
    /// When the container started (`None` for a node).
    pub start: Option<Timestamp>,
}

/// The usage metrics-server serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Usage {
    /// CPU, billionths of a core.
    pub nano_cores: u64,
    /// Working set, bytes.
    pub memory: u64,
    /// The newer reading's time.
    pub time: Timestamp,
    /// The time between the two readings.
    pub window: Duration,
}

/// The usage between two readings of the same thing, if they make a rate.
pub fn usage(previous: &Point, current: &Point) -> Option<Usage> {
    let window = current.time.duration_since(previous.time);
    let window = Duration::try_from(window).ok().filter(|w| !w.is_zero())?;
    if current.start != previous.start || current.cpu_total < previous.cpu_total {
        return None;
    }
    let cpu = u128::from(current.cpu_total - previous.cpu_total);
    Some(Usage {
        nano_cores: (cpu * 1_000_000_000 / window.as_nanos()) as u64,
        memory: current.memory,
        time: current.time,
        window,
    })
}

/// A reading from the Summary API's blocks (`None` without a time or a cumulative counter).
pub fn point(
    cpu: Option<&CpuStats>,
    memory: Option<&MemoryStats>,
    start: Option<Timestamp>,
) -> Option<Point> {
    let cpu = cpu?;
    Some(Point {
        time: cpu.time?,
        cpu_total: cpu.usage_core_nano_seconds?,
        memory: memory.and_then(|m| m.working_set_bytes).unwrap_or(0),
        start,
    })
}

/// The latest reading and the one before it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pair {
    previous: Option<Point>,
    current: Point,
}

impl Pair {
    /// The new reading after `old` (kept as the previous one unless it is the same reading).
    fn next(old: Option<&Pair>, current: Point) -> Pair {
        let previous = match old {
            Some(old) if old.current.time == current.time => old.previous,
            Some(old) => Some(old.current),
            None => None,
        };
        Pair { previous, current }
    }

    fn usage(&self) -> Option<Usage> {
        usage(self.previous.as_ref()?, &self.current)
    }
}

/// `(namespace, name)` of a pod.
pub type PodKey = (String, String);

/// Every node's and pod's last two readings.
#[derive(Debug, Default)]
pub struct Store {
    nodes: HashMap<String, Pair>,
    pods: HashMap<PodKey, BTreeMap<String, Pair>>,
}

impl Store {
    /// Takes in one scrape of every node that answered; what they did not report is dropped.
    pub fn record(&mut self, summaries: &[Summary]) {
        let mut nodes = HashMap::new();
        let mut pods: HashMap<PodKey, BTreeMap<String, Pair>> = HashMap::new();
        for summary in summaries {
            let node = &summary.node;
            if let Some(current) = point(node.cpu.as_ref(), node.memory.as_ref(), None) {
                let pair = Pair::next(self.nodes.get(&node.node_name), current);
                nodes.insert(node.node_name.clone(), pair);
            }
            for pod in &summary.pods {
                let key = (pod.pod_ref.namespace.clone(), pod.pod_ref.name.clone());
                let old = self.pods.get(&key);
                let containers = pods.entry(key.clone()).or_default();
                for c in &pod.containers {
                    let Some(current) = point(c.cpu.as_ref(), c.memory.as_ref(), c.start_time)
                    else {
                        continue;
                    };
                    let pair = Pair::next(old.and_then(|o| o.get(&c.name)), current);
                    containers.insert(c.name.clone(), pair);
                }
            }
        }
        self.nodes = nodes;
        self.pods = pods;
    }

    /// A node's usage, once it has been scraped twice.
    pub fn node(&self, name: &str) -> Option<Usage> {
        self.nodes.get(name)?.usage()
    }

    /// A pod's containers' usage, once every one of them has a rate.
    pub fn pod(&self, namespace: &str, name: &str) -> Option<Vec<(String, Usage)>> {
        let containers = self.pods.get(&(namespace.to_string(), name.to_string()))?;
        containers
            .iter()
            .map(|(name, pair)| Some((name.clone(), pair.usage()?)))
            .collect()
    }

    /// Every pod with readings.
    pub fn pod_keys(&self) -> Vec<PodKey> {
        let mut keys: Vec<PodKey> = self.pods.keys().cloned().collect();
        keys.sort();
        keys
    }

    /// Every node with readings.
    pub fn node_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.nodes.keys().cloned().collect();
        names.sort();
        names
    }
}

/// A CPU quantity as metrics-server writes it: nanocores (`250000000n`).
pub fn cpu_quantity(nano_cores: u64) -> String {
    format!("{nano_cores}n")
}

/// A memory quantity in the binary SI form upstream uses (`1536Ki`, or bytes when not whole KiB).
pub fn memory_quantity(bytes: u64) -> String {
    if bytes.is_multiple_of(1024) {
        format!("{}Ki", bytes / 1024)
    } else {
        bytes.to_string()
    }
}

#[cfg(test)]
#[path = "points_tests.rs"]
mod tests;
