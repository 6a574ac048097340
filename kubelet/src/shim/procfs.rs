//! Reading the process table from `/proc`: who is a child of whom, and when a process started.
//!
//! Kubernetes counterpart: none in Go (runc and containerd rely on cgroups to find a container's
//! processes). minik has no cgroups, so the shim walks `/proc/*/stat` to find every descendant,
//! and the runtime compares start times (field 22, clock ticks since boot) so that a recycled pid
//! is never mistaken for the container it once was.

use std::collections::HashMap;
use std::fs;

/// The fields of `/proc/PID/stat` the runtime uses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProcStat {
    pub state: char,
    pub ppid: u32,
    pub session: u32,
    pub start_ticks: u64,
}

/// Reads `/proc/PID/stat`; `None` if the process does not exist (zombies still do).
pub fn proc_stat(pid: u32) -> Option<ProcStat> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_proc_stat(&text)
}

/// Parses a stat line. The command name (field 2) may contain spaces and parentheses, so the
/// fields are counted from the last `)`.
pub fn parse_proc_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(ProcStat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        start_ticks: fields.get(19)?.parse().ok()?,
    })
}

/// Every process below `root` in the process tree (children, grandchildren, …).
pub fn descendants(root: u32) -> Vec<u32> {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    if let Ok(entries) = fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(stat) = proc_stat(pid) {
                children.entry(stat.ppid).or_default().push(pid);
            }
        }
    }
    let mut found = Vec::new();
    let mut queue = vec![root];
    while let Some(pid) = queue.pop() {
        for &child in children.get(&pid).map(Vec::as_slice).unwrap_or(&[]) {
            found.push(child);
            queue.push(child);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_survives_odd_command_names() {
        let line = "4242 (a) b (c) S 1 4242 4242 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 987654 0 0";
        let stat = parse_proc_stat(line).unwrap();
        assert_eq!(
            stat,
            ProcStat {
                state: 'S',
                ppid: 1,
                session: 4242,
                start_ticks: 987654
            }
        );
    }

    #[test]
    fn proc_stat_of_this_process_has_a_start_time() {
        let stat = proc_stat(std::process::id()).unwrap();
        assert!(stat.start_ticks > 0);
    }
}
