//! The benchmark's results: one [`Row`] per figure, percentiles, the machine, the table and JSON.
//!
//! Kubernetes counterpart: the measurement summaries of perf-tests' ClusterLoader2
//! (`clusterloader2/pkg/measurement/util`, `PerfData` with `Perc50`/`Perc90`/`Perc99` data items)
//! and scheduler_perf's `DataItem`s. minik prints one table (measurement, result, target, anchor)
//! and, with `--output json`, the same rows plus the raw numbers behind each one.
//!
//! Percentiles are nearest-rank over the sorted samples (what CL2 does), so p99 of 200 samples is
//! the 198th value: with few samples p99 is close to the maximum, which the row says by giving `n`.

use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

/// One line of the table.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    /// A stable identifier for scripts (`pod_startup_sequential`, …).
    pub id: &'static str,
    /// What was measured, for people.
    pub measurement: String,
    /// The figure, formatted (`p50 2.1 ms, p99 4.0 ms (n=200)`), or `error: …`.
    pub result: String,
    /// The target, formatted (`p50 ≤ 10 ms, p99 ≤ 50 ms`).
    pub target: String,
    /// Whether the target was met (`None`: no target, or the measurement failed).
    pub met: Option<bool>,
    /// The published number to compare with.
    pub anchor: String,
    /// The raw numbers (milliseconds, counts, rates) behind `result`.
    pub values: Map<String, Value>,
}

impl Row {
    /// A row with its texts; add numbers with [`Row::value`] and the verdict with [`Row::met`].
    pub fn new(id: &'static str, measurement: &str, target: &str, anchor: &str) -> Row {
        Row {
            id,
            measurement: measurement.to_string(),
            result: String::new(),
            target: target.to_string(),
            met: None,
            anchor: anchor.to_string(),
            values: Map::new(),
        }
    }

    /// Sets the formatted result.
    pub fn result(mut self, text: impl Into<String>) -> Row {
        self.result = text.into();
        self
    }

    /// Records a raw number (rounded to 3 decimals so the JSON stays readable).
    pub fn value(mut self, key: &str, number: f64) -> Row {
        let rounded = (number * 1000.0).round() / 1000.0;
        if let Some(n) = serde_json::Number::from_f64(rounded) {
            self.values.insert(key.to_string(), Value::Number(n));
        }
        self
    }

    /// Records the percentiles of `stats` under `prefix_p50`, `prefix_p99`, … (milliseconds).
    pub fn stats(self, prefix: &str, stats: &Stats) -> Row {
        self.value(&format!("{prefix}p50_ms"), stats.p50_ms())
            .value(&format!("{prefix}p90_ms"), stats.percentile_ms(90.0))
            .value(&format!("{prefix}p99_ms"), stats.p99_ms())
            .value(&format!("{prefix}max_ms"), stats.max_ms())
            .value(&format!("{prefix}n"), stats.len() as f64)
    }

    /// Sets whether the target was met.
    pub fn met(mut self, met: bool) -> Row {
        self.met = Some(met);
        self
    }

    /// The row for a measurement that could not run.
    pub fn failed(mut self, error: &crate::Error) -> Row {
        self.result = format!("error: {error}");
        self.met = None;
        self
    }
}

/// Latency samples.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    sorted_us: Vec<f64>,
}

impl Stats {
    /// Sorts the samples once.
    pub fn new(samples: impl IntoIterator<Item = Duration>) -> Stats {
        let mut sorted_us: Vec<f64> = samples.into_iter().map(|d| d.as_secs_f64() * 1e6).collect();
        sorted_us.sort_by(f64::total_cmp);
        Stats { sorted_us }
    }

    /// How many samples.
    pub fn len(&self) -> usize {
        self.sorted_us.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.sorted_us.is_empty()
    }

    /// The nearest-rank percentile in microseconds (0 when empty).
    pub fn percentile_us(&self, p: f64) -> f64 {
        if self.sorted_us.is_empty() {
            return 0.0;
        }
        let rank = ((p / 100.0) * self.sorted_us.len() as f64).ceil() as usize;
        self.sorted_us[rank.clamp(1, self.sorted_us.len()) - 1]
    }

    /// The percentile in milliseconds.
    pub fn percentile_ms(&self, p: f64) -> f64 {
        self.percentile_us(p) / 1000.0
    }

