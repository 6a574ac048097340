//! The per-pod process cap: a watchdog that kills a pod's processes when there are more than
//! `--pod-pids-limit` of them, so a fork bomb in a pod cannot take the machine down.
//!
//! Kubernetes counterpart: `--pod-max-pids` (`podPidsLimit`), enforced by the kernel through the
//! pod cgroup's `pids.max` (`pkg/kubelet/cm/pod_container_manager_linux.go`): a fork past the
//! limit fails with EAGAIN. minik runs without root and without a delegated cgroup v2 subtree, so
//! it watches instead: every second it reads `/proc` once, counts each pod's processes — every
//! process in the session of one of its containers' shims (the shim calls `setsid`) or below that
//! shim (its child subreaper catches what left the session) — and a pod over the limit has all of
//! them SIGKILLed, with a Warning Event `PidsLimitExceeded`. Its containers then exit with 137 and
//! restart as their restartPolicy says. The count is [`pod_processes`], a pure function.
//!
//! Where the `pids` controller is usable (`cgroups.rs`: cgroup v2 if delegated, else v1) each pod
//! also has a cgroup whose `pids.max` is the limit: the kernel refuses the fork past it, exactly as
//! upstream, and the watchdog still kills the pod (`PidsLimitExceeded`) once a fork was refused, so
//! a fork bomb ends instead of spinning at the limit.
//!
//! minik simplifies: without cgroups the limit is checked once a second, so a fork bomb overshoots it by what it
//! forks in that second before it is stopped.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use minik_api::meta::ObjectMeta;
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use tokio_util::sync::CancellationToken;
use tracing::warn;

use crate::cgroups::PodCgroups;
use crate::cri::{ContainerState, Runtime};
use crate::reporter::PodReporter;
use crate::shim::proc_stat;

/// Upstream's default is unlimited; minik caps a pod at this many processes unless told otherwise.
pub const DEFAULT_POD_PIDS_LIMIT: i64 = 1024;

/// How often the watchdog counts.
const PERIOD: Duration = Duration::from_secs(1);

/// Kill rounds per pod (a process may fork while a round runs).
const KILL_ROUNDS: usize = 50;

/// One process as `/proc/PID/stat` shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proc {
    /// Its pid.
    pub pid: u32,
    /// Its parent.
    pub ppid: u32,
    /// Its session.
    pub session: u32,
}

/// One running container: its pod and its main process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningContainer {
    /// `namespace/name` of its pod.
    pub pod_key: String,
    /// Its pod's uid.
    pub pod_uid: String,
    /// Its main process.
    pub pid: u32,
}

/// The processes of each pod (by uid): those in its shims' sessions or below its shims.
pub fn pod_processes(
    procs: &[Proc],
    containers: &[RunningContainer],
) -> BTreeMap<String, BTreeSet<u32>> {
    let by_pid: HashMap<u32, &Proc> = procs.iter().map(|p| (p.pid, p)).collect();
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for proc in procs {
        children.entry(proc.ppid).or_default().push(proc.pid);
    }
    let mut pods: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for container in containers {
        let Some(shim) = by_pid.get(&container.pid).map(|p| p.session) else {
            continue;
        };
        let found = pods.entry(container.pod_uid.clone()).or_default();
        found.extend(
            procs
                .iter()
                .filter(|p| p.session == shim && p.pid != shim)
                .map(|p| p.pid),
        );
        let mut queue = vec![shim];
        while let Some(pid) = queue.pop() {
            for &child in children.get(&pid).map(Vec::as_slice).unwrap_or(&[]) {
                if found.insert(child) {
                    queue.push(child);
                }
            }
        }
    }
    pods
}

/// Every process of this machine that `/proc` shows (zombies excluded).
fn read_procs() -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = proc_stat(pid).filter(|s| s.state != 'Z')?;
            Some(Proc {
                pid,
                ppid: stat.ppid,
                session: stat.session,
            })
        })
        .collect()
}

fn running_containers(runtime: &dyn Runtime) -> Vec<RunningContainer> {
    runtime
        .list_containers()
        .into_iter()
        .filter_map(|c| match c.state {
            ContainerState::Running { pid, .. } => Some(RunningContainer {
                pod_key: c.config.pod_key.clone(),
                pod_uid: c.config.pod_uid.clone(),
                pid,
            }),
            ContainerState::Exited { .. } => None,
        })
        .collect()
}