    /// Median in milliseconds.
    pub fn p50_ms(&self) -> f64 {
        self.percentile_ms(50.0)
    }

    /// 99th percentile in milliseconds.
    pub fn p99_ms(&self) -> f64 {
        self.percentile_ms(99.0)
    }

    /// Largest sample in milliseconds.
    pub fn max_ms(&self) -> f64 {
        self.sorted_us.last().copied().unwrap_or(0.0) / 1000.0
    }

    /// `p50 2.10 ms, p99 4.00 ms (n=200)`.
    pub fn summary(&self) -> String {
        if self.is_empty() {
            return "no samples".into();
        }
        format!(
            "p50 {}, p99 {} (n={})",
            ms(self.p50_ms()),
            ms(self.p99_ms()),
            self.len()
        )
    }
}

/// A millisecond figure with sensible precision: `0.412 ms`, `2.10 ms`, `37.2 ms`, `1204 ms`.
pub fn ms(value: f64) -> String {
    if value < 1.0 {
        format!("{value:.3} ms")
    } else if value < 10.0 {
        format!("{value:.2} ms")
    } else if value < 100.0 {
        format!("{value:.1} ms")
    } else {
        format!("{value:.0} ms")
    }
}

/// A rate with a thousands separator: `12,345/s`.
pub fn rate(per_second: f64) -> String {
    format!("{}/s", thousands(per_second.round() as u64))
}

/// `12345` → `12,345`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The machine the numbers come from, as BENCHMARKS.md records it.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// `nproc`.
    pub cpus: usize,
    /// The CPU model from /proc/cpuinfo.
    pub cpu_model: String,
    /// MemTotal from /proc/meminfo.
    pub memory: String,
    /// `uname -r`.
    pub kernel: String,
    /// The filesystem of the data dir (fsync cost depends on it; tmpfs makes durability free).
    pub data_fs: String,
    /// `debug` or `release` (numbers from a debug build are not figures).
    pub build: String,
    /// When the run started (UTC, RFC 3339).
    pub date: String,
    /// The 1-, 5- and 15-minute load averages when the run started (`/proc/loadavg`): on a shared
    /// machine every CPU-bound figure depends on them.
    pub load_average: String,
}

impl Machine {
    /// Reads /proc and the build profile.
    pub fn detect(data_dir: &std::path::Path) -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split(':').nth(1))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory = meminfo
            .lines()
            .find(|l| l.starts_with("MemTotal"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map(|kb| format!("{:.1} GiB", kb / 1024.0 / 1024.0))
            .unwrap_or_else(|| "unknown".into());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_string();
        Machine {
            cpus: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            cpu_model,
            memory,
            kernel,
            data_fs: filesystem_of(data_dir),
            build: if cfg!(debug_assertions) {
                "debug".into()
            } else {
                "release".into()
            },
            date: jiff::Timestamp::now()
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string(),
            load_average: load_average(),
        }
    }
}

/// `1.36 1.46 2.02`: the first three fields of `/proc/loadavg`.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .unwrap_or_default()
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The filesystem type of `path` (`ext4`, `tmpfs`, …).
fn filesystem_of(path: &std::path::Path) -> String {
    use nix::sys::statfs::{
        statfs, BTRFS_SUPER_MAGIC, EXT4_SUPER_MAGIC, TMPFS_MAGIC, XFS_SUPER_MAGIC,
    };
    match statfs(path) {
        Ok(fs) => match fs.filesystem_type() {
            t if t == EXT4_SUPER_MAGIC && !ext4_has_journal(path) => {
                "ext4 without a journal (inode allocation slows under file churn)".into()
            }
            t if t == EXT4_SUPER_MAGIC => "ext4".into(),
            t if t == TMPFS_MAGIC => {
                "tmpfs (fsync is free: durability numbers mean nothing)".into()
            }
            t if t == XFS_SUPER_MAGIC => "xfs".into(),
            t if t == BTRFS_SUPER_MAGIC => "btrfs".into(),
            t => format!("{t:?}"),
        },
        Err(err) => format!("unknown ({err})"),
    }
}