/// Counts every pod's processes each second and kills the pods over `limit`, until `shutdown`.
pub async fn watchdog(
    runtime: Arc<dyn Runtime>,
    reporter: Arc<dyn PodReporter>,
    limit: i64,
    cgroups: Option<PodCgroups>,
    shutdown: CancellationToken,
) {
    if limit < 0 {
        return;
    }
    let mut tick = tokio::time::interval(PERIOD);
    let mut refused_seen: BTreeMap<String, u64> = BTreeMap::new();
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => {
                cgroups.iter().for_each(PodCgroups::remove_empty);
                return;
            }
            _ = tick.tick() => {}
        }
        let containers = running_containers(runtime.as_ref());
        if let Some(cgroups) = &cgroups {
            let refused = refused_forks(runtime.as_ref(), cgroups, &mut refused_seen);
            for (pod, count) in refused {
                warn!(pod = %pod.pod_key, limit, refused = count, "a fork was refused at the pod pids limit; killing its processes");
                let message = format!("Pod reached the pod pids limit of {limit} ({count} forks refused): its processes were killed");
                reporter.event(
                    &pod_of(&pod),
                    None,
                    "Warning",
                    "PidsLimitExceeded",
                    &message,
                );
                let groups: Vec<u32> = containers
                    .iter()
                    .filter(|c| c.pod_uid == pod.pod_uid)
                    .map(|c| c.pid)
                    .collect();
                kill_pod(&groups, &pod.pod_uid, &containers);
            }
        }
        if containers.is_empty() {
            continue;
        }
        let counts = pod_processes(&read_procs(), &containers);
        for (uid, pids) in counts.iter().filter(|(_, p)| p.len() as i64 > limit) {
            let Some(container) = containers.iter().find(|c| &c.pod_uid == uid) else {
                continue;
            };
            warn!(pod = %container.pod_key, processes = pids.len(), limit, "over the pod pids limit; killing its processes");
            let message = format!(
                "Pod had {} processes, over the pod pids limit of {limit}: its processes were killed",
                pids.len()
            );
            reporter.event(
                &pod_of(container),
                None,
                "Warning",
                "PidsLimitExceeded",
                &message,
            );
            let groups: Vec<u32> = containers
                .iter()
                .filter(|c| &c.pod_uid == uid)
                .map(|c| c.pid)
                .collect();
            kill_pod(&groups, uid, &containers);
        }
    }
}

/// The pods (any container, running or exited) whose cgroup refused a fork since the last look,
/// with the count; removes the cgroups of pods the runtime no longer knows.
fn refused_forks(
    runtime: &dyn Runtime,
    cgroups: &PodCgroups,
    seen: &mut BTreeMap<String, u64>,
) -> Vec<(RunningContainer, u64)> {
    let mut pods: BTreeMap<String, RunningContainer> = BTreeMap::new();
    for c in runtime.list_containers() {
        let pod = RunningContainer {
            pod_key: c.config.pod_key,
            pod_uid: c.config.pod_uid.clone(),
            pid: 0,
        };
        pods.insert(c.config.pod_uid, pod);
    }
    cgroups.remove_others(&pods.keys().cloned().collect::<Vec<_>>());
    seen.retain(|uid, _| pods.contains_key(uid));
    let mut refused = Vec::new();
    for (uid, pod) in pods {
        let count = cgroups.refused(&uid);
        if count > seen.insert(uid, count).unwrap_or(0) {
            refused.push((pod, count));
        }
    }
    refused
}

/// SIGKILLs the containers' process groups, then every process of the pod, until none is left.
fn kill_pod(groups: &[u32], uid: &str, containers: &[RunningContainer]) {
    for &group in groups {
        let _ = killpg(Pid::from_raw(group as i32), Signal::SIGKILL);
    }
    let own: Vec<RunningContainer> = containers
        .iter()
        .filter(|c| c.pod_uid == uid)
        .cloned()
        .collect();
    for _ in 0..KILL_ROUNDS {
        let counts = pod_processes(&read_procs(), &own);
        let Some(pids) = counts.get(uid).filter(|p| !p.is_empty()) else {
            return;
        };
        for &pid in pids {
            let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
        }
    }
}

/// The pod an Event is about, from what the runtime knows of it.
fn pod_of(container: &RunningContainer) -> Pod {
    let (namespace, name) = container
        .pod_key
        .split_once('/')
        .unwrap_or(("default", container.pod_key.as_str()));
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            uid: Some(container.pod_uid.clone()),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: u32, ppid: u32, session: u32) -> Proc {
        Proc { pid, ppid, session }
    }

    #[test]
    fn a_pod_counts_its_shims_session_and_what_left_it_but_not_the_shim() {
        // Shim 10 (session 10) runs container 11; 12 is a child in the session, 13 called setsid
        // (session 13) but is still below the shim; 20 is another pod's shim; 1 is init.
        let procs = [
            p(1, 0, 1),
            p(10, 1, 10),
            p(11, 10, 10),
            p(12, 11, 10),
            p(13, 10, 13),
            p(14, 13, 13),
            p(20, 1, 20),
            p(21, 20, 20),
        ];
        let containers = [
            RunningContainer {
                pod_key: "default/bomb".into(),
                pod_uid: "a".into(),
                pid: 11,
            },
            RunningContainer {
                pod_key: "default/calm".into(),
                pod_uid: "b".into(),
                pid: 21,
            },
        ];
        let pods = pod_processes(&procs, &containers);
        assert_eq!(pods["a"], BTreeSet::from([11, 12, 13, 14]));
        assert_eq!(pods["b"], BTreeSet::from([21]));
    }
}