/// Whether the ext4 filesystem holding `path` has a journal: the kernel lists each journal it
/// runs as `/proc/fs/jbd2/DEVICE-…`. Without one, ext4 skips every inode freed in the last minute
/// or more when it allocates a new one (`recently_deleted`), so creating and deleting pods' files
/// gets slower run after run: worth saying beside the kubelet's figures.
fn ext4_has_journal(path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return true;
    };
    let (major, minor) = (
        nix::sys::stat::major(meta.dev()),
        nix::sys::stat::minor(meta.dev()),
    );
    let Ok(device) = std::fs::read_link(format!("/sys/dev/block/{major}:{minor}")) else {
        return true; // unknown: claim nothing
    };
    let Some(name) = device.file_name().and_then(|n| n.to_str()) else {
        return true;
    };
    let Ok(journals) = std::fs::read_dir("/proc/fs/jbd2") else {
        return true;
    };
    journals.flatten().any(|j| {
        j.file_name()
            .to_string_lossy()
            .starts_with(&format!("{name}-"))
    })
}

/// The full report printed at the end.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Where it ran.
    pub machine: Machine,
    /// `minik bench --quick …`.
    pub command: String,
    /// Whether this was a `--quick` smoke run.
    pub quick: bool,
    /// The rows, in table order.
    pub measurements: Vec<Row>,
}

impl Report {
    /// The human table: measurement | result | target | met | anchor.
    pub fn table(&self) -> String {
        use std::io::Write;
        let m = &self.machine;
        let mut out = format!(
            "minik bench ({}, {} build): {} CPU(s) {}, {} RAM, kernel {}, data on {}, {}, load average {}\n\n",
            if self.quick { "quick" } else { "full" },
            m.build,
            m.cpus,
            m.cpu_model,
            m.memory,
            m.kernel,
            m.data_fs,
            m.date,
            m.load_average
        );
        let mut tw = tabwriter::TabWriter::new(Vec::new()).padding(2);
        let _ = writeln!(tw, "MEASUREMENT\tRESULT\tTARGET\tMET\tANCHOR");
        for row in &self.measurements {
            let met = match row.met {
                Some(true) => "yes",
                Some(false) => "NO",
                None => "-",
            };
            let _ = writeln!(
                tw,
                "{}\t{}\t{}\t{met}\t{}",
                row.measurement, row.result, row.target, row.anchor
            );
        }
        let table = tw
            .into_inner()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        out.push_str(&table);
        out
    }

    /// The machine, the command and the Markdown table, as BENCHMARKS.md holds them.
    pub fn markdown(&self) -> String {
        let m = &self.machine;
        let mut out = format!(
            "- Command: `{}` ({} build)\n- Machine: {} CPU(s) {}, {} RAM, kernel {}, data dir on {}\n- Date: {}, load average {} at the start\n\n",
            self.command, m.build, m.cpus, m.cpu_model, m.memory, m.kernel, m.data_fs, m.date, m.load_average
        );
        out.push_str("| Measurement | Result | Target | Met | Anchor |\n|---|---|---|---|---|\n");
        for row in &self.measurements {
            let met = match row.met {
                Some(true) => "yes",
                Some(false) => "**no**",
                None => "–",
            };
            out.push_str(&format!(
                "| {} | {} | {} | {met} | {} |\n",
                row.measurement, row.result, row.target, row.anchor
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nearest rank: p50 of 1..=100 ms is 50 ms, p99 is 99 ms, and one sample is every percentile.
    #[test]
    fn percentiles_are_nearest_rank() {
        let stats = Stats::new((1..=100).map(Duration::from_millis));
        assert_eq!(stats.p50_ms(), 50.0);
        assert_eq!(stats.p99_ms(), 99.0);
        assert_eq!(stats.max_ms(), 100.0);
        let one = Stats::new([Duration::from_micros(1500)]);
        assert_eq!((one.p50_ms(), one.p99_ms()), (1.5, 1.5));
        assert_eq!(Stats::new([]).p99_ms(), 0.0);
    }

    /// Figures are printed with a precision that suits their size.
    #[test]
    fn numbers_are_formatted_for_people() {
        assert_eq!(ms(0.4121), "0.412 ms");
        assert_eq!(ms(2.1), "2.10 ms");
        assert_eq!(ms(1204.4), "1204 ms");
        assert_eq!(rate(12345.4), "12,345/s");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }
}
